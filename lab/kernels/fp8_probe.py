# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""FP8 on this GPU, measured: the kernels torchao's float8 training launches, and the FP8 roof.

(a) The recipe MLP (3 x Linear(4096, 4096), ReLU, MSELoss, SGD) trained under each FP8 mode (and
    amp-bf16 beside it) with torch.compile, exactly as tcbench's modes set it up
    (``precision.prepare``, bf16 autocast); after warm-up, a few steps under torch.profiler:
    every GPU kernel with its time, calls and tcbench's Tensor Core classification, and the
    median step time. The kernel names become test cases of tcbench.kernels.classify.
(b) The matmul ceilings, as the calibrate job measures them (tcbench.job.calibrate.measure:
    8192^3, CUDA events, median after warm-up): fp8 (torch._scaled_mm, e4m3, per-tensor and
    per-row scales, bf16 out) next to bf16, fp16, tf32 and fp32; and the kernels each FP8
    product runs.

    python3 lab/kernels/fp8_probe.py --out OUT_DIR [--batch-size 8192] [--budget-s 75]

Writes OUT_DIR/fp8_kernels.csv (mode, workload, kernel, time_us, calls, tensor_core, rule) and
OUT_DIR/fp8_probe.json (versions, device, ceilings, step times, FP8 conversion, shares); prints
a short table last. About 60 s on an H200 (torch.compile of each mode ~15 s); parts that would
start after ``--budget-s`` are skipped and say so. Without CUDA it says "needs CUDA" and exits 0;
``--cpu-smoke`` runs the same code on the CPU at toy sizes (FP8 emulated by torch._scaled_mm's
CPU kernel, no compile, numbers meaningless) to check the script itself.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow"))
from tcbench.job import calibrate  # noqa: E402
from tcbench.job import precision  # noqa: E402
from tcbench.job import train  # noqa: E402
from tcbench import vocabulary as V  # noqa: E402
from tcbench.kernels import classify  # noqa: E402
from tcbench.workloads.amp_recipe import make_model  # noqa: E402

MODES = ("fp8-tensorwise", "fp8-rowwise", "amp-bf16")


def kernels_of(prof, device) -> dict[str, list]:
    """name -> [device time in us, calls]; on the CPU (smoke run) the operators instead."""
    want = torch.autograd.DeviceType.CUDA if device.type == "cuda" else \
        torch.autograd.DeviceType.CPU
    agg: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type != want:
            continue
        t = getattr(e, "device_time", None) if device.type == "cuda" else e.cpu_time
        agg[e.name][0] += t or 0.0
        agg[e.name][1] += 1
    return agg


def rows_of(agg: dict, mode: str, workload: str) -> list[dict]:
    rows = []
    for name, (t, calls) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
        tc, rule = classify(name)
        rows.append({"mode": mode, "workload": workload, "kernel": name, "time_us": round(t, 2),
                     "calls": calls, "tensor_core": tc, "rule": rule})
    return rows


def shares(rows: list[dict]) -> dict:
    total = sum(r["time_us"] for r in rows) or float("nan")
    return {"kernel_time_us": total,
            "tensor_core_share": sum(r["time_us"] for r in rows if r["tensor_core"]) / total,
            "fp8_gemm_share": sum(r["time_us"] for r in rows
                                  if r["rule"] in ("nvjet-fp8", "fp8-gemm")) / total}


def step_time_s(step, device, steps: int) -> float:
    """Mean time of ``steps`` back-to-back steps (one event pair: no host sync between steps)."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            step()
        end.record()
        end.synchronize()  # the host waits once, after the timed steps
        return start.elapsed_time(end) / 1e3 / steps
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def probe_mode(name, device, batch, width, layers, compile_, warmup, timed, profiled):
    mode = precision.get(name)
    mode.apply()
    torch.manual_seed(0)
    model = make_model(width, width, layers).to(device)
    model, fp8 = mode.prepare(model, "default" if compile_ else "off")
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    run = torch.compile(model) if compile_ else model
    scaler = mode.scaler(device)
    loss_fn = torch.nn.MSELoss()
    x = torch.randn(batch, width, device=device)
    y = torch.randn(batch, width, device=device)

    def step():
        return train.train_step(run, loss_fn, opt, scaler, mode, device, x, y)
    t0 = time.perf_counter()
    for _ in range(warmup):  # compilation, autotuning, cuBLASLt heuristics
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    t = step_time_s(step, device, timed)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(profiled):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
    rows = rows_of(kernels_of(prof, device), name, f"mlp{layers}x{width}_bs{batch}")
    flops = 6 * batch * width * width * layers  # forward + two backward GEMMs per Linear
    return rows, {"mode": name, "batch_size": batch, "compiled": compile_,
                  "warmup_s": round(warm_s, 3), "step_time_s": t,
                  "achieved_tflops": flops / t / 1e12, "fp8": fp8,
                  "loss": float(step().detach()), **shares(rows)}


def ceiling_kernels(device, size) -> list[dict]:
    """The kernels one FP8 product of the calibrate job runs, per recipe."""
    rows = []
    for spec in V.MODES:
        if not spec.fp8_recipe or not precision.get(spec.name).device_supported(device)[0]:
            continue
        seeded = torch.Generator(device=device).manual_seed(0)
        matmul, _ = calibrate.product(spec, size, device, seeded)
        matmul()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            matmul()
            torch.cuda.synchronize()
        rows += rows_of(kernels_of(prof, device), spec.name, f"scaled_mm_{size}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for the CSV and the JSON")
    ap.add_argument("--batch-size", type=int, default=8192)
    ap.add_argument("--size", type=int, default=8192, help="ceiling matmul size")
    ap.add_argument("--iterations", type=int, default=20, help="timed products per ceiling")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--budget-s", type=float, default=75.0,
                    help="no new part starts after this many seconds")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="check the script on a CPU at toy sizes (emulated FP8, no compile)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    if args.cpu_smoke:
        device, width, batch, size, compile_ = torch.device("cpu"), 64, 32, 128, False
    elif torch.cuda.is_available():
        device, width, batch, size, compile_ = (torch.device("cuda"), 4096, args.batch_size,
                                                args.size, True)
    else:
        print("fp8_probe: needs CUDA (an NVIDIA GPU of compute capability >= 8.9); nothing done")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    import torchao  # the FP8 modes' library: fail here, loudly, when it is missing

    result = {"torch": torch.__version__, "torchao": torchao.__version__,
              "cuda": torch.version.cuda, "device": device.type, "smoke": args.cpu_smoke,
              "skipped": []}
    if device.type == "cuda":
        result |= {"gpu": torch.cuda.get_device_name(device),
                   "capability": ".".join(map(str, torch.cuda.get_device_capability(device)))}
    # (b) first: it is short and it is what MFU divides by
    result["ceilings"] = calibrate.measure(size, args.iterations, device)
    rows = ceiling_kernels(device, size) if device.type == "cuda" else []
    result["steps"] = []
    for name in args.modes.split(","):
        if time.perf_counter() - t_start > args.budget_s:
            result["skipped"].append(f"{name}: budget of {args.budget_s:.0f} s spent")
            continue
        ok, reason = precision.get(name).supported(device)
        if not ok and not args.cpu_smoke:
            result["skipped"].append(f"{name}: {reason}")
            continue
        mode_rows, summary = probe_mode(name, device, batch, width, 3, compile_,
                                        warmup=3, timed=20 if device.type == "cuda" else 2,
                                        profiled=3 if device.type == "cuda" else 1)
        rows += mode_rows
        result["steps"].append(summary)
    result["wall_s"] = time.perf_counter() - t_start
    with open(args.out / "fp8_kernels.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["mode", "workload", "kernel", "time_us", "calls",
                                          "tensor_core", "rule"])
        w.writeheader()
        w.writerows(rows)
    (args.out / "fp8_probe.json").write_text(json.dumps(result, indent=1, default=str))

    print(f"\n{result.get('gpu', 'CPU (smoke: emulated FP8, numbers meaningless)')}, torch "
          f"{result['torch']}, torchao {result['torchao']}, {result['wall_s']:.0f} s")
    print(f"{'ceiling':16s} {'TFLOP/s':>9s}")
    for name, row in result["ceilings"].items():
        print(f"{name:16s} " + (f"{row['tflops']:9.1f}" if row["tflops"] else row["status"]))
    print(f"{'step (bs ' + str(batch) + ')':16s} {'ms':>9s} {'TFLOP/s':>9s} {'TC share':>9s} "
          f"{'FP8 GEMM':>9s}  converted / kept")
    for s in result["steps"]:
        fp8 = s["fp8"] or {}
        print(f"{s['mode']:16s} {s['step_time_s'] * 1e3:9.3f} {s['achieved_tflops']:9.1f} "
              f"{s['tensor_core_share']:9.1%} {s['fp8_gemm_share']:9.1%}  "
              f"{len(fp8.get('converted', []))} / {len(fp8.get('kept', []))}")
    top = sorted((r for r in rows if r["rule"] in ("nvjet-fp8", "fp8-gemm")),
                 key=lambda r: -r["time_us"])
    print(f"FP8 GEMM kernels: {len({r['kernel'] for r in top})} distinct; "
          + (", ".join(sorted({r['kernel'][:60] for r in top[:3]})) or "none recognised"))
    for s in result["skipped"]:
        print("skipped:", s)
    print(f"files: {args.out / 'fp8_kernels.csv'}, {args.out / 'fp8_probe.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
