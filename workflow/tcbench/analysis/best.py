"""Per experiment and model, the fastest configuration, judged fairly (best.csv).

Two figures per row, never one in place of the other:

* the **fair** one: the fastest cell against its one baseline at the same setting
  (``claims.judgement``: fp32, or amp-bf16 first for an FP8 mode), with the claim its
  interval allows; it isolates what precision did;
* the **overall** gain over the plain fp32 baseline (``speedup.plain_for``: its own
  experiment's plain fp32 cell where it has one, else one of the same workload shape; none
  for a shape no plain fp32 cell ran), with every axis and workload parameter that changed
  besides precision (``changed_axes``: batch size, compile, memory format, a schedule's
  length, ...), since that ratio credits them all.
"""

from __future__ import annotations

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..resultset import cell_key, order, params_of
from . import claims
from .speedup import EAGER_STEM, PLAIN_KEYS, WARMUP_COLUMNS, plain_baselines, plain_for
from .throughput import TOKENS

TOP_COLUMNS = (V.HEADLINE, f"{V.HEADLINE}_low", f"{V.HEADLINE}_high", TOKENS, f"{TOKENS}_low",
               f"{TOKENS}_high", *WARMUP_COLUMNS,
               "max_memory_allocated_bytes", "final_loss", "test_accuracy", "tensor_core_share",
               "matmul_share", "gpu_busy_share", "data_wait_share", "input_bound",
               "uncounted_compile_n", "uncounted_compile_repeats", "workload_params",
               "model_config")
# what holds a fastest cell back (reports.holdback): its MFU against its mode's roof, the
# step, and its kernel profile (shares by class, the longest kernels)
PROFILE_COLUMNS = ("mfu", "mfu_low", "mfu_high", "mfu_n", "ceiling_tflops", "achieved_tflops",
                   "step_time_median_s", "top_kernels", "matmul_share_bound",
                   "kernel_classes_from", "fp8_gemm_share", "fp8_scaling_share")
GAIN_COLUMNS = ("gain", "gain_low", "gain_high", "gain_n", "gain_interval",
                "speedup", "speedup_low", "speedup_high", "speedup_n",
                *(f"{EAGER_STEM}{s}" for s in ("", "_low", "_high", "_n", "_interval",
                                               "_batch_size")))
CHANGES = ("batch_size", *V.AXIS_NAMES)
# a host-bound group whose interleaved comparison measured its arms but found none faster
# than all the others
NOT_SEPARATED = "not judged: its interleaved comparison shows no arm faster than every other"


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
    out["baseline_workload_params"] = None if b is None else b.get("workload_params")
    out["baseline_model_config"] = None if b is None else b.get("model_config")
    mine, theirs = params_of(top.get("workload_params")), \
        params_of(None if b is None else b.get("workload_params"))
    out["changed_axes"] = None if b is None else ",".join(
        [k for k in CHANGES if str(b[k]) != str(top[k])]
        + [k for k in sorted(set(mine) | set(theirs)) if mine and theirs
           and mine.get(k) != theirs.get(k)])
    return out


def _other_shape(summary: pd.DataFrame, top) -> str | None:
    """Why a cell without a plain fp32 baseline has none where its workload has one at another
    shape: that cell's experiment and its values of the parameters they differ in
    ("amp_recipe's has in_size 4096, out_size 4096"); None where the workload has no plain
    fp32 cell at all."""
    same = summary["precision"].astype(str) == V.BASELINE
    for k in (*PLAIN_KEYS, *V.EAGER):
        same &= summary[k].astype(str) == str(V.EAGER.get(k, top[k]))
    for _, b in summary[same & (summary["repeats_ok"] > 0)].iterrows():
        mine, theirs = params_of(top.get("workload_params")), params_of(b.get("workload_params"))
        differ = [k for k in sorted(set(mine) | set(theirs))
                  if k not in V.SCHEDULE_PARAMS and mine.get(k) != theirs.get(k)]
        if differ:
            return f"{b['experiment']}'s has " + ", ".join(
                f"{k} {theirs.get(k, 'unset')}" for k in differ)
    return None


def _knobs_study(g: pd.DataFrame, experiment: pd.DataFrame) -> bool:
    """Whether a group asks how far precision and execution knobs together take a workload:
    its ``experiment`` ran a plain fp32 cell (``V.EAGER`` knobs), and the group reduced
    cells, none at the setting of an fp32 cell of the group (their gains are over the plain
    fp32 baseline, not over fp32 at their own setting)."""
    plain = experiment["precision"].astype(str) == V.BASELINE
    for k, v in V.EAGER.items():
        plain &= experiment[k].astype(str) == v
    if not plain.any():
        return False
    keys = [k for k in V.BASELINE_KEYS if k in g]
    fp32 = g["precision"].astype(str) == V.BASELINE
    settings = {tuple(map(str, r[keys])) for _, r in g[fp32].iterrows()}
    return bool((~fp32).any()) and not any(tuple(map(str, r[keys])) in settings
                                           for _, r in g[~fp32].iterrows())


def _fair(gain_row) -> dict:
    """The fastest cell against its one baseline at the same setting, and the claim."""
    j = claims.judgement(gain_row) if gain_row is not None else None
    if j is None:
        return {"fair_baseline": None, "fair_claim": None}
    e = j.estimate
    out = {"fair_baseline": j.baseline, "fair_ratio": e.value, "fair_low": e.low,
           "fair_high": e.high, "fair_n": e.n, "fair_interval": e.method,
           "fair_claim": j.claim}
    # an FP8 cell's ratio to fp32 too, by the same estimator as its judged one where the
    # interleaved comparison measured both (a per-process fp32 ratio beside an interleaved
    # bf16 one would set two estimators side by side)
    f = claims.against(gain_row, V.BASELINE) if j.baseline != V.BASELINE else None
    if f is not None and f.decided_by == j.decided_by:
        out |= f.estimate.as_dict("fair_fp32") | {"fair_fp32_interval": f.estimate.method}
    return out


def _gain_claim(gain_row) -> str | None:
    if gain_row is None or pd.isna(gain_row.get("gain")):
        return None
    return stats.gated(stats.claim(stats.from_row(gain_row, "gain")), claims.gate(gain_row, None))


def _beats(a, b, gains) -> bool | None:
    """Whether ``a``'s interleaved comparison shows it faster than ``b`` (the ratio a / b, or
    b / a, has an interval wholly on a's side of 1); None where it measured neither ratio."""
    ra, rb = gains.get(cell_key(a)), gains.get(cell_key(b))
    stem = claims.INTERLEAVED_STEMS.get(str(b["precision"]))
    e = stats.from_row(ra, stem) if stem and ra is not None else stats.EMPTY
    if e.value is not None:
        return e.low is not None and e.low > 1
    stem = claims.INTERLEAVED_STEMS.get(str(a["precision"]))
    e = stats.from_row(rb, stem) if stem and rb is not None else stats.EMPTY
    if e.value is not None:
        return e.high is not None and e.high < 1
    return None


def _fastest(g: pd.DataFrame, gains) -> tuple[pd.Series, str | None, str]:
    """The fastest cell of an experiment's group, why its own repeats cannot call it fastest
    (a gate, or None), and how it was found. The highest mean, unless the host set the pace
    and the group is one setting whose interleaved comparison shows one arm faster than every
    other: then that arm, decided by that comparison. A top cell of fewer than
    ``stats.MIN_CI_N`` runs stays the highest mean, but is not judged fastest."""
    top = g.loc[g[V.HEADLINE].astype(float).idxmax()]
    gate = claims.gate(top, None)
    if gate is None and len(g) > 1 and (stats.finite(top.get("repeats_ok")) or 0) < stats.MIN_CI_N:
        # a mean of one or two runs has no interval: it may top the others by chance
        return top, stats.FEW, claims.REPEATS
    one_setting = g[list(V.BASELINE_KEYS)].astype(str).drop_duplicates().shape[0] == 1
    if gate != stats.HOST_BOUND or not one_setting:
        return top, gate, claims.REPEATS
    cells = [r for _, r in g.sort_values(V.HEADLINE, ascending=False).iterrows()]
    for c in cells:
        if all(_beats(c, o, gains) for o in cells if o["precision"] != c["precision"]):
            return c, None, claims.INTERLEAVED
    if any(_beats(top, o, gains) is not None for o in cells if o["precision"] != top["precision"]):
        return top, NOT_SEPARATED, claims.INTERLEAVED
    return top, gate, claims.REPEATS


def _named_apart(r, top) -> str:
    """A cell by its mode and what else sets it apart from ``top``: batch size and axes where
    they differ ("fp8-rowwise", "fp8-tensorwise, bs 8192")."""
    parts = [str(r["precision"])]
    parts += [f"bs {int(r['batch_size'])}"] if r["batch_size"] != top["batch_size"] else []
    parts += [V.axis(a).display(r[a]) for a in V.AXIS_NAMES
              if a != "model" and str(r[a]) != str(top[a])]
    return ", ".join(parts)


def _tied(g: pd.DataFrame, top, fastest_by: str) -> str | None:
    """The cells of the group the top cell's throughput cannot be told from (``stats.tied``:
    their intervals overlap), as "fp8-rowwise; bs 8192"; None where it is apart from every
    other, or was decided by an interleaved comparison."""
    if fastest_by != claims.REPEATS:
        return None
    e = stats.from_row(top, V.HEADLINE)
    names = [_named_apart(r, top) for _, r in g.iterrows() if cell_key(r) != cell_key(top)
             and stats.tied(stats.from_row(r, V.HEADLINE), e)
             and not claims.told_apart(r, top)]
    return "; ".join(names) or None


def _gain(gain, same_setting: bool) -> dict:
    """The overall gain over the plain fp32 baseline: where that baseline is fp32 at the very
    same setting and an interleaved comparison measured the pair, its paired ratio (the
    per-process one would carry the host's drift); else the per-process ratio of means."""
    out = {c: None if gain is None else gain.get(c) for c in GAIN_COLUMNS}
    il = stats.from_row(gain, claims.INTERLEAVED_STEMS[V.BASELINE]) \
        if gain is not None and same_setting else stats.EMPTY
    if il.value is None:
        return out | {"gain_claim": _gain_claim(gain)}
    return out | il.as_dict("gain") | {"gain_interval": il.method, "gain_claim": stats.claim(il)}


def best(summary: pd.DataFrame, speedup_table: pd.DataFrame) -> pd.DataFrame:
    """Per experiment and model, the fastest finished configuration (highest mean
    steady-state throughput, or where the host set the pace the arm its interleaved
    comparison shows fastest), its fair comparison and its overall gain (module doc)."""
    gains = {cell_key(r): r for _, r in order(speedup_table).iterrows()}
    plain = plain_baselines(summary)
    ok = summary[(summary["repeats_ok"] > 0)].dropna(subset=[V.HEADLINE])
    rows = []
    for (run, experiment, model), g in ok.groupby(["run", "experiment", "model"], sort=False,
                                                  observed=True):
        top, fastest_gate, fastest_by = _fastest(g, gains)
        gain = gains.get(cell_key(top))
        base = plain_for(plain, top)
        against = _baseline(base, top)
        against["baseline_other_shape"] = _other_shape(summary, top) if base is None else None
        same_setting = base is not None and base["experiment"] == top["experiment"] \
            and not against["changed_axes"]
        rows.append({
            "run": run, "experiment": experiment, "workload": top["workload"], "model": model,
            "setting_axes": ",".join(a.name for a in _shown(g, top)),
            **{k: top[k] for k in ("precision", *V.SETTING_KEYS, "data")},
            "repeats_ok": top["repeats_ok"],
            "reduced_ran": bool((g["precision"].astype(str) != V.BASELINE).any()),
            "knobs_study": _knobs_study(g, ok[ok["experiment"] == experiment]),
            **{c: top.get(c) for c in (*TOP_COLUMNS, *PROFILE_COLUMNS)},
            **_fair(gain),
            **_gain(gain, same_setting),
            # "fastest" is no claim where neither the top cell's own repeats nor its
            # interleaved comparison decide it
            "fastest_gate": fastest_gate, "fastest_by": fastest_by,
            "fastest_tied": _tied(g, top, fastest_by), **against})
    return pd.DataFrame(rows)
