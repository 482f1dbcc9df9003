# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Does forking jobs from a preloaded interpreter change what they measure? A/B, fresh vs forked.

For each cell (a GPU-bound one, ResNet-50, and a host-bound one, the PyTorch AMP recipe), N
rounds; in each round the same job (same repeat, same seed) runs once as a fresh
``python -m tcbench.job.run`` and once through ``python -m tcbench.launch.forkclient`` (forked from the
preloaded server), the order alternating from round to round (ABBA...), each job its own
process. Before the rounds one forked job starts the server; its wall time is reported on its
own (a study pays it once) and it is not one of the rounds.

Per job: wall (measured here, start to exit), the record's steady-state throughput, warm-up
(metrics.warmup_time_s) and timed steps (metrics.steady_time_s), and the fixed cost: wall less
warm-up and timed steps. Per cell: the throughput ratio forked / fresh with its interval
(tcbench.stats.ratio: 95% CI for n >= 3), and the median fixed cost of each arm.

    python lab/bench/fork_ab.py --out results/bench/nvidia-h200/fork_ab --rounds 5
    python lab/bench/fork_ab.py --out /tmp/fork_ab --sizes cpu --rounds 3   # tiny, on a CPU

Writes ``fork_ab.json`` (every job and the summaries) and ``fork_ab.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow"))

from tcbench import atomic, stats  # noqa: E402
from tcbench.launch import forkclient  # noqa: E402

CELLS = {  # name -> (bound, spec) per size
    "gpu": {
        "resnet50": ("GPU-bound", {"workload": "resnet50", "precision": "amp-bf16",
                                   "batch_size": 256}),
        "amp_recipe": ("host-bound", {"workload": "amp_recipe", "precision": "amp-bf16",
                                      "batch_size": 512}),
    },
    "cpu": {
        "resnet50": ("GPU-bound on a GPU", {
            "workload": "resnet50", "precision": "fp32", "batch_size": 2,
            "params": {"image_size": 32, "num_classes": 10, "steps": 4, "warmup_steps": 1,
                       "distinct_batches": 1, "profile_steps": 1, "min_timed_s": 1.0}}),
        "amp_recipe": ("host-bound", {
            "workload": "amp_recipe", "precision": "fp32", "batch_size": 64,
            "params": {"in_size": 256, "out_size": 256, "num_batches": 8, "epochs": 2,
                       "warmup_steps": 2, "min_timed_s": 1.0}}),
    },
}
ARMS = {"fresh": "tcbench.job.run", "forked": "tcbench.launch.forkclient"}


def run_job(arm: str, spec: dict, work: Path, env: dict) -> dict:
    name = f"{spec['experiment']}_{arm}_r{spec['repeat']}"
    record, log = work / f"{name}.json", work / f"{name}.log"
    cmd = [sys.executable, "-m", ARMS[arm], "--spec", json.dumps(spec), "--compile-cache",
           str(work / "compile-cache"), "--out", str(record)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    log.write_text(proc.stdout + proc.stderr)
    row = {"cell": spec["experiment"], "arm": arm, "repeat": spec["repeat"], "wall_s": wall,
           "exit": proc.returncode}
    if proc.returncode != 0 or not record.exists():
        return row | {"status": f"exit {proc.returncode} (see {log})"}
    r = json.loads(record.read_text())
    m = r.get("metrics") or {}
    warm, steady = m.get("warmup_time_s") or 0.0, m.get("steady_time_s") or 0.0
    return row | {"status": r["status"], "process": r["harness"]["process"]["start"],
                  "throughput": m.get("throughput_samples_per_s"), "warmup_s": warm,
                  "steady_s": steady, "fixed_s": wall - warm - steady}


def summarise(rows: list[dict]) -> dict:
    def of(arm, key):
        return [r[key] for r in rows if r["arm"] == arm and r.get(key) is not None]

    ratio = stats.ratio(of("forked", "throughput"), of("fresh", "throughput"))
    return {"throughput_ratio_forked_over_fresh": ratio.value, "ratio_low": ratio.low,
            "ratio_high": ratio.high, "ratio_interval": ratio.label, "n": ratio.n,
            **{f"median_fixed_s_{arm}": statistics.median(of(arm, "fixed_s"))
               if of(arm, "fixed_s") else None for arm in ARMS},
            **{f"median_wall_s_{arm}": statistics.median(of(arm, "wall_s"))
               if of(arm, "wall_s") else None for arm in ARMS}}


def fmt(v, digits=3) -> str:
    return "–" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def markdown(doc: dict) -> str:
    lines = ["# Fresh vs forked jobs (lab/bench/fork_ab.py)", "",
             f"{doc['device']}; {doc['rounds']} rounds per cell, arms alternating; sizes "
             f"`{doc['sizes']}`; server start (first forked job, not a round): "
             f"{fmt(doc['server_start_job_wall_s'], 2)} s.", "",
             "| cell | bound | throughput forked / fresh | interval | n | fixed s fresh | "
             "fixed s forked | wall s fresh | wall s forked |", "|---|---|---|---|---|---|---|---|---|"]
    for cell, s in doc["summary"].items():
        lines.append(
            f"| {cell} | {doc['bound'][cell]} | {fmt(s['throughput_ratio_forked_over_fresh'], 4)} "
            f"| {fmt(s['ratio_low'], 4)}–{fmt(s['ratio_high'], 4)} ({s['ratio_interval']}) "
            f"| {s['n']} | {fmt(s['median_fixed_s_fresh'], 2)} | "
            f"{fmt(s['median_fixed_s_forked'], 2)} | {fmt(s['median_wall_s_fresh'], 2)} | "
            f"{fmt(s['median_wall_s_forked'], 2)} |")
    lines += ["", "fixed = job wall (measured from outside) − warm-up − timed steps; medians "
              "over the rounds. Throughput: the record's steady-state samples/s."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for fork_ab.json and .md")
    ap.add_argument("--rounds", type=int, default=5, help="jobs per arm and cell (>= 3: a CI)")
    ap.add_argument("--sizes", choices=sorted(CELLS), default="gpu")
    ap.add_argument("--cells", default=None, help="comma-separated subset of " +
                    ",".join(CELLS["gpu"]))
    ap.add_argument("--work", type=Path, default=None, help="records and logs (default: temp)")
    args = ap.parse_args(argv)
    cells = {k: v for k, v in CELLS[args.sizes].items()
             if not args.cells or k in args.cells.split(",")}
    work = args.work or Path(tempfile.mkdtemp(prefix="fork_ab-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != forkclient.OWNER_ENV} | {
        "PYTHONPATH": str(REPO / "workflow"), forkclient.OWNER_ENV: str(os.getpid()),
        forkclient.DIR_ENV: str(work / "fork")}
    rows = []
    name, (_, base) = next(iter(cells.items()))  # the server's start: once, before any round
    first = run_job("forked", base | {"experiment": name, "cell": "server-start", "repeat": 1},
                    work, env)
    for cell, (_, base) in cells.items():
        for i in range(1, args.rounds + 1):  # round i: repeat i, seed i, both arms
            spec = base | {"experiment": cell, "cell": f"r{i}", "repeat": i,
                           "params": base.get("params", {}) | {"seed": i}}
            for arm in (list(ARMS) if i % 2 else list(reversed(ARMS))):
                rows.append(run_job(arm, spec, work, env))
                print(json.dumps(rows[-1]), flush=True)
    from tcbench.host import environment

    doc = {"device": environment.device_slug(), "sizes": args.sizes, "rounds": args.rounds,
           "bound": {c: b for c, (b, _) in cells.items()},
           "server_start_job_wall_s": first["wall_s"],
           "summary": {c: summarise([r for r in rows if r["cell"] == c]) for c in cells},
           "jobs": rows, "work": str(work)}
    args.out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(args.out / "fork_ab.json", doc)
    atomic.write_text(args.out / "fork_ab.md", markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
