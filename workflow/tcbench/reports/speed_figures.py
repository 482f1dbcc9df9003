"""The speed figures of one experiment: its throughput (``fig_throughput``) and each mode's
speedup over the baseline it is judged against at the same setting (``fig_speedup``), each
run a dot on its bar, a ratio with its lines at 1x and at ``stats.GAIN``."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import stats
from .. import vocabulary as V
from ..analysis import claims
from ..analysis import throughput
from ..render.axes import ratio_lines, reference_room, value_axis
from ..render.bars import (UNJUDGED_EDGE, UNJUDGED_HATCH, clear_of_lines, grouped_bars,
                           interval_kind, present_precisions, run_dots, slot_width, slot_x)
from ..render.legend import legend
from ..render.numbers import ONE_PROCESS_WHAT, num, runs_note
from ..render.plot import HEIGHT_IN, NotDrawn, figure_width, plt, set_title
from .figure_cells import NO_RUNS, Runs, all_values, bar_figure, groups_of, room_for_panels

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
    run as a dot; a cell whose runs fall into two modes or have a window that was not steady
    washed out and hatched, the legend saying which."""
    col = throughput.main_column(s)
    unsteady = {(str(r["group"]), str(r["precision"])): _unsteady(r) for _, r in s.iterrows()
                if _unsteady(r)}
    extra = [unjudged_handle(unsteady.values(), "")] if unsteady else None
    fig, _ = bar_figure(s, col, f"{throughput.unit(col)} (steady state)",
                        f"{exp}: training throughput", width, interval=col, plan=plan,
                        runs=runs, muted=set(unsteady), extra=extra)
    return fig


def _unsteady(r) -> str | None:
    """Why a cell's runs cannot decide a ratio whatever its baseline (``claims.gate`` of the
    cell alone), other than the host: two modes, unsteady or compile-struck windows."""
    g = claims.gate(r, None)
    return None if g in (None, stats.HOST_BOUND) else g


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
        if (fp8 & (reduced["repeats_ok"].fillna(0) > 0)).any() and not over_bf16:
            what = (f"over strict fp32, same setting (FP8's own baseline, {V.FP8_BASELINE}, "
                    f"did not run beside it)")
        panels.append((SAME, others, what, f"× {V.BASELINE}"))
    return panels


def _empty_speedup_reason(sp: pd.DataFrame) -> str:
    if (sp["precision"].astype(str) == V.BASELINE).all():
        return ("only strict fp32 ran in this experiment, so there is no reduced precision to "
                "compare (fp32 over itself is 1 by definition)")
    prec = sp["precision"].astype(str)
    if prec.isin(FP8).any() and set(prec) <= FP8 | {V.BASELINE}:
        return (f"FP8 is judged against {V.FP8_BASELINE} only (over fp32 it would be credited "
                f"with bf16's own gain), and no {V.FP8_BASELINE} run finished beside its FP8 "
                f"cells")
    fp8 = f" (nor {V.FP8_BASELINE} beside its FP8 cells)" if prec.isin(FP8).any() else ""
    return (f"no baseline ran beside these cells: no fp32 run finished at any setting of this "
            f"experiment{fp8}, and its workload has no plain fp32 cell in the set")


# where the verdict judges a cell by its interleaved comparison, that ratio is the main mark and
# the per-process repeats' ratio of means stands beside it, hollow, as the secondary estimate
PER_PROCESS = dict(marker="s", markersize=3.4, mfc="white", mec="0.2", mew=0.8, ls="none")
PER_PROCESS_HANDLE = Line2D([], [], **PER_PROCESS, color="0.2",
                            label="per process, ratio of means (not judged on)")


def judged_rows(rows: pd.DataFrame, stem: str) -> pd.DataFrame:
    """``rows`` with the ratio the verdict judges over ``stem``'s baseline
    (``claims.shown``) as ``ratio`` (``_low``, ``_high``, ``_n``, ``_interval``), the
    per-process ratio where that is the interleaved one as ``pp`` (its secondary estimate),
    how it was judged (``judged_by``) and why no claim is made of it (``unjudged``)."""
    out = []
    for _, r in rows.iterrows():
        # FP8 is judged against amp-bf16 only: over fp32 it would be credited with bf16's gain
        forbidden = stem == SAME and str(r["precision"]) in FP8
        j = None if forbidden else claims.shown(r, stem)
        e = j.estimate if j is not None else stats.EMPTY
        paired = j is not None and j.decided_by == claims.INTERLEAVED
        pp = stats.from_row(r, stem) if paired else stats.EMPTY
        out.append({**e.as_dict("ratio"), "ratio_interval": e.method, **pp.as_dict("pp"),
                    "pp_interval": pp.method, "judged_by": j.decided_by if j else None,
                    "unjudged": claims.unjudged(j)})
    extra = pd.DataFrame(out, index=rows.index,
                         columns=["ratio", "ratio_low", "ratio_high", "ratio_n",
                                  "ratio_interval", "pp", "pp_low", "pp_high", "pp_n",
                                  "pp_interval", "judged_by", "unjudged"])
    return pd.concat([rows.drop(columns=[c for c in extra if c in rows]), extra], axis=1)


def _per_process(ax, rows: pd.DataFrame, groups: list[str], precisions: list[str],
                 dots: dict) -> bool:
    """Beside each cell judged by its interleaved comparison, the per-process ratio of means
    (hollow, with its interval) and the runs it is the mean of; whether any was drawn."""
    drawn = False
    for _, r in rows.iterrows():
        g, p = str(r["group"]), str(r["precision"])
        if pd.isna(r["pp"]) or g not in groups or p not in precisions:
            continue
        n = len(precisions)
        x = slot_x(groups.index(g), precisions.index(p), n) + 0.3 * slot_width(n)
        kind = interval_kind(r, "pp")
        lo, hi = r["pp_low"], r["pp_high"]
        colour = "0.55" if kind == stats.RANGE else "0.2"
        err = None if pd.isna(lo) or pd.isna(hi) else [[max(r["pp"] - lo, 0)],
                                                          [max(hi - r["pp"], 0)]]
        ax.errorbar([x], [r["pp"]], yerr=err, ecolor=colour, elinewidth=0.8, capsize=1.6,
                    zorder=4.5, **PER_PROCESS)
        run_dots(ax, x, dots.get((g, p), ()), n)
        drawn = True
    return drawn


def unjudged_handle(reasons, what: str = "not judged ") -> Patch:
    """The legend's entry for the cells the verdict makes no claim of, with why."""
    why = "; ".join(dict.fromkeys(str(w).removeprefix("not judged: ") for w in reasons))
    return Patch(facecolor="white", edgecolor=UNJUDGED_EDGE, hatch=UNJUDGED_HATCH,
                 label=f"{what}({why})" if what else why)


def _panels(sp: pd.DataFrame):
    """The drawable panels, each (stem, rows with the judged ratio, what, y label)."""
    panels = [(stem, judged_rows(rows, stem), what, ylabel)
              for stem, rows, what, ylabel in _ratio_panels(sp.copy())]
    return [p for p in panels if len(p[1]) and p[1]["ratio"].notna().any()]


def _panel(ax, exp: str, panel, groups, plan, runs, marks: dict) -> list[str]:
    """One panel of ``fig_speedup``; returns the precisions drawn, and adds what it drew to
    ``marks`` (intervals, dots, per-process marks, not-judged reasons, point or bar)."""
    stem, rows, what, ylabel = panel
    base = V.FP8_BASELINE if stem == FP8_OVER_BF16 else V.BASELINE
    fp8 = rows["precision"].astype(str).isin(FP8)
    rows = rows.assign(why_missing=np.where(
        rows["repeats_ok"].fillna(0) > 0,
        np.where(fp8 & (stem == SAME), f"no {V.FP8_BASELINE}", f"no {base}"), ""))
    # runs only where their cell has a ratio to show (never FP8's over fp32)
    dots = ratio_runs(rows[rows["ratio"].notna()], runs, stem)
    paired = {(str(r["group"]), str(r["precision"])) for _, r in rows.iterrows()
              if pd.notna(r["pp"])}
    log = value_axis(ax, pd.concat([all_values(rows, ["ratio", "ratio_low", "ratio_high"],
                                               dots), rows["pp_low"], rows["pp_high"],
                                    pd.Series([1.0, stats.GAIN])]).dropna(), label=ylabel)
    muted = {(str(r["group"]), str(r["precision"])): r["unjudged"]
             for _, r in rows.iterrows() if isinstance(r["unjudged"], str)}
    drawn = grouped_bars(ax, rows, "ratio", groups=groups, interval="ratio", annotate=num,
                         absent=plan, point=log, muted=set(muted),
                         runs={k: v for k, v in dots.items() if k not in paired},
                         clear={(str(r["group"]), str(r["precision"])): [
                             v for v in (r["pp"], r["pp_high"], *dots.get(
                                 (str(r["group"]), str(r["precision"])), ())) if pd.notna(v)]
                             for _, r in rows.iterrows() if pd.notna(r["pp"])})
    marks["per_process"] |= _per_process(ax, rows, groups, drawn["precisions"], dots)
    marks["dotted"] |= drawn["runs"] or any(dots.get(k) for k in paired)
    marks["lines"] = ratio_lines(ax)
    marks["intervals"] |= drawn["intervals"]
    marks["unjudged"] += [w for k, w in muted.items() if k[1] in drawn["precisions"]]
    marks["paired"] |= bool(paired)
    marks["runs"] += [r["ratio_n"] for _, r in rows.iterrows()
                      if r["ratio_interval"] == stats.RUNS]
    marks["one"] |= bool(paired) and (rows["ratio_interval"] == stats.PAIRED).any()
    marks["point"] |= log
    set_title(ax, f"{exp}: {what}")
    return drawn["precisions"]


def fig_speedup(sp, exp, width="auto", plan=None, runs=None):
    """Throughput of each mode over the baseline it is judged against at the same setting
    (``_ratio_panels``), the ratio the verdict judges (``claims.shown``: the interleaved
    comparison's where one measured it, else the per-process repeats') as the bar (a point
    on a log axis) with its interval, the per-process ratio of means beside it (hollow) where
    it is not the judged one, each run of the mode as a dot (its throughput over the mean of
    the baseline's runs), cells the verdict does not judge hatched, and lines at 1× and at
    the "pays off" threshold ``stats.GAIN``."""
    runs = runs or NO_RUNS
    title = f"{exp}: speedup (throughput)"
    panels = _panels(sp)
    if not panels:
        return NotDrawn(title, _empty_speedup_reason(sp))
    groups = [g for g in groups_of(sp) if any((p[1]["group"] == g).any() for p in panels)]
    slots = len(groups) * max(len(present_precisions(p[1])) for p in panels)
    fig, axes = plt.subplots(len(panels), 1, squeeze=False, layout="constrained",
                             figsize=(figure_width(slots, width),
                                      HEIGHT_IN + 1.3 * (len(panels) - 1)))
    marks = {"intervals": set(), "dotted": False, "per_process": False, "unjudged": [],
             "paired": False, "point": False, "lines": [], "runs": [], "one": False}
    precisions = []
    for ax, panel in zip(axes[:, 0], panels):
        drawn = _panel(ax, exp, panel, groups, plan, runs, marks)
        precisions += [p for p in drawn if p not in precisions]
    extra = [*marks["lines"]]
    if marks["paired"]:
        # judged across runs on other machines, the interval is theirs (runs_note)
        # or from one process's rounds (one_process_note)
        what = runs_note(marks["runs"]).split(": ")[0] if marks["runs"] else \
            f"{V.ONE_PROCESS_MARK} {ONE_PROCESS_WHAT}" if marks["one"] else "95% CI"
        # such an interval on a line of its own: a one-column figure is narrow
        long = marks["runs"] or marks["one"]
        extra.append(Patch(facecolor="0.6", label=f"{'point' if marks['point'] else 'bar'}: "
                                                  f"interleaved ratio (judged)"
                                                  + (f",\n{what}" if long else f", {what}")))
    extra += [PER_PROCESS_HANDLE] if marks["per_process"] else []
    extra += [unjudged_handle(marks["unjudged"])] if marks["unjudged"] else []
    legend(fig, [p for p in V.PRECISIONS if p in precisions], extra, marks["intervals"],
           marks["dotted"])
    room_for_panels(fig)
    for ax in axes[:, 0]:
        reference_room(ax)
    clear_of_lines(fig, (1.0, stats.GAIN))
    return fig
