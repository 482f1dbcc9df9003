"""Per experiment and model, the fastest configuration, judged fairly (best.csv).

Two figures per row, never one in place of the other:

* the **fair** one: the fastest cell against its one baseline at the same setting
  (``claims.judgement``: fp32, or amp-bf16 first for an FP8 mode), with the claim its
  interval allows; it isolates what precision did;
* the **overall** gain over the plain fp32 baseline (``speedup.plain_for``: its own
  experiment's plain fp32 cell where it has one), with every axis that changed besides
  precision (``changed_axes``: batch size, compile, memory format, ...), since that ratio
  credits them all.
"""

from __future__ import annotations

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..resultset import cell_key, order
from . import claims
from .speedup import WARMUP_COLUMNS, plain_baselines, plain_for
from .throughput import TOKENS

TOP_COLUMNS = (V.HEADLINE, f"{V.HEADLINE}_low", f"{V.HEADLINE}_high", TOKENS, f"{TOKENS}_low",
               f"{TOKENS}_high", *WARMUP_COLUMNS,
               "max_memory_allocated_bytes", "final_loss", "test_accuracy", "tensor_core_share",
               "matmul_share", "gpu_busy_share", "data_wait_share", "input_bound")
GAIN_COLUMNS = ("gain", "gain_low", "gain_high", "gain_n", "gain_interval",
                "speedup", "speedup_low", "speedup_high", "speedup_n")
CHANGES = ("batch_size", *V.AXIS_NAMES)


def _shown(g: pd.DataFrame, top) -> list:
    return [a for a in V.AXES if a.name != "model" and (
        g[a.name].astype(str).nunique() > 1
        or (a.default is not None and str(top[a.name]) != a.default))]


def _baseline(b, top) -> dict:
    # peak memory grows with the batch: compared only at the same batch size
    same_batch = b is not None and b["batch_size"] == top["batch_size"]
    out = {
        "baseline_experiment": None if b is None else b["experiment"],
        "baseline_repeats_ok": None if b is None else b["repeats_ok"],
        f"baseline_{V.HEADLINE}": None if b is None else b[V.HEADLINE],
        "memory_ratio": None if not same_batch or not b.get("max_memory_allocated_bytes")
        else top.get("max_memory_allocated_bytes") / b["max_memory_allocated_bytes"],
        "baseline_final_loss": None if b is None else b.get("final_loss"),
        "baseline_test_accuracy": None if b is None else b.get("test_accuracy")}
    out |= {f"baseline_{k}": None if b is None else b[k] for k in CHANGES}
    out["changed_axes"] = None if b is None else ",".join(
        k for k in CHANGES if str(b[k]) != str(top[k]))
    return out


def _fair(gain_row) -> dict:
    """The fastest cell against its one baseline at the same setting, and the claim."""
    j = claims.judgement(gain_row) if gain_row is not None else None
    if j is None:
        return {"fair_baseline": None, "fair_claim": None}
    e = j.estimate
    return {"fair_baseline": j.baseline, "fair_ratio": e.value, "fair_low": e.low,
            "fair_high": e.high, "fair_n": e.n, "fair_interval": e.method,
            "fair_claim": j.claim}


def _gain_claim(gain_row) -> str | None:
    if gain_row is None or pd.isna(gain_row.get("gain")):
        return None
    return stats.gated(stats.claim(stats.from_row(gain_row, "gain")), claims.gate(gain_row, None))


def best(summary: pd.DataFrame, speedup_table: pd.DataFrame) -> pd.DataFrame:
    """Per experiment and model, the fastest finished configuration (highest mean
    steady-state throughput), its fair comparison and its overall gain (module doc)."""
    gains = {cell_key(r): r for _, r in order(speedup_table).iterrows()}
    plain = plain_baselines(summary)
    ok = summary[(summary["repeats_ok"] > 0)].dropna(subset=[V.HEADLINE])
    rows = []
    for (run, experiment, model), g in ok.groupby(["run", "experiment", "model"], sort=False,
                                                  observed=True):
        top = g.loc[g[V.HEADLINE].astype(float).idxmax()]
        gain = gains.get(cell_key(top))
        rows.append({
            "run": run, "experiment": experiment, "workload": top["workload"], "model": model,
            "setting_axes": ",".join(a.name for a in _shown(g, top)),
            **{k: top[k] for k in ("precision", *V.SETTING_KEYS, "data")},
            "repeats_ok": top["repeats_ok"],
            "reduced_ran": bool((g["precision"].astype(str) != V.BASELINE).any()),
            **{c: top.get(c) for c in TOP_COLUMNS},
            **_fair(gain),
            **{c: None if gain is None else gain.get(c) for c in GAIN_COLUMNS},
            "gain_claim": _gain_claim(gain),
            # "fastest" is no claim where the top cell's own repeats cannot decide it
            "fastest_gate": claims.gate(top, None),
            **_baseline(plain_for(plain, top), top)})
    return pd.DataFrame(rows)
