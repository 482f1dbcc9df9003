"""A job killed mid-run (SIGKILL) leaves no partial record, and rerunning Snakemake makes exactly
the missing records while the finished ones stay as they are, byte for byte and mtime."""

from __future__ import annotations

import copy
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from conftest import fault_env, snakemake
from tcbench import record as R

CONFIG = {
    "run": "kill", "require_gpu": False, "repeats": 1, "calibrate": {"enabled": False},
    "experiments": [{"name": "tiny", "workload": "amp_recipe", "precisions": ["fp32"],
                     "batch_sizes": [8, 16, 32],
                     "params": {"in_size": 16, "out_size": 16, "num_batches": 4, "epochs": 1,
                                "warmup_steps": 1}}],
}
VICTIM = "tiny/fp32_bs16_r1"
STALL = re.compile(r"injected stall at forward \d+ \(pid (\d+)\)")


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns,
                                         hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _interruptible() -> None:
    # A test run started in the background by a non-interactive shell (`cmd &`) inherits
    # SIGINT ignored, and Python keeps an ignored SIGINT ignored: Snakemake would never see
    # the Ctrl-C these tests send. Its default makes Python turn it into KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_snakemake(wd: Path, *args: str, env: dict) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("snakemake")
    return subprocess.Popen([str(exe) if exe.exists() else "snakemake", *args], cwd=wd,
                            env=os.environ | {"PYTHONPATH": str(wd / "workflow")} | env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_interruptible)


def kill_if_alive(pid: int | None) -> None:
    """Leave no stalled job behind, whatever happened to the test; and check the pid is still
    that job (not reused by another process) before killing it."""
    if pid is None:
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if b"tcbench.job.run" in cmdline and VICTIM.split("/")[1].encode() in cmdline:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for_stall(log: Path, proc: subprocess.Popen, timeout: float = 240) -> int:
    """The pid of the stalled training process, once it is inside its training loop."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists():
            m = STALL.search(log.read_text())
            if m:
                return int(m.group(1))
        if proc.poll() is not None:
            raise AssertionError(f"snakemake ended before the job stalled:\n{proc.stdout.read()}")
        time.sleep(0.2)
    raise AssertionError(f"no stall in {log} after {timeout} s")


def test_sigkill_mid_run_then_rerun_makes_exactly_the_missing_records(workflow_copy):
    wd = workflow_copy
    (wd / "config" / "kill.yaml").write_text(yaml.safe_dump(CONFIG))
    records = wd / "results" / "kill" / "records"
    victim = records / f"{VICTIM}.json"
    # --keep-going: the other cells finish while one job dies, so that there are records for the
    # rerun to leave alone.
    proc = start_snakemake(wd, "--cores", "2", "--keep-going", "--configfile", "config/kill.yaml",
                           env=fault_env(wd, f"stall@1:{VICTIM}"))
    pid = None
    try:
        pid = wait_for_stall(wd / "logs" / "kill" / "train" / f"{VICTIM}.log", proc)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"tcbench.job.run" in cmdline and str(victim.relative_to(wd)).encode() in cmdline
        os.kill(pid, signal.SIGKILL)  # the training job, not Snakemake
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        kill_if_alive(pid)
    assert proc.returncode != 0, out
    assert "tiny/fp32_bs16_r1" in out or "fp32_bs16_r1" in out

    # No partial record where the workflow would take it for a result, and no temporary either.
    assert not victim.exists()
    assert not [p for p in victim.parent.iterdir() if "fp32_bs16_r1" in p.name]
    before = snapshot(records)
    assert len(before) == 2, before
    for name in before:
        R.read(records / name)  # whole, schema-valid records
    assert not (wd / "results" / "kill" / "metrics.csv").exists()

    time.sleep(0.05)  # a rewrite of an old record could not keep its mtime_ns by accident
    # Plain rerun: no --rerun-incomplete needed, since the killed job left no output behind.
    snakemake(wd, "--cores", "2", "--configfile", "config/kill.yaml")
    after = snapshot(records)
    assert set(after) - set(before) == {f"{VICTIM}.json"}
    assert {k: after[k] for k in before} == before
    assert R.read(victim)["status"] == "ok"
    assert (wd / "results" / "kill" / "metrics.csv").exists()
    # And nothing is left to do.
    dry = snakemake(wd, "-n", "--cores", "1", "--configfile", "config/kill.yaml")
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_killing_snakemake_itself_loses_only_the_running_jobs(workflow_copy):
    """The harsher case: Snakemake and its job killed together (a batch system's time limit).
    Snakemake's lock is left behind, which --unlock removes; then a plain rerun completes."""
    wd = workflow_copy
    (wd / "config" / "kill.yaml").write_text(yaml.safe_dump(CONFIG))
    records = wd / "results" / "kill" / "records"
    proc = start_snakemake(wd, "--cores", "1", "--configfile", "config/kill.yaml",
                           env=fault_env(wd, f"stall@1:{VICTIM}"))
    pid = None
    try:
        pid = wait_for_stall(wd / "logs" / "kill" / "train" / f"{VICTIM}.log", proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and everything it started
        proc.communicate(timeout=60)
        kill_if_alive(pid)
    assert not (records / f"{VICTIM}.json").exists()
    before = snapshot(records) if records.exists() else {}
    time.sleep(0.05)
    locked = snakemake(wd, "--cores", "1", "--configfile", "config/kill.yaml", check=False)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    assert snapshot(records) == before if records.exists() else not before
    snakemake(wd, "--unlock", "--configfile", "config/kill.yaml")
    # Still no --rerun-incomplete: Snakemake marked the record incomplete, but there is none.
    snakemake(wd, "--cores", "1", "--configfile", "config/kill.yaml")
    after = snapshot(records)
    assert len(after) == 3
    assert {k: after[k] for k in before} == before
    assert f"{VICTIM}.json" in set(after) - set(before)


def test_ctrl_c_to_snakemake_alone_then_a_plain_rerun_completes(workflow_copy):
    """SIGINT to the snakemake process only (not its process group, so the running job is not
    interrupted): the job finishes while Snakemake shuts down, and Snakemake marks its record
    incomplete. The default profile's rerun-incomplete makes the plain rerun make it again
    instead of refusing with IncompleteFilesException."""
    wd = workflow_copy
    # each job times >= 2 s: a forked job is otherwise over in a fraction of a second, and the
    # signal would land between jobs (whichever Snakemake starts first: the order is its own)
    config = copy.deepcopy(CONFIG)
    config["experiments"][0]["params"]["min_timed_s"] = 2.0
    (wd / "config" / "kill.yaml").write_text(yaml.safe_dump(config))
    records = wd / "results" / "kill" / "records"
    logs = wd / "logs" / "kill" / "train" / "tiny"
    proc = start_snakemake(wd, "--cores", "1", "--configfile", "config/kill.yaml", env={})
    try:
        deadline = time.monotonic() + 240
        while not list(logs.glob("*.log")):  # the first job has started (its shell opened its log)
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0, out
    # the job outlived Snakemake's shutdown and is marked incomplete: the case at hand
    assert list((wd / ".snakemake" / "incomplete").rglob("*")), out
    rerun = snakemake(wd, "--cores", "1", "--configfile", "config/kill.yaml")
    assert "IncompleteFilesException" not in rerun.stdout + rerun.stderr
    assert len(snapshot(records)) == 3
    for path in records.rglob("*.json"):
        assert R.read(path)["status"] == "ok"
    dry = snakemake(wd, "-n", "--cores", "1", "--configfile", "config/kill.yaml")
    assert "Nothing to be done" in dry.stdout + dry.stderr
