"""The device's own matmul ceilings, measured once per result set, for MFU.

Large square matrix products in each precision, timed with CUDA events after warm-up (median
of the timed products, fresh random operands, never zeros). Model FLOP utilisation is then
achieved TFLOP/s over the ceiling *of the same mode on the same device*: a measured number,
not a datasheet one. Each mode's product is read from the vocabulary: its autocast dtype (or
float32, with or without TF32); the FP8 modes multiply float8 e4m3 operands with
``torch._scaled_mm`` (bfloat16 out, fast accumulation, as torchao's forward GEMM does) with one
scale per tensor (``fp8-tensorwise``) or one per row and column (``fp8-rowwise``), the roof
their Float8Linear GEMMs run under. Beside the roofs, the device-to-device copy bandwidth
(``memory``: bytes read plus bytes written over the median time of one large copy), the ceiling
of the elementwise work FP8 adds (amax, casts, scales; tcbench.analysis.crossover).

    python -m tcbench.job.calibrate --out results/nvidia-h200/calibration.json [--size 8192]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

WARMUP = 3  # library load, heuristics, clocks ramping up


def product(spec, size: int, device, generator):
    """``(matmul, description)``: one ``size``-cubed product in the precision of ``spec`` (a
    ``vocabulary.Mode``), on fresh random operands, and what it multiplies, for the record."""
    import torch

    a = torch.randn(size, size, device=device, generator=generator)
    b = torch.randn(size, size, device=device, generator=generator)
    if spec.fp8_recipe:
        fp8 = torch.float8_e4m3fn
        # _scaled_mm takes its second operand column-major; randn stays inside e4m3's range
        a8, b8 = a.to(fp8), b.t().contiguous().to(fp8).t()
        if spec.fp8_recipe == "rowwise":
            sa = torch.ones(size, 1, device=device)
            sb = torch.ones(1, size, device=device)
        else:
            sa = sb = torch.ones((), device=device)
        out = getattr(torch, spec.autocast or "bfloat16")

        def matmul():
            return torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=out,
                                    use_fast_accum=True)
        return matmul, {"dtype": "float8_e4m3fn", "allow_tf32": False,
                        "scaling": spec.fp8_recipe, "out_dtype": str(out).replace("torch.", ""),
                        "use_fast_accum": True}
    dtype = getattr(torch, spec.autocast or "float32")
    a, b = a.to(dtype), b.to(dtype)
    return (lambda: a @ b), {"dtype": str(dtype).replace("torch.", ""), "allow_tf32": spec.tf32}


def measure(size: int, iterations: int, device) -> dict:
    import torch

    from .. import vocabulary as V
    from .precision import get

    rows = {}
    for spec in V.MODES:
        # the hardware's roof: FP8 needs no torchao for a bare _scaled_mm
        ok, reason = get(spec.name).device_supported(device)
        if not ok:
            rows[spec.name] = {"status": V.UNSUPPORTED, "status_reason": reason, "tflops": None}
            continue
        torch.backends.cuda.matmul.allow_tf32 = spec.tf32
        g = torch.Generator(device=device).manual_seed(0)
        matmul, what = product(spec, size, device, g)
        times = []
        for i in range(iterations + WARMUP):
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                matmul()
                end.record()
                end.synchronize()  # host waits for this one product: its time, alone
                t = start.elapsed_time(end) / 1e3
            else:
                t0 = time.perf_counter()
                matmul()
                t = time.perf_counter() - t0
            if i >= WARMUP:
                times.append(t)
        t = statistics.median(times)
        rows[spec.name] = {"status": V.OK, "status_reason": None,
                           "tflops": 2 * size ** 3 / t / 1e12, "median_time_s": t,
                           "iterations": iterations, "size": size, **what}
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def copy_bandwidth(nbytes: int, iterations: int, device) -> dict:
    """Device-to-device copy bandwidth: ``2 * nbytes`` (each byte read once and written once)
    over the median time of one ``nbytes`` copy, timed like the products (CUDA events, after
    warm-up). Calibrations made before this measurement have no ``memory`` entry."""
    import torch

    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    times = []
    for i in range(iterations + WARMUP):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dst.copy_(src)
            end.record()
            end.synchronize()
            t = start.elapsed_time(end) / 1e3
        else:
            t0 = time.perf_counter()
            dst.copy_(src)
            t = time.perf_counter() - t0
        if i >= WARMUP:
            times.append(t)
    t = statistics.median(times)
    return {"copy_bytes": nbytes, "median_time_s": t, "iterations": iterations,
            "copy_bandwidth_bytes_per_s": 2 * nbytes / t,
            "definition": "bytes read + bytes written by one device-to-device copy over its "
                          "median time"}


def main(argv=None) -> int:
    from ..host import gpus

    gpus.pin()  # before torch initialises CUDA: the ceilings of a GPU no other job is using
    import torch

    from .. import atomic
    from ..host import environment
    from ..record import SCHEMA_VERSION

    ap = argparse.ArgumentParser(prog="python -m tcbench.job.calibrate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--copy-mib", type=int, default=2048, help="size of the bandwidth copy")
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    size = args.size if device.type == "cuda" else min(args.size, 1024)  # a CPU needs no 8k
    result = {"schema_version": SCHEMA_VERSION, "kind": "calibration", "size": size,
              "modes": measure(size, args.iterations, device),
              "memory": copy_bandwidth((args.copy_mib if device.type == "cuda" else
                                        min(args.copy_mib, 64)) * 2 ** 20, args.iterations,
                                       device),
              "environment": environment.collect(device)}
    atomic.write_json(args.out, result)
    width = max(map(len, result["modes"]))
    for name, row in result["modes"].items():
        print(f"{name:{width}s} " + (f"{row['tflops']:8.1f} TFLOP/s" if row["tflops"] else row["status"]))
    print(f"{'copy':{width}s} {result['memory']['copy_bandwidth_bytes_per_s'] / 1e9:8.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
