# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""What does one training job cost beyond its measured steps? Fresh ``python -m tcbench.job.run``
processes, timed from outside, against what their records say they measured.

For each cell (the first cell of each experiment of a config, or the specs given), N fresh
processes (``--forked``: N processes forked from one preloaded interpreter, as the workflow
starts its jobs, tcbench.launch.forkclient) run repeats 1..N of that cell exactly as the study
would (repeat 1 profiles the kernels and counts FLOPs, the others name it; each repeat its own
seed). Per process:

  wall        the process's wall time, measured here (start to exit)
  warm-up     metrics.warmup_time_s: the first steps (autotuning, compilation, lazy loading)
  steady      metrics.steady_time_s: the timed steady-state steps
  fixed       wall - warm-up - steady: what the job costs besides training
  phases      the record's harness.phases_s (imports, cuda_context, building, ...), the
              interpreter's start (process_start_to_main_s) and the rest (record writing,
              interpreter exit), which together make up the wall time

    python lab/bench/job_cost.py --config config/smoke.yaml --repeats 2 \\
        --out results/bench/cpu-<model>
    python lab/bench/job_cost.py --config config/config.yaml --repeats 2 \\
        --experiments amp_recipe,digits --out results/bench/nvidia-h200 --name config-a \\
        --max-seconds 60
    python lab/bench/job_cost.py --config config/transformers_quick.yaml --repeats 4 \\
        --forked --out results/bench/nvidia-h200 --name transformers-forked

Writes ``job_cost.csv`` (one row per process) and ``job_cost.md`` (per cell: repeat 1 and the
median of the other repeats) to ``--out`` (``--name`` renames them); the jobs' records, logs
and compile cache go to ``--work`` (a fresh temporary folder unless given). A process is
started only while ``--max-seconds`` has not passed (each has the rest of it as its timeout);
the report says which ran.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow"))

from tcbench.launch import matrix  # noqa: E402
from tcbench import vocabulary as V  # noqa: E402

COLUMNS = ("cell", "repeat", "status", "start", "wall_s", "warmup_s", "steady_s", "fixed_s",
           "time_to_steady_s", "total_time_s", "process_start_s",
           *(f"{p}_s" for p in V.HARNESS_PHASES), "rest_s")


def config_jobs(path: Path, repeats: int, experiments: list[str] | None,
                cells: int) -> list[matrix.Cell]:
    """Repeats 1..``repeats`` of the first ``cells`` cells of each experiment of the config."""
    import yaml

    config = yaml.safe_load(path.read_text())
    chosen = [e | {"repeats": repeats} for e in config["experiments"]
              if not experiments or e.get("name", e.get("workload")) in experiments]
    missing = set(experiments or ()) - {e.get("name", e.get("workload")) for e in chosen}
    if missing:
        raise SystemExit(f"{path}: no experiment named {', '.join(sorted(missing))}")
    jobs = matrix.expand(config | {"experiments": chosen})
    picked, first = [], {}
    for job in jobs.values():
        base = job.cell.rsplit("_r", 1)[0]
        seen = first.setdefault(job.experiment, [])
        if base not in seen:
            if len(seen) == cells:
                continue
            seen.append(base)
        picked.append(job)
    return picked


def ensure_inputs(jobs) -> None:
    """Random MNIST-format files, where a job reads them (the workflow's data rule makes them)."""
    from tcbench.data import loaders as data

    for root in {REPO / Path(p).parents[2] for j in jobs for p in j.inputs()}:
        if not (root / "MNIST" / "raw" / matrix.MNIST_RAW[0]).exists():
            data.write_random_mnist(root)


def forked_env(specs: list[dict], work: Path) -> dict:
    """What the workflow gives its jobs for the fork server: the study's workloads (what the
    server preloads), the owner (this process: the server ends with it) and a folder of its own."""
    from tcbench.launch import forkclient

    folder = work / "fork"
    folder.mkdir(mode=0o700, exist_ok=True)
    return {forkclient.PRELOAD_ENV: ",".join(sorted({s["workload"] for s in specs})),
            forkclient.OWNER_ENV: str(os.getpid()), forkclient.DIR_ENV: str(folder)}


def run_one(spec: dict, out: Path, cache: Path, timeout: float, fork: dict | None) -> dict:
    name = f"{spec.get('experiment', spec['workload'])}__{spec.get('cell', 'adhoc')}"
    record, log = out / f"{name}.json", out / f"{name}.log"
    record.unlink(missing_ok=True)
    launcher = "tcbench.launch.forkclient" if fork else "tcbench.job.run"
    # --checked, as the workflow runs its jobs: main checked every spec first, trial step included
    cmd = [sys.executable, "-m", launcher, "--spec", json.dumps(spec), "--checked",
           "--compile-cache", str(cache), "--out", str(record)]
    # a PYTHONPATH of the caller's stays behind tcbench's (a host's extra site-packages)
    env = os.environ | (fork or {}) | {"PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO / "workflow"), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=timeout)
        code, text = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = "timeout", f"stopped after {exc.timeout:.0f} s (--max-seconds)"
    wall = time.perf_counter() - t0
    log.write_text(text)
    row = dict.fromkeys(COLUMNS) | {
        "cell": f"{spec.get('experiment', spec['workload'])}/{spec.get('cell', '')}",
        "repeat": spec.get("repeat", 1), "wall_s": wall, "status": f"exit {code}"}
    if code != 0 or not record.exists():
        return row
    r = json.loads(record.read_text())
    m, h = r.get("metrics") or {}, r.get("harness") or {}
    phases = h.get("phases_s") or {}
    warm, steady = m.get("warmup_time_s") or 0.0, m.get("steady_time_s") or 0.0
    start = h.get("process_start_to_main_s") or 0.0
    return row | {
        "status": r["status"], "start": (h.get("process") or {}).get("start"),
        "warmup_s": warm, "steady_s": steady,
        "fixed_s": wall - warm - steady, "time_to_steady_s": m.get("time_to_steady_s"),
        "total_time_s": m.get("total_time_s"), "process_start_s": start,
        **{f"{p}_s": phases.get(p) for p in V.HARNESS_PHASES},
        "rest_s": wall - start - sum(phases.values())}


def fmt(v) -> str:
    if v is None:
        return "–"
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def markdown(rows: list[dict], title: str) -> str:
    """Per cell: repeat 1 (kernel profile, FLOP count) and the median of the other repeats."""
    shown = [c for c in COLUMNS if c not in ("total_time_s",) and
             any(r.get(c) not in (None, 0.0) for r in rows)]
    lines = [f"# {title}", "",
             "Seconds. fixed = wall − warm-up − steady; the phase columns split the wall time "
             "(process start: the interpreter before tcbench.job.run's main; rest: writing the "
             "record and the interpreter's exit). Repeat 1 profiles the kernels and counts the "
             "FLOPs of its cell, the other repeats do not (`evidence_repeats: first`).", "",
             "| " + " | ".join(c.removesuffix("_s") for c in shown) + " |",
             "|" + "|".join("---" for _ in shown) + "|"]
    by_cell: dict[str, list[dict]] = {}
    for r in rows:
        by_cell.setdefault(re.sub(r"_r\d+$", "", r["cell"]), []).append(r)
    for cell, group in by_cell.items():
        first = [r for r in group if r["repeat"] == 1]
        others = [r for r in group if r["repeat"] != 1]
        for label, part in (("1", first), (f"2–{max(r['repeat'] for r in others)} (median)"
                                           if len(others) > 1 else "2", others)):
            if not part:
                continue
            out = {"cell": cell, "repeat": label,
                   **{c: ", ".join(sorted({str(r[c]) for r in part})) for c in ("status", "start")}}
            for c in shown:
                if c in ("cell", "repeat", "status", "start"):
                    continue
                vals = [r[c] for r in part if isinstance(r.get(c), (int, float))]
                out[c] = statistics.median(vals) if vals else None
            lines.append("| " + " | ".join(fmt(out.get(c)) for c in shown) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", type=Path, help="a study config: its experiments' first cells")
    src.add_argument("--spec", action="append", help="a job spec (JSON); may be repeated")
    ap.add_argument("--experiments", help="only these experiments of the config (comma-separated)")
    ap.add_argument("--cells", type=int, default=1, help="cells per experiment (default 1)")
    ap.add_argument("--repeats", type=int, default=2, help="fresh processes per cell")
    ap.add_argument("--max-seconds", type=float, default=300,
                    help="start no process after this long; each gets the rest as timeout")
    ap.add_argument("--out", type=Path, required=True, help="folder for NAME.{csv,md}")
    ap.add_argument("--name", default="job_cost", help="file name of the report (default "
                                                       "job_cost), to keep several in one folder")
    ap.add_argument("--work", type=Path, help="records, logs and compile cache of the jobs "
                                              "(default: a fresh temporary folder)")
    ap.add_argument("--forked", action="store_true",
                    help="start each job from one preloaded interpreter, as the workflow does "
                         "(its first job also waits for that interpreter's imports)")
    args = ap.parse_args(argv)
    args.out = args.out.resolve()
    t0 = time.monotonic()

    if args.config:
        jobs = config_jobs(args.config, args.repeats,
                           args.experiments.split(",") if args.experiments else None, args.cells)
        ensure_inputs(jobs)
        specs = [j.spec("job-cost") for j in jobs]
    else:
        from tcbench.job.spec import parse_spec

        given = [json.loads(s) for s in args.spec]
        for spec in given:   # as the workflow checks its jobs' specs when it makes them
            parse_spec(spec)
        specs = [spec | {"repeat": r, "cell": re.sub(r"_r\d+$", "", spec.get("cell", "adhoc"))
                         + f"_r{r}"}
                 for spec in given for r in range(1, args.repeats + 1)]
    work = (args.work or Path(tempfile.mkdtemp(prefix="job_cost-"))).resolve()
    jobs_dir = work / "jobs"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    cache = work / "compile-cache"
    print(f"records and logs: {jobs_dir}", flush=True)
    fork = forked_env(specs, work) if args.forked else None
    rows, skipped = [], []
    for spec in specs:
        left = args.max_seconds - (time.monotonic() - t0)
        if left <= 0:
            skipped.append(f"{spec.get('experiment')}/{spec.get('cell')}")
            continue
        rows.append(run_one(spec, jobs_dir, cache, left, fork))
        r = rows[-1]
        print(f"{r['cell']}: {r['status']}, wall {r['wall_s']:.2f} s, "
              f"fixed {fmt(r['fixed_s'])} s", flush=True)

    with open(args.out / f"{args.name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()}
                    for r in rows)
    from tcbench.host import environment

    how = "processes forked from one preloaded interpreter" if fork else "fresh processes"
    title = (f"Job cost: {args.config or 'specs'}, {args.repeats} {how} per cell "
             f"({environment.device_slug()}, {os.cpu_count()} CPUs)")
    text = markdown(rows, title)
    if skipped:
        text += f"\nNot run (--max-seconds {args.max_seconds:g} reached): {', '.join(skipped)}\n"
    (args.out / f"{args.name}.md").write_text(text)
    print(text)
    return 0 if all(r["status"] in V.STATUSES for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
