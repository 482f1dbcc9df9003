"""The statistics core against hand-computed numbers: what each interval is, and when a claim
may be made."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from tcbench import stats as S


def test_mean_with_t_interval_from_three_runs():
    e = S.estimate([10.0, 12.0, 11.0])
    half = sps.t.ppf(0.975, 2) * np.std([10, 12, 11], ddof=1) / math.sqrt(3)
    assert (e.value, e.n, e.method) == (11.0, 3, S.CI)
    assert e.low == pytest.approx(11 - half) and e.high == pytest.approx(11 + half)
    assert e.label == "95% CI"


def test_two_runs_give_a_range_and_one_run_no_interval():
    e = S.estimate([4.0, 6.0])
    assert (e.value, e.low, e.high, e.method, e.label) == (5.0, 4.0, 6.0, S.RANGE, "range")
    one = S.estimate([7.0, None, float("nan")])
    assert (one.value, one.low, one.high, one.n, one.method) == (7.0, None, None, 1, S.SINGLE)
    assert S.estimate([]).method == S.NONE


def test_ratio_interval_is_welch_on_the_log_scale():
    a, b = np.array([200.0, 180.0, 210.0]), np.array([100.0, 90.0, 95.0])
    e = S.ratio(a, b)
    r = a.mean() / b.mean()
    va, vb = a.var(ddof=1) / (3 * a.mean() ** 2), b.var(ddof=1) / (3 * b.mean() ** 2)
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    half = sps.t.ppf(0.975, df) * math.sqrt(va + vb)
    assert e.value == pytest.approx(r)
    assert e.low == pytest.approx(r * math.exp(-half)) and e.high == pytest.approx(
        r * math.exp(half))
    assert e.low < r < e.high and e.method == S.CI


def test_ratio_with_two_runs_is_the_range_of_pairwise_ratios():
    e = S.ratio([2.0, 4.0], [1.0, 2.0])
    assert (e.low, e.high, e.method) == (1.0, 4.0, S.RANGE)
    assert e.value == pytest.approx(3.0 / 1.5)


def test_paired_difference_by_seed():
    x = {0: 0.90, 1: 0.92, 2: 0.91, 3: 0.93, 4: 0.92}
    y = {0: 0.91, 1: 0.93, 2: 0.91, 3: 0.94, 4: 0.92}
    e = S.difference(x, y)
    d = np.array([x[k] - y[k] for k in x])
    half = sps.t.ppf(0.975, 4) * d.std(ddof=1) / math.sqrt(5)
    assert e.value == pytest.approx(d.mean()) and e.n == 5
    assert e.high == pytest.approx(d.mean() + half)


def test_claims_need_a_confidence_interval():
    assert S.clears(S.ratio([2.0, 2.1, 2.2], [1.0, 1.05, 1.1]), 1.0) is True
    assert S.clears(S.ratio([1.0, 1.3, 0.8], [1.0, 1.05, 1.1]), 1.0) is False
    assert S.clears(S.ratio([3.0, 3.1], [1.0, 1.1]), 1.0) is None      # a range decides nothing
    assert S.clears(S.ratio([0.5, 0.5, 0.51], [1.0, 1.01, 1.0]), 1.0, above=False) is True


def test_identical_runs_have_a_zero_width_interval():
    e = S.estimate([2.0, 2.0, 2.0])
    assert (e.low, e.high) == (2.0, 2.0)
    assert S.ratio([2.0] * 3, [1.0] * 3).low == 2.0
