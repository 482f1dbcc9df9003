"""GPU claiming without GPUs: a fake device list, real processes, real locks, a real SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tcbench.host import environment, gpus as G

REPO = Path(__file__).resolve().parents[1]
FAKE = [G.Gpu(0, "GPU-00000000-aaaa-0000-0000-000000000000"),
        G.Gpu(1, "GPU-11111111-bbbb-1111-1111-111111111111")]
DEADLINE_S = 60  # every wait below is bounded: a broken lock fails the test, never hangs it


def fake_nvidia_smi(bin_dir: Path, gpus=FAKE) -> Path:
    """An nvidia-smi that lists ``gpus`` for the two queries tcbench makes."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    rows = "\n".join(f"{g.index}, {g.uuid}" for g in gpus)
    names = "\n".join("Fake GPU" for _ in gpus)
    script = bin_dir / "nvidia-smi"
    script.write_text("#!/bin/sh\n"
                      'case "$*" in\n'
                      f"  *--query-gpu=index,uuid*) printf '%s\\n' \"{rows}\" ;;\n"
                      f"  *--query-gpu=name*) printf '%s\\n' \"{names}\" ;;\n"
                      "  *) exit 9 ;;\n"
                      "esac\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir


def env_with(bin_dir: Path, lock_dir: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    return env | {"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}",
                  "PYTHONPATH": str(REPO / "workflow"), G.LOCK_DIR_ENV: str(lock_dir)} | extra


# A job stand-in: pins like tcbench.job.run does, reports what it got, then holds the GPU until
# its stdin closes (or it is killed).
HOLDER = textwrap.dedent("""\
    import json, os, sys
    from tcbench.host import gpus
    claim = gpus.pin()
    report = {"pid": os.getpid(), "cvd": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "index": claim.gpu.index if claim else None}
    open(sys.argv[1], "w").write(json.dumps(report))
    sys.stdin.read()
    """)


def start_holder(tmp_path: Path, name: str, env: dict) -> tuple[subprocess.Popen, Path, Path]:
    report, err = tmp_path / f"{name}.json", tmp_path / f"{name}.err"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(report)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=err.open("w"), text=True)
    return proc, report, err


def wait_for(predicate, what: str, procs=()):
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    for p in procs:
        p.kill()
    raise AssertionError(f"timed out after {DEADLINE_S} s waiting for {what}")


def read_report(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def test_parse_query():
    text = "0, GPU-aaa\n1, GPU-bbb\n\n"
    assert G.parse_query(text) == [G.Gpu(0, "GPU-aaa"), G.Gpu(1, "GPU-bbb")]
    with pytest.raises(ValueError, match="unexpected nvidia-smi line"):
        G.parse_query("No devices were found")


def test_discover_reads_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{fake_nvidia_smi(tmp_path / 'bin')}{os.pathsep}"
                               f"{os.environ['PATH']}")
    assert G.discover() == FAKE


def test_claims_in_one_process_exclude_each_other(tmp_path):
    a = G.claim(FAKE, tmp_path, timeout=0)
    b = G.claim(FAKE, tmp_path, timeout=0)
    assert {a.gpu, b.gpu} == set(FAKE)
    with pytest.raises(G.GpuBusyError, match=f"pid {os.getpid()}"):
        G.claim(FAKE, tmp_path, timeout=0)
    a.release()
    c = G.claim(FAKE, tmp_path, timeout=0)
    assert c.gpu == a.gpu
    b.release()
    c.release()


def test_lock_dir_is_configurable_and_per_user(monkeypatch, tmp_path):
    monkeypatch.delenv(G.LOCK_DIR_ENV, raising=False)
    assert G.lock_dir().name == f"tcbench-gpu-locks-{os.getuid()}"
    monkeypatch.setenv(G.LOCK_DIR_ENV, str(tmp_path / "locks"))
    assert G.lock_dir() == tmp_path / "locks"


def test_pin_leaves_a_preset_choice_alone():
    env = {"CUDA_VISIBLE_DEVICES": "1"}
    assert G.pin(environ=env, gpus=FAKE) is None
    assert env == {"CUDA_VISIBLE_DEVICES": "1"}
    env = {}
    assert G.pin(environ=env, gpus=[]) is None  # no GPU, nothing to pin
    assert env == {}


def test_bad_wait_limit_is_named(monkeypatch):
    monkeypatch.setenv(G.WAIT_ENV, "soon")
    with pytest.raises(ValueError, match=G.WAIT_ENV):
        G.pin(environ={}, gpus=FAKE)


def test_concurrent_jobs_get_distinct_gpus_and_a_killed_holder_frees_its_gpu(tmp_path):
    locks = tmp_path / "locks"
    env = env_with(fake_nvidia_smi(tmp_path / "bin"), locks)
    first = [start_holder(tmp_path, f"h{i}", env) for i in range(2)]
    procs = [p for p, _, _ in first]
    reports = [wait_for(lambda r=r: read_report(r), f"holder {i} to claim", procs)
               for i, (_, r, _) in enumerate(first)]
    # two concurrent jobs, two GPUs: one each, and CUDA sees only that one, by UUID
    assert sorted(r["index"] for r in reports) == [0, 1]
    for r in reports:
        assert r["cvd"] == FAKE[r["index"]].uuid

    # a third job finds both held, says so, and waits instead of doubling up
    third, third_report, third_err = start_holder(tmp_path, "h2", env)
    procs.append(third)
    wait_for(lambda: "busy, waiting" in third_err.read_text(), "the third job to wait", procs)
    assert read_report(third_report) is None

    # a job that must not wait forever gives up and names who holds what
    bounded = subprocess.run([sys.executable, "-c", HOLDER, str(tmp_path / "h3.json")],
                             env=env | {G.WAIT_ENV: "0.2"}, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=DEADLINE_S)
    assert bounded.returncode != 0
    assert "GpuBusyError" in bounded.stderr and f"pid {reports[0]['pid']}" in bounded.stderr

    # SIGKILL the holder of GPU 1: no clean-up code runs, yet the kernel drops its lock
    victim = next(i for i, r in enumerate(reports) if r["index"] == 1)
    procs[victim].send_signal(signal.SIGKILL)
    procs[victim].wait(timeout=DEADLINE_S)
    got = wait_for(lambda: read_report(third_report), "the waiting job to take the freed GPU",
                   procs)
    assert got["index"] == 1 and got["cvd"] == FAKE[1].uuid

    for p in procs:
        if p.poll() is None:
            p.stdin.close()
            p.wait(timeout=DEADLINE_S)
    # everyone gone: both GPUs free again, lock files kept (deleting them is how races start)
    again = [G.claim(FAKE, locks, timeout=0) for _ in FAKE]
    assert {c.gpu for c in again} == set(FAKE)
    assert sorted(p.name for p in locks.iterdir()) == sorted(f"gpu-{g.uuid}.lock" for g in FAKE)
    for c in again:
        c.release()


def test_gpu_identity_is_the_physical_index():
    # CUDA calls the one visible device 0; the record names the physical device 1
    ident = environment.gpu_identity(FAKE[1].uuid, 0, devices=FAKE)
    assert ident["gpu_index"] == 1
    # unknown to nvidia-smi: CUDA's index is the best there is
    assert environment.gpu_identity("GPU-elsewhere", 3, devices=FAKE)["gpu_index"] == 3


@pytest.mark.slow
def test_run_pins_before_training_and_records_scheduler(tmp_path):
    """tcbench.job.run claims a GPU (a fake one: torch still trains on the CPU), records which
    device CUDA was limited to and the SLURM job id, and leaves the GPU free on exit."""
    locks = tmp_path / "locks"
    env = env_with(fake_nvidia_smi(tmp_path / "bin"), locks, SLURM_JOB_ID="4242",
                   SLURM_JOB_PARTITION="debug")
    spec = {"workload": "amp_recipe", "precision": "fp32", "batch_size": 8,
            "params": {"in_size": 16, "out_size": 16, "num_batches": 2, "epochs": 1,
                       "warmup_steps": 1, "profile_steps": 1}}
    out = tmp_path / "record.json"
    proc = subprocess.run([sys.executable, "-m", "tcbench.job.run", "--spec", json.dumps(spec),
                           "--out", str(out)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "pinned to GPU 0" in proc.stderr
    rec = json.loads(out.read_text())["environment"]
    assert rec["cuda_visible_devices"] == FAKE[0].uuid
    assert rec["slurm_job_id"] == "4242" and rec["slurm_job_partition"] == "debug"
    assert rec["device_type"] == "cpu" and rec["gpu_index"] is None
    held = [G.claim(FAKE, locks, timeout=0) for _ in FAKE]  # the job's exit freed its GPU
    for c in held:
        c.release()


@pytest.mark.slow
def test_snakemake_runs_k_jobs_each_on_its_own_gpu(workflow_copy, tmp_path):
    """--resources gpu=2 on a host with two (fake) GPUs: the train jobs spread over both, each
    log says which one it held, and every record names a single device by UUID."""
    from conftest import snakemake

    (workflow_copy / "config" / "twogpu.yaml").write_text(textwrap.dedent("""\
        run: twogpu
        require_gpu: false
        calibrate: {enabled: false}
        experiments:
          - name: mlp
            workload: amp_recipe
            precisions: [fp32, amp-bf16]
            batch_sizes: [16]
            repeats: 2
            params: {in_size: 64, out_size: 64, num_batches: 4, epochs: 1, warmup_steps: 1}
        """))
    env = env_with(fake_nvidia_smi(tmp_path / "bin"), tmp_path / "locks")
    env.pop("PYTHONPATH")
    snakemake(workflow_copy, "--cores", "2", "--resources", "gpu=2", "--configfile",
              "config/twogpu.yaml", "--until", "train", env=env, timeout=600)
    records = sorted((workflow_copy / "results" / "twogpu" / "records").rglob("*.json"))
    assert len(records) == 4
    seen = {json.loads(r.read_text())["environment"]["cuda_visible_devices"] for r in records}
    assert seen <= {g.uuid for g in FAKE}
    logs = [p.read_text() for p in (workflow_copy / "logs" / "twogpu" / "train").rglob("*.log")]
    assert len(logs) == 4 and all("tcbench: pinned to GPU" in t for t in logs)
    assert seen == {g.uuid for g in FAKE}, "two concurrent jobs should have held both GPUs"
