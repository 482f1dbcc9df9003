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

from .. import resultset as RS
from .. import vocabulary as V
from ..analysis import diagnosis as D
from ..analysis import throughput as TP
from ..render.numbers import memory_unit, num
from ..render.plot import (HEIGHT_IN, WIDTHS, Line2D, Patch, Ticks, figure_width,
                           grouped_bars, legend, new_figure, note_figure, plt,
                           present_precisions, save_as, setting_label, slot_width, slot_x,
                           style, value_axis)

def experiment_rows(df: pd.DataFrame) -> pd.DataFrame:
    df = RS.order(df)
    df = df.sort_values(["batch_size", *V.AXIS_NAMES, "precision"])
    df["group"] = setting_label(df)
    return df


def groups_of(df):
    return list(dict.fromkeys(df["group"]))


def _bar_figure(df, value, ylabel, title, width, *, interval=None, annotate=None,
                scale=1.0, empty=None, extra=None, log=None):
    df = df.copy()
    cols = [value] + ([f"{interval}_low", f"{interval}_high"] if interval else [])
    for col in cols:
        df[col] = pd.to_numeric(df[col], errors="coerce") * scale
    if not df[value].notna().any():
        return note_figure(empty or "no measurement", title, width), None
    groups = groups_of(df)
    fig, ax = new_figure(len(groups) * len(present_precisions(df)), width)
    if log is None:
        value_axis(ax, pd.concat([df[c] for c in cols]))
    drawn = grouped_bars(ax, df, value, groups=groups, interval=f"{interval}" if interval
                         else None, annotate=annotate)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend(fig, drawn["precisions"], extra, drawn["intervals"])
    return fig, ax


def fig_throughput(s, exp, width="auto"):
    """Steady-state throughput in the unit the workload counts (tokens/s for a token workload,
    whose samples/s is in its tables)."""
    col = TP.main_column(s)
    fig, _ = _bar_figure(s, col, f"{TP.unit(col)} (steady state)",
                         f"{exp}: training throughput", width, interval=col)
    return fig


def fig_warmup(s, exp, width="auto"):
    fig, _ = _bar_figure(s, "time_to_steady_s", "time to first fast step (s)",
                         f"{exp}: warm-up (autotuning, compile)", width,
                         interval="time_to_steady_s",
                         empty="no warm-up time in these records")
    return fig


def fig_memory(s, exp, width="auto"):
    unit, div = memory_unit(pd.to_numeric(s["max_memory_allocated_bytes"]).max())
    fig, _ = _bar_figure(s, "max_memory_allocated_bytes", f"peak allocated ({unit})",
                         f"{exp}: peak memory", width, scale=1 / div, annotate=num,
                         empty="not measured: torch.cuda memory statistics exist only on "
                               "CUDA devices")
    return fig


def fig_speedup(sp, exp, width="auto"):
    """Throughput over strict fp32 at the same setting; for an experiment without fp32 cells
    (a knobs study), over the plain fp32 baseline instead (``analysis.speedup.plain_baselines``),
    which the axis label names."""
    sp = sp.copy()
    same = sp["speedup"].notna() & (sp["precision"].astype(str) != V.BASELINE)
    if same.any() or not sp["gain"].notna().any():
        col, ylabel, what = "speedup", "× fp32, same setting", "speedup over fp32"
        sp["why_missing"] = np.where(sp["repeats_ok"].fillna(0) > 0, "no fp32", "")
    else:
        col, what = "gain", "gain over plain fp32"
        base = sp.dropna(subset=["plain_experiment"]).iloc[0]
        ylabel = f"× plain fp32 ({base['plain_experiment']}, bs {int(base['plain_batch_size'])})"
    sp = sp.rename(columns={col: "ratio", f"{col}_low": "ratio_low", f"{col}_high": "ratio_high",
                            f"{col}_n": "ratio_n"})
    fig, ax = _bar_figure(sp, "ratio", ylabel, f"{exp}: {what} (throughput)", width,
                          interval="ratio", annotate=lambda v: f"{num(v)}",
                          empty="no fp32 run to compare with")
    if ax is not None:
        ax.axhline(1.0, color="0.3", lw=0.8, ls="--", zorder=0.5)
    return fig


def fig_tensor_cores(s, exp, width="auto"):
    """Two quantities, two panels: the share of GPU kernel time in Tensor Core kernels (bars;
    a black tick marks the share of all matrix kernels, on any unit), and the share of wall
    time the GPU had a kernel running (a low share means the host sets the pace)."""
    s = s.copy()
    for c in ("tensor_core_share", "matmul_share", "gpu_busy_share"):
        s[c] = pd.to_numeric(s.get(c), errors="coerce") * 100
    title = f"{exp}: Tensor Cores and GPU busy"
    if not s["tensor_core_share"].notna().any():
        gpu = pd.to_numeric(s.get("compute_capability"), errors="coerce").notna().any()
        return note_figure(f"not measured: {D.why_unprofiled(gpu)}", title, width)
    groups, precisions = groups_of(s), present_precisions(s)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(figure_width(len(groups) * len(precisions), width), HEIGHT_IN + 1.0),
        layout="constrained", sharex=True)
    grouped_bars(top, s, "tensor_core_share", groups=groups, precisions=precisions)
    n = len(precisions)
    for _, r in s.iterrows():
        if pd.notna(r["matmul_share"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            top.hlines(r["matmul_share"], x - slot_width(n) * 0.46, x + slot_width(n) * 0.46,
                       colors="0.1", lw=1.0)
    top.set_ylim(0, 105)
    top.set_ylabel("Tensor Core\n% of kernel time")
    top.set_title(title)
    grouped_bars(bottom, s, "gpu_busy_share", groups=groups, precisions=precisions)
    bottom.set_ylim(0, 105)
    bottom.set_ylabel("GPU busy\n% of wall time")
    bottom.axhline(50, color="0.3", lw=0.7, ls=":", zorder=0.5)
    for ax in (top, bottom):
        ax.yaxis.set_major_formatter(Ticks())
        ax.set_yticks([0, 25, 50, 75, 100])
    legend(fig, precisions, [Line2D([], [], color="0.1", lw=1.0,
                                    label="all matrix kernels (any unit)")])
    return fig


def fig_attribution(m, exp, width="auto"):
    """Per step: compute (precision colour) with the wait for data stacked on top (grey,
    hatched); means over the finished repeats. The seed's missing explanation of its MNIST
    numbers: a step that waits for data cannot get faster with faster arithmetic."""
    m = RS.order(m)
    m = m.sort_values(["batch_size", *V.AXIS_NAMES, "precision"])
    m["group"] = setting_label(m)
    ok = m[m["status"] == V.OK].copy()
    steady = (pd.to_numeric(ok["steps"]) - pd.to_numeric(ok["warmup_steps"])).clip(lower=1)
    ok["wait_ms"] = pd.to_numeric(ok["data_wait_s"]) / steady * 1e3
    ok["compute_ms"] = pd.to_numeric(ok["compute_s"]) / steady * 1e3
    means = ok.groupby(["group", "precision"], observed=True, sort=False)[
        ["wait_ms", "compute_ms"]].mean().reset_index()
    cells = (m.groupby(["group", "precision"], observed=True, sort=False)
             .agg(status=("status", lambda st: V.OK if (st == V.OK).any() else st.iloc[0]),
                  repeats_ok=("status", lambda st: int((st == V.OK).sum())))
             .reset_index().merge(means, on=["group", "precision"], how="left"))
    title = f"{exp}: compute and data wait per step"
    if not cells["compute_ms"].notna().any():
        return note_figure("no finished run", title, width)
    groups, precisions = list(dict.fromkeys(m["group"])), present_precisions(m)
    fig, ax = new_figure(len(groups) * len(precisions), width)
    grouped_bars(ax, cells, "compute_ms", groups=groups, precisions=precisions)
    n = len(precisions)
    for _, r in cells.iterrows():
        if pd.notna(r["wait_ms"]) and pd.notna(r["compute_ms"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            ax.bar(x, r["wait_ms"], bottom=r["compute_ms"], width=slot_width(n) * 0.92,
                   color="0.8", hatch="....", edgecolor="0.45", linewidth=0)
    ax.yaxis.set_major_formatter(Ticks())
    ax.set_ylabel("time per step (ms)")
    ax.set_title(title)
    legend(fig, precisions, [Patch(facecolor="0.8", hatch="....", edgecolor="0.45",
                                   label="waiting for data")])
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


def build(metrics, summary, speedup, exp: str, width: str = "auto", kinds=None) -> dict:
    """The figures of one experiment, by kind (not yet saved)."""
    f = frames(metrics, summary, speedup, exp)
    return {kind: KINDS[kind][1](f[KINDS[kind][0]], exp, width) for kind in kinds or KINDS}


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
          width: str = "auto") -> list[Path]:
    wanted = outputs_by_kind(exp, outputs)
    style()
    figs = build(RS.read_raw(metrics), RS.read_raw(summary), RS.read_raw(speedup), exp, width,
                 [k for k in KINDS if k in wanted])
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
    args = ap.parse_args(argv)
    try:
        write(args.metrics, args.summary, args.speedup, args.experiment, args.outputs,
              args.width)
    except (ValueError, FileNotFoundError) as exc:
        print(f"tcbench.reports.figures: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
