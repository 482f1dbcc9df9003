"""One job of every workload on the CPU, through the same entry point Snakemake calls."""

import json

import pytest

from tcbench import record as R
from tcbench.job import run

TINY = {
    "amp_recipe": {"in_size": 64, "out_size": 32, "num_batches": 3, "epochs": 2,
                   "warmup_steps": 1},
    "mnist_cnn": {"data": "synthetic", "loader": "synthetic", "train_samples": 96, "epochs": 2,
                  "warmup_steps": 1},
    # train_samples: the first 96 images of the split, not 1,437 (bf16 on a CPU: ~20 ms each)
    "digits": {"epochs": 1, "warmup_steps": 1, "train_samples": 96},
    "resnet50": {"image_size": 32, "num_classes": 10, "steps": 2, "warmup_steps": 1},
}


# bf16 on a CPU without bf16 instructions is emulated (seconds a step): the default run has
# fp32 of every workload but ResNet-50, and amp-bf16 of the smallest
@pytest.mark.parametrize("precision,workload", [
    pytest.param(p, w, marks=[pytest.mark.slow] if w == "resnet50" or (p != "fp32" and
                                                                        w != "amp_recipe")
                 else [], id=f"{p}-{w}")
    for p in ("fp32", "amp-bf16") for w in TINY])
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
        assert rec["data"]["samples_per_epoch"] == 96 and m["steps"] == 3  # 96 / 32
    assert not list(tmp_path.glob(".*tmp"))
    # the harness overhead, split: every phase took time, training holds the timed loop
    h = rec["harness"]
    phases = h["phases_s"]
    assert list(phases)[:7] == ["imports", "gpu_pinning", "parameter_check", "cpu_placement",
                                "device_and_environment", "building", "counting_flops"]
    assert {"training", "measuring", "profiling", "evaluating"} <= set(phases)
    # steps of each kind add up; on a CPU the window asks for nothing beyond the schedule
    counts = m["step_counts"]
    assert sum(counts.values()) == m["steps"] and counts["measurement"] == 0
    assert m["timed_window"]["min_timed_s"] == 0.0 and m["timed_window"]["timed_steps"] == \
        m["steady_steps"]
    where = rec["placement"]
    assert where["cpu_placement"] == "pinned" and where["cpu_set"] and where["host"]
    assert all(v >= 0 for v in phases.values())
    assert phases["training"] >= m["total_time_s"]
    assert h["process_start_to_main_s"] is None or h["process_start_to_main_s"] >= 0
    assert h["trial_step"] == "job"   # a spec made by hand: its check is the whole check


def test_a_job_the_workflow_made_does_not_repeat_the_trial_step(tmp_path, monkeypatch):
    """The workflow tries each model's training step on the meta device when it makes the
    jobs; a job it made (--checked) skips that step, which a transformer job paid every time,
    and its record says where the step ran. The cheap checks still run in the job."""
    from tcbench.workloads import classify, custom

    tried = []
    real = classify.forward_check
    monkeypatch.setattr(classify, "forward_check",
                        lambda what, *a, **k: tried.append(what) or real(what, *a, **k))
    monkeypatch.setattr(custom, "_CHECKED", set())
    model = tmp_path / "m.py"
    model.write_text("import torch\ninput_shape = (8,)\n"
                     "def model(n):\n    return torch.nn.Linear(8, n)\n")
    spec = {"workload": "custom", "precision": "fp32", "batch_size": 4,
            "params": {"file": str(model), "num_classes": 3, "steps": 2, "warmup_steps": 1}}
    for checked, where in ((True, "workflow"), (False, "job")):
        out = tmp_path / f"{where}.json"
        assert run.main(["--spec", json.dumps(spec), "--out", str(out)]
                        + ["--checked"] * checked) == 0
        rec = R.read(out)
        assert rec["status"] == "ok", rec["status_reason"]
        assert rec["harness"]["trial_step"] == where
        assert len(tried) == (0 if checked else 1), tried
    bad = spec | {"params": spec["params"] | {"num_clases": 3}}
    out = tmp_path / "bad.json"
    assert run.main(["--spec", json.dumps(bad), "--checked", "--out", str(out)]) != 0
    assert not out.exists()


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


# ------------------------------------------------------------------ per-cell evidence, once
def tiny(repeat=1, **params):
    return {"run": "t", "experiment": "tiny", "cell": f"fp32_bs8_r{repeat}",
            "workload": "amp_recipe", "precision": "fp32", "batch_size": 8, "repeat": repeat,
            "params": {"in_size": 16, "out_size": 16, "num_batches": 4, "epochs": 1,
                       "warmup_steps": 1, "seed": 7} | params}


def test_first_repeat_carries_the_cells_evidence_the_others_name_it(monkeypatch):
    from tcbench.measure import core as measure
    from tcbench.job import profiling

    profiled = []
    monkeypatch.setattr(profiling, "profile_kernels",
                        lambda step, n, device: profiled.append(n) or {"profiled": False,
                                                                       "profile_note": "cpu"})
    counted = []
    real_count = measure.count_training_flops
    monkeypatch.setattr(measure, "count_training_flops",
                        lambda *a: counted.append(1) or real_count(*a))
    first, second = run.run_job(tiny(1)), run.run_job(tiny(2))
    assert len(profiled) == 1 and len(counted) == 1  # repeat 2 neither profiled nor counted
    R.validate(first), R.validate(second)
    assert first["tensor_cores"]["evidence_repeat"] == 1
    assert first["metrics"]["flops_per_step"] > 0 and first["metrics"]["flops_evidence_repeat"] == 1
    tc, m = second["tensor_cores"], second["metrics"]
    assert tc["profiled"] is False and tc["evidence_repeat"] == 1
    assert "repeat 1" in tc["profile_note"]
    assert m["flops_per_step"] is None and m["achieved_tflops"] is None
    assert m["flops_evidence_repeat"] == 1
    assert "counting_flops" not in second["harness"]["phases_s"]
    # evidence_repeats: all collects it in every repeat
    every = run.run_job(tiny(2, evidence_repeats="all"))
    assert len(profiled) == 2
    assert every["metrics"]["flops_per_step"] == first["metrics"]["flops_per_step"]
    assert every["tensor_cores"]["evidence_repeat"] == 2


def test_evidence_repeats_must_be_first_or_all():
    with pytest.raises(ValueError, match="evidence_repeats='some'"):
        run.parse_spec(tiny(evidence_repeats="some"))


def test_the_record_carries_its_seed():
    rec = run.run_job(tiny(3))
    assert rec["seed"] == rec["params"]["seed"] == 7
    R.validate(rec)


# ------------------------------------------------------------------ warm-up and steady energy
def test_time_to_steady_and_steady_energy_on_a_cpu():
    rec = run.run_job(tiny(1, warmup_steps=2))
    m, t = rec["metrics"], rec["telemetry"]
    assert 0 < m["time_to_steady_s"] <= m["total_time_s"]
    # the warm-up steps lie within the time to a steady step
    assert m["warmup_time_s"] <= m["time_to_steady_s"]
    assert t["steady_energy_j"] is None and t["steady_energy_per_sample_j"] is None
    assert t["steady_energy_window_s"] is None and "no CUDA device" in t["steady_energy_note"]
    R.validate(rec)


def test_no_warmup_means_steady_from_the_start():
    m = run.run_job(tiny(1, warmup_steps=0))["metrics"]
    assert m["warmup_steps"] == 0 and 0 <= m["time_to_steady_s"] < m["total_time_s"]


# ------------------------------------------------------------------ fault injection is test-only
def test_fault_injection_is_not_in_the_production_job_path():
    from pathlib import Path

    source = Path(run.__file__).read_text()
    assert "INJECT_FAULT" not in source and "import faultinject" not in source


@pytest.mark.slow
def test_a_plain_job_ignores_the_fault_variable(tmp_path):
    """A plain job ignores the variable (nothing reads it) and never loads the test module."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "r.json"
    code = ("import sys, json; from tcbench.job import run; rc = run.main(sys.argv[1:]); "
            "print(json.dumps(sorted(m for m in sys.modules if 'faultinject' in m))); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, "--spec", json.dumps(tiny()),
                           "--out", str(out)], capture_output=True, text=True, timeout=300,
                          env=os.environ | {"TCBENCH_INJECT_FAULT": "oom@0",
                                            "PYTHONPATH": str(Path(run.__file__).parents[1])})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == []
    assert R.read(out)["status"] == "ok"


# ------------------------------------------------------------------ what a job imports
@pytest.mark.slow  # each a fresh interpreter
@pytest.mark.parametrize("workload,params", [
    ("amp_recipe", TINY["amp_recipe"]),
    ("digits", TINY["digits"]),
    ("mnist_cnn", TINY["mnist_cnn"]),
    ("mnist_cnn", {"data": "mnist", "loader": "gpu-resident", "epochs": 1, "warmup_steps": 1}),
])
def test_a_job_imports_only_what_it_needs(tmp_path, workload, params):
    """No torchvision, scikit-learn or scipy where the job does not use them (each costs a
    second or more of every job's start-up); real MNIST, gpu-resident, evaluated included."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if params.get("data") == "mnist":
        from test_data import small_mnist
        small_mnist(tmp_path / "data", n_train=64, n_test=32)
        params = params | {"data_dir": str(tmp_path / "data")}

    code = ("import sys, json; from tcbench.job import run; rc = run.main(sys.argv[1:]); "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torchvision', 'sklearn', 'scipy', 'pandas', 'matplotlib'}))); sys.exit(rc)")
    spec = {"workload": workload, "precision": "fp32", "batch_size": 32, "params": params}
    proc = subprocess.run([sys.executable, "-c", code, "--spec", json.dumps(spec), "--out",
                           str(tmp_path / "r.json")], capture_output=True, text=True,
                          timeout=300,
                          env=os.environ | {"PYTHONPATH": str(Path(run.__file__).parents[1])})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == []


# ------------------------------------------------------------------ compile cache
def test_compile_cache_option_points_inductor_and_triton_at_one_folder(tmp_path):
    env = {}
    run.use_compile_cache(tmp_path / "cc", env)
    assert env == {"TORCHINDUCTOR_CACHE_DIR": str((tmp_path / "cc" / "inductor").resolve()),
                   "TRITON_CACHE_DIR": str((tmp_path / "cc" / "triton").resolve())}
    run.use_compile_cache(None, env)  # no option: torch's own default, nothing set
    assert len(env) == 2


@pytest.mark.slow
def test_a_second_compiled_job_hits_the_shared_cache(tmp_path):
    """Two fresh processes compile the same model with one --compile-cache: the first fills it,
    the second hits it, and each record says so (compile time reported on its own)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    recs = []
    for i in (1, 2):
        out = tmp_path / f"r{i}.json"
        spec = tiny(1, compile="default") | {"cell": f"fp32_bs8_compile-default_r{i}"}
        proc = subprocess.run(
            [sys.executable, "-m", "tcbench.job.run", "--spec", json.dumps(spec),
             "--compile-cache", str(tmp_path / "cc"), "--out", str(out)],
            capture_output=True, text=True, timeout=600,  # this tree's tcbench, not an install's
            env=os.environ | {"PYTHONPATH": str(Path(run.__file__).parents[1])})
        assert proc.returncode == 0, proc.stderr
        recs.append(R.read(out))
    first, second = (r["metrics"]["compile_cache"] for r in recs)
    assert first["dir"] == second["dir"] == str((tmp_path / "cc" / "inductor").resolve())
    assert first["source"] == "TORCHINDUCTOR_CACHE_DIR"
    assert first["hit"] is False and first["counters"]["fxgraph_cache_miss"] > 0
    assert second["hit"] is True and second["counters"]["fxgraph_cache_hit"] > 0
    assert all(r["metrics"]["compile_time_s"] > 0 for r in recs)
    assert all(r["placement"]["compile"]["compile_threads"] >= 1 for r in recs)


def test_compilations_count_only_inside_their_spans(monkeypatch):
    """The timed window's graph count: the schedule's part and the measurement steps' part, not
    the held-out evaluation between them; a span never started counts nothing."""
    from tcbench.job import harness
    count = iter([2, 3, 7, 8])   # start, stop (+1), evaluation compiles 4, start, stop (+1)
    monkeypatch.setattr(harness, "graphs_compiled", lambda: next(count))
    c = harness.Compilations()
    c.stop()
    c.start(), c.stop(), c.start(), c.stop()
    assert c.inside == 2


@pytest.mark.slow
def test_a_shape_first_met_after_the_warm_up_compiles_inside_the_window_and_is_flagged(tmp_path):
    """An epoch's last, smaller batch reaches torch.compile only after the warm-up: its
    compilation lands in one timed step, which the halves' medians cannot see; the record counts
    the graphs and calls the window unsteady. Without a ragged batch nothing is counted, the
    held-out evaluation's own graphs (outside the window) included."""
    def job(samples):
        out = tmp_path / f"r{samples}.json"
        spec = {"workload": "mnist_cnn", "precision": "fp32", "batch_size": 16,
                "params": TINY["mnist_cnn"] | {"train_samples": samples, "compile": "default"}}
        assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
        rec = R.read(out)
        assert rec["status"] == "ok", rec["status_reason"]
        return rec["metrics"]["timed_window"]

    ragged, even = job(40), job(32)   # 16 + 16 + 8 a epoch; 16 + 16
    assert ragged["graphs_compiled"] > 0 and ragged["steady"] is False
    assert "compiled inside the timed window" in ragged["steady_reason"]
    assert even["graphs_compiled"] == 0


def test_measurement_steps_follow_evaluation_and_leave_the_seeds_numbers_alone(monkeypatch):
    """A window longer than the schedule: measurement steps after it, held-out evaluation
    between the two, total_time_s and the samples those of the schedule alone."""
    from tcbench.job import train

    order = []
    more = train.Loop.more
    monkeypatch.setattr(train.Loop, "more", lambda self, n: (order.append("more"), more(self, n)))
    build = run.Job.build

    def build_and_watch(self):
        w = build(self)
        evaluate = w.evaluate
        w.evaluate = lambda: (order.append("evaluate"), evaluate())[1]
        return w
    monkeypatch.setattr(run.Job, "build", build_and_watch)
    # three schedule steps (digits: ~0.5 s each on a CPU), a window of six
    spec = {"workload": "digits", "precision": "fp32", "batch_size": 64,
            "params": {"epochs": 1, "warmup_steps": 1, "train_samples": 192,
                       "min_timed_steps": 6, "cpu_placement": "os"}}
    rec = run.run_job(spec)
    m = rec["metrics"]
    assert order[0] == "evaluate" and set(order[1:]) == {"more"}
    counts = m["step_counts"]
    schedule = counts["warmup"] + counts["schedule"]
    assert counts["schedule"] == 2 and counts["measurement"] > 0
    assert m["timed_window"]["timed_steps"] >= 6
    assert m["samples"] <= schedule * 64 and m["steps"] == schedule + counts["measurement"]
    assert m["wall_throughput_samples_per_s"] == pytest.approx(m["samples"] / m["total_time_s"])
    assert 0 <= m["test_accuracy"] <= 1
    assert rec["placement"]["cpu_placement"] == "os"
