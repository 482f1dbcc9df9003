"""Records -> tidy tables. Reads JSON records only (never runs torch).

    python -m tcbench.aggregate results/nvidia-h200/records --calibration \
        results/nvidia-h200/calibration.json --out results/nvidia-h200

writes ``metrics.csv`` (one row per record), ``summary.csv`` (one row per cell, repeats pooled:
median, IQR, 95% bootstrap CI) and ``speedup.csv`` / ``speedup.md`` (each precision against
``fp32`` with everything else equal).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import atomic
from . import record as R
from . import vocabulary as V
from .vocabulary import HARNESS_PHASES, STATUS_RANK

PRECISION_ORDER = list(V.PRECISIONS)
CELL_KEYS = list(V.CELL_KEYS)
BASELINE_KEYS = list(V.BASELINE_KEYS)
# tables made before an axis existed hold its default
AXIS_DEFAULTS = {a.name: a.default for a in V.AXES if a.default is not None}

_METRICS = ["total_time_s", "max_memory_allocated_bytes", "max_memory_reserved_bytes",
            "throughput_samples_per_s", "wall_throughput_samples_per_s", "samples", "epochs",
            "steps", "warmup_steps", "warmup_time_s", "first_step_time_s", "steady_time_s",
            "step_time_median_s", "step_time_p10_s", "step_time_p90_s", "data_wait_s",
            "compute_s", "data_wait_share", "input_bound", "compile_time_s", "final_loss",
            "first_nonfinite_step", "grad_scaler_final_scale", "grad_scaler_skipped_steps",
            "flops_per_step", "flops_per_sample", "achieved_tflops", "test_accuracy",
            "test_loss"]
_TELEMETRY = ["energy_j", "energy_per_sample_j", "power_mean_w", "power_max_w",
              "sm_clock_mean_mhz", "temperature_max_c", "nvml_memory_used_max_bytes",
              "energy_source"]
_ENV = ["device_name", "gpu_uuid", "gpu_index", "compute_capability", "driver_version",
        "cuda_runtime_version", "cudnn_version", "torch_version", "hostname", "timestamp_utc",
        "git_commit", "in_container", "container_image"]


def data_kind(r: dict) -> str:
    """The data a cell trains on, from its parameters, so that a record without a run
    (unsupported, oom) still lands in the same cell as its fp32 baseline."""
    if r["workload"] == "digits":
        return "sklearn-digits"
    return r["params"].get("data", "synthetic")


def find_records(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*.json") if not p.name.startswith("."))


def load(paths) -> list[dict]:
    """Read and validate every record; the first bad one stops everything, named."""
    return [R.read(p) | {"_path": str(p)} for p in paths]


def tidy(records: list[dict]) -> pd.DataFrame:
    rows = []
    for r in records:
        p, m = r["params"], r.get("metrics") or {}
        t, tc = r.get("telemetry") or {}, r.get("tensor_cores") or {}
        env, flags = r["environment"], r.get("precision_flags") or {}
        row = {k: r[k] for k in ("run", "experiment", "cell", "workload", "precision",
                                 "batch_size", "repeat", "status", "status_reason")}
        row |= {"model": p.get("model", r["workload"]), "loader": p.get("loader", "synthetic"),
                **{a: V.onoff(p.get(a, AXIS_DEFAULTS.get(a))) for a in
                   ("memory_format", "compile", "cuda_graphs", "cudnn_benchmark")},
                "data": data_kind(r)}
        row |= {k: m.get(k) for k in _METRICS}
        row |= {k: t.get(k) for k in _TELEMETRY}
        row |= {"tensor_core_share": tc.get("tensor_core_share"),
                "gpu_busy_share": tc.get("gpu_busy_share"),
                "top_kernel": (tc.get("top_kernels") or [{}])[0].get("name")}
        row |= {"cuda_matmul_allow_tf32": flags.get("cuda_matmul_allow_tf32"),
                "cudnn_allow_tf32": flags.get("cudnn_allow_tf32"),
                "autocast_dtype": flags.get("autocast_dtype")}
        row |= {k: env.get(k) for k in _ENV}
        h = r.get("harness") or {}
        row["harness_process_start_s"] = h.get("process_start_to_main_s")
        row |= {f"harness_{k}_s": (h.get("phases_s") or {}).get(k) for k in HARNESS_PHASES}
        row["record"] = r.get("_path")
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["precision"] = pd.Categorical(df["precision"], PRECISION_ORDER, ordered=True)
    return df.sort_values(["experiment", "batch_size", "loader", "memory_format", "compile",
                           "cuda_graphs", "precision", "repeat"]).reset_index(drop=True)


def add_mfu(df: pd.DataFrame, calibration: dict | None) -> pd.DataFrame:
    """Model FLOP utilisation against the same device's measured matmul ceiling per mode."""
    ceilings = {k: v.get("tflops") for k, v in ((calibration or {}).get("modes") or {}).items()}
    df["ceiling_tflops"] = df["precision"].astype(str).map(ceilings).astype(float)
    df["mfu"] = df["achieved_tflops"].astype(float) / df["ceiling_tflops"]
    return df


def bootstrap_ci(values, statistic=np.median, confidence=0.95, seed=0):
    """95% percentile-bootstrap interval of ``statistic`` (scipy); None for fewer than 2 values."""
    from scipy.stats import bootstrap

    values = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if len(values) < 2:
        return None, None
    if np.all(values == values[0]):
        return float(values[0]), float(values[0])
    res = bootstrap((values,), statistic, confidence_level=confidence, n_resamples=2000,
                    method="percentile", random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def fill_axes(df: pd.DataFrame) -> pd.DataFrame:
    """Axes a table does not name hold their default (the model is the workload's own); for
    tables made before an axis existed."""
    df = df.copy()
    for col in V.AXIS_NAMES:
        value = df["workload"] if col == "model" else AXIS_DEFAULTS.get(col, "default")
        df[col] = df[col].fillna(value) if col in df else value
    return df


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """One row per cell, repeats pooled over the records with status ok."""
    df = fill_axes(df)
    rows = []
    for key, g in df.groupby(CELL_KEYS, observed=True, sort=False, dropna=False):
        row = dict(zip(CELL_KEYS, key))
        ok = g[g["status"] == "ok"]
        worst = max(g["status"], key=STATUS_RANK.get)
        row |= {"repeats": len(g), "repeats_ok": len(ok),
                "status": "ok" if len(ok) == len(g) else worst,
                "status_reason": "; ".join(sorted(set(g["status_reason"].dropna()))) or None}
        for col in ("throughput_samples_per_s", "total_time_s"):
            v = ok[col].dropna().astype(float)
            lo, hi = bootstrap_ci(v)
            row |= {f"{col}_median": v.median() if len(v) else None,
                    f"{col}_q1": v.quantile(0.25) if len(v) else None,
                    f"{col}_q3": v.quantile(0.75) if len(v) else None,
                    f"{col}_ci_low": lo, f"{col}_ci_high": hi,
                    f"{col}_cv": float(v.std(ddof=1) / v.mean()) if len(v) > 1 else None}
        for col in ("max_memory_allocated_bytes", "max_memory_reserved_bytes", "achieved_tflops",
                    "mfu", "energy_per_sample_j", "power_mean_w", "data_wait_share",
                    "tensor_core_share", "gpu_busy_share", "final_loss", "test_accuracy",
                    "step_time_median_s", "first_step_time_s"):
            if col in ok:
                v = pd.to_numeric(ok[col], errors="coerce").dropna()
                row[col] = float(v.median()) if len(v) else None
        row["input_bound"] = bool(ok["input_bound"].astype(bool).all()) if len(ok) else None
        row["device_name"] = g["device_name"].iloc[0]
        rows.append(row)
    out = pd.DataFrame(rows)
    out["precision"] = pd.Categorical(out["precision"], PRECISION_ORDER, ordered=True)
    return out


def speedup(summary: pd.DataFrame) -> pd.DataFrame:
    """Each precision against fp32 of the same cell (same run, workload, batch size, loader,
    memory format, compile and data). Speedup > 1 is faster; memory ratio < 1 saves memory."""
    base = summary[summary["precision"] == "fp32"].set_index(BASELINE_KEYS)
    rows = []
    for _, r in summary.iterrows():
        key = tuple(r[k] for k in BASELINE_KEYS)
        b = base.loc[key] if key in base.index else None
        if isinstance(b, pd.DataFrame):
            b = b.iloc[0]
        row = {k: r[k] for k in CELL_KEYS} | {"status": r["status"]}

        def ratio(num, den):
            return float(num / den) if b is not None and pd.notna(num) and pd.notna(den) \
                and den else None
        row |= {
            "total_time_s": r["total_time_s_median"],
            "fp32_total_time_s": b["total_time_s_median"] if b is not None else None,
            "speedup_total_time": ratio(b["total_time_s_median"], r["total_time_s_median"])
            if b is not None else None,
            "throughput_samples_per_s": r["throughput_samples_per_s_median"],
            "speedup_throughput": ratio(r["throughput_samples_per_s_median"],
                                        b["throughput_samples_per_s_median"])
            if b is not None else None,
            "max_memory_allocated_bytes": r["max_memory_allocated_bytes"],
            "memory_ratio": ratio(r["max_memory_allocated_bytes"],
                                  b["max_memory_allocated_bytes"]) if b is not None else None,
            "input_bound": r["input_bound"],
            "tensor_core_share": r.get("tensor_core_share"),
            "test_accuracy": r.get("test_accuracy"),
            "fp32_test_accuracy": b.get("test_accuracy") if b is not None else None,
        }
        rows.append(row)
    return pd.DataFrame(rows)


EAGER = V.EAGER


def best(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload, the fastest ok configuration by steady-state throughput, against the strict
    fp32 eager baseline (contiguous, no compile, no CUDA graphs) with the same batch size, loader
    and data; with its memory and whether it still trains as well (loss, accuracy)."""
    rows = []
    ok = summary[summary["status"] == "ok"].dropna(subset=["throughput_samples_per_s_median"])
    for (run, workload), g in ok.groupby(["run", "workload"], sort=False):
        top = g.loc[g["throughput_samples_per_s_median"].astype(float).idxmax()]
        same = (g["precision"] == "fp32") & (g["batch_size"] == top["batch_size"]) & \
            (g["loader"] == top["loader"]) & (g["data"] == top["data"])
        for k, v in EAGER.items():
            same &= g[k] == v
        base = g[same].sort_values("throughput_samples_per_s_median").head(1)
        b = base.iloc[0] if len(base) else None

        def vs(col, invert=False):
            if b is None or pd.isna(b[col]) or pd.isna(top[col]) or not b[col]:
                return None
            return float(b[col] / top[col]) if invert else float(top[col] / b[col])
        rows.append({
            "run": run, "workload": workload, "experiment": top["experiment"],
            **{k: top[k] for k in ("precision", "batch_size", "loader", "memory_format",
                                   "compile", "cuda_graphs", "data")},
            "throughput_samples_per_s": top["throughput_samples_per_s_median"],
            "total_time_s": top["total_time_s_median"],
            "max_memory_allocated_bytes": top.get("max_memory_allocated_bytes"),
            "final_loss": top.get("final_loss"),
            "test_accuracy": top.get("test_accuracy"),
            "baseline": None if b is None else f"{b['experiment']}: fp32 eager, bs {b['batch_size']}"
                                               f", {b['loader']}",
            "baseline_throughput_samples_per_s": None if b is None
            else b["throughput_samples_per_s_median"],
            "speedup_throughput": vs("throughput_samples_per_s_median"),
            "speedup_total_time": vs("total_time_s_median", invert=True),
            "memory_ratio": vs("max_memory_allocated_bytes"),
            "baseline_final_loss": None if b is None else b.get("final_loss"),
            "baseline_test_accuracy": None if b is None else b.get("test_accuracy"),
        })
    return pd.DataFrame(rows)


HARNESS_COLUMNS = ("harness_process_start_s",
                   *(f"harness_{k}_s" for k in HARNESS_PHASES))


def benchmark_path(benchmarks, experiment: str, cell: str) -> Path:
    """A job's benchmark TSV: in the benchmark folder, or among the files given
    (``.../{experiment}/{cell}.tsv``)."""
    if isinstance(benchmarks, (str, Path)):
        return Path(benchmarks) / experiment / f"{cell}.tsv"
    named = {(Path(p).parent.name, Path(p).stem): Path(p) for p in benchmarks}
    return named.get((experiment, cell), Path(experiment) / f"{cell}.tsv.missing")


def overhead(metrics: pd.DataFrame, benchmarks) -> pd.DataFrame:
    """Harness overhead per job: Snakemake's wall time for the job (benchmark TSV, column ``s``)
    against the steady-state training time inside it. Everything else is overhead: process
    start, imports, CUDA initialisation, building the model, FLOP counting, warm-up steps,
    profiling, evaluation, writing the record. A job without a benchmark file is kept, with
    NaN, never dropped. The ``harness_*_s`` columns split that overhead by phase (from the
    record's ``harness`` field; Snakemake's own start-up of the job is the rest)."""
    rows = []
    for _, r in metrics.iterrows():
        path = benchmark_path(benchmarks, r["experiment"], r["cell"])
        wall = float(pd.read_csv(path, sep="\t")["s"].iloc[0]) if path.exists() else np.nan
        steady = r.get("steady_time_s")
        rows.append({"experiment": r["experiment"], "cell": r["cell"], "status": r["status"],
                     "job_wall_s": wall, "total_time_s": r.get("total_time_s"),
                     "steady_time_s": steady,
                     "overhead_s": wall - steady if pd.notna(steady) else wall,
                     # the overhead split, where the record has it (records since 2026-11-30)
                     **{c: r.get(c) for c in HARNESS_COLUMNS},
                     "benchmark": str(path) if path.exists() else None})
    df = pd.DataFrame(rows)
    if not df.empty:
        tot = {"experiment": "(study)", "cell": "(all jobs)", "status": None,
               "job_wall_s": df["job_wall_s"].sum(min_count=1),
               "total_time_s": pd.to_numeric(df["total_time_s"]).sum(min_count=1),
               "steady_time_s": pd.to_numeric(df["steady_time_s"]).sum(min_count=1),
               "overhead_s": df["overhead_s"].sum(min_count=1),
               **{c: pd.to_numeric(df[c]).sum(min_count=1) for c in HARNESS_COLUMNS},
               "benchmark": None}
        df = pd.concat([df, pd.DataFrame([tot])], ignore_index=True)
        df["overhead_share"] = df["overhead_s"] / df["job_wall_s"]
    return df


def markdown(df: pd.DataFrame, floatfmt: str | None = None) -> str:
    """A GitHub Markdown table of raw columns, numbers as in the summary tables (tcbench.tables:
    three significant digits, never scientific notation)."""
    from .tables import num

    def fmt(v):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return "–"
        if isinstance(v, (float, np.floating)):
            return floatfmt.format(v) if floatfmt else num(v)
        return str(v)
    head = "| " + " | ".join(df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body]) + "\n"


def write_csv(df: pd.DataFrame, path: Path) -> None:
    atomic.write_text(path, df.to_csv(index=False))


def aggregate(records_dir, out_dir: Path, calibration: Path | None = None,
              expected: list[Path] | None = None,
              benchmarks=None) -> dict[str, pd.DataFrame]:
    # A result set is every record in its folder: studies run with other configs on the same
    # device (config/fastest.yaml, say) add to it; ``expected`` only checks none is missing.
    # ``records_dir`` may also be the list of record files (the workflow names every one).
    paths = find_records(records_dir) if isinstance(records_dir, (str, Path)) \
        else sorted(map(Path, records_dir))
    if expected is not None:
        missing = sorted(set(map(Path, expected)) - set(paths))
        if missing:
            raise R.RecordError(f"{len(missing)} expected record(s) missing, e.g. {missing[0]}")
    if not paths:
        raise R.RecordError(f"{records_dir}: no records to aggregate")
    df = tidy(load(paths))
    cal = json.loads(Path(calibration).read_text()) if calibration and Path(calibration).exists() \
        else None
    df = add_mfu(df, cal)
    summary = summarise(df)
    table = speedup(summary)
    out_dir = Path(out_dir)
    write_csv(df, out_dir / "metrics.csv")
    write_csv(summary, out_dir / "summary.csv")
    write_csv(table, out_dir / "speedup.csv")
    cols = ["experiment", "precision", "batch_size", "loader", "status", "total_time_s",
            "speedup_total_time", "throughput_samples_per_s", "speedup_throughput",
            "max_memory_allocated_bytes", "memory_ratio", "input_bound", "tensor_core_share"]
    atomic.write_text(out_dir / "speedup.md", markdown(table[cols]))
    top = best(summary)
    write_csv(top, out_dir / "best.csv")
    atomic.write_text(out_dir / "best.md", markdown(top))
    result = {"metrics": df, "summary": summary, "speedup": table, "best": top}
    if benchmarks is not None:
        result["overhead"] = overhead(df, benchmarks)
        write_csv(result["overhead"], out_dir / "overhead.csv")
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.aggregate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", type=Path, nargs="?", help="the records folder of one result set")
    ap.add_argument("--records", type=Path, nargs="+", dest="record_files",
                    help="the record files of one result set (instead of the folder)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the tables")
    ap.add_argument("--calibration", type=Path, help="calibration.json of the same result set")
    ap.add_argument("--expect", type=Path, nargs="*", help="records that must all be there")
    ap.add_argument("--benchmarks", type=Path, nargs="*",
                    help="Snakemake's benchmark folder of the train jobs, or their benchmark "
                         "files ({experiment}/{cell}.tsv), for overhead.csv")
    args = ap.parse_args(argv)
    if (args.records is None) == (args.record_files is None):
        ap.error("give the records folder or --records FILE..., one of the two")
    benchmarks = args.benchmarks
    if benchmarks is not None and len(benchmarks) == 1 and benchmarks[0].is_dir():
        benchmarks = benchmarks[0]
    try:
        aggregate(args.records or args.record_files, args.out, args.calibration, args.expect,
                  benchmarks)
    except R.RecordError as exc:
        print(f"tcbench.aggregate: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
