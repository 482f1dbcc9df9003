# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Where a workflow run's seconds went, from its Snakemake log and its records: the wall time
from Snakemake's start to its first job, each rule's jobs (count, wall summed, the longest),
the spans of the training and the reporting stages, and per training job its wall time
(Snakemake's benchmark) beside the harness's phases.

    python lab/bench/smoke_cost.py --log .snakemake/log/<run>.snakemake.log \
        --results results/cpu-amd-epyc --out results/bench/cpu-amd-epyc/smoke-cost-<when>.md

The log's clock has one-second resolution, so a job's wall here is good to about a second;
the benchmark files and the records are finer. Nothing is measured here, only read."""

from __future__ import annotations

import argparse
import csv
import json
import re
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]$")
START = re.compile(r"^(?:local)?[Jj]ob (\d+): (.*)$")
DONE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)")
LOG_NAME = re.compile(r"(\d{4}-\d\d-\d\dT\d{6})\.\d+\.snakemake\.log")
REPORTING = ("aggregate", "set_tables", "table", "tables_combined", "verdict", "figures")


def jobs(log: Path) -> tuple[datetime, list[dict]]:
    """(Snakemake's start, from the log's name; one dict per job: id, rule, message, start,
    end). ``log`` may also be what Snakemake printed, which names its log in its last lines."""
    text = log.read_text()
    name = LOG_NAME.search(log.name) or LOG_NAME.search(text)
    began = datetime.strptime(name.group(1), "%Y-%m-%dT%H%M%S")
    when, found = None, {}
    for line in text.splitlines():
        if m := STAMP.match(line):
            when = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif (m := START.match(line)) and when:
            found[m.group(1)] = {"id": m.group(1), "message": m.group(2), "start": when}
        elif (m := DONE.match(line)) and m.group(1) in found:
            found[m.group(1)] |= {"rule": m.group(2), "end": when}
    return began, [j for j in found.values() if "end" in j]


def span(js: list[dict]) -> float:
    return (max(j["end"] for j in js) - min(j["start"] for j in js)).total_seconds() if js else 0


def train_rows(results: Path | None) -> list[list[str]]:
    rows = []
    if results is None:
        return rows
    for rec_path in sorted((results / "records").rglob("*.json")):
        rec = json.loads(rec_path.read_text())
        cell = f"{rec_path.parent.name}/{rec_path.stem}"
        bench = results / "benchmarks" / "train" / rec_path.parent.name / f"{rec_path.stem}.tsv"
        wall = next(csv.DictReader(bench.open(), delimiter="\t"))["s"] if bench.exists() else ""
        phases = (rec.get("harness") or {}).get("phases_s") or {}
        big = sorted(phases.items(), key=lambda kv: -kv[1])[:3]
        rows.append([cell, rec["status"], wall,
                     ", ".join(f"{k} {v:.2f}" for k, v in big if v >= 0.01)])
    return rows


def table(head: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(map(str, r)) + " |" for r in rows)]


def report(log: Path, results: Path | None) -> str:
    began, js = jobs(log)
    first = min(j["start"] for j in js)
    last = max(j["end"] for j in js)
    by_rule: dict[str, list[dict]] = {}
    for j in js:
        by_rule.setdefault(j["rule"], []).append(j)
    rule_rows = []
    for rule, rj in sorted(by_rule.items(), key=lambda kv: min(j["start"] for j in kv[1])):
        walls = [(j["end"] - j["start"]).total_seconds() for j in rj]
        rule_rows.append([rule, len(rj), f"{sum(walls):.0f}", f"{max(walls):.0f}"])
    train = [j for j in js if j["rule"] in ("train", "calibrate", "mnist_format_random")]
    reporting = [j for j in js if j["rule"] in REPORTING]
    out = [f"Log: `{log.name}`; result set: `{results or 'not read'}`.", "",
           f"- Snakemake's start to its first job: {(first - began).total_seconds():.0f} s",
           f"- training stage (data, calibrate, train), first start to last end: {span(train):.0f} s",
           f"- reporting stage (aggregate, tables, verdict, figures): {span(reporting):.0f} s",
           f"- Snakemake's start to its last job's end: {(last - began).total_seconds():.0f} s",
           "", *table(["rule", "jobs", "wall summed (s)", "longest (s)"], rule_rows)]
    if results is not None:
        out += ["", *table(["training job", "status", "wall (s, benchmark)",
                            "largest harness phases (s)"], train_rows(results))]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, help="a .snakemake/log file (default: the newest)")
    ap.add_argument("--results", type=Path, help="the run's results/<run>/, for its records")
    ap.add_argument("--out", type=Path, help="write the Markdown here (default: print it)")
    args = ap.parse_args(argv)
    log = args.log or max(Path(".snakemake/log").glob("*.snakemake.log"))
    text = report(log, args.results)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
