"""Records -> tidy tables. Reads JSON records only (never runs torch).

    python -m tcbench.aggregate results/nvidia-h200/records --calibration \\
        results/nvidia-h200/calibration.json --out results/nvidia-h200

writes

* ``metrics.csv``: one row per record (one training process);
* ``summary.csv``: one row per cell, its finished repeats pooled by ``tcbench.stats``: the mean
  of each metric with its interval and n;
* ``speedup.csv``: each cell against fp32 at the same setting (every cell key but the
  precision equal): throughput ratio with its interval, memory, energy and warm-up ratios,
  and the accuracy difference paired by seed;
* ``best.csv``: per workload and model, the fastest configuration against the fastest plain
  fp32 one (eager, contiguous, no CUDA graphs);
* ``overhead.csv`` (with ``--benchmarks``): each job's wall time against the time it measured;
* the Markdown views ``speedup.md`` and ``best.md`` (written by ``tcbench.tables``).
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
from . import stats
from . import tensorcores
from . import vocabulary as V

# tables made before an axis existed hold its default
AXIS_DEFAULTS = {a.name: a.default for a in V.AXES if a.default is not None}
# pooled per cell with an interval (tcbench.stats.estimate)
ESTIMATED = [m.column for m in V.METRICS]
# pooled per cell as a plain mean (shares, counts: descriptive, no claim rests on them)
DESCRIBED = ["max_memory_reserved_bytes", "data_wait_share", "tensor_core_share",
             "gpu_busy_share", "matmul_share", "warmup_time_s", "compile_time_s", "final_loss",
             "power_mean_w", "steady_time_s", "flops_per_sample"]

_METRICS = ["total_time_s", "max_memory_allocated_bytes", "max_memory_reserved_bytes",
            "throughput_samples_per_s", "wall_throughput_samples_per_s", "samples", "epochs",
            "steps", "warmup_steps", "warmup_time_s", "time_to_steady_s", "first_step_time_s",
            "steady_time_s", "step_time_median_s", "step_time_p10_s", "step_time_p90_s",
            "data_wait_s", "compute_s", "data_wait_share", "input_bound", "compile_time_s",
            "final_loss", "first_nonfinite_step", "grad_scaler_final_scale",
            "grad_scaler_skipped_steps", "flops_per_step", "flops_per_sample", "achieved_tflops",
            "test_accuracy", "test_loss"]
_TELEMETRY = ["energy_j", "energy_per_sample_j", "steady_energy_j", "steady_energy_per_sample_j",
              "steady_energy_window_s", "power_mean_w", "power_max_w", "sm_clock_mean_mhz",
              "temperature_max_c", "nvml_memory_used_max_bytes", "energy_source"]
_ENV = ["device_name", "gpu_uuid", "gpu_index", "compute_capability", "driver_version",
        "cuda_runtime_version", "torch_cuda_version", "cudnn_version", "torch_version",
        "hostname", "timestamp_utc", "git_commit", "git_dirty", "execution",
        "host_containerised", "container_image", "allow_dirty"]


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
        t = r.get("telemetry") or {}
        tc = tensorcores.without_annotations(r.get("tensor_cores") or {})
        env, flags = r["environment"], r.get("precision_flags") or {}
        row = {k: r[k] for k in ("run", "experiment", "cell", "workload", "precision",
                                 "batch_size", "repeat", "status", "status_reason")}
        row["seed"] = r.get("seed", p.get("seed"))
        row |= {"model": p.get("model", r["workload"]), "loader": p.get("loader", "synthetic"),
                **{a: V.onoff(p.get(a, AXIS_DEFAULTS.get(a))) for a in
                   ("memory_format", "compile", "cuda_graphs", "cudnn_benchmark")},
                "data": data_kind(r)}
        row |= {k: m.get(k) for k in _METRICS}
        row |= {k: t.get(k) for k in _TELEMETRY}
        row |= {"tensor_core_share": tc.get("tensor_core_share"),
                "gpu_busy_share": tc.get("gpu_busy_share"),
                "matmul_share": tc.get("matmul_share"),
                "top_kernel": (tc.get("top_kernels") or [{}])[0].get("name"),
                "evidence_repeat": tc.get("evidence_repeat",
                                          r["repeat"] if tc.get("profiled") else None)}
        row |= {"cuda_matmul_allow_tf32": flags.get("cuda_matmul_allow_tf32"),
                "cudnn_allow_tf32": flags.get("cudnn_allow_tf32"),
                "autocast_dtype": flags.get("autocast_dtype")}
        row |= {k: env.get(k) for k in _ENV}
        h = r.get("harness") or {}
        row["harness_process_start_s"] = h.get("process_start_to_main_s")
        row |= {f"harness_{k}_s": (h.get("phases_s") or {}).get(k) for k in V.HARNESS_PHASES}
        row["record"] = r.get("_path")
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df = share_flop_count(order(df))
    return df.sort_values([*order_keys(df), "repeat"]).reset_index(drop=True)


def share_flop_count(df: pd.DataFrame) -> pd.DataFrame:
    """A cell's FLOPs per sample are counted once (its evidence repeat; the same model and
    shapes give the same count in every repeat): every repeat of the cell gets it, and its
    achieved TFLOP/s from its own steady throughput, so that TFLOP/s and MFU have all n."""
    keys = [k for k in V.CELL_KEYS if k in df]
    counted = df.groupby(keys, observed=True, dropna=False)["flops_per_sample"]
    per_sample = _numeric(df["flops_per_sample"]).fillna(
        pd.to_numeric(counted.transform("first"), errors="coerce"))
    done = df["status"].eq("ok") & _numeric(df["throughput_samples_per_s"]).notna()
    df["flops_per_sample"] = per_sample.where(done | df["flops_per_sample"].notna())
    missing = done & _numeric(df["achieved_tflops"]).isna() & per_sample.notna()
    df.loc[missing, "achieved_tflops"] = (per_sample * _numeric(
        df["throughput_samples_per_s"]) / 1e12)[missing]
    return df


def fill_axes(df: pd.DataFrame) -> pd.DataFrame:
    """Axes a table does not name hold their default (the model is the workload's own); for
    tables made before an axis existed."""
    df = df.copy()
    # an axis whose default is the workload's own: the model is the workload; cuDNN autotuning
    # is off, PyTorch's default and what a plain script (the seed, a published reference) runs
    implicit = {"model": df["workload"], "cudnn_benchmark": "off"}
    for col in V.AXIS_NAMES:
        value = implicit[col] if col in implicit else AXIS_DEFAULTS.get(col, "default")
        df[col] = df[col].fillna(value) if col in df else value
    return df


def order(df: pd.DataFrame) -> pd.DataFrame:
    """Precision as an ordered category (the vocabulary's order), axes as text."""
    df = fill_axes(df)
    for a in V.AXIS_NAMES:
        df[a] = df[a].astype(str)
    df["precision"] = pd.Categorical(df["precision"].astype(str), V.PRECISIONS, ordered=True)
    return df


def order_keys(df: pd.DataFrame) -> list[str]:
    return [k for k in ("experiment", *V.SETTING_KEYS, "precision") if k in df]


def add_mfu(df: pd.DataFrame, calibration: dict | None) -> pd.DataFrame:
    """Model FLOP utilisation against the same device's measured matmul ceiling per mode."""
    ceilings = {k: v.get("tflops") for k, v in ((calibration or {}).get("modes") or {}).items()}
    df["ceiling_tflops"] = df["precision"].astype(str).map(ceilings).astype(float)
    df["mfu"] = df["achieved_tflops"].astype(float) / df["ceiling_tflops"]
    return df


def _numeric(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s, errors="coerce")


def summarise(df: pd.DataFrame, keys=V.CELL_KEYS) -> pd.DataFrame:
    """One row per cell (``keys``): counts, the worst status, every ``ESTIMATED`` metric as
    mean/low/high/n (``tcbench.stats.estimate``) and every ``DESCRIBED`` one as a mean, over
    the repeats that finished (status ok)."""
    df = order(df)
    keys = list(keys)
    rows = []
    for key, g in df.groupby(keys, observed=True, sort=False, dropna=False):
        row = dict(zip(keys, key))
        ok = g[g["status"] == "ok"]
        worst = max(g["status"], key=V.STATUS_RANK.get)
        row |= {"repeats": len(g), "repeats_ok": len(ok), "interval": stats.method(len(ok)),
                "status": "ok" if len(ok) == len(g) else worst,
                "status_reason": "; ".join(sorted(set(g["status_reason"].dropna().astype(str))))
                or None,
                "seeds": " ".join(str(int(s)) for s in ok["seed"].dropna()) if "seed" in ok
                else None}
        for col in ESTIMATED:
            if col in ok:
                row |= stats.estimate(_numeric(ok[col])).as_dict(col)
        row[f"{V.HEADLINE}_cv"] = stats.cv(_numeric(ok[V.HEADLINE])) if V.HEADLINE in ok \
            else None
        for col in DESCRIBED:
            if col in ok:
                v = _numeric(ok[col]).dropna()
                row[col] = float(v.mean()) if len(v) else None
        row["input_bound"] = bool(ok["input_bound"].astype(bool).all()) if len(ok) else None
        evidence = ok.dropna(subset=["top_kernel"]) if "top_kernel" in ok else ok.iloc[:0]
        row["top_kernel"] = evidence["top_kernel"].iloc[0] if len(evidence) else None
        row["evidence_repeat"] = (int(evidence["repeat"].iloc[0]) if len(evidence) else None)
        for col in ("device_name", "compute_capability"):  # a CUDA device has a capability
            row[col] = g[col].dropna().iloc[0] if col in g and g[col].notna().any() else None
        rows.append(row)
    out = pd.DataFrame(rows)
    return order(out) if not out.empty else out


def _groups(df: pd.DataFrame, keys) -> dict:
    return {k: g for k, g in df.groupby(list(keys), observed=True, sort=False, dropna=False)}


PLAIN_KEYS = ("run", "workload", "model", "data", "loader")


def plain_baselines(summary: pd.DataFrame) -> dict[tuple, pd.Series]:
    """Per workload, model, data and input pipeline: the fastest *plain* fp32 cell (strict
    fp32, ``V.EAGER`` knobs: eager, contiguous, no CUDA graphs), at any batch size. The one
    baseline of every "gain": how far precision and execution knobs together take a workload
    beyond what plain PyTorch in fp32 does."""
    plain = (summary["precision"].astype(str) == V.BASELINE) & (summary["repeats_ok"] > 0)
    for k, v in V.EAGER.items():
        plain &= summary[k].astype(str) == v
    out = {}
    for key, g in summary[plain].dropna(subset=[V.HEADLINE]).groupby(list(PLAIN_KEYS),
                                                                     sort=False, observed=True):
        out[key] = g.loc[g[V.HEADLINE].astype(float).idxmax()]
    return out


def speedup(metrics: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Each cell against fp32 at the same setting (``V.BASELINE_KEYS`` equal): the ratio of
    mean throughputs with its interval (``stats.ratio``), the ratios of memory, steady energy
    per sample and time to the first fast step, and the accuracy difference paired by seed.
    A speedup > 1 is faster; a memory ratio < 1 saves memory."""
    m = order(metrics)
    ok = m[m["status"] == "ok"]
    runs = _groups(ok, V.CELL_KEYS)
    plain = plain_baselines(summary)
    rows = []
    for _, r in summary.iterrows():
        key = tuple(r[k] for k in V.CELL_KEYS)
        base_key = key[:-1] + (V.BASELINE,)
        x, b = runs.get(key), runs.get(base_key)
        row = {k: r[k] for k in V.CELL_KEYS} | {
            "status": r["status"], "repeats_ok": r["repeats_ok"],
            "baseline_repeats_ok": 0 if b is None else len(b),
            V.HEADLINE: r.get(V.HEADLINE), "max_memory_allocated_bytes":
                r.get("max_memory_allocated_bytes")}

        def col(g, c):
            return [] if g is None or c not in g else _numeric(g[c])
        sp = stats.ratio(col(x, V.HEADLINE), col(b, V.HEADLINE))
        row |= {"speedup": sp.value, "speedup_low": sp.low, "speedup_high": sp.high,
                "speedup_n": sp.n, "speedup_interval": sp.method,
                "faster": stats.clears(sp, 1.0), "slower": stats.clears(sp, 1.0, above=False)}
        p = plain.get(tuple(r[k] for k in PLAIN_KEYS))
        gain = stats.ratio(col(x, V.HEADLINE), col(runs.get(tuple(p[k] for k in V.CELL_KEYS)),
                                                    V.HEADLINE)) if p is not None else stats.EMPTY
        row |= {"gain": gain.value, "gain_low": gain.low, "gain_high": gain.high,
                "gain_n": gain.n, "gain_interval": gain.method,
                "plain_experiment": None if p is None else p["experiment"],
                "plain_batch_size": None if p is None else p["batch_size"]}
        for name, c in (("memory_ratio", "max_memory_allocated_bytes"),
                        ("energy_ratio", "steady_energy_per_sample_j"),
                        ("time_to_steady_ratio", "time_to_steady_s"),
                        ("seed_speedup", V.SEED_METRIC)):
            e = stats.ratio(col(x, c), col(b, c))
            if name == "seed_speedup":  # time, not rate: fp32 time over this time
                e = stats.ratio(col(b, c), col(x, c))
            row |= {name: e.value, f"{name}_low": e.low, f"{name}_high": e.high,
                    f"{name}_n": e.n}

        def by_seed(g):
            if g is None or "test_accuracy" not in g:
                return {}
            g = g.dropna(subset=["test_accuracy"])
            return {int(s) if pd.notna(s) else -i: float(a) for i, (s, a) in
                    enumerate(zip(g["seed"] if "seed" in g else [None] * len(g),
                                  g["test_accuracy"]))}
        acc = stats.difference(by_seed(x), by_seed(b))
        row |= {"accuracy_diff": acc.value, "accuracy_diff_low": acc.low,
                "accuracy_diff_high": acc.high, "accuracy_diff_n": acc.n,
                "accuracy_diff_interval": acc.method}
        for c in ("input_bound", "tensor_core_share", "gpu_busy_share", "matmul_share",
                  "data_wait_share",
                  "test_accuracy", "time_to_steady_s", "steady_energy_per_sample_j"):
            row[c] = r.get(c)
        rows.append(row)
    return pd.DataFrame(rows)


def best(summary: pd.DataFrame, speedup_table: pd.DataFrame) -> pd.DataFrame:
    """Per workload and model, the fastest finished configuration (highest mean steady-state
    throughput) with its gain over the plain fp32 baseline (``plain_baselines``, as in
    ``speedup.csv``)."""
    gains = {tuple(str(r[k]) for k in V.CELL_KEYS): r for _, r in order(speedup_table).iterrows()}
    plain = plain_baselines(summary)
    ok = summary[(summary["repeats_ok"] > 0)].dropna(subset=[V.HEADLINE])
    rows = []
    for (run, workload, model), g in ok.groupby(["run", "workload", "model"], sort=False,
                                                observed=True):
        top = g.loc[g[V.HEADLINE].astype(float).idxmax()]
        gain = gains[tuple(str(top[k]) for k in V.CELL_KEYS)]
        b = plain.get(tuple(top[k] for k in PLAIN_KEYS))
        same_batch = b is not None and b["batch_size"] == top["batch_size"]
        shown = [a for a in V.AXES if a.name != "model" and (
            g[a.name].astype(str).nunique() > 1
            or (a.default is not None and str(top[a.name]) != a.default))]
        rows.append({
            "run": run, "workload": workload, "model": model, "experiment": top["experiment"],
            "setting_axes": ",".join(a.name for a in shown),
            **{k: top[k] for k in ("precision", *V.SETTING_KEYS, "data")},
            "repeats_ok": top["repeats_ok"],
            **{c: top.get(c) for c in (V.HEADLINE, f"{V.HEADLINE}_low", f"{V.HEADLINE}_high",
                                       "time_to_steady_s", "max_memory_allocated_bytes",
                                       "final_loss", "test_accuracy", "tensor_core_share",
                                       "matmul_share", "gpu_busy_share", "data_wait_share",
                                       "input_bound")},
            **{c: gain.get(c) for c in ("gain", "gain_low", "gain_high", "gain_n",
                                        "gain_interval")},
            "baseline_experiment": None if b is None else b["experiment"],
            "baseline_batch_size": None if b is None else b["batch_size"],
            "baseline_repeats_ok": None if b is None else b["repeats_ok"],
            f"baseline_{V.HEADLINE}": None if b is None else b[V.HEADLINE],
            # peak memory grows with the batch: compared only at the same batch size
            "memory_ratio": None if not same_batch or not b.get("max_memory_allocated_bytes")
            else top.get("max_memory_allocated_bytes") / b["max_memory_allocated_bytes"],
            "baseline_final_loss": None if b is None else b.get("final_loss"),
            "baseline_test_accuracy": None if b is None else b.get("test_accuracy")})
    return pd.DataFrame(rows)


HARNESS_COLUMNS = ("harness_process_start_s", *(f"harness_{k}_s" for k in V.HARNESS_PHASES))


def benchmark_path(benchmarks: Path, r) -> Path:
    return Path(benchmarks) / str(r["experiment"]) / f"{r['cell']}.tsv"


def overhead(metrics: pd.DataFrame, benchmarks: Path | list[Path]) -> pd.DataFrame:
    """Each job's wall time (Snakemake's benchmark TSV, column ``s``) against what it measured:
    ``fixed_cost_s`` is the wall time less the warm-up (time to the first fast step) and the
    timed steady steps: process start, imports, CUDA context, building, FLOP counting,
    profiling, evaluation and writing the record. ``harness_*_s`` split it by phase (from the
    record); Snakemake's own start of the job is the rest. A job without a benchmark file is
    kept with NaN, never dropped. ``benchmarks`` is the benchmark folder, or the list of files."""
    files = {f"{p.parent.name}/{p.stem}": p for p in map(Path, benchmarks)} \
        if isinstance(benchmarks, list) else None
    rows = []
    for _, r in metrics.iterrows():
        path = files.get(f"{r['experiment']}/{r['cell']}") if files is not None \
            else benchmark_path(benchmarks, r)
        have = path is not None and Path(path).exists()
        wall = float(pd.read_csv(path, sep="\t")["s"].iloc[0]) if have else np.nan
        steady = _numeric(pd.Series([r.get("steady_time_s")])).iloc[0]
        warm = _numeric(pd.Series([r.get("time_to_steady_s")])).iloc[0]
        measured = (0 if pd.isna(steady) else steady) + (0 if pd.isna(warm) else warm)
        rows.append({"experiment": r["experiment"], "cell": r["cell"], "workload": r["workload"],
                     "status": r["status"], "job_wall_s": wall,
                     "time_to_steady_s": warm, "steady_time_s": steady,
                     "fixed_cost_s": wall - measured, "overhead_s": wall - (
                         0 if pd.isna(steady) else steady),
                     **{c: r.get(c) for c in HARNESS_COLUMNS},
                     "benchmark": str(path) if have else None})
    df = pd.DataFrame(rows)
    if not df.empty:
        total = {"experiment": "(study)", "cell": "(all jobs)", "workload": None, "status": None,
                 "benchmark": None, **{c: _numeric(df[c]).sum(min_count=1) for c in
                                       ("job_wall_s", "time_to_steady_s", "steady_time_s",
                                        "fixed_cost_s", "overhead_s", *HARNESS_COLUMNS)}}
        df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
        df["overhead_share"] = df["overhead_s"] / df["job_wall_s"]
    return df


def write_csv(df: pd.DataFrame, path: Path) -> None:
    atomic.write_text(path, df.to_csv(index=False))


def aggregate(records, out_dir: Path, calibration: Path | None = None,
              expected: list[Path] | None = None,
              benchmarks: Path | list[Path] | None = None) -> dict[str, pd.DataFrame]:
    """``records``: a result set's records folder (every record in it: studies run with other
    configs on the same device add to it), or the list of record files."""
    from . import tables as T

    paths = find_records(records) if isinstance(records, (str, Path)) else sorted(map(Path,
                                                                                      records))
    if expected is not None:
        missing = sorted(set(map(Path, expected)) - set(paths))
        if missing:
            raise R.RecordError(f"{len(missing)} expected record(s) missing, e.g. {missing[0]}")
    if not paths:
        raise R.RecordError(f"{records}: no records to aggregate")
    df = tidy(load(paths))
    cal = json.loads(Path(calibration).read_text()) if calibration and Path(calibration).exists() \
        else None
    df = add_mfu(df, cal)
    summary = summarise(df)
    table = speedup(df, summary)
    top = best(summary, table)
    out_dir = Path(out_dir)
    write_csv(df, out_dir / "metrics.csv")
    write_csv(summary, out_dir / "summary.csv")
    write_csv(table, out_dir / "speedup.csv")
    write_csv(top, out_dir / "best.csv")
    T.write_markdown(T.speedup_table(table), out_dir / "speedup.md")
    T.write_markdown(T.best_table(top), out_dir / "best.md")
    result = {"metrics": df, "summary": summary, "speedup": table, "best": top}
    if benchmarks is not None:
        result["overhead"] = overhead(df, benchmarks)
        write_csv(result["overhead"], out_dir / "overhead.csv")
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.aggregate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", type=Path, nargs="?", help="the records folder of one result set")
    ap.add_argument("--records", dest="record_files", type=Path, nargs="+",
                    help="the record files of one result set (instead of a folder)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the tables")
    ap.add_argument("--calibration", type=Path, help="calibration.json of the same result set")
    ap.add_argument("--expect", type=Path, nargs="*", help="records that must all be there")
    ap.add_argument("--benchmarks", type=Path, nargs="*",
                    help="Snakemake's benchmark folder of the train jobs, or its TSV files, "
                         "for overhead.csv")
    args = ap.parse_args(argv)
    if (args.records is None) == (args.record_files is None):
        ap.error("give the records folder or --records FILE..., one of the two")
    bench = args.benchmarks
    if bench is not None and len(bench) == 1 and bench[0].is_dir():
        bench = bench[0]
    try:
        aggregate(args.records or args.record_files, args.out, args.calibration, args.expect,
                  bench)
    except R.RecordError as exc:
        print(f"tcbench.aggregate: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
