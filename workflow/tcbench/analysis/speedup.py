"""Each cell against fp32 at the same setting, and against the plain fp32 baseline
(speedup.csv). A speedup > 1 is faster; a memory ratio < 1 saves memory."""

from __future__ import annotations

import json

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..resultset import cell_key, numeric, order, shape_of
from . import claims
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
           "matmul_share_bound",
           "data_wait_share", "test_accuracy", *WARMUP_COLUMNS, "steady_energy_per_sample_j",
           "gpu_busy_share_source", "gpu_busy_share_under_profiler", "gpu_busy_share_uncapped",
           "kernel_time_over_profile_wall",
           "bimodal", "slow_mode", "slow_mode_n", "fast_mode", "fast_mode_n", "unsteady_n",
           "uncounted_compile_n", "uncounted_compile_repeats", "workload_params")


def runs_by_cell(df: pd.DataFrame, keys=V.CELL_KEYS) -> dict:
    """The finished runs of each cell, by its key."""
    return {k: g for k, g in df.groupby(list(keys), observed=True, sort=False, dropna=False)}


def _shape(df: pd.DataFrame) -> pd.Series:
    """Each row's workload shape (``resultset.shape_of``); none's for a table made before the
    workload's parameters were a column."""
    if "workload_params" not in df:
        return pd.Series([shape_of(None)] * len(df), index=df.index, dtype=object)
    return df["workload_params"].map(shape_of)


def plain_baselines(summary: pd.DataFrame,
                    precision: str = V.BASELINE) -> dict[tuple, pd.Series]:
    """Per workload, model, data, input pipeline and workload shape (its parameters less how
    long it learns, ``resultset.shape_of``: a Linear width, a sequence length): the fastest
    *plain* fp32 cell (strict fp32, ``V.EAGER`` knobs: eager, contiguous, no CUDA graphs), at
    any batch size; and per experiment its own such cell (keyed by the experiment, then
    ``PLAIN_KEYS``). The one baseline of every "gain": how far precision and execution knobs
    together take a workload beyond what plain PyTorch in fp32 does (``plain_for`` picks it);
    a workload of another shape has none, so no gain credits the shape's own change. An
    experiment whose plain cells are all of one model also keys them by the experiment alone
    (``OWN_MODEL`` in place of the model): its other models, where they are that model's
    variants (``variants``: a padded vocabulary), are measured against it. ``precision``:
    another mode's plain cells (amp-bf16 eager, the plain mixed-precision script)."""
    plain = (summary["precision"].astype(str) == precision) & (summary["repeats_ok"] > 0)
    for k, v in V.EAGER.items():
        plain &= summary[k].astype(str) == v
    out = {}
    cells = summary[plain].dropna(subset=[V.HEADLINE])
    cells = cells.assign(_shape=_shape(cells))
    for keys in ([*PLAIN_KEYS, "_shape"], ["experiment", *PLAIN_KEYS, "_shape"]):
        for key, g in cells.groupby(keys, sort=False, observed=True):
            out[key] = g.loc[g[V.HEADLINE].astype(float).idxmax()]
    for exp, g in cells.groupby("experiment", sort=False, observed=True):
        if g["model"].astype(str).nunique() == 1:
            for key, h in g.groupby([k for k in PLAIN_KEYS if k != "model"] + ["_shape"],
                                    sort=False, observed=True):
                out[(exp, OWN_MODEL, *key)] = h.loc[h[V.HEADLINE].astype(float).idxmax()]
    return out


# the key of an experiment's plain cells whose model its other models are variants of
OWN_MODEL = "(the experiment's plain model)"


def plain_for(plain: dict, row) -> pd.Series | None:
    """A cell's plain fp32 baseline: its own experiment's where it has one (the study that
    ran it also ran its baseline, under the same conditions; for a model with no plain cell
    of its own, the experiment's one plain model's, ``plain_baselines``), else the fastest
    of its workload at the same shape; None where no plain fp32 cell shares its shape."""
    shape = shape_of(row.get("workload_params"))
    own = plain.get((row["experiment"], *(row[k] for k in PLAIN_KEYS), shape))
    if own is None:
        own = plain.get((row["experiment"], OWN_MODEL,
                         *(row[k] for k in PLAIN_KEYS if k != "model"), shape))
        own = own if own is not None and variants(row, own) else None
    return own if own is not None else plain.get((*(row[k] for k in PLAIN_KEYS), shape))


def variants(a, b) -> bool:
    """Whether two rows' models are presets of one architecture: both state a configuration
    (``model_config``) with the same keys (a padded vocabulary, not another family; a model
    that states none, a torchvision one, is no one's variant)."""
    keys = [json.loads(v).keys() if isinstance(v, str) and v else None
            for v in (a.get("model_config"), b.get("model_config"))]
    return keys[0] is not None and keys[0] == keys[1]


def _col(g, c):
    return [] if g is None or c not in g else numeric(g[c])


def _by_seed(g) -> dict:
    if g is None or "test_accuracy" not in g:
        return {}
    g = g.dropna(subset=["test_accuracy"])
    return {int(s) if pd.notna(s) else -i: float(a) for i, (s, a) in
            enumerate(zip(g["seed"] if "seed" in g else [None] * len(g), g["test_accuracy"]))}


def _throughput_ratio(stem: str, x, b, cell, base) -> dict:
    """The ratio of mean throughputs with its interval (``stats.ratio``), the range of the
    ratios of any two runs (``stats.every_pair``), and why the repeats cannot decide it
    (``claims.gate``; ``cell`` and ``base`` are the two summary rows). Where either side
    falls into two modes there is no pooled interval (``stats.BIMODAL``); where only the cell
    does, each of its modes against the baseline's mean."""
    e = stats.ratio(_col(x, V.HEADLINE), _col(b, V.HEADLINE)) if b is not None else stats.EMPTY
    every = stats.every_pair(_col(x, V.HEADLINE), _col(b, V.HEADLINE)) if b is not None \
        else None
    g = claims.gate(cell, base) if b is not None else None
    bimodal = g == stats.TWO_MODES and e.value is not None
    if bimodal:
        e = stats.Estimate(e.value, None, None, e.n, stats.BIMODAL)
    out = _stem(stem, e) | {f"{stem}_interval": e.method, f"{stem}_gate": g,
                            f"{stem}_pairs_low": None if every is None else every[0],
                            f"{stem}_pairs_high": None if every is None else every[1]}
    base_mean = stats.mean(_col(b, V.HEADLINE))
    for mode in ("slow_mode", "fast_mode"):
        alone = base is None or not stats.flag(base.get("bimodal"))
        v = stats.finite(cell.get(mode)) if bimodal and alone else None
        out[f"{stem}_{mode}"] = v / base_mean if v is not None and base_mean else None
    return out


def _speed(x, b, cell, base) -> dict:
    row = _throughput_ratio("speedup", x, b, cell, base)
    c = stats.gated(stats.claim(stats.from_row(row, "speedup"),
                                claims.pairs(row, "speedup")), row["speedup_gate"])
    return row | {"faster": stats.is_faster(c), "slower": stats.is_slower(c)}


def _against_bf16(r, runs, key, cells) -> dict:
    """An FP8 mode against the mode it replaces (``V.FP8_BASELINE``) at the same setting: the
    question an engineer asks of FP8, and the only one it is judged by."""
    bkey = key[:-1] + (V.FP8_BASELINE,)
    b = runs.get(bkey) if str(r["precision"]) in claims.FP8 else None
    return _throughput_ratio("bf16_speedup", runs.get(key), b, r,
                             cells.get(tuple(map(str, bkey))) if b is not None else None)


def _gain(x, p, runs) -> dict:
    gain = stats.ratio(_col(x, V.HEADLINE), _col(runs.get(tuple(p[k] for k in V.CELL_KEYS)),
                                                  V.HEADLINE)) if p is not None else stats.EMPTY
    return {"gain": gain.value, "gain_low": gain.low, "gain_high": gain.high,
            "gain_n": gain.n, "gain_interval": gain.method,
            "plain_experiment": None if p is None else p["experiment"],
            "plain_batch_size": None if p is None else p["batch_size"],
            "plain_workload_params": None if p is None else p.get("workload_params"),
            "plain_model_config": None if p is None else p.get("model_config"),
            **{f"plain_{a}": None if p is None else p[a] for a in V.AXIS_NAMES}}


def _eager_gain(r, x, p, runs) -> dict:
    """The cell against its experiment's plain amp-bf16 eager cell (``EAGER_STEM``): what the
    execution knobs add to the plain mixed-precision script; none for that cell itself or
    where its experiment has none."""
    own = p is not None and p["experiment"] == r["experiment"] and cell_key(p) != cell_key(r)
    e = stats.ratio(_col(x, V.HEADLINE), _col(runs.get(tuple(p[k] for k in V.CELL_KEYS)),
                                               V.HEADLINE)) if own else stats.EMPTY
    return _stem(EAGER_STEM, e) | {f"{EAGER_STEM}_interval": e.method if own else None,
                                   f"{EAGER_STEM}_batch_size": p["batch_size"] if own else None}


# the ratio to the experiment's plain amp-bf16 eager cell (``_eager_gain``)
EAGER_STEM = "eager_bf16_gain"
EAGER_PRECISION = "amp-bf16"


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


def _judged(row: dict) -> dict:
    """The cell's one judgement (``claims.judgement``): its claim, and how it was decided."""
    j = claims.judgement(row)
    return {"claim": None if j is None else j.claim,
            "decided_by": None if j is None else j.decided_by}


def speedup(metrics: pd.DataFrame, summary: pd.DataFrame,
            interleaved: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each cell against fp32 at the same setting (``V.BASELINE_KEYS`` equal): the ratio of
    mean throughputs with its interval (``stats.ratio``), the range of its pairs of runs and
    why the repeats cannot decide it where they cannot (``claims.gate``), the gain over the
    plain fp32 baseline, the ratios of memory and steady energy per sample, the warm-up as
    summarised, the accuracy difference paired by seed, for an FP8 mode the same ratio to
    amp-bf16 at the same setting, the interleaved comparison's ratios where ``interleaved``
    (interleaved.csv) has them (``claims.attach_interleaved``), and the claim of the cell's
    one judgement (``claims.judgement``)."""
    m = order(metrics)
    runs = runs_by_cell(m[m["status"] == V.OK])
    plain = plain_baselines(summary)
    eager = plain_baselines(summary, EAGER_PRECISION)
    cells = {cell_key(r): r for _, r in order(summary).iterrows()}
    rows = []
    for _, r in summary.iterrows():
        key = tuple(r[k] for k in V.CELL_KEYS)
        bkey = key[:-1] + (V.BASELINE,)
        x, b = runs.get(key), runs.get(bkey)
        row = {k: r[k] for k in V.CELL_KEYS} | {
            "status": r["status"], "repeats_ok": r["repeats_ok"],
            "baseline_repeats_ok": 0 if b is None else len(b),
            V.HEADLINE: r.get(V.HEADLINE), TOKENS: r.get(TOKENS),
            "max_memory_allocated_bytes": r.get("max_memory_allocated_bytes")}
        row |= _speed(x, b, r, cells.get(tuple(map(str, bkey))) if b is not None else None)
        row |= _gain(x, plain_for(plain, r), runs)
        row |= _eager_gain(r, x, plain_for(eager, r), runs)
        row |= _against_bf16(r, runs, key, cells) | _ratios(x, b) | _accuracy(x, b)
        rows.append(row | {c: r.get(c) for c in CARRIED})
    out = claims.attach_interleaved(pd.DataFrame(rows), interleaved)
    judged = [_judged(r) for _, r in out.iterrows()]
    return out.assign(claim=[j["claim"] for j in judged],
                      decided_by=[j["decided_by"] for j in judged])
