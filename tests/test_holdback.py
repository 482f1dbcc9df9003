"""What holds a fastest configuration back (best.md's second table), and a knobs study whose
fastest cell is another model preset than its plain baselines: planted records made from
committed H200 records with known throughputs, FLOPs and kernel profiles."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from tcbench import aggregate
from tcbench.analysis import speedup
from tcbench.render.table import to_markdown
from tcbench.reports import holdback
from tcbench.reports.best_table import EAGER_HEAD, best_table
from tcbench.reports.tables import write_views

H200 = Path(__file__).resolve().parents[1] / "results" / "nvidia-h200"
GPT2 = H200 / "records" / "tf_gpt2"
ROOF = 800.0                        # the planted calibration's amp-bf16 roof, TFLOP/s
FLOPS = 1.0e12                      # FLOPs per sample of every planted cell
EXP = "tf_gpt2_fastest"
# (precision, model, batch size, compile, fused optimiser, throughputs of its three repeats)
CELLS = (("fp32", "gpt2-small", 16, "off", "off", (60.0, 61.0, 59.0)),
         ("amp-bf16", "gpt2-small", 16, "off", "off", (150.0, 152.0, 148.0)),
         ("amp-bf16", "gpt2-small-v50304", 32, "default", "on", (330.0, 333.0, 327.0)))


def _record(precision, model, bs, compile_, fused, thr, repeat):
    base = "amp-bf16_bs16_compile-default"
    r = json.loads((GPT2 / f"{base}_r{1 if repeat == 1 else 2}.json").read_text())
    cell = f"{precision}_bs{bs}_{model}_compile-{compile_}_fused-{fused}"
    r |= {"experiment": EXP, "precision": precision, "batch_size": bs, "repeat": repeat,
          "cell": f"{cell}_r{repeat}", "run": "planted"}
    r["params"] |= {"model": model, "compile": compile_, "fused_optimizer": fused}
    r["model"] = copy.deepcopy(r["model"]) | {"name": model}
    r["model"]["config"] = r["model"]["config"] | {
        "vocab_size": 50304 if model.endswith("v50304") else 50257}
    r["metrics"] |= {"throughput_samples_per_s": thr,
                     "flops_per_sample": FLOPS if repeat == 1 else None,
                     "achieved_tflops": FLOPS * thr / 1e12 if repeat == 1 else None}
    return r


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("planted")
    paths = []
    for precision, model, bs, compile_, fused, thrs in CELLS:
        for repeat, thr in enumerate(thrs, 1):
            p = folder / "records" / EXP / f"{precision}_{model}_{repeat}.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(_record(precision, model, bs, compile_, fused, thr, repeat)))
            paths.append(p)
    cal = folder / "calibration.json"
    cal.write_text(json.dumps({"modes": {"amp-bf16": {"status": "ok", "tflops": ROOF},
                                         "fp32": {"status": "ok", "tflops": 50.0}}}))
    return aggregate.tables(paths, cal, run="planted")


def _fastest(t):
    b = t["best"]
    return b[(b["experiment"] == EXP) & (b["model"] == "gpt2-small-v50304")].iloc[0]


def test_a_padded_preset_is_measured_against_its_experiments_plain_cells(planted):
    r = _fastest(planted)
    assert r["baseline_experiment"] == EXP and r["baseline_model"] == "gpt2-small"
    assert int(r["baseline_batch_size"]) == 16
    assert r["gain"] == pytest.approx(np.mean(CELLS[2][5]) / np.mean(CELLS[0][5]))
    assert r["eager_bf16_gain"] == pytest.approx(np.mean(CELLS[2][5]) / np.mean(CELLS[1][5]))
    assert r["eager_bf16_gain_low"] < r["eager_bf16_gain"] < r["eager_bf16_gain_high"]
    assert "model" in r["changed_axes"].split(",") and bool(r["knobs_study"])


def test_best_md_names_the_model_change_and_the_ratio_to_plain_amp_bf16_eager(planted):
    table = best_table(planted["best"])
    assert EAGER_HEAD in table.columns
    row = next(x for x in table.rows if x[0] == f"{EXP}: gpt2-small-v50304")
    cell = dict(zip(table.columns, row))
    changed = cell["changed besides precision"]
    assert "gpt2-small → gpt2-small-v50304 (vocab_size 50257 → 50304)" in changed
    assert "bs 16 → 32" in changed and "compile off → compile default" in changed
    ratio = np.mean(CELLS[2][5]) / np.mean(CELLS[1][5])
    assert cell[EAGER_HEAD].startswith(f"{ratio:.2f}×") and "(bs 16)" in cell[EAGER_HEAD]
    # the plain cells' own row is no knobs study: nothing against amp-bf16 eager
    own = dict(zip(table.columns, next(x for x in table.rows if x[0] == f"{EXP}: gpt2-small")))
    assert own[EAGER_HEAD] == "–"


def _row(t, target):
    table = holdback.holdback_table(t["best"], {EXP: target})
    return dict(zip(table.columns, next(x for x in table.rows if x[0].split(":")[0] == EXP)))


def test_mfu_is_against_the_measured_roof_of_the_cells_mode(planted):
    r = _fastest(planted)
    mfu = np.mean([FLOPS * x / 1e12 / ROOF for x in CELLS[2][5]])
    assert r["mfu"] == pytest.approx(mfu) and r["ceiling_tflops"] == ROOF
    text = _row(planted, {"mfu": 0.45})["MFU"]
    assert text.startswith(f"{100 * mfu:.2f}%") or text.startswith(f"{100 * mfu:.1f}%")
    assert "of the measured amp-bf16 roof (800 TFLOP/s)" in text


def test_the_target_is_met_short_or_not_told_apart(planted):
    r = _fastest(planted)
    assert _row(planted, {"mfu": 0.45})["target"] == \
        f"MFU 45.0%: short by {100 * (1 - r['mfu'] / 0.45):.1f}%"
    assert _row(planted, {"mfu": 0.2})["target"] == "MFU 20.0%: met"
    assert _row(planted, {"tokens_per_s": 330.0 * 1024})["target"].endswith(
        "not told apart (its interval spans it)")
    short = 1 - np.mean(CELLS[2][5]) / 400
    assert _row(planted, {"samples_per_s": 400})["target"] == \
        f"samples/s 400: short by {100 * short:.1f}%"


def test_the_reason_is_the_profiles_shares_and_longest_kernels(planted):
    evidence = json.loads((GPT2 / "amp-bf16_bs16_compile-default_r1.json").read_text())
    tc = evidence["tensor_cores"]
    row = _row(planted, {"mfu": 0.45})
    tensor, matmul = tc["tensor_core_share"], tc["matmul_share"]
    assert f"Tensor Core {100 * tensor:.0f}%" in row["kernel time by class"]
    assert f"non-matrix {100 * (1 - matmul):.0f}%" in row["kernel time by class"]
    first = tc["top_kernels"][0]
    step = _fastest(planted)["step_time_median_s"]
    share = first["time_s"] / tc["profile_steps"] / step
    assert row["longest kernels"].startswith(
        f"`{holdback.short_name(first['name'])}` {100 * share:.1f}% of the step")
    assert "fusing" in row["what would remove them"]


def test_no_target_is_said_and_a_bad_target_is_named(planted):
    table = holdback.holdback_table(planted["best"], {})
    row = dict(zip(table.columns, table.rows[0]))
    assert row["target"] == "– (no target in the config)"
    with pytest.raises(ValueError, match="unknown key 'images_per_s'.*samples_per_s"):
        holdback.holdback_table(planted["best"], {EXP: {"images_per_s": 8000}})
    with pytest.raises(ValueError, match="mfu=-1"):
        holdback.check_targets({EXP: {"mfu": -1}})


def test_best_md_carries_the_holdback_table(planted, tmp_path):
    out = tmp_path / "best.md"
    write_views(None, planted["best"], None, out, {EXP: {"mfu": 0.45}})
    text = out.read_text()
    assert f"## {holdback.TITLE}" in text and "MFU 45.0%: short by" in text


def test_resnet50_fastest_against_its_target_from_the_committed_records():
    records = sorted((H200 / "records" / "resnet50_fastest").glob("*.json"))
    t = aggregate.tables(records, H200 / "calibration.json", run="nvidia-h200")
    r = t["best"].iloc[0]
    table = holdback.holdback_table(t["best"], {"resnet50_fastest": {"samples_per_s": 8000}})
    row = dict(zip(table.columns, table.rows[0]))
    short = 1 - r["throughput_samples_per_s"] / 8000
    assert row["target"] == f"samples/s 8,000: short by {100 * short:.1f}%"
    assert f"of the measured {r['precision']} roof" in row["MFU"]
    # a record made before Inductor's fused kernels were told apart: its shares are bounds
    assert "≥" in row["kernel time by class"] and "≤" in row["kernel time by class"]
    assert to_markdown(table).count("≤ and ≥") == 1


def test_a_model_of_another_family_gets_no_other_models_plain_baseline(planted):
    s = planted["summary"]
    cell = s[s["model"] == "gpt2-small-v50304"].iloc[0].copy()
    plain = speedup.plain_baselines(s)
    assert speedup.plain_for(plain, cell)["model"] == "gpt2-small"
    cell["model_config"] = json.dumps({"hidden_size": 1024, "intermediate_size": 2816})
    assert speedup.plain_for(plain, cell) is None
    cell["model_config"] = None      # a model that states no configuration is no variant
    assert speedup.plain_for(plain, cell) is None


def test_a_sets_targets_come_from_the_study_that_defines_each_experiment(tmp_path):
    """A set rebuilt under config/config.yaml still judges config/fastest.yaml's experiments
    against their targets; the config in force wins where both name one."""
    from tcbench.launch import config as tcconfig

    studies = sorted((Path(__file__).resolve().parents[1] / "config").glob("*.yaml"))
    plain = {"experiments": [{"name": "amp_recipe", "workload": "amp_recipe"}]}
    found = tcconfig.targets(plain, studies)
    assert found["resnet50_fastest"] == {"samples_per_s": 8000}
    assert "amp_recipe" not in found
    own = {"experiments": [{"name": "resnet50_fastest", "workload": "resnet50",
                            "target": {"samples_per_s": 9000}}]}
    assert tcconfig.targets(own, studies)["resnet50_fastest"] == {"samples_per_s": 9000}
