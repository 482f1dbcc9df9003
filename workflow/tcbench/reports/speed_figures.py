"""The speed figures of one experiment: its throughput (``fig_throughput``) and each mode's
speedup over the baseline it is judged against at the same setting (``fig_speedup``), each
run a dot on its bar, a ratio with its lines at 1x and at ``stats.GAIN``."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from .. import stats
from .. import vocabulary as V
from ..analysis import throughput as TP
from ..render.axes import ratio_lines, value_axis
from ..render.bars import grouped_bars, present_precisions, slot_width, slot_x
from ..render.legend import legend
from ..render.numbers import num
from ..render.plot import HEIGHT_IN, NotDrawn, figure_width, plt, set_title
from .figure_cells import NO_RUNS, Runs, all_values, bar_figure, groups_of

FP8 = frozenset(m.name for m in V.MODES if m.fp8_recipe)

# the ratio columns of speedup.csv, by what they are over: the mode's baseline at the same
# setting, the mode an FP8 mode replaces, and the plain fp32 baseline of a knobs study
SAME, FP8_OVER_BF16, GAIN = "speedup", "bf16_speedup", "gain"


def baseline_key(row, stem: str) -> tuple:
    """The cell a row's ratio ``stem`` is taken against."""
    if stem == SAME:
        return Runs.key(row, precision=V.BASELINE)
    if stem == FP8_OVER_BF16:
        return Runs.key(row, precision=V.FP8_BASELINE)
    plain = {k: row[f"plain_{k}"] for k in V.CELL_KEYS
             if f"plain_{k}" in row and pd.notna(row[f"plain_{k}"])}
    return Runs.key(row, **plain, precision=V.BASELINE)


def ratio_runs(rows: pd.DataFrame, runs: Runs, stem: str) -> dict:
    """(group, precision) -> each finished run's throughput over the mean of its baseline's
    runs: the dots whose mean is the bar (a ratio of means)."""
    out = {}
    for _, r in rows.iterrows():
        base = stats.mean(runs.values(baseline_key(r, stem), V.HEADLINE))
        mine = runs.values(Runs.key(r), V.HEADLINE)
        out[(str(r["group"]), str(r["precision"]))] = \
            [v / base for v in mine] if base else []
    return out


def fig_throughput(s, exp, width="auto", plan=None, runs=None):
    """Steady-state throughput in the unit the workload counts (tokens/s for a token workload,
    whose samples/s is in its tables): the mean of the finished runs, its interval, and each
    run as a dot."""
    col = TP.main_column(s)
    fig, _ = bar_figure(s, col, f"{TP.unit(col)} (steady state)",
                        f"{exp}: training throughput", width, interval=col, plan=plan,
                        runs=runs)
    return fig


def _is_own_baseline(r) -> bool:
    """A knobs study's plain fp32 cell, whose gain is itself over itself."""
    return Runs.key(r) == baseline_key(r, GAIN)


def _plain_text(rows: pd.DataFrame) -> str:
    """The plain fp32 baseline a knobs study's gains are over, in words."""
    base = rows.dropna(subset=["plain_experiment"])
    pairs = list(dict.fromkeys(zip(base["plain_experiment"], base["plain_batch_size"])))
    if len(pairs) != 1:
        return "gain over each model's plain fp32 (eager, contiguous)"
    exp, bs = pairs[0]
    return f"gain over plain fp32 ({exp}'s fp32 at bs {int(bs)}, eager, contiguous)"


def _numbers(df: pd.DataFrame, col: str) -> pd.Series:
    """A column as numbers; all missing where the table has no such column (an older set)."""
    return pd.to_numeric(df[col], errors="coerce") if col in df else \
        pd.Series(np.nan, index=df.index)


def _ratio_panels(sp: pd.DataFrame) -> list[tuple[str, pd.DataFrame, str, str]]:
    """The speedup figure's panels, each (stem, rows, what it is over, y label): every mode
    against the baseline it is judged against at its setting (an FP8 mode against amp-bf16,
    the others against strict fp32); for a knobs study without fp32 cells, every cell but the
    baseline itself against the plain fp32 baseline. fp32 over itself is never drawn."""
    prec = sp["precision"].astype(str)
    reduced = sp[prec != V.BASELINE]
    fp8 = reduced["precision"].astype(str).isin(FP8)
    over_bf16 = bool(_numbers(reduced, FP8_OVER_BF16)[fp8].notna().any())
    if not _numbers(reduced, SAME).notna().any() and _numbers(sp, GAIN).notna().any() \
            and not over_bf16:
        rows = sp[[not _is_own_baseline(r) for _, r in sp.iterrows()]]
        return [(GAIN, rows, _plain_text(sp), "× plain fp32")]
    panels = []
    if over_bf16:
        panels.append((FP8_OVER_BF16, reduced[fp8], "FP8 over amp-bf16, same setting",
                       f"× {V.FP8_BASELINE}"))
    others = reduced[~fp8] if over_bf16 else reduced
    if len(others):
        what = "over strict fp32, same setting"
        if fp8.any() and not over_bf16:
            what = (f"over strict fp32, same setting (FP8's own baseline, {V.FP8_BASELINE}, "
                    f"did not run beside it)")
        panels.append((SAME, others, what, f"× {V.BASELINE}"))
    return panels


def _empty_speedup_reason(sp: pd.DataFrame) -> str:
    if (sp["precision"].astype(str) == V.BASELINE).all():
        return ("only strict fp32 ran in this experiment, so there is no reduced precision to "
                "compare (fp32 over itself is 1 by definition)")
    fp8 = f" (nor {V.FP8_BASELINE} beside its FP8 cells)" if sp["precision"].astype(str).isin(
        FP8).any() else ""
    return (f"no baseline ran beside these cells: no fp32 run finished at any setting of this "
            f"experiment{fp8}, and its workload has no plain fp32 cell in the set")


# where the set has an interleaved comparison of the cell, the ratio it measured (speedup.csv's
# interleaved_* columns: across its processes, or the median of one process's rounds), by stem
INTERLEAVED = {SAME: "interleaved_speedup", FP8_OVER_BF16: "interleaved_bf16_speedup"}
INTERLEAVED_HANDLE = Line2D([], [], ls="none", marker="D", markersize=4, mfc="white",
                            mec="0.1", color="0.1",
                            label="interleaved (95% CI)")


def _interleaved(ax, rows: pd.DataFrame, stem: str, groups: list[str],
                 precisions: list[str]) -> bool:
    """Each cell's interleaved ratio as a diamond on its slot, with its interval; whether any
    was drawn. The bar beside it is the per-process repeats' ratio of means."""
    col = INTERLEAVED.get(stem)
    if col is None or col not in rows:
        return False
    drawn = False
    for _, r in rows.iterrows():
        v = pd.to_numeric(r.get(col), errors="coerce")
        if pd.isna(v) or str(r["group"]) not in groups or str(r["precision"]) not in precisions:
            continue
        # beside the bar's own interval, not on it: two instruments, two marks
        x = slot_x(groups.index(str(r["group"])), precisions.index(str(r["precision"])),
                   len(precisions)) + 0.3 * slot_width(len(precisions))
        lo, hi = (pd.to_numeric(r.get(f"{col}{x_}"), errors="coerce") for x_ in ("_low", "_high"))
        err = None if pd.isna(lo) or pd.isna(hi) else [[v - lo], [hi - v]]
        ax.errorbar([x], [v], yerr=err, fmt="D", ms=4, mfc="white", mec="0.1", ecolor="0.1",
                    elinewidth=0.9, capsize=2, zorder=5)
        drawn = True
    return drawn


def fig_speedup(sp, exp, width="auto", plan=None, runs=None):
    """Throughput of each mode over the baseline it is judged against at the same setting
    (``_ratio_panels``): the ratio of means with its interval, each run of the mode as a dot
    (its throughput over the mean of the baseline's runs), and lines at 1× and at the
    "pays off" threshold ``stats.GAIN``."""
    runs = runs or NO_RUNS
    title = f"{exp}: speedup (throughput)"
    panels = [(stem, rows.rename(columns={stem: "ratio", **{f"{stem}{x}": f"ratio{x}" for x in (
        "_low", "_high", "_n", "_interval")}}), what, ylabel)
        for stem, rows, what, ylabel in _ratio_panels(sp.copy())]
    panels = [p for p in panels if len(p[1]) and
              pd.to_numeric(p[1]["ratio"], errors="coerce").notna().any()]
    if not panels:
        return NotDrawn(title, _empty_speedup_reason(sp))
    groups = [g for g in groups_of(sp) if any((p[1]["group"] == g).any() for p in panels)]
    slots = len(groups) * max(len(present_precisions(p[1])) for p in panels)
    fig, axes = plt.subplots(len(panels), 1, squeeze=False, layout="constrained",
                             figsize=(figure_width(slots, width),
                                      HEIGHT_IN + 1.3 * (len(panels) - 1)))
    precisions, intervals, dotted, lines, interleaved = [], set(), False, [], False
    for ax, (stem, rows, what, ylabel) in zip(axes[:, 0], panels):
        rows = rows.copy()
        for c in ("ratio", "ratio_low", "ratio_high"):
            rows[c] = pd.to_numeric(rows[c], errors="coerce")
        base = V.FP8_BASELINE if stem == FP8_OVER_BF16 else V.BASELINE
        rows["why_missing"] = np.where(rows["repeats_ok"].fillna(0) > 0, f"no {base}", "")
        dots = ratio_runs(rows, runs, stem)
        il = INTERLEAVED.get(stem, "")
        il_values = [_numbers(rows, f"{il}{x}") for x in ("", "_low", "_high")] if il else []
        value_axis(ax, pd.concat([all_values(rows, ["ratio", "ratio_low", "ratio_high"], dots),
                                  *il_values, pd.Series([1.0, stats.GAIN])]).dropna(),
                   label=ylabel)
        drawn = grouped_bars(ax, rows, "ratio", groups=groups, interval="ratio",
                             annotate=num, absent=plan, runs=dots)
        interleaved |= _interleaved(ax, rows, stem, groups, drawn["precisions"])
        lines = ratio_lines(ax)
        set_title(ax, f"{exp}: {what}")
        precisions += [p for p in drawn["precisions"] if p not in precisions]
        intervals |= drawn["intervals"]
        dotted |= drawn["runs"]
    legend(fig, [p for p in V.PRECISIONS if p in precisions],
           [*lines, *([INTERLEAVED_HANDLE] if interleaved else [])], intervals, dotted)
    return fig
