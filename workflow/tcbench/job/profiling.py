"""Kernel evidence of one training step from ``torch.profiler``: the job's side of "were the
Tensor Cores used?". The profile's kernels are classified and summarised by
``tcbench.kernels``, which the reports also read; this module is the part that runs torch.
"""

from __future__ import annotations

import time
from collections import defaultdict

from ..kernels import summarise_kernels, timed_busy_share
from .spec import is_oom


def profile_kernels(step, steps: int, device) -> dict:
    """Run ``step()`` ``steps`` times under ``torch.profiler`` and summarise its GPU kernels.

    The profiler records CUDA activity only (no CPU operator events, the least it can add to a
    host-bound step); GPU-side annotation ranges are skipped, so the shares count kernels only.
    Under the profiler a host-bound step runs slower than in the timed window: the step time
    here is reported as ``profiled_step_time_s`` and its busy share as
    ``gpu_busy_share_under_profiler``; ``timed_busy_share`` gives the timed steps' figure.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    if device.type != "cuda":
        return {"profiled": False, "profile_note": "kernel profiling needs a CUDA device"}
    if steps <= 0:
        return {"profiled": False, "profile_note": "profile_steps is 0"}
    step()  # one unprofiled step so the profile holds steady-state kernels only
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    kernels: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for evt in prof.events():
        # user annotations by the profiler's own flag; summarise_kernels drops those it misses
        if evt.device_type != torch.autograd.DeviceType.CUDA or \
                getattr(evt, "is_user_annotation", False):
            continue
        us = getattr(evt, "device_time", None)
        if us is None:
            us = getattr(evt, "cuda_time", 0.0)
        kernels[evt.name][0] += us / 1e6
        kernels[evt.name][1] += 1
    summary = summarise_kernels({k: (v[0], v[1]) for k, v in kernels.items()})
    summary |= {"profiled": True, "profile_steps": steps, "profile_wall_s": wall,
                "profile_activities": "cuda", "annotations_excluded": True,
                "profiled_step_time_s": wall / steps,
                "gpu_busy_share_under_profiler":
                    min(summary["kernel_time_s"] / wall, 1.0) if wall else None,
                "profile_note": None}
    return summary


def cell_evidence(one_step, steps: int, device, step_time_median_s: float | None) -> dict:
    """The profile of ``one_step`` and the timed steps' busy share from it; running out of
    memory while profiling leaves the training measurement standing, with a note."""
    try:
        evidence = profile_kernels(one_step, steps, device)
    except Exception as exc:  # noqa: BLE001 - out of memory is a note; the rest re-raises
        if not is_oom(exc):
            raise
        evidence = {"profiled": False,
                    "profile_note": f"out of memory while profiling: {exc}"[:500]}
    return evidence | timed_busy_share(evidence, step_time_median_s)
