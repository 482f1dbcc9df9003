"""Each job's wall time against the time it measured (overhead.csv)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..resultset import HARNESS_COLUMNS, numeric

SUMMED = ("job_wall_s", "time_to_steady_s", "steady_time_s", "fixed_cost_s", "overhead_s",
          *HARNESS_COLUMNS)


def benchmark_path(benchmarks: Path, r) -> Path:
    return Path(benchmarks) / str(r["experiment"]) / f"{r['cell']}.tsv"


def _job(r, path) -> dict:
    have = path is not None and Path(path).exists()
    wall = float(pd.read_csv(path, sep="\t")["s"].iloc[0]) if have else np.nan
    steady = numeric(pd.Series([r.get("steady_time_s")])).iloc[0]
    warm = numeric(pd.Series([r.get("time_to_steady_s")])).iloc[0]
    measured = (0 if pd.isna(steady) else steady) + (0 if pd.isna(warm) else warm)
    return {"experiment": r["experiment"], "cell": r["cell"], "workload": r["workload"],
            "status": r["status"], "job_wall_s": wall,
            "time_to_steady_s": warm, "steady_time_s": steady,
            "fixed_cost_s": wall - measured, "overhead_s": wall - (
                0 if pd.isna(steady) else steady),
            **{c: r.get(c) for c in HARNESS_COLUMNS},
            "benchmark": str(path) if have else None}


def overhead(metrics: pd.DataFrame, benchmarks: Path | list[Path]) -> pd.DataFrame:
    """Each job's wall time (Snakemake's benchmark TSV, column ``s``) against what it measured:
    ``fixed_cost_s`` is the wall time less the warm-up (time to the first fast step) and the
    timed steady steps: process start, imports, CUDA context, building, FLOP counting,
    profiling, evaluation and writing the record. ``harness_*_s`` split it by phase (from the
    record); Snakemake's own start of the job is the rest. A job without a benchmark file is
    kept with NaN, never dropped. ``benchmarks`` is the benchmark folder, or the list of files."""
    files = {f"{p.parent.name}/{p.stem}": p for p in map(Path, benchmarks)} \
        if isinstance(benchmarks, list) else None
    rows = [_job(r, files.get(f"{r['experiment']}/{r['cell']}") if files is not None
                 else benchmark_path(benchmarks, r)) for _, r in metrics.iterrows()]
    df = pd.DataFrame(rows)
    if not df.empty:
        total = {"experiment": "(study)", "cell": "(all jobs)", "workload": None, "status": None,
                 "benchmark": None, **{c: numeric(df[c]).sum(min_count=1) for c in SUMMED}}
        df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
        df["overhead_share"] = df["overhead_s"] / df["job_wall_s"]
    return df
