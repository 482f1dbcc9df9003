"""The benchmark scripts under scripts/bench/ run on the CPU and write what they promise."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "scripts" / "bench"


@pytest.mark.slow
def test_harness_overhead_compares_a_plain_loop_with_tcbenchs(tmp_path):
    out = tmp_path / "o.json"
    proc = subprocess.run([sys.executable, str(BENCH / "harness_overhead.py"), "--device", "cpu",
                           "--precisions", "fp32", "--epochs", "1", "--rounds", "2",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    (loop,) = r["loops"]
    assert loop["rounds"] == 2 and loop["steps_per_run"] == 50
    assert loop["plain_samples_per_s"] > 0 and loop["tcbench_samples_per_s"] > 0
    assert loop["ratio"] == pytest.approx(
        loop["tcbench_samples_per_s"] / loop["plain_samples_per_s"])
    b = r["bookkeeping"]
    assert b["previous_us_per_step"] > 0 and b["current_us_per_step"] > 0
    assert "us/step" in proc.stdout and "bookkeeping per step" in proc.stdout


@pytest.mark.slow
def test_job_cost_times_fresh_processes_and_splits_them(tmp_path):
    spec = {"run": "b", "experiment": "tiny", "cell": "fp32_bs8_r1", "workload": "amp_recipe",
            "precision": "fp32", "batch_size": 8,
            "params": {"in_size": 16, "out_size": 16, "num_batches": 4, "epochs": 1,
                       "warmup_steps": 1}}
    proc = subprocess.run([sys.executable, str(BENCH / "job_cost.py"), "--spec", json.dumps(spec),
                           "--repeats", "2", "--out", str(tmp_path), "--work",
                           str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(open(tmp_path / "job_cost.csv")))
    assert [r["repeat"] for r in rows] == ["1", "2"] and {r["status"] for r in rows} == {"ok"}
    for r in rows:
        wall, parts = float(r["wall_s"]), [float(r[k]) for k in r if k.endswith("_s") and r[k]
                                           and k not in ("wall_s", "warmup_s", "steady_s",
                                                         "fixed_s", "time_to_steady_s",
                                                         "total_time_s")]
        assert sum(parts) == pytest.approx(wall, rel=1e-3)   # the phases make up the wall time
        assert float(r["fixed_s"]) == pytest.approx(
            wall - float(r["warmup_s"]) - float(r["steady_s"]), rel=1e-3)
    assert rows[0]["counting_flops_s"] and not rows[1]["counting_flops_s"]   # evidence once
    assert [r["cell"] for r in rows] == ["tiny/fp32_bs8_r1", "tiny/fp32_bs8_r2"]
    md = (tmp_path / "job_cost.md").read_text()
    assert "| tiny/fp32_bs8 | 1 |" in md and "| tiny/fp32_bs8 | 2 |" in md
