"""Figures of one experiment from its tables (CSV in; PDF, SVG and PNG out), never from
records: one function per figure kind, all in the style of ``render.plot``. No text overlaps
other text or leaves the canvas (tests/test_figures.py checks every figure).

    python -m tcbench.reports.figures --metrics M.csv --summary S.csv --speedup P.csv \\
        --experiment E --outputs figures/E_throughput.png figures/E_throughput.pdf ...

Each output is named ``vocabulary.figure_name(experiment, kind, format)``; the workflow's rule
lists them and passes them here. Adding a figure kind: a function here, its entry in ``KINDS``
and in ``vocabulary.FIGURES`` (which the rule's outputs come from), and its caption.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .. import cli
from .. import resultset as RS
from .. import stats
from .. import vocabulary as V
from ..analysis import diagnosis as D
from ..analysis import throughput as TP
from ..render.numbers import memory_unit, num
from ..render.plot import (HEIGHT_IN, NO_RECORD, WIDTHS, Line2D, Patch, Ticks, figure_width,
                           grouped_bars, interval_at, legend, new_figure, nothing_to_plot, plt,
                           present_precisions, save_as, setting_label, slot_width, slot_x,
                           style, value_axis)

# why a slot has no record at all, where the study's plan (its matrix) is known
NOT_IN_DESIGN, PLANNED = "not in design", "planned, no record"


def experiment_rows(df: pd.DataFrame) -> pd.DataFrame:
    df = RS.order(df)
    df = df.sort_values(["batch_size", *V.AXIS_NAMES, "precision"])
    df["group"] = setting_label(df)
    return df


def groups_of(df):
    return list(dict.fromkeys(df["group"]))


class Plan:
    """Which cells of an experiment its study planned (the matrix's cell names without the
    repeat), to say of a slot with no record whether the design never had it or it was
    planned and did not run; ``planned=None`` where the plan is not known (a set's other
    studies), and such a slot says only that there is no record."""

    def __init__(self, metrics: pd.DataFrame, planned=None):
        m = experiment_rows(metrics)
        # a setting's part of a cell name: "amp-bf16_bs8192_compile-default_r1" -> after the
        # precision, before the repeat
        self.setting = {g: str(c).split("_", 1)[1].rsplit("_r", 1)[0]
                        for g, c in zip(m["group"], m["cell"])}
        self.planned = None if planned is None else set(planned)

    def __call__(self, group: str, precision: str) -> str:
        if self.planned is None or group not in self.setting:
            return NO_RECORD
        return PLANNED if f"{precision}_{self.setting[group]}" in self.planned else NOT_IN_DESIGN


def _bar_figure(df, value, ylabel, title, width, *, interval=None, annotate=None,
                scale=1.0, empty=None, extra=None, also=(), plan=None, slot="not measured"):
    df = df.copy()
    cols = [value] + ([f"{interval}_low", f"{interval}_high"] if interval else []) + list(also)
    for col in cols:
        df[col] = pd.to_numeric(df.get(col), errors="coerce") * scale
    if not df[[value, *also]].notna().any().any():
        return nothing_to_plot(groups_of(df), present_precisions(df), slot,
                               empty or "no measurement", title, width), None
    groups = groups_of(df)
    fig, ax = new_figure(len(groups) * len(present_precisions(df)), width)
    value_axis(ax, pd.concat([df[c] for c in cols]))
    drawn = grouped_bars(ax, df, value, groups=groups, interval=f"{interval}" if interval
                         else None, annotate=annotate, absent=plan)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend(fig, drawn["precisions"], extra, drawn["intervals"])
    return fig, ax


def fig_throughput(s, exp, width="auto", plan=None):
    """Steady-state throughput in the unit the workload counts (tokens/s for a token workload,
    whose samples/s is in its tables)."""
    col = TP.main_column(s)
    fig, _ = _bar_figure(s, col, f"{TP.unit(col)} (steady state)",
                         f"{exp}: training throughput", width, interval=col, plan=plan)
    return fig


MISS_MARK = dict(marker="D", markersize=3.2, mfc="white", mec="0.1", mew=0.8, ecolor="0.1",
                 elinewidth=0.8, capsize=1.6, capthick=0.8, ls="none")


def fig_warmup(s, exp, width="auto", plan=None):
    """Median warm-up with its range (``stats.warmup``): bars over the runs that did not
    miss the compile cache, a hollow diamond with its range for those that did."""
    s = s.copy()
    miss = V.WARMUP_MISS
    cold, warm = (pd.to_numeric(s[c], errors="coerce").fillna(0) > 0 if c in s
                  else pd.Series(False, index=s.index) for c in (f"{miss}_n", f"{V.WARMUP}_n"))
    s["why_missing"] = np.where(cold & ~warm, "every run missed", "")
    extra = [Line2D([], [], **{k: v for k, v in MISS_MARK.items()
                               if k not in ("ecolor", "elinewidth", "capsize", "capthick")},
                    label="cache miss")] if cold.any() else None
    fig, ax = _bar_figure(s, V.WARMUP, "time to first fast step (s)",
                          f"{exp}: warm-up (autotuning, compile)", width, interval=V.WARMUP,
                          empty="no warm-up time in these records", extra=extra,
                          also=(miss, f"{miss}_low", f"{miss}_high"), plan=plan)
    if ax is None or not cold.any():
        return fig
    groups, precisions = groups_of(s), present_precisions(s)
    n = len(precisions)
    for _, r in s[cold].iterrows():
        x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
        v, lo, hi = (float(r[c]) for c in (miss, f"{miss}_low", f"{miss}_high"))
        yerr = [[v - lo], [hi - v]] if np.isfinite(lo) and np.isfinite(hi) else None
        ax.errorbar(x, v, yerr=yerr, zorder=3, **MISS_MARK)
    return fig


def fig_memory(s, exp, width="auto", plan=None):
    unit, div = memory_unit(pd.to_numeric(s["max_memory_allocated_bytes"]).max())
    fig, _ = _bar_figure(s, "max_memory_allocated_bytes", f"peak allocated ({unit})",
                         f"{exp}: peak memory", width, scale=1 / div, annotate=num,
                         empty="not measured: torch.cuda memory statistics exist only on "
                               "CUDA devices", plan=plan)
    return fig


def fig_speedup(sp, exp, width="auto", plan=None):
    """Throughput over strict fp32 at the same setting; for an experiment without fp32 cells
    (a knobs study), over the plain fp32 baseline instead (``analysis.speedup.plain_baselines``),
    which the axis label names."""
    sp = sp.copy()
    if (sp["precision"].astype(str) == V.BASELINE).all():
        # fp32 against itself is 1.00 by definition: a bar of it would only look like a result
        return nothing_to_plot(groups_of(sp), present_precisions(sp), "the baseline",
                               "no speedup to draw: only strict fp32 ran in this experiment, "
                               "so there is no reduced precision to compare",
                               f"{exp}: speedup over fp32 (throughput)", width)
    same = sp["speedup"].notna() & (sp["precision"].astype(str) != V.BASELINE)
    if same.any() or not sp["gain"].notna().any():
        col, ylabel, what = "speedup", "× fp32, same setting", "speedup over fp32"
        sp["why_missing"] = np.where(sp["repeats_ok"].fillna(0) > 0, "no fp32", "")
    else:
        col, what = "gain", "gain over plain fp32"
        base = sp.dropna(subset=["plain_experiment"]).iloc[0]
        ylabel = f"× plain fp32 ({base['plain_experiment']}, bs {int(base['plain_batch_size'])})"
    sp = sp.rename(columns={col: "ratio", f"{col}_low": "ratio_low", f"{col}_high": "ratio_high",
                            f"{col}_n": "ratio_n", f"{col}_interval": "ratio_interval"})
    fig, ax = _bar_figure(sp, "ratio", ylabel, f"{exp}: {what} (throughput)", width,
                          interval="ratio", annotate=lambda v: f"{num(v)}",
                          empty="no speedup to draw: no fp32 run finished at any setting of "
                                "this experiment, so no cell has a baseline", plan=plan,
                          slot="no fp32")
    if ax is not None:
        ax.axhline(1.0, color="0.3", lw=0.8, ls="--", zorder=0.5)
    return fig


# the shares' source: one repeat per cell, so they carry no interval
ONE_REPEAT = "shares from one profiled repeat per cell"


def fig_tensor_cores(s, exp, width="auto", plan=None):
    """Two quantities, two panels: the share of GPU kernel time in Tensor Core kernels (bars;
    a black tick marks the share of all matrix kernels, on any unit), and the share of wall
    time the GPU had a kernel running (a low share means the host sets the pace). Both come
    from the one profiled repeat of each cell, so they carry no interval; the x axis says so."""
    s = s.copy()
    for c in ("tensor_core_share", "matmul_share", "gpu_busy_share"):
        s[c] = pd.to_numeric(s.get(c), errors="coerce") * 100
    title = f"{exp}: Tensor Cores and GPU busy"
    groups, precisions = groups_of(s), present_precisions(s)
    if not s["tensor_core_share"].notna().any():
        gpu = pd.to_numeric(s.get("compute_capability"), errors="coerce").notna().any()
        return nothing_to_plot(groups, precisions, "not profiled",
                               f"not measured: {D.why_unprofiled(gpu)}", title, width)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(figure_width(len(groups) * len(precisions), width), HEIGHT_IN + 1.0),
        layout="constrained", sharex=True)
    s["why_missing"] = np.where(s["repeats_ok"].fillna(0) > 0, "not profiled", "")
    grouped_bars(top, s, "tensor_core_share", groups=groups, precisions=precisions,
                 absent=plan)
    n = len(precisions)
    for _, r in s.iterrows():
        if pd.notna(r["matmul_share"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            top.hlines(r["matmul_share"], x - slot_width(n) * 0.46, x + slot_width(n) * 0.46,
                       colors="0.1", lw=1.0)
    top.set_ylim(0, 105)
    top.set_ylabel("Tensor Core\n% of kernel time")
    top.set_title(title)
    grouped_bars(bottom, s, "gpu_busy_share", groups=groups, precisions=precisions,
                 absent=plan)
    bottom.set_ylim(0, 105)
    bottom.set_ylabel("GPU busy\n% of timed steps")
    # above the bars and the grid (a grid line sits at 50 too and hid it)
    bottom.axhline(50, color="0.15", lw=0.9, ls="--", zorder=3)
    for ax in (top, bottom):
        ax.yaxis.set_major_formatter(Ticks())
        ax.set_yticks([0, 25, 50, 75, 100])
    bottom.set_xlabel(ONE_REPEAT, fontsize=6)
    legend(fig, precisions, [Line2D([], [], color="0.1", lw=1.0,
                                    label="all matrix kernels (any unit)"),
                             Line2D([], [], color="0.15", lw=0.9, ls="--",
                                    label="50% busy")])
    return fig


def per_sample(m: pd.DataFrame) -> pd.DataFrame:
    """Each finished run's steady time per sample (µs): computing, and waiting for data.
    Per sample, not per step, so that settings with other batch sizes compare."""
    ok = m[m["status"] == V.OK].copy()
    samples = ((pd.to_numeric(ok["steps"]) - pd.to_numeric(ok["warmup_steps"])).clip(lower=1)
               * pd.to_numeric(ok["batch_size"]))
    ok["wait_us"] = pd.to_numeric(ok["data_wait_s"]) / samples * 1e6
    ok["compute_us"] = pd.to_numeric(ok["compute_s"]) / samples * 1e6
    ok["total_us"] = ok["wait_us"] + ok["compute_us"]
    return ok


def _attribution_cells(m: pd.DataFrame) -> pd.DataFrame:
    ok = per_sample(m)
    rows = []
    for (g, p), c in ok.groupby(["group", "precision"], observed=True, sort=False):
        rows.append({"group": g, "precision": p, "wait_us": stats.mean(c["wait_us"]),
                     "compute_us": stats.mean(c["compute_us"])}
                    | stats.estimate(c["total_us"]).as_dict("total_us"))
    means = pd.DataFrame(rows, columns=["group", "precision", "wait_us", "compute_us",
                                        "total_us", "total_us_low", "total_us_high",
                                        "total_us_n"])
    cells = (m.groupby(["group", "precision"], observed=True, sort=False)
             .agg(status=("status", lambda st: V.OK if (st == V.OK).any() else st.iloc[0]),
                  repeats_ok=("status", lambda st: int((st == V.OK).sum())))
             .reset_index())
    cells["precision"] = cells["precision"].astype(str)
    means["precision"] = means["precision"].astype(str)
    return cells.merge(means, on=["group", "precision"], how="left")


def fig_attribution(m, exp, width="auto", plan=None):
    """Per sample: compute (precision colour) with the wait for data stacked on top (grey,
    hatched); means over the finished repeats, the interval of their sum on top. The seed's
    missing explanation of its MNIST numbers: a step that waits for data cannot get faster
    with faster arithmetic."""
    m = experiment_rows(m)
    cells = _attribution_cells(m)
    title = f"{exp}: time per sample"
    groups, precisions = groups_of(m), present_precisions(m)
    if not cells["compute_us"].notna().any():
        return nothing_to_plot(groups, precisions, "no finished run",
                               "No run of this experiment finished, so there is no step "
                               "time to divide.", title, width)
    fig, ax = new_figure(len(groups) * len(precisions), width)
    grouped_bars(ax, cells, "compute_us", groups=groups, precisions=precisions, absent=plan)
    n = len(precisions)
    drawn = {"intervals": set()}
    for _, r in cells.iterrows():
        if pd.notna(r["wait_us"]) and pd.notna(r["compute_us"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            ax.bar(x, r["wait_us"], bottom=r["compute_us"], width=slot_width(n) * 0.92,
                   color="0.8", hatch="....", edgecolor="0.45", linewidth=0)
            interval_at(ax, x, r, "total_us", drawn)
    ax.yaxis.set_major_formatter(Ticks())
    ax.set_ylabel("steady time per sample (µs)")
    ax.set_title(title)
    legend(fig, precisions, [Patch(facecolor="0.8", hatch="....", edgecolor="0.45",
                                   label="waiting for data")], drawn["intervals"])
    return fig


# the figures of one experiment, by kind: which of its tables each is drawn from
KINDS = {"throughput": ("summary", fig_throughput), "speedup": ("speedup", fig_speedup),
         "warmup": ("summary", fig_warmup), "memory": ("summary", fig_memory),
         "attribution": ("metrics", fig_attribution),
         "tensor_cores": ("summary", fig_tensor_cores)}


def frames(metrics: pd.DataFrame, summary: pd.DataFrame, speedup: pd.DataFrame,
           exp: str) -> dict[str, pd.DataFrame]:
    """One experiment's rows of each table, as the figure functions take them."""
    m = metrics[metrics["experiment"] == exp]
    s, sp = summary[summary["experiment"] == exp], speedup[speedup["experiment"] == exp]
    if s.empty or m.empty:
        raise ValueError(f"experiment {exp!r} has no rows in summary.csv")
    return {"metrics": m, "summary": experiment_rows(s), "speedup": experiment_rows(sp)}


def build(metrics, summary, speedup, exp: str, width: str = "auto", kinds=None,
          planned=None) -> dict:
    """The figures of one experiment, by kind (not yet saved); ``planned``: the cells its
    study planned (``Plan``), where known."""
    f = frames(metrics, summary, speedup, exp)
    plan = Plan(f["metrics"], planned)
    return {kind: KINDS[kind][1](f[KINDS[kind][0]], exp, width, plan)
            for kind in kinds or KINDS}


def outputs_by_kind(exp: str, outputs) -> dict[str, list[Path]]:
    """The files to write, by figure kind, from their names (``vocabulary.figure_name``)."""
    names = {V.figure_name(exp, k, ext): k for k in KINDS for ext in V.FIGURE_FORMATS}
    out: dict[str, list[Path]] = {}
    for path in map(Path, outputs):
        if path.name not in names:
            raise ValueError(f"{path}: not a figure of {exp!r}; a figure is named "
                             f"{V.figure_name(exp, '<kind>', '<format>')}, kinds "
                             f"{', '.join(KINDS)}, formats {', '.join(V.FIGURE_FORMATS)}")
        out.setdefault(names[path.name], []).append(path)
    return out


def read_set(tables: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """metrics, summary and speedup of a result set's folder (``vocabulary.SET_TABLES``)."""
    return tuple(RS.read_raw(Path(tables) / V.SET_TABLES[k])
                 for k in ("metrics", "summary", "speedup"))


def render(tables: Path, out_dir: Path, experiments: list[str] | None = None,
           width: str = "auto", formats=V.FIGURE_FORMATS) -> list[Path]:
    """Every figure of each experiment of a result set's folder into ``out_dir``, named by
    ``vocabulary.figure_name``."""
    style()
    frames_ = read_set(tables)
    written = []
    for exp in experiments or list(dict.fromkeys(frames_[1]["experiment"])):
        for kind, fig in build(*frames_, exp, width).items():
            written += save_as(fig, [Path(out_dir) / V.figure_name(exp, kind, ext)
                                     for ext in formats])
    return written


def write(metrics: Path, summary: Path, speedup: Path, exp: str, outputs,
          width: str = "auto", planned=None) -> list[Path]:
    wanted = outputs_by_kind(exp, outputs)
    style()
    figs = build(RS.read_raw(metrics), RS.read_raw(summary), RS.read_raw(speedup), exp, width,
                 [k for k in KINDS if k in wanted], planned)
    return [p for kind, fig in figs.items() for p in save_as(fig, wanted[kind])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.figures", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("metrics", "summary", "speedup"):
        ap.add_argument(f"--{name}", type=Path, required=True, help=f"{name}.csv")
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--outputs", type=Path, nargs="+", required=True,
                    help="the figure files to write")
    ap.add_argument("--width", choices=WIDTHS, default="auto",
                    help="one column (3.5 in), two columns (7 in), or by number of bars")
    ap.add_argument("--planned", nargs="*", metavar="CELL",
                    help="the cells the study planned for this experiment (cell names without "
                         "the repeat): a slot with no record then says whether it was planned")
    args = ap.parse_args(argv)

    def written():
        write(args.metrics, args.summary, args.speedup, args.experiment, args.outputs,
              args.width, args.planned)

    return cli.main("tcbench.reports.figures", written, (ValueError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
