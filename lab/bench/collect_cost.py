# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""What a job pays for knowing where it runs: tcbench.host.gpus.pin and
tcbench.host.environment.collect, piece by piece, each in fresh processes (a job is a fresh process), beside what the code before
them did (nvidia-smi per question, git twice).

    PYTHONPATH=workflow python3 lab/bench/collect_cost.py OUT.json [--repeats 5]

Runs on a GPU host (the pieces that need CUDA are measured there) and on a CPU (they are
skipped). Each repeat is one fresh process, bounded at 120 s; the whole run takes about
repeats x (3 s + CUDA start-up). Prints a table of medians last; OUT.json holds every repeat.
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

CHILD = "--child"


def timed(results: dict, name: str, fn):
    t0 = time.perf_counter()
    try:
        out = fn()
    except Exception as exc:  # noqa: BLE001 - a piece that fails is reported, not fatal
        results[name] = None
        results[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
        return None
    results[name] = time.perf_counter() - t0
    return out


def child() -> dict:
    """One job's worth, in the order tcbench.job.run does it."""
    r: dict = {}
    from tcbench.host import environment, gpus, sourcetree

    timed(r, "gpus.pin (NVML discover + lock)", gpus.pin)
    torch = timed(r, "import torch", lambda: __import__("torch"))
    cuda = bool(torch and torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")
    if cuda:
        timed(r, "CUDA context (torch.cuda.init)", torch.cuda.init)
        timed(r, "get_device_properties", lambda: torch.cuda.get_device_properties(device))
        timed(r, "cudnn.version() (loads cuDNN)", torch.backends.cudnn.version)
    timed(r, "environment.collect (whole)", lambda: environment.collect(device))
    # the pieces again, now warm, to see which one is left
    timed(r, "  git_info (one git status)", sourcetree.git_info)
    timed(r, "  container_info", environment.container_info)
    if cuda:
        props = torch.cuda.get_device_properties(device)
        uuid = str(props.uuid)
        uuid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        timed(r, "  gpu_identity", lambda: environment.gpu_identity(uuid, 0))
        timed(r, "  driver version (NVML)", environment._driver_version)
    # what the code before did instead
    timed(r, "before: nvidia-smi --query-gpu=index,uuid",
          lambda: subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
                                 capture_output=True, timeout=60, check=True))
    timed(r, "before: git rev-parse + git status",
          lambda: [subprocess.run(["git", "-C", str(sourcetree.REPO), *a], capture_output=True,
                                  timeout=60) for a in (["rev-parse", "HEAD"],
                                                        ["status", "--porcelain"])])
    r["device"] = str(device)
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    runs = []
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)  # let each process pin a GPU as a job does
    for i in range(args.repeats):
        proc = subprocess.run([sys.executable, __file__, CHILD], capture_output=True, text=True,
                              timeout=120, env=env)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    names = [k for k in runs[0] if k != "device" and not k.endswith("_error")]
    print(f"\n{runs[0]['device']}, {len(runs)} fresh processes, median seconds:")
    print(f"| {'piece':<46} | median s |\n|{'-' * 48}|----------|")
    for name in names:
        values = [r[name] for r in runs if r.get(name) is not None]
        cell = f"{statistics.median(values):8.3f}" if values else "  failed"
        print(f"| {name:<46} | {cell} |")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == [CHILD]:
        print(json.dumps(child()))
        sys.exit(0)
    sys.exit(main())
