"""Cross-GPU comparison figures: speed, speedup over fp32 and peak memory per precision per
set for one experiment (``KINDS``, as ``vocabulary.COMPARE_FIGURES`` names them), and one
overview figure. Reference sets' bars are hatched. A speedup panel draws no fp32 bar (fp32
over itself is 1 by definition) and has lines at 1x and at ``stats.GAIN``; a figure whose
panel has nothing to show is not drawn (``render.plot.NotDrawn``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..analysis.crossgpu import metric_of, ratio_columns
from ..references import DAGGER
from ..render import plot
from ..render.numbers import memory_unit, num
from ..render.settings import setting_text, shown_axes

KINDS = V.COMPARE_FIGURES

def set_groups(c: pd.DataFrame) -> pd.DataFrame:
    c = c.copy()
    axes = shown_axes(c)
    c["group"] = c["label"] + "\n" + c.apply(lambda r: setting_text(r, axes, "\n"), axis=1)
    return c


def _has_values(c, kind: str) -> bool:
    """Whether a panel of ``kind`` has anything to draw for these rows."""
    metric = metric_of(c)
    if kind == "speedup":
        c = c[c["precision"].astype(str) != V.BASELINE]
    value = {"speed": metric, "speedup": ratio_columns(metric)}.get(
        kind, "max_memory_allocated_bytes")
    return value in c and pd.to_numeric(c[value], errors="coerce").notna().any()


def _panel(ax, c, kind: str):
    """One comparison panel; returns (hatched groups, intervals drawn, reference lines)."""
    c = c.copy()
    metric = metric_of(c)
    if kind == "speedup":   # fp32 over itself is 1 by definition: no bar of it
        c = c[c["precision"].astype(str) != V.BASELINE]
    groups = list(dict.fromkeys(c["group"]))
    hatched = set(c.loc[c["kind"] == "reference", "group"])
    if kind == "speed":
        value = interval = metric
        ylabel = f"{V.metric(metric).label} ({V.metric(metric).unit})"
    elif kind == "speedup":
        value = interval = ratio_columns(metric)
        ylabel = "× fp32" + ("" if metric == V.HEADLINE else " (the seed's total time)")
        c["why_missing"] = np.where((c["repeats_ok"] > 0) & c[value].isna(), "no fp32", "")
    else:
        unit, div = memory_unit(pd.to_numeric(c["max_memory_allocated_bytes"]).max())
        value, interval, ylabel = "max_memory_allocated_bytes", None, f"peak allocated ({unit})"
        c[value] = pd.to_numeric(c[value], errors="coerce") / div
    cols = [value] + ([f"{interval}_low", f"{interval}_high"] if interval else [])
    for col in cols:
        c[col] = pd.to_numeric(c.get(col), errors="coerce")
    if not c[value].notna().any():
        ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes,
                fontsize=7, color="0.25")
        ax.set_axis_off()
        return hatched, set(), []
    references = [1.0, stats.GAIN] if kind == "speedup" else []
    plot.value_axis(ax, pd.concat([*(c[col] for col in cols), pd.Series(references, dtype=float)]),
                    label=ylabel)
    drawn = plot.grouped_bars(ax, c, value, groups=groups, interval=interval, hatched=hatched,
                              annotate=num if kind != "speed" else None,
                              precisions=plot.present_precisions(c))
    lines = plot.ratio_lines(ax) if kind == "speedup" else []
    return hatched, drawn["intervals"], lines


def _legend(fig, c, hatched, intervals, lines=()):
    extra = [plot.Patch(facecolor="0.85", hatch=plot.REFERENCE_HATCH, edgecolor="white",
                        label=f"published ({DAGGER})")] if hatched else []
    plot.legend(fig, plot.present_precisions(c), [*extra, *lines], intervals)


def speedup_title(c: pd.DataFrame) -> str:
    """What a comparison's speedup is a ratio of: the seed's total time where a published
    set has only that, which is not tcbench's steady throughput (a reader must not take the
    one for the other)."""
    return ("speedup (total time)" if metric_of(c) == V.SEED_METRIC
            else "speedup (throughput)")


WHY_EMPTY = {"speed": "no set has a finished run of it",
             "speedup": "no set has a reduced-precision cell with fp32 beside it",
             "memory": "no set measured its memory (torch.cuda memory statistics exist only on "
                       "CUDA devices)"}


def fig_metric(c, experiment, kind, width="auto"):
    c = set_groups(c[c["experiment"] == experiment])
    sets = c["label"].nunique()
    across = "across GPUs" if sets > 1 else f"on {c['label'].iloc[0]}"
    what = {"speed": V.metric(metric_of(c)).label, "speedup": speedup_title(c),
            "memory": "peak memory"}[kind]
    title = f"{experiment}: {what}, {across}"
    if not _has_values(c, kind):
        return plot.NotDrawn(title, WHY_EMPTY[kind])
    shown = c[c["precision"].astype(str) != V.BASELINE] if kind == "speedup" else c
    slots = shown["group"].nunique() * len(plot.present_precisions(shown))
    fig, ax = plot.new_figure(slots, width, height=plot.HEIGHT_IN + 0.3)
    hatched, intervals, lines = _panel(ax, c, kind)
    ax.set_title("\n".join(plot.wrapped(title, fig.get_size_inches()[0] - 0.3, 8)))
    _legend(fig, shown, hatched, intervals, lines)
    return fig


def overview_experiments(c: pd.DataFrame) -> list[str]:
    """The experiments more than one set has (the comparison proper); all where none does."""
    n = c.groupby("experiment", sort=False)["label"].nunique()
    shared = [e for e in dict.fromkeys(c["experiment"]) if n[e] > 1]
    return shared or list(dict.fromkeys(c["experiment"]))


def fig_overview(c: pd.DataFrame, width: str = "two"):
    """Speedup over fp32 (left) and peak memory (right) per precision per set, one row per
    experiment: the cross-GPU answer on one page width."""
    exps = overview_experiments(c)
    w = plot.TWO_COLUMN_IN if width in ("auto", "two") else plot.ONE_COLUMN_IN
    fig, axes = plot.plt.subplots(len(exps), 2, figsize=(w, 0.6 + 2.0 * len(exps)),
                                  layout="constrained", squeeze=False)
    c = c[c["experiment"].isin(exps)]
    hatched, intervals, lines = set(), set(), []
    for i, exp in enumerate(exps):
        e = set_groups(c[c["experiment"] == exp])
        h, k, lines_ = _panel(axes[i, 0], e, "speedup")
        hatched |= h
        intervals |= k
        lines = lines or lines_
        axes[i, 0].set_title(f"{exp}: {speedup_title(e)}")
        h, _, _ = _panel(axes[i, 1], e, "memory")
        hatched |= h
        axes[i, 1].set_title(f"{exp}: peak memory")
    _legend(fig, c, hatched, intervals, lines)
    return fig
