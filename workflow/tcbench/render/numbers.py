"""Numbers and units for readers: the one number format of every table, figure label,
verdict sentence and README line, the memory units, and a value with its interval saying what
the interval is (``tcbench.stats``)."""

from __future__ import annotations

import math

import pandas as pd

from .. import stats
from .. import vocabulary as V

MISSING = "–"

MIB, GIB = 2**20, 2**30


def missing(v) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def num(v, digits: int = 3) -> str:
    """``digits`` significant digits, thousands grouped, never scientific notation: the one
    number format of every table, figure label and verdict sentence."""
    if missing(v):
        return MISSING
    v = float(v)
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    magnitude = math.floor(math.log10(abs(v)))
    decimals = digits - 1 - magnitude          # negative: round to tens, hundreds, ...
    rounded = round(v, decimals)
    if rounded and math.floor(math.log10(abs(rounded))) > magnitude:   # 0.9996 -> 1.00
        decimals -= 1
        rounded = round(v, decimals)
    return f"{rounded:,.{max(decimals, 0)}f}"


def times(v, digits: int = 3) -> str:
    return MISSING if missing(v) else f"{num(v, digits)}×"


def percent(v, decimals: int = 0) -> str:
    return MISSING if missing(v) else f"{100 * float(v):.{decimals}f}%"


def memory_unit(max_bytes) -> tuple[str, float]:
    """MiB up to 4 GiB, GiB beyond: one unit per column or axis, chosen from its largest value."""
    return ("GiB", GIB) if not missing(max_bytes) and float(max_bytes) >= 4 * GIB else ("MiB", MIB)


def memory(v, unit: str | None = None) -> str:
    """Bytes in MiB or GiB (chosen from the value unless given), with the unit."""
    if missing(v):
        return MISSING
    unit = unit or memory_unit(v)[0]
    return f"{num(float(v) / (GIB if unit == 'GiB' else MIB))} {unit}"


def interval(lo, hi, digits: int = 3) -> str:
    return MISSING if missing(lo) or missing(hi) else f"[{num(lo, digits)}, {num(hi, digits)}]"


def with_interval(value, low, high, n, fmt=num, bound=None, kind=None) -> str:
    """A value and its interval, saying what the interval is: ``5,730 [5,700, 5,760]`` (95% CI,
    n >= 3), ``5,730 (range 5,700–5,760)`` (n = 2), ``5,730 (1 run)``; ``kind`` (a
    ``stats`` method) where the interval is not the one n implies: a median with its range,
    ``6.2 (5.8–7.3)``, under a head that says so. A ratio's unit sign stays on the value:
    ``2.79× [2.75, 2.83]``. An interval too narrow for three digits gets more, the value as
    many, ``161,990 [161,950, 162,040]``, and one too narrow for five its half-width: never
    ``162,000 [162,000, 162,000]``."""
    if missing(value):
        return MISSING
    n = 0 if missing(n) else int(n)
    kind = kind if kind in stats.METHOD_TEXT else stats.method(n)
    bound = bound or (num if fmt is times else fmt)
    if kind in (*stats.CONFIDENCE_METHODS, stats.RANGE, stats.SPREAD) and not missing(low):
        shown = _apart(value, low, high, fmt, bound)
        if shown is None:     # bounds alike even at five digits
            return f"{fmt(value)} ({narrow_ci(value, low, high, n, kind)})"
        text, lo, hi = shown
        if kind in stats.CONFIDENCE_METHODS:
            return f"{text} [{lo}, {hi}]"
        if kind == stats.RANGE:
            return f"{text} (range {lo}–{hi})"
        return f"{text} ({lo}–{hi})"      # a median: the column head says "median (min–max)"
    if kind == stats.SINGLE:
        return f"{fmt(value)} (1 run)"
    return fmt(value)


def _apart(value, low, high, fmt, bound):
    """The value and bounds as printed, with the significant digits (three, up to five for
    plain numbers and ratios) that tell the bounds apart, the value with as many; None where
    even five do not."""
    lo, hi = bound(low), bound(high)
    if lo != hi:
        return fmt(value), lo, hi
    if fmt not in (num, times):
        return None
    for digits in (4, 5):
        lo, hi = num(low, digits), num(high, digits)
        if lo != hi:
            text = num(value, digits) + ("×" if fmt is times else "")
            return text, lo, hi
    return None


def narrow_ci(value, low, high, n, kind=stats.CI) -> str:
    """An interval whose bounds print alike: its half-width relative to the value, or that the
    runs were identical (zero width)."""
    what = {stats.CI: "95% CI", stats.PAIRED: "95% CI", stats.REPLICATED: "95% CI",
            stats.RANGE: "range", stats.SPREAD: "range"}[kind]
    half = (float(high) - float(low)) / 2
    if half <= 0 or not float(value):
        return f"{what} of zero width: the {n} runs agree exactly"
    return f"{what} ±{num(100 * half / abs(float(value)), 2)}%"


def spread_prose(e: stats.Estimate, unit: str = "s") -> str:
    """A median with its range in a sentence: ``6.55 s (median of 2 runs, range 5.80–7.30 s)``;
    ``9.00 s (all 3 runs)`` where the range prints as one number."""
    if e.value is None:
        return MISSING
    text = f"{num(e.value)} {unit}"
    if e.method != stats.SPREAD:
        return text + (" (1 run)" if e.method == stats.SINGLE else "")
    if num(e.low) == num(e.high):
        return f"{text} (all {e.n} runs)"
    return f"{text} (median of {e.n} runs, range {num(e.low)}–{num(e.high)} {unit})"


def estimate_text(e: stats.Estimate, fmt=num) -> str:
    """An ``stats.Estimate`` as ``with_interval`` writes it."""
    return with_interval(e.value, e.low, e.high, e.n, fmt=fmt, kind=e.method)


INTERVAL_NOTE = ("Values are means over the repeats that finished; [a, b] is the 95% confidence "
                 f"interval (Student's t for a mean; {stats.RATIO_INTERVAL}), given only where "
                 f"{stats.ENOUGH}; with {stats.RANGE_N} the range is shown and marked as such; "
                 "(1 run) marks a single run; a cell whose repeats fall into two modes shows "
                 "both, each with its n, and no pooled interval.")
PAIRED_NOTE = ("An interleaved ratio compares two precision arms run side by side in one "
               "process, alternated in rounds, so host drift hits both arms of a round alike. "
               "Where a setting ran several such processes, the ratio is the geometric mean of "
               "their per-process medians with a 95% t interval across the processes, the level "
               "a rerun varies at; where it ran one, the median of its per-round ratios with a "
               "95% block-bootstrap interval, which covers that process's rounds only and "
               "cannot see what differs between processes (allocations, library choices, "
               "clocks, the core), so a rerun can fall outside it. Each process's own ratio is "
               "in interleaved_processes.csv, each segment with its dispatch probe in "
               "interleaved_rounds.csv; where a host-bound arm meets a GPU-bound one, the host's "
               "speed moves the ratio itself, and the claim, not the last digit, is what "
               "carries over.")
WARMUP_NOTE = ("Warm-up (first fast step: the time to the end of the warm-up steps, with "
               "autotuning and compilation) is the median of the runs with their range, "
               "median (min–max), never a mean's interval: it is skewed and positive. Runs "
               "whose torch.compile cache missed (they compiled afresh) are summarised apart, "
               "under 'cache miss'.")


def pct(v) -> str:
    """A share as a percentage with two decimals (accuracy)."""
    return f"{100 * float(v):.2f}%"


def points(v) -> str:
    """A difference of shares in signed percentage points (accuracy against fp32)."""
    return f"{100 * float(v):+.2f}"


def modes_text(row, fmt=num, stem: str | None = None) -> str:
    """A cell's two modes (``stats.modes``, summary.csv's ``slow_mode``/``fast_mode``): "two
    modes: 355,000 (n = 3) and 567,000 (n = 4)"; of a ratio where ``stem`` names it."""
    pre = f"{stem}_" if stem else ""
    slow, fast = row.get(f"{pre}slow_mode"), row.get(f"{pre}fast_mode")
    if missing(slow) or missing(fast):
        return MISSING
    return (f"two modes: {fmt(slow)} (n = {int(row['slow_mode_n'])}) and {fmt(fast)} "
            f"(n = {int(row['fast_mode_n'])})")


def share(v, decimals: int = 0) -> str:
    """A share of wall time (GPU busy) as a percentage; one above 100% says so, since the
    figure is the profile's kernel time per step over the timed step, not a clipped share."""
    if missing(v):
        return MISSING
    text = percent(v, decimals)
    return text if float(v) <= 1.0 else \
        f"{text} (above 100%: the profile's kernel time per step exceeds the timed step)"


def n_text(n) -> str:
    n = 0 if missing(n) else int(n)
    return "1 run" if n == 1 else f"n = {n}"


# ------------------------------------------------------------------------------- warm-up
WARMUP_HEAD = "first fast step, median (min–max) (s)"
WARMUP_MISS_HEAD = "first fast step, cache miss, median (min–max) (s)"


def warmup_text(r, column: str = V.WARMUP) -> str:
    """A cell's warm-up as summary.csv pooled it (``stats.warmup``): median and range."""
    return estimate_text(stats.from_row(r, column))


def has_misses(rows: pd.DataFrame) -> bool:
    """Whether any run of these cells missed its compile cache (a column of its own)."""
    n = pd.to_numeric(rows.get(f"{V.WARMUP_MISS}_n"), errors="coerce")
    return n is not None and bool((n > 0).any())

