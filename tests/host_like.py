"""Planted tables of a host-bound study, in the columns the job half writes for it
(metrics.csv's host probe, interleaved.csv and interleaved_rounds.csv): a recipe whose fp32
keeps the GPU busy and whose reduced modes follow the host's speed, and an interleaved
comparison of its four arms over rounds in which the host drifts. The numbers are made up;
their shape follows the H200's amp_recipe."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tcbench import resultset
from tcbench import stats
from tcbench import vocabulary as V

SETTING = {"run": "host-like", "experiment": "amp_recipe", "workload": "amp_recipe",
           "data": "synthetic", "batch_size": 512, "model": "amp_recipe",
           "loader": "synthetic", "memory_format": "contiguous", "compile": "off",
           "cuda_graphs": "off", "cudnn_benchmark": "off", "fused_optimizer": "off"}
# per mode: throughput at a probe of 300k ops/s, how much of the host's speed it follows,
# the busy share of its profiled repeat
MODES = {"fp32": (162e3, 0.0, 0.99), "tf32": (520e3, 1.0, 0.84),
         "amp-fp16": (320e3, 1.0, 0.53), "amp-bf16": (420e3, 1.0, 0.50)}
PROBE = 300e3


def _follow(base: float, follows: float, probe: float) -> float:
    return base * (probe / PROBE) ** follows


def metrics(repeats: int = 5, seed: int = 0, with_probe: bool = True) -> pd.DataFrame:
    """One row per record; the host probe before and after each timed window (where
    ``with_probe``), the busy share on the profiled repeat (1) only."""
    rng = np.random.default_rng(seed)
    rows = []
    for p, (base, follows, busy) in MODES.items():
        for rep in range(1, repeats + 1):
            before = rng.uniform(180e3, 350e3)
            after = before * rng.uniform(0.95, 1.05)
            probe = (before + after) / 2
            thr = _follow(base, follows, probe) * (1 + 0.01 * rng.standard_normal())
            rows.append({**SETTING, "cell": f"{p}_bs512_r{rep}", "precision": p,
                         "repeat": rep, "seed": rep - 1, "status": V.OK,
                         "throughput_samples_per_s": thr,
                         "gpu_busy_share": busy if rep == 1 else None,
                         **({"host_probe_before_ops_per_s": before,
                             "host_probe_after_ops_per_s": after,
                             "host_probe_ops_per_s": probe,
                             "host_probe_change": after / before - 1} if with_probe else {})})
    return resultset.order(pd.DataFrame(rows))


def rounds(n: int = 24, seed: int = 1, setting: dict | None = None) -> pd.DataFrame:
    """interleaved_rounds.csv: every arm once a round, the order rotated, the host's speed
    drifting from round to round (all arms of a round alike)."""
    rng = np.random.default_rng(seed)
    setting = setting or SETTING
    arms = list(MODES)
    out = []
    for r in range(n):
        probe = PROBE * (1 + 0.25 * np.sin(r / 3)) * (1 + 0.02 * rng.standard_normal())
        for pos in range(len(arms)):
            p = arms[(r + pos) % len(arms)]
            base, follows, _busy = MODES[p]
            thr = _follow(base, follows, probe) * (1 + 0.01 * rng.standard_normal())
            steps, bs = 100, setting["batch_size"]
            out.append({**setting, "round": r, "position": pos, "precision": p,
                        "steps": steps, "samples": steps * bs, "seconds": steps * bs / thr,
                        "throughput_samples_per_s": thr, "host_probe_ops_per_s": probe})
    return pd.DataFrame(out)


def interleaved(rounds_: pd.DataFrame) -> pd.DataFrame:
    """interleaved.csv from the rounds: one row per arm and baseline (each of
    ``V.INTERLEAVED_BASELINES`` that is an arm, not the arm itself), the paired ratio as
    ``stats.paired_ratio`` makes it."""
    out = []
    keys = [k for k in V.BASELINE_KEYS]
    for key, g in rounds_.groupby(keys, sort=False):
        thr = g.pivot(index="round", columns="precision", values="throughput_samples_per_s")
        for arm in thr.columns:
            for base in V.INTERLEAVED_BASELINES:
                if base == arm or base not in thr.columns:
                    continue
                e = stats.paired_ratio(thr[arm], thr[base])
                out.append({**dict(zip(keys, key)), "precision": arm, "baseline": base,
                            "ratio": e.value, "ratio_low": e.low, "ratio_high": e.high,
                            "ratio_n": e.n, "ratio_interval": e.method,
                            "throughput_median": float(thr[arm].median()),
                            "throughput_cv": float(thr[arm].std() / thr[arm].mean()),
                            "baseline_throughput_median": float(thr[base].median()),
                            "rounds": len(thr), "training_cpu": 9, "status": V.OK,
                            "record": f"interleaved/{key[1]}/bs512.json"})
    return pd.DataFrame(out)


def write(out: Path) -> dict[str, Path]:
    """metrics.csv, interleaved.csv and interleaved_rounds.csv under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    r = rounds()
    paths = {"metrics": out / "metrics.csv", "interleaved": out / "interleaved.csv",
             "interleaved_rounds": out / "interleaved_rounds.csv"}
    resultset.write_csv(metrics(), paths["metrics"])
    resultset.write_csv(interleaved(r), paths["interleaved"])
    resultset.write_csv(r, paths["interleaved_rounds"])
    return paths
