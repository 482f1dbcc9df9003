"""A figure's legend, under its panels in as many columns as fit its width: the precisions'
colours, the kinds of interval its bars carry (``bars``), the run dots, and whatever else the
figure drew."""

from __future__ import annotations

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import stats
from .bars import PALETTE, RUN_HANDLE, SINGLE

INTERVAL_HANDLES = {
    stats.CI: Line2D([], [], color="0.1", marker="_", markersize=4, lw=0.8,
                     label=f"95% CI ({stats.ENOUGH})"),
    stats.RANGE: Line2D([], [], color="0.55", lw=0.8, label=f"range ({stats.RANGE_N})"),
    stats.SPREAD: Line2D([], [], color="0.35", marker="_", markersize=4, lw=0.8,
                         label="median, range"),
    stats.SINGLE: Line2D([], [], ls="none", marker=f"${SINGLE}$", color="0.2", markersize=4,
                         label="single run"),
}


def legend(fig, precisions: list[str], extra: list | None = None, intervals=(),
           runs: bool = False):
    handles = [Patch(facecolor=PALETTE[p], label=p) for p in precisions]
    handles += [INTERVAL_HANDLES[k] for k in (stats.CI, stats.RANGE, stats.SPREAD, stats.SINGLE)
                if k in intervals]
    handles += [RUN_HANDLE] if runs else []
    handles += list(extra or [])
    fitted_legend(fig, handles, borderaxespad=0.2)


def fitted_legend(fig, handles, **kw):
    """A legend under the panels in as many columns as fit the figure's width (measured:
    matplotlib sizes each column by its widest entry)."""
    renderer = fig.canvas.get_renderer()
    for k in range(len(handles), 0, -1):
        leg = fig.legend(handles=handles, loc="outside lower center", ncols=k,
                         handlelength=1.2, columnspacing=0.9, **kw)
        if k == 1 or leg.get_window_extent(renderer).width <= fig.bbox.width - 4:
            return leg
        leg.remove()
