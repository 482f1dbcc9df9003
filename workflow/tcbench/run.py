"""One training job: parse the cell, build, train, measure, write one record.

    python -m tcbench.run --spec '{"workload": "amp_recipe", "precision": "amp-fp16",
                                   "batch_size": 512}' --out results/x/records/a.json

Exit status: 0 when a record was written (whatever its status: ``ok``, ``unsupported``,
``oom``, ``diverged``); 2 for a bad cell or missing data (no record, nothing to measure);
anything else is a bug and leaves no record.

An out-of-memory error while building, training or evaluating is a result, not a crash: status
``oom``, with the phase, the step and the memory in use in ``error``. An optional spec key
``memory_limit_bytes`` holds the job to a memory budget (see tcbench.memlimit).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

SPEC_KEYS = {"run", "experiment", "cell", "workload", "precision", "batch_size", "repeat",
             "params", "device", "memory_limit_bytes"}


def parse_spec(spec: dict) -> dict:
    """Check a job spec and resolve its parameters; raises ValueError naming the culprit."""
    from . import memlimit, precision as P
    from . import workloads as W

    if not isinstance(spec, dict):
        raise ValueError(f"the job spec must be a JSON object, got {type(spec).__name__}")
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise ValueError(f"unknown job spec key(s): {', '.join(unknown)}")
    for key in ("workload", "precision", "batch_size"):
        if key not in spec:
            raise ValueError(f"job spec lacks {key!r}")
    bs = spec["batch_size"]
    if not isinstance(bs, int) or isinstance(bs, bool) or bs < 1:
        raise ValueError(f"batch_size={bs!r} must be a positive integer")
    P.get(spec["precision"])
    memlimit.check(spec.get("memory_limit_bytes"))
    out = {"run": "adhoc", "experiment": spec["workload"], "repeat": 1, "device": "auto"} | spec
    out["params"] = W.resolve_params(spec["workload"], spec.get("params"))
    out.setdefault("cell", f"{out['precision']}_bs{bs}_r{out['repeat']}")
    return out


def pick_device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={name!r} but torch sees no CUDA device")
    return device


FAULT_ENV = "TCBENCH_INJECT_FAULT"
FAULT_KINDS = ("oom", "nan", "inf", "stall")
# Markers of allocation failures that surface as plain RuntimeErrors (cuBLAS/cuDNN workspaces,
# cudaMalloc outside the caching allocator, the CPU allocator) rather than torch.OutOfMemoryError.
OOM_MARKERS = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
               "DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory")


def parse_faults(text: str, job_id: str) -> list[tuple[str, int]]:
    """Fault injection, for the test suite only; nothing in a config can reach it.

    ``TCBENCH_INJECT_FAULT`` holds ``;``-separated entries ``KIND@N[:PATTERN]``: at the N-th
    forward pass (from 0) of every job whose ``experiment/cell`` matches the glob ``PATTERN``
    (every job when it is left out), ``oom`` raises an out-of-memory error, ``nan`` / ``inf``
    turn the model's output into NaNs / infinities, and ``stall`` prints ``injected stall ... (pid P)`` to stderr and
    sleeps, so that a test can kill the job mid-run. A malformed entry is an error, not ignored.
    """
    from fnmatch import fnmatchcase

    faults = []
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        head, _, pattern = entry.partition(":")
        kind, sep, at = head.partition("@")
        if kind not in FAULT_KINDS or not sep or not at.isdigit():
            raise ValueError(f"{FAULT_ENV}: {entry!r} is not KIND@N[:experiment/cell glob] with "
                             f"KIND one of {', '.join(FAULT_KINDS)}")
        if not pattern or fnmatchcase(job_id, pattern):
            faults.append((kind, int(at)))
    return faults


def _fault_hook(job_id: str):
    import time

    import torch

    faults = parse_faults(os.environ.get(FAULT_ENV, ""), job_id)
    if not faults:
        return None
    calls = [0]

    def hook(module, inputs, output):
        n = calls[0]
        calls[0] += 1
        for kind, at in faults:
            if n != at:
                continue
            if kind == "oom":
                raise torch.cuda.OutOfMemoryError(f"injected out-of-memory fault at forward {n}")
            if kind in ("nan", "inf"):
                output = output * float(kind)
            if kind == "stall":
                print(f"tcbench.run: injected stall at forward {n} (pid {os.getpid()})",
                      file=sys.stderr, flush=True)
                time.sleep(600)  # long enough to be killed; bounded if nobody does
        return output
    return hook


def is_oom(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.cuda.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and any(m in str(exc) for m in OOM_MARKERS))


def process_age_s() -> float | None:
    """Seconds since this process started (Linux /proc), None where that cannot be read."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class Phases:
    """Where a job's time goes outside its timed steps: named spans, each from the previous mark
    to this one (the harness overhead, split). Host wall clock; cheap enough to leave on."""

    def __init__(self, started_s: float | None = None):
        self.started_s = started_s  # process start to the first mark's origin
        self.t = time.perf_counter()
        self.spans: dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.spans[name] = self.spans.get(name, 0.0) + now - self.t
        self.t = now

    def result(self) -> dict:
        return {"process_start_to_main_s": self.started_s,
                "phases_s": {k: round(v, 6) for k, v in self.spans.items()}}


def run_job(spec: dict, phases: Phases | None = None) -> dict:
    """Run one cell and return its record (not yet written)."""
    phases = phases or Phases()
    import torch

    from . import environment, measure, memlimit, precision as P

    phases.mark("imports")
    spec = parse_spec(spec)
    params = spec["params"]
    device = pick_device(spec["device"])
    mode = P.get(spec["precision"])
    record = {
        "schema_version": 1,
        **{k: spec[k] for k in ("run", "experiment", "cell", "workload", "precision",
                                "batch_size", "repeat")},
        "params": params,
        "config_hash": environment.config_hash({k: v for k, v in spec.items() if k != "run"}),
        "status": "ok", "status_reason": None,
        "precision_flags": None, "data": None, "metrics": None, "telemetry": None,
        "tensor_cores": None, "error": None,
        "environment": environment.collect(device),
        "harness": None,
    }
    phases.mark("device_and_environment")
    ok, reason = mode.supported(device)
    if not ok:
        return record | {"status": "unsupported", "status_reason": reason,
                         "harness": phases.result()}
    limit = spec.get("memory_limit_bytes")
    if limit is not None and device.type != "cuda" and params["compile"] != "off":
        raise ValueError("memory_limit_bytes on a CPU is simulated through autograd's saved-tensor "
                         "hooks, which torch.compile bypasses; use compile: off with it")

    torch.manual_seed(params["seed"])
    flags = mode.apply(params["cudnn_benchmark"] == "on")
    record["precision_flags"] = flags | {
        "autocast_dtype": str(mode.autocast_dtype).replace("torch.", "")
        if mode.autocast_dtype else None,
        "grad_scaler": mode.use_scaler, "memory_format": params["memory_format"],
        "compile": params["compile"]}

    timer = measure.StepTimer(device)
    phase = ["building"]
    budget = memlimit.Budget(limit, device)
    try:
        with budget:
            _train_and_measure(spec, record, mode, device, timer, budget, phase, phases)
    except Exception as exc:  # noqa: BLE001 - only out-of-memory is a result; the rest re-raises
        if not is_oom(exc):
            raise
        # Read while the failed step's tensors are still referenced by the traceback.
        mem = measure.memory_in_use(device)
        message = str(exc)
        record |= {"status": "oom", "metrics": None,
                   "status_reason": f"out of memory while {phase[0]}"
                                    + (f" (step {len(timer)})" if phase[0] == "training" else "")
                                    + f": {message.splitlines()[0][:400]}",
                   "error": {"type": type(exc).__name__, "message": message[:2000],
                             "phase": phase[0],
                             "step": len(timer) if phase[0] == "training" else None,
                             **mem, **budget.info()}}
    phases.mark("capturing_cuda_graph" if phase[0].startswith("capturing") else phase[0])
    record["harness"] = phases.result()
    return record


def _train_and_measure(spec, record, mode, device, timer, budget, phase, phases) -> None:
    """Build, train, measure and profile one cell, filling in ``record``; ``phase[0]`` says how
    far it got, for the record of an out-of-memory error."""
    import torch

    from . import measure, train as T, workloads as W
    from .tensorcores import profile_kernels

    params = spec["params"]
    phases.mark("imports")
    w = W.build(spec["workload"], params, spec["batch_size"], device)
    record["data"] = w.data
    record["model"] = w.model_info  # models-branch hook: what was built (name, source, size)
    phases.mark("building")
    channels_last = params["memory_format"] == "channels_last"
    flops_per_step = measure.count_training_flops(w.model, w.loss_fn, w.example_batch)
    phases.mark("counting_flops")
    # FP8 modes: torchao's Float8Linear replaces nn.Linear (FLOPs above are the same; before compile)
    batches = {spec["batch_size"], w.data.get("samples_per_epoch", 0) % spec["batch_size"]} - {0}
    w.model, fp8 = mode.prepare(w.model, params["compile"], batches)
    record["precision_flags"]["fp8"] = fp8
    if fp8 is not None and fp8["unsupported_reason"]:
        record |= {"status": "unsupported", "status_reason": fp8["unsupported_reason"]}
        return
    if channels_last:
        w.model = w.model.to(memory_format=torch.channels_last)
    model = w.model if params["compile"] == "off" else torch.compile(
        w.model, mode=None if params["compile"] == "default" else params["compile"])
    hook = _fault_hook(f"{spec['experiment']}/{spec['cell']}")
    if hook:
        w.model.register_forward_hook(hook)
    budget.watch(w.model)
    scaler = mode.scaler(device)
    step = T.eager_step(model, w, scaler, mode, device)
    graphs = {"requested": params["cuda_graphs"] == "on", "captured": False, "reason": None}
    if graphs["requested"]:
        ok, reason = T.graphs_supported(w, mode, device)
        if not ok:
            record |= {"status": "unsupported", "status_reason": f"cuda_graphs=on: {reason}"}
            return
        phase[0] = "capturing a CUDA graph"
        step = T.GraphedStep(model, w, mode, device,
                             T.to_device(w.example_batch, device, False, channels_last))
        graphs["captured"] = True
    record["precision_flags"]["cuda_graphs"] = graphs
    phases.mark("capturing_cuda_graph" if graphs["captured"] else "building")
    clock = measure.WallClock(device)
    sampler = measure.NvmlSampler(device, params["telemetry_interval_s"])

    phase[0] = "training"
    clock.start()
    with sampler:
        log = T.train(w, step, device, timer, scaler, channels_last,
                      params["sync_loss_every_step"])
        clock.stop()
    phases.mark("training")  # warm-up and compilation included, as in total_time_s

    phase[0] = "measuring"
    wait, comp = timer.intervals()
    steps = measure.step_statistics(wait, comp, log.samples, params["warmup_steps"],
                                    params["input_bound_share"])
    samples = sum(log.samples)
    memory = measure.memory_stats(device)
    bad_step = log.first_nonfinite_step()
    per_sample = flops_per_step / spec["batch_size"]
    throughput = steps["throughput_samples_per_s"]
    record["metrics"] = {
        "total_time_s": clock.total_time_s,
        **{k: memory[k] for k in ("max_memory_allocated_bytes", "max_memory_reserved_bytes")},
        "epochs": w.epochs,
        "samples": samples,
        "wall_throughput_samples_per_s": samples / clock.total_time_s,
        **steps,
        "compile_time_s": steps["first_step_time_s"] if params["compile"] != "off" else None,
        "final_loss": log.final_loss(),
        "loss_curve": [list(p) for p in log.loss_curve(params["loss_every"])],
        "first_nonfinite_step": bad_step,
        **log.scaler_stats(scaler),
        "flops_per_step": flops_per_step,
        "flops_per_sample": per_sample,
        "achieved_tflops": per_sample * throughput / 1e12 if throughput else None,
        "memory_note": memory["memory_note"],
        **budget.info(),
    }
    record["telemetry"] = sampler.result(samples)
    if bad_step is not None:
        record |= {"status": "diverged",
                   "status_reason": f"loss became NaN/inf at step {bad_step}"}

    def one_step():
        step(*T.to_device(w.example_batch, device, False, channels_last))

    phases.mark("measuring")
    phase[0] = "profiling"
    try:
        record["tensor_cores"] = profile_kernels(one_step, params["profile_steps"], device)
    except Exception as exc:  # noqa: BLE001 - the training measurement above stands
        if not is_oom(exc):
            raise
        record["tensor_cores"] = {"profiled": False,
                                  "profile_note": f"out of memory while profiling: {exc}"[:500]}
    phases.mark("profiling")
    phase[0] = "evaluating"
    if w.evaluate is not None and record["status"] == "ok":
        record["metrics"] |= w.evaluate()
    phases.mark("evaluating")


def main(argv: list[str] | None = None) -> int:
    phases = Phases(started_s=process_age_s())
    from . import gpus, record as R
    from .data import DataMissingError  # imports torch and torchvision

    phases.mark("imports")

    ap = argparse.ArgumentParser(prog="python -m tcbench.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", help="the job as a JSON object")
    src.add_argument("--spec-file", type=Path, help="the job as a JSON file")
    ap.add_argument("--out", type=Path, required=True, help="where the JSON record goes")
    args = ap.parse_args(argv)
    try:
        gpus.pin()  # before anything initialises CUDA: one GPU per job, held until exit
        phases.mark("gpu_pinning")
        spec = json.loads(args.spec if args.spec else args.spec_file.read_text())
        record = run_job(spec, phases)
    except (ValueError, DataMissingError, json.JSONDecodeError) as exc:
        print(f"tcbench.run: error: {exc}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        return 1
    R.write(record, args.out)
    m = record.get("metrics") or {}
    print(f"{record['workload']} {record['precision']} bs={record['batch_size']}: "
          f"{record['status']}" + (f" ({record['status_reason']})" if record['status_reason']
                                   else "")
          + (f", {m['total_time_s']:.3f} s, {m['throughput_samples_per_s']:.1f} samples/s"
             if m.get("total_time_s") and m.get("throughput_samples_per_s") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
