"""Interleaved comparisons -> tables: every segment of every round (``rounds``), and each arm's
throughput against each baseline arm as a paired ratio (``ratios``).

A round's segments ran back to back in one process, so their ratio is free of the host's drift
between rounds; ``stats.paired_ratio`` pools the per-round ratios (their median, a bootstrap 95%
interval of it). The baselines are ``vocabulary.INTERLEAVED_BASELINES`` that are arms of the
comparison: every arm against fp32 (the speedup question), and against tf32 and amp-bf16 (the
mode a reduced-precision mode replaces). Reads interleaved records, writes frames; nothing
rendered.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import record as R
from .. import resultset as RS
from .. import stats
from .. import vocabulary as V

KEYS = ("run", "experiment", "workload", "data", "batch_size", *V.AXIS_NAMES)
ROUND_COLUMNS = [*KEYS, "setting", "round", "position", "precision", "steps", "samples",
                 "seconds", "throughput_samples_per_s", "host_probe_ops_per_s",
                 "round_host_probe_ops_per_s", "record"]
RATIO_COLUMNS = [*KEYS, "setting", "precision", "baseline", "ratio", "ratio_low", "ratio_high",
                 "ratio_n", "ratio_interval", "throughput_median", "throughput_cv",
                 "baseline_throughput_median", "rounds", "training_cpu", "status",
                 "status_reason", "git_commit", "timestamp_utc", "record"]


def load(paths) -> list[dict]:
    """Read and validate every interleaved record; the first bad one stops everything, named."""
    return [R.read(p, R.INTERLEAVED) | {"_path": str(p)} for p in paths]


def _keys(r: dict) -> dict:
    s = RS.setting(r)
    return {"run": r["run"], "experiment": r["experiment"], "workload": r["workload"],
            "data": s["data"], "batch_size": r["batch_size"],
            **{a: s[a] for a in V.AXIS_NAMES}, "setting": r["setting"]}


def rounds(records: list[dict]) -> pd.DataFrame:
    """One row per segment: which round, where in its order, the arm, what it timed."""
    rows = []
    for r in records:
        keys = _keys(r)
        for entry in r["rounds"]:
            for seg in entry["segments"]:
                rows.append(keys | {
                    "round": entry["round"], "position": seg["position"],
                    "precision": seg["precision"], "steps": seg["steps"],
                    "samples": seg["samples"], "seconds": seg["seconds"],
                    "throughput_samples_per_s": seg["samples"] / seg["seconds"],
                    # the segment's own probe (records made before it existed: the round's)
                    "host_probe_ops_per_s": seg.get("host_probe_ops_per_s",
                                                    entry["host_probe_ops_per_s"]),
                    "round_host_probe_ops_per_s": entry["host_probe_ops_per_s"],
                    "record": r.get("_path")})
    return pd.DataFrame(rows, columns=ROUND_COLUMNS)


def per_round(record: dict) -> dict[str, np.ndarray]:
    """Each arm's throughput in every round (NaN where it has no segment), round order."""
    arms = {a["precision"] for a in record["arms"] if a["status"] == V.OK}
    out = {p: np.full(len(record["rounds"]), np.nan) for p in arms}
    for i, entry in enumerate(record["rounds"]):
        for seg in entry["segments"]:
            if seg["precision"] in out:
                out[seg["precision"]][i] = seg["samples"] / seg["seconds"]
    return out


def ratios(records: list[dict]) -> pd.DataFrame:
    """One row per arm and baseline arm: the paired ratio arm / baseline over the rounds."""
    rows = []
    for r in records:
        keys = _keys(r)
        thr = per_round(r)
        status = {a["precision"]: (a["status"], a["status_reason"]) for a in r["arms"]}
        cpu = ((r.get("placement") or {}).get("training_core") or {}).get("cpu")
        env = r.get("environment") or {}
        made = {"git_commit": env.get("git_commit"), "timestamp_utc": env.get("timestamp_utc")}
        for base in V.INTERLEAVED_BASELINES:
            if base not in status or status[base][0] != V.OK:   # a baseline that did not run
                continue
            for arm in r["precisions"]:
                if arm == base:
                    continue
                st, why = status[arm]
                e = stats.paired_ratio(thr[arm], thr[base]) if arm in thr and base in thr \
                    else stats.EMPTY
                own = thr.get(arm, np.array([]))
                rows.append(keys | {
                    "precision": arm, "baseline": base, **e.as_dict("ratio"),
                    "ratio_interval": e.method,
                    "throughput_median": stats.median(own),
                    "throughput_cv": stats.cv(own),
                    "baseline_throughput_median": stats.median(thr.get(base, [])),
                    "rounds": len(r["rounds"]), "training_cpu": cpu, "status": st,
                    "status_reason": why, **made, "record": r.get("_path")})
    return pd.DataFrame(rows, columns=RATIO_COLUMNS)
