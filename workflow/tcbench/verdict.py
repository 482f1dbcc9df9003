"""The plain-language verdict of one result set (``summary.md``, and ``summary.html`` for the
Snakemake report), generated from its tables (``summary.csv``, ``speedup.csv``,
``metrics.csv``), never from records and never by hand.

Per experiment: the fastest configuration and its speedup over strict fp32 at the same setting
(steady-state throughput, with its interval), the warm-up as its own number, memory and energy
against fp32, whether the matrix work ran on Tensor Cores, what limits the step
(``tcbench.diagnosis``), and accuracy parity. Every sentence carries the numbers it rests on,
with n and the kind of interval; a claim ("faster", "pays off") is made only where a 95%
confidence interval clears it (``diagnosis.claim``).

    python -m tcbench.verdict --tables results/nvidia-h200 --out results/nvidia-h200
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import atomic, diagnosis, stats
from . import vocabulary as V
from .tables import (memory, missing, num, page, percent, setting_text, shown_axes, times,
                     with_interval)

CLAIM_WORDS = {"pays off": "pays off", "faster": "is faster, but by less than the "
               f"{diagnosis.GAIN:.2f}× that counts as paying off",
               "slower": "is slower", "no difference shown": "shows no difference",
               "n < 3": "cannot be judged (fewer than three repeats on a side)"}


@dataclass
class Section:
    title: str
    sentences: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    title: str
    intro: list[str]
    bottom_line: list[str]
    sections: list[Section]

    def markdown(self) -> str:
        out = [f"# {self.title}", "", " ".join(self.intro), "", "**Bottom line.** "
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


# ---------------------------------------------------------------------------------- the data
def cells(summary: pd.DataFrame, speedup: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: the summary joined with its ratios against fp32 (speedup.csv)."""
    from .aggregate import order

    s, sp = order(summary), order(speedup)
    keys = list(V.CELL_KEYS)
    extra = [c for c in sp.columns if c not in s.columns or c in keys]
    for df in (s, sp):
        df["precision"] = df["precision"].astype(str)
    out = s.merge(sp[extra], on=keys, how="left")
    out["order"] = out["precision"].map({p: i for i, p in enumerate(V.PRECISIONS)})
    return out.sort_values(["experiment", "batch_size", *V.AXIS_NAMES, "order"])


def config(row, axes) -> str:
    return f"{row['precision']} at {setting_text(row, axes, ', ').replace('bs ', 'batch size ')}"


def n_text(n) -> str:
    n = 0 if missing(n) else int(n)
    return "1 run" if n == 1 else f"n = {n}"


def speed(row) -> str:
    """Throughput with its interval and what the interval is."""
    e = stats.method(0 if missing(row.get(f"{V.HEADLINE}_n")) else int(row[f"{V.HEADLINE}_n"]))
    label = {stats.CI: "95% CI", stats.RANGE: "range"}.get(e)
    text = with_interval(row.get(V.HEADLINE), row.get(f"{V.HEADLINE}_low"),
                         row.get(f"{V.HEADLINE}_high"), row.get(f"{V.HEADLINE}_n"))
    return f"{text} samples/s" + (f" ({label}, {n_text(row[f'{V.HEADLINE}_n'])})" if label
                                  else "")


def ratio_text(row, stem: str = "speedup") -> str:
    text = with_interval(row.get(stem), row.get(f"{stem}_low"), row.get(f"{stem}_high"),
                         row.get(f"{stem}_n"), fmt=times)
    kind = row.get(f"{stem}_interval")
    label = {stats.CI: "95% CI", stats.RANGE: "range"}.get(kind)
    return text + (f" ({label})" if label and "(" not in text else "")


# ---------------------------------------------------------------------------- one experiment
def _fastest(ok: pd.DataFrame):
    return ok.loc[ok[V.HEADLINE].astype(float).idxmax()]


def experiment_section(df: pd.DataFrame, experiment: str) -> tuple[Section, dict]:
    """The findings of one experiment, and the facts the bottom line is built from."""
    axes = shown_axes(df)
    workload = df["workload"].iloc[0]
    data = df["data"].dropna().astype(str)
    sec = Section(f"{experiment} ({workload}" + (f", {data.iloc[0]} data)" if len(data) else ")"))
    axes = [a for a in axes if a != "model" or df["model"].nunique() > 1]
    ok = df[(df["repeats_ok"] > 0)].dropna(subset=[V.HEADLINE])
    facts = {"experiment": experiment, "claim": "", "speedup": None, "focus": None}
    if ok.empty:
        sec.sentences.append("No configuration finished, so there is nothing to compare.")
        _without_result(df, axes, sec)
        return sec, facts
    fastest = _fastest(ok)
    fp32 = ok[ok["precision"] == V.BASELINE]
    reduced = ok[ok["precision"] != V.BASELINE]
    with_base = reduced.dropna(subset=["speedup"])
    focus = with_base.loc[with_base["speedup"].astype(float).idxmax()] if len(with_base) \
        else None
    facts["focus"] = None if focus is None else config(focus, axes)

    # 1. the fastest configuration, and its speedup over fp32 at the same setting
    s = f"**Fastest:** {config(fastest, axes)}, {speed(fastest)}."
    if fastest["precision"] == V.BASELINE:
        s += " No reduced precision beat strict fp32 here."
    elif not missing(fastest.get("speedup")):
        c = diagnosis.claim(fastest["speedup"], fastest.get("speedup_low"),
                            fastest.get("speedup_high"), fastest.get("speedup_interval"))
        s += (f" Against strict fp32 at the same setting that is {ratio_text(fastest)} the "
              f"steady-state throughput: it {CLAIM_WORDS[c]}.")
    elif not missing(fastest.get("gain")):
        s += (f" This experiment has no fp32 cell at that setting; against the plain fp32 "
              f"baseline ({fastest['plain_experiment']}, batch size "
              f"{int(fastest['plain_batch_size'])}, eager) it reaches "
              f"{ratio_text(fastest, 'gain')} the throughput.")
    else:
        s += " No fp32 run exists to compare it with."
    sec.sentences.append(s)
    if focus is not None and config(focus, axes) != config(fastest, axes):
        c = diagnosis.claim(focus["speedup"], focus.get("speedup_low"), focus.get("speedup_high"),
                            focus.get("speedup_interval"))
        sec.sentences.append(f"**Largest speedup over fp32 at the same setting:** "
                             f"{config(focus, axes)}, {ratio_text(focus)}: it {CLAIM_WORDS[c]}.")
    if focus is not None:
        facts["claim"] = diagnosis.claim(focus["speedup"], focus.get("speedup_low"),
                                         focus.get("speedup_high"), focus.get("speedup_interval"))
        facts["speedup"] = ratio_text(focus)
    _fp8_against_bf16(df, axes, sec)

    # 2. warm-up, on its own
    warm = fastest.get("time_to_steady_s")
    if not missing(warm):
        base = fp32[(fp32["batch_size"] == fastest["batch_size"])]
        s = (f"**Warm-up** (time to the first fast step: autotuning, compilation; not part of "
             f"any speedup): {num(warm)} s for the fastest configuration")
        if len(base) and not missing(base["time_to_steady_s"].iloc[0]) and \
                fastest["precision"] != V.BASELINE:
            s += f", {num(base['time_to_steady_s'].iloc[0])} s for fp32 at batch size " \
                 f"{int(fastest['batch_size'])}"
        sec.sentences.append(s + ".")

    # 3. memory and energy against fp32
    mem = fastest.get("max_memory_allocated_bytes")
    ratio = fastest.get("memory_ratio")
    if not missing(mem) and fastest["precision"] != V.BASELINE and not missing(ratio):
        change = "the same peak memory as" if abs(float(ratio) - 1) < 0.005 else (
            f"{percent(1 - float(ratio))} less peak memory than" if ratio < 1 else
            f"{percent(float(ratio) - 1)} more peak memory than")
        sec.sentences.append(f"**Memory:** {change} fp32 at the same setting ({memory(mem)} vs "
                             f"{memory(float(mem) / float(ratio))}, "
                             f"torch.cuda.max_memory_allocated).")
    elif ok["max_memory_allocated_bytes"].isna().all():
        sec.sentences.append("**Memory:** not measured (torch.cuda memory statistics need a "
                             "CUDA device).")
    savers = reduced.dropna(subset=["memory_ratio"])
    savers = savers[savers["memory_ratio"] < 0.995]
    if len(savers) and (fastest["precision"] == V.BASELINE or missing(ratio)):
        best = savers.loc[savers["memory_ratio"].idxmin()]
        sec.sentences.append(f"**Memory:** the largest saving is {config(best, axes)}, "
                             f"{percent(1 - best['memory_ratio'])} less peak memory than fp32 "
                             f"({memory(best['max_memory_allocated_bytes'])}).")
    for _, r in df[(df["precision"] == V.BASELINE) & (df["status"] == "oom")].iterrows():
        fits = reduced[(reduced["batch_size"] == r["batch_size"])
                       & reduced["max_memory_allocated_bytes"].notna()]
        if len(fits):
            f = fits.loc[fits["max_memory_allocated_bytes"].idxmin()]
            sec.sentences.append(f"**Memory made the difference:** fp32 ran out of memory at "
                                 f"batch size {int(r['batch_size'])}, where {f['precision']} "
                                 f"fit in {memory(f['max_memory_allocated_bytes'])}.")
    energy = fastest.get("energy_ratio")
    if fastest["precision"] != V.BASELINE and not missing(energy):
        sec.sentences.append(
            f"**Energy:** {num(float(fastest['steady_energy_per_sample_j']) * 1e3)} mJ per "
            f"sample over the steady steps, {times(energy)} that of fp32 at the same setting "
            f"(NVML energy counter).")

    # 4. Tensor Cores: did the matrix work run on them, and what limits the step now
    for label, row in (("fastest", fastest), ("largest speedup", focus)):
        if row is None or (label != "fastest" and config(row, axes) == config(fastest, axes)):
            continue
        sec.sentences.append(_evidence(row, axes, fp32))
    _accuracy(df, sec)
    _without_result(df, axes, sec)
    return sec, facts


def _evidence(row, axes, fp32) -> str:
    what = config(row, axes)
    on_tc = diagnosis.matmuls_on_tensor_cores(row)
    tc, mm = row.get("tensor_core_share"), row.get("matmul_share")
    kind = diagnosis.bottleneck(row)
    if on_tc is None and kind is None:
        why = diagnosis.why_unprofiled(not missing(row.get("compute_capability")))
        return (f"**Tensor Cores and bottleneck:** not measurable for {what} ({why})."
                + (" It waited for data "
                                             f"{percent(row.get('data_wait_share'))} of each "
                                             f"step." if not missing(row.get("data_wait_share"))
                                             else ""))
    parts = []
    if on_tc is not None:
        share = f"{percent(tc)} of GPU kernel time ran in Tensor Core kernels" + (
            f", of {percent(mm)} in matrix kernels (GEMMs, convolutions) on any unit"
            if not missing(mm) else "")
        if row["precision"] == V.BASELINE:
            parts.append(f"**Tensor Cores:** strict fp32 keeps them off in {what}: {share}.")
        elif on_tc:
            parts.append(f"**Tensor Cores:** in {what} the matrix work ran on Tensor Cores "
                         f"({share}).")
        else:
            parts.append(f"**Tensor Cores:** in {what} most matrix work did not run on Tensor "
                         f"Cores ({share}).")
    busy, wait = row.get("gpu_busy_share"), row.get("data_wait_share")
    limit = {"input": f"the input pipeline: the GPU waited for the next batch {percent(wait)} "
                      f"of each step",
             "host": f"the host: the GPU had a kernel running only {percent(busy)} of the wall "
                     f"time, so Python, kernel launches and synchronisation set the pace",
             "tensor": f"Tensor Core arithmetic ({percent(tc)} of kernel time), the best case",
             "simt": f"matrix arithmetic on the ordinary fp32 units ({percent(mm)} of kernel "
                     f"time in matrix kernels, none on Tensor Cores)",
             "memory": f"memory-bound kernels: the GPU was busy {percent(busy)} of the time but "
                       f"{percent(1 - float(tc)) if not missing(tc) else 'most'} of kernel time "
                       f"went to elementwise, normalisation, pooling and optimiser kernels"
                       + (f" (top kernel `{str(row['top_kernel'])[:60]}`)"
                          if not missing(row.get("top_kernel")) else ""),
             None: "not measurable without a kernel profile"}[kind]
    parts.append(f"**What limits {what}:** {limit}.")
    return " ".join(parts)


def _fp8_against_bf16(df, axes, sec: Section) -> None:
    """FP8 is a question against bf16 (the mode it replaces), not only against fp32."""
    fp8 = [m.name for m in V.MODES if m.fp8_recipe]
    if not fp8:
        return
    for _, r in df[df["precision"].isin(fp8) & (df["repeats_ok"] > 0)].iterrows():
        same = df[(df["precision"] == "amp-bf16") & (df["repeats_ok"] > 0)]
        for a in ("batch_size", *V.AXIS_NAMES):
            same = same[same[a].astype(str) == str(r[a])]
        if not len(same) or missing(r.get(V.HEADLINE)):
            continue
        b = same.iloc[0]
        ratio = float(r[V.HEADLINE]) / float(b[V.HEADLINE])
        sec.sentences.append(f"**FP8 against bf16:** {config(r, axes)} reaches "
                             f"{times(ratio)} the throughput of amp-bf16 at the same setting "
                             f"({num(r[V.HEADLINE])} vs {num(b[V.HEADLINE])} samples/s, "
                             f"{n_text(r['repeats_ok'])} and {n_text(b['repeats_ok'])}).")


def _accuracy(df, sec: Section) -> None:
    acc = df.dropna(subset=["test_accuracy"]) if "test_accuracy" in df else df.iloc[:0]
    if not len(acc):
        return
    pct = lambda v: f"{100 * float(v):.2f}%"  # noqa: E731
    parts = [f"{r['precision']} {with_interval(r['test_accuracy'], r.get('test_accuracy_low'), r.get('test_accuracy_high'), r.get('test_accuracy_n'), fmt=pct)}"  # noqa: E501
             for _, r in acc.iterrows()]
    s = f"**Test accuracy** (held-out set, mean over seeds): {'; '.join(parts)}."
    diffs = []
    for _, r in acc[acc["precision"] != V.BASELINE].iterrows():
        if missing(r.get("accuracy_diff")):
            continue
        d = with_interval(r["accuracy_diff"], r.get("accuracy_diff_low"),
                          r.get("accuracy_diff_high"), r.get("accuracy_diff_n"),
                          fmt=lambda v: f"{100 * float(v):+.2f}")
        judged = r.get("accuracy_diff_interval") == stats.CI
        lo, hi = r.get("accuracy_diff_low"), r.get("accuracy_diff_high")
        verdict = ("no difference shown" if judged and lo <= 0 <= hi else
                   "a loss" if judged and hi < 0 else "a gain" if judged else
                   "fewer than three paired seeds, not judged")
        diffs.append(f"{r['precision']} {d} points ({verdict})")
    if diffs:
        s += (" Against fp32, paired by seed (95% CI of the mean difference): "
              + "; ".join(diffs) + ".")
    sec.sentences.append(s)


def _without_result(df, axes, sec: Section) -> None:
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return
    parts = []
    for _, r in bad.iterrows():
        reason = r.get("status_reason")
        reason = "" if missing(reason) else f": {str(reason).split(';')[0][:120]}"
        done = f" ({int(r['repeats_ok'])} of {int(r['repeats'])} repeats finished)" \
            if r["repeats_ok"] else ""
        parts.append(f"{config(r, axes)}, {r['status']}{done}{reason}")
    sec.sentences.append("**Without a result:** " + "; ".join(parts) + ".")


# ------------------------------------------------------------------------------ the verdict
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


def build(summary: pd.DataFrame, speedup: pd.DataFrame, metrics: pd.DataFrame | None = None
          ) -> Verdict:
    df = cells(summary, speedup)
    run = str(df["run"].iloc[0])
    device = df["device_name"].dropna().astype(str)
    device = device.iloc[0] if len(device) else "an unnamed device"
    env = metrics.iloc[0].to_dict() if metrics is not None and len(metrics) else {}
    cuda = metrics is not None and "compute_capability" in metrics and \
        metrics["compute_capability"].notna().any()
    intro = [f"Result set `{run}`: {len(df)} configurations of "
             f"{df['experiment'].nunique()} experiments on {device}"]
    cuda_col = "torch_cuda_version" if not missing(env.get("torch_cuda_version")) \
        else "cuda_runtime_version"
    versions = [f"{k} {env.get(c)}" for k, c in (("PyTorch", "torch_version"),
                                                  ("built with CUDA", cuda_col),
                                                  ("driver", "driver_version"))
                if not missing(env.get(c)) and (k != "built with CUDA" or cuda)]
    intro[0] += (f" ({', '.join(versions)})." if versions else ".")
    intro += provenance(metrics)
    head = V.metric(V.HEADLINE)
    intro.append(f"Speed is the {head.label} ({head.definition}); a speedup is its ratio to strict fp32 (TF32 off) at the same setting. Values "
                 "are means over the repeats that finished, each repeat a fresh process with its "
                 "own seed; intervals are 95% confidence intervals (Student's t; Welch's t on "
                 "the log scale for ratios) where n >= 3, ranges where n = 2, none for single "
                 f"runs. A gain is called only where its interval clears the threshold "
                 f"(faster: above 1×; pays off: above {diagnosis.GAIN:.2f}×). Warm-up "
                 "(autotuning, compilation) is reported on its own and is in no speedup.")
    if not cuda:
        intro.append("This device is not a CUDA GPU: it has no Tensor Cores, so these numbers "
                     "test the harness and say nothing about Tensor Cores.")
    sections, facts = [], []
    for exp in dict.fromkeys(df["experiment"]):
        e = df[df["experiment"] == exp]
        # a model zoo is answered per model: which families gain, which are bound elsewhere
        parts = [(f"{exp}: {m}", e[e["model"] == m]) for m in dict.fromkeys(e["model"])] \
            if e["model"].nunique() > 1 else [(exp, e)]
        for name, part in parts:
            sec, f = experiment_section(part, name)
            sections.append(sec)
            facts.append(f)
    return Verdict(f"Verdict: {run} on {device}", intro, bottom_line(facts), sections)


def bottom_line(facts: list[dict]) -> list[str]:
    judged = [f for f in facts if f["claim"]]
    if not judged:
        return ["No experiment has a reduced-precision result with an fp32 baseline at the "
                "same setting, so there is no speedup to report."]
    groups = {}
    for f in judged:
        groups.setdefault(f["claim"], []).append(f)
    out = []
    order = ("pays off", "faster", "no difference shown", "slower", "n < 3")
    lead = {"pays off": f"Reduced precision pays off (95% CI of the throughput ratio wholly "
                        f"above {diagnosis.GAIN:.2f}×) in",
            "faster": f"It is faster, but by less than {diagnosis.GAIN:.2f}×, in",
            "no difference shown": "It shows no difference from fp32 in",
            "slower": "It is slower than fp32 in",
            "n < 3": "It cannot be judged (fewer than three repeats) in"}
    for c in order:
        if c not in groups:
            continue
        items = "; ".join(f"{f['experiment']} ({f['focus']}, {f['speedup']})" for f in groups[c])
        k = len(groups[c])
        out.append(f"{lead[c]} {k} of {len(judged)} experiment{'s' if len(judged) > 1 else ''}: "
                   f"{items}.")
    return out


def write(tables: Path, out_dir: Path) -> list[Path]:
    tables = Path(tables)
    metrics = pd.read_csv(tables / "metrics.csv") if (tables / "metrics.csv").exists() else None
    v = build(pd.read_csv(tables / "summary.csv"), pd.read_csv(tables / "speedup.csv"), metrics)
    md, page_ = Path(out_dir) / "summary.md", Path(out_dir) / "summary.html"
    atomic.write_text(md, v.markdown())
    atomic.write_text(page_, v.html())
    return [md, page_]


def bottom_line_of(summary_md: Path) -> str | None:
    """The bottom line of a written verdict, for the end of a run."""
    for line in Path(summary_md).read_text().splitlines():
        if line.startswith("**Bottom line.**"):
            return line.removeprefix("**Bottom line.**").strip()
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.verdict", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=Path, required=True, help="folder with summary.csv etc.")
    ap.add_argument("--out", type=Path, required=True, help="folder for summary.md/.html")
    args = ap.parse_args(argv)
    try:
        write(args.tables, args.out)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"tcbench.verdict: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
