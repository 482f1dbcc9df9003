"""What every figure of one experiment is drawn from: its rows in setting order with their
x-axis labels (``experiment_rows``), the cells its study planned (``Plan``, so that a slot with
no record says why), the set's finished runs by cell (``Runs``, the dots on the bars), and the
bar figure of one value per cell that several figure kinds are (``bar_figure``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import resultset
from .. import vocabulary as V
from ..render.axes import value_axis
from ..render.bars import NO_RECORD, grouped_bars, present_precisions, setting_label
from ..render.legend import legend
from ..render.plot import NotDrawn, new_figure, set_title

# why a slot has no record at all, where the study's plan (its matrix) is known
NOT_IN_DESIGN, PLANNED = "not in design", "planned, no record"


def experiment_rows(df: pd.DataFrame) -> pd.DataFrame:
    df = resultset.order(df)
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


# ---------------------------------------------------------------------------- finished runs
def _key_text(key: str, value) -> str:
    if key == "batch_size":
        return str(int(float(value)))
    return str(value)


class Runs:
    """The finished runs of a set's cells (metrics.csv), by cell: the dots on the bars, and
    the baselines a run's ratio is taken against (which may be another experiment's cell:
    the plain fp32 baseline of a knobs study)."""

    def __init__(self, metrics: pd.DataFrame):
        m = resultset.order(metrics)
        m = m[m["status"].astype(str) == V.OK]
        at: dict[tuple, list[int]] = {}
        for i, (_, r) in enumerate(m[list(V.CELL_KEYS)].iterrows()):
            at.setdefault(tuple(_key_text(k, r[k]) for k in V.CELL_KEYS), []).append(i)
        self.cells = {key: m.iloc[idx] for key, idx in at.items()}

    @staticmethod
    def key(row, **override) -> tuple:
        return tuple(_key_text(k, override.get(k, row[k])) for k in V.CELL_KEYS)

    def values(self, key: tuple, column: str) -> list[float]:
        g = self.cells.get(key)
        if g is None or column not in g:
            return []
        return [float(v) for v in pd.to_numeric(g[column], errors="coerce") if np.isfinite(v)]

    def of_rows(self, rows: pd.DataFrame, column: str, scale: float = 1.0) -> dict:
        """(group, precision) -> the values of that cell's finished runs."""
        return {(str(r["group"]), str(r["precision"])):
                [v * scale for v in self.values(self.key(r), column)]
                for _, r in rows.iterrows()}


NO_RUNS = Runs(pd.DataFrame(columns=[*V.CELL_KEYS, "status"]))


# ----------------------------------------------------------------------- one value per cell
def all_values(df, cols, dots: dict) -> pd.Series:
    return pd.concat([*(pd.to_numeric(df[c], errors="coerce") for c in cols if c in df),
                      pd.Series([v for vs in dots.values() for v in vs], dtype=float)])


PANEL_MIN_IN = 1.3    # the least height a panel keeps, whatever its title, ticks and legend take


def room_for_panels(fig) -> None:
    """A figure as much taller as its panels fall short of ``PANEL_MIN_IN`` once its long
    titles, upright setting labels and legend have taken their room (constrained layout
    keeps those at their size, so the panels get what is added)."""
    fig.canvas.draw()
    heights = [ax.get_position().height * fig.get_figheight() for ax in fig.axes]
    short = PANEL_MIN_IN - min(heights, default=PANEL_MIN_IN)
    if short > 0:
        fig.set_figheight(fig.get_figheight() + short * len(heights))


def bar_figure(df, value, ylabel, title, width, *, interval=None, annotate=None,
               scale=1.0, empty="no measurement", extra=None, also=(), plan=None,
               runs=None, muted=frozenset()):
    """One bar of ``value`` per cell with its interval and its runs as dots (a point on a
    log axis, where a bar's length would mean nothing), the cells of ``muted`` washed out and
    hatched; the figure and its axes, or a ``NotDrawn`` (and None) where no cell has the
    value."""
    df = df.copy()
    cols = [value] + ([f"{interval}_low", f"{interval}_high"] if interval else []) + list(also)
    for col in cols:
        df[col] = pd.to_numeric(df.get(col), errors="coerce") * scale
    if not df[[value, *also]].notna().any().any():
        return NotDrawn(title, empty), None
    groups = groups_of(df)
    dots = runs.of_rows(df, value, scale) if runs is not None else {}
    fig, ax = new_figure(len(groups) * len(present_precisions(df)), width)
    log = value_axis(ax, all_values(df, cols, dots), label=ylabel)
    drawn = grouped_bars(ax, df, value, groups=groups, interval=f"{interval}" if interval
                         else None, annotate=annotate, absent=plan, runs=dots, point=log,
                         muted=muted)
    set_title(ax, title)
    legend(fig, drawn["precisions"], extra, drawn["intervals"], drawn["runs"])
    room_for_panels(fig)
    return fig, ax
