# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""What the first ResNet-50 training step spends its 13-17 s on, and what cutting it costs.

Each variant runs in a fresh process (so nothing is cached between them): CUDA context, model
build, the first step, then warm-up and timed steps with CUDA events. Variants change only how
cuDNN picks its algorithms: autotuning off, on (PyTorch's default limit of 10 algorithms per
convolution), or on with a lower limit; the steady-state throughput says whether a cheaper
warm-up costs speed.

    python lab/bench/warmup_probe.py --out DIR [--batch 256] [--steps 30] [--max-seconds 240]

Writes DIR/warmup_probe.json and prints a table. On a CPU it runs ResNet-18 on tiny images so
the script itself can be tested; the numbers then mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

VARIANTS = {
    "cudnn-off": {"benchmark": False, "limit": None},
    "cudnn-on": {"benchmark": True, "limit": None},          # PyTorch's default limit (10)
    "cudnn-on-limit-1": {"benchmark": True, "limit": 1},
    "cudnn-on-limit-3": {"benchmark": True, "limit": 3},
}


def child(variant: str, batch: int, steps: int, precision: str, channels_last: bool) -> dict:
    t0 = time.perf_counter()
    import torch
    import torchvision

    t_import = time.perf_counter() - t0
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    t = time.perf_counter()
    if cuda:
        torch.cuda.init()
        torch.zeros(1, device=dev)
        torch.cuda.synchronize()
    t_context = time.perf_counter() - t
    v = VARIANTS[variant]
    torch.backends.cudnn.benchmark = v["benchmark"]
    if v["limit"] is not None:
        torch.backends.cudnn.benchmark_limit = v["limit"]
    size, classes = (224, 1000) if cuda else (32, 10)
    if not cuda:
        batch = min(batch, 4)
    t = time.perf_counter()
    with torch.device(dev):  # a CPU only tests the script: the smallest ResNet
        model = (torchvision.models.resnet50 if cuda else torchvision.models.resnet18)(
            num_classes=classes)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(batch, 3, size, size, device=dev, generator=g)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (batch,), device=dev, generator=g)
    if cuda:
        torch.cuda.synchronize()
    t_build = time.perf_counter() - t
    dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(precision)
    scaler = torch.amp.GradScaler(dev.type, enabled=precision == "amp-fp16")

    def step():
        with torch.amp.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    first = []
    for _ in range(3):          # the first steps, each timed to its own end (one sync each)
        t = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        first.append(time.perf_counter() - t)
    for _ in range(5):
        step()
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(steps):
            step()
        end.record()
        end.synchronize()
        steady = start.elapsed_time(end) / 1e3
    else:
        t = time.perf_counter()
        for _ in range(steps):
            step()
        steady = time.perf_counter() - t
    return {"variant": variant, "batch": batch, "precision": precision,
            "channels_last": channels_last, "import_s": t_import, "cuda_context_s": t_context,
            "build_s": t_build, "first_steps_s": first, "steady_steps": steps,
            "throughput_samples_per_s": steps * batch / steady,
            "device": torch.cuda.get_device_name() if cuda else "cpu",
            "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--precision", default="amp-fp16")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--max-seconds", type=float, default=240)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.batch, args.steps, args.precision,
                               args.channels_last)))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    t0, rows = time.perf_counter(), []
    for v in args.variants:
        left = args.max_seconds - (time.perf_counter() - t0)
        if left < 20:
            print(f"skipping {v}: {left:.0f} s left", file=sys.stderr)
            continue
        cmd = [sys.executable, __file__, "--out", str(args.out), "--child", v, "--batch",
               str(args.batch), "--steps", str(args.steps), "--precision", args.precision]
        cmd += ["--channels-last"] if args.channels_last else []
        t = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=left,
                               env=dict(os.environ))
        except subprocess.TimeoutExpired:
            print(f"{v}: timed out", file=sys.stderr)
            continue
        if p.returncode:
            print(f"{v}: failed\n{p.stderr[-2000:]}", file=sys.stderr)
            continue
        row = json.loads(p.stdout.strip().splitlines()[-1])
        row["process_wall_s"] = time.perf_counter() - t
        rows.append(row)
    (args.out / "warmup_probe.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"{'variant':18s} {'proc s':>7s} {'import':>7s} {'ctx':>6s} {'build':>6s} "
          f"{'step1':>7s} {'step2':>6s} {'img/s':>9s}")
    for r in rows:
        print(f"{r['variant']:18s} {r['process_wall_s']:7.1f} {r['import_s']:7.2f} "
              f"{r['cuda_context_s']:6.2f} {r['build_s']:6.2f} {r['first_steps_s'][0]:7.2f} "
              f"{r['first_steps_s'][1]:6.2f} {r['throughput_samples_per_s']:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
