"""The interleaved comparison (tcbench.job.interleave): every precision arm of one setting in one
process, alternated in rounds; its ratios come from its own per-round numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tcbench.job import interleave
from tcbench.launch import matrix
from tcbench import record as R, stats
from tcbench.analysis import interleaved
from tcbench.vocabulary import ConfigError

TINY = {"workload": "amp_recipe", "batch_size": 16, "device": "cpu",
        "precisions": ["fp32", "amp-bf16", "tf32"],
        "params": {"in_size": 32, "out_size": 32, "num_batches": 3, "epochs": 1,
                   "warmup_steps": 1},
        "interleave": {"rounds": 4, "segment_s": 0.005}}


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    record = interleave.compare(json.loads(json.dumps(TINY)))
    path = tmp_path_factory.mktemp("il") / "bs16.json"
    R.write(record, path, R.INTERLEAVED)     # schema-valid, as the job writes it
    return R.read(path, R.INTERLEAVED) | {"_path": str(path)}


def test_the_arms_alternate_in_rotated_rounds_and_an_unsupported_arm_says_why(compared):
    arms = {a["precision"]: a for a in compared["arms"]}
    assert arms["tf32"]["status"] == "unsupported" and "CPU" in arms["tf32"]["status_reason"]
    assert arms["fp32"]["status"] == arms["amp-bf16"]["status"] == "ok"
    orders = [[s["precision"] for s in r["segments"]] for r in compared["rounds"]]
    assert len(orders) == 4 and orders[0] == ["fp32", "amp-bf16"]
    assert orders[1] == ["amp-bf16", "fp32"] and orders[2] == orders[0]
    for r in compared["rounds"]:
        for seg in r["segments"]:
            assert seg["steps"] == arms[seg["precision"]]["steps_per_segment"]
            assert seg["samples"] == 16 * seg["steps"] and seg["seconds"] > 0
            assert seg["host_probe_ops_per_s"] > 0
    assert compared["host_state"]["probe"]["before_ops_per_s"] > 0
    assert compared["placement"]["training_core"]["chosen_by"] == "cpu-job"


def test_its_log_says_how_far_it_got(capsys):
    """Each arm's warm-up and every tenth round (and the last) are logged as they finish, so a
    comparison stopped at a time limit says where."""
    interleave.compare(json.loads(json.dumps(TINY)))
    out = capsys.readouterr().out
    assert "fp32 warmed: " in out and "amp-bf16 warmed: " in out and "tf32 warmed" not in out
    assert out.index("amp-bf16 warmed") < out.index("round 4/4") and "round 4/4 (" in out


def test_its_ratios_are_recomputed_from_its_own_per_round_numbers(compared):
    ratios = interleaved.ratios([compared])
    row = ratios[(ratios["precision"] == "amp-bf16") & (ratios["baseline"] == "fp32")].iloc[0]
    by_hand = []
    for r in compared["rounds"]:
        thr = {s["precision"]: s["samples"] / s["seconds"] for s in r["segments"]}
        by_hand.append(thr["amp-bf16"] / thr["fp32"])
    assert row["ratio"] == pytest.approx(float(np.median(by_hand)))
    assert row["ratio_n"] == 4 and row["ratio_interval"] == stats.PAIRED
    assert row["ratio_low"] <= row["ratio"] <= row["ratio_high"]
    # the interval's ends are medians of resampled rounds, so they lie within the rounds' range
    # (to the last bit: the resampling recomputes each ratio and may round the other way)
    assert row["ratio_low"] >= min(by_hand) * (1 - 1e-12)
    assert row["ratio_high"] <= max(by_hand) * (1 + 1e-12)
    # tf32 could not run: it is no baseline, and its own row says why
    assert "tf32" not in set(ratios["baseline"])
    tf32 = ratios[ratios["precision"] == "tf32"].iloc[0]
    assert tf32["status"] == "unsupported" and np.isnan(tf32["ratio"])
    rounds = interleaved.rounds([compared])
    assert len(rounds) == 8 and set(rounds["precision"]) == {"fp32", "amp-bf16"}


def test_drift_that_hits_both_arms_of_a_round_cancels_in_the_paired_ratio():
    """The host halves its speed now and then: both arms of a round slow down together, so the
    per-round ratio stays 2, while the ratio of the arms' means over separate runs does not
    know which runs met the slow host."""
    host = np.array([1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 0.5, 1.0])
    a, b = 100e3 * host, 200e3 * host
    paired = stats.paired_ratio(b, a)
    assert (paired.value, paired.low, paired.high) == (2.0, 2.0, 2.0)
    unpaired = stats.ratio(b[[0, 2, 4]], a[[1, 3, 5]])   # b met the fast host, a the slow
    assert unpaired.value == pytest.approx(4.0)
    assert stats.claim(paired) == stats.PAYS_OFF


def test_bad_settings_are_named_before_anything_runs():
    with pytest.raises(ValueError, match="rounds=2 must be within 3"):
        interleave.settings({"rounds": 2})
    with pytest.raises(ValueError, match="unknown setting"):
        interleave.settings({"round": 5})
    with pytest.raises(ValueError, match="two or more distinct"):
        interleave.parse(TINY | {"precisions": ["fp32"]})
    with pytest.raises(ValueError, match="precision"):
        interleave.parse(TINY | {"precisions": ["fp32", "fp64"]})


def test_the_matrix_makes_replicated_comparisons_per_setting_of_an_experiment_that_asks():
    from tcbench.launch import config

    cfg = config.check({"require_gpu": False, "repeats": 2, "experiments": [
        {"name": "r", "workload": "amp_recipe", "precisions": ["fp32", "amp-bf16"],
         "batch_sizes": [8, 16], "params": {"in_size": 8, "out_size": 8},
         "interleave": {"enabled": True, "rounds": 5}},
        {"name": "plain", "workload": "amp_recipe", "precisions": ["fp32", "amp-bf16"],
         "batch_sizes": [8]}]})
    jobs = matrix.expand(cfg)
    found = matrix.comparisons(cfg, jobs)
    # three independent processes a setting by default, replicate k seeded as repeat k
    assert sorted(found) == [f"r/bs{b}_r{k}" for b in (16, 8) for k in (1, 2, 3)]
    spec = found["r/bs8_r1"].spec("x")
    assert spec["precisions"] == ["fp32", "amp-bf16"] and spec["interleave"]["rounds"] == 5
    assert spec["params"]["seed"] == dict(jobs["r/fp32_bs8_r1"].params)["seed"]
    assert found["r/bs8_r2"].spec("x")["params"]["seed"] == \
        dict(jobs["r/fp32_bs8_r2"].params)["seed"]
    assert found["r/bs8_r3"].replicate == 3 and "replicates" not in spec["interleave"]
    assert found["r/bs8_r3"].path("x") == "results/x/interleaved/r/bs8_r3.json"
    assert interleave.parse(spec)["cells"][0]["repeat"] == 1
    assert interleave.parse(found["r/bs8_r3"].spec("x"))["cells"][0]["cell"].endswith("_r3")
    one = json.loads(json.dumps(cfg))
    one["experiments"][0]["interleave"]["replicates"] = 1
    assert sorted(matrix.comparisons(config.check(one), jobs)) == ["r/bs16_r1", "r/bs8_r1"]
    two = json.loads(json.dumps(cfg))
    two["experiments"][0]["interleave"]["replicates"] = 2   # neither level's interval: refused
    with pytest.raises(ConfigError, match=r"experiments\[0\] \(r\)\.interleave: replicates=2 .*use 3"):
        matrix.comparisons(config.check(two), jobs)
    bad = json.loads(json.dumps(cfg))
    bad["experiments"][0]["interleave"]["segment_s"] = 0        # the schema says it
    with pytest.raises(ConfigError, match=r"experiments\[0\] \(r\)\.interleave\.segment_s=0"):
        config.check(bad)
    bad["experiments"][0]["interleave"]["segment_s"] = 100      # the comparison's own limit
    with pytest.raises(ConfigError, match=r"experiments\[0\] \(r\)\.interleave: segment_s=100"):
        matrix.comparisons(config.check(bad), jobs)


@pytest.mark.slow  # about 10 s: builds a transformers model per arm
def test_a_transformer_interleaves_its_modes_and_an_fp8_arm_says_why_on_a_cpu(tmp_path):
    """The transformer studies ask for one comparison a model: a (one-layer) GPT-2 from its
    configuration, amp-bf16 and fp8-tensorwise arms in one process; on a CPU the FP8 arm is
    unsupported and says so, the bf16 arm still runs its rounds, and the record is valid."""
    pytest.importorskip("transformers")
    spec = {"workload": "transformers", "batch_size": 2, "device": "cpu",
            "precisions": ["amp-bf16", "fp32", "fp8-tensorwise"],
            "params": {"model": "gpt2", "seq_len": 16, "steps": 4, "warmup_steps": 1,
                       "config": {"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 128,
                                  "bos_token_id": 0, "eos_token_id": 0}},
            "interleave": {"rounds": 3, "segment_s": 0.005}}
    record = interleave.compare(spec)
    path = tmp_path / "bs2.json"
    R.write(record, path, R.INTERLEAVED)
    arms = {a["precision"]: a for a in R.read(path, R.INTERLEAVED)["arms"]}
    assert arms["amp-bf16"]["status"] == arms["fp32"]["status"] == "ok"
    assert arms["fp8-tensorwise"]["status"] == "unsupported"
    assert "CPU" in arms["fp8-tensorwise"]["status_reason"] or \
        "compute capability" in arms["fp8-tensorwise"]["status_reason"]
    assert len(record["rounds"]) == 3 and all(
        {s["precision"] for s in r["segments"]} == {"amp-bf16", "fp32"} for r in record["rounds"])
