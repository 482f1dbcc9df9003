"""Interleaved ratios at the level they vary (the module doc of ``tcbench.stats`` says how):
the rounds of one process (``process_ratio``, ``paired_ratio``), independent processes of
the same setting (``replicated_ratio``), and runs of the whole study on other machines or days
(``across_runs``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .core import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, EMPTY, MIN_CI_N, PAIRED,
                   PREDICTION, RANGE, REPLICATED, RUNS, SINGLE, Estimate, _t, finite)

# which level of a replicated comparison varies more (``Replicated.dominant``)
PROCESSES, ROUNDS = "processes", "rounds"
# resampled rounds held in memory at once: a comparison may have up to 10,000 rounds
_CHUNK_VALUES = 2_000_000


def lag1(values: Iterable) -> float | None:
    """The lag-1 autocorrelation of a series (about its own mean); None for fewer than three
    values or a constant series."""
    x = np.asarray(list(values), dtype=float)
    if len(x) < 3:
        return None
    d = x - x.mean()
    denom = float(d @ d)
    return float(d[:-1] @ d[1:] / denom) if denom > 0 else None


def block_length(n: int, rho: float | None) -> int:
    """The moving-block bootstrap's block length for ``n`` rounds whose lag-1 autocorrelation
    is ``rho``: the AR(1) plug-in rule b = n^(1/3) · (2ρ / (1 − ρ²))^(2/3) (Carlstein 1986),
    rounded, at least 1 and at most n // 2. ρ ≤ 0 (or unknown) gives 1, the plain bootstrap of
    independent rounds; ρ ≥ 1 gives n // 2."""
    most = max(1, n // 2)
    if rho is None or not math.isfinite(rho) or rho <= 0:
        return 1
    if rho >= 1:
        return most
    b = n ** (1 / 3) * (2 * rho / (1 - rho * rho)) ** (2 / 3)
    return int(min(most, max(1, round(b))))


def _block_medians(r: np.ndarray, b: int, rng) -> np.ndarray:
    """The medians of ``BOOTSTRAP_RESAMPLES`` moving-block resamples of ``r``: blocks of ``b``
    consecutive rounds, their starts drawn uniformly, laid end to end and cut to len(r)."""
    n = len(r)
    blocks = -(-n // b)
    offsets = np.arange(b)
    per = max(1, _CHUNK_VALUES // (blocks * b))
    out = []
    for done in range(0, BOOTSTRAP_RESAMPLES, per):
        k = min(per, BOOTSTRAP_RESAMPLES - done)
        starts = rng.integers(0, n - b + 1, size=(k, blocks))
        idx = (starts[:, :, None] + offsets).reshape(k, blocks * b)[:, :n]
        out.append(np.median(r[idx], axis=1))
    return np.concatenate(out)


@dataclass(frozen=True)
class Process:
    """One process's paired ratio: ``estimate`` (the median of its per-round ratios with its
    block-bootstrap interval), the block length and the lag-1 autocorrelation of its per-round
    log ratios that chose it (None below ``MIN_CI_N`` rounds), and its rounds with both arms."""

    estimate: Estimate
    block: int | None
    lag1: float | None
    rounds: int


def _per_round(numerator: Iterable, denominator: Iterable) -> np.ndarray:
    a, b = np.asarray(list(numerator), dtype=float), np.asarray(list(denominator), dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired_ratio: {len(a)} and {len(b)} values do not pair")
    keep = np.isfinite(a) & np.isfinite(b) & (b > 0) & (a > 0)
    return a[keep] / b[keep]


def process_ratio(numerator: Iterable, denominator: Iterable) -> Process:
    """The median of the per-round ratios ``numerator[i] / denominator[i]`` (two arms of one
    interleaved comparison process, round by round, in round order) with a 95% percentile
    moving-block bootstrap interval of that median (``BOOTSTRAP_RESAMPLES``, a fixed seed;
    ``block_length`` from the rounds' lag-1 autocorrelation, so drift that carries from round
    to round is resampled whole); ``n`` is the number of rounds with both values. Fewer than
    ``MIN_CI_N`` rounds give the range of the ratios (or a single ratio), labelled as such."""
    r = _per_round(numerator, denominator)
    n = len(r)
    if n == 0:
        return Process(EMPTY, None, None, 0)
    mid = float(np.median(r))
    if n == 1:
        return Process(Estimate(mid, None, None, 1, SINGLE), None, None, 1)
    if n < MIN_CI_N:
        return Process(Estimate(mid, float(r.min()), float(r.max()), n, RANGE), None, None, n)
    rho = lag1(np.log(r))
    b = block_length(n, rho)
    if float(r.min()) == float(r.max()):
        return Process(Estimate(mid, mid, mid, n, PAIRED), b, rho, n)
    meds = _block_medians(r, b, np.random.default_rng(BOOTSTRAP_SEED))
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(meds, [tail, 1 - tail])
    return Process(Estimate(mid, float(low), float(high), n, PAIRED), b, rho, n)


def paired_ratio(numerator: Iterable, denominator: Iterable) -> Estimate:
    """``process_ratio``'s estimate: one process's rounds, 95% block-bootstrap CI."""
    return process_ratio(numerator, denominator).estimate


@dataclass(frozen=True)
class Replicated:
    """A setting's ratio over its processes: ``estimate`` (see ``replicated_ratio``), the
    standard deviation of the processes' log medians (``between_sd``, two or more processes)
    and the root mean within-process variance of a log median their own intervals imply
    (``within_sd``), and which of the two is larger (``dominant``: ``PROCESSES`` or
    ``ROUNDS``; None where either is unknown)."""

    estimate: Estimate
    processes: int
    between_sd: float | None = None
    within_sd: float | None = None

    @property
    def dominant(self) -> str | None:
        if self.between_sd is None or self.within_sd is None:
            return None
        return PROCESSES if self.between_sd > self.within_sd else ROUNDS


def _within_variance(e: Estimate) -> float | None:
    """The variance of a process's log median its 95% interval implies (normal quantiles)."""
    if e.method != PAIRED or e.low is None or e.low <= 0 or e.high <= 0:
        return None
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + CONFIDENCE / 2))
    return ((math.log(e.high) - math.log(e.low)) / (2 * z)) ** 2


def replicated_ratio(processes: Sequence[Estimate]) -> Replicated:
    """A ratio over k independent processes of one setting, each ``processes[i]`` its own
    ``paired_ratio`` (those without a value are left out; k counts the rest): the geometric
    mean of their medians, with, for k >= ``MIN_CI_N``, a 95% t interval on the log medians
    (k − 1 degrees of freedom, ``REPLICATED``, n = k): the level a rerun varies at. k = 2: the
    range of the two medians (``RANGE``, no claim); k = 1: that process's own interval,
    labelled as one process's rounds (``PAIRED``). The processes' spread against their own
    intervals says which level dominates (``Replicated.dominant``)."""
    given = [e for e in processes if e.value is not None and e.value > 0]
    k = len(given)
    if k == 0:
        return Replicated(EMPTY, 0)
    logs = np.log([e.value for e in given])
    within = [v for v in map(_within_variance, given) if v is not None]
    within_sd = math.sqrt(float(np.mean(within))) if within else None
    if k == 1:
        return Replicated(given[0], 1, None, within_sd)
    sd = float(logs.std(ddof=1))
    g = float(math.exp(logs.mean()))
    if k < MIN_CI_N:
        e = Estimate(g, float(math.exp(logs.min())), float(math.exp(logs.max())), k, RANGE)
        return Replicated(e, k, sd, within_sd)
    half = _t(k - 1) * sd / math.sqrt(k)
    e = Estimate(g, g * math.exp(-half), g * math.exp(half), k, REPLICATED)
    return Replicated(e, k, sd, within_sd)


def replicated_paired(pairs: Iterable[tuple[Iterable, Iterable]]) -> tuple[Replicated,
                                                                          list[Process]]:
    """``replicated_ratio`` of the processes whose per-round throughputs ``pairs`` holds (one
    (numerator, denominator) pair a process), with each process's own ``process_ratio``."""
    each = [process_ratio(a, b) for a, b in pairs]
    return replicated_ratio([p.estimate for p in each]), each


def level_text(processes, rounds) -> str:
    """How an interleaved ratio was decided, with the level its interval covers: "interleaved,
    3 processes × 20 rounds", or for one process its rounds and what its interval cannot see.
    ``processes`` None (a table made before replicates) is one process; ``rounds`` is each
    process's."""
    k = int(finite(processes) or 1)
    r = int(finite(rounds) or 0)
    if k > 1:
        return f"interleaved, {k} processes × {r} rounds" if r else \
            f"interleaved, {k} processes"
    return ("interleaved in one process" + (f", {r} rounds" if r else "")
            + ": its interval cannot see differences between processes")


def across_runs(values: Iterable, predict: bool = False) -> Estimate:
    """One quantity (a throughput or a ratio: positive, compared as a ratio) over n runs of a
    study, each run's own estimate in ``values``: the geometric mean, and for n >= ``MIN_CI_N``
    the 95% t interval on the log scale with n − 1 degrees of freedom: of the mean across runs
    (``RUNS``, what a claim about this GPU model rests on), or, ``predict``, for one more run,
    t·s·√(1 + 1/n) (``PREDICTION``, what a rerun on another machine is checked against: a
    mean's interval shrinks with n, one machine's value does not). n = 2: the range; n = 1:
    that run alone."""
    x = [v for v in (finite(v) for v in values) if v is not None and v > 0]
    n = len(x)
    if n == 0:
        return EMPTY
    logs = np.log(x)
    g = float(math.exp(logs.mean()))
    if n == 1:
        return Estimate(g, None, None, 1, SINGLE)
    if n < MIN_CI_N:
        return Estimate(g, float(min(x)), float(max(x)), n, RANGE)
    scale = math.sqrt(1 + 1 / n) if predict else 1 / math.sqrt(n)
    half = _t(n - 1) * float(logs.std(ddof=1)) * scale
    return Estimate(g, g * math.exp(-half), g * math.exp(half), n, PREDICTION if predict else RUNS)
