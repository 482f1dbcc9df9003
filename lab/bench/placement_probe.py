# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Which CPU should a host-bound job's training thread run on? A probe of the host's noise.

host_fidelity.py found the recipe's plain loop (tf32, batch 512) bimodal between processes on an
H200 VM: ~600k samples/s in most, ~390-480k in some, with the training thread pinned to
the job's first CPU (CPU 0) in both arms. This probe runs that same plain loop (host_fidelity's
``plain_job``) in fresh processes with the training thread on different CPUs, interleaved
round by round so that a drift of the host hits every variant alike, and prints each run's
samples/s, with the host's topology and interrupt counts per CPU (CPU 0 takes most interrupts
on many VMs).

    python lab/bench/placement_probe.py --out results/bench/nvidia-h200/placement_probe
    python lab/bench/placement_probe.py --device cpu --rounds 2 --out /tmp/pp   # dry run

Writes ``placement_probe.json`` and ``placement_probe.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import host_fidelity as H  # noqa: E402  (imports torch before any fork, never touches CUDA)

from tcbench.host import placement  # noqa: E402


def interrupts_per_cpu() -> list[int]:
    try:
        lines = Path("/proc/interrupts").read_text().splitlines()
    except OSError:
        return []
    ncpu = len(lines[0].split())
    totals = [0] * ncpu
    for line in lines[1:]:
        for i, field in enumerate(line.split()[1:ncpu + 1]):
            if field.isdigit():
                totals[i] += int(field)
    return totals


def siblings() -> dict[int, str]:
    out = {}
    for cpu in sorted(os.sched_getaffinity(0)):
        p = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        out[cpu] = p.read_text().strip() if p.exists() else "?"
    return out


def on_cpu(device: str, precision: str, min_s: float, cpu: int | None) -> dict:
    """host_fidelity's plain job with the training thread on ``cpu`` (None: not pinned)."""
    if cpu is None:
        placement.place = lambda mode, _orig=placement.place: _orig("os")
    else:
        orig = placement.slot_cpus

        def rotated(*a, **k):
            cpus = orig(*a, **k)
            return [cpu] + [c for c in cpus if c != cpu] if cpu in cpus else cpus
        placement.slot_cpus = rotated
    return H.plain_job(device, precision, min_s)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--precision", default="tf32")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--min-timed-s", type=float, default=1.5)
    ap.add_argument("--cpus", default=None,
                    help="comma-separated training CPUs to try ('os': unpinned); default: "
                         "the first, a middle and the last allowed CPU, and os")
    ap.add_argument("--max-seconds", type=float, default=90)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    allowed = sorted(os.sched_getaffinity(0))
    names = args.cpus.split(",") if args.cpus else \
        [str(allowed[0]), str(allowed[len(allowed) // 2]), str(allowed[-1]), "os"]
    variants = {n: (None if n == "os" else int(n)) for n in names}
    t0 = time.monotonic()
    irq0 = interrupts_per_cpu()
    runs = {n: [] for n in variants}
    for r in range(args.rounds):
        if time.monotonic() - t0 > args.max_seconds:
            break
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for n in order:
            runs[n].append(H.forked(on_cpu, args.device, args.precision, args.min_timed_s,
                                    variants[n])["samples_per_s"])
    irq1 = interrupts_per_cpu()
    report = {"precision": args.precision, "min_timed_s": args.min_timed_s,
              "host": os.uname().nodename, "cpus_allowed": allowed,
              "thread_siblings": siblings(),
              "interrupts_during_probe": [b - a for a, b in zip(irq0, irq1)],
              "lscpu": subprocess.run(["lscpu"], capture_output=True, text=True).stdout,
              "samples_per_s": runs, "wall_s": time.monotonic() - t0}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "placement_probe.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [f"# Training-thread CPU probe ({report['host']}, recipe {args.precision}, "
             f"batch {H.SIZES[args.device]['batch_size']}, >= {args.min_timed_s} s per run)", "",
             "| training CPU | runs | samples/s (each run) | median | min/max |", "|---|---|---|---|---|"]
    for n, v in runs.items():
        if v:
            lines.append(f"| {n} | {len(v)} | {', '.join(f'{x:,.0f}' for x in v)} | "
                         f"{statistics.median(v):,.0f} | {min(v) / max(v):.3f} |")
    lines += ["", "Interrupts per CPU during the probe: " +
              ", ".join(f"{i}: {n}" for i, n in enumerate(report["interrupts_during_probe"]))]
    (args.out / "placement_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
