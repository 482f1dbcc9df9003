"""Records -> tidy tables: the analysis layer run on one result set. Reads JSON records only
(never runs torch), writes CSV only (nothing rendered: ``tcbench.reports.tables`` makes the
Markdown views).

    python -m tcbench.aggregate results/nvidia-h200/records --calibration \\
        results/nvidia-h200/calibration.json --out results/nvidia-h200

writes (names from ``vocabulary.SET_TABLES``; each path can be given on its own instead, as the
workflow's rule does)

* ``metrics.csv``: one row per record (one training process);
* ``summary.csv``: one row per cell, its finished repeats pooled (``analysis.summarise``);
* ``speedup.csv``: each cell against fp32 at the same setting (``analysis.speedup``);
* ``best.csv``: per experiment and model, the fastest configuration (``analysis.best``);
* ``overhead.csv`` (with ``--benchmarks``): each job's wall time against the time it measured
  (``analysis.overhead``);
* ``interleaved.csv``, ``interleaved_processes.csv`` and ``interleaved_rounds.csv`` (with
  ``--comparisons``, the interleaved comparisons' records; empty tables without): per setting
  each arm's ratio against each baseline arm at the highest level measured (across its
  processes), each process's own ratio, and every segment of every round
  (``analysis.interleaved``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from . import cli, record as R, resultset, vocabulary as V
from .analysis import interleaved, runs
from .analysis.best import best
from .analysis.overhead import overhead
from .analysis.speedup import speedup
from .analysis.summarise import summarise
from .analysis.throughput import add_tokens


def _paths(records) -> list[Path]:
    return resultset.find_records(records) if isinstance(records, (str, Path)) \
        else sorted(map(Path, records))


def _check(paths: list[Path], records, expected) -> None:
    if expected is not None:
        missing = sorted(set(map(Path, expected)) - set(paths))
        if missing:
            raise R.RecordError(f"{len(missing)} expected record(s) missing, e.g. {missing[0]}")
    if not paths:
        raise R.RecordError(f"{records}: no records to aggregate")


def _into(records: list[dict], run: str | None) -> list[dict]:
    """The records as the result set ``run``'s: a part of a study run under another name and
    copied into the set is that set's (the files keep the name they were made under)."""
    return records if run is None else [r | {"run": run} for r in records]


def tables(records, calibration: Path | None = None, expected: list[Path] | None = None,
           benchmarks: Path | list[Path] | None = None,
           comparisons: list[Path] | None = None,
           run: str | None = None, siblings=()) -> dict[str, pd.DataFrame]:
    """Every table of a result set, by ``V.SET_TABLES`` key. ``records``: a result set's
    records folder (every record in it: studies run with other configs on the same device add
    to it), or the list of record files. ``run``: the set's name, which every row then carries
    (None: each record's own). ``siblings``: the interleaved.csv of the study's runs on other
    machines; the speedup and best tables judge an experiment run on enough of them across the
    runs (``runs.across``), while interleaved.csv keeps this machine's own ratios."""
    paths = _paths(records)
    _check(paths, records, expected)
    df = resultset.tidy(_into(resultset.load(paths), run))
    cal = json.loads(Path(calibration).read_text()) if calibration and Path(calibration).exists() \
        else None
    df = add_tokens(resultset.add_mfu(df, cal))
    summary = summarise(df)
    compared = _into(interleaved.load(sorted(map(Path, comparisons or []))), run)
    il_tables = interleaved.tables(compared)
    # a host-bound cell's ratios are its interleaved comparison's (claims.attach_interleaved)
    others = [Path(p) for p in siblings or ()]
    judged = runs.across(il_tables["interleaved"], [resultset.read_raw(p) for p in others],
                         [p.parent.name for p in others])
    table = speedup(df, summary, judged)
    result = {"metrics": df, "summary": summary, "speedup": table, "best": best(summary, table),
              **il_tables}
    if benchmarks is not None:
        result["overhead"] = overhead(df, benchmarks)
    return result


def aggregate(records, out: Path | dict[str, Path], calibration: Path | None = None,
              expected: list[Path] | None = None,
              benchmarks: Path | list[Path] | None = None,
              comparisons: list[Path] | None = None,
              run: str | None = None, siblings=()) -> dict[str, pd.DataFrame]:
    """``tables`` written to ``out``: a folder (``V.SET_TABLES`` names) or a path per table."""
    result = tables(records, calibration, expected, benchmarks, comparisons, run, siblings)
    paths = out if isinstance(out, dict) else {k: Path(out) / name
                                               for k, name in V.SET_TABLES.items()}
    for key, df in result.items():
        resultset.write_csv(df, paths[key])
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.aggregate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", type=Path, nargs="?", help="the records folder of one result set")
    ap.add_argument("--records", dest="record_files", type=Path, nargs="+",
                    help="the record files of one result set (instead of a folder)")
    ap.add_argument("--out", type=Path, help="folder for every table, by its usual name")
    for key, name in V.SET_TABLES.items():
        ap.add_argument(f"--{key}", type=Path, metavar="PATH", help=f"where {name} goes")
    ap.add_argument("--calibration", type=Path, help="calibration.json of the same result set")
    ap.add_argument("--expect", type=Path, nargs="*", help="records that must all be there")
    ap.add_argument("--benchmarks", type=Path, nargs="*",
                    help="Snakemake's benchmark folder of the train jobs, or its TSV files, "
                         "for overhead.csv")
    ap.add_argument("--comparisons", type=Path, nargs="*", default=[],
                    help="the interleaved comparisons' records (tcbench.job.interleave), for "
                         "interleaved.csv, interleaved_processes.csv and "
                         "interleaved_rounds.csv; a folder: every one in it")
    ap.add_argument("--run", help="the result set's name, for every row (default: each "
                    "record's own, the name of the run that made it)")
    ap.add_argument("--runs", type=Path, nargs="*", default=[], help=runs.SIBLINGS_HELP)
    args = ap.parse_args(argv)
    if (args.records is None) == (args.record_files is None):
        ap.error("give the records folder or --records FILE..., one of the two")
    out = {k: getattr(args, k) or (args.out / name if args.out else None)
           for k, name in V.SET_TABLES.items()}
    needed = [k for k in V.SET_TABLES if k != "overhead" or args.benchmarks is not None]
    if any(out[k] is None for k in needed):
        ap.error("give --out DIR, or a path for each table: "
                 + ", ".join(f"--{k}" for k in needed if out[k] is None))
    bench = args.benchmarks
    if bench is not None and len(bench) == 1 and bench[0].is_dir():
        bench = bench[0]
    comparisons = resultset.given_records(args.comparisons)

    def tables():
        aggregate(args.records or args.record_files, out, args.calibration, args.expect, bench,
                  comparisons, args.run, args.runs)

    return cli.main("tcbench.aggregate", tables, (R.RecordError,))


if __name__ == "__main__":
    sys.exit(main())
