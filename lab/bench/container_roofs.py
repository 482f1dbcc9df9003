# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Does a container change what the GPU does? The calibration's matmul roofs inside and outside.

The calibration (python -m tcbench.job.calibrate: 8192-wide matmuls per precision, the median of 20
iterations) ran N times natively and N times inside Apptainer (``--nv``, the same GPU, the
same code), alternating native / container, each its own process, in one call:

    for i in 1..N: calibrate --out DIR/native_i.json; apptainer exec --nv IMAGE calibrate --out DIR/container_i.json

Per precision: the ratio container / native of each pair, and over the pairs their geometric
mean with a 95% t interval on the log ratios (tcbench.stats.replicated_ratio: the pairs are the
level that varies). Optionally the two result sets' job wall times (Snakemake's benchmark
files), to say what a containerised job costs beyond its measurement.

    python lab/bench/container_roofs.py results/bench/nvidia-h200/container \
        --sets results/nvidia-h200-container results/nvidia-h200-container-native

Writes ``roofs.md`` and ``roofs.json`` into the first argument.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow"))

from tcbench import atomic, stats  # noqa: E402
from tcbench.render import numbers  # noqa: E402


def pairs(folder: Path) -> list[tuple[dict, dict]]:
    out = []
    for native in sorted(folder.glob("native_*.json"), key=lambda p: int(p.stem.split("_")[1])):
        inside = folder / native.name.replace("native_", "container_")
        if inside.exists():
            out.append((json.loads(native.read_text()), json.loads(inside.read_text())))
    if not out:
        raise SystemExit(f"{folder}: no native_<i>.json with a container_<i>.json beside it")
    return out


def roofs(found: list[tuple[dict, dict]]) -> list[dict]:
    rows = []
    for mode in found[0][0]["modes"]:
        native = [n["modes"][mode].get("tflops") for n, _ in found]
        inside = [c["modes"][mode].get("tflops") for _, c in found]
        ratios = [stats.Estimate(c / n, None, None, 1, stats.SINGLE)
                  for n, c in zip(native, inside) if n and c]
        rep = stats.replicated_ratio(ratios).estimate
        rows.append({"precision": mode, "pairs": len(ratios),
                     "native_tflops_median": statistics.median(v for v in native if v),
                     "container_tflops_median": statistics.median(v for v in inside if v),
                     "ratio": rep.value, "low": rep.low, "high": rep.high, "method": rep.method})
    return rows


def job_walls(run: Path) -> dict:
    walls = {}
    for f in sorted((run / "benchmarks").rglob("*.tsv")):
        kind = f.relative_to(run / "benchmarks").parts[0]
        with f.open() as fh:
            walls.setdefault(kind, []).append(float(next(csv.DictReader(fh, delimiter="\t"))["s"]))
    return {k: {"n": len(v), "median_s": statistics.median(v), "max_s": max(v)}
            for k, v in walls.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="holds calibration/native_<i>.json, container_<i>.json")
    ap.add_argument("--sets", nargs=2, type=Path, metavar=("CONTAINER", "NATIVE"))
    args = ap.parse_args(argv)
    rows = roofs(pairs(args.folder / "calibration"))
    walls = {str(s): job_walls(s) for s in args.sets} if args.sets else {}
    lines = ["# Matmul roofs inside and outside the container", "",
             f"{rows[0]['pairs']} calibrations natively and {rows[0]['pairs']} inside Apptainer "
             "(`--nv`), alternating, each its own process, one host. Ratio: container ÷ native, "
             "geometric mean over the pairs, 95% t interval on the log ratios.", "",
             "| precision | native TFLOP/s (median) | container TFLOP/s (median) | container ÷ native |",
             "|:---|---:|---:|---:|"]
    for r in rows:
        est = stats.Estimate(r["ratio"], r["low"], r["high"], r["pairs"], r["method"])
        lines.append(f"| {r['precision']} | {r['native_tflops_median']:,.0f} | "
                     f"{r['container_tflops_median']:,.0f} | {numbers.estimate_text(est, numbers.times)} |")
    if walls:
        lines += ["", "## Job wall times (Snakemake's benchmark files)", "",
                  "| set | kind | jobs | median s | max s |", "|:---|:---|---:|---:|---:|"]
        for s, kinds in walls.items():
            for k, w in kinds.items():
                lines.append(f"| {Path(s).name} | {k} | {w['n']} | {w['median_s']:.2f} | "
                             f"{w['max_s']:.1f} |")
    atomic.write_text(args.folder / "roofs.md", "\n".join(lines) + "\n")
    atomic.write_text(args.folder / "roofs.json",
                      json.dumps({"roofs": rows, "job_walls": walls}, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
