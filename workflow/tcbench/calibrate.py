"""The device's own matmul ceilings, measured once per result set, for MFU.

Large square matrix products in each precision, timed with CUDA events after warm-up (median
of the timed products, fresh random operands, never zeros). Model FLOP utilisation is then
achieved TFLOP/s over the ceiling *of the same mode on the same device*: a measured number,
not a datasheet one.

    python -m tcbench.calibrate --out results/nvidia-h200/calibration.json [--size 8192]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def _modes():
    import torch
    # mode name -> (operand dtype, allow TF32)
    return {"fp32": (torch.float32, False), "tf32": (torch.float32, True),
            "amp-fp16": (torch.float16, False), "amp-bf16": (torch.bfloat16, False)}


def measure(size: int, iterations: int, device) -> dict:
    import torch

    from .precision import get

    rows = {}
    for name, (dtype, tf32) in _modes().items():
        ok, reason = get(name).supported(device)
        if not ok:
            rows[name] = {"status": "unsupported", "status_reason": reason, "tflops": None}
            continue
        torch.backends.cuda.matmul.allow_tf32 = tf32
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(size, size, device=device, generator=g).to(dtype)
        b = torch.randn(size, size, device=device, generator=g).to(dtype)
        times = []
        for i in range(iterations + 3):
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                a @ b
                end.record()
                end.synchronize()
                t = start.elapsed_time(end) / 1e3
            else:
                t0 = time.perf_counter()
                a @ b
                t = time.perf_counter() - t0
            if i >= 3:  # warm-up: library load, heuristics, clocks ramping up
                times.append(t)
        t = statistics.median(times)
        rows[name] = {"status": "ok", "status_reason": None, "tflops": 2 * size ** 3 / t / 1e12,
                      "median_time_s": t, "iterations": iterations, "size": size,
                      "dtype": str(dtype).replace("torch.", ""), "allow_tf32": tf32}
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def main(argv=None) -> int:
    from . import gpus

    gpus.pin()  # before torch initialises CUDA: the ceilings of a GPU no other job is using
    import torch

    from . import atomic, environment
    from .record import SCHEMA_VERSION

    ap = argparse.ArgumentParser(prog="python -m tcbench.calibrate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--iterations", type=int, default=20)
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    size = args.size if device.type == "cuda" else min(args.size, 1024)  # a CPU needs no 8k
    result = {"schema_version": SCHEMA_VERSION, "kind": "calibration", "size": size,
              "modes": measure(size, args.iterations, device),
              "environment": environment.collect(device)}
    atomic.write_json(args.out, result)
    for name, row in result["modes"].items():
        print(f"{name:9s} " + (f"{row['tflops']:8.1f} TFLOP/s" if row["tflops"] else row["status"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
