"""Each cell against fp32 at the same setting, and against the plain fp32 baseline
(speedup.csv). A speedup > 1 is faster; a memory ratio < 1 saves memory."""

from __future__ import annotations

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..resultset import numeric, order
from .throughput import TOKENS

PLAIN_KEYS = ("run", "workload", "model", "data", "loader")
# other ratios to fp32 at the same setting: column stem -> metric (no warm-up ratio: a ratio
# of means with a t interval is what a skewed warm-up must not get, ``stats.warmup``)
RATIOS = (("memory_ratio", "max_memory_allocated_bytes"),
          ("energy_ratio", "steady_energy_per_sample_j"))
# the warm-up as summary.csv pooled it (median, range, n; the cache misses apart)
WARMUP_COLUMNS = tuple(f"{c}{part}" for c in (V.WARMUP, V.WARMUP_MISS)
                       for part in ("", "_low", "_high", "_n", "_interval"))
CARRIED = ("input_bound", "tensor_core_share", "gpu_busy_share", "matmul_share",
           "data_wait_share", "test_accuracy", *WARMUP_COLUMNS, "steady_energy_per_sample_j",
           "gpu_busy_share_source", "gpu_busy_share_under_profiler", "gpu_busy_share_uncapped")


def runs_by_cell(df: pd.DataFrame, keys=V.CELL_KEYS) -> dict:
    """The finished runs of each cell, by its key."""
    return {k: g for k, g in df.groupby(list(keys), observed=True, sort=False, dropna=False)}


def plain_baselines(summary: pd.DataFrame) -> dict[tuple, pd.Series]:
    """Per workload, model, data and input pipeline: the fastest *plain* fp32 cell (strict
    fp32, ``V.EAGER`` knobs: eager, contiguous, no CUDA graphs), at any batch size; and per
    experiment its own such cell (keyed by the experiment, then ``PLAIN_KEYS``). The one
    baseline of every "gain": how far precision and execution knobs together take a workload
    beyond what plain PyTorch in fp32 does (``plain_for`` picks it)."""
    plain = (summary["precision"].astype(str) == V.BASELINE) & (summary["repeats_ok"] > 0)
    for k, v in V.EAGER.items():
        plain &= summary[k].astype(str) == v
    out = {}
    cells = summary[plain].dropna(subset=[V.HEADLINE])
    for keys in (list(PLAIN_KEYS), ["experiment", *PLAIN_KEYS]):
        for key, g in cells.groupby(keys, sort=False, observed=True):
            out[key] = g.loc[g[V.HEADLINE].astype(float).idxmax()]
    return out


def plain_for(plain: dict, row) -> pd.Series | None:
    """A cell's plain fp32 baseline: its own experiment's where it has one (the study that
    ran it also ran its baseline, under the same conditions), else the workload's fastest."""
    own = plain.get((row["experiment"], *(row[k] for k in PLAIN_KEYS)))
    return own if own is not None else plain.get(tuple(row[k] for k in PLAIN_KEYS))


def _col(g, c):
    return [] if g is None or c not in g else numeric(g[c])


def _by_seed(g) -> dict:
    if g is None or "test_accuracy" not in g:
        return {}
    g = g.dropna(subset=["test_accuracy"])
    return {int(s) if pd.notna(s) else -i: float(a) for i, (s, a) in
            enumerate(zip(g["seed"] if "seed" in g else [None] * len(g), g["test_accuracy"]))}


def _speed(x, b) -> dict:
    sp = stats.ratio(_col(x, V.HEADLINE), _col(b, V.HEADLINE))
    c = stats.claim(sp)
    return {"speedup": sp.value, "speedup_low": sp.low, "speedup_high": sp.high,
            "speedup_n": sp.n, "speedup_interval": sp.method,
            "faster": stats.is_faster(c), "slower": stats.is_slower(c)}


def _against_bf16(r, runs, key) -> dict:
    """An FP8 mode against the mode it replaces (``V.FP8_BASELINE``) at the same setting: the
    question an engineer asks of FP8 first, before fp32."""
    fp8 = {m.name for m in V.MODES if m.fp8_recipe}
    b = runs.get(key[:-1] + (V.FP8_BASELINE,)) if str(r["precision"]) in fp8 else None
    e = stats.ratio(_col(runs.get(key), V.HEADLINE), _col(b, V.HEADLINE)) if b is not None \
        else stats.EMPTY
    return _stem("bf16_speedup", e) | {"bf16_speedup_interval": e.method}


def _gain(x, p, runs) -> dict:
    gain = stats.ratio(_col(x, V.HEADLINE), _col(runs.get(tuple(p[k] for k in V.CELL_KEYS)),
                                                  V.HEADLINE)) if p is not None else stats.EMPTY
    return {"gain": gain.value, "gain_low": gain.low, "gain_high": gain.high,
            "gain_n": gain.n, "gain_interval": gain.method,
            "plain_experiment": None if p is None else p["experiment"],
            "plain_batch_size": None if p is None else p["batch_size"],
            **{f"plain_{a}": None if p is None else p[a] for a in V.AXIS_NAMES if a != "model"}}


def _ratios(x, b) -> dict:
    row = {}
    for name, c in RATIOS:
        row |= _stem(name, stats.ratio(_col(x, c), _col(b, c)))
    # the seed's metric is a time, not a rate: fp32's time over this time
    row |= _stem("seed_speedup", stats.ratio(_col(b, V.SEED_METRIC), _col(x, V.SEED_METRIC)))
    return row


def _stem(name: str, e: stats.Estimate) -> dict:
    return {name: e.value, f"{name}_low": e.low, f"{name}_high": e.high, f"{name}_n": e.n}


def _accuracy(x, b) -> dict:
    acc = stats.difference(_by_seed(x), _by_seed(b))
    return _stem("accuracy_diff", acc) | {"accuracy_diff_interval": acc.method}


def speedup(metrics: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Each cell against fp32 at the same setting (``V.BASELINE_KEYS`` equal): the ratio of
    mean throughputs with its interval (``stats.ratio``) and the claim it allows
    (``stats.claim``), the gain over the plain fp32 baseline, the ratios of memory and steady
    energy per sample, the warm-up as summarised, the accuracy difference paired by
    seed, and for an FP8 mode its ratio to amp-bf16 at the same setting."""
    m = order(metrics)
    runs = runs_by_cell(m[m["status"] == V.OK])
    plain = plain_baselines(summary)
    rows = []
    for _, r in summary.iterrows():
        key = tuple(r[k] for k in V.CELL_KEYS)
        x, b = runs.get(key), runs.get(key[:-1] + (V.BASELINE,))
        row = {k: r[k] for k in V.CELL_KEYS} | {
            "status": r["status"], "repeats_ok": r["repeats_ok"],
            "baseline_repeats_ok": 0 if b is None else len(b),
            V.HEADLINE: r.get(V.HEADLINE), TOKENS: r.get(TOKENS),
            "max_memory_allocated_bytes": r.get("max_memory_allocated_bytes")}
        row |= _speed(x, b) | _gain(x, plain_for(plain, r), runs)
        row |= _against_bf16(r, runs, key) | _ratios(x, b) | _accuracy(x, b)
        rows.append(row | {c: r.get(c) for c in CARRIED})
    return pd.DataFrame(rows)
