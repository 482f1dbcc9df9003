"""One job of every workload on the CPU, through the same entry point Snakemake calls."""

import json

import pytest

from tcbench import record as R
from tcbench import run

TINY = {
    "amp_recipe": {"in_size": 64, "out_size": 32, "num_batches": 3, "epochs": 2,
                   "warmup_steps": 1},
    "mnist_cnn": {"data": "synthetic", "loader": "synthetic", "train_samples": 96, "epochs": 2,
                  "warmup_steps": 1},
    "digits": {"epochs": 1, "warmup_steps": 1},
    "resnet50": {"image_size": 32, "num_classes": 10, "steps": 2, "warmup_steps": 1},
}


@pytest.mark.parametrize("workload", list(TINY))
@pytest.mark.parametrize("precision", ["fp32", "amp-bf16"])
def test_one_job_per_workload_writes_a_valid_record(tmp_path, workload, precision):
    out = tmp_path / "r.json"
    spec = {"workload": workload, "precision": precision, "batch_size": 32,
            "params": TINY[workload]}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    rec = R.read(out)
    assert rec["status"] == "ok", rec["status_reason"]
    m = rec["metrics"]
    assert m["total_time_s"] > 0 and m["throughput_samples_per_s"] > 0
    assert m["final_loss"] is not None and m["flops_per_step"] > 0
    assert rec["precision_flags"]["autocast_dtype"] == (None if precision == "fp32"
                                                          else "bfloat16")
    assert rec["environment"]["torch_version"] and rec["environment"]["hostname"]
    if workload == "digits":
        assert 0 <= m["test_accuracy"] <= 1
    assert not list(tmp_path.glob(".*tmp"))
    # the harness overhead, split: every phase took time, training holds the timed loop
    h = rec["harness"]
    phases = h["phases_s"]
    assert list(phases)[:5] == ["imports", "gpu_pinning", "device_and_environment", "building",
                                "counting_flops"]
    assert {"training", "measuring", "profiling", "evaluating"} <= set(phases)
    assert all(v >= 0 for v in phases.values())
    assert phases["training"] >= m["total_time_s"]
    assert h["process_start_to_main_s"] is None or h["process_start_to_main_s"] >= 0


def test_unsupported_mode_is_a_record_not_a_failure(tmp_path):
    out = tmp_path / "r.json"
    spec = {"workload": "amp_recipe", "precision": "tf32", "batch_size": 8}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    rec = R.read(out)
    assert rec["status"] == "unsupported" and "TF32" in rec["status_reason"]
    assert rec["metrics"] is None


def test_amp_fp16_records_grad_scaler_state(tmp_path):
    out = tmp_path / "r.json"
    spec = {"workload": "amp_recipe", "precision": "amp-fp16", "batch_size": 16,
            "params": TINY["amp_recipe"]}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    m = R.read(out)["metrics"]
    assert m["grad_scaler_final_scale"] == 65536.0 and m["grad_scaler_skipped_steps"] == 0


def test_seed_sync_option_and_loss_curve(tmp_path):
    out = tmp_path / "r.json"
    params = TINY["amp_recipe"] | {"sync_loss_every_step": True, "loss_every": 2}
    spec = {"workload": "amp_recipe", "precision": "fp32", "batch_size": 16, "params": params}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    rec = R.read(out)
    assert [s for s, _ in rec["metrics"]["loss_curve"]] == [0, 2, 4, 5]
    assert rec["params"]["sync_loss_every_step"] is True


@pytest.mark.parametrize("spec,culprit", [
    ({"workload": "amp_recipe", "precision": "fp32", "batch_size": 0}, "batch_size=0"),
    ({"workload": "amp_recipe", "precision": "fp64", "batch_size": 8}, "'fp64'"),
    ({"workload": "vgg", "precision": "fp32", "batch_size": 8}, "'vgg'"),
    ({"workload": "amp_recipe", "precision": "fp32", "batch_size": 8, "params": {"lrr": 1}},
     "lrr=1"),
    ({"workload": "mnist_cnn", "precision": "fp32", "batch_size": 8,
      "params": {"loader": "magic"}}, "loader='magic'"),
])
def test_bad_spec_exits_2_naming_the_culprit(tmp_path, capsys, spec, culprit):
    out = tmp_path / "r.json"
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 2
    assert culprit in capsys.readouterr().err
    assert not out.exists()


def test_missing_mnist_fails_with_where_to_put_it(tmp_path, capsys):
    out = tmp_path / "r.json"
    spec = {"workload": "mnist_cnn", "precision": "fp32", "batch_size": 8,
            "params": {"data": "mnist", "data_dir": str(tmp_path / "data")}}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "MNIST/raw" in err and "train-images-idx3-ubyte" in err
    assert not out.exists()


def test_real_mnist_layout_is_trained_and_evaluated(tmp_path):
    from test_data import small_mnist
    small_mnist(tmp_path / "data", n_train=64, n_test=32)
    out = tmp_path / "r.json"
    spec = {"workload": "mnist_cnn", "precision": "fp32", "batch_size": 16,
            "params": {"data": "mnist", "data_dir": str(tmp_path / "data"), "epochs": 1,
                       "num_workers": 1, "warmup_steps": 1}}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    rec = R.read(out)
    assert rec["data"]["data"] == "mnist" and rec["metrics"]["test_samples"] == 32
    assert rec["metrics"]["samples"] == 64
