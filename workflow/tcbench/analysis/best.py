"""Per workload and model, the fastest configuration against the fastest plain fp32 one
(best.csv)."""

from __future__ import annotations

import pandas as pd

from .. import vocabulary as V
from ..resultset import cell_key, order
from .speedup import PLAIN_KEYS, WARMUP_COLUMNS, plain_baselines

TOP_COLUMNS = (V.HEADLINE, f"{V.HEADLINE}_low", f"{V.HEADLINE}_high", *WARMUP_COLUMNS,
               "max_memory_allocated_bytes", "final_loss", "test_accuracy", "tensor_core_share",
               "matmul_share", "gpu_busy_share", "data_wait_share", "input_bound")
GAIN_COLUMNS = ("gain", "gain_low", "gain_high", "gain_n", "gain_interval")


def _shown(g: pd.DataFrame, top) -> list:
    return [a for a in V.AXES if a.name != "model" and (
        g[a.name].astype(str).nunique() > 1
        or (a.default is not None and str(top[a.name]) != a.default))]


def _baseline(b, top) -> dict:
    # peak memory grows with the batch: compared only at the same batch size
    same_batch = b is not None and b["batch_size"] == top["batch_size"]
    return {
        "baseline_experiment": None if b is None else b["experiment"],
        "baseline_batch_size": None if b is None else b["batch_size"],
        "baseline_repeats_ok": None if b is None else b["repeats_ok"],
        f"baseline_{V.HEADLINE}": None if b is None else b[V.HEADLINE],
        "memory_ratio": None if not same_batch or not b.get("max_memory_allocated_bytes")
        else top.get("max_memory_allocated_bytes") / b["max_memory_allocated_bytes"],
        "baseline_final_loss": None if b is None else b.get("final_loss"),
        "baseline_test_accuracy": None if b is None else b.get("test_accuracy")}


def best(summary: pd.DataFrame, speedup_table: pd.DataFrame) -> pd.DataFrame:
    """Per workload and model, the fastest finished configuration (highest mean steady-state
    throughput) with its gain over the plain fp32 baseline (``plain_baselines``, as in
    ``speedup.csv``)."""
    gains = {cell_key(r): r for _, r in order(speedup_table).iterrows()}
    plain = plain_baselines(summary)
    ok = summary[(summary["repeats_ok"] > 0)].dropna(subset=[V.HEADLINE])
    rows = []
    for (run, workload, model), g in ok.groupby(["run", "workload", "model"], sort=False,
                                                observed=True):
        top = g.loc[g[V.HEADLINE].astype(float).idxmax()]
        gain = gains[cell_key(top)]
        rows.append({
            "run": run, "workload": workload, "model": model, "experiment": top["experiment"],
            "setting_axes": ",".join(a.name for a in _shown(g, top)),
            **{k: top[k] for k in ("precision", *V.SETTING_KEYS, "data")},
            "repeats_ok": top["repeats_ok"],
            **{c: top.get(c) for c in TOP_COLUMNS},
            **{c: gain.get(c) for c in GAIN_COLUMNS},
            **_baseline(plain.get(tuple(top[k] for k in PLAIN_KEYS)), top)})
    return pd.DataFrame(rows)
