"""The plain-language verdict of one result set (``summary.md``, and ``summary.html`` for the
Snakemake report), generated from its tables (``summary.csv``, ``speedup.csv``,
``metrics.csv``, and ``interleaved.csv``, ``capacity.csv`` where the set has them, the
interleaved ratios pooled with its other runs' where the study ran on several machines:
``analysis.runs``), never from records or by hand.

It opens on one screen (``screen``): the overview figure, a short bottom line and a table with a
row per experiment (per model in a model zoo, ``answer``): its question, best mode and setting,
ratio to its baseline with its interval, claim, peak memory, what limits it and how it was
decided; then the answer in full. Methods, provenance and conditions follow (``intro``), then
per experiment a table of its cells and at most three plain sentences (``reports.findings``).

    python -m tcbench.reports.verdict --metrics M.csv --summary S.csv --speedup P.csv \\
        [--interleaved I.csv] [--capacity capacity.csv] [--overview figures/overview.png] \\
        --md summary.md --html summary.html
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import atomic, cli, stats, resultset, vocabulary as V
from ..analysis import claims, conditions as run_conditions, runs
from ..closing import BOTTOM_LINE
from ..render.numbers import missing, num, percent
from ..render.table import Table, page, to_html, to_markdown
from . import answer, capacity_findings, families, fp8_findings, noisy, screen
from .findings import Section, experiment_section, host_bound_decisions
from .phrases import compile_check_note, interleaved_decisions

METHODS = "Methods, provenance and conditions"
TITLE_HEAD = "Verdict: "


@dataclass
class Verdict:
    title: str
    bottom_line: list[str]
    answer: Table
    intro: list[str]
    sections: list[Section]
    answers: list[answer.Answer]
    headline: str = ""
    # the overview figure heading it: a link beside summary.md, the PNG itself in the HTML
    overview: str | None = None
    overview_png: bytes | None = None

    def markdown(self) -> str:
        out = [f"# {self.title}", "", *screen.markdown(self, BOTTOM_LINE), f"## {METHODS}", "",
               " ".join(self.intro), ""]
        for s in self.sections:
            out += [f"## {s.title}", ""]
            out += [to_markdown(s.table, heading=None)] if s.table is not None else []
            out += [*(f"- {x}" for x in s.sentences), ""]
        return "\n".join(out)

    def html(self) -> str:
        inline = screen.inline
        body = [f"<h2>{inline(self.title)}</h2>", *screen.html(self),
                f"<h3>{METHODS}</h3>", f"<p>{inline(' '.join(self.intro))}</p>"]
        for s in self.sections:
            body.append(f"<h3>{inline(s.title)}</h3>")
            if s.table is not None:
                body.append(to_html(s.table, standalone=False))
            items = "".join(f"<li>{inline(x)}</li>" for x in s.sentences)
            body.append(f"<ul>{items}</ul>" if items else "")
        return page(self.title, "\n".join(body) + "\n")


def joined(summary: pd.DataFrame, speedup: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: the summary joined with its ratios against fp32 (speedup.csv)."""
    s, sp = resultset.order(summary), resultset.order(speedup)
    keys = list(V.CELL_KEYS)
    extra = [c for c in sp.columns if c not in s.columns or c in keys]
    for df in (s, sp):
        df["precision"] = df["precision"].astype(str)
    out = s.merge(sp[extra], on=keys, how="left")
    out["order"] = out["precision"].map({p: i for i, p in enumerate(V.PRECISIONS)})
    return out.sort_values(["experiment", "batch_size", *V.AXIS_NAMES, "order"])


# -------------------------------------------------------------------------------- the intro
def provenance(metrics: pd.DataFrame | None,
               interleaved: pd.DataFrame | None = None) -> list[str]:
    if metrics is None or not len(metrics):
        return []
    out = []
    if "git_commit" in metrics and metrics["git_commit"].notna().any():
        out.append(code_line(metrics, interleaved))
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


def code_line(metrics: pd.DataFrame, interleaved: pd.DataFrame | None = None) -> str:
    """The commit the records (and the interleaved comparisons) ran, or, for a set made by
    several (part of it rerun under a newer protocol), which experiments each one made, newest
    first, so a reader knows which numbers come from which code."""
    cols = ("experiment", "git_commit", "timestamp_utc")
    made = [metrics[[c for c in cols if c in metrics]].assign(what="record")]
    if interleaved is not None and len(interleaved) and "git_commit" in interleaved:
        # one row per comparison, not per ratio; a setting's processes may name several
        # commits (interleaved.csv joins them with ';')
        il = interleaved.drop_duplicates(["experiment", "setting"])
        il = il.assign(git_commit=[str(c).split(";") if isinstance(c, str) else [c]
                                   for c in il["git_commit"]]).explode("git_commit")
        made.append(il[[c for c in cols if c in il]].assign(what="interleaved comparison"))
    m = pd.concat(made, ignore_index=True)
    m = m.dropna(subset=["git_commit"]).astype({"git_commit": str})
    commits = m["git_commit"].unique()
    if len(commits) == 1:
        return f"Code: commit {commits[0][:12]}."
    parts = []
    for commit, g in m.groupby("git_commit", sort=False):
        latest = g["timestamp_utc"].astype(str).max() if "timestamp_utc" in g else ""
        counts = g["what"].value_counts()
        n = " and ".join(f"{counts[w]} {w}" + ("s" if counts[w] > 1 else "")
                         for w in ("record", "interleaved comparison") if w in counts)
        exps = ", ".join(sorted(g["experiment"].astype(str).unique())) if "experiment" in g else ""
        parts.append((latest, f"{commit[:12]} ({n}: {exps})"))
    parts.sort(reverse=True)
    return f"Code: {len(commits)} commits, newest first: " + "; ".join(p for _, p in parts) + "."


def _tally(counts: dict) -> str:
    n = [str(v) for v in counts.values()]
    return (", ".join(n[:-1]) + " and " + n[-1] if len(n) > 1 else n[0]) + " records"


def _n(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _of(n: int, total: int) -> str:
    return f"all {total}" if n == total else f"{n} of {total}"


def _spread(c: run_conditions.Conditions) -> list[str]:
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
    c = run_conditions.conditions(metrics)
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
            f"{run_conditions.START_WORDS.get(k, k)} ({n})" for k, n in starts.items()))
    unknown = [w for w, d in (("CPU placement and the jobs beside it", c.placements),
                              ("how its process started", c.starts)) if None in d]
    if unknown:
        n = max(d.get(None, 0) for d in (c.placements, c.starts))
        which = f" ({', '.join(c.undisclosed)})" if c.undisclosed else ""
        out.append(f"for {_of(n, c.records)} records{which} {' and '.join(unknown)} were not "
                   f"recorded (they predate those fields)")
    return "Conditions: " + "; ".join(out) + "." if out else None


def _versions(metrics, cuda: bool) -> str:
    env = metrics.iloc[0].to_dict() if metrics is not None and len(metrics) else {}
    cuda_col = "torch_cuda_version" if not missing(env.get("torch_cuda_version")) \
        else "cuda_runtime_version"
    versions = [f"{k} {env.get(c)}" for k, c in (("PyTorch", "torch_version"),
                                                  ("built with CUDA", cuda_col),
                                                  ("driver", "driver_version"))
                if not missing(env.get(c)) and (k != "built with CUDA" or cuda)]
    return f" ({', '.join(versions)})." if versions else "."


def host_speed(metrics: pd.DataFrame | None) -> str:
    """How much the host's speed varied over the study: the CPU dispatch probe timed before
    and after each job's timed window (metrics.csv ``host_probe_ops_per_s``, their mean)."""
    col = "host_probe_ops_per_s"
    if metrics is None or col not in metrics:
        return ("The host's speed was not probed (the records predate the CPU dispatch probe), "
                "so how much it drifted over the study is unknown.")
    v = pd.to_numeric(metrics[col], errors="coerce").dropna()
    if v.empty:
        return "No record of the set carries a host probe, so the host's drift is unknown."
    out = (f"The host's speed, a CPU dispatch probe timed before and after each timed window, "
           f"ranged {num(v.min())}–{num(v.max())} ops/s over the study's {len(v)} jobs")
    cv = stats.cv(v)
    out += f" (CV {percent(cv, 1)})" if cv is not None else ""
    change = pd.to_numeric(metrics.get("host_probe_change"), errors="coerce") \
        if "host_probe_change" in metrics else pd.Series([], dtype=float)
    change = change.dropna().abs()
    if len(change):
        out += f"; within one job it changed by up to {percent(change.max())}"
    return out + "."


def decisions(rows: list[answer.Answer], df: pd.DataFrame) -> str:
    """Which cells were decided how: by an interleaved comparison (at its level), by
    per-process repeats, or not at all (and why), over every judged reduced-precision cell of
    the set."""
    js = [j for j in claims.judgements(df[df["precision"].astype(str) != V.BASELINE])]
    if not js:
        return ""
    il = [j for j in js if j.decided_by == claims.INTERLEAVED]
    rest = [j for j in js if j.decided_by != claims.INTERLEAVED]
    gates = {g: sum(j.gate == g and j.claim == g for j in rest) for g in stats.GATES}
    unjudged = sum(j.claim in (stats.UNJUDGED, stats.NO_BASELINE) for j in rest)
    repeats = len(rest) - sum(gates.values()) - unjudged
    parts = [f"{repeats} by per-process repeats", *interleaved_decisions(il)]
    parts += [f"{n} not judged ({answer.GATE_WORDS[g]})" for g, n in gates.items() if n]
    if unjudged:
        parts.append(f"{unjudged} not judged for too few repeats or no baseline run")
    return f"Of the {len(js)} reduced-precision cells with a baseline, " + ", ".join(parts) + \
        ". A cell is host-bound where the GPU was busy less than " \
        f"{V.HOST_BOUND_BUSY_SHARE:.0%} of its timed steps (not input-bound): its ratios need " \
        "an interleaved comparison, since processes run minutes apart measure the host's " \
        "drift too." + (f" {h}" if (h := host_bound_decisions(df)) else "")


def intro(df: pd.DataFrame, metrics: pd.DataFrame | None, run: str, device: str,
          rows: list[answer.Answer] = (), interleaved: pd.DataFrame | None = None) -> list[str]:
    """What the set is, where it ran, from which code, how the host's speed varied, what its
    numbers mean, and which cells were decided how."""
    cuda = metrics is not None and "compute_capability" in metrics and \
        metrics["compute_capability"].notna().any()
    out = [f"Result set `{run}`: {len(df)} configurations of "
           f"{df['experiment'].nunique()} experiments on {device}" + _versions(metrics, cuda)]
    out += provenance(metrics, interleaved)
    said = conditions(metrics)
    out += [said] if said else []
    out.append(host_speed(metrics))
    head = V.metric(V.HEADLINE)
    out.append(f"Speed is the {head.label} ({head.defined_on(cuda)}); a speedup is its ratio to "
               "its one baseline at the same setting: strict fp32 (TF32 off), or amp-bf16 for "
               "an FP8 mode (never fp32, which would credit FP8 with bf16's own gain). Values "
               "are means over the repeats that finished, each repeat a fresh process with its "
               "own seed; intervals are 95% confidence intervals (Student's t for a mean; "
               f"{stats.RATIO_INTERVAL}) where {stats.ENOUGH}, ranges where {stats.RANGE_N}, "
               "none for single runs; a cell whose repeats fall into two modes (a gap between its sorted "
               "throughputs far wider than the spread within the groups) is reported as both, "
               "with no pooled interval and no claim. A claim is made only where its interval "
               f"clears the threshold ({stats.CLAIM_RULE}); where every run of a cell was "
               "slower than every run of its baseline, that is said even without an "
               f"interval. {RANKING} Warm-up (autotuning, compilation) is in no speedup "
               "(tables/ has it per cell).")
    said = decisions(list(rows), df)
    out += [said] if said else []
    said = compile_check_note(metrics)
    out += [said] if said else []
    if not cuda:
        out.append("This device is not a CUDA GPU: it has no Tensor Cores, so these numbers "
                   "test the harness and say nothing about Tensor Cores. What a CPU cannot "
                   "measure is not measured: peak memory (torch.cuda's statistics) and the "
                   "kernel profile (the Tensor Core share, and the GPU busy share that tells a "
                   "host-bound cell), so the set draws no figure of them.")
    return out


RANKING = ("An experiment's best mode is its strongest claim (pays off > faster > equivalent > "
           "inconclusive, then the interval's lower bound, so a supported small gain beats a "
           "wide large one; cells of that claim whose intervals overlap it tie, and the one of "
           "highest mean throughput is named, the others beside it); an experiment that runs "
           "FP8 is answered by its FP8 cells.")


# ------------------------------------------------------------------------------ the verdict
def sections(df: pd.DataFrame) -> tuple[list[Section], list[dict]]:
    """One section per experiment; a model zoo is answered per model (which families gain,
    which are bound elsewhere), its facts naming the model (``families``)."""
    out, facts = [], []
    for exp in dict.fromkeys(df["experiment"]):
        e = df[df["experiment"] == exp]
        parts = [(m, e[e["model"] == m]) for m in dict.fromkeys(e["model"])] \
            if e["model"].nunique() > 1 else [(None, e)]
        for model, part in parts:
            sec, f = experiment_section(part, exp if model is None else f"{exp}: {model}", df)
            out.append(sec)
            facts.append(f | {"model": model})
    return out, facts


def build(summary: pd.DataFrame, speedup: pd.DataFrame, metrics: pd.DataFrame | None = None,
          crossover: pd.DataFrame | None = None, interleaved: pd.DataFrame | None = None,
          capacity: pd.DataFrame | None = None, evidence: str = "") -> Verdict:
    """Where the set has them: ``crossover``, its FP8 crossover map (tables/fp8_crossover.csv);
    ``interleaved``, its interleaved comparisons (interleaved.csv) if speedup.csv lacks them;
    ``capacity``, its capacity study (capacity.csv); ``evidence``, ``runs.Coverage.text``."""
    df = claims.attach_interleaved(joined(summary, speedup), interleaved)
    run = str(df["run"].iloc[0])
    device = df["device_name"].dropna().astype(str)
    device = device.iloc[0] if len(device) else "an unnamed device"
    secs, facts = sections(df)
    rows = answer.answers(facts)
    zoo = families.section([(f["model"], a) for f, a in zip(facts, rows) if f["model"]])
    fp8 = fp8_findings.section(df, crossover)
    precision, cap = noisy.section(summary), capacity_findings.section(capacity)
    return Verdict(f"{TITLE_HEAD}{run} on {device}",
                   [answer.bottom_line(rows), *fp8_findings.bottom_line(crossover)],
                   answer.table(rows, evidence), intro(df, metrics, run, device, rows, interleaved),
                   secs + [s for s in (zoo, fp8, cap, precision) if s], rows,
                   screen.headline(rows, crossover))


def read(metrics: Path | None, summary: Path, speedup: Path, crossover: Path | None = None,
         interleaved: Path | None = None, siblings=(), capacity: Path | None = None) -> Verdict:
    """The verdict of a set's tables (a missing metrics.csv or interleaved.csv: a set without),
    judged across the runs whose interleaved.csv ``siblings`` names (``runs.read_across``)."""
    cap = capacity_findings.check(pd.read_csv(capacity), str(capacity)) if capacity else None
    m = resultset.read_raw(metrics) if metrics is not None and Path(metrics).exists() else None
    x = resultset.read_raw(crossover) if crossover is not None else None
    il, cov = runs.read_across(interleaved, siblings), runs.read_coverage(interleaved, siblings)
    return build(resultset.read_raw(summary), resultset.read_raw(speedup), m, x, il, cap,
                 cov.text() if cov else "")


def write(metrics: Path | None, summary: Path, speedup: Path, md: Path | None = None,
          html_path: Path | None = None, crossover: Path | None = None,
          interleaved: Path | None = None, overview: Path | None = None, siblings=(),
          capacity: Path | None = None) -> list[Path]:
    """``overview``: the overview figure's PNG, which then heads both."""
    v = read(metrics, summary, speedup, crossover, interleaved, siblings, capacity)
    written = []
    if md is not None:
        v.overview = None if overview is None else \
            Path(os.path.relpath(overview, Path(md).parent)).as_posix()
        written.append(atomic.write_text(md, v.markdown()))
    if html_path is not None:
        v.overview_png = None if overview is None else Path(overview).read_bytes()
        written.append(atomic.write_text(html_path, v.html()))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.verdict", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=Path, help="metrics.csv (provenance, versions)")
    ap.add_argument("--summary", type=Path, required=True)
    ap.add_argument("--speedup", type=Path, required=True)
    ap.add_argument("--crossover", type=Path, help="tables/fp8_crossover.csv, if the set has it")
    ap.add_argument("--interleaved", type=Path, help="interleaved.csv (missing: a set without)")
    ap.add_argument("--capacity", type=Path, help="capacity.csv, if the set has the study")
    ap.add_argument("--overview", type=Path, help="the overview figure's PNG, to head both")
    ap.add_argument("--runs", type=Path, nargs="*", default=[], help=runs.SIBLINGS_HELP)
    ap.add_argument("--md", type=Path, help="where the verdict goes as Markdown")
    ap.add_argument("--html", type=Path, help="where it goes as HTML")
    args = ap.parse_args(argv)
    if args.md is None and args.html is None:
        ap.error("give --md, --html or both")

    def written():
        write(args.metrics, args.summary, args.speedup, args.md, args.html, args.crossover,
              args.interleaved, args.overview, args.runs, args.capacity)

    return cli.main("tcbench.reports.verdict", written, (ValueError, KeyError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
