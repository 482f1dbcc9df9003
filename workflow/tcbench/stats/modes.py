"""Two modes: a gap test on a cell's sorted repeats (the module doc of ``tcbench.stats``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import numpy as np

from ..vocabulary import EQUIVALENCE_MARGIN as MARGIN
from .core import BOOTSTRAP_SEED, Estimate, _clean, estimate

# A mode needs at least this many runs: one run apart from the rest is an outlier, not a mode.
MIN_MODE_N = 2
# The gap test's level: a cell is flagged where its largest gap, over the pooled spread within
# the two groups it separates, exceeds what this share of normal samples of the same n shows.
MODES_LEVEL = 0.99
MODES_RESAMPLES = 20_000


@dataclass(frozen=True)
class Modes:
    """Two groups of a cell's repeats: the ``slow`` and the ``fast`` mode (each a mean with
    its interval and n), the gap between them over the overall mean, and the gap test's
    statistic with the critical value it exceeded."""

    slow: Estimate
    fast: Estimate
    gap: float
    statistic: float
    critical: float


def _gap_statistic(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``x`` (sorted ascending, n columns): the largest gap between neighbours over
    the pooled standard deviation within the two groups it splits, each of at least
    ``MIN_MODE_N`` runs, and the index of the split where it is largest."""
    n = x.shape[1]
    s1, s2 = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    ks = np.arange(MIN_MODE_N, n - MIN_MODE_N + 1)
    total1, total2 = s1[:, -1:], s2[:, -1:]
    left1, left2 = s1[:, ks - 1], s2[:, ks - 1]
    ss = (left2 - left1 ** 2 / ks) + ((total2 - left2) - (total1 - left1) ** 2 / (n - ks))
    sd = np.sqrt(np.clip(ss, 0, None) / (n - 2))
    gap = x[:, ks] - x[:, ks - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, gap / sd, np.where(gap > 0, np.inf, 0.0))
    return t.max(axis=1), ks[t.argmax(axis=1)]


@lru_cache(maxsize=None)
def modes_critical(n: int) -> float:
    """The gap statistic's ``MODES_LEVEL`` quantile for n normal runs (Monte Carlo, a fixed
    seed): the statistic depends on n alone, not on the mean or the spread."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    x = np.sort(rng.standard_normal((MODES_RESAMPLES, n)), axis=1)
    return float(np.quantile(_gap_statistic(x)[0], MODES_LEVEL))


def modes(values: Iterable) -> Modes | None:
    """The two modes of ``values`` where they have them, else None. The gap test: sort the
    runs; for every split into two groups of at least ``MIN_MODE_N`` runs, the gap between
    them over the pooled standard deviation within the groups; the largest such ratio flags
    the cell where it exceeds ``modes_critical(n)`` (what ``MODES_LEVEL`` of unimodal normal
    samples stay below) and the gap is at least the equivalence margin of the mean (a split
    the margin cannot tell apart is no second mode). Needs 2 * ``MIN_MODE_N`` runs."""
    x = np.sort(_clean(values))
    n = len(x)
    if n < 2 * MIN_MODE_N or x.mean() <= 0:
        return None
    t, k = _gap_statistic(x[None, :])
    t, k = float(t[0]), int(k[0])
    gap = float((x[k] - x[k - 1]) / x.mean())
    critical = modes_critical(n)
    if t <= critical or gap < MARGIN:
        return None
    return Modes(estimate(x[:k]), estimate(x[k:]), gap, t, critical)
