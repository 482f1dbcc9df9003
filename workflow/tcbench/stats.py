"""The one statistics core: every number a report prints about repeats comes from here.

Aggregate, tables, figures, the verdict and the cross-GPU comparison all call these functions
with their own grouping keys, so a cell's value, its interval and what the interval *is* are
computed once, the same way everywhere.

The rules (a reviewer's, not a convenience):

* A cell's value is the **mean** of its finished repeats (status ok); ``n`` is how many.
* Its interval is a **95% confidence interval of the mean (Student's t)** only where n >= 3;
  with n = 2 it is the **range** (min to max), labelled as such; one run has no interval and
  is marked as a single run.
* A **ratio** of two cells (a speedup) is the ratio of their means; its 95% interval, where both
  have n >= 3, comes from Welch's t on the log scale with the delta method (the standard error
  of log(mean) is s / (sqrt(n) * mean)), so it is asymmetric like the ratio itself. With fewer
  repeats the interval is the range of the ratios of any two runs, labelled as a range.
* A **difference** of two cells (accuracy against fp32) pairs the runs by seed where the seeds
  match (repeat r of every precision trains from the same seed) and takes the t interval of
  the mean paired difference; unpaired, Welch's t interval of the difference of means.
* A claim (``clears``) holds only when a confidence interval (not a range, not a single run)
  lies wholly beyond its threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

CONFIDENCE = 0.95
MIN_CI_N = 3

# what an interval is, by how many runs it rests on
CI, RANGE, SINGLE, NONE = "ci95", "range", "single", "none"
METHOD_TEXT = {CI: "95% CI", RANGE: "range", SINGLE: "single run", NONE: "no run"}


def method(n: int) -> str:
    return CI if n >= MIN_CI_N else RANGE if n == 2 else SINGLE if n == 1 else NONE


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
    if e.method != CI or e.low is None:
        return None
    return e.low > threshold if above else e.high < threshold


def cv(values: Iterable) -> float | None:
    """Coefficient of variation (sample standard deviation over the mean)."""
    x = _clean(values)
    return float(x.std(ddof=1) / x.mean()) if len(x) > 1 and x.mean() else None
