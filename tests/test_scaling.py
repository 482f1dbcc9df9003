"""1-GPU vs 2-GPU comparison on hand-made records: the verdicts, not the GPUs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcbench.reports import scaling

UUIDS = ["GPU-aaaa", "GPU-bbbb"]


def write_run(root: Path, throughputs: dict[str, list[float]], gpus: int,
              status: dict | None = None) -> Path:
    """A result set: each precision's repeats with the given throughputs, spread over GPUs."""
    n = 0
    for precision, values in throughputs.items():
        for rep, value in enumerate(values, start=1):
            cell = f"{precision}_bs128_r{rep}"
            st = (status or {}).get(cell, "ok")
            rec = {"experiment": "resnet50", "cell": cell, "status": st,
                   "metrics": {"throughput_samples_per_s": value} if st == "ok" else None,
                   "environment": {"device_type": "cuda", "gpu_index": n % gpus,
                                   "gpu_uuid": UUIDS[n % gpus]}}
            path = root / "records" / "resnet50" / f"{cell}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(rec))
            n += 1
    return root


ONE = {"fp32": [800.0, 805.0, 798.0, 802.0], "amp-bf16": [2800.0, 2790.0, 2815.0, 2805.0]}


def test_two_gpus_twice_as_fast_without_interference(tmp_path):
    one = write_run(tmp_path / "one", ONE, gpus=1)
    two = write_run(tmp_path / "two", {k: [v * 0.995 for v in vs] for k, vs in ONE.items()},
                    gpus=2)
    r = scaling.compare(scaling.load(one), scaling.load(two), 400.0, 208.0)
    assert r["wall_time_ratio"] == pytest.approx(0.52)
    assert r["scaling_ok"] and r["interference_ok"] and r["ok"]
    assert r["jobs_per_gpu_one"] == {"GPU 0 (GPU-aaaa)": 8}
    assert r["jobs_per_gpu_two"] == {"GPU 0 (GPU-aaaa)": 4, "GPU 1 (GPU-bbbb)": 4}
    assert r["throughput_ratio_median"] == pytest.approx(0.995)
    assert {g["group"] for g in r["groups"]} == {"resnet50/fp32_bs128", "resnet50/amp-bf16_bs128"}


def test_slow_scaling_fails(tmp_path):
    one = write_run(tmp_path / "one", ONE, gpus=1)
    two = write_run(tmp_path / "two", ONE, gpus=2)
    r = scaling.compare(scaling.load(one), scaling.load(two), 400.0, 260.0)
    assert not r["scaling_ok"] and r["interference_ok"] and not r["ok"]


def test_slowdown_beyond_the_noise_is_interference(tmp_path):
    one = write_run(tmp_path / "one", ONE, gpus=1)
    slower = {"fp32": [v * 0.9 for v in ONE["fp32"]], "amp-bf16": ONE["amp-bf16"]}
    two = write_run(tmp_path / "two", slower, gpus=2)
    r = scaling.compare(scaling.load(one), scaling.load(two), 400.0, 200.0)
    assert not r["interference_ok"] and not r["ok"]
    bad = [g["group"] for g in r["groups"] if not g["within_noise"]]
    assert bad == ["resnet50/fp32_bs128"]


def test_noisy_repeats_widen_what_counts_as_noise(tmp_path):
    noisy = {"fp32": [700.0, 900.0, 800.0, 800.0]}  # 25 % spread within the run itself
    one = write_run(tmp_path / "one", noisy, gpus=1)
    two = write_run(tmp_path / "two", {"fp32": [v * 0.9 for v in noisy["fp32"]]}, gpus=2)
    r = scaling.compare(scaling.load(one), scaling.load(two), 400.0, 200.0)
    assert r["interference_ok"]


def test_a_failed_cell_fails_the_check(tmp_path):
    one = write_run(tmp_path / "one", ONE, gpus=1)
    two = write_run(tmp_path / "two", ONE, gpus=2, status={"fp32_bs128_r2": "oom"})
    r = scaling.compare(scaling.load(one), scaling.load(two), 400.0, 200.0)
    assert r["jobs_not_ok"] == ["resnet50/fp32_bs128_r2"] and not r["ok"]


def test_cli_writes_report_and_rejects_different_matrices(tmp_path, capsys):
    one = write_run(tmp_path / "one", ONE, gpus=1)
    two = write_run(tmp_path / "two", ONE, gpus=2)
    out = tmp_path / "scaling"
    rc = scaling.main(["--one", str(one), "--two", str(two), "--wall-one", "400",
                       "--wall-two", "210", "--out", str(out)])
    assert rc == 0
    assert json.loads((out / "scaling.json").read_text())["wall_time_ratio"] == pytest.approx(0.525)
    assert "wall-time ratio: **0.525**" in (out / "scaling.md").read_text()
    other = write_run(tmp_path / "other", {"fp32": ONE["fp32"]}, gpus=2)
    rc = scaling.main(["--one", str(one), "--two", str(other), "--wall-one", "400",
                       "--wall-two", "210", "--out", str(out)])
    assert rc == 2 and "not the same matrix" in capsys.readouterr().err


def with_job_times(run: Path, seconds: float) -> Path:
    """Gives every record of a result set a harness block worth `seconds` of job time."""
    for p in (run / "records").glob("*/*.json"):
        rec = json.loads(p.read_text())
        rec["harness"] = {"process_start_to_main_s": 0.5,
                          "phases_s": {"imports": 3.0, "training": seconds - 3.5}}
        p.write_text(json.dumps(rec))
    return run


def test_job_time_drift_is_taken_out_of_the_adjusted_ratio(tmp_path):
    # 8 jobs: 25 s each in the 1-GPU run, 20 s in the 2-GPU run; 10 s of Snakemake in both
    one = with_job_times(write_run(tmp_path / "one", ONE, gpus=1), 25.0)
    two = with_job_times(write_run(tmp_path / "two", ONE, gpus=2), 20.0)
    r = scaling.compare(scaling.load(one), scaling.load(two), 210.0, 90.0)
    assert r["wall_time_ratio"] == pytest.approx(90 / 210)
    assert r["job_time_sum_one_s"] == pytest.approx(200.0)
    assert r["job_time_sum_two_s"] == pytest.approx(160.0)
    assert r["adjusted_wall_ratio"] == pytest.approx(90 / 170)
    md = scaling.markdown(r)
    assert "(+25%)" in md and "**0.529**" in md


def test_records_without_job_times_say_so(tmp_path):
    one = write_run(tmp_path / "one", ONE, gpus=1)
    two = with_job_times(write_run(tmp_path / "two", ONE, gpus=2), 20.0)
    r = scaling.compare(scaling.load(one), scaling.load(two), 400.0, 200.0)
    assert r["job_time_sum_one_s"] is None and r["adjusted_wall_ratio"] is None
    assert "drift not checked" in scaling.markdown(r)
