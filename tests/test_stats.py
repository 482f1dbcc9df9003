"""The statistics core against numbers computed elsewhere: textbook t quantiles, scipy's own
t-test intervals (an independent implementation), the coverage an interval promises, and when
a claim may be made."""

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from tcbench import stats as S


def test_mean_interval_matches_the_textbook_t_table():
    # n = 3, mean 11, s = 1: t(0.975, 2) = 4.303 (every t table), half-width 4.303 / sqrt(3)
    e = S.estimate([10.0, 12.0, 11.0])
    assert (e.value, e.n, e.method, e.label) == (11.0, 3, S.CI, "95% CI")
    assert e.low == pytest.approx(11 - 2.484, abs=1e-3)
    assert e.high == pytest.approx(11 + 2.484, abs=1e-3)


def test_mean_interval_matches_scipys_one_sample_t_test():
    x = [5710.0, 5755.0, 5698.0, 5741.0, 5730.0]
    ci = sps.ttest_1samp(x, 0.0).confidence_interval(0.95)
    e = S.estimate(x)
    assert (e.low, e.high) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_two_runs_give_a_range_and_one_run_no_interval():
    e = S.estimate([4.0, 6.0])
    assert (e.value, e.low, e.high, e.method, e.label) == (5.0, 4.0, 6.0, S.RANGE, "range")
    one = S.estimate([7.0, None, float("nan"), "x"])       # what cannot be a number is no run
    assert (one.value, one.low, one.high, one.n, one.method) == (7.0, None, None, 1, S.SINGLE)
    assert S.estimate([]).method == S.NONE and S.estimate([]).value is None


def test_welch_difference_matches_scipy():
    a, b = [0.91, 0.93, 0.92, 0.95], [0.89, 0.90, 0.88]
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    e = S.difference(a, b)
    assert e.value == pytest.approx(np.mean(a) - np.mean(b))
    assert (e.low, e.high) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_paired_difference_matches_scipys_paired_t_test():
    x = {0: 0.90, 1: 0.92, 2: 0.91, 3: 0.93, 4: 0.92}
    y = {0: 0.91, 1: 0.93, 2: 0.91, 3: 0.94, 4: 0.92}
    ci = sps.ttest_rel(list(x.values()), list(y.values())).confidence_interval(0.95)
    e = S.difference(x, y)
    assert e.n == 5 and (e.low, e.high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    # pairing matters: the unpaired interval of the same numbers is much wider
    unpaired = S.difference(list(x.values()), list(y.values()))
    assert unpaired.high - unpaired.low > 2 * (e.high - e.low)


def test_ratio_interval_is_symmetric_on_the_log_scale_and_contains_the_ratio():
    e = S.ratio([200.0, 180.0, 210.0], [100.0, 90.0, 95.0])
    assert e.value == pytest.approx(590 / 285)
    assert e.low * e.high == pytest.approx(e.value ** 2)   # exp(log r -+ h)
    assert e.low < e.value < e.high and e.method == S.CI


def test_ratio_interval_covers_the_true_ratio_95_percent_of_the_time():
    """What a 95% interval promises, checked by simulation: throughputs with 3% noise, true
    ratio 2, five repeats a side. A z instead of a t quantile, or a forgotten mean in the
    delta method, leaves the coverage far from 95%."""
    rng = np.random.default_rng(22)
    trials = 2000
    hits = 0
    for _ in range(trials):
        a = rng.normal(2000.0, 60.0, 5)
        b = rng.normal(1000.0, 30.0, 5)
        e = S.ratio(a, b)
        hits += e.low <= 2.0 <= e.high
    assert 0.93 <= hits / trials <= 0.97


def test_ratio_with_two_runs_is_the_range_of_pairwise_ratios():
    e = S.ratio([2.0, 4.0], [1.0, 2.0])
    assert (e.low, e.high, e.method) == (1.0, 4.0, S.RANGE)
    assert e.value == pytest.approx(3.0 / 1.5)
    assert S.ratio([], [1.0]) is S.EMPTY and S.ratio([1.0], [0.0]) is S.EMPTY


def test_identical_runs_have_a_zero_width_interval():
    e = S.estimate([2.0, 2.0, 2.0])
    assert (e.low, e.high) == (2.0, 2.0)
    assert S.ratio([2.0] * 3, [1.0] * 3).low == 2.0


def test_clears_needs_a_confidence_interval():
    assert S.clears(S.ratio([2.0, 2.1, 2.2], [1.0, 1.05, 1.1]), 1.0) is True
    assert S.clears(S.ratio([1.0, 1.3, 0.8], [1.0, 1.05, 1.1]), 1.0) is False
    assert S.clears(S.ratio([3.0, 3.1], [1.0, 1.1]), 1.0) is None      # a range decides nothing
    assert S.clears(S.ratio([0.5, 0.5, 0.51], [1.0, 1.01, 1.0]), 1.0, above=False) is True


@pytest.mark.parametrize("low, high, method, said", [
    (1.20, 1.80, S.CI, S.PAYS_OFF),
    (1.10, 1.30, S.CI, S.FASTER),          # on the threshold is not above it
    (1.01, 1.09, S.CI, S.FASTER),
    (0.98, 1.02, S.CI, S.EQUIVALENT),      # inside [1/1.03, 1.03]: an equivalence test
    (0.95, 1.05, S.CI, S.INCONCLUSIVE),    # straddles 1 but reaches beyond the margin
    (0.973, 1.50, S.CI, S.INCONCLUSIVE),
    (1.01, 1.02, S.CI, S.EQUIVALENT),      # inside the margin, clear of 1: equivalent, faster
    (0.971, 0.981, S.CI, S.EQUIVALENT),    # inside the margin although below 1
    (0.85, 0.95, S.CI, S.SLOWER),
    (0.95, 0.99, S.PAIRED, S.SLOWER),      # an interleaved comparison's interval decides too
    (1.20, 1.80, S.RANGE, S.UNJUDGED),     # a range, however clear, is no claim
    (None, None, S.SINGLE, S.UNJUDGED),
])
def test_claim_of_a_ratio(low, high, method, said):
    e = S.Estimate(1.0 if low is None else (low + high) / 2, low, high, 3, method)
    assert S.claim(e) == said
    e = S.Estimate(e.value, e.low, e.high, e.n, method)
    assert S.is_faster(said) is (None if said == S.UNJUDGED else said in (S.PAYS_OFF, S.FASTER))
    assert S.is_slower(said) is (None if said == S.UNJUDGED else said == S.SLOWER)
    assert said in S.CLAIM_WORDS and said in S.CLAIM_SHORT and said in S.CLAIMS


def test_no_ratio_no_claim_and_a_claim_read_back_from_a_csv_row():
    assert S.claim(S.EMPTY) == ""
    row = {"speedup": 2.78, "speedup_low": 1.78, "speedup_high": 4.36, "speedup_n": 3.0,
           "speedup_interval": "ci95"}
    assert S.claim(S.from_row(row, "speedup")) == S.PAYS_OFF
    row |= {"speedup_low": float("nan"), "speedup_interval": "range"}
    assert S.claim(S.from_row(row, "speedup")) == S.UNJUDGED
    assert S.from_row({"speedup": float("nan")}, "speedup") is S.EMPTY


def test_difference_claim():
    # the margin is +-1 point (V.ACCURACY_MARGIN_POINTS); accuracy is a share
    assert S.difference_claim(S.Estimate(0.0, -0.005, 0.005, 5, S.CI)) == \
        "equivalent within ±1.0 points"
    assert S.difference_claim(S.Estimate(-0.02, -0.03, -0.01, 5, S.CI)) == "a loss"
    assert S.difference_claim(S.Estimate(0.02, 0.01, 0.03, 5, S.CI)) == "a gain"
    assert S.difference_claim(S.Estimate(0.02, 0.01, 0.03, 2, S.RANGE)).startswith("fewer")
    wide = S.difference_claim(S.Estimate(0.0, -0.0138, 0.0138, 3, S.CI))
    assert wide.startswith("inconclusive") and "3 seeds on this test set cannot resolve" in wide
    off = S.difference_claim(S.Estimate(0.006, -0.001, 0.013, 5, S.CI))
    assert off == "inconclusive: the interval reaches beyond ±1.0 points"


def test_strength_ranks_the_claim_before_the_lower_bound():
    small = S.Estimate(1.16, 1.16, 1.17, 3, S.CI)           # a supported small gain
    wide = S.Estimate(1.22, 0.918, 1.63, 3, S.CI)           # a wide large point estimate
    assert S.strength(S.claim(small), small) > S.strength(S.claim(wide), wide)
    big = S.Estimate(2.5, 1.5, 3.5, 3, S.CI)
    assert S.strength(S.claim(big), big) > S.strength(S.claim(small), small)
    slow = S.Estimate(0.9, 0.85, 0.95, 3, S.CI)
    assert S.strength(S.claim(slow), slow) < S.strength(S.UNJUDGED, S.Estimate(1, None, None,
                                                                                 1, S.SINGLE))


def test_descriptive_numbers():
    assert S.mean([1.0, 2.0, None, 6.0]) == 3.0 and S.mean([]) is None
    assert S.median([5.0, 1.0, 3.0]) == 3.0
    assert S.relative_range([90.0, 110.0]) == pytest.approx(0.2)
    assert S.relative_range([5.0]) == 0.0
    assert S.cv([1.0, 1.0]) == 0.0 and S.cv([1.0]) is None
    assert math.isclose(S.cv([9.0, 11.0]), math.sqrt(2) / 10)


def test_warmup_is_a_median_with_its_range_never_a_t_interval():
    """Three runs like the H200's resnet50 tf32 (a skewed warm-up): the t interval of their
    mean reaches below zero; the spread is the median and the runs' own min and max."""
    runs = [4.70, 5.36, 17.34]
    t = S.estimate(runs)
    assert t.low < 0                                   # what a warm-up must never be given
    e = S.spread(runs)
    assert (e.value, e.low, e.high, e.n, e.method) == (5.36, 4.70, 17.34, 3, S.SPREAD)
    assert S.spread([3.0]).method == S.SINGLE and S.spread([]) is S.EMPTY
    assert S.spread([2.0, 4.0]).value == 3.0 and S.METHOD_TEXT[S.SPREAD]


def test_compile_cache_misses_are_summarised_apart():
    """One miss (46.2 s) and two hits (5.8, 7.3 s): not "19.8 s" pooled, but the hits'
    median and range and the miss on its own; partial counts as compiling afresh."""
    warm, cold = S.warmup([46.2, 5.8, 7.3], ["miss", "hit", "hit"])
    assert (warm.value, warm.low, warm.high, warm.n) == (6.55, 5.8, 7.3, 2)
    assert (cold.value, cold.n, cold.method) == (46.2, 1, S.SINGLE)
    warm, cold = S.warmup([1.0, 2.0, 9.0], ["uncompiled", "none", "partial"])
    assert warm.n == 2 and cold.value == 9.0


def run_count_texts(source: str) -> list[str]:
    """Printed texts (string constants that are no docstring) that write the interval's run
    count as a number of their own ("n < 3", "n >= 3", "n ≥ 3")."""
    import ast
    import re

    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    count = re.compile(r"n\s*(<|>=|≥)\s*\d")
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs and count.search(n.value)]


def test_the_run_count_an_interval_needs_is_written_from_min_ci_n():
    assert run_count_texts('"""Where n >= 3."""\nX = "no claim (n < 3)"') == ["no claim (n < 3)"]
    package = Path(S.__file__).parent
    wrong = {str(p.relative_to(package)): found for p in sorted(package.rglob("*.py"))
             if (found := run_count_texts(p.read_text()))}
    assert wrong == {}


def test_the_ratio_interval_is_the_delta_method_on_the_log_of_the_means():
    """What RATIO_INTERVAL says: log(mean a / mean b) -+ t * sqrt(CV_a^2/n_a + CV_b^2/n_b),
    t at the Welch-Satterthwaite degrees of freedom; not Welch's test on per-run logs."""
    a, b = [450.0, 300.0, 600.0], [160.0, 162.0, 161.0]
    va = np.var(a, ddof=1) / (3 * np.mean(a) ** 2)
    vb = np.var(b, ddof=1) / (3 * np.mean(b) ** 2)
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    half = sps.t.ppf(0.975, df) * math.sqrt(va + vb)
    e = S.ratio(a, b)
    r = np.mean(a) / np.mean(b)
    assert (e.low, e.high) == (pytest.approx(r * math.exp(-half)), pytest.approx(r * math.exp(half)))
    logs = sps.ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(0.95)
    assert e.low != pytest.approx(math.exp(logs.low), rel=1e-3)   # another interval
    assert "delta method" in S.RATIO_INTERVAL and "Welch–Satterthwaite" in S.RATIO_INTERVAL


def test_every_run_slower_is_said_at_two_runs():
    """fp8_digits-like: two fp32 runs, three FP8 runs, every pair of runs below 1; no interval
    (n = 2), yet the slowdown is named, not hidden as "n < 3"."""
    fp8, fp32 = [12900.0, 13300.0, 14600.0], [29600.0, 31700.0]
    e = S.ratio(fp8, fp32)
    pairs = S.every_pair(fp8, fp32)
    assert e.method == S.RANGE and pairs[1] < 1
    assert pairs == (pytest.approx(12900 / 31700), pytest.approx(14600 / 29600))
    assert S.claim(e, pairs) == S.ALL_SLOWER
    assert S.claim(e) == S.UNJUDGED                       # without the pairs, no claim
    # one pair above 1 is not "every run slower"
    assert S.claim(e, (0.4, 1.01)) == S.UNJUDGED
    assert S.is_slower(S.ALL_SLOWER) is None              # not an interval's claim
    assert S.every_pair([], [1.0]) is None


def test_an_equivalence_inside_the_margin_says_its_direction():
    slow = S.Estimate(0.976, 0.971, 0.981, 3, S.CI)
    assert S.claim(slow) == S.EQUIVALENT
    assert S.claim_text(S.claim(slow), slow) == "equivalent within ±3%, 2.4% slower"
    fast = S.Estimate(1.015, 1.01, 1.02, 3, S.CI)
    assert S.claim_text(S.claim(fast), fast) == "equivalent within ±3%, 1.5% faster"
    across = S.Estimate(1.0, 0.99, 1.01, 3, S.CI)
    assert S.claim_text(S.claim(across), across) == "equivalent within ±3%"
    assert S.claim_text(S.PAYS_OFF, S.Estimate(2, 1.5, 2.5, 3, S.CI)) == "pays off"


def test_gates_withhold_decided_claims_only():
    for gate in S.GATES:
        assert S.gated(S.PAYS_OFF, gate) == gate and S.gated(S.SLOWER, gate) == gate
        assert S.gated(S.EQUIVALENT, gate) == gate
        assert S.gated(S.ALL_SLOWER, gate) == S.ALL_SLOWER     # a plain fact stays
        assert gate in S.CLAIM_WORDS and gate in S.CLAIM_SHORT and gate in S.CLAIMS
        assert S.is_faster(gate) is None
    assert S.gated(S.INCONCLUSIVE, S.HOST_BOUND) == S.INCONCLUSIVE
    assert S.gated(S.UNJUDGED, S.TWO_MODES) == S.TWO_MODES     # not misnamed "n < 3"
    assert S.gated(S.PAYS_OFF, None) == S.PAYS_OFF


# ------------------------------------------------------------------------------ two modes
# the recipe's tf32 cell on a drifting host: 3 slow runs, 4 fast ones, nothing in between
TWO_GROUPS = [354e3, 354e3, 356e3, 547e3, 565e3, 566e3, 591e3]


def test_two_modes_are_found_and_reported_with_their_n():
    m = S.modes(TWO_GROUPS)
    assert m is not None
    assert (m.slow.n, m.fast.n) == (3, 4)
    assert m.slow.value == pytest.approx(np.mean(TWO_GROUPS[:3]))
    assert m.fast.value == pytest.approx(np.mean(TWO_GROUPS[3:]))
    assert m.statistic > m.critical and m.gap > S.MARGIN
    # shuffled, with a non-number among them: the same two modes
    assert S.modes([591e3, None, 354e3, 565e3, 356e3, 547e3, 354e3, 566e3]).slow.n == 3
    # exact ties inside each group still make two modes
    assert S.modes([1000.0, 1000.0, 1200.0, 1200.0]) is not None


@pytest.mark.parametrize("n", range(4, 13))
def test_unimodal_samples_are_not_flagged(n):
    even = 1000 + 40 * sps.norm.ppf((np.arange(n) + 0.5) / n)   # normal quantiles
    assert S.modes(even) is None
    rng = np.random.default_rng(n)
    assert S.modes(rng.normal(162e3, 5e3, n)) is None
    assert S.modes(np.linspace(300e3, 600e3, n)) is None        # wide but even: one mode


def test_the_gap_test_holds_its_level_on_normal_samples():
    rng = np.random.default_rng(7)
    flagged = sum(S.modes(rng.normal(1000, 30, 8)) is not None for _ in range(400))
    assert flagged <= 12          # about 1% expected at MODES_LEVEL = 0.99, 3% tolerated


def test_two_modes_need_two_runs_each_and_a_gap_beyond_the_margin():
    assert S.modes([100.0, 101.0, 150.0]) is None               # n = 3: a lone outlier
    assert S.modes([100.0, 100.1, 100.2, 150.0]) is None        # one run apart: an outlier
    # two tight groups 0.2% apart: statistically two, practically one (inside the margin)
    assert S.modes([162.00, 162.01, 162.30, 162.31]) is None
    assert S.modes([5.0] * 6) is None
