"""Interleaved ratios at the level they vary: one process's rounds (a moving-block bootstrap of
their median) and independent processes of one setting (a t interval across their medians),
and the tables that hold both (analysis.interleaved)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tcbench.job import interleave
from tcbench import record as R
from tcbench import stats
from tcbench import vocabulary as V
from tcbench.analysis import interleaved

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "results" / "nvidia-h200"


# ------------------------------------------------------------------ the coverage of a rerun
# The comparison whose interval a rerun missed: amp_recipe's four modes in one process, 60
# rounds, on an H200 (commit 1f88b67, 2026-12-01; the committed set's record until the
# replicated protocol replaced it): each round's fp32 and tf32 throughput, samples/s.
ONE_PROCESS_ROUNDS = Path(__file__).parent / "data" / "h200_amp_recipe_rounds_one_process.csv"


def measured_drift() -> tuple[float, float]:
    """The lag-1 autocorrelation and AR(1) innovation sd of that comparison's per-round log
    ratio tf32 / fp32 (host-bound: the drift the old interval missed)."""
    thr = pd.read_csv(ONE_PROCESS_ROUNDS)
    x = np.log((thr["tf32"] / thr["fp32"]).to_numpy())
    rho = stats.lag1(x)
    d = x - x.mean()
    return rho, float(np.std(d[1:] - rho * d[:-1], ddof=1))


# Between-process offsets: host-bound ratios moved 10-15% between reruns on other days (the
# GPU-bound ones 0.1-0.5%). The drift above is a host-bound comparison's, so the offsets are
# the host-bound ones: the middle of that range, 12.5%, taken as the mean absolute difference
# of two processes' log ratios, each offset N(0, sd²): E|d| = 2 sd / sqrt(pi).
RERUN_SHIFT = 0.125
OFFSET_SD = RERUN_SHIFT * math.sqrt(math.pi) / 2
TRUE_RATIO = 3.0
TRIALS = 400


def ar1(rng, n: int, rho: float, innovation: float) -> np.ndarray:
    """A stationary AR(1) series of ``n`` steps."""
    x = np.empty(n)
    x[0] = rng.normal(0, innovation / math.sqrt(1 - rho * rho))
    for t in range(1, n):
        x[t] = rho * x[t - 1] + rng.normal(0, innovation)
    return x


def process(rng, rounds: int, rho: float, innovation: float) -> np.ndarray:
    """One process's per-round ratios: the planted ratio, the process's own offset, drift."""
    return TRUE_RATIO * np.exp(rng.normal(0, OFFSET_SD) + ar1(rng, rounds, rho, innovation))


def iid_interval(rng, r: np.ndarray, resamples: int = 2_000) -> tuple[float, float]:
    """The interval tcbench gave before: a percentile bootstrap of the median that resamples
    rounds as if they were independent."""
    meds = np.median(r[rng.integers(0, len(r), (resamples, len(r)))], axis=1)
    return tuple(np.quantile(meds, [0.025, 0.975]))


def test_three_processes_cover_a_rerun_where_one_process_rounds_did_not():
    """A planted ratio under the measured drift (AR(1) rounds) and between-process offsets:
    the old interval of one process's 60 rounds (iid bootstrap) covers it in under 60% of
    trials, the interval across three processes of 20 rounds (t on their log medians) in at
    least 90%."""
    rho, innovation = measured_drift()
    assert 0.5 < rho < 0.8                  # the drift the rerun exposed (lag-1 about 0.67)
    rng = np.random.default_rng(2013)
    old = new = 0
    for _ in range(TRIALS):
        lo, hi = iid_interval(rng, process(rng, 60, rho, innovation))
        old += lo <= TRUE_RATIO <= hi
        pairs = [(process(rng, 20, rho, innovation), np.ones(20)) for _ in range(3)]
        e = stats.replicated_paired(pairs)[0].estimate
        assert e.method == stats.REPLICATED and e.n == 3
        new += e.low <= TRUE_RATIO <= e.high
    assert old / TRIALS < 0.60, old / TRIALS
    assert new / TRIALS >= 0.90, new / TRIALS


# ---------------------------------------------------------------------- one process's rounds
def test_the_block_length_follows_the_ar1_rule_within_its_bounds():
    # 60^(1/3) = 3.915 and (1.34 / 0.5511)^(2/3) = 1.807: 7.07; 20^(1/3) = 2.714: 4.91
    assert stats.block_length(60, 0.67) == 7
    assert stats.block_length(20, 0.67) == 5
    assert stats.block_length(60, 0.0) == stats.block_length(60, -0.4) == 1
    assert stats.block_length(60, None) == stats.block_length(60, float("nan")) == 1
    assert stats.block_length(20, 0.99) == stats.block_length(20, 1.0) == 10   # at most n/2
    assert stats.block_length(4, 0.05) == 1                                     # at least 1


def test_lag1_reads_an_ar1_series_and_refuses_too_few_rounds():
    x = ar1(np.random.default_rng(0), 4000, 0.6, 1.0)
    assert stats.lag1(x) == pytest.approx(0.6, abs=0.05)
    assert stats.lag1([1.0, 2.0]) is None and stats.lag1([3.0] * 5) is None


def test_drift_carried_from_round_to_round_widens_one_process_interval():
    """The same per-round ratios, drifting (sorted: each round like the last) or alternating
    (low, high, low...: each round unlike the last): the same median, but only the drifting
    order gets long blocks and a wider interval."""
    rng = np.random.default_rng(1)
    r = np.sort(np.exp(rng.normal(1.0, 0.2, 40)))
    drifting = stats.process_ratio(r, np.ones(40))
    alternating = stats.process_ratio(np.column_stack([r[:20], r[::-1][:20]]).ravel(),
                                      np.ones(40))
    assert drifting.estimate.value == alternating.estimate.value == float(np.median(r))
    assert drifting.block > 1 and drifting.lag1 > 0.8
    assert alternating.lag1 < 0 and alternating.block == 1
    width = lambda p: p.estimate.high - p.estimate.low  # noqa: E731
    assert width(drifting) > 1.5 * width(alternating)
    assert drifting.estimate.method == stats.PAIRED
    assert drifting.estimate.label == "interleaved, one process's rounds, 95% block-bootstrap CI"
    assert stats.paired_ratio(r, np.ones(40)) == drifting.estimate     # the same, fixed seed


# -------------------------------------------------------------------------- across processes
def one(value: float, low: float, high: float, rounds: int = 20) -> stats.Estimate:
    return stats.Estimate(value, low, high, rounds, stats.PAIRED)


def test_three_processes_give_the_geometric_mean_and_a_t_interval_on_the_logs():
    """Medians 2/e, 2, 2e: log medians ln 2 + (-1, 0, 1), mean ln 2, sd 1; the t table's
    97.5% point at 2 degrees of freedom is 4.3027, so the half-width is 4.3027 / sqrt(3)."""
    rep = stats.replicated_ratio([one(m, 0.99 * m, 1.01 * m)
                                  for m in (2 / math.e, 2.0, 2 * math.e)])
    e = rep.estimate
    half = 4.302653 / math.sqrt(3)
    assert e.value == pytest.approx(2.0)
    assert (e.low, e.high) == pytest.approx((2 * math.exp(-half), 2 * math.exp(half)))
    assert (e.n, e.method, rep.processes) == (3, stats.REPLICATED, 3)
    assert e.label == "interleaved, 3 processes, 95% t CI across them"
    # each process's interval is ±1%: the processes spread far more than their rounds say
    assert rep.between_sd == pytest.approx(1.0)
    assert rep.within_sd < rep.between_sd and rep.dominant == stats.PROCESSES
    close = stats.replicated_ratio([one(m, m - 0.01, m + 0.01) for m in (2.0, 2.2, 2.5)])
    assert stats.clears(close.estimate, 1.0) is True
    assert stats.claim(close.estimate) == stats.PAYS_OFF


def test_processes_that_agree_within_their_own_intervals_are_dominated_by_rounds():
    rep = stats.replicated_ratio([one(m, 0.8 * m, 1.25 * m) for m in (2.0, 2.02, 2.05)])
    assert rep.dominant == stats.ROUNDS and rep.between_sd < rep.within_sd


def test_one_process_keeps_its_own_interval_and_two_give_only_a_range():
    only = one(2.0, 1.9, 2.1, rounds=60)
    rep = stats.replicated_ratio([only, stats.EMPTY])       # a process without a ratio: left out
    assert rep.estimate == only and rep.processes == 1 and rep.dominant is None
    two = stats.replicated_ratio([one(2.0, 1.9, 2.1), one(2.4, 2.3, 2.5)])
    e = two.estimate
    assert (e.method, e.n, e.low, e.high) == (stats.RANGE, 2, 2.0, 2.4)
    assert e.value == pytest.approx(math.sqrt(2.0 * 2.4))
    assert stats.claim(e) == stats.UNJUDGED == stats.FEW          # n < 3: no claim
    assert two.dominant == stats.PROCESSES
    assert stats.replicated_ratio([]).estimate == stats.EMPTY


def test_the_level_is_said_in_words():
    assert stats.level_text(3, 20) == "interleaved, 3 processes × 20 rounds"
    assert stats.level_text(None, 60) == stats.level_text(float("nan"), 60) == \
        "interleaved in one process, 60 rounds: its interval cannot see differences between " \
        "processes"


# ---------------------------------------------------------------------------------- tables
TINY = {"workload": "amp_recipe", "batch_size": 16, "device": "cpu",
        "precisions": ["fp32", "amp-bf16", "tf32"],
        "params": {"in_size": 32, "out_size": 32, "num_batches": 3, "epochs": 1,
                   "warmup_steps": 1},
        "interleave": {"rounds": 3, "segment_s": 0.005}}


@pytest.fixture(scope="module")
def base():
    """A real comparison's record (on a CPU: tf32 unsupported), the template planted below."""
    return interleave.compare(json.loads(json.dumps(TINY)))


def planted(base, folder: Path, replicate: int | None, throughputs: dict,
            statuses: dict | None = None, setting: str = "bs16", cpu: int = 3) -> dict:
    """``base`` as replicate ``replicate`` (None: a record made before replicates, no field)
    of ``setting``, its arms run at ``throughputs`` (arm -> samples/s per round), the others
    with ``statuses`` (arm -> (status, reason)); written schema-valid and read back."""
    r = copy.deepcopy(base)
    r |= {"experiment": "recipe", "setting": setting}
    if replicate is None:
        r.pop("replicate", None)
    else:
        r["replicate"] = replicate
    r["placement"]["training_core"]["cpu"] = cpu
    for arm in r["arms"]:
        ok = arm["precision"] in throughputs
        st, why = ("ok", None) if ok else statuses[arm["precision"]]
        arm |= {"status": st, "status_reason": why, "steps_per_segment": 10 if ok else None,
                "warm_step_time_s": 0.01 if ok else None}
    arms = [a for a in r["precisions"] if a in throughputs]
    n = len(next(iter(throughputs.values())))
    r["rounds"] = [{"round": i, "host_probe_ops_per_s": 1e6, "segments": [
        {"precision": a, "position": k, "steps": 10, "samples": 160,
         "seconds": 160 / throughputs[a][i]}
        for k, a in enumerate(arms[i % len(arms):] + arms[:i % len(arms)])]}
        for i in range(n)]
    path = folder / f"{setting}_r{replicate or 1}.json"
    R.write(r, path, R.INTERLEAVED)
    return interleaved.load([path])[0]


def drifting(gain: float, seed: int, rounds: int = 12) -> dict:
    """fp32, tf32 and amp-bf16 (``gain`` times fp32) on a host drifting round to round."""
    rng = np.random.default_rng(seed)
    host = 1e5 * (1 + 0.3 * rng.random(rounds))
    noise = lambda: 1 + 0.01 * rng.standard_normal(rounds)  # noqa: E731
    return {"fp32": host * noise(), "tf32": 1.5 * host * noise(),
            "amp-bf16": gain * host * noise()}


@pytest.fixture
def three(base, tmp_path):
    """Three processes of one setting, each its own ratio, and one old record of another."""
    found = [planted(base, tmp_path, k, drifting(g, k), cpu=k + 2)
             for k, g in ((1, 2.0), (2, 2.3), (3, 2.1))]
    old = planted(base, tmp_path, None, drifting(1.8, 9), setting="bs32")
    return found, old


def test_a_setting_row_is_the_ratio_across_its_processes(three):
    found, old = three
    t = interleaved.tables([*found, old])
    procs, rows = t["interleaved_processes"], t["interleaved"]
    assert list(procs.columns) == interleaved.PROCESS_COLUMNS
    assert list(rows.columns) == interleaved.RATIO_COLUMNS
    mine = procs[(procs["setting"] == "bs16") & (procs["precision"] == "amp-bf16")
                 & (procs["baseline"] == "fp32")].sort_values("replicate")
    assert list(mine["replicate"]) == [1, 2, 3] and list(mine["training_cpu"]) == [3, 4, 5]
    for (_, p), r in zip(mine.iterrows(), found):
        thr = interleaved.per_round(r)
        own = stats.process_ratio(thr["amp-bf16"], thr["fp32"])
        assert (p["ratio"], p["ratio_low"], p["ratio_high"], p["block_length"]) == \
            pytest.approx((own.estimate.value, own.estimate.low, own.estimate.high, own.block))
        assert p["rounds"] == p["ratio_n"] == 12 and p["ratio_interval"] == stats.PAIRED
    row = rows[(rows["setting"] == "bs16") & (rows["precision"] == "amp-bf16")
               & (rows["baseline"] == "fp32")].iloc[0]
    e = stats.replicated_ratio([stats.from_row(p, "ratio") for _, p in mine.iterrows()]).estimate
    assert (row["ratio"], row["ratio_low"], row["ratio_high"]) == \
        pytest.approx((e.value, e.low, e.high))
    assert (row["ratio_n"], row["ratio_interval"], row["processes"], row["rounds"]) == \
        (3, stats.REPLICATED, 3, 12)
    assert row["dominant_level"] == stats.PROCESSES      # 2.0, 2.3, 2.1 against ±1% rounds
    assert row["record"].count(";") == 2 and row["training_cpu"] == "3;4;5"
    assert len(rows[rows["setting"] == "bs16"]) == 6     # 3 arms, each against the 2 others


def test_a_record_made_before_replicates_is_one_process_with_its_own_interval(three):
    found, old = three
    t = interleaved.tables([*found, old])
    row = t["interleaved"].query("setting == 'bs32' and precision == 'amp-bf16' "
                                 "and baseline == 'fp32'").iloc[0]
    assert (row["processes"], row["ratio_interval"], row["ratio_n"]) == (1, stats.PAIRED, 12)
    assert pd.isna(row["dominant_level"])
    rounds = t["interleaved_rounds"]
    assert sorted(rounds["replicate"].unique()) == [1, 2, 3]
    assert set(rounds.loc[rounds["setting"] == "bs32", "replicate"]) == {1}


def test_a_process_whose_arm_failed_leaves_two_and_says_which(three, base, tmp_path):
    found, _ = three
    failed = planted(base, tmp_path / "x", 3, {k: v for k, v in drifting(2.1, 3).items()
                                               if k != "amp-bf16"},
                     {"amp-bf16": ("error", "RuntimeError: out of luck")})
    row = interleaved.ratios([*found[:2], failed]).query(
        "precision == 'amp-bf16' and baseline == 'fp32'").iloc[0]
    assert (row["processes"], row["ratio_interval"], row["status"]) == (2, stats.RANGE, "ok")
    assert row["status_reason"] == "process 3: error: RuntimeError: out of luck"
    assert stats.claim(stats.from_row(row, "ratio")) == stats.UNJUDGED


def test_two_records_of_one_replicate_are_refused_by_name(three, base, tmp_path):
    found, _ = three
    again = planted(base, tmp_path / "copy", 2, drifting(2.3, 2))
    with pytest.raises(R.RecordError, match=r"bs16_r2\.json and .*bs16_r2\.json are both "
                                            r"replicate 2 of recipe/bs16"):
        interleaved.ratios([*found, again])


@pytest.mark.skipif(not (COMMITTED / "interleaved").is_dir(),
                    reason="no committed H200 interleaved records")
def test_the_committed_comparisons_aggregate_at_their_highest_level(tmp_path):
    """The committed set holds both kinds: config.yaml's interleaved experiments ran three
    processes a setting, the other studies' comparisons one (made before replicates). The
    aggregate writes its three tables; a replicated setting's ratio is the t interval across its
    processes, a single process's its rounds' block-bootstrap interval, labelled so."""
    from tcbench import aggregate

    assert aggregate.main([str(COMMITTED / "records"), "--comparisons",
                           str(COMMITTED / "interleaved"), "--run", "nvidia-h200",
                           "--out", str(tmp_path)]) == 0
    rows = pd.read_csv(tmp_path / V.SET_TABLES["interleaved"])
    procs = pd.read_csv(tmp_path / V.SET_TABLES["interleaved_processes"])
    replicated = rows["experiment"].isin(["amp_recipe", "amp_recipe_graphs", "digits",
                                          "mnist_loaders"])
    assert replicated.any() and (~replicated).any()
    assert set(rows.loc[replicated, "processes"]) == {3}
    assert set(rows.loc[replicated, "ratio_interval"]) == {stats.REPLICATED}
    assert set(rows.loc[~replicated, "processes"]) == {1}
    assert set(rows.loc[~replicated, "ratio_interval"]) == {stats.PAIRED}
    assert len(procs) == 3 * replicated.sum() + (~replicated).sum()
    assert ((rows["ratio_low"] <= rows["ratio"]) & (rows["ratio"] <= rows["ratio_high"])).all()
    assert (procs["block_length"] >= 1).all() and procs["lag1_autocorrelation"].notna().all()
    assert set(pd.read_csv(tmp_path / V.SET_TABLES["interleaved_rounds"])["replicate"]) == \
        {1, 2, 3}
    sp = pd.read_csv(tmp_path / V.SET_TABLES["speedup"])
    assert set(sp["interleaved_processes"].dropna()) == {1, 3}
