"""Probes as fresh ``python -m tcbench.job.run`` processes, one search at a time per device, and the
result file of a search (schema ``tcbench-capacity/1``)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import atomic, vocabulary as V
from .plan import probe_spec
from .search import Outcome, search

RESULT_SCHEMA = "tcbench-capacity/1"


def outcome_of(record: dict | None, returncode: int, tail: str) -> Outcome:
    """A probe's record (or its absence) as an Outcome. Only an out-of-memory record counts as
    "does not fit"; a crash is never taken for one."""
    if record is None:
        how = (f"killed by signal {-returncode}" if returncode < 0
               else f"exited with status {returncode}")
        return Outcome(None, V.ERROR, f"the probe {how} without a record: {tail[-600:].strip()}")
    status = record["status"]
    if status in (V.OK, V.DIVERGED):  # a NaN loss in a few steps on random data still fitted
        return Outcome(True, status, record.get("status_reason"))
    if status == V.OOM:
        return Outcome(False, V.OOM, record.get("status_reason"))
    return Outcome(None, status, record.get("status_reason"))


def peak_memory(record: dict) -> tuple[int | None, str | None]:
    m = record.get("metrics") or {}
    if m.get("max_memory_allocated_bytes") is not None:
        return m["max_memory_allocated_bytes"], "torch.cuda.max_memory_allocated"
    if m.get("simulated_peak_bytes") is not None:
        return m["simulated_peak_bytes"], "simulated"
    return None, None


class ProcessProbe:
    """Runs each probe as ``python -m tcbench.job.run`` in a fresh process (see the package doc)."""

    def __init__(self, s: dict, probe_dir: Path):
        self.s, self.dir = s, Path(probe_dir)
        self.records: dict[int, dict] = {}
        self.log: list[dict] = []

    def __call__(self, bs: int) -> Outcome:
        from .. import record as R

        path = self.dir / f"bs{bs}.json"
        path.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "tcbench.job.run",
               "--spec", json.dumps(probe_spec(self.s, bs)), "--out", str(path)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=self.s.get("probe_timeout_s"))
            returncode, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            returncode = -9
            output = f"timed out after {exc.timeout} s (capacity.probe_timeout_s)"
        wall = time.perf_counter() - t0
        print(f"--- probe batch size {bs} ({wall:.1f} s, exit {returncode})\n{output.strip()}",
              flush=True)
        record = None
        if path.exists():
            record = R.read(path)  # written by tcbench.job.run, so schema-valid; checked anyway
            self.records[bs] = record
        out = outcome_of(record, returncode, output)
        peak, source = peak_memory(record) if record else (None, None)
        self.log.append({"batch_size": bs, "fits": out.fits, "status": out.status,
                         "status_reason": out.reason, "peak_memory_bytes": peak,
                         "peak_memory_source": source, "wall_s": round(wall, 3),
                         "record": path.name if record else None})
        return out


def lock_path() -> Path:
    devices = os.environ.get("CUDA_VISIBLE_DEVICES", "all").replace(",", "-").replace("/", "_")
    return Path(tempfile.gettempdir()) / f"tcbench-capacity-{os.getuid()}-{devices}.lock"


def run_search(s: dict, out: Path, probe=None) -> dict:
    """One search, written atomically to ``out``; its probes' records go next to it."""
    out = Path(out)
    probe_dir = out.with_suffix("")
    probe_dir.mkdir(parents=True, exist_ok=True)
    # A rerun starts clean: the folder is this search's alone (temporaries of a killed probe too).
    for stale in [*probe_dir.glob("bs*.json"), *probe_dir.glob(".bs*.json.*.tmp")]:
        stale.unlink()
    probe = probe or ProcessProbe(s, probe_dir)
    t0 = time.perf_counter()
    # Concurrent probes would share the device's memory and each find less than there is, so
    # searches on one machine (and set of visible GPUs) take turns, whatever --cores and
    # --resources say. flock is released by the kernel when the holder dies, even by SIGKILL.
    with open(lock_path(), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = search(probe, s["start"], s["max"], s["resolution"])
    best = probe.records.get(result["largest_ok"]) if result["largest_ok"] else None
    any_record = next(iter(probe.records.values()), None)
    peak, source = peak_memory(best) if best else (None, None)
    env = (any_record or {}).get("environment") or {}
    doc = {"schema": RESULT_SCHEMA, **{k: s[k] for k in ("run", "workload", "precision", "start",
                                                          "max", "resolution", "steps",
                                                          "memory_limit_bytes", "params")},
           "status": result["status"], "status_reason": result["status_reason"],
           "largest_ok": result["largest_ok"], "smallest_oom": result["smallest_oom"],
           "peak_memory_bytes": peak, "peak_memory_source": source,
           "throughput_samples_per_s": ((best or {}).get("metrics") or {})
           .get("throughput_samples_per_s"),
           "probes": probe.log, "search_wall_s": round(time.perf_counter() - t0, 3),
           "device_name": env.get("device_name"),
           "gpu_memory_total_bytes": env.get("gpu_memory_total_bytes"),
           "torch_version": env.get("torch_version"),
           "timestamp_utc": env.get("timestamp_utc")}
    atomic.write_json(out, doc)
    return doc
