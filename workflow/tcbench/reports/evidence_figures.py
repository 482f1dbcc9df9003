"""The evidence figures of one experiment: whether its matrix work ran on Tensor Cores and how
busy its GPU was (``fig_tensor_cores``), and where each cell's step time goes
(``fig_attribution``: the GPU running kernels, the GPU idle while the host issues work,
waiting for data). Both from the one profiled repeat of each cell where they need a profile."""

from __future__ import annotations

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import stats
from .. import vocabulary as V
from ..analysis import diagnosis
from ..render.axes import Ticks, group_ticks
from ..render.bars import (NO_RECORD, VALUE_BOX, grouped_bars, label_slot, legible,
                           missing_text, present_precisions, slot_width, slot_x)
from ..render.legend import legend
from ..render.plot import HEIGHT_IN, NotDrawn, figure_width, new_figure, plt, set_title
from .figure_cells import experiment_rows, groups_of

# the shares' source: one repeat per cell, so they carry no interval
ONE_REPEAT = "shares from one profiled repeat per cell (no interval)"


def _tint(colour: str, alpha: float = 0.22):
    return mcolors.to_rgba(colour, alpha)


def _share_labels(ax, x: float, top: float, text: str, at_base: bool = False) -> None:
    """A share printed above its bar, or (``at_base``, where the bar is tall enough) inside
    it at its foot, clear of a reference line near the bars' tops."""
    if at_base and top >= 14:
        ax.annotate(text, (x, 0), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=5.5, color="white")
    else:
        ax.annotate(text, (x, top), xytext=(0, 1.5), textcoords="offset points",
                    ha="center", va="bottom", fontsize=5.5, color="0.15", bbox=VALUE_BOX,
                    zorder=5)


def _tensor_core_bars(ax, s, groups, precisions, plan) -> None:
    """Each cell's matrix kernels as an outlined bar, the part on Tensor Cores filled and its
    share printed above."""
    grouped_bars(ax, s, "tensor_core_share", groups=groups, precisions=precisions,
                 absent=plan)
    n = len(precisions)
    w = slot_width(n) * 0.92
    for _, r in s.iterrows():
        if pd.isna(r["tensor_core_share"]):
            continue
        p = str(r["precision"])
        x = slot_x(groups.index(r["group"]), precisions.index(p), n)
        tc = float(r["tensor_core_share"])
        mm = float(r["matmul_share"]) if pd.notna(r["matmul_share"]) else tc
        ax.bar(x, max(mm - tc, 0), bottom=tc, width=w, color=_tint(V.PALETTE[p]), linewidth=0)
        # dashed: an older record's matrix share, an upper bound (``diagnosis.BOUND_NOTE``)
        ax.bar(x, max(mm, tc), width=w, fill=False, edgecolor=legible(V.PALETTE[p]),
               linewidth=0.9,
               linestyle="--" if diagnosis.matmul_bounded(r) else "-")
        _share_labels(ax, x, max(mm, tc), f"{tc:.0f}")


def _busy_bars(ax, s, groups, precisions, plan) -> None:
    """Each cell's GPU busy share as a bar, printed at its foot."""
    grouped_bars(ax, s, "gpu_busy_share", groups=groups, precisions=precisions,
                 absent=plan)
    n = len(precisions)
    for _, r in s.iterrows():
        if pd.notna(r["gpu_busy_share"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            _share_labels(ax, x, float(r["gpu_busy_share"]),
                          f"{float(r['gpu_busy_share']):.0f}", at_base=True)


def fig_tensor_cores(s, exp, width="auto", plan=None, runs=None):
    """Two quantities, two panels, every mode drawn the same way. Top: each cell's matrix
    kernels (GEMMs, convolutions, on any unit) as an outlined bar, the part of them that ran
    on Tensor Cores filled, its share printed above (fp32's empty outline is its answer:
    matrix work, none of it on Tensor Cores). Bottom: the share of the timed steps' wall time
    the GPU had a kernel running, with the line below which a cell counts as host-bound
    (``vocabulary.HOST_BOUND_BUSY_SHARE``). Both come from the one profiled repeat of each
    cell, so they carry no interval; the x axis says so."""
    s = s.copy()
    for c in ("tensor_core_share", "matmul_share", "gpu_busy_share"):
        s[c] = pd.to_numeric(s.get(c), errors="coerce") * 100
    title = f"{exp}: Tensor Cores and GPU busy"
    groups, precisions = groups_of(s), present_precisions(s)
    if not s["tensor_core_share"].notna().any():
        gpu = pd.to_numeric(s.get("compute_capability"), errors="coerce").notna().any()
        return NotDrawn(title, f"no kernel profile: {diagnosis.why_unprofiled(gpu)}")
    bounded = s.apply(diagnosis.matmul_bounded, axis=1).any()
    # the bounded shares' legend entry takes a row of its own: the axes keep their height
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(figure_width(len(groups) * len(precisions), width),
                       HEIGHT_IN + 1.0 + (0.3 if bounded else 0.0)),
        layout="constrained", sharex=True)
    s["why_missing"] = np.where(s["repeats_ok"].fillna(0) > 0, "not profiled", "")
    _tensor_core_bars(top, s, groups, precisions, plan)
    _busy_bars(bottom, s, groups, precisions, plan)
    high = max(105.0, float(s["gpu_busy_share"].max(skipna=True) or 0) + 5)
    for ax, label in ((top, "% of GPU\nkernel time"),
                      (bottom, "GPU busy,\n% of timed steps")):
        ax.set_ylim(0, max(high, 112) if ax is bottom else 112)
        ax.set_yticks([0, 25, 50, 75, 100])
        ax.yaxis.set_major_formatter(Ticks())
        ax.set_ylabel(label)
    top.set_title(title)
    # above the bars and the grid, and off the grid's lines (at 75 and 100)
    threshold = V.HOST_BOUND_BUSY_SHARE * 100
    bottom.axhline(threshold, color="#7a1f1f", lw=0.9, ls="--", zorder=3)
    bottom.set_xlabel(ONE_REPEAT, fontsize=6)
    grey = "0.45"
    legend(fig, precisions, [
        Patch(facecolor=grey, label="on Tensor Cores"),
        Patch(facecolor=_tint(grey), edgecolor=grey, linewidth=0.9,
              label="matrix kernels, any unit"),
        *([Patch(facecolor=_tint(grey), edgecolor=grey, linewidth=0.9, linestyle="--",
                 label="matrix kernels, at most (an older record's count)")]
          if bounded else []),
        Line2D([], [], color="#7a1f1f", lw=0.9, ls="--",
               label=f"host-bound below {V.HOST_BOUND_BUSY_SHARE:.0%}")])
    return fig


# ------------------------------------------------------------------------------ attribution
# the parts of a step's time (``step_parts``), in the order they stack, with how each looks
PARTS = ("gpu", "host", "wait", "compute")
PART_TEXT = {"gpu": "GPU running kernels", "host": "GPU idle, host issuing work",
             "wait": "waiting for data", "compute": "computing (GPU busy not profiled)"}
VISIBLE = 0.01       # a part smaller than this share of every step would not show on its bar


def _part_style(part: str, colour: str) -> dict:
    if part == "gpu":
        return dict(color=colour, linewidth=0)
    if part == "host":
        return dict(facecolor=_tint(colour, 0.25), edgecolor=colour, hatch="////",
                    linewidth=0)
    if part == "wait":
        return dict(facecolor="0.82", edgecolor="0.4", hatch="....", linewidth=0)
    return dict(color=_tint(colour, 0.6), linewidth=0)


def per_run_wait(m: pd.DataFrame) -> pd.DataFrame:
    """Each finished run's share of its steady step time spent waiting for data."""
    ok = m[m["status"].astype(str) == V.OK].copy()
    wait, compute = (pd.to_numeric(ok[c], errors="coerce") for c in ("data_wait_s", "compute_s"))
    ok["wait_share"] = wait / (wait + compute)
    return ok


def step_parts(m: pd.DataFrame) -> pd.DataFrame:
    """Per cell, the shares of the steady step time that went to each part: waiting for data
    (the mean over the finished runs), the GPU running kernels (the profiled repeat's busy
    share, ``gpu_busy_share``, capped at what the wait leaves) and the rest, the GPU idle
    while the host issues work. Where the cell was not profiled the time besides the wait
    is one part, computing. A CUDA event timeline puts the wait and the kernels apart (the
    wait is the stream's gap until the batch is on the device), so the parts add up."""
    ok = per_run_wait(m)
    rows = []
    for (g, p), c in m.groupby(["group", "precision"], observed=True, sort=False):
        finished = ok[(ok["group"] == g) & (ok["precision"].astype(str) == str(p))]
        wait = stats.mean(finished["wait_share"])
        busy = stats.median(pd.to_numeric(c.get("gpu_busy_share"), errors="coerce"))
        row = {"group": g, "precision": str(p), "repeats_ok": len(finished),
               "status": V.OK if len(finished) else str(c["status"].iloc[0]),
               "wait": wait, "gpu": np.nan, "host": np.nan, "compute": np.nan}
        if wait is not None:
            if busy is None:
                row["compute"] = 1 - wait
            else:
                row["gpu"] = min(max(busy, 0.0), 1 - wait)
                row["host"] = 1 - wait - row["gpu"]
        rows.append(row)
    return pd.DataFrame(rows, columns=["group", "precision", "repeats_ok", "status", *PARTS])


def fig_attribution(m, exp, width="auto", plan=None, runs=None):
    """Where each cell's steady step time goes (``step_parts``), as shares of the step
    stacked to 100%: a step that waits for data, or whose GPU waits for the host to issue
    kernels, cannot get faster with faster arithmetic. The legend names only the parts that
    show; a part too small to show anywhere is said so under the axis."""
    m = experiment_rows(m)
    cells = step_parts(m)
    title = f"{exp}: where the step time goes"
    groups, precisions = groups_of(m), present_precisions(m)
    if not cells["wait"].notna().any():
        return NotDrawn(title, "no run of this experiment finished, so there is no step "
                               "time to divide")
    n = len(precisions)
    fig, ax = new_figure(len(groups) * n, width)
    rows = {(str(r["group"]), r["precision"]): r for _, r in cells.iterrows()}
    w = slot_width(n) * 0.92
    for i, g in enumerate(groups):
        for j, p in enumerate(precisions):
            x, r = slot_x(i, j, n), rows.get((g, p))
            if r is None or pd.isna(r["wait"]):
                label_slot(ax, x, missing_text(r, plan(g, p) if plan and r is None
                                               else NO_RECORD), V.PALETTE[p])
                continue
            bottom = 0.0
            for part in PARTS:
                if pd.notna(r[part]) and r[part] > 0:
                    ax.bar(x, r[part] * 100, bottom=bottom * 100, width=w,
                           **_part_style(part, V.PALETTE[p]))
                    bottom += r[part]
    group_ticks(ax, groups, narrow=fig.get_size_inches()[0] / max(len(groups), 1) < 1.0)
    ax.set_ylim(0, 100)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.yaxis.set_major_formatter(Ticks())
    ax.set_ylabel("% of step time")
    set_title(ax, title)
    shown = [p for p in PARTS if cells[p].notna().any() and cells[p].max() >= VISIBLE]
    small = [p for p in PARTS if cells[p].notna().any() and cells[p].max() < VISIBLE]
    notes = [f"{PART_TEXT[p]}: under {VISIBLE:.0%} of every step" for p in small]
    if cells["gpu"].notna().any():
        notes.append("GPU busy from one profiled repeat per cell")
    ax.set_xlabel("\n".join(notes), fontsize=6)
    grey = "0.45"
    legend(fig, precisions, [Patch(label=PART_TEXT[p], **_part_style(p, grey)) for p in shown])
    return fig
