# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Where does a forked transformer job's parameter check spend its time?

A job's ``parameter_check`` phase (``tcbench.job.spec.parse_spec``: the workload's check, for a
transformers model one forward and backward on PyTorch's meta device) took 1.2 s in each GPT-2
small job forked on an H200, against 0.2 s on a CPU laptop. This script does what the fork
server does (``tcbench.launch.preload.preload`` for the transformers workload, in a fresh
interpreter each time), then per model and round forks a child that times ``parse_spec`` of a
1024-token job, profiles it, and says whether the check started the CUDA driver (which a fork
server must never do, but a forked job may). Each round also times the check a job the workflow
made runs (``tcbench.job.run --checked``: the model's trial step on the meta device ran when
the workflow made the job, and is not repeated).

    python lab/bench/check_cost.py --out results/bench/nvidia-h200/check-cost --rounds 3

Writes ``check_cost.json`` (every child's seconds and its profile's top functions) and
``check_cost.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow"))

MODELS = ("gpt2-small-v50304", "gpt2-small", "llama-300m")


def server(rounds: int) -> dict:
    """In this process (a fresh interpreter, started by main below): preload, then the
    forked checks."""
    from tcbench.launch import forkclient, preload

    os.environ[forkclient.PRELOAD_ENV] = "transformers"
    t = time.perf_counter()
    preload.preload()
    out = {"preload_s": round(time.perf_counter() - t, 3),
           "hazards_before_forks": preload.fork_hazards(), "children": []}
    for r in range(rounds):
        for model in MODELS:
            for trial in (True, False):
                out["children"].append(in_child(lambda m=model, t=trial: child(m, trial=t))
                                       | {"round": r + 1})
    # one more child a model under cProfile (which slows it), for where the time goes
    out["profiles"] = [in_child(lambda m=model: child(m, profile=True)) for model in MODELS]
    return out


def in_child(fn) -> dict:
    """``fn()``'s JSON answer, run in a forked child, as the fork server runs a job."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(write, json.dumps(fn()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data or b'{"error": "the child died"}')


def child(model: str, profile: bool = False, trial: bool = True) -> dict:
    from tcbench.job.spec import parse_spec
    from tcbench.launch import preload

    spec = {"workload": "transformers", "precision": "amp-bf16", "batch_size": 32,
            "params": {"model": model, "seq_len": 1024}}
    prof = cProfile.Profile() if profile else None
    t = time.perf_counter()
    if prof:
        prof.enable()
    parse_spec(spec, trial)
    if prof:
        prof.disable()
    out = {"model": model, "trial": trial, "seconds": round(time.perf_counter() - t, 4),
           "driver_initialised": preload.driver_initialised()}
    if prof:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
        out["profile"] = text.getvalue().splitlines()[:70]
    return out


def spread(seconds: list[float]) -> str:
    return (f"{statistics.median(seconds):.3f} ({min(seconds):.3f}–{max(seconds):.3f})"
            if seconds else "—")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--servers", type=int, default=2, help="fresh interpreters, one after "
                    "the other, each preloading and then forking the checks")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        print(json.dumps(server(args.rounds)))
        return 0
    runs = []
    for _ in range(args.servers):
        done = subprocess.run([sys.executable, __file__, "--out", str(args.out), "--rounds",
                               str(args.rounds), "--serve"], capture_output=True, text=True,
                              check=False)
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            return done.returncode
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "check_cost.json").write_text(json.dumps(runs, indent=1) + "\n")
    from importlib.metadata import version

    from tcbench.host import environment

    lines = ["# A forked transformer job's parameter check", "",
             f"{environment.device_slug()}, {os.cpu_count()} CPUs, torch {version('torch')}, "
             f"transformers {version('transformers')}.", "",
             f"Seconds of `parse_spec` in a forked child, median (min–max) over {args.rounds} "
             f"rounds × {args.servers} servers (fresh interpreters; their preload in s: "
             f"{', '.join(str(r['preload_s']) for r in runs)}).", "",
             "| model | a job's own check s | a job the workflow made (`--checked`) s "
             "| driver initialised |", "|---|---|---|---|"]
    for model in MODELS:
        kids = [c for r in runs for c in r["children"] if c.get("model") == model]
        cols = [spread([c["seconds"] for c in kids if c["trial"] is t]) for t in (True, False)]
        drv = sorted({str(c["driver_initialised"]) for c in kids})
        lines.append(f"| {model} | {' | '.join(cols)} | {', '.join(drv)} |")
    (args.out / "check_cost.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
