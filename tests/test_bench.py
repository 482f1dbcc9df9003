"""The benchmark scripts under lab/bench/ run on the CPU and write what they promise."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "lab" / "bench"


@pytest.mark.slow
def test_host_fidelity_pairs_fresh_processes_and_reports_the_ratio_with_its_interval(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH / "host_fidelity.py"), "--device", "cpu",
                           "--precisions", "fp32", "--pairs", "3", "--min-timed-s", "0",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    r = json.loads((tmp_path / "host_fidelity.json").read_text())
    (ab,) = r["ab"]
    assert ab["pairs"] == 3 and ab["first_in_pair"] == ["plain", "tcbench", "plain"]
    assert ab["ratio_of_medians"] == pytest.approx(ab["tcbench_median"] / ab["plain_median"])
    low, high = ab["interval"]
    assert low <= ab["ratio_of_medians"] <= high and "bootstrap" in ab["interval_method"]
    runs = ab["runs"]
    assert runs["tcbench"][0]["cpu_set"] == runs["plain"][0]["cpu_set"]   # the same placement
    assert "| fp32 | 3 |" in (tmp_path / "host_fidelity.md").read_text()


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


@pytest.mark.slow
def test_job_cost_can_fork_its_jobs_from_one_preloaded_interpreter_as_the_workflow_does(tmp_path):
    spec = {"experiment": "tiny", "cell": "fp32_bs8", "workload": "amp_recipe",
            "precision": "fp32", "batch_size": 8,
            "params": {"in_size": 16, "out_size": 16, "num_batches": 4, "epochs": 1,
                       "warmup_steps": 1}}
    proc = subprocess.run([sys.executable, str(BENCH / "job_cost.py"), "--spec", json.dumps(spec),
                           "--repeats", "2", "--forked", "--out", str(tmp_path), "--work",
                           str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(open(tmp_path / "job_cost.csv")))
    assert [(r["status"], r["start"]) for r in rows] == [("ok", "forked")] * 2
    assert "forked from one preloaded interpreter" in (tmp_path / "job_cost.md").read_text()


SMOKE_LOG = """Building DAG of jobs...
[Tue Dec  1 12:35:10 2026]
Job 6: write random MNIST-format files
[Tue Dec  1 12:35:10 2026]
Job 10: train models/fp32_bs2_r1 (log: logs/x.log)
[Tue Dec  1 12:35:12 2026]
Finished jobid: 6 (Rule: mnist_format_random)
[Tue Dec  1 12:35:22 2026]
Finished jobid: 10 (Rule: train)
[Tue Dec  1 12:35:22 2026]
Job 12: aggregate the records of x
[Tue Dec  1 12:35:23 2026]
Finished jobid: 12 (Rule: aggregate)
[Tue Dec  1 12:35:23 2026]
Job 18: figures of models
[Tue Dec  1 12:35:23 2026]
Job 19: figures of digits
[Tue Dec  1 12:35:29 2026]
Finished jobid: 18 (Rule: figures)
[Tue Dec  1 12:35:31 2026]
Finished jobid: 19 (Rule: figures)
Complete log(s): /wf/.snakemake/log/2026-12-01T123503.107665.snakemake.log
"""


def test_smoke_cost_reads_where_a_runs_seconds_went(tmp_path):
    """From what Snakemake printed: its start (named by its log), each rule's jobs, the
    training and reporting spans."""
    sys.path.insert(0, str(BENCH))
    import smoke_cost

    (tmp_path / "out.txt").write_text(SMOKE_LOG)
    text = smoke_cost.report(tmp_path / "out.txt", None)
    assert "- Snakemake's start to its first job: 7 s" in text
    assert "first start to last end: 12 s" in text            # 12:35:10 .. 12:35:22
    assert "(aggregate, tables, verdict, figures): 9 s" in text  # 12:35:22 .. 12:35:31
    assert "| figures | 2 | 14 | 8 |" in text and "| train | 1 | 12 | 12 |" in text


@pytest.mark.slow
def test_check_cost_times_a_forked_transformer_jobs_parameter_check(tmp_path):
    pytest.importorskip("transformers")
    proc = subprocess.run([sys.executable, str(BENCH / "check_cost.py"), "--rounds", "1",
                           "--servers", "1", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads((tmp_path / "check_cost.json").read_text())
    assert run["hazards_before_forks"] == []          # the server could fork its jobs
    assert [(c["model"], c["trial"]) for c in run["children"]] == [
        (m, t) for m in ("gpt2-small-v50304", "gpt2-small", "llama-300m") for t in (True, False)]
    assert all(c["seconds"] > 0 and c["driver_initialised"] is False for c in run["children"])
    # the trial step on the meta device is most of the check: a job the workflow made skips it
    own, made = ([c["seconds"] for c in run["children"] if c["trial"] is t] for t in (True, False))
    assert sum(made) < sum(own)
    assert any("parse_spec" in line for line in run["profiles"][0]["profile"])
    assert "| gpt2-small |" in (tmp_path / "check_cost.md").read_text()
