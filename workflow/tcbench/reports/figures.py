"""Figures of one experiment from its tables (CSV in; PDF, SVG and PNG out), never from
records: one function per figure kind, all in the style of ``render.plot``. No text overlaps
other text, leaves the canvas or outruns its axes (tests/test_figures.py checks every figure).
A figure with nothing to show is not drawn: its files are a one-line note saying why
(``render.plot.NotDrawn``), which the report labels as such.

    python -m tcbench.reports.figures --metrics M.csv --summary S.csv --speedup P.csv \\
        --experiment E --outputs figures/E_throughput.png figures/E_throughput.pdf ...
    python -m tcbench.reports.figures --metrics M.csv [--interleaved I.csv \\
        --interleaved-rounds R.csv] --outputs figures/host_bound.png ...

Each output is named ``vocabulary.figure_name(experiment, kind, format)`` (a figure of one
experiment) or ``vocabulary.set_figure_name(kind, format)`` (a figure of the whole set,
``tcbench.reports.host_figures``); the workflow's rules list them and pass them here. Adding a
figure kind: a function here, its entry in ``KINDS`` and in ``vocabulary.FIGURES`` (which the
rule's outputs come from), and its caption.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd

from .. import cli
from .. import resultset as RS
from .. import stats
from .. import vocabulary as V
from ..analysis import diagnosis as D
from ..analysis import throughput as TP
from ..render.numbers import memory_unit, num
from ..render.plot import (HEIGHT_IN, NO_RECORD, VALUE_BOX, WIDTHS, Line2D, NotDrawn, Patch,
                           Ticks, figure_width, grouped_bars, label_slot, legend, missing_text,
                           new_figure, plt, present_precisions, ratio_lines, save_as,
                           setting_label, slot_width, slot_x, style, value_axis, wrapped)
from . import host_figures as H

# why a slot has no record at all, where the study's plan (its matrix) is known
NOT_IN_DESIGN, PLANNED = "not in design", "planned, no record"
FP8 = frozenset(m.name for m in V.MODES if m.fp8_recipe)


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
        m = RS.order(metrics)
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


def _all_values(df, cols, dots: dict) -> pd.Series:
    return pd.concat([*(pd.to_numeric(df[c], errors="coerce") for c in cols if c in df),
                      pd.Series([v for vs in dots.values() for v in vs], dtype=float)])


def _bar_figure(df, value, ylabel, title, width, *, interval=None, annotate=None,
                scale=1.0, empty="no measurement", extra=None, also=(), plan=None,
                runs=None):
    df = df.copy()
    cols = [value] + ([f"{interval}_low", f"{interval}_high"] if interval else []) + list(also)
    for col in cols:
        df[col] = pd.to_numeric(df.get(col), errors="coerce") * scale
    if not df[[value, *also]].notna().any().any():
        return NotDrawn(title, empty), None
    groups = groups_of(df)
    dots = runs.of_rows(df, value, scale) if runs is not None else {}
    fig, ax = new_figure(len(groups) * len(present_precisions(df)), width)
    value_axis(ax, _all_values(df, cols, dots), label=ylabel)
    drawn = grouped_bars(ax, df, value, groups=groups, interval=f"{interval}" if interval
                         else None, annotate=annotate, absent=plan, runs=dots)
    ax.set_title(title)
    legend(fig, drawn["precisions"], extra, drawn["intervals"], drawn["runs"])
    return fig, ax


def fig_throughput(s, exp, width="auto", plan=None, runs=None):
    """Steady-state throughput in the unit the workload counts (tokens/s for a token workload,
    whose samples/s is in its tables): the mean of the finished runs, its interval, and each
    run as a dot."""
    col = TP.main_column(s)
    fig, _ = _bar_figure(s, col, f"{TP.unit(col)} (steady state)",
                         f"{exp}: training throughput", width, interval=col, plan=plan,
                         runs=runs)
    return fig


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
    ax.set_title(title)
    extra = [Line2D([], [], **{k: v for k, v in MISS_MARK.items()
                               if k not in ("ecolor", "elinewidth", "capsize", "capthick")},
                    label="cache miss")] if cold.any() else None
    legend(fig, precisions, extra, drawn["intervals"])
    return fig


def fig_memory(s, exp, width="auto", plan=None, runs=None):
    unit, div = memory_unit(pd.to_numeric(s["max_memory_allocated_bytes"]).max())
    fig, _ = _bar_figure(s, "max_memory_allocated_bytes", f"peak allocated ({unit})",
                         f"{exp}: peak memory", width, scale=1 / div, annotate=num,
                         empty="torch.cuda memory statistics exist only on CUDA devices",
                         plan=plan, runs=runs)
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
    precisions, intervals, dotted, lines = [], set(), False, []
    for ax, (stem, rows, what, ylabel) in zip(axes[:, 0], panels):
        rows = rows.copy()
        for c in ("ratio", "ratio_low", "ratio_high"):
            rows[c] = pd.to_numeric(rows[c], errors="coerce")
        base = V.FP8_BASELINE if stem == FP8_OVER_BF16 else V.BASELINE
        rows["why_missing"] = np.where(rows["repeats_ok"].fillna(0) > 0, f"no {base}", "")
        dots = ratio_runs(rows, runs, stem)
        value_axis(ax, pd.concat([_all_values(rows, ["ratio", "ratio_low", "ratio_high"], dots),
                                  pd.Series([1.0, stats.GAIN])]), label=ylabel)
        drawn = grouped_bars(ax, rows, "ratio", groups=groups, interval="ratio",
                             annotate=lambda v: f"{num(v)}", absent=plan, runs=dots)
        lines = ratio_lines(ax)
        ax.set_title("\n".join(wrapped(f"{exp}: {what}", ax.figure.get_size_inches()[0] - 0.3,
                                       8)))
        precisions += [p for p in drawn["precisions"] if p not in precisions]
        intervals |= drawn["intervals"]
        dotted |= drawn["runs"]
    legend(fig, [p for p in V.PRECISIONS if p in precisions], lines, intervals, dotted)
    return fig


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
        return NotDrawn(title, f"no kernel profile: {D.why_unprofiled(gpu)}")
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(figure_width(len(groups) * len(precisions), width), HEIGHT_IN + 1.0),
        layout="constrained", sharex=True)
    s["why_missing"] = np.where(s["repeats_ok"].fillna(0) > 0, "not profiled", "")
    grouped_bars(top, s, "tensor_core_share", groups=groups, precisions=precisions,
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
        top.bar(x, max(mm - tc, 0), bottom=tc, width=w, color=_tint(V.PALETTE[p]), linewidth=0)
        top.bar(x, max(mm, tc), width=w, fill=False, edgecolor=V.PALETTE[p], linewidth=0.9)
        _share_labels(top, x, max(mm, tc), f"{tc:.0f}")
    threshold = V.HOST_BOUND_BUSY_SHARE * 100
    grouped_bars(bottom, s, "gpu_busy_share", groups=groups, precisions=precisions,
                 absent=plan)
    for _, r in s.iterrows():
        if pd.notna(r["gpu_busy_share"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            _share_labels(bottom, x, float(r["gpu_busy_share"]),
                          f"{float(r['gpu_busy_share']):.0f}", at_base=True)
    high = max(105.0, float(s["gpu_busy_share"].max(skipna=True) or 0) + 5)
    for ax, label in ((top, "% of GPU kernel time"),
                      (bottom, "GPU busy,\n% of timed steps")):
        ax.set_ylim(0, max(high, 112) if ax is bottom else 112)
        ax.set_yticks([0, 25, 50, 75, 100])
        ax.yaxis.set_major_formatter(Ticks())
        ax.set_ylabel(label)
    top.set_title(title)
    # above the bars and the grid, and off the grid's lines (at 75 and 100)
    bottom.axhline(threshold, color="#7a1f1f", lw=0.9, ls="--", zorder=3)
    bottom.set_xlabel(ONE_REPEAT, fontsize=6)
    grey = "0.45"
    legend(fig, precisions, [
        Patch(facecolor=grey, label="on Tensor Cores"),
        Patch(facecolor=_tint(grey), edgecolor=grey, linewidth=0.9,
              label="matrix kernels, any unit"),
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
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlim(-0.55, len(groups) - 0.45)
    ax.grid(axis="x", visible=False)
    if len(groups) > 1 and fig.get_size_inches()[0] / len(groups) < 1.0:
        ax.tick_params(axis="x", labelrotation=90)
    ax.set_ylim(0, 100)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.yaxis.set_major_formatter(Ticks())
    ax.set_ylabel("% of step time")
    ax.set_title(title)
    shown = [p for p in PARTS if cells[p].notna().any() and cells[p].max() >= VISIBLE]
    small = [p for p in PARTS if cells[p].notna().any() and cells[p].max() < VISIBLE]
    notes = [f"{PART_TEXT[p]}: under {VISIBLE:.0%} of every step" for p in small]
    if cells["gpu"].notna().any():
        notes.append("GPU busy from one profiled repeat per cell")
    ax.set_xlabel("\n".join(notes), fontsize=6)
    grey = "0.45"
    legend(fig, precisions, [Patch(label=PART_TEXT[p], **_part_style(p, grey)) for p in shown])
    return fig


# the figures of one experiment, by kind: which of its tables each is drawn from
KINDS = {"throughput": ("summary", fig_throughput), "speedup": ("speedup", fig_speedup),
         "warmup": ("summary", fig_warmup), "memory": ("summary", fig_memory),
         "attribution": ("metrics", fig_attribution),
         "tensor_cores": ("summary", fig_tensor_cores)}
# the figures of a whole result set, by kind
SET_KINDS = {"host_bound": H.fig_host_bound, "interleaved": H.fig_interleaved}


def frames(metrics: pd.DataFrame, summary: pd.DataFrame, speedup: pd.DataFrame,
           exp: str) -> dict[str, pd.DataFrame]:
    """One experiment's rows of each table, as the figure functions take them."""
    m = metrics[metrics["experiment"] == exp]
    s, sp = summary[summary["experiment"] == exp], speedup[speedup["experiment"] == exp]
    if s.empty or m.empty:
        raise ValueError(f"experiment {exp!r} has no rows in summary.csv")
    return {"metrics": m, "summary": experiment_rows(s), "speedup": experiment_rows(sp)}


def build(metrics, summary, speedup, exp: str, width: str = "auto", kinds=None,
          planned=None, runs: Runs | None = None) -> dict:
    """The figures of one experiment, by kind (not yet saved; a ``NotDrawn`` where there is
    nothing to show); ``planned``: the cells its study planned (``Plan``), where known;
    ``runs``: the set's finished runs (``Runs`` of metrics.csv), made here if not given."""
    f = frames(metrics, summary, speedup, exp)
    plan = Plan(f["metrics"], planned)
    runs = runs or Runs(metrics)
    return {kind: KINDS[kind][1](f[KINDS[kind][0]], exp, width, plan, runs)
            for kind in kinds or KINDS}


def build_set(metrics, interleaved=None, rounds=None, kinds=None) -> dict:
    """The figures of the whole set, by kind (``SET_KINDS``)."""
    tables = {"host_bound": (metrics,), "interleaved": (interleaved, rounds)}
    return {kind: SET_KINDS[kind](*tables[kind]) for kind in kinds or SET_KINDS}


def outputs_by_kind(exp: str | None, outputs) -> dict[str, list[Path]]:
    """The files to write, by figure kind, from their names (``vocabulary.figure_name`` for
    an experiment's, ``vocabulary.set_figure_name`` for the set's, ``exp`` None)."""
    if exp is None:
        names = {V.set_figure_name(k, ext): k for k in SET_KINDS for ext in V.FIGURE_FORMATS}
        pattern = f"{V.set_figure_name('<kind>', '<format>')}, kinds {', '.join(SET_KINDS)}"
    else:
        names = {V.figure_name(exp, k, ext): k for k in KINDS for ext in V.FIGURE_FORMATS}
        pattern = (f"{V.figure_name(exp, '<kind>', '<format>')}, kinds {', '.join(KINDS)}")
    out: dict[str, list[Path]] = {}
    for path in map(Path, outputs):
        if path.name not in names:
            whose = "the set" if exp is None else repr(exp)
            raise ValueError(f"{path}: not a figure of {whose}; a figure is named {pattern}, "
                             f"formats {', '.join(V.FIGURE_FORMATS)}")
        out.setdefault(names[path.name], []).append(path)
    return out


# the interleaved comparison's tables beside metrics.csv (the aggregate's, where it writes
# them: vocabulary.SET_TABLES names them once it does)
INTERLEAVED_TABLES = {k: V.SET_TABLES.get(k, f"{k}.csv")
                      for k in ("interleaved", "interleaved_rounds")}


def read_set(tables: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """metrics, summary and speedup of a result set's folder (``vocabulary.SET_TABLES``)."""
    return tuple(RS.read_raw(Path(tables) / V.SET_TABLES[k])
                 for k in ("metrics", "summary", "speedup"))


def read_optional(path: Path | None) -> pd.DataFrame | None:
    return RS.read_raw(path) if path is not None and Path(path).exists() else None


def render(tables: Path, out_dir: Path, experiments: list[str] | None = None,
           width: str = "auto", formats=V.FIGURE_FORMATS, set_figures: bool = True
           ) -> list[Path]:
    """Every figure of each experiment of a result set's folder into ``out_dir``, named by
    ``vocabulary.figure_name``, and (``set_figures``) the set's own figures."""
    style()
    frames_ = read_set(tables)
    runs = Runs(frames_[0])
    written = []
    for exp in experiments or list(dict.fromkeys(frames_[1]["experiment"])):
        for kind, fig in build(*frames_, exp, width, runs=runs).items():
            written += save_as(fig, [Path(out_dir) / V.figure_name(exp, kind, ext)
                                     for ext in formats])
    if set_figures:
        extra = [read_optional(Path(tables) / INTERLEAVED_TABLES[k])
                 for k in ("interleaved", "interleaved_rounds")]
        for kind, fig in build_set(frames_[0], *extra).items():
            written += save_as(fig, [Path(out_dir) / V.set_figure_name(kind, ext)
                                     for ext in formats])
    return written


def write(metrics: Path, summary: Path, speedup: Path, exp: str, outputs,
          width: str = "auto", planned=None) -> list[Path]:
    wanted = outputs_by_kind(exp, outputs)
    style()
    figs = build(RS.read_raw(metrics), RS.read_raw(summary), RS.read_raw(speedup), exp, width,
                 [k for k in KINDS if k in wanted], planned)
    return [p for kind, fig in figs.items() for p in save_as(fig, wanted[kind])]


def write_set(metrics: Path, outputs, interleaved: Path | None = None,
              rounds: Path | None = None) -> list[Path]:
    wanted = outputs_by_kind(None, outputs)
    style()
    for name, path in (("--interleaved", interleaved), ("--interleaved-rounds", rounds)):
        if path is not None and not Path(path).exists():
            raise FileNotFoundError(f"{name} {path}: no such file")
    figs = build_set(RS.read_raw(metrics), read_optional(interleaved), read_optional(rounds),
                     [k for k in SET_KINDS if k in wanted])
    return [p for kind, fig in figs.items() for p in save_as(fig, wanted[kind])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.figures", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=Path, required=True, help="metrics.csv")
    for name in ("summary", "speedup"):
        ap.add_argument(f"--{name}", type=Path, help=f"{name}.csv (an experiment's figures)")
    ap.add_argument("--interleaved", type=Path,
                    help="the interleaved comparisons' ratios (the set's figures)")
    ap.add_argument("--interleaved-rounds", type=Path,
                    help="the interleaved comparisons' rounds (the set's figures)")
    ap.add_argument("--experiment",
                    help="the experiment whose figures --outputs are; without it, the set's")
    ap.add_argument("--outputs", type=Path, nargs="+", required=True,
                    help="the figure files to write")
    ap.add_argument("--width", choices=WIDTHS, default="auto",
                    help="one column (3.5 in), two columns (7 in), or by number of bars")
    ap.add_argument("--planned", nargs="*", metavar="CELL",
                    help="the cells the study planned for this experiment (cell names without "
                         "the repeat): a slot with no record then says whether it was planned")
    args = ap.parse_args(argv)

    def written():
        if args.experiment is None:
            write_set(args.metrics, args.outputs, args.interleaved, args.interleaved_rounds)
        elif args.summary is None or args.speedup is None:
            raise ValueError("an experiment's figures need --summary and --speedup")
        else:
            write(args.metrics, args.summary, args.speedup, args.experiment, args.outputs,
                  args.width, args.planned)

    return cli.main("tcbench.reports.figures", written, (ValueError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
