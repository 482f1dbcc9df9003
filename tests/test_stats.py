"""The statistics core against numbers computed elsewhere: textbook t quantiles, scipy's own
t-test intervals (an independent implementation), the coverage an interval promises, and when
a claim may be made."""

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from tcbench import stats


def test_mean_interval_matches_the_textbook_t_table():
    # n = 3, mean 11, s = 1: t(0.975, 2) = 4.303 (every t table), half-width 4.303 / sqrt(3)
    e = stats.estimate([10.0, 12.0, 11.0])
    assert (e.value, e.n, e.method, e.label) == (11.0, 3, stats.CI, "95% CI")
    assert e.low == pytest.approx(11 - 2.484, abs=1e-3)
    assert e.high == pytest.approx(11 + 2.484, abs=1e-3)


def test_mean_interval_matches_scipys_one_sample_t_test():
    x = [5710.0, 5755.0, 5698.0, 5741.0, 5730.0]
    ci = sps.ttest_1samp(x, 0.0).confidence_interval(0.95)
    e = stats.estimate(x)
    assert (e.low, e.high) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_two_runs_give_a_range_and_one_run_no_interval():
    e = stats.estimate([4.0, 6.0])
    assert (e.value, e.low, e.high, e.method, e.label) == (5.0, 4.0, 6.0, stats.RANGE, "range")
    one = stats.estimate([7.0, None, float("nan"), "x"])       # what cannot be a number is no run
    assert (one.value, one.low, one.high, one.n, one.method) == (7.0, None, None, 1, stats.SINGLE)
    assert stats.estimate([]).method == stats.NONE and stats.estimate([]).value is None


def test_welch_difference_matches_scipy():
    a, b = [0.91, 0.93, 0.92, 0.95], [0.89, 0.90, 0.88]
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    e = stats.difference(a, b)
    assert e.value == pytest.approx(np.mean(a) - np.mean(b))
    assert (e.low, e.high) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_paired_difference_matches_scipys_paired_t_test():
    x = {0: 0.90, 1: 0.92, 2: 0.91, 3: 0.93, 4: 0.92}
    y = {0: 0.91, 1: 0.93, 2: 0.91, 3: 0.94, 4: 0.92}
    ci = sps.ttest_rel(list(x.values()), list(y.values())).confidence_interval(0.95)
    e = stats.difference(x, y)
    assert e.n == 5 and (e.low, e.high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    # pairing matters: the unpaired interval of the same numbers is much wider
    unpaired = stats.difference(list(x.values()), list(y.values()))
    assert unpaired.high - unpaired.low > 2 * (e.high - e.low)


def test_ratio_interval_is_symmetric_on_the_log_scale_and_contains_the_ratio():
    e = stats.ratio([200.0, 180.0, 210.0], [100.0, 90.0, 95.0])
    assert e.value == pytest.approx(590 / 285)
    assert e.low * e.high == pytest.approx(e.value ** 2)   # exp(log r -+ h)
    assert e.low < e.value < e.high and e.method == stats.CI


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
        e = stats.ratio(a, b)
        hits += e.low <= 2.0 <= e.high
    assert 0.93 <= hits / trials <= 0.97


def test_ratio_with_two_runs_is_the_range_of_pairwise_ratios():
    e = stats.ratio([2.0, 4.0], [1.0, 2.0])
    assert (e.low, e.high, e.method) == (1.0, 4.0, stats.RANGE)
    assert e.value == pytest.approx(3.0 / 1.5)
    assert stats.ratio([], [1.0]) is stats.EMPTY and stats.ratio([1.0], [0.0]) is stats.EMPTY


def test_identical_runs_have_a_zero_width_interval():
    e = stats.estimate([2.0, 2.0, 2.0])
    assert (e.low, e.high) == (2.0, 2.0)
    assert stats.ratio([2.0] * 3, [1.0] * 3).low == 2.0


def test_clears_needs_a_confidence_interval():
    assert stats.clears(stats.ratio([2.0, 2.1, 2.2], [1.0, 1.05, 1.1]), 1.0) is True
    assert stats.clears(stats.ratio([1.0, 1.3, 0.8], [1.0, 1.05, 1.1]), 1.0) is False
    assert stats.clears(stats.ratio([3.0, 3.1], [1.0, 1.1]),
                        1.0) is None      # a range decides nothing
    assert stats.clears(stats.ratio([0.5, 0.5, 0.51], [1.0, 1.01, 1.0]), 1.0, above=False) is True


@pytest.mark.parametrize("low, high, method, said", [
    (1.20, 1.80, stats.CI, stats.PAYS_OFF),
    (1.10, 1.30, stats.CI, stats.FASTER),          # on the threshold is not above it
    (1.01, 1.09, stats.CI, stats.FASTER),
    (0.98, 1.02, stats.CI, stats.EQUIVALENT),      # inside [1/1.03, 1.03]: an equivalence test
    (0.95, 1.05, stats.CI, stats.INCONCLUSIVE),    # straddles 1 but reaches beyond the margin
    (0.973, 1.50, stats.CI, stats.INCONCLUSIVE),
    (1.01, 1.02, stats.CI, stats.EQUIVALENT),
    # inside the margin, clear of 1: equivalent, faster
    (0.971, 0.981, stats.CI, stats.EQUIVALENT),    # inside the margin although below 1
    (0.85, 0.95, stats.CI, stats.SLOWER),
    (0.95, 0.99, stats.PAIRED, stats.SLOWER),
    # an interleaved comparison's interval decides too
    (1.20, 1.80, stats.RANGE, stats.UNJUDGED),     # a range, however clear, is no claim
    (None, None, stats.SINGLE, stats.UNJUDGED),
])
def test_claim_of_a_ratio(low, high, method, said):
    e = stats.Estimate(1.0 if low is None else (low + high) / 2, low, high, 3, method)
    assert stats.claim(e) == said
    e = stats.Estimate(e.value, e.low, e.high, e.n, method)
    assert stats.is_faster(said) is (None if said == stats.UNJUDGED else said in (stats.PAYS_OFF,
                                                                                  stats.FASTER))
    assert stats.is_slower(said) is (None if said == stats.UNJUDGED else said == stats.SLOWER)
    assert said in stats.CLAIM_WORDS and said in stats.CLAIM_SHORT and said in stats.CLAIMS


def test_no_ratio_no_claim_and_a_claim_read_back_from_a_csv_row():
    assert stats.claim(stats.EMPTY) == ""
    row = {"speedup": 2.78, "speedup_low": 1.78, "speedup_high": 4.36, "speedup_n": 3.0,
           "speedup_interval": "ci95"}
    assert stats.claim(stats.from_row(row, "speedup")) == stats.PAYS_OFF
    row |= {"speedup_low": float("nan"), "speedup_interval": "range"}
    assert stats.claim(stats.from_row(row, "speedup")) == stats.UNJUDGED
    assert stats.from_row({"speedup": float("nan")}, "speedup") is stats.EMPTY


def test_difference_claim():
    # the margin is +-1 point (V.ACCURACY_MARGIN_POINTS); accuracy is a share
    assert stats.difference_claim(stats.Estimate(0.0, -0.005, 0.005, 5, stats.CI)) == \
        "equivalent within ±1.0 points"
    assert stats.difference_claim(stats.Estimate(-0.02, -0.03, -0.01, 5, stats.CI)) == "a loss"
    assert stats.difference_claim(stats.Estimate(0.02, 0.01, 0.03, 5, stats.CI)) == "a gain"
    assert stats.difference_claim(stats.Estimate(0.02, 0.01, 0.03, 2,
                                                 stats.RANGE)).startswith("fewer")
    wide = stats.difference_claim(stats.Estimate(0.0, -0.0138, 0.0138, 3, stats.CI))
    assert wide.startswith("inconclusive") and "3 seeds on this test set cannot resolve" in wide
    off = stats.difference_claim(stats.Estimate(0.006, -0.001, 0.013, 5, stats.CI))
    assert off == "inconclusive: the interval reaches beyond ±1.0 points"


def test_strength_ranks_the_claim_before_the_lower_bound():
    small = stats.Estimate(1.16, 1.16, 1.17, 3, stats.CI)           # a supported small gain
    wide = stats.Estimate(1.22, 0.918, 1.63, 3, stats.CI)           # a wide large point estimate
    assert stats.strength(stats.claim(small), small) > stats.strength(stats.claim(wide), wide)
    big = stats.Estimate(2.5, 1.5, 3.5, 3, stats.CI)
    assert stats.strength(stats.claim(big), big) > stats.strength(stats.claim(small), small)
    slow = stats.Estimate(0.9, 0.85, 0.95, 3, stats.CI)
    assert stats.strength(stats.claim(slow), slow) < stats.strength(stats.UNJUDGED,
                                                                    stats.Estimate(1, None, None,
                                                                                 1, stats.SINGLE))


def test_descriptive_numbers():
    assert stats.mean([1.0, 2.0, None, 6.0]) == 3.0 and stats.mean([]) is None
    assert stats.median([5.0, 1.0, 3.0]) == 3.0
    assert stats.relative_range([90.0, 110.0]) == pytest.approx(0.2)
    assert stats.relative_range([5.0]) == 0.0
    assert stats.cv([1.0, 1.0]) == 0.0 and stats.cv([1.0]) is None
    assert math.isclose(stats.cv([9.0, 11.0]), math.sqrt(2) / 10)


def test_warmup_is_a_median_with_its_range_never_a_t_interval():
    """Three runs like the H200's resnet50 tf32 (a skewed warm-up): the t interval of their
    mean reaches below zero; the spread is the median and the runs' own min and max."""
    runs = [4.70, 5.36, 17.34]
    t = stats.estimate(runs)
    assert t.low < 0                                   # what a warm-up must never be given
    e = stats.spread(runs)
    assert (e.value, e.low, e.high, e.n, e.method) == (5.36, 4.70, 17.34, 3, stats.SPREAD)
    assert stats.spread([3.0]).method == stats.SINGLE and stats.spread([]) is stats.EMPTY
    assert stats.spread([2.0, 4.0]).value == 3.0 and stats.METHOD_TEXT[stats.SPREAD]


def test_compile_cache_misses_are_summarised_apart():
    """One miss (46.2 s) and two hits (5.8, 7.3 s): not "19.8 s" pooled, but the hits'
    median and range and the miss on its own; partial counts as compiling afresh."""
    warm, cold = stats.warmup([46.2, 5.8, 7.3], ["miss", "hit", "hit"])
    assert (warm.value, warm.low, warm.high, warm.n) == (6.55, 5.8, 7.3, 2)
    assert (cold.value, cold.n, cold.method) == (46.2, 1, stats.SINGLE)
    warm, cold = stats.warmup([1.0, 2.0, 9.0], ["uncompiled", "none", "partial"])
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
    package = Path(stats.__file__).parent
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
    e = stats.ratio(a, b)
    r = np.mean(a) / np.mean(b)
    assert (e.low, e.high) == (pytest.approx(r * math.exp(-half)), pytest.approx(r * math.exp(half)))
    logs = sps.ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(0.95)
    assert e.low != pytest.approx(math.exp(logs.low), rel=1e-3)   # another interval
    assert "delta method" in stats.RATIO_INTERVAL
    assert "Welch–Satterthwaite" in stats.RATIO_INTERVAL


def test_every_run_slower_is_said_at_two_runs():
    """fp8_digits-like: two fp32 runs, three FP8 runs, every pair of runs below 1; no interval
    (n = 2), yet the slowdown is named, not hidden as "n < 3"."""
    fp8, fp32 = [12900.0, 13300.0, 14600.0], [29600.0, 31700.0]
    e = stats.ratio(fp8, fp32)
    pairs = stats.every_pair(fp8, fp32)
    assert e.method == stats.RANGE and pairs[1] < 1
    assert pairs == (pytest.approx(12900 / 31700), pytest.approx(14600 / 29600))
    assert stats.claim(e, pairs) == stats.ALL_SLOWER
    assert stats.claim(e) == stats.UNJUDGED                       # without the pairs, no claim
    # one pair above 1 is not "every run slower"
    assert stats.claim(e, (0.4, 1.01)) == stats.UNJUDGED
    assert stats.is_slower(stats.ALL_SLOWER) is None              # not an interval's claim
    assert stats.every_pair([], [1.0]) is None


def test_an_equivalence_inside_the_margin_says_its_direction():
    slow = stats.Estimate(0.976, 0.971, 0.981, 3, stats.CI)
    assert stats.claim(slow) == stats.EQUIVALENT
    assert stats.claim_text(stats.claim(slow), slow) == "equivalent within ±3%, 2.4% slower"
    fast = stats.Estimate(1.015, 1.01, 1.02, 3, stats.CI)
    assert stats.claim_text(stats.claim(fast), fast) == "equivalent within ±3%, 1.5% faster"
    across = stats.Estimate(1.0, 0.99, 1.01, 3, stats.CI)
    assert stats.claim_text(stats.claim(across), across) == "equivalent within ±3%"
    assert stats.claim_text(stats.PAYS_OFF, stats.Estimate(2, 1.5, 2.5, 3, stats.CI)) == "pays off"


def test_a_gate_withholds_every_claim_but_every_run_slower():
    """A gated cell is its gate's "not judged", whatever its interval would have said: mnist_seed's
    amp-fp16 (0.97× [0.77, 1.23] fp32, every window unsteady) stayed "inconclusive" in the
    verdict while speedup.md's "judged by" and the speedup figure said it was not judged, and a
    cell of two repeats stayed "n < 3" beside its gate. The fact that every run was slower than
    every run of the baseline is said whatever the gate."""
    for gate in stats.GATES:
        for said in (stats.PAYS_OFF, stats.FASTER, stats.EQUIVALENT, stats.SLOWER,
                     stats.INCONCLUSIVE, stats.UNJUDGED):
            assert stats.gated(said, gate) == gate, (said, gate)
        assert stats.gated(stats.ALL_SLOWER, gate) == stats.ALL_SLOWER     # a plain fact stays
        assert stats.gated("", gate) == ""                                 # no ratio, no claim
        assert gate in stats.CLAIM_WORDS and gate in stats.CLAIM_SHORT and gate in stats.CLAIMS
        assert stats.is_faster(gate) is None and stats.is_slower(gate) is None
    for said in (stats.PAYS_OFF, stats.INCONCLUSIVE, stats.UNJUDGED):
        assert stats.gated(said, None) == said


# ------------------------------------------------------------------------------ two modes
# the recipe's tf32 cell on a drifting host: 3 slow runs, 4 fast ones, nothing in between
TWO_GROUPS = [354e3, 354e3, 356e3, 547e3, 565e3, 566e3, 591e3]


def test_two_modes_are_found_and_reported_with_their_n():
    m = stats.modes(TWO_GROUPS)
    assert m is not None
    assert (m.slow.n, m.fast.n) == (3, 4)
    assert m.slow.value == pytest.approx(np.mean(TWO_GROUPS[:3]))
    assert m.fast.value == pytest.approx(np.mean(TWO_GROUPS[3:]))
    assert m.statistic > m.critical and m.gap > stats.MARGIN
    # shuffled, with a non-number among them: the same two modes
    assert stats.modes([591e3, None, 354e3, 565e3, 356e3, 547e3, 354e3, 566e3]).slow.n == 3
    # exact ties inside each group still make two modes
    assert stats.modes([1000.0, 1000.0, 1200.0, 1200.0]) is not None


@pytest.mark.parametrize("n", range(4, 13))
def test_unimodal_samples_are_not_flagged(n):
    even = 1000 + 40 * sps.norm.ppf((np.arange(n) + 0.5) / n)   # normal quantiles
    assert stats.modes(even) is None
    rng = np.random.default_rng(n)
    assert stats.modes(rng.normal(162e3, 5e3, n)) is None
    assert stats.modes(np.linspace(300e3, 600e3, n)) is None        # wide but even: one mode


def test_the_gap_test_holds_its_level_on_normal_samples():
    rng = np.random.default_rng(7)
    flagged = sum(stats.modes(rng.normal(1000, 30, 8)) is not None for _ in range(400))
    assert flagged <= 12          # about 1% expected at MODES_LEVEL = 0.99, 3% tolerated


def test_two_modes_need_two_runs_each_and_a_gap_beyond_the_margin():
    assert stats.modes([100.0, 101.0, 150.0]) is None               # n = 3: a lone outlier
    assert stats.modes([100.0, 100.1, 100.2, 150.0]) is None        # one run apart: an outlier
    # two tight groups 0.2% apart: statistically two, practically one (inside the margin)
    assert stats.modes([162.00, 162.01, 162.30, 162.31]) is None
    assert stats.modes([5.0] * 6) is None
