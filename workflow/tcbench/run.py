"""One training job: parse the cell, build, train, measure, write one record.

    python -m tcbench.run --spec '{"workload": "amp_recipe", "precision": "amp-fp16",
                                   "batch_size": 512}' --out results/x/records/a.json

Exit status: 0 when a record was written (whatever its status: ``ok``, ``unsupported``,
``oom``, ``diverged``); 2 for a bad cell or missing data (no record, nothing to measure);
anything else is a bug and leaves no record.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

SPEC_KEYS = {"run", "experiment", "cell", "workload", "precision", "batch_size", "repeat",
             "params", "device"}


def parse_spec(spec: dict) -> dict:
    """Check a job spec and resolve its parameters; raises ValueError naming the culprit."""
    from . import precision as P
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


def _fault_hook():
    """Fault injection for the test suite only: TCBENCH_INJECT_FAULT=oom@N or nan@N makes the
    N-th forward pass (from 0) raise an out-of-memory error or return NaNs."""
    import torch

    fault = os.environ.get("TCBENCH_INJECT_FAULT")
    if not fault:
        return None
    kind, _, at = fault.partition("@")
    at, calls = int(at or 0), [0]

    def hook(module, inputs, output):
        calls[0] += 1
        if calls[0] - 1 == at:
            if kind == "oom":
                raise torch.cuda.OutOfMemoryError(f"injected out-of-memory fault at forward {at}")
            if kind == "nan":
                return output * float("nan")
        return output
    return hook


def run_job(spec: dict) -> dict:
    """Run one cell and return its record (not yet written)."""
    import torch

    from . import environment, measure, precision as P, train as T, workloads as W
    from .tensorcores import profile_kernels

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
    }
    ok, reason = mode.supported(device)
    if not ok:
        return record | {"status": "unsupported", "status_reason": reason}

    torch.manual_seed(params["seed"])
    flags = mode.apply(params["cudnn_benchmark"])
    record["precision_flags"] = flags | {
        "autocast_dtype": str(mode.autocast_dtype).replace("torch.", "")
        if mode.autocast_dtype else None,
        "grad_scaler": mode.use_scaler, "memory_format": params["memory_format"],
        "compile": params["compile"]}

    w = W.build(spec["workload"], params, spec["batch_size"], device)
    record["data"] = w.data
    channels_last = params["memory_format"] == "channels_last"
    flops_per_step = measure.count_training_flops(w.model, w.loss_fn, w.example_batch)
    if channels_last:
        w.model = w.model.to(memory_format=torch.channels_last)
    model = w.model if params["compile"] == "off" else torch.compile(
        w.model, mode=None if params["compile"] == "default" else params["compile"])
    hook = _fault_hook()
    if hook:
        w.model.register_forward_hook(hook)
    scaler = mode.scaler(device)
    step = T.eager_step(model, w, scaler, mode, device)
    graphs = {"requested": params["cuda_graphs"] == "on", "captured": False, "reason": None}
    if graphs["requested"]:
        ok, reason = T.graphs_supported(w, mode, device)
        if not ok:
            return record | {"status": "unsupported",
                             "status_reason": f"cuda_graphs=on: {reason}"}
        step = T.GraphedStep(model, w, mode, device,
                             T.to_device(w.example_batch, device, False, channels_last))
        graphs["captured"] = True
    record["precision_flags"]["cuda_graphs"] = graphs
    timer = measure.StepTimer(device)
    clock = measure.WallClock(device)
    sampler = measure.NvmlSampler(device, params["telemetry_interval_s"])

    clock.start()
    try:
        with sampler:
            log = T.train(w, step, device, timer, scaler, channels_last,
                          params["sync_loss_every_step"])
            clock.stop()
    except torch.cuda.OutOfMemoryError as exc:
        mem = measure.memory_stats(device)
        record |= {"status": "oom", "status_reason": str(exc).splitlines()[0][:500],
                   "error": {"type": type(exc).__name__, "message": str(exc)[:2000],
                             "step": len(timer), **mem}}
        return record

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
    }
    record["telemetry"] = sampler.result(samples)
    if bad_step is not None:
        record |= {"status": "diverged",
                   "status_reason": f"loss became NaN/inf at step {bad_step}"}

    def one_step():
        step(*T.to_device(w.example_batch, device, False, channels_last))

    record["tensor_cores"] = profile_kernels(one_step, params["profile_steps"], device)
    if w.evaluate is not None and record["status"] == "ok":
        record["metrics"] |= w.evaluate()
    return record


def main(argv: list[str] | None = None) -> int:
    from . import gpus, record as R
    from .data import DataMissingError

    ap = argparse.ArgumentParser(prog="python -m tcbench.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", help="the job as a JSON object")
    src.add_argument("--spec-file", type=Path, help="the job as a JSON file")
    ap.add_argument("--out", type=Path, required=True, help="where the JSON record goes")
    args = ap.parse_args(argv)
    try:
        gpus.pin()  # before anything initialises CUDA: one GPU per job, held until exit
        spec = json.loads(args.spec if args.spec else args.spec_file.read_text())
        record = run_job(spec)
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
