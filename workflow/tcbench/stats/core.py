"""Values, intervals and ratios of repeats (the module doc of ``tcbench.stats`` says how)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

CONFIDENCE = 0.95
MIN_CI_N = 3
# how every table, figure and sentence says where an interval needs MIN_CI_N runs
FEW = f"n < {MIN_CI_N}"                 # too few runs for an interval (also a claim: UNJUDGED)
ENOUGH = f"n ≥ {MIN_CI_N}"              # enough for one
RANGE_N = "n = 2" if MIN_CI_N == 3 else f"2 ≤ n < {MIN_CI_N}"   # a range instead
MIN_CI_WORD = ("none", "one", "two", "three", "four", "five", "six")[MIN_CI_N] \
    if MIN_CI_N <= 6 else str(MIN_CI_N)

# what an interval is, by how many runs it rests on
CI, RANGE, SINGLE, NONE = "ci95", "range", "single", "none"
SPREAD = "median-range"   # a median with the min and max of the runs (``spread``)
# one interleaved process: the median of its per-round ratios, block-bootstrap 95% CI
PAIRED = "paired-bootstrap"
# k >= 3 interleaved processes: the geometric mean of their medians, 95% t CI across them
REPLICATED = "replicated-t"
# >= 3 runs of one study on other machines or days (``stats.replicates.across_runs``): the
# geometric mean of the runs' estimates with a 95% t CI across them (``RUNS``), or the 95%
# prediction interval for one more run (``PREDICTION``), the one a rerun is checked against
RUNS = "runs-t"
PREDICTION = "runs-prediction"
BIMODAL = "two-modes"     # repeats in two groups (``modes``): no pooled interval at all
CONFIDENCE_METHODS = (CI, PAIRED, REPLICATED, RUNS)   # the intervals a claim may be made from
# the intervals printed and drawn as a 95% interval: a prediction interval is one, but no claim
# about the mean rests on it
INTERVAL_METHODS = (*CONFIDENCE_METHODS, PREDICTION)
METHOD_TEXT = {CI: "95% CI", RANGE: "range", SINGLE: "single run", NONE: "no run",
               SPREAD: "median, range",
               PAIRED: "interleaved, one process's rounds, 95% block-bootstrap CI",
               REPLICATED: "interleaved, processes, 95% t CI across them",
               RUNS: "runs, 95% t CI across them",
               PREDICTION: "runs, 95% prediction interval for one more run",
               BIMODAL: "two modes, no pooled interval"}
# what a ratio's 95% interval is, in words (the module doc), for every note that states it
RATIO_INTERVAL = ("for a ratio of means r, r·exp(∓t·√(CV₁²/n₁ + CV₂²/n₂)), the delta method "
                  "on the log scale with t at Welch–Satterthwaite degrees of freedom")
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


def method(n: int) -> str:
    return CI if n >= MIN_CI_N else RANGE if n >= 2 else SINGLE if n == 1 else NONE


def _t(df: float) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + CONFIDENCE / 2, df))


def _clean(values) -> np.ndarray:
    out = []
    for v in values if values is not None else ():
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return np.asarray(out, dtype=float)


@dataclass(frozen=True)
class Estimate:
    """A value with the interval that belongs to it and the number of runs behind it."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    method: str

    @property
    def label(self) -> str:
        if self.method == REPLICATED:
            return f"interleaved, {self.n} processes, 95% t CI across them"
        if self.method in (RUNS, PREDICTION):
            return METHOD_TEXT[self.method].replace("runs", f"{self.n} runs", 1)
        return METHOD_TEXT[self.method]

    def as_dict(self, prefix: str) -> dict:
        return {prefix: self.value, f"{prefix}_low": self.low, f"{prefix}_high": self.high,
                f"{prefix}_n": self.n}


EMPTY = Estimate(None, None, None, 0, NONE)


def estimate(values: Iterable) -> Estimate:
    """Mean of ``values`` with its interval (see the module doc)."""
    x = _clean(values)
    n = len(x)
    if n == 0:
        return EMPTY
    mean = float(x.mean())
    if n == 1:
        return Estimate(mean, None, None, 1, SINGLE)
    if n == 2:
        return Estimate(mean, float(x.min()), float(x.max()), 2, RANGE)
    half = _t(n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n, CI)


def spread(values: Iterable) -> Estimate:
    """Median of ``values`` with their range (min to max): for a skewed positive quantity
    whose few runs do not make a mean's interval meaningful (warm-up). One run is a single
    run, as everywhere."""
    x = _clean(values)
    n = len(x)
    if n == 0:
        return EMPTY
    if n == 1:
        return Estimate(float(x[0]), None, None, 1, SINGLE)
    return Estimate(float(np.median(x)), float(x.min()), float(x.max()), n, SPREAD)


# the compile-cache outcomes (vocabulary.COMPILE_CACHE_OUTCOMES) that compiled graphs afresh
COLD = ("miss", "partial")


def warmup(values: Iterable, outcomes: Iterable) -> tuple[Estimate, Estimate]:
    """A cell's warm-up as two spreads: its runs whose compilation came from the cache or
    that compiled nothing (the steady cost of starting a job), and those whose compile cache
    missed (``COLD``: compiled and autotuned afresh, a one-off cost). Pooling the two would
    report a number no run had (one 46 s miss and two 6 s hits "average" 19.8 s)."""
    pairs = list(zip(values, outcomes))
    cold = [v for v, o in pairs if o in COLD]
    warm = [v for v, o in pairs if o not in COLD]
    return spread(warm), spread(cold)


def ratio(numerator: Iterable, denominator: Iterable) -> Estimate:
    """mean(numerator) / mean(denominator) with its interval; ``n`` is the smaller count."""
    a, b = _clean(numerator), _clean(denominator)
    n = min(len(a), len(b))
    if n == 0 or b.mean() == 0 or a.mean() <= 0:
        return EMPTY
    r = float(a.mean() / b.mean())
    if n == 1:
        return Estimate(r, None, None, 1, SINGLE)
    if n < MIN_CI_N:
        pairs = a[:, None] / b[None, :]
        return Estimate(r, float(pairs.min()), float(pairs.max()), n, RANGE)
    va = a.var(ddof=1) / (len(a) * a.mean() ** 2)     # var of log(mean), delta method
    vb = b.var(ddof=1) / (len(b) * b.mean() ** 2)
    se = math.sqrt(va + vb)
    if se == 0:
        return Estimate(r, r, r, n, CI)
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0) + (vb ** 2 / (len(b) - 1)
                                                                     if vb else 0))
    half = _t(df) * se
    return Estimate(r, r * math.exp(-half), r * math.exp(half), n, CI)


def every_pair(numerator: Iterable, denominator: Iterable) -> tuple[float, float] | None:
    """The smallest and largest ratio of any run of ``numerator`` to any run of
    ``denominator`` (min / max, max / min): where the largest is below 1, every run was
    slower than every run it is compared with. None without runs on both sides."""
    a, b = _clean(numerator), _clean(denominator)
    if not len(a) or not len(b) or b.min() <= 0:
        return None
    return float(a.min() / b.max()), float(a.max() / b.min())


def difference(x: Mapping | Iterable, y: Mapping | Iterable) -> Estimate:
    """mean(x) - mean(y). Mappings (seed -> value) are paired on their common keys."""
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        common = sorted(set(x) & set(y))
        d = _clean([x[k] - y[k] for k in common
                    if _clean([x[k]]).size and _clean([y[k]]).size])
        if len(d) == len(common) and len(d) >= 1:
            return estimate(d)
        x, y = list(x.values()), list(y.values())
    a, b = _clean(x), _clean(y)
    n = min(len(a), len(b))
    if n == 0:
        return EMPTY
    diff = float(a.mean() - b.mean())
    if n == 1:
        return Estimate(diff, None, None, 1, SINGLE)
    if n < MIN_CI_N:
        pairs = a[:, None] - b[None, :]
        return Estimate(diff, float(pairs.min()), float(pairs.max()), n, RANGE)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return Estimate(diff, diff, diff, n, CI)
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0) + (vb ** 2 / (len(b) - 1)
                                                                     if vb else 0))
    half = _t(df) * se
    return Estimate(diff, diff - half, diff + half, n, CI)


def clears(e: Estimate, threshold: float, above: bool = True) -> bool | None:
    """Whether a confidence interval lies wholly above (or below) ``threshold``; None when
    there is no confidence interval to decide with (fewer than three runs on a side)."""
    if e.method not in CONFIDENCE_METHODS or e.low is None:
        return None
    return e.low > threshold if above else e.high < threshold


def mean(values: Iterable) -> float | None:
    """The plain mean of the finite values (None for none): a descriptive number."""
    x = _clean(values)
    return float(x.mean()) if len(x) else None


def median(values: Iterable) -> float | None:
    x = _clean(values)
    return float(np.median(x)) if len(x) else None


def relative_range(values: Iterable) -> float:
    """(max - min) / mean of ``values``: the spread of a handful of repeats; 0 for one value."""
    x = _clean(values)
    return float((x.max() - x.min()) / x.mean()) if len(x) > 1 else 0.0


def flag(v) -> bool:
    """A yes/no column as read back from a CSV (True, or the text "True")."""
    return v is True or str(v) == "True"


def finite(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def from_row(row: Mapping, stem: str) -> Estimate:
    """The estimate a table row holds in ``stem``, ``stem_low``, ``stem_high``, ``stem_n``
    (and ``stem_interval`` where written): how a CSV's numbers become an Estimate again."""
    value = finite(row.get(stem))
    if value is None:
        return EMPTY
    n = finite(row.get(f"{stem}_n"))
    n = 0 if n is None else int(n)
    kind = row.get(f"{stem}_interval")
    kind = kind if kind in METHOD_TEXT else method(n)
    return Estimate(value, finite(row.get(f"{stem}_low")), finite(row.get(f"{stem}_high")),
                    n, kind)


def relative_halfwidth(e: Estimate) -> float | None:
    """Half the width of a 95% confidence interval over its value (None without one: a range
    or a single run has no half-width)."""
    if e.method not in CONFIDENCE_METHODS or not e.value:
        return None
    return (e.high - e.low) / 2 / abs(e.value)


# A cell's throughput is *precise* when its 95% interval's half-width is at most this share of
# its mean; the verdict names every ok cell that is not, with why (tcbench.analysis.noisy).
PRECISE_HALFWIDTH = 0.03


def cv(values: Iterable) -> float | None:
    """Coefficient of variation (sample standard deviation over the mean)."""
    x = _clean(values)
    return float(x.std(ddof=1) / x.mean()) if len(x) > 1 and x.mean() else None
