"""One row per cell: its repeats pooled by ``tcbench.stats`` (summary.csv)."""

from __future__ import annotations

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..resultset import numeric, order
from . import throughput

# pooled per cell as a mean with its interval (tcbench.stats.estimate)
ESTIMATED = [m.column for m in V.METRICS if m.pooled == "mean"]
# pooled per cell as a median with its range, compile-cache misses apart (tcbench.stats.warmup)
SPREAD = [m.column for m in V.METRICS if m.pooled == "median"]
# the kernel time split of an FP8 cell (kernels.kernel_split), from its evidence repeat
SPLIT_SHARES = ("fp8_gemm_share", "other_tensor_core_share", "fp8_scaling_share",
                "kernel_classes_coverage")
# pooled per cell as a plain mean (shares, counts: descriptive, no claim rests on them)
DESCRIBED = ["max_memory_reserved_bytes", "data_wait_share", "tensor_core_share",
             "gpu_busy_share", "matmul_share", "warmup_time_s", "compile_time_s", "final_loss",
             "power_mean_w", "steady_time_s", "flops_per_sample",
             "gpu_busy_share_under_profiler", "gpu_busy_share_uncapped",
             "kernel_time_over_profile_wall", *SPLIT_SHARES]
# what a cell's tokens/s and MFU rest on: the tokens of one sample, the roof its MFU is against
DESCRIBED += [throughput.PER_SAMPLE, "ceiling_tflops"]
# said of the evidence repeat, as text
EVIDENCE_TEXT = ("top_kernel", "top_non_matrix_kernel", "top_kernels",
                 "gpu_busy_share_source", "kernel_classes_from", "matmul_share_bound")
# said of every repeat alike (the model's conversion to FP8, the workload's parameters): the
# first record that says
CONSTANT_TEXT = ("fp8_converted", "fp8_kept", "workload_params", "model_config")


def _counts(g: pd.DataFrame, ok: pd.DataFrame) -> dict:
    worst = max(g["status"], key=V.STATUS_RANK.get)
    return {"repeats": len(g), "repeats_ok": len(ok), "interval": stats.method(len(ok)),
            "status": V.OK if len(ok) == len(g) else worst,
            "status_reason": "; ".join(sorted(set(g["status_reason"].dropna().astype(str))))
            or None,
            "seeds": " ".join(str(int(s)) for s in ok["seed"].dropna()) if "seed" in ok
            else None,
            # the repeats adaptive repeats added because the cell's interval was wide
            "repeats_added": int((g["repeat_reason"].fillna(V.REPEAT_INITIAL)
                                  != V.REPEAT_INITIAL).sum()) if "repeat_reason" in g else 0}


def _pooled(ok: pd.DataFrame) -> dict:
    row = {}
    for col in ESTIMATED:
        if col in ok:
            row |= stats.estimate(numeric(ok[col])).as_dict(col)
    for col in SPREAD:
        if col in ok:
            outcomes = ok["compile_cache"] if "compile_cache" in ok else [V.UNCOMPILED] * len(ok)
            warm, cold = stats.warmup(numeric(ok[col]), outcomes)
            row |= warm.as_dict(col) | {f"{col}_interval": warm.method}
            miss = V.miss_column(col)
            row |= cold.as_dict(miss) | {f"{miss}_interval": cold.method}
    row[f"{V.HEADLINE}_cv"] = stats.cv(numeric(ok[V.HEADLINE])) if V.HEADLINE in ok else None
    row |= _modes(ok, row)
    for col in DESCRIBED:
        if col in ok:
            v = numeric(ok[col]).dropna()
            row[col] = float(v.mean()) if len(v) else None
    return row


def _modes(ok: pd.DataFrame, pooled: dict) -> dict:
    """Whether the cell's throughputs fall into two modes (``stats.modes``): then both are
    reported with their n, and the pooled interval is withdrawn (``stats.BIMODAL``), of the
    tokens/s too, which are the same runs."""
    m = stats.modes(numeric(ok[V.HEADLINE])) if V.HEADLINE in ok else None
    row = {"bimodal": m is not None,
           f"{V.HEADLINE}_interval": stats.BIMODAL if m else stats.method(len(ok))}
    for name, e in (("slow_mode", None if m is None else m.slow),
                    ("fast_mode", None if m is None else m.fast)):
        row |= {name: None if e is None else e.value, f"{name}_n": None if e is None else e.n}
    if m is not None:
        for col in (V.HEADLINE, throughput.TOKENS):
            if col in pooled:
                row |= {f"{col}_low": None, f"{col}_high": None}
    return row


def _steadiness(ok: pd.DataFrame) -> dict:
    """How many of the cell's finished repeats had a timed window that was not steady
    (metrics.csv ``steady``, the record's metrics.timed_window.steady); None where no record
    says (sets made before the window was checked)."""
    said = ok["steady"].dropna() if "steady" in ok else pd.Series([], dtype=object)
    if said.empty:
        return {"unsteady_n": None}
    return {"unsteady_n": int(sum(not stats.flag(v) for v in said))}


def _compile_check(ok: pd.DataFrame) -> dict:
    """Whether every compiled finished repeat counted the compilations inside its timed window
    (metrics.csv ``window_checked``; None for a cell that compiled nothing), and which repeats
    predate that count yet compiled inside it all the same (``uncounted_compile``,
    ``resultset.compile_check``): their number, and the repeats as space-separated numbers."""
    said = ok["window_checked"].dropna() if "window_checked" in ok else ok.iloc[:0]
    if said.empty:
        return {"window_checked": None, "uncounted_compile_n": None,
                "uncounted_compile_repeats": None}
    known = ok[[stats.flag(v) for v in ok["uncounted_compile"]]] \
        if "uncounted_compile" in ok else ok.iloc[:0]
    return {"window_checked": all(stats.flag(v) for v in said),
            "uncounted_compile_n": len(known),
            "uncounted_compile_repeats": " ".join(str(int(v)) for v in known["repeat"]) or None}


def _evidence(g: pd.DataFrame, ok: pd.DataFrame) -> dict:
    row = {"input_bound": bool(ok["input_bound"].astype(bool).all()) if len(ok) else None}
    evidence = ok.dropna(subset=["top_kernel"]) if "top_kernel" in ok else ok.iloc[:0]
    for col in EVIDENCE_TEXT:
        row[col] = evidence[col].iloc[0] if len(evidence) and col in evidence else None
    row["evidence_repeat"] = (int(evidence["repeat"].iloc[0]) if len(evidence) else None)
    for col in CONSTANT_TEXT:
        said = g[col].dropna() if col in g else []
        row[col] = said.iloc[0] if len(said) else None
    for col in ("device_name", "compute_capability"):  # a CUDA device has a capability
        row[col] = g[col].dropna().iloc[0] if col in g and g[col].notna().any() else None
    return row


def summarise(df: pd.DataFrame, keys=V.CELL_KEYS) -> pd.DataFrame:
    """One row per cell (``keys``): counts, the worst status, every ``ESTIMATED`` metric as
    mean/low/high/n (``tcbench.stats.estimate``) and every ``DESCRIBED`` one as a mean, over
    the repeats that finished (status ok)."""
    df = order(df)
    keys = list(keys)
    rows = []
    for key, g in df.groupby(keys, observed=True, sort=False, dropna=False):
        ok = g[g["status"] == V.OK]
        rows.append(dict(zip(keys, key)) | _counts(g, ok) | _pooled(ok) | _steadiness(ok)
                    | _compile_check(ok) | _evidence(g, ok))
    out = pd.DataFrame(rows)
    return order(out) if not out.empty else out
