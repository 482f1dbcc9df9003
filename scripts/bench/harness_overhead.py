"""Does tcbench's training loop slow a host-bound step? One process, the same model, data and
precision mode, two loops taking turns several times:

  plain    the PyTorch AMP recipe's loop, nothing else (autocast, GradScaler, zero_grad)
  tcbench  tcbench.train.train: the same step plus the harness (step events, loss bookkeeping,
           the warm-up boundary), inside the NVML telemetry thread, as a job runs it

Each loop run is timed by the host clock between two synchronisations; the report gives
samples/s of each (median over the rounds), their ratio, and the harness's cost per step in
microseconds. A second part times the per-step bookkeeping alone, the previous implementation
(three new CUDA events, a loss copy kernel per step) against the current one.

    python scripts/bench/harness_overhead.py --out overhead.json            # CUDA if present
    python scripts/bench/harness_overhead.py --device cpu --out cpu.json    # small sizes

On CUDA the sizes are the recipe's: 3 x Linear(4096, 4096), batch 512, 50 batches on the
device, modes amp-bf16 (host-bound: the case that matters) and fp32; on the CPU 3 x
Linear(256), batch 64. About 40 s on an H200.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow"))

import torch  # noqa: E402

from tcbench import measure as M  # noqa: E402
from tcbench import precision as P  # noqa: E402
from tcbench import train as T  # noqa: E402
from tcbench import workloads as W  # noqa: E402

SIZES = {"cuda": {"in_size": 4096, "out_size": 4096, "num_layers": 3, "num_batches": 50,
                  "batch_size": 512},
         "cpu": {"in_size": 256, "out_size": 256, "num_layers": 3, "num_batches": 50,
                 "batch_size": 64}}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def plain_loop(w, mode, device, scaler):
    """The PyTorch AMP recipe's training loop, as its tutorial writes it."""
    net, opt, loss_fn = w.model, w.optimizer, w.loss_fn
    for _ in range(w.epochs):
        for data, target in w.train_loader:
            with torch.autocast(device_type=device.type, dtype=mode.autocast_dtype,
                                enabled=mode.autocast_dtype is not None):
                output = net(data)
                loss = loss_fn(output, target)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)


def tcbench_loop(w, mode, device, scaler, warmup_steps):
    timer = M.StepTimer(device)
    sampler = M.NvmlSampler(device, W.COMMON_DEFAULTS["telemetry_interval_s"])
    step = T.eager_step(w.model, w, scaler, mode, device)
    with sampler:
        log = T.train(w, step, device, timer, scaler, False, False, warmup_steps,
                      at_steady=sampler.mark_steady)
        sync(device)
    return timer, log


def timed(fn, device) -> float:
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t0


def loops(device, precision: str, sizes: dict, epochs: int, rounds: int, deadline: float) -> dict:
    mode = P.get(precision)
    mode.apply(False)
    bs = sizes["batch_size"]
    params = W.resolve_params("amp_recipe", {k: v for k, v in sizes.items() if k != "batch_size"}
                              | {"epochs": epochs})
    w = W.build("amp_recipe", params, bs, device)
    steps = epochs * params["num_batches"]
    samples = steps * bs
    scaler = mode.scaler(device)
    plain_loop(w, mode, device, scaler)          # warm-up: cuBLAS handles, kernels, allocator
    tcbench_loop(w, mode, device, scaler, params["warmup_steps"])
    plain, harness, reported = [], [], []
    for _ in range(rounds):
        if time.monotonic() > deadline:
            break
        plain.append(timed(lambda: plain_loop(w, mode, device, scaler), device))
        out = {}
        harness.append(timed(lambda: out.setdefault(
            "r", tcbench_loop(w, mode, device, scaler, params["warmup_steps"])), device))
        timer, log = out["r"]
        wait, comp = timer.intervals()
        s = M.step_statistics(wait, comp, log.samples, params["warmup_steps"], 0.2)
        reported.append(s["throughput_samples_per_s"])
    p, h = statistics.median(plain), statistics.median(harness)
    return {"precision": precision, "batch_size": bs, "steps_per_run": steps,
            "rounds": len(plain), "plain_s": plain, "tcbench_s": harness,
            "plain_samples_per_s": samples / p, "tcbench_samples_per_s": samples / h,
            "ratio": p / h, "overhead_us_per_step": (h - p) / steps * 1e6,
            "tcbench_reported_steady_samples_per_s": statistics.median(reported)}


def bookkeeping(device, steps: int = 2000) -> dict:
    """Per-step cost of the loop's bookkeeping alone (no training step between the marks)."""
    loss = torch.ones((), device=device)
    cuda = device.type == "cuda"

    def previous():  # three new events per step and a loss copy kernel (tcbench before this)
        losses = torch.full((steps,), float("nan"), device=device)
        marks, samples = [], []
        for k in range(steps):
            cur = []
            for _ in range(3):
                if cuda:
                    e = torch.cuda.Event(enable_timing=True)
                    e.record()
                    cur.append(e)
                else:
                    cur.append(time.perf_counter())
            marks.append(tuple(cur))
            losses[k] = loss.detach()
            samples.append(512)

    def current():  # pre-made events, two records per step, the loss tensor kept
        timer = M.StepTimer(device)
        log = T.TrainLog(losses=torch.full((steps,), float("nan"), device=device), scales=None,
                         samples=[])
        timer.start(steps, restarts=1)
        timer.fetch()
        for _ in range(steps):
            timer.data_ready()
            timer.step_done()
            log.add(loss, 512)
        log.flush()

    out = {}
    for name, fn in (("previous", previous), ("current", current)):
        fn()  # warm
        out[f"{name}_us_per_step"] = statistics.median(
            timed(fn, device) for _ in range(5)) / steps * 1e6
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto", help="auto (CUDA if present), cuda or cpu")
    ap.add_argument("--precisions", default=None,
                    help="comma-separated modes (default: amp-bf16,fp32 on CUDA, fp32,amp-bf16 "
                         "on the CPU)")
    ap.add_argument("--epochs", type=int, default=None,
                    help="epochs of 50 batches per loop run (default 6 on CUDA, 2 on the CPU)")
    ap.add_argument("--rounds", type=int, default=7, help="plain/tcbench alternations")
    ap.add_argument("--max-seconds", type=float, default=60,
                    help="stop starting rounds after this long (the report says how many ran)")
    ap.add_argument("--out", type=Path, required=True, help="JSON report")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                          else "cpu" if args.device == "auto" else args.device)
    sizes = SIZES[device.type]
    if device.type == "cpu":
        torch.set_num_threads(1)  # small matmuls: more threads only add scheduling noise
    precisions = (args.precisions or ("amp-bf16,fp32" if device.type == "cuda"
                                      else "fp32,amp-bf16")).split(",")
    epochs = args.epochs or (6 if device.type == "cuda" else 2)
    deadline = t0 + args.max_seconds
    results = [loops(device, p, sizes, epochs, args.rounds, deadline) for p in precisions]
    report = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "torch": torch.__version__, "sizes": sizes, "epochs": epochs,
              "cpu_count": os.cpu_count(), "loops": results, "bookkeeping": bookkeeping(device),
              "wall_s": time.monotonic() - t0}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'mode':9} {'plain samples/s':>16} {'tcbench samples/s':>18} {'ratio':>6} "
          f"{'us/step':>8} {'rounds':>6}")
    for r in results:
        print(f"{r['precision']:9} {r['plain_samples_per_s']:16,.0f} "
              f"{r['tcbench_samples_per_s']:18,.0f} {r['ratio']:6.3f} "
              f"{r['overhead_us_per_step']:8.1f} {r['rounds']:6d}")
    b = report["bookkeeping"]
    print(f"bookkeeping per step: previous {b['previous_us_per_step']:.1f} us, "
          f"current {b['current_us_per_step']:.1f} us   ({report['wall_s']:.0f} s, "
          f"{report['device']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
