# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Does tcbench measure a host-bound step as a plain loop of a user's own would run it?

The PyTorch AMP recipe's MLP (3 x Linear(4096, 4096), batch 512, 50 batches on the device),
tf32 and amp-bf16, on one GPU:

  plain    a loop of our own, as a user writes it: forward (under autocast for amp-bf16), loss,
           backward, step, zero_grad; the first 5 steps warm-up, then a timed window of at
           least 2 s (as tcbench's), timed by two CUDA events
  tcbench  ``tcbench.job.run.main`` on the cell, its record's steady throughput

Part 1, the A/B: ``--pairs`` alternating pairs (the order flips every pair), each run in a
fresh process forked from a parent that has imported torch and tcbench but never touched CUDA
(each child makes its own CUDA context, claims the GPU and takes the same CPU placement as a
tcbench job: ``tcbench.host.placement``). Reported: each mode's samples/s, the ratio of medians
(tcbench / plain) with a 95% paired bootstrap interval (BCa, pairs resampled together, so a
drift of the host over the run does not widen it).

Part 2, the ablation (``--ablate``): in one fresh process, the plain loop with one piece of the
harness added at a time (step events, the loss log, ``to_device`` on resident tensors, the
disabled GradScaler's wrappers, tcbench's step function, its whole loop, the NVML thread),
interleaved over rounds; each variant's cost per step in microseconds against the plain loop.

    python lab/bench/host_fidelity.py --out results/bench/nvidia-h200/host_fidelity
    python lab/bench/host_fidelity.py --device cpu --pairs 3 --out /tmp/hf   # a dry run

Writes ``host_fidelity.json`` and ``host_fidelity.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch._dynamo  # noqa: E402,F401  (what every training script imports; before forking)

from tcbench.host import gpus, placement  # noqa: E402
from tcbench.job import run  # noqa: E402
from tcbench.measure import core as M  # noqa: E402
from tcbench.job import precision as P  # noqa: E402
from tcbench.measure import telemetry  # noqa: E402
from tcbench.job import train as T  # noqa: E402
from tcbench import workloads as W  # noqa: E402
from tcbench.workloads.amp_recipe import make_model  # noqa: E402

SIZES = {"cuda": {"in_size": 4096, "out_size": 4096, "num_layers": 3, "num_batches": 50,
                  "batch_size": 512},
         "cpu": {"in_size": 128, "out_size": 128, "num_layers": 3, "num_batches": 50,
                 "batch_size": 32}}
WARMUP = 5


def forked(fn, *args) -> dict:
    """``fn(*args)`` in a fresh child process; its JSON-able result."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            Path(path).write_text(json.dumps(fn(*args)))
            code = 0
        except BaseException:  # noqa: BLE001 - said here, the parent raises
            import traceback
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    text = Path(path).read_text()
    os.unlink(path)
    if status != 0 or not text:
        raise RuntimeError(f"child {fn.__name__}{args} failed (status {status})")
    return json.loads(text)


def device_of(name: str) -> torch.device:
    if name == "cuda":
        gpus.pin()
    return torch.device(name)


def recipe(device, precision: str):
    sizes = SIZES[device.type]
    torch.manual_seed(0)
    mode = P.get(precision)
    mode.apply(False)
    n, i, o, bs = (sizes[k] for k in ("num_batches", "in_size", "out_size", "batch_size"))
    data = [torch.randn(bs, i, device=device) for _ in range(n)]
    targets = [torch.randn(bs, o, device=device) for _ in range(n)]
    with torch.device(device):
        net = make_model(i, o, sizes["num_layers"])
    opt = torch.optim.SGD(net.parameters(), lr=0.001)
    return net, opt, torch.nn.MSELoss(), list(zip(data, targets)), mode


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def plain_step(net, opt, loss_fn, dtype, device):
    """The plain loop's step, as the recipe writes it: the A/B's baseline and the ablation's core."""
    def step(x, y):
        if dtype is None:
            loss = loss_fn(net(x), y)
        else:
            with torch.autocast(device.type, dtype=dtype):
                loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


def plain_job(device_name: str, precision: str, min_s: float) -> dict:
    """The plain loop in this (fresh) process: warm-up, then at least ``min_s`` seconds."""
    device = device_of(device_name)
    where = placement.place("pinned")
    net, opt, loss_fn, batches, mode = recipe(device, precision)
    dtype = mode.autocast_dtype

    step = plain_step(net, opt, loss_fn, dtype, device)

    for x, y in batches[:WARMUP]:
        step(x, y)
    sync(device)
    cuda = device.type == "cuda"
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2)) if cuda else (0, 0)
    t0 = time.perf_counter()
    start.record() if cuda else None
    steps = 0
    while time.perf_counter() - t0 < min_s or steps < 20:
        for x, y in batches:
            step(x, y)
            steps += 1
    end.record() if cuda else None
    sync(device)
    elapsed = start.elapsed_time(end) / 1e3 if cuda else time.perf_counter() - t0
    bs = SIZES[device.type]["batch_size"]
    return {"samples_per_s": steps * bs / elapsed, "timed_s": elapsed, "steps": steps,
            "cpu_set": where["cpu_set"]}


def tcbench_job(device_name: str, precision: str, min_s: float) -> dict:
    """tcbench's job (tcbench.job.run: GPU claim, placement, build, train, measure, profile), its
    record not written (the record's validation needs jsonschema, which the H200 image lacks)."""
    sizes = SIZES[device_name]
    params = {k: v for k, v in sizes.items() if k != "batch_size"} | {"min_timed_s": min_s}
    spec = {"workload": "amp_recipe", "precision": precision, "batch_size": sizes["batch_size"],
            "device": device_name, "params": params}
    device_of(device_name)
    rec = run.run_job(spec, run.Phases())
    m = rec["metrics"]
    return {"samples_per_s": m["throughput_samples_per_s"], "timed_s": m["steady_time_s"],
            "steps": m["steps"], "steady": m["timed_window"]["steady"],
            "cpu_set": rec["placement"]["cpu_set"],
            "timed_window": m["timed_window"], "step_counts": m["step_counts"],
            "step_time_median_s": m["step_time_median_s"],
            "telemetry": {k: v for k, v in (rec["telemetry"] or {}).items()},
            "tensor_cores": {k: v for k, v in (rec["tensor_cores"] or {}).items()
                             if k != "top_kernels"},
            "placement": rec["placement"], "harness": rec["harness"]}


def ratio_interval(tc: list[float], plain: list[float], resamples: int = 9999) -> dict:
    """The ratio of medians and its 95% paired percentile bootstrap interval (pair i of both
    lists resampled together: a drift of the host over the run moves both)."""
    a, b = np.asarray(tc), np.asarray(plain)
    est = float(np.median(a) / np.median(b))
    if len(a) < 3:
        return {"ratio_of_medians": est, "interval": None, "interval_method": None}
    idx = np.random.default_rng(0).integers(0, len(a), size=(resamples, len(a)))
    boot = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return {"ratio_of_medians": est, "interval": [float(low), float(high)],
            "interval_method": f"95% paired percentile bootstrap ({resamples} resamples of the "
                               "pairs) of the ratio of medians"}


def ab(device: str, precisions: list[str], pairs: int, min_s: float, deadline: float,
       partial: Path) -> list:
    runs = {p: {"plain": [], "tcbench": [], "order": []} for p in precisions}
    for i in range(pairs):
        if time.monotonic() > deadline:
            break
        for p in precisions:
            order = ("plain", "tcbench") if i % 2 == 0 else ("tcbench", "plain")
            for kind in order:
                job = plain_job if kind == "plain" else tcbench_job
                runs[p][kind].append(forked(job, device, p, min_s))
            runs[p]["order"].append(order[0])
        partial.write_text(json.dumps(runs) + "\n")   # what ran so far, should the run be stopped
    out = []
    for p, r in runs.items():
        tc = [x["samples_per_s"] for x in r["tcbench"]]
        pl = [x["samples_per_s"] for x in r["plain"]]
        out.append({"precision": p, "pairs": len(tc), "tcbench_samples_per_s": tc,
                    "plain_samples_per_s": pl, "first_in_pair": r["order"],
                    "tcbench_median": statistics.median(tc) if tc else None,
                    "plain_median": statistics.median(pl) if pl else None,
                    "runs": r} | (ratio_interval(tc, pl) if tc else {}))
    return out


# ------------------------------------------------------------------------------------ ablation
# the loop with the NVML thread sampling beside it, as in a job: one sampler started before the
# variant's timed steps and stopped after them (a job starts one before training), so the row
# measures the thread's cost per step, not nvmlInit and a thread start spread over 50 steps
NVML_VARIANT = "tcbench loop + NVML thread"


def beside(name: str, device):
    """What runs beside a variant's timed steps: the NVML sampler for ``NVML_VARIANT``."""
    if name == NVML_VARIANT:
        return telemetry.NvmlSampler(device, W.COMMON_DEFAULTS["telemetry_interval_s"])
    return contextlib.nullcontext()


def variants(device, precision: str) -> dict:
    net, opt, loss_fn, batches, mode = recipe(device, precision)
    w = W.Workload("amp_recipe", net, loss_fn, opt, 1, batches, batches[0], {})
    dtype, cuda = mode.autocast_dtype, device.type == "cuda"
    scaler = mode.scaler(device)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(2 * len(batches))] \
        if cuda else []
    for e in events:
        e.record()

    core = plain_step(net, opt, loss_fn, dtype, device)

    def with_(extra):
        def loop():
            log = T.TrainLog(losses=torch.full((len(batches),), float("nan"), device=device),
                             scales=None, samples=[])
            for k, (x, y) in enumerate(batches):
                extra(k, x, y, log)
        return loop

    def plain(k, x, y, log):
        core(x, y)

    def ev(k, x, y, log):
        events[2 * k].record() if cuda else None
        core(x, y)
        events[2 * k + 1].record() if cuda else None

    def logged(k, x, y, log):
        log.add(core(x, y), len(y))

    def to_dev(k, x, y, log):
        core(*T.to_device((x, y), device))

    def scaled(k, x, y, log):
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = loss_fn(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    def tc_step(k, x, y, log):
        T.train_step(net, loss_fn, opt, scaler, mode, device, x, y)

    def autocast_off(k, x, y, log):   # the AMP recipe's style: autocast(enabled=False)
        with torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    loop = T.train(w, T.eager_step(net, w, scaler, mode, device), device, M.StepTimer(device),
                   scaler)

    def tc_more():
        loop.more(len(batches))

    def tc_loop():
        T.train(w, T.eager_step(net, w, scaler, mode, device), device, M.StepTimer(device),
                scaler)

    return {"plain": with_(plain), "+step events": with_(ev), "+loss log": with_(logged),
            "+to_device": with_(to_dev), "+GradScaler wrappers": with_(scaled),
            "+autocast(enabled=dtype is not None)": with_(autocast_off),
            "tcbench train_step": with_(tc_step), "tcbench loop (schedule steps)": tc_loop,
            NVML_VARIANT: tc_loop, "tcbench measurement steps": tc_more}


def ablation_job(device_name: str, precision: str, rounds: int) -> dict:
    device = device_of(device_name)
    placement.place("pinned")
    loops = variants(device, precision)
    steps = SIZES[device.type]["num_batches"]
    for fn in loops.values():
        fn()
    times = {name: [] for name in loops}
    for _ in range(rounds):
        for name, fn in loops.items():
            with beside(name, device):
                sync(device)
                t0 = time.perf_counter()
                for _ in range(4):
                    fn()
                sync(device)
                times[name].append((time.perf_counter() - t0) / (4 * steps))
    base = statistics.median(times["plain"])
    return {"precision": precision, "rounds": rounds, "steps_per_timing": 4 * steps,
            "us_per_step": {k: statistics.median(v) * 1e6 for k, v in times.items()},
            "added_us_per_step": {k: (statistics.median(v) - base) * 1e6
                                  for k, v in times.items()}}


def markdown(report: dict) -> str:
    lines = [f"# Host-bound fidelity: tcbench against a plain loop ({report['device']})", "",
             f"AMP recipe MLP, batch {report['sizes']['batch_size']}, timed window >= "
             f"{report['min_timed_s']} s, fresh processes, same CPU placement "
             f"(`tcbench.host.placement`, pinned). {report['wall_s']:.0f} s.", "",
             "| mode | pairs | tcbench median | plain median | ratio | interval |",
             "|---|---|---|---|---|---|"]
    for r in report["ab"]:
        if not r["pairs"]:   # --pairs 0: the ablation alone
            continue
        ci = r.get("interval")
        lines.append(f"| {r['precision']} | {r['pairs']} | {r['tcbench_median']:,.0f} | "
                     f"{r['plain_median']:,.0f} | {r['ratio_of_medians']:.4f} | "
                     + (f"[{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "n < 3") + " |")
    if report["ab"] and report["ab"][0].get("interval_method"):
        lines += ["", f"Interval: {report['ab'][0]['interval_method']}."]
    for a in report.get("ablation", []):
        lines += ["", f"## Ablation, {a['precision']} (median of {a['rounds']} rounds)", "",
                  "| variant | us/step | added us/step |", "|---|---|---|"]
        lines += [f"| {k} | {v:.1f} | {a['added_us_per_step'][k]:+.1f} |"
                  for k, v in a["us_per_step"].items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--precisions", default="tf32,amp-bf16")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--min-timed-s", type=float, default=2.0)
    ap.add_argument("--ablate", type=int, default=0, metavar="ROUNDS",
                    help="also run the ablation, this many rounds (0: not)")
    ap.add_argument("--max-seconds", type=float, default=200,
                    help="start no new pair after this long (the report says how many ran)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the JSON + Markdown")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    precisions = args.precisions.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    ablation = []
    for p in precisions[:1 if args.ablate else 0] + precisions[1:] * bool(args.ablate):
        ablation.append(forked(ablation_job, args.device, p, args.ablate))
        (args.out / "ablation.json").write_text(json.dumps(ablation, indent=2) + "\n")
    results = ab(args.device, precisions, args.pairs, args.min_timed_s,
                 t0 + args.max_seconds, args.out / "ab_partial.json")
    info = forked(lambda d: {"name": torch.cuda.get_device_name(0) if d == "cuda" else "cpu",
                             "torch": torch.__version__}, args.device)
    report = {"device": info["name"], "torch": info["torch"], "sizes": SIZES[args.device],
              "min_timed_s": args.min_timed_s, "host": os.uname().nodename,
              "cpu_count": os.cpu_count(), "ab": results, "ablation": ablation,
              "wall_s": time.monotonic() - t0}
    (args.out / "host_fidelity.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "host_fidelity.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
