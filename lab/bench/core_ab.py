# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Does the training thread's core matter? Cores compared interleaved, in one process.

    python lab/bench/core_ab.py --out DIR [--precisions tf32,amp-bf16] [--rounds 60]

The PyTorch AMP recipe (batch 512) built once per precision mode in one process (as
``tcbench.job.interleave`` builds its arms); then, in each round, every (mode, core) pair runs one
segment of steps with the training thread, and autograd's device threads that run its backward
pass, moved to that core: CPU 0, the core ``tcbench.host.placement`` chose by its probe (the fastest)
and the one its probe found slowest. The order of the cores is rotated every round. Each
segment is timed between CUDA events after two untimed lead-in steps, with a dispatch probe
right before it. The host's drift hits every core of a round alike, so the per-round ratio of
a core's throughput to CPU 0's is paired (``stats.paired_ratio``: median, bootstrap 95% CI).

Writes ``DIR/core_ab.json`` (every segment) and ``DIR/core_ab.md`` (the ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "workflow"))


def worker_threads() -> list[int]:
    """The thread ids of autograd's device threads (they run the backward pass of CUDA
    tensors, handed work by the training thread)."""
    out = []
    for task in Path("/proc/self/task").iterdir():
        try:
            if (task / "comm").read_text().strip().startswith("pt_autograd"):
                out.append(int(task.name))
        except OSError:
            continue
    return out


def move_to(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})
    for tid in worker_threads():
        try:
            os.sched_setaffinity(tid, {cpu})
        except OSError:
            pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--precisions", default="tf32,amp-bf16")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--segment-s", type=float, default=0.1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--params", default="{}", help="workload parameters as JSON (a dry run on a "
                    "CPU: '{\"in_size\": 64, \"out_size\": 64, \"num_batches\": 4}')")
    args = ap.parse_args(argv)

    from tcbench.host import gpus, hoststate, placement
    from tcbench.job import interleave as IL
    from tcbench import stats
    from tcbench.job.harness import Phases

    gpus.pin()
    where = placement.place("pinned", args.device)
    core = where["training_core"]
    speeds = {int(c): v for c, v in ((core.get("probe") or {}).get("ops_per_s") or {}).items()}
    chosen = core["cpu"] if core["cpu"] is not None else 0
    slowest = min(speeds, key=speeds.get) if speeds else 0
    cores = list(dict.fromkeys([0, chosen, slowest]))
    spec = IL.parse({"workload": "amp_recipe", "batch_size": 512, "device": args.device,
                     "precisions": args.precisions.split(",") + ["fp32"],
                     "params": {"cpu_placement": "pinned"} | json.loads(args.params)})
    phases = Phases()
    arms = [IL.Arm(c, phases) for c in spec["cells"] if c["precision"] != "fp32"]
    IL.build(arms)
    live = [a for a in arms if a.ok]
    import torch

    marks = IL.Marks(torch.device("cuda") if torch.cuda.is_available() and args.device != "cpu"
                     else torch.device("cpu"))
    IL.warm(live, marks, {"segment_s": args.segment_s, "warmup_rounds": 1})
    t0 = time.monotonic()
    rounds = []
    for k in range(args.rounds):
        segs = []
        for cpu in IL.rotated(cores, k):
            move_to(cpu)
            for arm in live:
                seg = IL.segment(arm, len(segs), marks, 2)
                segs.append(seg | {"cpu": cpu})
        rounds.append({"round": k, "segments": segs})
    wall = time.monotonic() - t0
    move_to(chosen)
    placement.release(where)

    lines = [f"# Cores compared interleaved in one process ({torch.cuda.get_device_name(0) if marks.cuda else 'cpu'})",
             "", f"The AMP recipe, batch 512, {args.rounds} rounds of {args.segment_s} s "
             f"segments per (mode, core), {wall:.0f} s. Cores: {cores} (CPU 0, the probe's "
             f"fastest {chosen}, its slowest {slowest}; probe ops/s: "
             + ", ".join(f"CPU {c} {speeds.get(c, float('nan')):,.0f}" for c in cores) + ").",
             "", "| mode | core | median samples/s | ÷ CPU 0, median [95% bootstrap CI] |",
             "|---|---|---|---|"]
    for arm in live:
        per = {c: [s["samples"] / s["seconds"] for r in rounds for s in r["segments"]
                   if s["cpu"] == c and s["precision"] == arm.precision] for c in cores}
        for c in cores:
            e = stats.paired_ratio(per[c], per[0])
            lines.append(f"| {arm.precision} | {c} | {stats.median(per[c]):,.0f} | "
                         + ("1 (the baseline)" if c == 0 else
                            f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]") + " |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "core_ab.json").write_text(json.dumps(
        {"cores": cores, "chosen": chosen, "slowest": slowest, "probe_ops_per_s": speeds,
         "precisions": [a.precision for a in live], "rounds": rounds,
         "segment_s": args.segment_s, "wall_s": wall,
         "host_probe_what": hoststate.describe(IL.ROUND_PROBE_OPS)}, indent=1) + "\n")
    (args.out / "core_ab.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
