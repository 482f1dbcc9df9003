"""The plain-language verdict of one result set (``summary.md``, and ``summary.html`` for the
Snakemake report), generated from its tables (``summary.csv``, ``speedup.csv``,
``metrics.csv``), never from records and never by hand.

One section per experiment (per model in a model zoo), its sentences from
``reports.findings`` (one function per finding); an introduction (``intro``: device,
versions, provenance, what the numbers are) and a bottom line (``bottom_line``: the
strongest claim of every experiment, its significant slowdowns and its memory change,
``analysis.claims``).

    python -m tcbench.reports.verdict --metrics M.csv --summary S.csv --speedup P.csv \\
        --md summary.md --html summary.html
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import atomic, cli, stats
from .. import resultset as RS
from .. import vocabulary as V
from ..analysis import conditions as C
from ..closing import BOTTOM_LINE
from ..render.numbers import missing, times
from ..render.table import page
from . import fp8_findings, noisy
from .findings import Section, besides_precision, experiment_section, ratio_text


@dataclass
class Verdict:
    title: str
    intro: list[str]
    bottom_line: list[str]
    sections: list[Section]

    def markdown(self) -> str:
        out = [f"# {self.title}", "", " ".join(self.intro), "", f"{BOTTOM_LINE} "
               + " ".join(self.bottom_line), ""]
        for s in self.sections:
            out += [f"## {s.title}", "", *(f"- {x}" for x in s.sentences), ""]
        return "\n".join(out)

    def html(self) -> str:
        def inline(text):
            text = html.escape(text)
            text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
            return re.sub(r"`(.+?)`", r"<code>\1</code>", text)
        body = [f"<h2>{inline(self.title)}</h2>", f"<p>{inline(' '.join(self.intro))}</p>",
                f"<p><strong>Bottom line.</strong> {inline(' '.join(self.bottom_line))}</p>"]
        for s in self.sections:
            items = "".join(f"<li>{inline(x)}</li>" for x in s.sentences)
            body += [f"<h3>{inline(s.title)}</h3>", f"<ul>{items}</ul>"]
        return page(self.title, "\n".join(body) + "\n")


def joined(summary: pd.DataFrame, speedup: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: the summary joined with its ratios against fp32 (speedup.csv)."""
    s, sp = RS.order(summary), RS.order(speedup)
    keys = list(V.CELL_KEYS)
    extra = [c for c in sp.columns if c not in s.columns or c in keys]
    for df in (s, sp):
        df["precision"] = df["precision"].astype(str)
    out = s.merge(sp[extra], on=keys, how="left")
    out["order"] = out["precision"].map({p: i for i, p in enumerate(V.PRECISIONS)})
    return out.sort_values(["experiment", "batch_size", *V.AXIS_NAMES, "order"])


# -------------------------------------------------------------------------------- the intro
def provenance(metrics: pd.DataFrame | None) -> list[str]:
    if metrics is None or not len(metrics):
        return []
    out = []
    commits = metrics["git_commit"].dropna().astype(str).unique() if "git_commit" in metrics \
        else []
    if len(commits):
        out.append("Code: commit " + ", ".join(c[:12] for c in commits[:3])
                   + (f" and {len(commits) - 3} more" if len(commits) > 3 else "") + ".")
    if "git_dirty" in metrics:
        dirty = metrics["git_dirty"].astype(str).str.lower()
        n_dirty = int((dirty == "true").sum())
        n_unknown = int(metrics["git_dirty"].isna().sum())
        if n_dirty:
            allowed = "allow_dirty" in metrics and metrics["allow_dirty"].astype(str).str.lower(
            ).eq("true").any()
            out.append(f"{n_dirty} of {len(metrics)} records ran on a tree with uncommitted "
                       f"changes" + (" (the config set allow_dirty: true)." if allowed else "."))
        elif n_unknown:
            out.append(f"Whether the tree was clean is unknown for {n_unknown} records.")
        else:
            out.append("Every record ran on a clean tree.")
    if "execution" in metrics and metrics["execution"].notna().any():
        ex = metrics["execution"].dropna().astype(str).value_counts()
        host = metrics.get("host_containerised")
        text = ", ".join(f"{v} {k}" for k, v in ex.items())
        if "native" in ex and host is not None and host.astype(str).eq("True").any():
            text += " (natively on a host that is itself a container, not in the workflow's " \
                    "image)"
        out.append(f"Execution: {text}.")
    return out


def _tally(counts: dict) -> str:
    n = [str(v) for v in counts.values()]
    return (", ".join(n[:-1]) + " and " + n[-1] if len(n) > 1 else n[0]) + " records"


def _n(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _of(n: int, total: int) -> str:
    return f"all {total}" if n == total else f"{n} of {total}"


def _spread(c: C.Conditions) -> list[str]:
    out = []
    if len(c.gpus) > 1:
        out.append(f"{len(c.gpus)} GPUs (told apart by UUID: {_tally(c.gpus)}"
                   + (f"; the repeats of {_n(c.cells_across_gpus, 'cell')} ran on more than one"
                      if c.cells_across_gpus else "") + ")")
    if len(c.hosts) > 1:
        out.append(f"{len(c.hosts)} host types (by name and CPU count: " + "; ".join(
            f"{h}, {_n(n, 'record')}" for h, n in c.hosts.items()) + ")")
    return out


def conditions(metrics: pd.DataFrame | None) -> str | None:
    """One sentence saying where a set mixes GPUs, hosts, CPU placements, concurrent jobs or
    process starts (``analysis.conditions``); None where its records agree on all."""
    if metrics is None or not len(metrics):
        return None
    c = C.conditions(metrics)
    if c.uniform or not c.records:
        return None
    spread = _spread(c)
    out = ["the records ran on " + " and ".join(spread)] if spread else []
    known = {k: v for k, v in c.placements.items() if k is not None}
    if len(known) > 1 or (known and set(known) != {"pinned"}):
        out.append("CPU placement " + ", ".join(
            f"{k} ({n})" if k != "os" else f"left to the OS ({n})" for k, n in known.items()))
    if c.beside_others:
        out.append(f"{_of(c.beside_others, c.records)} jobs started while other tcbench jobs "
                   f"held GPUs of the same host")
    starts = {k: v for k, v in c.starts.items() if k is not None}
    if len(starts) > 1:
        out.append("process starts " + ", ".join(
            f"{START_WORDS.get(k, k)} ({n})" for k, n in starts.items()))
    unknown = [w for w, d in (("CPU placement and the jobs beside it", c.placements),
                              ("how its process started", c.starts)) if None in d]
    if unknown:
        n = max(d.get(None, 0) for d in (c.placements, c.starts))
        out.append(f"for {_of(n, c.records)} records {' and '.join(unknown)} were not "
                   f"recorded (they predate those fields)")
    return "Conditions: " + "; ".join(out) + "." if out else None


START_WORDS = {"fresh_interpreter": "fresh interpreters",
               "forked": "forked from a preloaded interpreter"}


def _versions(metrics, cuda: bool) -> str:
    env = metrics.iloc[0].to_dict() if metrics is not None and len(metrics) else {}
    cuda_col = "torch_cuda_version" if not missing(env.get("torch_cuda_version")) \
        else "cuda_runtime_version"
    versions = [f"{k} {env.get(c)}" for k, c in (("PyTorch", "torch_version"),
                                                  ("built with CUDA", cuda_col),
                                                  ("driver", "driver_version"))
                if not missing(env.get(c)) and (k != "built with CUDA" or cuda)]
    return f" ({', '.join(versions)})." if versions else "."


def intro(df: pd.DataFrame, metrics: pd.DataFrame | None, run: str, device: str) -> list[str]:
    """What the set is, where it ran, from which code, and what its numbers mean."""
    cuda = metrics is not None and "compute_capability" in metrics and \
        metrics["compute_capability"].notna().any()
    out = [f"Result set `{run}`: {len(df)} configurations of "
           f"{df['experiment'].nunique()} experiments on {device}" + _versions(metrics, cuda)]
    out += provenance(metrics)
    said = conditions(metrics)
    out += [said] if said else []
    head = V.metric(V.HEADLINE)
    out.append(f"Speed is the {head.label} ({head.defined_on(cuda)}); a speedup is its ratio to "
               "strict fp32 (TF32 off) at the same setting. Values "
               "are means over the repeats that finished, each repeat a fresh process with its "
               "own seed; intervals are 95% confidence intervals (Student's t; Welch's t on "
               f"the log scale for ratios) where {stats.ENOUGH}, ranges where {stats.RANGE_N}, "
               f"none for single runs. A gain is called only where its interval clears the "
               f"threshold ({stats.CLAIM_RULE}). {RANKING} Warm-up "
               "(autotuning, compilation) is reported on its own and is in no speedup.")
    if not cuda:
        out.append("This device is not a CUDA GPU: it has no Tensor Cores, so these numbers "
                   "test the harness and say nothing about Tensor Cores.")
    return out


# ------------------------------------------------------------------------------ the verdict
def sections(df: pd.DataFrame) -> tuple[list[Section], list[dict]]:
    """One section per experiment; a model zoo is answered per model (which families gain,
    which are bound elsewhere)."""
    out, facts = [], []
    for exp in dict.fromkeys(df["experiment"]):
        e = df[df["experiment"] == exp]
        parts = [(f"{exp}: {m}", e[e["model"] == m]) for m in dict.fromkeys(e["model"])] \
            if e["model"].nunique() > 1 else [(exp, e)]
        for name, part in parts:
            sec, f = experiment_section(part, name)
            out.append(sec)
            facts.append(f)
    return out, facts


def build(summary: pd.DataFrame, speedup: pd.DataFrame, metrics: pd.DataFrame | None = None,
          crossover: pd.DataFrame | None = None) -> Verdict:
    """``crossover``: the set's FP8 crossover map (tables/fp8_crossover.csv), where it has one."""
    df = joined(summary, speedup)
    run = str(df["run"].iloc[0])
    device = df["device_name"].dropna().astype(str)
    device = device.iloc[0] if len(device) else "an unnamed device"
    secs, facts = sections(df)
    fp8 = fp8_findings.section(df, crossover)
    precision = noisy.section(summary)
    return Verdict(f"Verdict: {run} on {device}", intro(df, metrics, run, device),
                   bottom_line(facts) + fp8_findings.bottom_line(crossover),
                   secs + [s for s in (fp8, precision) if s])


BOTTOM_OPENING = ("Per experiment, the strongest claim its intervals support, every "
                  "significant slowdown and the change in peak memory:")
# how the bottom line ranks, said once in the intro
RANKING = ("The bottom line ranks an experiment's claims by strength (pays off > faster > "
           "equivalent > inconclusive), then by the interval's lower bound, so a supported small "
           "gain beats a wide large one; an FP8 mode is judged against amp-bf16 at the same "
           "setting first, against fp32 where no bf16 cell can be judged.")


def _memory(x, j) -> str:
    ratio = j.row.get("memory_ratio")
    out = "" if missing(ratio) else f"; peak memory {times(ratio)} fp32's"
    savers = x.reduced.dropna(subset=["memory_ratio"])
    if len(savers):
        best = savers.loc[savers["memory_ratio"].astype(float).idxmin()]
        if missing(ratio) or float(best["memory_ratio"]) < float(ratio) - 0.05:
            out += (f"; the largest memory saving is {x.config(best)}, "
                    f"{times(best['memory_ratio'])} fp32's peak")
    return out


def _no_judgement(name: str, x) -> str:
    if x is None:
        return f"{name}: no configuration finished."
    if not len(x.reduced):
        return f"{name}: only strict fp32 ran, so there is no reduced precision to judge."
    gains = x.reduced.dropna(subset=["gain"])
    if not len(gains):
        return f"{name}: no fp32 run to judge {', '.join(dict.fromkeys(x.reduced['precision']))} " \
               f"against."
    g = gains.loc[gains["gain"].astype(float).idxmax()]
    c = stats.claim(stats.from_row(g, "gain"))
    return (f"{name}: no fp32 cell shares a setting with its reduced-precision cells; against "
            f"the plain fp32 baseline ({g['plain_experiment']}, batch size "
            f"{int(g['plain_batch_size'])}, eager), {x.config(g)} reaches "
            f"{ratio_text(g, 'gain')} the throughput ({stats.CLAIM_SHORT[c]}; besides precision "
            f"it changed {besides_precision(g)}).")


def experiment_line(f: dict) -> str:
    """One experiment's bottom line (see ``BOTTOM_OPENING``)."""
    x, name = f["findings"], f["experiment"]
    j = None if x is None else x.strongest
    if j is None:
        return _no_judgement(name, x)
    out = (f"{name}: {stats.CLAIM_SHORT[j.claim]}: {x.config(j.row)}, "
           f"{ratio_text(j.row, j.stem)} {j.baseline}'s throughput at the same setting")
    if j.baseline != V.BASELINE and not missing(j.row.get("speedup")):
        out += f" ({ratio_text(j.row)} fp32's)"
    elif j.baseline == V.BASELINE and not missing(j.row.get("bf16_speedup")):
        # an FP8 cell whose bf16 comparison has too few repeats to judge: said, not hidden
        out += (f" (against {V.FP8_BASELINE}: {ratio_text(j.row, 'bf16_speedup')}, "
                f"{stats.CLAIM_SHORT[stats.UNJUDGED]})")
    out += _memory(x, j) + "."
    slow = [s for s in x.slowdowns if s is not j]
    if slow:
        out += " Significantly slower: " + "; ".join(
            f"{x.config(s.row)}, {ratio_text(s.row, s.stem)} {s.baseline}'s" for s in slow) + "."
    return out


def bottom_line(facts: list[dict]) -> list[str]:
    return [BOTTOM_OPENING, *(experiment_line(f) for f in facts)]


def write(metrics: Path | None, summary: Path, speedup: Path, md: Path | None = None,
          html_path: Path | None = None, crossover: Path | None = None) -> list[Path]:
    m = RS.read_raw(metrics) if metrics is not None and Path(metrics).exists() else None
    x = RS.read_raw(crossover) if crossover is not None else None
    v = build(RS.read_raw(summary), RS.read_raw(speedup), m, x)
    written = []
    if md is not None:
        written.append(atomic.write_text(md, v.markdown()))
    if html_path is not None:
        written.append(atomic.write_text(html_path, v.html()))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.verdict", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=Path, help="metrics.csv (provenance, versions)")
    ap.add_argument("--summary", type=Path, required=True)
    ap.add_argument("--speedup", type=Path, required=True)
    ap.add_argument("--crossover", type=Path, help="tables/fp8_crossover.csv, where the set "
                    "has the FP8 crossover study")
    ap.add_argument("--md", type=Path, help="where the verdict goes as Markdown")
    ap.add_argument("--html", type=Path, help="where it goes as HTML")
    args = ap.parse_args(argv)
    if args.md is None and args.html is None:
        ap.error("give --md, --html or both")

    def written():
        write(args.metrics, args.summary, args.speedup, args.md, args.html, args.crossover)

    return cli.main("tcbench.reports.verdict", written, (ValueError, KeyError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
