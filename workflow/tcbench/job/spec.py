"""A job's spec: checked and resolved before anything is built (errors name the culprit); the
device it asks for; what counts as running out of memory."""

from __future__ import annotations

from ..vocabulary import OOM

SPEC_KEYS = {"run", "experiment", "cell", "workload", "precision", "batch_size", "repeat",
             "params", "device", "memory_limit_bytes", "repeat_reason"}
# Markers of allocation failures that surface as plain RuntimeErrors (cuBLAS/cuDNN workspaces,
# cudaMalloc outside the caching allocator, the CPU allocator) rather than torch.OutOfMemoryError.
OOM_MARKERS = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
               "DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory")


def parse_spec(spec: dict, trial: bool = True) -> dict:
    """Check a job spec and resolve its parameters; raises ValueError naming the culprit.
    ``trial``: the workload's trial step too (see tcbench.workloads.resolve_params)."""
    from .. import workloads
    from . import memlimit, precision

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
    precision.get(spec["precision"])
    memlimit.check(spec.get("memory_limit_bytes"))
    out = {"run": "adhoc", "experiment": spec["workload"], "repeat": 1, "device": "auto"} | spec
    out["params"] = workloads.resolve_params(spec["workload"], spec.get("params"), trial)
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


def is_oom(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.cuda.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and any(m in str(exc) for m in OOM_MARKERS))


def oom_fields(exc: BaseException, phase: str, step: int | None, memory: dict) -> dict:
    """The record's fields for a job that ran out of memory while ``phase`` (at ``step``), with
    the ``memory`` in use at that moment: a result, not a crash."""
    message = str(exc)
    return {"status": OOM, "metrics": None,
            "status_reason": f"out of memory while {phase}"
                             + (f" (step {step})" if step is not None else "")
                             + f": {message.splitlines()[0][:400]}",
            "error": {"type": type(exc).__name__, "message": message[:2000], "phase": phase,
                      "step": step, **memory}}
