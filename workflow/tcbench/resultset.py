"""A result set as frames: records -> one tidy row per record (``tidy``), and a table read back
from CSV -> the same normalised frame (``read``). The only place that fills an axis's default:
every reader (analysis, tables, figures, verdict, comparison) gets its frames from here, so a
cell's keys mean the same everywhere. Reads JSON records (never runs torch) and CSVs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import atomic, energy, kernels, record as R, vocabulary as V

# tables made before an axis existed hold its default
AXIS_DEFAULTS = {a.name: a.default for a in V.AXES if a.default is not None}

# the record's metrics and telemetry fields that become columns of metrics.csv, in its order
RECORD_METRICS = ["total_time_s", "max_memory_allocated_bytes", "max_memory_reserved_bytes",
                  "throughput_samples_per_s", "wall_throughput_samples_per_s", "samples",
                  "epochs", "steps", "warmup_steps", "warmup_time_s", "time_to_steady_s",
                  "first_step_time_s", "steady_time_s", "step_time_median_s", "step_time_p10_s",
                  "step_time_p90_s", "data_wait_s", "compute_s", "data_wait_share",
                  "input_bound", "compile_time_s", "final_loss", "first_nonfinite_step",
                  "grad_scaler_final_scale", "grad_scaler_skipped_steps", "flops_per_step",
                  "flops_per_sample", "achieved_tflops", "test_accuracy", "test_loss"]
RECORD_TELEMETRY = ["energy_j", "energy_per_sample_j", "steady_energy_j",
                    "steady_energy_per_sample_j", "steady_energy_window_s", "power_mean_w",
                    "power_max_w", "sm_clock_mean_mhz", "temperature_max_c",
                    "nvml_memory_used_max_bytes", "energy_source", "power_source",
                    "steady_energy_counter_updates"]
RECORD_ENVIRONMENT = ["device_name", "gpu_uuid", "gpu_index", "compute_capability",
                      "driver_version", "cuda_runtime_version", "torch_cuda_version",
                      "cudnn_version", "torch_version", "hostname", "timestamp_utc",
                      "git_commit", "git_dirty", "execution", "host_containerised",
                      "container_image", "allow_dirty", "cpu_model", "cpu_count"]
# the profile's kernel time split by kind (kernels.kernel_split), as metrics.csv columns
KERNEL_SPLIT = ("fp8_gemm_share", "other_tensor_core_share", "fp8_scaling_share",
                "kernel_classes_from", "kernel_classes_coverage")
HARNESS_COLUMNS = ("harness_process_start_s", *(f"harness_{k}_s" for k in V.HARNESS_PHASES))


def numeric(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s, errors="coerce")


# ------------------------------------------------------------------------------------ records
def data_kind(r: dict) -> str:
    """The data a cell trains on, from its parameters, so that a record without a run
    (unsupported, oom) still lands in the same cell as its fp32 baseline."""
    if r["workload"] == "digits":
        return "sklearn-digits"
    return r["params"].get("data", "synthetic")


def find_records(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*.json") if not p.name.startswith("."))


def given_records(paths) -> list[Path]:
    """Record files named on a command line: each file as given, every record in a folder."""
    return [q for p in map(Path, paths) for q in (find_records(p) if p.is_dir() else [p])]


def load(paths) -> list[dict]:
    """Read and validate every record; the first bad one stops everything, named."""
    return [R.read(p) | {"_path": str(p)} for p in paths]


def compile_cache(m: dict) -> str:
    """A record's compile-cache outcome (``vocabulary.COMPILE_CACHE_OUTCOMES``), or
    ``vocabulary.UNCOMPILED`` for a job that compiled nothing; records made before the outcome
    was a field get it from their counters, by the job's own rule."""
    cache = m.get("compile_cache")
    if not cache:
        return V.UNCOMPILED
    return cache.get("outcome") or V.compile_cache_outcome(cache.get("counters") or {})


def setting(r: dict) -> dict:
    """What a record (or an interleaved comparison's record) ran besides its precision: the
    model, the input pipeline, the execution axes and the data, defaults filled."""
    p = r["params"]
    return {"model": p.get("model", r["workload"]), "loader": p.get("loader", "synthetic"),
            **{a: V.onoff(p.get(a, AXIS_DEFAULTS.get(a))) for a in V.EXECUTION_AXES},
            "data": data_kind(r)}


def workload_params(r: dict) -> str:
    """A record's workload parameters (all but ``V.MEASUREMENT_PARAMS`` and
    ``V.STATED_PARAMS``) as one JSON text, keys sorted: what two cells of one workload must
    share to be compared across experiments."""
    own = {k: v for k, v in r["params"].items()
           if k not in V.MEASUREMENT_PARAMS and k not in V.STATED_PARAMS}
    return json.dumps(own, sort_keys=True, separators=(",", ":"))


def params_of(text) -> dict[str, str]:
    """``workload_params``'s text back as name -> value as a table shows it; {} for none."""
    if not isinstance(text, str) or not text:
        return {}
    return {k: v if isinstance(v, str) else json.dumps(v, sort_keys=True)
            for k, v in json.loads(text).items()}


def shape_of(text) -> str:
    """``workload_params``'s text less ``V.SCHEDULE_PARAMS``: what one step computes."""
    return json.dumps({k: v for k, v in params_of(text).items() if k not in V.SCHEDULE_PARAMS},
                      sort_keys=True)


def model_config(r: dict) -> str | None:
    """A model preset's configuration as JSON text (a transformer's vocabulary, its width):
    what two presets of one experiment differ in; None where the record gives none."""
    config = (r.get("model") or {}).get("config")
    return json.dumps(config, sort_keys=True) if config else None


def _row(r: dict) -> dict:
    p, m = r["params"], r.get("metrics") or {}
    t = r.get("telemetry") or {}
    tc = kernels.reclassified(kernels.without_annotations(r.get("tensor_cores") or {}))
    env, flags = r["environment"], r.get("precision_flags") or {}
    row = {k: r[k] for k in ("run", "experiment", "cell", "workload", "precision",
                             "batch_size", "repeat", "status", "status_reason")}
    row["seed"] = r.get("seed", p.get("seed"))
    row["repeat_reason"] = r.get("repeat_reason", V.REPEAT_INITIAL)
    row |= setting(r)
    row["workload_params"] = workload_params(r)
    row |= {k: m.get(k) for k in RECORD_METRICS}
    # what one sample is in tokens (a token workload's sequence length), for tokens/s
    # (tcbench.analysis.throughput)
    row["tokens_per_sample"] = (r.get("data") or {}).get("tokens_per_sample")
    row["model_config"] = model_config(r)
    row["compile_cache"] = compile_cache(m)
    row |= {k: t.get(k) for k in RECORD_TELEMETRY}
    # an energy figure only where the counter passes its check (tcbench.energy), judged
    # again here so that a record made before the rule gives none its job would withhold
    row |= energy.figures(t)
    row |= {"tensor_core_share": tc.get("tensor_core_share"),
            **kernels.busy_of_timed_steps(tc, m.get("step_time_median_s")),
            "matmul_share": tc.get("matmul_share"),
            "matmul_share_bound": tc.get("matmul_share_bound"),
            # above 1 where the profile's kernels overlapped (kernels.busy_note)
            "kernel_time_over_profile_wall": tc["kernel_time_s"] / tc["profile_wall_s"]
            if tc.get("kernel_time_s") is not None and tc.get("profile_wall_s") else None,
            **{k: kernels.kernel_split(tc).get(k) for k in KERNEL_SPLIT},
            "top_kernel": (tc.get("top_kernels") or [{}])[0].get("name"),
            "top_non_matrix_kernel": kernels.top_non_matrix_kernel(tc),
            # what the step spends its kernel time on, by name (a fastest cell's reason)
            "top_kernels": json.dumps(kernels.top_listed(tc)) if tc.get("profiled") else None,
            "evidence_repeat": tc.get("evidence_repeat",
                                      r["repeat"] if tc.get("profiled") else None)}
    row |= {"cuda_matmul_allow_tf32": flags.get("cuda_matmul_allow_tf32"),
            "cudnn_allow_tf32": flags.get("cudnn_allow_tf32"),
            "autocast_dtype": flags.get("autocast_dtype")}
    # which Linear layers an FP8 mode converted and which it kept (the reason a slow FP8 cell
    # gives): their names, space-separated
    fp8 = flags.get("fp8") or {}
    row["fp8_converted"] = " ".join(fp8["converted"]) if fp8.get("converted") else None
    row["fp8_kept"] = " ".join(k.get("layer", "?") for k in fp8["kept"]) \
        if fp8.get("kept") else None
    row |= {k: env.get(k) for k in RECORD_ENVIRONMENT}
    h = r.get("harness") or {}
    row["harness_process_start_s"] = h.get("process_start_to_main_s")
    row |= {f"harness_{k}_s": (h.get("phases_s") or {}).get(k) for k in V.HARNESS_PHASES}
    # a step captured as one CUDA graph is captured before the training loop the record
    # times: its warm-up and total time include the capture, which a script that captures pays
    capture = row.get("harness_capturing_cuda_graph_s")
    if row.get("cuda_graphs") == "on" and capture:
        row |= {k: row[k] + capture for k in (V.WARMUP, V.SEED_METRIC) if row.get(k) is not None}
    row |= conditions(r)
    row |= host_columns(r)
    row["steady"] = (m.get("timed_window") or {}).get("steady")
    row |= compile_check(r)
    row["record"] = r.get("_path")
    return row


def tail_compiled_in_window(r: dict) -> bool:
    """Whether a record's own fields show that its model met a new input shape only after the
    warm-up: an epoch that ends in a smaller batch (``data.samples_per_epoch`` not a multiple
    of the batch size), which the loader kept (the schedule's steps per epoch are the whole
    batches plus one), and a warm-up shorter than an epoch, so the first such batch fell
    inside the timed window. A compiled model compiles that shape there, or loads it from its
    cache, whatever the cache held before the job (the job's own check counts both), so the
    cache outcome does not decide it. False where the fields cannot tell (no step counts, a
    schedule that is not whole epochs)."""
    m, batch = r.get("metrics") or {}, r["batch_size"]
    samples = (r.get("data") or {}).get("samples_per_epoch")
    counts, epochs = m.get("step_counts") or {}, m.get("epochs")
    warmup = counts.get("warmup", m.get("warmup_steps"))
    schedule = warmup + counts["schedule"] if "schedule" in counts and warmup is not None \
        else m.get("steps")
    if not (samples and batch and epochs and schedule) or warmup is None \
            or samples % batch == 0 or schedule % epochs:
        return False
    per_epoch = schedule // epochs
    return per_epoch == -(-samples // batch) and warmup < per_epoch


def compile_check(r: dict) -> dict:
    """A compiled record against the check of its timed window for compilations
    (``metrics.timed_window.graphs_compiled``: graphs torch.compile compiled or loaded inside
    the window; any makes it unsteady). ``window_checked``: whether the record counted them
    (False: it predates the count, so its window reads steady whatever compiled in it);
    ``uncounted_compile``: for a record that predates the count, whether its own fields show
    a compilation inside the window all the same (``tail_compiled_in_window``); every column
    None for a job that compiled nothing or did not finish."""
    p, m = r["params"], r.get("metrics") or {}
    if not m or V.onoff(p.get("compile", AXIS_DEFAULTS.get("compile"))) == "off":
        return {"window_checked": None, "graphs_compiled": None, "uncounted_compile": None}
    window = m.get("timed_window") or {}
    checked = "graphs_compiled" in window
    return {"window_checked": checked, "graphs_compiled": window.get("graphs_compiled"),
            "uncounted_compile": None if checked else tail_compiled_in_window(r)}


def host_columns(r: dict) -> dict:
    """The host's part in a record (tcbench.host.hoststate, tcbench.host.placement): the
    training core and how it was chosen, the dispatch probe around the timed window, what
    disturbed it; None where the record predates the fields."""
    core = (r.get("placement") or {}).get("training_core") or {}
    hs = r.get("host_state") or {}
    probe = hs.get("probe") or {}
    before, after = probe.get("before_ops_per_s"), probe.get("after_ops_per_s")
    cpu = hs.get("training_cpu") or {}
    return {"training_cpu": core.get("cpu"), "training_cpu_chosen_by": core.get("chosen_by"),
            "host_probe_before_ops_per_s": before, "host_probe_after_ops_per_s": after,
            "host_probe_ops_per_s": (before + after) / 2 if before and after else None,
            "host_probe_change": after / before - 1 if before and after else None,
            "involuntary_ctx_switches": (hs.get("training_thread") or {}).get(
                "involuntary_ctx_switches"),
            "host_steal_s": cpu.get("steal_s"),
            "host_irq_s": cpu["irq_s"] + cpu["softirq_s"] if cpu else None}


def spans(numbers) -> list[tuple[int, int]]:
    """Whole numbers as runs of consecutive ones, first and last: [0, 1, 2, 5] -> [(0, 2),
    (5, 5)] (a CPU set, a cell's repeats)."""
    runs: list[list[int]] = []
    for c in sorted(set(numbers)):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return [(a, b) for a, b in runs]


def _cpus(cpus) -> str | None:
    """A CPU set as text in ranges ("0-15,32"), None where the record does not say."""
    if not cpus:
        return None
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in spans(cpus))


def conditions(r: dict) -> dict:
    """Where and beside what a job ran (placement, process start): the columns the verdict's
    disclosure reads; None where the record predates the field."""
    pl, process = r.get("placement") or {}, (r.get("harness") or {}).get("process") or {}
    return {"cpu_placement": pl.get("cpu_placement"), "cpu_set": _cpus(pl.get("cpu_set")),
            "neighbours": len(pl["neighbours"]) if "neighbours" in pl else None,
            "process_start": process.get("start")}


def tidy(records: list[dict]) -> pd.DataFrame:
    """One row per record (one training process), in the cell order of every table."""
    df = pd.DataFrame([_row(r) for r in records])
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
    per_sample = numeric(df["flops_per_sample"]).fillna(
        pd.to_numeric(counted.transform("first"), errors="coerce"))
    done = df["status"].eq(V.OK) & numeric(df["throughput_samples_per_s"]).notna()
    df["flops_per_sample"] = per_sample.where(done | df["flops_per_sample"].notna())
    missing = done & numeric(df["achieved_tflops"]).isna() & per_sample.notna()
    df.loc[missing, "achieved_tflops"] = (per_sample * numeric(
        df["throughput_samples_per_s"]) / 1e12)[missing]
    return df


def add_mfu(df: pd.DataFrame, calibration: dict | None) -> pd.DataFrame:
    """Model FLOP utilisation against the same device's measured matmul ceiling per mode."""
    ceilings = {k: v.get("tflops") for k, v in ((calibration or {}).get("modes") or {}).items()}
    df["ceiling_tflops"] = df["precision"].astype(str).map(ceilings).astype(float)
    df["mfu"] = df["achieved_tflops"].astype(float) / df["ceiling_tflops"]
    return df


# ----------------------------------------------------------------------------- normalisation
def fill_axes(df: pd.DataFrame) -> pd.DataFrame:
    """Axes a table does not name hold their default (the model is the workload's own); for
    tables made before an axis existed."""
    df = df.copy()
    for a in V.AXES:
        # the model is the workload's own; every other axis holds what the vocabulary assumes
        value = df["workload"] if a.name == "model" else a.assumed
        df[a.name] = df[a.name].fillna(value) if a.name in df else value
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


def cell_key(row) -> tuple:
    """A row's cell as text, to match rows of two tables."""
    return tuple(str(row[k]) for k in V.CELL_KEYS)


def in_setting_order(df: pd.DataFrame) -> pd.DataFrame:
    """Rows by setting (batch size, then the axes), fp32 first within a setting."""
    return df.sort_values(["batch_size", *V.AXIS_NAMES, "precision"])


# ---------------------------------------------------------------------------------- CSV files
def read(path: Path) -> pd.DataFrame:
    """One of a result set's tables, normalised (``order``)."""
    return order(pd.read_csv(path))


def read_raw(path: Path) -> pd.DataFrame:
    """A table as written (metrics.csv's provenance columns as they are)."""
    return pd.read_csv(path)


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    return atomic.write_text(path, df.to_csv(index=False))
