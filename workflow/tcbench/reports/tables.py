"""Tables for readers: per experiment, and for the whole set (speedup, best), from
``summary.csv``, ``speedup.csv`` and ``best.csv`` only. Every number that rests on repeats
carries its interval and says what the interval is (``tcbench.stats``); n is a column. A cell
without a number says why. Each table is a ``render.table.Table``, written in every format.

    python -m tcbench.reports.tables --summary S.csv --speedup P.csv --experiment E \\
        --md tables/E.md --tex tables/E.tex --html tables/E.html
    python -m tcbench.reports.tables --summary S.csv --speedup P.csv \\
        --combined-md tables.md --combined-tex tables.tex
    python -m tcbench.reports.tables --summary S.csv --speedup P.csv --best B.csv \\
        --speedup-md speedup.md --best-md best.md

Adding a table: a function here that returns a ``Table``, and its rule's output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from .. import atomic, cli, kernels, resultset, stats, vocabulary as V
from ..analysis import claims, diagnosis, throughput
from ..render.numbers import (GIB, INTERVAL_NOTE, MIB, MISSING, WARMUP_HEAD,  # noqa: F401
                              WARMUP_MISS_HEAD, WARMUP_NOTE, has_misses, memory_unit, missing,
                              modes_text, num, pct, percent, points, share, times, warmup_text,
                              with_interval)
from ..render.settings import setting_text, shown_axes
from ..render.table import Table, to_latex_all, to_markdown, write_formats, write_markdown
from .best_table import best_table  # noqa: F401 - the set's best.md, written by write_views
from . import ratio_cells
from .holdback import holdback_table
from .phrases import NOISY_NOTE, PREDATE_NOTE, n_status, noisy_text, predating, throughput_text


def _no_value(row, text: str, why: str = "not measured") -> str:
    """A cell with no number: ``why`` where the run finished but has no such measurement; a
    dash where the run did not finish (the status column says why)."""
    return text if text != MISSING else why if row.get("repeats_ok", 0) else MISSING


def _miss_cell(r) -> str:
    """The warm-up of a cell's compile-cache misses, or why it has none."""
    if not r.get("repeats_ok"):
        return MISSING
    text = warmup_text(r, V.WARMUP_MISS)
    if text != MISSING:
        return text
    return "not compiled" if str(r.get("compile", "off")) == "off" else "no miss"


def _hit_cell(r, misses: bool) -> str:
    """The warm-up of a cell's runs that found their compile cache, or, where every run
    compiled afresh, that it has none (never "not measured": the misses column has it)."""
    text = warmup_text(r)
    if text == MISSING and misses and r.get("repeats_ok") \
            and warmup_text(r, V.WARMUP_MISS) != MISSING:
        return "no hit"
    return text


def _ratio_cells(q, r) -> tuple[str, str, str]:
    """A cell's judged ratio, how it was judged, and its per-process ratio (``ratio_cells``),
    from its speedup.csv row ``q`` (empty where it has none)."""
    if not len(q):
        return (MISSING if not r.get("repeats_ok") else "not measured"), "", ""
    return (*ratio_cells.judged(q), ratio_cells.per_process(q))


def claim(r) -> str:
    """The claim the verdict makes of a row (``analysis.claims.judgement``: over its one
    baseline, gated where the repeats cannot decide it, from an interleaved comparison where
    one measured it); none for fp32 itself."""
    if str(r["precision"]) == V.BASELINE:
        return ""
    j = claims.judgement(r)
    return "" if j is None else stats.claim_text(j.claim, j.estimate)


# ------------------------------------------------------------------------ one experiment
class Experiment:
    """One experiment's rows, in setting order, with what every table of it shares."""

    def __init__(self, summary: pd.DataFrame, speedup: pd.DataFrame, experiment: str):
        s = resultset.order(summary[summary["experiment"] == experiment])
        if s.empty:
            raise ValueError(f"experiment {experiment!r} has no rows in summary.csv")
        sp = resultset.order(speedup[speedup["experiment"] == experiment])
        self.name = experiment
        self.ratios = {resultset.cell_key(r): r for _, r in sp.iterrows()}
        self.rows = resultset.in_setting_order(s)
        self.axes = shown_axes(self.rows)
        self.run = str(self.rows["run"].iloc[0])
        device = self.rows["device_name"].dropna().astype(str)
        self.where = device.iloc[0] if len(device) else self.run

    def ratio(self, r):
        return self.ratios.get(resultset.cell_key(r), {})

    def title(self, what: str) -> str:
        return f"{self.name} on {self.where}: {what}"


def _memory_cells(e: Experiment, r, unit: str) -> list[str]:
    mem = r.get("max_memory_allocated_bytes")
    div = GIB if unit == "GiB" else MIB
    ratio = e.ratio(r).get("memory_ratio")
    return [num(float(mem) / div) if not missing(mem) else MISSING,
            times(ratio) if str(r["precision"]) != V.BASELINE and not missing(ratio)
            else "no fp32" if str(r["precision"]) != V.BASELINE and not missing(mem)
            else "1×" if not missing(mem) else MISSING]


def _speed_notes(e: Experiment, has_mem: bool, speeds=(V.HEADLINE,)) -> list[str]:
    notes = [f"Result set {e.run}. Throughput is the steady-state training throughput (the "
             f"steps after warm-up, CUDA-event timed); first fast step is the time to the end "
             f"of warm-up (autotuning, "
             f"compilation), reported on its own and in no ratio.",
             INTERVAL_NOTE, WARMUP_NOTE]
    if throughput.TOKENS in speeds:
        notes.append(f"A sample is one sequence: tokens/s is samples/s times its "
                     f"{_tokens_text(e.rows)} tokens ({V.metric(throughput.TOKENS).definition}).")
    if has_mem:
        notes.append("Peak memory is torch.cuda.max_memory_allocated.")
    s = e.rows
    if any(predating(r) for _, r in s.iterrows()):
        notes.append(PREDATE_NOTE)
    for _, r in s[s["status"] != V.OK].drop_duplicates("status_reason").iterrows():
        if not missing(r.get("status_reason")):
            notes.append(f"{r['precision']} ({setting_text(r, e.axes)}): {r['status']}: "
                         f"{str(r['status_reason'])[:200]}")
    return notes


def _tokens_text(rows) -> str:
    per = sorted({int(v) for v in pd.to_numeric(rows[throughput.PER_SAMPLE],
                                                errors="coerce").dropna()})
    return " or ".join(f"{v:,}" for v in per)


def speed_table(e: Experiment) -> Table:
    """Speed and memory of every cell of one experiment."""
    s = e.rows
    unit, _ = memory_unit(pd.to_numeric(s["max_memory_allocated_bytes"]).max())
    has_mem = s["max_memory_allocated_bytes"].notna().any()
    speeds = throughput.columns(s)  # samples/s, and tokens/s for a token workload
    misses = has_misses(s)
    # an experiment without fp32 (transformers against amp-bf16) has no "× fp32" to show: two
    # columns of "no fp32" would only push the table off the page
    fp32 = bool(s["precision"].astype(str).eq(V.BASELINE).any())
    ratios = [_ratio_cells(e.ratio(r), r) for _, r in s.iterrows()]
    shown = any(how for _, how, _ in ratios)
    pp = shown and ratio_cells.any_interleaved(pd.DataFrame([e.ratio(r) for _, r in s.iterrows()
                                                             if len(e.ratio(r))]))
    heads = [ratio_cells.JUDGED_HEAD, ratio_cells.HOW_HEAD,
             *([ratio_cells.PER_PROCESS_HEAD] if pp else [])] if shown else []
    cols = ["setting", "precision", "n", *map(throughput.unit, speeds), *heads, WARMUP_HEAD]
    cols += [WARMUP_MISS_HEAD] if misses else []
    cols += [f"peak memory ({unit})", *(["memory × fp32"] if fp32 else [])] if has_mem else []
    rows = []
    for (_, r), ratio in zip(s.iterrows(), ratios):
        cells = [setting_text(r, e.axes), str(r["precision"]), n_status(r),
                 *(_speed(r, c, i == 0) for i, c in enumerate(speeds)),
                 *ratio[:len(heads)],
                 _hit_cell(r, misses)]
        cells += [_miss_cell(r)] if misses else []
        cells += _memory_cells(e, r, unit)[:2 if fp32 else 1] if has_mem else []
        rows.append([_no_value(r, c) if i > 2 and c else c for i, c in enumerate(cells)])
    notes = _speed_notes(e, has_mem, speeds)
    notes += [ratio_cells.JUDGED_NOTE] if shown else []
    notes += ratio_cells.mark_notes(pd.DataFrame(list(e.ratios.values()))) if shown else []
    if any(noisy_text(r) for _, r in s.iterrows()):
        notes.append(NOISY_NOTE)
    if not shown:
        notes.append(f"No baseline ran beside these cells ({V.BASELINE}, or {V.FP8_BASELINE} "
                     f"for an FP8 mode): there is no ratio to judge.")
    return Table(e.title("speed and memory"), cols, rows,
                 align="".join("l" if i < 3 or c == ratio_cells.HOW_HEAD else "r"
                               for i, c in enumerate(cols)),
                 notes=notes, label=f"tab:{e.run}:{e.name}")


def accuracy_table(e: Experiment) -> Table:
    """Test accuracy of every cell, and its difference to fp32 paired by seed."""
    rows = []
    for _, r in e.rows.iterrows():
        q = e.ratio(r)
        cells = [setting_text(r, e.axes), str(r["precision"]), n_status(r),
                 with_interval(r.get("test_accuracy"), r.get("test_accuracy_low"),
                               r.get("test_accuracy_high"), r.get("test_accuracy_n"), fmt=pct),
                 "" if str(r["precision"]) == V.BASELINE else with_interval(
                     q.get("accuracy_diff"), q.get("accuracy_diff_low"),
                     q.get("accuracy_diff_high"), q.get("accuracy_diff_n"), fmt=points),
                 num(r.get("final_loss"))]
        rows.append([_no_value(r, c) if i > 2 and c else c for i, c in enumerate(cells)])
    notes = [f"Result set {e.run}. Accuracy on the held-out set after training, evaluated in "
             f"fp32, mean over the repeats (each its own seed); Δ is the mean difference to fp32 "
             f"in percentage points, each repeat paired with the fp32 repeat of the same seed.",
             INTERVAL_NOTE]
    return Table(e.title("accuracy against fp32"),
                 ["setting", "precision", "n", "test accuracy", "Δ vs fp32 (points)",
                  "final training loss"], rows, align="lllrrr", notes=notes,
                 label=f"tab:{e.run}:{e.name}:accuracy")


def _busy_cell(r) -> str:
    """The GPU busy share; where capped at 100%, the kernels' own share of the step beside it."""
    capped = kernels.busy_note(r.get("gpu_busy_share_uncapped"),
                               r.get("kernel_time_over_profile_wall"))
    return percent(r.get("gpu_busy_share")) + (
        f" (kernels {percent(r.get('gpu_busy_share_uncapped'))})" if capped else "")


def evidence_table(e: Experiment) -> Table:
    """Where the time goes: kernel shares, data wait, MFU, energy, what limits the step."""
    cols = ["setting", "precision", "Tensor Core share", "matmul share", "GPU busy",
            "data wait", "MFU", "energy/sample (mJ)", "limited by"]
    rows = []
    for _, r in e.rows.iterrows():
        en = r.get("steady_energy_per_sample_j")
        cells = [setting_text(r, e.axes), str(r["precision"]),
                 percent(r.get("tensor_core_share")),
                 diagnosis.bound(r, "matmul") + percent(r.get("matmul_share")),
                 _busy_cell(r), percent(r.get("data_wait_share")),
                 percent(r.get("mfu"), 1), num(float(en) * 1e3) if not missing(en) else MISSING,
                 diagnosis.short(r, most=1) if r.get("repeats_ok") else MISSING]
        rows.append([_no_value(r, c, "not profiled" if i in (2, 3, 4) else "not measured")
                     if i > 1 else c for i, c in enumerate(cells)])
    gpu = pd.to_numeric(e.rows.get("compute_capability"), errors="coerce").notna().any()
    fp8 = e.rows["precision"].astype(str).map(lambda p: bool(V.mode(p).fp8_recipe)).any()
    notes = [f"Result set {e.run}, means over the finished repeats; 'not profiled': "
             f"{diagnosis.why_unprofiled(gpu)}; shares are of GPU kernel "
             f"time (Tensor Core, matmul) or of wall time (GPU busy: the profile's kernel time "
             f"per step over the timed steps' median step; data wait), from one profiled repeat "
             f"per cell (torch.profiler, after the timed steps). MFU is achieved "
             f"TFLOP/s over this device's measured matmul ceiling in the same mode; energy is "
             f"NVML's counter over the steady steps, from the repeats where it resolves the "
             f"window and agrees with the power sampled over it (tcbench.energy).",
             f"Limited by: {diagnosis.SHORT['input']} = {diagnosis.NAMES['input']}; "
             f"{diagnosis.SHORT['host']} = {diagnosis.NAMES['host']}; else the largest share "
             f"of kernel time with its number ("
             + ", ".join(w for k, w in diagnosis.KERNEL_WORDS.items()
                         if fp8 or k not in ("fp8_gemm", "other_tensor_core", "fp8_scaling"))
             + "); "
             f"{diagnosis.SHORT[None]} = {diagnosis.NAMES[None]} (tcbench.analysis.diagnosis)."]
    capped = [f"{setting_text(r, e.axes)}, {r['precision']}: " + note.split("; ", 1)[1]
              for _, r in e.rows.iterrows()
              if (note := kernels.busy_note(r.get("gpu_busy_share_uncapped"),
                                            r.get("kernel_time_over_profile_wall")))]
    if capped:
        notes.append("GPU busy 100% (kernels N%): "
                     + kernels.CAPPED_NOTE.replace("{:.0%}", "N%") + "; why, per cell: "
                     + "; ".join(capped) + ".")
    if fp8:
        notes.append(f"MFU of the FP8 cells: {V.FP8_MFU_COUNTING}.")
    if e.rows.apply(diagnosis.matmul_bounded, axis=1).any():
        notes.append(diagnosis.BOUND_NOTE)
    return Table(e.title("where the time goes"), cols, rows,
                 align="ll" + "r" * (len(cols) - 3) + "l", notes=notes,
                 label=f"tab:{e.run}:{e.name}:evidence")


def _has_accuracy(s: pd.DataFrame) -> bool:
    return "test_accuracy" in s and s["test_accuracy"].notna().any()


def _has_evidence(s: pd.DataFrame) -> bool:
    return s["tensor_core_share"].notna().any() or s["data_wait_share"].notna().any()


# an experiment's tables, in order: each with the test that says whether it has anything to show
EXPERIMENT_TABLES = ((speed_table, lambda s: True), (accuracy_table, _has_accuracy),
                     (evidence_table, _has_evidence))


def experiment_tables(summary: pd.DataFrame, speedup: pd.DataFrame, experiment: str
                      ) -> list[Table]:
    """Speed and memory (always); accuracy (where measured); where the time goes (where
    there is a kernel profile or a data-wait share)."""
    e = Experiment(summary, speedup, experiment)
    return [make(e) for make, shows in EXPERIMENT_TABLES if shows(e.rows)]


# ----------------------------------------------------------------------- whole-set tables
def speedup_table(sp: pd.DataFrame, summary: pd.DataFrame | None = None) -> Table:
    """Every cell against fp32 at the same setting, with the claim its interval allows; each
    throughput as the verdict prints it, with its interval, from ``summary`` (summary.csv)."""
    sp = resultset.order(sp)
    cells = {} if summary is None else {resultset.cell_key(r): r for _, r in summary.iterrows()}
    speeds = throughput.columns(sp)  # a tokens/s column where the set has a token workload
    rows = []
    for exp, g in sp.groupby("experiment", sort=False):
        axes = shown_axes(g)
        for _, r in resultset.in_setting_order(g).iterrows():
            rows.append([str(exp), setting_text(r, axes), str(r["precision"]),
                         f"{int(r['repeats_ok'])}/{int(r.get('baseline_repeats_ok') or 0)}"
                         + ("" if str(r["status"]) == V.OK else f" {r['status']}"),
                         *(_speed(cells[resultset.cell_key(r)], c, i == 0)
                           if resultset.cell_key(r) in cells else _marked(num(r.get(c)), r, i == 0)
                           if r.get("repeats_ok") else MISSING for i, c in enumerate(speeds)),
                         *_ratio_cells(r, r), claim(r), times(r.get("memory_ratio"))
                         if str(r["precision"]) != V.BASELINE else ""])
    cols = ["experiment", "setting", "precision", "n (cell/fp32)", *map(throughput.unit, speeds),
            ratio_cells.JUDGED_HEAD, ratio_cells.HOW_HEAD, ratio_cells.PER_PROCESS_HEAD, "claim",
            "memory × fp32"]
    notes = [INTERVAL_NOTE, ratio_cells.JUDGED_NOTE, stats.CLAIM_NOTE, *ratio_cells.mark_notes(sp)]
    notes += [PREDATE_NOTE] if any(predating(r) for _, r in sp.iterrows()) else []
    return Table("Speedup over each cell's baseline at the same setting", cols, rows,
                 align="lllr" + "r" * len(speeds) + "rlrlr", notes=notes)


def _speed(r, column: str, first: bool) -> str:
    """A cell's throughput in ``column`` with its interval (none: a dash), noise beside."""
    return MISSING if missing(r.get(column)) else \
        throughput_text(r, column) + (f", {noisy_text(r)}" if first and noisy_text(r) else "")


def _marked(text: str, r, first: bool) -> str:
    """A speed, the first of a row's followed by the runs that predate the compile-in-window
    check (``predating``)."""
    before = predating(r) if first else None
    return f"{text}, {before}" if before else text


# ----------------------------------------------------------------------------------- driver
def write_experiment(summary, speedup, experiment: str, paths: dict[str, Path]) -> list[Path]:
    """One experiment's tables, in each format of ``paths`` (md / tex / html)."""
    return write_formats(experiment_tables(summary, speedup, experiment), paths, experiment)


def write_combined(summary, speedup, md: Path | None, tex: Path | None) -> list[Path]:
    """Every experiment of the set, in one Markdown and one LaTeX file."""
    built = [t for exp in dict.fromkeys(summary["experiment"])
             for t in experiment_tables(summary, speedup, exp)]
    written = []
    if md is not None:
        written.append(atomic.write_text(md, "".join(to_markdown(t, "##") + "\n"
                                                     for t in built)))
    if tex is not None:
        written.append(atomic.write_text(tex, to_latex_all(built)))
    return written


def write_views(speedup: pd.DataFrame | None, best: pd.DataFrame | None,
                speedup_md: Path | None, best_md: Path | None, targets: dict | None = None,
                summary: pd.DataFrame | None = None) -> list[Path]:
    """The whole set's speedup and best tables, as Markdown beside their CSVs (throughputs from
    ``summary``); best.md then what holds each fastest configuration back (``holdback``,
    against the config's ``targets``: experiment -> its target)."""
    written = []
    if speedup_md is not None:
        written.append(write_markdown(speedup_table(speedup, summary), speedup_md))
    if best_md is not None:
        held = holdback_table(best, targets)
        written.append(write_markdown([best_table(best), *([held] if held else [])], best_md))
    return written


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.tables", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("summary", "speedup", "best"):
        ap.add_argument(f"--{name}", type=Path, help=f"{name}.csv of the result set")
    ap.add_argument("--experiment", help="the experiment whose tables --md/--tex/--html get")
    for ext in V.TABLE_FORMATS:
        ap.add_argument(f"--{ext}", type=Path, metavar="PATH")
    for name in ("combined-md", "combined-tex", "speedup-md", "best-md"):
        ap.add_argument(f"--{name}", type=Path, metavar="PATH")
    ap.add_argument("--targets", type=json.loads, default={}, metavar="JSON",
                    help='the experiments\' targets, e.g. {"resnet50_fastest": '
                         '{"samples_per_s": 8000}} (best.md\'s holdback table)')
    return ap


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    formats = {ext: getattr(args, ext) for ext in V.TABLE_FORMATS if getattr(args, ext)}
    if formats and not args.experiment:
        return cli.bad_input("tcbench.reports.tables", "--md/--tex/--html need --experiment")

    def write():
        read = {k: resultset.read_raw(getattr(args, k)) if getattr(args, k) else None
                for k in ("summary", "speedup", "best")}
        if formats:
            write_experiment(read["summary"], read["speedup"], args.experiment, formats)
        if args.combined_md or args.combined_tex:
            write_combined(read["summary"], read["speedup"], args.combined_md, args.combined_tex)
        write_views(read["speedup"], read["best"], args.speedup_md, args.best_md, args.targets,
                    read["summary"])

    return cli.main("tcbench.reports.tables", write, (ValueError, FileNotFoundError, TypeError))


if __name__ == "__main__":
    sys.exit(main())
