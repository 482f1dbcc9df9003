# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Host-bound cells decided, on one GPU: the training core, the interleaved comparison and the
cure (CUDA graphs), measured with tcbench's own jobs on the PyTorch AMP recipe (batch 512).

    python lab/bench/host_bound.py run --out DIR [--max-seconds 450]     # on the GPU host
    python lab/bench/host_bound.py report DIR                           # anywhere

``run`` makes, in this order (each part is skipped once ``--max-seconds`` is spent, so what
ran comes back whole):

1. **placement**: the recipe in fp32, tf32, amp-fp16 and amp-bf16, 3 repeats each under the
   old placement (``cpu_placement: first``: the training thread on the job's first CPU, CPU 0)
   and the new (``pinned``: the fastest core by a probe), the two alternating job by job, the
   order flipped every repeat; each job a forked ``tcbench.job.run`` as the workflow runs it;
2. **interleaved**: the four modes alternated in one process (``tcbench.job.interleave``, its
   default rounds), once with the new placement and once with the old;
3. **graphs**: the recipe with its training step captured as a CUDA graph (``cuda_graphs: on``,
   ``fused_optimizer: on``, so amp-fp16's GradScaler stays on the GPU), 3 repeats of each mode,
   and the four graphed modes interleaved;
4. **ablation**: ``lab/bench/host_fidelity.py --ablate``: the plain loop with one piece of
   tcbench's harness added at a time, interleaved in one process (one NVML sampler beside its
   variant's steps).

Every record goes under ``DIR`` (``records/``, ``interleaved/``, ``ablation/``), the job logs
under ``DIR/logs``. ``report`` reads them and writes ``DIR/README.md``'s tables
(``DIR/summary.md``): per mode the new placement's median throughput over the old's, each
interleaved ratio with its bootstrap interval and half-width beside the per-process interval of
the same ratio, the graphs' throughput, the ablation's cost per step.
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "workflow"))

MODES = ("fp32", "tf32", "amp-fp16", "amp-bf16")
PLACEMENTS = ("first", "pinned")
REPEATS = 3
BATCH = 512
GRAPHS = {"cuda_graphs": "on", "fused_optimizer": "on"}
# --smoke: a dry run of the whole script on a CPU, the recipe shrunk (its numbers mean nothing)
SMOKE = {"in_size": 64, "out_size": 64, "num_batches": 4, "epochs": 1}
EXTRA: dict = {}


def job(out: Path, experiment: str, precision: str, repeat: int, params: dict,
        deadline: float) -> dict | None:
    """One forked tcbench job (its record, or None when it failed or time is up)."""
    if time.monotonic() > deadline:
        return None
    tag = params.get("cpu_placement", "pinned")
    cell = f"{precision}_bs{BATCH}_{tag}_r{repeat}"
    spec = {"run": "host-bound", "experiment": experiment, "cell": cell,
            "workload": "amp_recipe", "precision": precision, "batch_size": BATCH,
            "repeat": repeat, "params": {"seed": repeat - 1} | EXTRA.get("params", {}) | params}
    if "device" in EXTRA:
        spec["device"] = EXTRA["device"]
    record = out / "records" / experiment / f"{cell}.json"
    log = out / "logs" / experiment / f"{cell}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with log.open("w") as f:
        rc = subprocess.call([sys.executable, "-m", "tcbench.launch.forkclient", "--spec",
                              json.dumps(spec), "--out", str(record)], stdout=f,
                             stderr=subprocess.STDOUT, cwd=ROOT)
    took = time.monotonic() - t0
    if rc != 0 or not record.exists():
        print(f"  {experiment}/{cell}: failed (exit {rc}), {took:.1f} s; see {log}", flush=True)
        return None
    r = json.loads(record.read_text())
    m = r.get("metrics") or {}
    core = r["placement"]["training_core"]
    print(f"  {experiment}/{cell}: {r['status']} {m.get('throughput_samples_per_s') or 0:,.0f}"
          f" samples/s on CPU {core['cpu']}, {took:.1f} s", flush=True)
    return r


def comparison(out: Path, name: str, params: dict, deadline: float,
               rounds: int | None = None) -> None:
    if time.monotonic() > deadline:
        print(f"  interleaved/{name}: skipped (time)", flush=True)
        return
    spec = {"run": "host-bound", "experiment": "interleaved", "setting": name,
            "workload": "amp_recipe", "batch_size": BATCH, "precisions": list(MODES),
            "params": EXTRA.get("params", {}) | params,
            "interleave": {"rounds": EXTRA.get("rounds", rounds)} if EXTRA.get(
                "rounds", rounds) else {}}
    if "device" in EXTRA:
        spec["device"] = EXTRA["device"]
    path = out / "interleaved" / f"{name}.json"
    log = out / "logs" / "interleaved" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with log.open("w") as f:
        rc = subprocess.call([sys.executable, "-m", "tcbench.launch.forkclient", "--module",
                              "tcbench.job.interleave", "--spec", json.dumps(spec), "--out",
                              str(path)], stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    print(f"  interleaved/{name}: exit {rc}, {time.monotonic() - t0:.1f} s", flush=True)


PARTS = ("placement", "interleaved", "graphs", "ablation")


def run(out: Path, max_seconds: float, parts=PARTS) -> None:
    from tcbench.launch import forkclient

    # the jobs' interpreters find tcbench as the workflow's do (its rules set PYTHONPATH)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "workflow"), *filter(None, [os.environ.get("PYTHONPATH")])])
    t0 = time.monotonic()
    deadline = t0 + max_seconds
    os.environ[forkclient.OWNER_ENV] = str(os.getpid())   # the fork server ends with this run
    out.mkdir(parents=True, exist_ok=True)
    if "placement" in parts:
        print("1. placement: old (first CPU) against new (fastest core), alternating",
              flush=True)
        for repeat in range(1, REPEATS + 1):
            for mode in MODES:
                order = PLACEMENTS if (repeat + MODES.index(mode)) % 2 else PLACEMENTS[::-1]
                for pl in order:
                    job(out, "placement", mode, repeat, {"cpu_placement": pl}, deadline)
    if "interleaved" in parts:
        print("2. interleaved: the four modes in one process", flush=True)
        comparison(out, "eager_pinned", {"cpu_placement": "pinned"}, deadline)
        comparison(out, "eager_first", {"cpu_placement": "first"}, deadline)
    if "graphs" in parts:
        print("3. graphs: the training step as one CUDA graph", flush=True)
        for repeat in range(1, REPEATS + 1):
            for mode in MODES:
                job(out, "graphs", mode, repeat, GRAPHS, deadline)
    if "graphs" in parts or "interleaved" in parts:
        comparison(out, "graphs_pinned", GRAPHS, deadline)
    left = deadline - time.monotonic()
    if "ablation" in parts:
        print(f"4. ablation ({left:.0f} s left)", flush=True)
    if "ablation" in parts and left > 100 and "device" not in EXTRA:
        subprocess.call([sys.executable, str(ROOT / "lab/bench/host_fidelity.py"),
                         "--pairs", "0", "--ablate", "12", "--precisions", "tf32,amp-bf16",
                         "--out", str(out / "ablation")], cwd=ROOT)
    print(f"done in {time.monotonic() - t0:.0f} s", flush=True)


# ------------------------------------------------------------------------------------ report
def report(folder: Path) -> str:
    import numpy as np

    from tcbench import stats
    from tcbench.analysis import interleaved as IL

    recs = {}
    for p in sorted((folder / "records").rglob("*.json")):
        r = json.loads(p.read_text())
        recs.setdefault(r["experiment"], []).append(r)

    def thr(r):
        return (r.get("metrics") or {}).get("throughput_samples_per_s")

    lines = ["## Placement: the training thread on the fastest core (new) against the set's "
             "first CPU (old)", "",
             "| mode | old: CPU | old samples/s (runs) | new: CPU | new samples/s (runs) | "
             "new / old (medians) | new ÷ old, 95% CI |", "|---|---|---|---|---|---|---|"]
    per = {}
    for r in recs.get("placement", []):
        if r["status"] != "ok":
            continue
        per.setdefault((r["precision"], r["params"]["cpu_placement"]), []).append(r)
    for mode in MODES:
        old, new = per.get((mode, "first"), []), per.get((mode, "pinned"), [])
        if not old or not new:
            continue
        a, b = [thr(r) for r in old], [thr(r) for r in new]
        cpus = lambda rs: ",".join(sorted({str(r["placement"]["training_core"]["cpu"])
                                           for r in rs}))
        e = stats.ratio(b, a)
        ci = f"[{e.low:.3f}, {e.high:.3f}]" if e.method == stats.CI else e.label
        lines.append(f"| {mode} | {cpus(old)} | {', '.join(f'{x:,.0f}' for x in a)} | "
                     f"{cpus(new)} | {', '.join(f'{x:,.0f}' for x in b)} | "
                     f"{statistics.median(b) / statistics.median(a):.3f} | {ci} |")
    paths = sorted((folder / "interleaved").glob("*.json"))
    if paths:
        compared = IL.load(paths)
        ratios = IL.ratios(compared)
        lines += ["", "## Interleaved: paired ratios from one process against the per-process "
                  "repeats' ratio", "",
                  "| comparison | training CPU | arm ÷ baseline | interleaved: median [95% "
                  "bootstrap CI] | half-width | rounds | per-process repeats: ratio [95% CI] "
                  "| half-width |", "|---|---|---|---|---|---|---|---|"]
        exp_of = {"eager_pinned": ("placement", "pinned"), "eager_first": ("placement", "first"),
                  "graphs_pinned": ("graphs", "pinned")}
        for _, row in ratios.iterrows():
            if row["ratio_interval"] != stats.PAIRED:
                continue
            e = stats.from_row(row, "ratio")
            half = stats.relative_halfwidth(e)
            exp, pl = exp_of.get(row["setting"], (None, None))
            pa = [thr(r) for r in per.get((row["precision"], pl), [])] if exp == "placement" \
                else [thr(r) for r in recs.get("graphs", []) if r["precision"] == row["precision"]
                      and r["status"] == "ok"]
            pb = [thr(r) for r in per.get((row["baseline"], pl), [])] if exp == "placement" \
                else [thr(r) for r in recs.get("graphs", []) if r["precision"] == row["baseline"]
                      and r["status"] == "ok"]
            pe = stats.ratio(pa, pb)
            ph = stats.relative_halfwidth(pe)
            lines.append(
                f"| {row['setting']} | {row['training_cpu']} | {row['precision']} ÷ "
                f"{row['baseline']} | {e.value:.3f} [{e.low:.3f}, {e.high:.3f}] | {half:.1%} | "
                f"{int(row['ratio_n'])} | "
                + (f"{pe.value:.3f} [{pe.low:.3f}, {pe.high:.3f}] | {ph:.1%} |"
                   if ph is not None else f"{pe.value or float('nan'):.3f} ({pe.label}) | – |"))
        rounds = IL.rounds(compared)
        lines += ["", "Each arm's own throughput over the rounds (median, CV: the host's drift "
                  "that the paired ratio cancels); the host probe over the rounds:", "",
                  "| comparison | arm | median samples/s | CV over rounds | host probe ops/s "
                  "(min–max) |", "|---|---|---|---|---|"]
        for (setting, prec), g in rounds.groupby(["setting", "precision"], sort=False):
            x = g["throughput_samples_per_s"].to_numpy()
            pr = g["host_probe_ops_per_s"].to_numpy()
            lines.append(f"| {setting} | {prec} | {np.median(x):,.0f} | {stats.cv(x):.1%} | "
                         f"{pr.min():,.0f}–{pr.max():,.0f} |")
    graphs = [r for r in recs.get("graphs", [])]
    if graphs:
        lines += ["", "## The cure: the training step as one CUDA graph", "",
                  "| mode | status | samples/s (runs) | eager new placement, median |",
                  "|---|---|---|---|"]
        for mode in MODES:
            rs = [r for r in graphs if r["precision"] == mode]
            ok = [thr(r) for r in rs if r["status"] == "ok"]
            eager = [thr(r) for r in per.get((mode, "pinned"), [])]
            status = ", ".join(sorted({r["status"] for r in rs}))
            shown = ", ".join(f"{x:,.0f}" for x in ok) or "–"
            eager_median = f"{statistics.median(eager):,.0f}" if eager else "–"
            lines.append(f"| {mode} | {status} | {shown} | {eager_median} |")
    abl = folder / "ablation" / "host_fidelity.md"
    if abl.exists():
        text = abl.read_text()
        lines += ["", "## Ablation (tcbench's harness piece by piece, one process)", "",
                  text[text.index("## Ablation"):].replace("## Ablation", "###", 1)
                  if "## Ablation" in text else text]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--max-seconds", type=float, default=450)
    r.add_argument("--smoke", action="store_true", help="a dry run on the CPU, shrunk")
    r.add_argument("--parts", default=",".join(PARTS),
                   help=f"which parts, comma-separated (default: {','.join(PARTS)})")
    s = sub.add_parser("report")
    s.add_argument("folder", type=Path)
    args = ap.parse_args(argv)
    if args.what == "run":
        if args.smoke:
            EXTRA.update(device="cpu", rounds=3, params=SMOKE | {"min_timed_s": 0.0})
        run(args.out, args.max_seconds, args.parts.split(","))
    else:
        text = report(args.folder)
        (args.folder / "summary.md").write_text(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
