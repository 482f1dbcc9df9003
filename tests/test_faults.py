"""Faults are recorded honestly: out of memory -> status oom with the memory in use; a NaN/inf
loss -> status diverged with its step; the rest of the matrix goes on and the tables and figures
mark the cell; a record is never half-written.

On a CPU out-of-memory errors come from fault injection (TCBENCH_INJECT_FAULT, test-only:
tests/faultinject.py, which tcbench.job.run does not import) or from the simulated memory budget; on
a GPU (test marked ``gpu``) from a real allocator cap.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

import faultinject
from conftest import fault_env, snakemake
from tcbench import aggregate
from tcbench.job import memlimit
from tcbench.render import plot
from tcbench.reports import figures
from tcbench import atomic
from tcbench import record as R
from tcbench.job import run

SRC = str(Path(run.__file__).resolve().parents[1])  # the workflow/ folder: tcbench's parent
FAULT_RUN = [sys.executable, faultinject.__file__, "-m", "tcbench.job.run"]  # the job + faults
TINY_PARAMS = {"in_size": 16, "out_size": 16, "num_batches": 4, "epochs": 1, "warmup_steps": 1}


def tiny_spec(**extra):
    return {"run": "faults", "experiment": "tiny", "cell": "fp32_bs8_r1",
            "workload": "amp_recipe", "precision": "fp32", "batch_size": 8,
            "params": dict(TINY_PARAMS)} | extra


@pytest.fixture(autouse=True)
def inject_faults(monkeypatch):
    """Jobs run in this process get TCBENCH_INJECT_FAULT's faults (tests/faultinject.py)."""
    faultinject.install(monkeypatch)


# ------------------------------------------------------------------------- fault injection itself
def test_fault_spec_parsing():
    assert faultinject.parse_faults("", "a/b") == []
    assert faultinject.parse_faults("oom@3", "a/b") == [("oom", 3)]
    assert faultinject.parse_faults("oom@1:a/*;nan@2:x/*", "a/b") == [("oom", 1)]
    assert faultinject.parse_faults("nan@0:x/*", "a/b") == []
    assert faultinject.parse_faults(" stall@2:a/b ; oom@5 ", "a/b") == [("stall", 2), ("oom", 5)]
    for bad in ("oom", "oom@", "oom@x", "explode@1", "oom@-1"):
        with pytest.raises(ValueError, match="TCBENCH_INJECT_FAULT"):
            faultinject.parse_faults(bad, "a/b")


# ------------------------------------------------------------------------- out of memory
def test_oom_is_a_record_with_the_memory_in_use(tmp_path, monkeypatch):
    """The job's entry point: exit 0, a schema-valid oom record."""
    monkeypatch.setenv("TCBENCH_INJECT_FAULT", "oom@2:tiny/*")
    out = tmp_path / "rec.json"
    assert run.main(["--spec", json.dumps(tiny_spec()), "--out", str(out)]) == 0
    said_oom_with_the_memory_in_use(R.read(out))


@pytest.mark.slow
def test_oom_through_the_command_line_is_the_same_record(tmp_path):
    """As the workflow runs it, a fresh process."""
    out = tmp_path / "rec.json"
    env = os.environ | {"TCBENCH_INJECT_FAULT": "oom@2:tiny/*", "PYTHONPATH": SRC}
    proc = subprocess.run([*FAULT_RUN, "--spec", json.dumps(tiny_spec()), "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    said_oom_with_the_memory_in_use(R.read(out))


def said_oom_with_the_memory_in_use(r: dict) -> None:
    assert r["status"] == "oom"
    assert r["metrics"] is None
    e = r["error"]
    assert e["type"] == "OutOfMemoryError"
    assert (e["phase"], e["step"]) == ("training", 2)
    assert "step 2" in r["status_reason"]
    assert e["process_rss_bytes"] > 2**20 and e["process_peak_rss_bytes"] > 2**20  # torch is in
    assert "max_memory_allocated_bytes" in e  # null on a CPU, the allocator's peak on CUDA


def test_injection_targets_only_the_named_cell(monkeypatch):
    monkeypatch.setenv("TCBENCH_INJECT_FAULT", "oom@0:other/*")
    assert run.run_job(tiny_spec())["status"] == "ok"


def test_oom_while_building_is_a_record(monkeypatch):
    from tcbench import workloads

    def build(*a, **k):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    monkeypatch.setattr(workloads, "build", build)
    r = run.run_job(tiny_spec())
    R.validate(r)
    assert r["status"] == "oom"
    assert r["error"]["phase"] == "building" and r["error"]["step"] is None


@pytest.mark.parametrize("message", ["CUDA error: out of memory",
                                     "CUDNN_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_ALLOC_FAILED"])
def test_allocation_failures_outside_the_allocator_count_as_oom(message):
    assert run.is_oom(RuntimeError(message))


def test_other_errors_are_not_taken_for_oom(monkeypatch):
    assert not run.is_oom(RuntimeError("CUDNN_STATUS_NOT_SUPPORTED"))
    assert not run.is_oom(ValueError("out of memory"))
    from tcbench import workloads

    def build(*a, **k):
        raise RuntimeError("an ordinary bug")
    monkeypatch.setattr(workloads, "build", build)
    with pytest.raises(RuntimeError, match="ordinary bug"):
        run.run_job(tiny_spec())


def test_simulated_budget_on_cpu():
    ok = run.run_job(tiny_spec(memory_limit_bytes=10**9))
    assert ok["status"] == "ok"
    m = ok["metrics"]
    assert m["memory_limit_kind"] == memlimit.SIMULATED_KIND
    assert 0 < m["simulated_peak_bytes"] < 10**9
    # Just below what the run needed: the same run no longer fits.
    r = run.run_job(tiny_spec(memory_limit_bytes=m["simulated_peak_bytes"] - 1))
    R.validate(r)
    assert r["status"] == "oom"
    assert r["error"]["memory_limit_bytes"] == m["simulated_peak_bytes"] - 1
    assert "simulated memory budget" in r["status_reason"]


def test_simulated_budget_grows_with_the_batch():
    peaks = [run.run_job(tiny_spec(batch_size=b, memory_limit_bytes=10**9))["metrics"]
             ["simulated_peak_bytes"] for b in (8, 16, 32)]
    assert peaks[0] < peaks[1] < peaks[2]
    assert peaks[2] - peaks[1] == 2 * (peaks[1] - peaks[0])  # activations scale with the batch


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "1GB"])
def test_memory_limit_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="memory_limit_bytes"):
        run.parse_spec(tiny_spec(memory_limit_bytes=bad))


def test_cuda_budget_caps_the_allocator(monkeypatch):
    """The CUDA path without a GPU: torch's own set_per_process_memory_fraction runs (argument
    checks included) down to the C call, which is replaced."""
    calls = []
    monkeypatch.setattr(torch.cuda.memory, "_lazy_init", lambda: None)
    monkeypatch.setattr(torch._C, "_cuda_setMemoryFraction", lambda f, d: calls.append((f, d)),
                        raising=False)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda i: type("P", (), {"total_memory": 8 * 2**30})())
    budget = memlimit.Budget(2 * 2**30, torch.device("cuda"))
    with budget:
        assert calls == [(0.25, 0)]
    assert calls[-1] == (1.0, 0)  # released for whatever runs next in the process
    assert budget.info() == {"memory_limit_bytes": 2 * 2**30,
                             "memory_limit_kind": memlimit.CUDA_KIND,
                             "memory_limit_fraction": 0.25}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_real_oom_on_the_gpu(tmp_path):
    """A real out-of-memory error: ResNet-50 at batch 256 held to 1 GiB."""
    spec = {"run": "faults", "experiment": "gpu", "cell": "fp32_bs256_r1", "workload": "resnet50",
            "precision": "fp32", "batch_size": 256, "memory_limit_bytes": 2**30,
            "params": {"steps": 2, "warmup_steps": 1, "profile_steps": 0, "distinct_batches": 1}}
    out = tmp_path / "rec.json"
    proc = subprocess.run([sys.executable, "-m", "tcbench.job.run", "--spec", json.dumps(spec),
                           "--out", str(out)], capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items()
                               if k != "TCBENCH_INJECT_FAULT"} | {"PYTHONPATH": SRC})
    assert proc.returncode == 0, proc.stderr
    r = R.read(out)
    assert r["status"] == "oom"
    e = r["error"]
    assert e["type"] == "OutOfMemoryError"
    assert e["memory_limit_kind"] == memlimit.CUDA_KIND
    assert 0 < e["max_memory_allocated_bytes"] <= 2**30
    assert e["device_total_bytes"] > 2**30


# ------------------------------------------------------------------------- divergence
@pytest.mark.parametrize("kind", ["nan", "inf"])
def test_nonfinite_loss_is_diverged_with_its_step(monkeypatch, kind):
    monkeypatch.setenv("TCBENCH_INJECT_FAULT", f"{kind}@2")
    r = run.run_job(tiny_spec())
    R.validate(R._clean(r))
    assert r["status"] == "diverged"
    assert not math.isfinite(r["metrics"]["loss_curve"][-1][1])  # the loss the record is about
    assert r["metrics"]["first_nonfinite_step"] == 2
    assert "step 2" in r["status_reason"]


# ------------------------------------------------------------------------- atomic records
def test_a_record_is_never_half_written(tmp_path, monkeypatch):
    record = run.run_job(tiny_spec())
    path = tmp_path / "records" / "tiny" / "fp32_bs8_r1.json"
    R.write(record, path)
    before = path.read_bytes()

    real_write = atomic.os.fdopen

    def half_then_die(fd, mode="r", *args, **kw):
        f = real_write(fd, mode, *args, **kw)
        full = f.write

        def write(text):
            full(text[: len(text) // 2])
            f.flush()
            raise KeyboardInterrupt  # stands for anything that ends the process mid-write
        f.write = write
        return f
    monkeypatch.setattr(atomic.os, "fdopen", half_then_die)
    with pytest.raises(KeyboardInterrupt):
        R.write(record | {"status_reason": "second"}, path)
    new = tmp_path / "records" / "tiny" / "amp-bf16_bs8_r1.json"
    with pytest.raises(KeyboardInterrupt):
        R.write(record, new)
    assert path.read_bytes() == before  # the old record stands, whole
    assert not new.exists()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary left


# ------------------------------------------------------------------------- through the workflow
FAULTS_CONFIG = {
    "run": "faults", "require_gpu": False, "repeats": 1, "calibrate": {"enabled": False},
    "experiments": [{"name": "tiny", "workload": "amp_recipe", "precisions": ["fp32", "amp-bf16"],
                     "batch_sizes": [8, 16], "params": TINY_PARAMS}],
}


@pytest.mark.slow
def test_matrix_goes_on_and_tables_and_figures_mark_the_cells(workflow_copy):
    (workflow_copy / "config" / "faults.yaml").write_text(yaml.safe_dump(FAULTS_CONFIG))
    snakemake(workflow_copy, "--cores", "2", "--configfile", "config/faults.yaml",
              env=fault_env(workflow_copy, "oom@1:tiny/amp-bf16_bs16_r1;nan@1:tiny/fp32_bs8_r1"))
    res = workflow_copy / "results" / "faults"
    status = {p.stem: R.read(p)["status"] for p in (res / "records" / "tiny").glob("*.json")}
    assert status == {"fp32_bs8_r1": "diverged", "fp32_bs16_r1": "ok", "amp-bf16_bs8_r1": "ok",
                      "amp-bf16_bs16_r1": "oom"}

    metrics = pd.read_csv(res / "metrics.csv")
    by_cell = metrics.set_index("cell")
    assert by_cell.loc["amp-bf16_bs16_r1", "status"] == "oom"
    assert by_cell.loc["fp32_bs8_r1", "status"] == "diverged"
    assert by_cell.loc["fp32_bs8_r1", "first_nonfinite_step"] == 1
    summary = pd.read_csv(res / "summary.csv")
    assert set(summary["status"]) == {"ok", "oom", "diverged"}
    table = (res / "speedup.md").read_text()
    oom_rows = [line for line in table.splitlines() if " oom |" in line]
    assert len(oom_rows) == 1 and "amp-bf16" in oom_rows[0] and "| bs 16 |" in oom_rows[0]
    assert sum(" diverged |" in line for line in table.splitlines()) == 1

    for kind in ("throughput", "speedup"):    # memory is not measured on a CPU: not drawn
        assert (res / "figures" / f"tiny_{kind}.png").stat().st_size > 0
    assert not (res / "figures" / "tiny_memory.png").exists()
    # The figure the rule drew, drawn again from the same table: the cells carry their status.
    plot.style()
    data = figures.experiment_rows(summary[summary["experiment"] == "tiny"])
    fig = figures.fig_throughput(data, "tiny")
    labels = [t.get_text().strip() for t in fig.axes[0].texts]
    assert sorted(t for t in labels if t != plot.SINGLE) == ["diverged", "oom"]
    assert labels.count(plot.SINGLE) == 2          # the two cells that finished, once each
    sp = figures.experiment_rows(pd.read_csv(res / "speedup.csv"))
    labels = [t.get_text().strip() for t in figures.fig_speedup(sp, "tiny").axes[0].texts]
    assert "oom" in labels


def test_aggregate_keeps_an_oom_row(tmp_path, monkeypatch):
    """The same without Snakemake: an oom record is a row, never dropped."""
    recs = tmp_path / "records" / "tiny"
    R.write(run.run_job(tiny_spec()), recs / "fp32_bs8_r1.json")
    monkeypatch.setenv("TCBENCH_INJECT_FAULT", "oom@0")
    R.write(run.run_job(tiny_spec(cell="amp-bf16_bs8_r1", precision="amp-bf16")),
            recs / "amp-bf16_bs8_r1.json")
    out = aggregate.aggregate(tmp_path / "records", tmp_path)
    assert list(out["metrics"]["status"]) == ["ok", "oom"]
    assert list(out["speedup"]["status"]) == ["ok", "oom"]
