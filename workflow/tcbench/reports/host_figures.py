"""The figures of a result set about its host (``vocabulary.SET_FIGURES``), from its tables
only, each drawn where its data exist and a note saying why not elsewhere
(``render.plot.NotDrawn``):

- ``host_bound``: per host-bound cell (GPU busy below ``vocabulary.HOST_BOUND_BUSY_SHARE`` of
  its timed steps), each run's throughput against the host's measured speed (the CPU dispatch
  probe before and after its timed window, metrics.csv's ``host_probe_*_ops_per_s``): where
  the host sets the pace, the points climb with the probe.
- ``interleaved``: per setting compared interleaved (every arm in one process, alternated in
  rounds; a setting's independent processes laid end to end), each arm's throughput round by
  round (the host's drift shows, alike in every arm) and the per-round paired ratios of each
  arm to its baseline, with the ratio and its 95% interval as interleaved.csv holds them:
  across processes (``stats.replicated_ratio``) or of one process's rounds
  (``stats.paired_ratio``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from .. import resultset
from .. import stats
from .. import vocabulary as V
from ..analysis import throughput
from ..render.plot import (HEIGHT_IN, INTERVAL_HANDLES, ONE_COLUMN_IN, PALETTE, RUN_MARK,
                           TWO_COLUMN_IN, WHISKERS, Line2D, NotDrawn, Patch, Ticks,
                           fitted_legend, plt, ratio_lines, value_axis, wrapped)
from ..render.axes import reference_room
from ..render.settings import setting_text, shown_axes

HOST_TITLE = "throughput against the host's speed"
INTERLEAVED_TITLE = "precision modes interleaved, process by process"
SETTINGS_ONE_A_ROW = 4       # more settings compared interleaved than this: two a row
# how the ratio panel draws and names each kind of interleaved interval
IL_MARKS = {stats.PAIRED: ("o", "one process: median of its rounds, 95% block-bootstrap CI"),
            stats.REPLICATED: ("D", "across processes: geometric mean of their medians, "
                                    "95% t CI")}
PROBE = "host_probe_ops_per_s"
PROBE_BEFORE, PROBE_AFTER = "host_probe_before_ops_per_s", "host_probe_after_ops_per_s"
FP8 = frozenset(m.name for m in V.MODES if m.fp8_recipe)


def _numbers(df: pd.DataFrame, col: str) -> pd.Series:
    return pd.to_numeric(df[col], errors="coerce") if col in df else \
        pd.Series(np.nan, index=df.index)


def _setting_groups(df: pd.DataFrame) -> list[tuple[tuple, pd.DataFrame, str]]:
    """The rows of each setting (a cell's keys but precision), with the setting in words."""
    df = resultset.order(df)
    out = []
    for exp, e in df.groupby("experiment", sort=False, observed=True):
        axes = shown_axes(e)
        for key, g in e.groupby(list(V.BASELINE_KEYS), sort=False, observed=True,
                                dropna=False):
            out.append((key, g, f"{exp}, {setting_text(g.iloc[0], axes)}"))
    return out


def host_bound_cells(metrics: pd.DataFrame) -> pd.DataFrame:
    """The finished runs of the cells whose GPU was busy less than
    ``V.HOST_BOUND_BUSY_SHARE`` of their timed steps (the busy share of the cell's profiled
    repeat, its median where more than one has it), unless most of their runs were
    input-bound."""
    m = resultset.order(metrics)
    cells = [m[k].astype(str) for k in V.CELL_KEYS]
    cell_busy = _numbers(m, "gpu_busy_share").groupby(cells, sort=False).transform("median")
    # an input-bound cell waits for its loader, not for the host (diagnosis.host_bound)
    waits = m["input_bound"].map(stats.flag).astype(float) if "input_bound" in m else \
        pd.Series(0.0, index=m.index)
    input_bound = waits.groupby(cells, sort=False).transform("mean") > 0.5
    return m[(cell_busy < V.HOST_BOUND_BUSY_SHARE) & ~input_bound
             & (m["status"].astype(str) == V.OK)]


def _why_no_host_figure(metrics: pd.DataFrame, bound: pd.DataFrame) -> str | None:
    if not _numbers(metrics, "gpu_busy_share").notna().any():
        return ("no cell has a GPU busy share (a kernel profile, taken on CUDA devices only), "
                "so none is known to be host-bound")
    if bound.empty:
        return (f"no cell is host-bound: every profiled cell kept the GPU busy at least "
                f"{V.HOST_BOUND_BUSY_SHARE:.0%} of its timed steps")
    if not _numbers(bound, PROBE).notna().any():
        return ("the host-bound cells' records have no host probe (host_probe_ops_per_s): "
                "they were made before jobs measured the host's speed")
    return None


def _grid(panels: int, row_height: float = HEIGHT_IN - 0.3, columns: int = 2):
    cols = 1 if panels == 1 else columns
    rows = math.ceil(panels / cols)
    width = ONE_COLUMN_IN if cols == 1 else TWO_COLUMN_IN
    fig, axes = plt.subplots(rows, cols, figsize=(width, 0.5 + row_height * rows),
                             layout="constrained", squeeze=False)
    for ax in axes.flat[panels:]:
        ax.remove()
    return fig, list(axes.flat[:panels])


def _panel_title(ax, text: str) -> None:
    width = ax.get_subplotspec().get_gridspec().ncols
    ax.set_title("\n".join(wrapped(text, (TWO_COLUMN_IN if width > 1 else ONE_COLUMN_IN)
                                   / width - 0.3, 7.5)), fontsize=7.5)


def fig_host_bound(metrics: pd.DataFrame):
    """One panel per setting with host-bound cells: each finished run of each host-bound
    mode as a point, its throughput against the host probe's mean over its timed window
    (the thin line spans the probe before and after the window)."""
    title = f"{HOST_TITLE} (host-bound cells: GPU busy below {V.HOST_BOUND_BUSY_SHARE:.0%})"
    bound = host_bound_cells(metrics)
    why = _why_no_host_figure(metrics, bound)
    if why:
        return NotDrawn(title, why)
    bound = bound[_numbers(bound, PROBE).notna()]
    groups = _setting_groups(bound)
    # many settings: three a row, so that the figure stays a page or two tall
    fig, axes = _grid(len(groups), columns=3 if len(groups) > 8 else 2)
    shown, spans = [], False
    for ax, (_key, g, label) in zip(axes, groups):
        x, y = _numbers(g, PROBE), _numbers(g, V.HEADLINE)
        lo, hi = _numbers(g, PROBE_BEFORE), _numbers(g, PROBE_AFTER)
        for p in [p for p in V.PRECISIONS if p in set(g["precision"].astype(str))]:
            mine = g["precision"].astype(str) == p
            for xi, yi, a, b in zip(x[mine], y[mine], lo[mine], hi[mine]):
                if np.isfinite(a) and np.isfinite(b):
                    ax.plot([min(a, b), max(a, b)], [yi, yi], color=PALETTE[p], lw=0.7,
                            alpha=0.6, zorder=2)
                    spans = True
            ax.plot(x[mine], y[mine], ls="none", marker="o", markersize=3.6, mfc=PALETTE[p],
                    mec="0.1", mew=0.5, zorder=3)
            if p not in shown:
                shown.append(p)
        value_axis(ax, y, label=f"{V.metric(V.HEADLINE).unit}")
        ax.xaxis.set_major_formatter(Ticks())
        ax.set_xlabel("host probe (CPU dispatch ops/s)")
        _panel_title(ax, label)
    fig.suptitle("\n".join(wrapped(title, fig.get_size_inches()[0] - 0.3, 8)), fontsize=8)
    handles = [Patch(facecolor=PALETTE[p], label=p) for p in V.PRECISIONS if p in shown]
    handles.append(Line2D([], [], ls="none", marker="o", markersize=3.6, mfc="0.6",
                          mec="0.1", mew=0.5, label="each run"))
    if spans:
        handles.append(Line2D([], [], color="0.4", lw=0.7, label="probe before to after"))
    fitted_legend(fig, handles)
    return fig


# ------------------------------------------------------------------------------ interleaved
def arm_baseline(arm: str, arms) -> str | None:
    """The baseline an arm's paired ratio is drawn against: amp-bf16 for an FP8 arm (the
    mode it replaces), strict fp32 for the others, each where it is an arm; else the first of
    ``V.INTERLEAVED_BASELINES`` that is. Strict fp32 is no arm to judge where it ran: it is
    the others' baseline (None)."""
    arms = set(arms)
    if arm == V.BASELINE:
        return None
    first = [V.FP8_BASELINE] if arm in FP8 else []
    for b in (*first, V.BASELINE, *V.INTERLEAVED_BASELINES):
        if b in arms and b != arm:
            return b
    return None


def _replicate(df: pd.DataFrame) -> pd.Series:
    """Each row's process (1 in a table made before replicates)."""
    return _numbers(df, "replicate").fillna(1).astype(int) if "replicate" in df else \
        pd.Series(1, index=df.index)


def round_ratios(rounds: pd.DataFrame, arm: str, baseline: str) -> pd.Series:
    """The per-round ratios of ``arm`` to ``baseline`` (rounds where both ran), by process
    and round."""
    rounds = rounds.assign(replicate=_replicate(rounds))
    thr = rounds.pivot_table(index=["replicate", "round"], columns="precision",
                             values="throughput_samples_per_s", aggfunc="first",
                             observed=True)
    if arm not in thr or baseline not in thr:
        return pd.Series(dtype=float)
    r = thr[arm] / thr[baseline]
    return r[np.isfinite(r)]


def _why_no_interleaved(interleaved, rounds) -> str | None:
    if rounds is None or interleaved is None:
        return "no experiment of this set was compared interleaved (no interleaved tables)"
    if rounds.empty or interleaved.empty:
        return "no experiment of this set was compared interleaved (its tables are empty)"
    return None


def _rounds_panel(ax, g: pd.DataFrame, arms: list[str], label: str) -> None:
    """Each arm's throughput in every round of one setting, in the precision's colour and
    the unit its workload counts (tokens/s for a token workload's: ``throughput.with_tokens``);
    its processes one after another, a thin line between them."""
    g = g.assign(replicate=_replicate(g))
    speed = throughput.main_column(g)
    start = 0.0
    for _k, proc in g.groupby("replicate", sort=True):
        x0 = start - _numbers(proc, "round").min()
        for p in arms:
            a = proc[proc["precision"].astype(str) == p].sort_values("round")
            ax.plot(x0 + _numbers(a, "round"), _numbers(a, speed),
                    color=PALETTE[p], lw=0.8, marker="o", markersize=1.8, zorder=3)
        if start:
            ax.axvline(start - 0.5, color="0.6", lw=0.6, zorder=1)
        start = x0 + _numbers(proc, "round").max() + 1
    value_axis(ax, _numbers(g, speed), label=throughput.unit(speed))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))    # rounds are whole
    several = g["replicate"].nunique() > 1
    ax.set_xlabel("round, processes one after another" if several
                  else "round (order rotated each round)")
    _panel_title(ax, f"{label}: each arm, round by round")


def _ratios_panel(ax, g: pd.DataFrame, mine: pd.DataFrame, arms: list[str]):
    """Per arm of one setting, its per-round ratios to its baseline (every process's) and the
    ratio with its interval from interleaved.csv (``mine``: that setting's rows); the
    intervals drawn and the legend's handles for the reference lines."""
    ticks, values, intervals = [], [], set()
    for p in arms:
        b = arm_baseline(p, arms)
        if b is None:
            continue
        x = len(ticks)
        r = round_ratios(g, p, b)
        # the rounds as a strip left of the slot's middle, the ratio with its interval
        # right of it
        ax.plot(x - 0.08 + np.linspace(-0.16, 0.16, len(r)) if len(r) > 1 else
                [x - 0.08] * len(r), r.to_numpy(), zorder=3, **RUN_MARK)
        values += list(r)
        row = mine[(mine["precision"].astype(str) == p) & (mine["baseline"].astype(str) == b)]
        if len(row):
            e = stats.from_row(row.iloc[0], "ratio")
            if e.value is not None:
                # either interleaved interval is a confidence interval: drawn as one
                colour, cap = WHISKERS[stats.RANGE if e.method == stats.RANGE else stats.CI]
                yerr = None if e.low is None else [[e.value - e.low], [e.high - e.value]]
                mark = IL_MARKS.get(e.method, ("o",))[0]
                ax.errorbar([x + 0.22], [e.value], yerr=yerr, fmt=mark, markersize=4.2,
                            mfc=PALETTE[p], mec="0.1", mew=0.6, ecolor=colour,
                            elinewidth=0.9, capsize=cap, zorder=4)
                intervals.add(e.method)
                values += [v for v in (e.value, e.low, e.high) if v is not None]
        ticks.append(f"{p}\n÷ {b}")
    # a long mode's name breaks after its hyphen: three arms share a quarter of the width
    ax.set_xticks(range(len(ticks)), [t.replace("fp8-", "fp8-\n") if len(ticks) > 2 else t
                                      for t in ticks])
    ax.set_xlim(-0.6, len(ticks) - 0.4)
    ax.grid(axis="x", visible=False)
    value_axis(ax, pd.Series([*values, 1.0, stats.GAIN]), label="paired ratio")
    lines = ratio_lines(ax)
    reference_room(ax)
    _panel_title(ax, "per-round ratios; " + ("ratio across processes, 95% t CI"
                                             if stats.REPLICATED in intervals else
                                             "median, 95% block-bootstrap CI"))
    return intervals, lines


def fig_interleaved(interleaved: pd.DataFrame | None, rounds: pd.DataFrame | None,
                    metrics: pd.DataFrame | None = None):
    """One row per setting compared interleaved: left, each arm's throughput in every round
    (in the precision's colour, over the round number; in tokens/s for an experiment whose
    records in ``metrics`` count tokens); right, per arm, its per-round ratios
    to its baseline (``arm_baseline``) as dots, with the median and its interval from
    interleaved.csv, and lines at 1× and at the "pays off" threshold."""
    title = INTERLEAVED_TITLE
    why = _why_no_interleaved(interleaved, rounds)
    if why:
        return NotDrawn(title, why)
    rounds = throughput.with_tokens(resultset.order(rounds), metrics)
    ratios = resultset.order(interleaved)
    groups = _setting_groups(rounds)
    # many settings: two a row, so that the figure stays a page or two tall
    pairs = 2 if len(groups) > SETTINGS_ONE_A_ROW else 1
    rows = math.ceil(len(groups) / pairs)
    fig, grid = plt.subplots(rows, 2 * pairs, squeeze=False, layout="constrained",
                             figsize=(TWO_COLUMN_IN * (1.45 if pairs > 1 else 1),
                                      0.6 + 2.1 * rows))
    axes = [(grid[i // pairs, 2 * (i % pairs)], grid[i // pairs, 2 * (i % pairs) + 1])
            for i in range(len(groups))]
    for ax in grid.flat[2 * len(groups):]:
        ax.remove()
    shown, intervals = [], set()
    for (key, g, label), (left, right) in zip(groups, axes):
        arms = [p for p in V.PRECISIONS if p in set(g["precision"].astype(str))]
        _rounds_panel(left, g, arms, label)
        shown += [p for p in arms if p not in shown]
        mine = ratios
        for k, v in zip(V.BASELINE_KEYS, key):
            mine = mine[mine[k].astype(str) == str(v)] if k in mine else mine
        drawn, lines = _ratios_panel(right, g, mine, arms)
        intervals |= drawn
    fig.suptitle(title, fontsize=8)
    handles = [Patch(facecolor=PALETTE[p], label=p) for p in V.PRECISIONS if p in shown]
    handles.append(Line2D([], [], label="one round", **RUN_MARK))
    handles += [Line2D([], [], color="0.1", marker=m, markersize=4, mfc="0.6", lw=0.9,
                       label=text) for k, (m, text) in IL_MARKS.items() if k in intervals]
    handles += [INTERVAL_HANDLES[k] for k in (stats.RANGE, stats.SINGLE) if k in intervals]
    handles += lines
    fitted_legend(fig, handles)
    return fig
