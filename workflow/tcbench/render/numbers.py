"""Numbers and units for readers: the one number format of every table, figure label,
verdict sentence and README line, the memory units, and a value with its interval saying what
the interval is (``tcbench.stats``)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pandas as pd

from .. import stats
from .. import vocabulary as V

MISSING = "–"

MIB, GIB = 2**20, 2**30

# the most significant digits a number prints (``num``; ``carried_place`` says why)
SIGNIFICANT = 3


def missing(v) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def num(v, digits: int = SIGNIFICANT) -> str:
    """``digits`` significant digits, thousands grouped, never scientific notation: the one
    number format of every table, figure label and verdict sentence."""
    if missing(v):
        return MISSING
    v = float(v)
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    return _fixed(v, _place(v, digits))


def _place(v: float, digits: int = SIGNIFICANT) -> int:
    """The decimal place (10**place) of ``v``'s last of ``digits`` significant digits, after
    rounding there (0.9996 -> 1.00, not 0.9996 -> 1.000)."""
    magnitude = math.floor(math.log10(abs(v)))
    place = magnitude - digits + 1
    rounded = round(v, -place)
    if rounded and math.floor(math.log10(abs(rounded))) > magnitude:
        place += 1
    return place


def _fixed(v: float, place: int, signed: bool = False) -> str:
    """``v`` rounded to 10**place (negative: decimals), thousands grouped; +0.0, never -0.0."""
    return f"{round(v, -place) + 0.0:{'+' if signed else ''},.{max(-place, 0)}f}"


def times(v, digits: int = SIGNIFICANT) -> str:
    return MISSING if missing(v) else f"{num(v, digits)}×"


def percent(v, decimals: int = 0) -> str:
    return MISSING if missing(v) else f"{100 * float(v):.{decimals}f}%"


def separated(text: str) -> str:
    """``text`` with each whole number of four or more digits written as the tables write
    batch sizes (1696 -> 1,696); decimals and numbers already separated are left alone."""
    return re.sub(r"(?<![\d.,])\d{4,}(?![\d,]|\.\d)", lambda m: f"{int(m.group()):,}", text)


def memory_unit(max_bytes) -> tuple[str, float]:
    """MiB up to 4 GiB, GiB beyond: one unit per column or axis, chosen from its largest value."""
    return ("GiB", GIB) if not missing(max_bytes) and float(max_bytes) >= 4 * GIB else ("MiB", MIB)


def memory(v, unit: str | None = None) -> str:
    """Bytes in MiB or GiB (chosen from the value unless given), with the unit."""
    if missing(v):
        return MISSING
    unit = unit or memory_unit(v)[0]
    return f"{num(float(v) / (GIB if unit == 'GiB' else MIB))} {unit}"


def interval(lo, hi, digits: int = SIGNIFICANT) -> str:
    return MISSING if missing(lo) or missing(hi) else f"[{num(lo, digits)}, {num(hi, digits)}]"


def pct(v) -> str:
    """A share as a percentage with two decimals (accuracy)."""
    return f"{100 * float(v):.2f}%"


def points(v) -> str:
    """A difference of shares in signed percentage points (accuracy against fp32)."""
    return f"{100 * float(v):+.2f}"


# ------------------------------------------------------------ a value with its interval
@dataclass(frozen=True)
class Style:
    """How the numbers of one format print beside an interval: ``scale`` (100: a share in
    percent or points), ``signed``, the ``unit`` on the value alone, and the fixed precision
    without a confidence interval: ``decimals``, else ``SIGNIFICANT`` significant digits."""
    scale: float = 1.0
    signed: bool = False
    unit: str = ""
    decimals: int | None = None

    def place(self, v: float) -> int:
        if self.decimals is not None:
            return -self.decimals
        return _place(v) if v and math.isfinite(v) else 0


# the formats a value with an interval prints in, by the function that prints it alone
STYLES = {num: Style(), times: Style(unit="×"), pct: Style(100.0, unit="%", decimals=2),
          points: Style(100.0, signed=True, decimals=2)}


def carried_place(value: float, low: float, high: float) -> int:
    """The decimal place (10**place) of the last digit a value and its confidence interval
    print, from the interval's half-width h = (high - low) / 2: the place of h's leading
    significant digit, one place finer where that digit is 1 or 2; and never finer than the
    ``SIGNIFICANT``-th (third) significant digit of the largest of the three numbers.

    The first part prints what the interval carries and no more: h is then at least 3 units
    of the last place (10 where its leading digit is 1 or 2; at its own place a rounding
    could move a bound by half of h), so rounding moves no bound by more than a sixth of h:
    4.31 [4.28, 4.34], 7,190 [7,090, 7,290], 3.6 [3.0, 3.7] for 3.56 [3.02, 3.67]. The cap
    is what carries over to another run: an interval describes the repeats of one run, and a
    rerun of the same code on the same GPU model moved GPU-bound ratios by 0.1-0.5%
    (host-bound ones by 10-15%), so a fourth digit is no evidence even where the interval is
    narrower than the third. Such an interval prints its bounds alike, and ``with_interval``
    gives its half-width relative to the value instead: 4.32× (95% CI ±0.023%), never
    4.320× [4.319, 4.321]."""
    top = max(abs(value), abs(low), abs(high))
    cap = _place(top) if top and math.isfinite(top) else 0
    half = (high - low) / 2
    if not half > 0:
        return cap
    mantissa, exponent = f"{half:.6e}".split("e")
    return max(int(exponent) - (1 if int(mantissa[0]) < 3 else 0), cap)


def _style(fmt) -> Style:
    try:
        return STYLES[fmt]
    except (KeyError, TypeError):
        raise ValueError(f"a value with an interval prints as one of "
                         f"{', '.join(f.__name__ for f in STYLES)}, not {fmt!r}: add its Style "
                         f"to render.numbers.STYLES") from None


def interval_parts(value, low, high, fmt=num, kind=stats.CI) -> tuple[str, str, str]:
    """The value and bounds as printed, the unit on the value: a confidence interval's
    (``stats.CONFIDENCE_METHODS``) all three at its ``carried_place``, a range's each at the
    format's fixed precision (``Style.place``)."""
    style = _style(fmt)
    v, lo, hi = (style.scale * float(x) for x in (value, low, high))
    if kind in stats.INTERVAL_METHODS:
        places = (carried_place(v, lo, hi),) * 3
    else:
        places = tuple(style.place(x) for x in (v, lo, hi))
    text, lo, hi = (_fixed(x, p, style.signed) for x, p in zip((v, lo, hi), places))
    return text + style.unit, lo, hi


def shown_value(value, low, high, kind, fmt=num) -> str:
    """A value alone (a bar's label) as ``with_interval`` prints it beside its interval: at
    the digits a confidence interval carries, else at the format's fixed precision."""
    if missing(value):
        return MISSING
    if kind in stats.INTERVAL_METHODS and not (missing(low) or missing(high)):
        return interval_parts(value, low, high, fmt, kind)[0]
    return fmt(value)


def interval_mark(kind) -> str:
    """The mark an interval of ``kind`` (a ``stats`` method) carries wherever it is printed:
    ``V.RUNS_MARK`` across runs on other machines, ``V.ONE_PROCESS_MARK`` from one process's
    rounds (which cannot see what differs between processes); "" for any other."""
    return {stats.RUNS: V.RUNS_MARK, stats.PAIRED: V.ONE_PROCESS_MARK}.get(kind, "")


def marked_value(e: stats.Estimate, fmt=num) -> str:
    """An estimate's value alone, in a sentence that leaves its interval out, as
    ``with_interval`` prints it: at the digits its interval carries (``shown_value``), with
    the interval's mark where it has one: "2.9×§", "1.26×¶", "0.97×"."""
    if e.value is None:
        return MISSING
    carried = e.method in stats.INTERVAL_METHODS and not (missing(e.low) or missing(e.high))
    return shown_value(e.value, e.low, e.high, e.method, fmt) + \
        (interval_mark(e.method) if carried else "")


def with_interval(value, low, high, n, fmt=num, kind=None, sep: str = " ") -> str:
    """A value and its interval, saying what the interval is: ``5,730 [5,700, 5,760]`` (95% CI,
    n >= 3), ``5,730 (range 5,700–5,760)`` (n = 2), ``5,730 (1 run)``; ``kind`` (a
    ``stats`` method) where the interval is not the one n implies: a median with its range,
    ``6.20 (5.80–7.30)``, under a head that says so. ``fmt`` is the format (``STYLES``): a
    ratio's unit sign stays on the value, ``2.79× [2.75, 2.83]``. A confidence interval sets
    the digits of all three numbers (``carried_place``); a range keeps the format's fixed
    precision. Bounds that print alike give way to the interval's relative half-width,
    ``162,000 (95% CI ±0.028%)``: never ``162,000 [162,000, 162,000]``. ``sep`` goes between
    the value and its interval (a line break in a figure's cell)."""
    if missing(value):
        return MISSING
    n = 0 if missing(n) else int(n)
    kind = kind if kind in stats.METHOD_TEXT else stats.method(n)
    ranges = (stats.RANGE, stats.SPREAD)
    mark = interval_mark(kind)
    if kind in (*stats.INTERVAL_METHODS, *ranges) and not (missing(low) or missing(high)):
        text, lo, hi = interval_parts(value, low, high, fmt, kind)
        if lo == hi:
            return f"{text}{sep}({narrow_ci(value, low, high, n, kind)}){mark}"
        if kind in stats.INTERVAL_METHODS:
            return f"{text}{sep}[{lo}, {hi}]{mark}"
        return f"{text}{sep}(range {lo}–{hi})" if kind == stats.RANGE else \
            f"{text}{sep}({lo}–{hi})"      # a median: the column head says "median (min–max)"
    if kind == stats.SINGLE:
        return f"{fmt(value)} (1 run)"
    return fmt(value)


def narrow_ci(value, low, high, n, kind=stats.CI) -> str:
    """An interval whose bounds print alike: its half-width relative to the value, or that the
    runs were identical (zero width)."""
    what = "95% CI" if kind in stats.CONFIDENCE_METHODS else \
        "95% prediction interval" if kind == stats.PREDICTION else "range"
    half = (float(high) - float(low)) / 2
    if half <= 0:
        return f"{what} of zero width: the {n} runs agree exactly"
    if not float(value):
        return f"{what} narrower than the last digit shown"
    return f"{what} ±{num(100 * half / abs(float(value)), 2)}%"


# a value and its bracketed interval as printed: "4.320× [4.319, 4.321]", "96.9% [95.8, 97.9]"
_NUMBER = r"[-+]?\d[\d,]*(?:\.\d+)?"
_BRACKETED = re.compile(rf"(?<![\w.,])({_NUMBER})(?:×|%)? \[({_NUMBER}), ({_NUMBER})\]")


def _digits(text: str) -> tuple[int, int]:
    """A printed number's significant digits and the place of its last one (trailing zeros
    of a whole number are not significant: 7,190 has three, its last at the tens)."""
    body = text.lstrip("+-").replace(",", "")
    if "." in body:
        whole, frac = body.split(".")
        return len((whole + frac).lstrip("0")), -len(frac)
    digits = body.strip("0")
    return len(digits), len(body.lstrip("0")) - len(digits)


def overstated(text: str) -> list[str]:
    """The intervals in ``text`` printed with more digits than carry over: a value of four or
    more significant digits whose bounds differ from it only in that last digit (by less
    than ten units of its place), "4.320× [4.319, 4.321]", "1,023 [1,022, 1,025]". What
    ``with_interval`` writes has none (``carried_place``'s cap)."""
    found = []
    for m in _BRACKETED.finditer(text):
        digits, place = _digits(m.group(1))
        value, low, high = (float(g.replace(",", "")) for g in m.groups())
        if digits >= 4 and max(abs(low - value), abs(high - value)) < 10 * 10.0 ** place:
            found.append(m.group(0))
    return found


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


DIGITS_NOTE = ("A value and its interval print no more digits than the interval carries, and "
               f"never more than {SIGNIFICANT} significant: an interval narrower than the last "
               "digit shown is given as its half-width relative to the value (±%).")
INTERVAL_NOTE = ("Values are means over the repeats that finished; [a, b] is the 95% confidence "
                 f"interval (Student's t for a mean; {stats.RATIO_INTERVAL}), given only where "
                 f"{stats.ENOUGH}; with {stats.RANGE_N} the range is shown and marked as such; "
                 "(1 run) marks a single run; a cell whose repeats fall into two modes shows "
                 "both, each with its n, and no pooled interval. " + DIGITS_NOTE)
def runs_note(runs) -> str:
    """The footnote of ``V.RUNS_MARK``: what an interval across runs is, over how many runs
    (``runs``: the n of each such interval shown)."""
    ns = sorted({int(n) for n in runs})
    over = str(ns[0]) if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
    # short enough for a README line: what it is; docs/measurement.md says why
    return (f"{V.RUNS_MARK} 95% t interval over {over} runs on different machines: the geometric "
            "mean of each run's own judged interleaved ratio, t on their logarithms; the claim "
            "is made from it.")


ONE_PROCESS_WHAT = "95% block-bootstrap interval over one process's rounds"


def one_process_note(evidence: str = "") -> str:
    """The footnote of ``V.ONE_PROCESS_MARK``; ``evidence``: how often such an interval held
    the mean of a higher level where the study measured one (``analysis.runs.Coverage``)."""
    return (f"{V.ONE_PROCESS_MARK} {ONE_PROCESS_WHAT}: it cannot see what differs between processes (allocations, library choices, clocks, "
            "the core), so a rerun can fall outside it; the claim is made from it all the same."
            + (f" {evidence}" if evidence else ""))


PAIRED_NOTE = ("An interleaved ratio compares two precision arms run side by side in one "
               "process, alternated in rounds, so host drift hits both arms of a round alike. "
               "Where a setting ran several such processes, the ratio is the geometric mean of "
               "their per-process medians with a 95% t interval across the processes, the level "
               "a rerun varies at; where it ran one, the median of its per-round ratios with a "
               "95% block-bootstrap interval over that process's rounds only, which a rerun "
               "can fall outside. Each process's own ratio is "
               "in interleaved_processes.csv, each segment with its dispatch probe in "
               "interleaved_rounds.csv; where a host-bound arm meets a GPU-bound one, the host's "
               "speed moves the ratio itself, and the claim, not the last digit, is what "
               "carries over.")
WARMUP_NOTE = ("Warm-up (first fast step: the time to the end of the warm-up steps, with "
               "autotuning and compilation, and a CUDA graph's capture where the step is one) "
               "is the median of the runs with their range, "
               "median (min–max), never a mean's interval: it is skewed and positive. Runs "
               "whose torch.compile cache missed (they compiled afresh) are summarised apart, "
               "under 'cache miss'.")


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

