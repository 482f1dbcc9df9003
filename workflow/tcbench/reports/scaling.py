"""One GPU against K GPUs of one host: the same matrix run twice, compared.

    python -m tcbench.reports.scaling --one results/h200x2-1gpu --two results/h200x2-2gpu \\
        --wall-one 412.3 --wall-two 214.9 --out results/h200x2-scaling

Two questions, two verdicts:

* **scaling**: wall time with K GPUs over wall time with one; it must not exceed
  ``--max-wall-ratio`` (0.55 for two GPUs: half, plus a little for the serial start and the
  uneven tail).
* **interference**: does a job run slower because another job runs on the *other* GPU (shared
  CPU cores, host memory, PCIe root)? Per cell group (one configuration, all its repeats), the
  mean throughput of the two runs must differ by no more than the larger of ``--tolerance``
  and the repeat-to-repeat spread seen within the runs themselves: a difference smaller than
  the noise is no evidence of interference.

A third number, not a verdict, keeps the first honest: the two runs' *job times* (each record's
``harness``: process start to exit). When the jobs of one run simply took longer (the first
run on a fresh machine pays for cold caches and cuDNN autotuning), the wall-time ratio moves
for reasons that have nothing to do with scheduling. ``adjusted_wall_ratio`` swaps the 1-GPU
run's job times for the K-GPU run's, keeping what the 1-GPU run spent outside its jobs
(Snakemake's start, dispatch): K-GPU wall / (1-GPU wall - its job times + K-GPU job times).

Writes ``scaling.json`` and ``scaling.md`` to ``--out``; exit status 0 when both verdicts pass,
1 when one fails, 2 for unusable input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from .. import atomic, cli, stats
from .. import vocabulary as V
from ..render.numbers import num

REPEAT = re.compile(r"_r\d+$")


def load(run_dir: Path) -> dict[str, dict]:
    """``experiment/cell`` -> record, for every record of a result set."""
    records_dir = Path(run_dir) / "records"
    paths = sorted(records_dir.glob("*/*.json"))
    if not paths:
        raise ValueError(f"{records_dir}: no records")
    out = {}
    for p in paths:
        try:
            rec = json.loads(p.read_text())
        except ValueError as exc:
            raise ValueError(f"{p}: not JSON ({exc})") from None
        out[f"{rec['experiment']}/{rec['cell']}"] = rec
    return out


def _throughput(rec: dict) -> float | None:
    m = rec.get("metrics") or {}
    return m.get(V.HEADLINE) if rec.get("status") == V.OK else None


def _gpu(rec: dict) -> str:
    env = rec.get("environment") or {}
    if env.get("gpu_index") is None:
        return env.get("device_type") or "unknown"
    return f"GPU {env['gpu_index']} ({env.get('gpu_uuid')})"


def _job_time(rec: dict) -> float | None:
    """Seconds from process start to the end of the last phase; None for records without it."""
    h = rec.get("harness") or {}
    phases = h.get("phases_s")
    if not phases or h.get("process_start_to_main_s") is None:
        return None
    return h["process_start_to_main_s"] + sum(phases.values())


def _job_times(run: dict[str, dict]) -> dict:
    """Sum and mean of a run's job times; empty unless every record has one."""
    times = [_job_time(r) for r in run.values()]
    if not times or None in times:
        return {}
    return {"sum_s": sum(times), "mean_s": stats.mean(times)}


def _spread(values: list[float]) -> float:
    """Relative range of repeats: (max - min) / mean; 0 for a single value."""
    return stats.relative_range(values)


def _cells(one: dict[str, dict], two: dict[str, dict]) -> list[dict]:
    """Each cell of the matrix in both runs, with its throughput ratio (None unless both ok)."""
    missing = sorted(set(one) ^ set(two))
    if missing:
        raise ValueError(f"the two runs are not the same matrix; cells in only one: "
                         f"{', '.join(missing[:10])}")
    cells = []
    for key in sorted(one):
        a, b = _throughput(one[key]), _throughput(two[key])
        cells.append({"cell": key, "group": REPEAT.sub("", key),
                      "throughput_one": a, "throughput_two": b,
                      "ratio": b / a if a and b else None,
                      "gpu_one": _gpu(one[key]), "gpu_two": _gpu(two[key]),
                      "status_one": one[key].get("status"), "status_two": two[key].get("status")})
    return cells


def _groups(cells: list[dict], tolerance: float) -> list[dict]:
    """Per cell group (all repeats of one configuration): the two runs' mean throughputs and
    whether they differ by no more than the noise (the larger of tolerance and spread)."""
    by_group = defaultdict(list)
    for c in cells:
        if c["ratio"] is not None:
            by_group[c["group"]].append(c)
    groups = []
    for name, members in by_group.items():
        t1 = [c["throughput_one"] for c in members]
        t2 = [c["throughput_two"] for c in members]
        diff = stats.mean(t2) / stats.mean(t1) - 1
        noise = max(tolerance, _spread(t1), _spread(t2))
        groups.append({"group": name, "repeats": len(members),
                       "mean_throughput_one": stats.mean(t1),
                       "mean_throughput_two": stats.mean(t2),
                       "relative_difference": diff, "spread_one": _spread(t1),
                       "spread_two": _spread(t2), "allowed": noise,
                       "within_noise": abs(diff) <= noise})
    return groups


def _throughput_ratios(cells: list[dict]) -> dict:
    per_gpu = defaultdict(list)
    for c in cells:
        if c["ratio"] is not None:
            per_gpu[c["gpu_two"]].append(c["ratio"])
    ratios = [c["ratio"] for c in cells if c["ratio"] is not None]
    return {"throughput_ratio_median": stats.median(ratios) if ratios else None,
            "throughput_ratio_min": min(ratios) if ratios else None,
            "throughput_ratio_max": max(ratios) if ratios else None,
            "throughput_ratio_median_by_gpu_two": {g: stats.median(r)
                                                   for g, r in sorted(per_gpu.items())},
            "jobs_per_gpu_one": dict(Counter(c["gpu_one"] for c in cells)),
            "jobs_per_gpu_two": dict(Counter(c["gpu_two"] for c in cells))}


def compare(one: dict[str, dict], two: dict[str, dict], wall_one: float, wall_two: float,
            gpus_two: int = 2, max_wall_ratio: float = 0.55, tolerance: float = 0.03) -> dict:
    if wall_one <= 0 or wall_two <= 0:
        raise ValueError("wall times must be positive")
    cells = _cells(one, two)
    not_ok = [c["cell"] for c in cells if c["ratio"] is None]
    groups = _groups(cells, tolerance)
    wall_ratio = wall_two / wall_one
    result = {
        "gpus_one": 1, "gpus_two": gpus_two,
        "wall_time_one_s": wall_one, "wall_time_two_s": wall_two,
        "wall_time_ratio": wall_ratio, "max_wall_ratio": max_wall_ratio,
        "scaling_ok": wall_ratio <= max_wall_ratio,
        "jobs": len(cells), "jobs_not_ok": not_ok, **_throughput_ratios(cells),
        "tolerance": tolerance,
        "interference_ok": bool(groups) and all(g["within_noise"] for g in groups),
        "groups": groups, "cells": cells,
    }
    jt1, jt2 = _job_times(one), _job_times(two)
    result |= {"job_time_sum_one_s": jt1.get("sum_s"), "job_time_sum_two_s": jt2.get("sum_s"),
               "job_time_mean_one_s": jt1.get("mean_s"), "job_time_mean_two_s": jt2.get("mean_s")}
    result["adjusted_wall_ratio"] = (
        wall_two / (wall_one - jt1["sum_s"] + jt2["sum_s"]) if jt1 and jt2 else None)
    result["ok"] = result["scaling_ok"] and result["interference_ok"] and not not_ok
    return result


def markdown(r: dict) -> str:
    yes = {True: "yes", False: "**NO**"}
    lines = [
        f"# 1 GPU vs {r['gpus_two']} GPUs, same matrix ({r['jobs']} jobs)",
        "",
        f"| | 1 GPU | {r['gpus_two']} GPUs |",
        "|---|---:|---:|",
        f"| wall time (s) | {num(r['wall_time_one_s'])} | {num(r['wall_time_two_s'])} |",
        f"| jobs per GPU | {_counts(r['jobs_per_gpu_one'])} | {_counts(r['jobs_per_gpu_two'])} |",
        "",
        f"- wall-time ratio: **{num(r['wall_time_ratio'])}** (limit {r['max_wall_ratio']}): "
        f"{yes[r['scaling_ok']]}",
        *_job_time_lines(r),
        f"- per-job throughput, {r['gpus_two']}-GPU run / 1-GPU run: median "
        f"{_f(r['throughput_ratio_median'])}, range {_f(r['throughput_ratio_min'])} to "
        f"{_f(r['throughput_ratio_max'])}",
        *(f"  - jobs on {g}: median {num(v)}"
          for g, v in r["throughput_ratio_median_by_gpu_two"].items()),
        f"- no interference (every group within max(tolerance {r['tolerance']:.0%}, "
        f"repeat spread)): {yes[r['interference_ok']]}",
    ]
    if r["jobs_not_ok"]:
        lines.append(f"- cells without a throughput in one of the runs: "
                     f"{', '.join(r['jobs_not_ok'])}")
    lines += ["", "| cell group | repeats | 1 GPU (samples/s) | "
              f"{r['gpus_two']} GPUs (samples/s) | difference | allowed | ok |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for g in r["groups"]:
        lines.append(f"| {g['group']} | {g['repeats']} | {num(g['mean_throughput_one'])} | "
                     f"{num(g['mean_throughput_two'])} | {g['relative_difference']:+.1%} | "
                     f"{g['allowed']:.1%} | {yes[g['within_noise']]} |")
    return "\n".join(lines) + "\n"


def _job_time_lines(r: dict) -> list[str]:
    if r.get("adjusted_wall_ratio") is None:
        return ["- job times: not in every record (no `harness` field), drift not checked"]
    k = r["gpus_two"]
    drift = r["job_time_mean_one_s"] / r["job_time_mean_two_s"] - 1
    return [f"- job time (process start to exit), mean: {num(r['job_time_mean_one_s'])} s in the "
            f"1-GPU run, {num(r['job_time_mean_two_s'])} s in the {k}-GPU run ({drift:+.0%})",
            f"- wall-time ratio with the {k}-GPU run's job times in both runs: "
            f"**{num(r['adjusted_wall_ratio'])}** (what is left is scheduling: perfect "
            f"{num(1 / k)} plus the serial start)"]


def _f(v) -> str:
    return "n/a" if v is None else num(v)


def _counts(c: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(c.items()))


def _write(path: Path, text: str) -> None:
    atomic.write_text(path, text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.scaling", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one", type=Path, required=True, help="result set run with 1 GPU")
    ap.add_argument("--two", type=Path, required=True, help="result set run with K GPUs")
    ap.add_argument("--gpus", type=int, default=2, help="K, the GPUs of the second run")
    ap.add_argument("--wall-one", type=float, required=True, help="its wall time, seconds")
    ap.add_argument("--wall-two", type=float, required=True, help="its wall time, seconds")
    ap.add_argument("--max-wall-ratio", type=float, default=0.55)
    ap.add_argument("--tolerance", type=float, default=0.03)
    ap.add_argument("--out", type=Path, required=True, help="folder for scaling.json/.md")
    args = ap.parse_args(argv)

    def check() -> int:
        r = compare(load(args.one), load(args.two), args.wall_one, args.wall_two, args.gpus,
                    args.max_wall_ratio, args.tolerance)
        r |= {"run_one": str(args.one), "run_two": str(args.two)}
        _write(args.out / "scaling.json", json.dumps(r, indent=2) + "\n")
        md = markdown(r)
        _write(args.out / "scaling.md", md)
        print(md)
        return 0 if r["ok"] else 1

    return cli.main("tcbench.reports.scaling", check, (ValueError, KeyError))


if __name__ == "__main__":
    sys.exit(main())
