"""Probes as processes of their own (``tcbench.job.run``, forked by ``tcbench.launch.forkclient``
where the plan says a server can serve them), one search at a time per device, and the result
file of a search (schema ``tcbench-capacity/1``)."""

from __future__ import annotations

import fcntl
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import atomic, vocabulary as V
from .plan import probe_spec
from .predict import peak_memory, predict
from .search import Outcome, confirm, search

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


class ProcessProbe:
    """Runs each probe as a training job in a process of its own (see the package doc)."""

    def __init__(self, s: dict, probe_dir: Path):
        self.s, self.dir = s, Path(probe_dir)
        self.records: dict[int, dict] = {}
        self.log: list[dict] = []

    def __call__(self, bs: int) -> Outcome:
        from .. import record as R

        path = self.dir / f"bs{bs}.json"
        path.unlink(missing_ok=True)
        # forked from the workflow's preloaded interpreter (which never touched CUDA) where the
        # plan says one can serve it, else fresh; either way a process of its own. --checked:
        # the plan's check ran the model's trial step (tcbench.capacity.plan), for any batch
        cmd = [sys.executable, "-m", self.s.get("launcher") or "tcbench.job.run",
               "--spec", json.dumps(probe_spec(self.s, bs)), "--checked", "--out", str(path)]
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
        harness = (record or {}).get("harness") or {}
        self.log.append({"batch_size": bs, "fits": out.fits, "status": out.status,
                         "status_reason": out.reason, "peak_memory_bytes": peak,
                         "peak_memory_source": source, "wall_s": round(wall, 3),
                         "process_start": (harness.get("process") or {}).get("start"),
                         "record": path.name if record else None})
        return out


def lock_path() -> Path:
    devices = os.environ.get("CUDA_VISIBLE_DEVICES", "all").replace(",", "-").replace("/", "_")
    return Path(tempfile.gettempdir()) / f"tcbench-capacity-{os.getuid()}-{devices}.lock"


def _searched(s: dict, probe) -> dict:
    """The search itself: predicted then confirmed (``predict``), else doubling then bisection.
    A prediction that cannot be made (a fit probe that did not fit, no memory measured) falls
    back to the doubling search, which reuses the fit probes' outcomes, and says why."""
    res, top = s["resolution"], s["max"]
    if not s.get("predict"):
        return search(probe, s["start"], top, res) | {"prediction": None}
    known: dict[int, Outcome] = {}
    for bs in dict.fromkeys((s["start"], min(2 * s["start"], top))):
        known[bs] = probe(bs)
        if not known[bs].fits:
            break
    fitted = {bs: probe.records[bs] for bs, o in known.items() if o.fits and bs in probe.records}
    last = known[max(known)]
    if len(fitted) == 2:
        pred = predict(fitted, s.get("memory_limit_bytes"), res)
    elif not last.fits:
        said = "ran out of memory" if last.fits is False else f"ended {last.status}"
        pred = {"predicted": None, "reason": f"batch size {max(known)} {said}: no line "
                                              f"through two sizes that fit"}
    else:
        pred = {"predicted": None, "reason": "the line needs two sizes that fit, with their "
                                              "records (start and 2 × start, within max)"}
    if pred["predicted"] is not None:
        step = max(math.ceil(pred["predicted"] * s["bracket"] / res), 1) * res
        result = confirm(probe, pred["predicted"], step, res, top, known)
        pred |= {"step": step, "verdict": result["prediction"]}
    else:
        def remembered(bs):
            return known[bs] if bs in known else probe(bs)
        result = search(remembered, s["start"], top, res)
        result["order"] = [bs for bs in result["order"] if bs not in known]
    return result | {"order": list(known) + result["order"], "prediction": pred}


# what a check of another search's limit found, in the words of the capacity table
CHECKED = {"bracketed": "the same limit", "too low": "a higher limit", "too high": "a lower limit"}


def _checked(s: dict, probe, reference: dict) -> dict | None:
    """The search repeated with another setting (cuDNN autotuning on), started from the limit
    the plain search found: that limit and the size above it, two probes where the setting
    changes nothing; where it does, the steps and bisection of ``confirm`` find the new limit.
    None where the plain search found no limit to start from."""
    low, high = reference.get("largest_ok"), reference.get("smallest_oom")
    if reference.get("status") != "found" or not low or not high or high <= low:
        return None
    result = confirm(probe, low, high - low, s["resolution"], s["max"])
    return result | {"prediction": {
        "predicted": low, "basis": f"the limit of the search without the setting "
                                   f"({low:,} fits, {high:,} does not)",
        "step": high - low, "verdict": CHECKED[result["prediction"]]}}


def _not_probed(s: dict) -> dict:
    return {"status": "not_probed", "status_reason": s["not_probed"], "largest_ok": None,
            "smallest_oom": None, "order": [], "prediction": None}


def run_search(s: dict, out: Path, probe=None, reference: dict | None = None) -> dict:
    """One search, written atomically to ``out``; its probes' records go next to it.
    ``reference``: the result of the same search without this one's setting, whose limit a
    variant checks first (``_checked``)."""
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
    if s.get("not_probed"):
        result = _not_probed(s)
    else:
        with open(lock_path(), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            t0 = time.perf_counter()   # the search's own time, not its wait for the device
            result = (reference and _checked(s, probe, reference)) or _searched(s, probe)
    best = probe.records.get(result["largest_ok"]) if result["largest_ok"] else None
    any_record = next(iter(probe.records.values()), None)
    peak, source = peak_memory(best) if best else (None, None)
    env = (any_record or {}).get("environment") or {}
    starts = sorted({p.get("process_start") for p in probe.log if p.get("process_start")})
    doc = {"schema": RESULT_SCHEMA, **{k: s.get(k) for k in (
               "run", "workload", "precision", "start", "max", "resolution", "steps",
               "memory_limit_bytes", "params", "cudnn_benchmark", "variant", "predict")},
           "status": result["status"], "status_reason": result["status_reason"],
           "largest_ok": result["largest_ok"], "smallest_oom": result["smallest_oom"],
           "prediction": result.get("prediction"),
           "peak_memory_bytes": peak, "peak_memory_source": source,
           "throughput_samples_per_s": ((best or {}).get("metrics") or {})
           .get("throughput_samples_per_s"),
           "samples_unit": "sequences" if s["workload"] == "transformers" else "samples",
           "tokens_per_sample": ((any_record or {}).get("params") or {}).get("seq_len")
           if s["workload"] == "transformers" else None,
           "probes": probe.log, "probe_process_start": starts,
           "search_wall_s": round(time.perf_counter() - t0, 3),
           "device_name": env.get("device_name"),
           "gpu_memory_total_bytes": env.get("gpu_memory_total_bytes"),
           "torch_version": env.get("torch_version"),
           "timestamp_utc": env.get("timestamp_utc")}
    atomic.write_json(out, doc)
    return doc
