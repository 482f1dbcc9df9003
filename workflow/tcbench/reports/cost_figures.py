"""What a mode costs besides its speed, per cell of one experiment: the warm-up before its
steady state (autotuning, compile; ``fig_warmup``) and its peak memory (``fig_memory``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from .. import vocabulary as V
from ..render.axes import value_axis
from ..render.bars import grouped_bars, present_precisions, slot_width, slot_x
from ..render.legend import legend
from ..render.numbers import memory_unit, num
from ..render.plot import NotDrawn, new_figure, set_title
from .figure_cells import bar_figure, groups_of

MISS_MARK = dict(marker="D", markersize=3.2, mfc="white", mec="0.1", mew=0.8, ecolor="0.1",
                 elinewidth=0.8, capsize=1.6, capthick=0.8, ls="none")


def fig_warmup(s, exp, width="auto", plan=None, runs=None):
    """Median warm-up with its range (``stats.warmup``), as points: the runs that did not miss
    the compile cache in the precision's colour, those that did as a hollow diamond with its
    range beside it. A median is not a quantity summed from zero, so no bar."""
    s = s.copy()
    miss = V.WARMUP_MISS
    cold, warm = (pd.to_numeric(s[c], errors="coerce").fillna(0) > 0 if c in s
                  else pd.Series(False, index=s.index) for c in (f"{miss}_n", f"{V.WARMUP}_n"))
    s["why_missing"] = np.where(cold & ~warm, "every run missed", "")
    title = f"{exp}: warm-up (autotuning, compile)"
    cols = [V.WARMUP, f"{V.WARMUP}_low", f"{V.WARMUP}_high", miss, f"{miss}_low",
            f"{miss}_high"]
    for col in cols:
        s[col] = pd.to_numeric(s.get(col), errors="coerce")
    if not s[[V.WARMUP, miss]].notna().any().any():
        return NotDrawn(title, "no warm-up time in these records")
    groups, precisions = groups_of(s), present_precisions(s)
    n = len(precisions)
    fig, ax = new_figure(len(groups) * n, width)
    log = value_axis(ax, pd.concat([s[c] for c in cols]), label="warm-up time (s)")
    drawn = grouped_bars(ax, s, V.WARMUP, groups=groups, interval=V.WARMUP, absent=plan,
                         point=True)
    for i, r in s[cold].iterrows():
        x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
        if warm[i]:   # beside the cell's own point, not on it
            x += slot_width(n) * 0.28
        v, lo, hi = (float(r[c]) for c in (miss, f"{miss}_low", f"{miss}_high"))
        yerr = [[v - lo], [hi - v]] if np.isfinite(lo) and np.isfinite(hi) else None
        ax.errorbar(x, v, yerr=yerr, zorder=3, **MISS_MARK | {"mec": V.PALETTE[
            str(r["precision"])]})
    if not log:   # from zero, with room above the highest point or whisker
        ax.set_ylim(0, float(np.nanmax(s[cols].to_numpy(dtype=float))) * 1.15)
    set_title(ax, title)
    extra = [Line2D([], [], **{k: v for k, v in MISS_MARK.items()
                               if k not in ("ecolor", "elinewidth", "capsize", "capthick")},
                    label="cache miss")] if cold.any() else None
    legend(fig, precisions, extra, drawn["intervals"])
    return fig


def fig_memory(s, exp, width="auto", plan=None, runs=None):
    unit, div = memory_unit(pd.to_numeric(s["max_memory_allocated_bytes"]).max())
    fig, _ = bar_figure(s, "max_memory_allocated_bytes", f"peak allocated ({unit})",
                        f"{exp}: peak memory", width, scale=1 / div, annotate=num,
                        empty="torch.cuda memory statistics exist only on CUDA devices",
                        plan=plan, runs=runs)
    return fig
