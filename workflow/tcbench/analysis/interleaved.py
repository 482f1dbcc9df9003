"""Interleaved comparisons -> tables: every segment of every round (``rounds``), each process's
paired ratios (``processes``), and each arm's ratio against each baseline arm at the highest
level measured (``ratios``).

A round's segments ran back to back in one process, so their ratio is free of the host's drift
between rounds; ``stats.process_ratio`` pools one process's per-round ratios (their median, a
block-bootstrap 95% interval of it). A setting's independent processes (its replicates, the
records ``{setting}_r{k}.json``; a record made before replicates is replicate 1) are pooled by
``stats.replicated_ratio``: the geometric mean of their medians, a t interval across them from
three processes on. The baselines are ``vocabulary.INTERLEAVED_BASELINES`` that are arms of the
comparison: every arm against fp32 (the speedup question), and against tf32 and amp-bf16 (the
mode a reduced-precision mode replaces). Reads interleaved records, writes frames; nothing
rendered.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import record as R
from .. import resultset
from .. import stats
from .. import vocabulary as V

KEYS = ("run", "experiment", "workload", "data", "batch_size", *V.AXIS_NAMES)
ROUND_COLUMNS = [*KEYS, "setting", "replicate", "round", "position", "precision", "steps",
                 "samples", "seconds", "throughput_samples_per_s", "host_probe_ops_per_s",
                 "round_host_probe_ops_per_s", "record"]
_RATIO = ["ratio", "ratio_low", "ratio_high", "ratio_n", "ratio_interval"]
_MADE = ["training_cpu", "status", "status_reason", "git_commit", "timestamp_utc", "record"]
# one row per process, arm and baseline: the process's own paired ratio and how its interval
# was resampled (``rounds``: the process's rounds; ``ratio_n``: those with both arms)
PROCESS_COLUMNS = [*KEYS, "setting", "replicate", "precision", "baseline", *_RATIO,
                   "block_length", "lag1_autocorrelation", "rounds", "throughput_median",
                   "throughput_cv", "baseline_throughput_median", *_MADE]
# one row per setting, arm and baseline: the ratio at the highest level measured.
# ``processes``: the processes whose arm and baseline ran (ok); ``rounds``: each one's rounds
# (the fewest, where they differ); the spread of their log medians (``between_process_sd_log``)
# against the root mean within-process variance their intervals imply
# (``within_process_sd_log``), and which is larger (``dominant_level``); ``training_cpu``,
# ``git_commit`` and ``record``: each process's, joined by ';'; ``timestamp_utc``: the latest
RATIO_COLUMNS = [*KEYS, "setting", "precision", "baseline", *_RATIO, "processes", "rounds",
                 "dominant_level", "between_process_sd_log", "within_process_sd_log",
                 "throughput_median", "throughput_cv", "baseline_throughput_median", *_MADE]


def load(paths) -> list[dict]:
    """Read and validate every interleaved record; the first bad one stops everything, named."""
    return [R.read(p, R.INTERLEAVED) | {"_path": str(p)} for p in paths]


def replicate(r: dict) -> int:
    """Which of its setting's processes a record is (1 for one made before replicates)."""
    return int(r.get("replicate") or 1)


def replicates(records: list[dict]) -> dict[tuple, list[dict]]:
    """The records of each setting, (run, experiment, setting) -> its processes by replicate,
    in the order the settings first appear. Two records of one replicate are an error that
    names both: a copied or renamed file would count one process twice."""
    groups: dict[tuple, dict[int, dict]] = {}
    for r in records:
        key = (r["run"], r["experiment"], r["setting"])
        k = replicate(r)
        seen = groups.setdefault(key, {})
        if k in seen:
            raise R.RecordError(
                f"{r.get('_path')} and {seen[k].get('_path')} are both replicate {k} of "
                f"{key[1]}/{key[2]} (run {key[0]}): remove the one that is a copy (a record "
                f"made before replicates is replicate 1, as {key[2]}_r1.json)")
        seen[k] = r
    return {key: [seen[k] for k in sorted(seen)] for key, seen in groups.items()}


def _keys(r: dict) -> dict:
    s = resultset.setting(r)
    return {"run": r["run"], "experiment": r["experiment"], "workload": r["workload"],
            "data": s["data"], "batch_size": r["batch_size"],
            **{a: s[a] for a in V.AXIS_NAMES}, "setting": r["setting"]}


def rounds(records: list[dict]) -> pd.DataFrame:
    """One row per segment: which process and round, where in its order, the arm, what it
    timed."""
    rows = []
    for r in records:
        keys = _keys(r) | {"replicate": replicate(r)}
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


def _pairs(r: dict):
    """(arm, baseline, arm's status, reason) of one process: every arm against every
    baseline of ``V.INTERLEAVED_BASELINES`` that ran in it (ok)."""
    status = {a["precision"]: (a["status"], a["status_reason"]) for a in r["arms"]}
    for base in V.INTERLEAVED_BASELINES:
        if base not in status or status[base][0] != V.OK:   # a baseline that did not run
            continue
        for arm in r["precisions"]:
            if arm != base:
                yield arm, base, *status[arm]


def _made(r: dict) -> dict:
    env = r.get("environment") or {}
    return {"training_cpu": ((r.get("placement") or {}).get("training_core") or {}).get("cpu"),
            "git_commit": env.get("git_commit"), "timestamp_utc": env.get("timestamp_utc"),
            "record": r.get("_path")}


def _process_rows(r: dict) -> list[dict]:
    """One process's rows (``PROCESS_COLUMNS``), each with its arm's and baseline's per-round
    throughputs under "_arm" and "_base" (absent where that arm did not run)."""
    keys, thr, made = _keys(r) | {"replicate": replicate(r)}, per_round(r), _made(r)
    rows = []
    for arm, base, st, why in _pairs(r):
        p = stats.process_ratio(thr[arm], thr[base]) if arm in thr \
            else stats.Process(stats.EMPTY, None, None, 0)
        own = thr.get(arm, np.array([]))
        rows.append(keys | {
            "precision": arm, "baseline": base, **p.estimate.as_dict("ratio"),
            "ratio_interval": p.estimate.method, "block_length": p.block,
            "lag1_autocorrelation": p.lag1, "rounds": len(r["rounds"]),
            "throughput_median": stats.median(own), "throughput_cv": stats.cv(own),
            "baseline_throughput_median": stats.median(thr[base]), "status": st,
            "status_reason": why, **made, "_estimate": p.estimate, "_arm": own,
            "_base": thr[base]})
    return rows


def processes(records: list[dict]) -> pd.DataFrame:
    """One row per process, arm and baseline: that process's own paired ratio, its block
    length and lag-1 autocorrelation (``PROCESS_COLUMNS``)."""
    rows = [row for r in records for row in _process_rows(r)]
    return pd.DataFrame(rows, columns=PROCESS_COLUMNS)


def _joined(values) -> str | None:
    said = [str(v) for v in values if v is not None and str(v) != ""]
    return ";".join(dict.fromkeys(said)) if said else None


def _status(rows: list[dict]) -> tuple[str, str | None]:
    """The arm's status over its processes: ok where any ran, with why the others did not."""
    failed = [r for r in rows if r["status"] != V.OK]
    if len(failed) == len(rows):
        return rows[0]["status"], rows[0]["status_reason"]
    why = "; ".join(f"process {r['replicate']}: {r['status']}"
                    + (f": {r['status_reason']}" if r["status_reason"] else "") for r in failed)
    return V.OK, why or None


def _setting_row(rows: list[dict]) -> dict:
    """One setting's arm against one baseline, over its processes' rows (replicate order)."""
    ok = [r for r in rows if r["status"] == V.OK and r["ratio"] is not None]
    rep = stats.replicated_ratio([r["_estimate"] for r in ok])
    e = rep.estimate
    own = np.concatenate([r["_arm"] for r in ok]) if ok else np.array([])
    base = np.concatenate([r["_base"] for r in ok]) if ok else np.array([])
    st, why = _status(rows)
    return {k: rows[0][k] for k in (*KEYS, "setting", "precision", "baseline")} | {
        **e.as_dict("ratio"), "ratio_interval": e.method, "processes": rep.processes,
        "rounds": min(r["rounds"] for r in (ok or rows)), "dominant_level": rep.dominant,
        "between_process_sd_log": rep.between_sd, "within_process_sd_log": rep.within_sd,
        "throughput_median": stats.median(own), "throughput_cv": stats.cv(own),
        "baseline_throughput_median": stats.median(base),
        "training_cpu": _joined(r["training_cpu"] for r in rows), "status": st,
        "status_reason": why, "git_commit": _joined(r["git_commit"] for r in rows),
        "timestamp_utc": max((str(r["timestamp_utc"]) for r in rows
                              if r["timestamp_utc"]), default=None),
        "record": _joined(r["record"] for r in rows)}


def _by_setting(records: list[dict]) -> list[list[list[dict]]]:
    """Per setting, per arm and baseline, its processes' rows (replicate order)."""
    out = []
    for group in replicates(records).values():
        pairs: dict[tuple, list[dict]] = {}
        for r in group:
            for row in _process_rows(r):
                pairs.setdefault((row["precision"], row["baseline"]), []).append(row)
        out.append(list(pairs.values()))
    return out


def _ratios(settings: list[list[list[dict]]]) -> pd.DataFrame:
    return pd.DataFrame([_setting_row(rows) for pairs in settings for rows in pairs],
                        columns=RATIO_COLUMNS)


def ratios(records: list[dict]) -> pd.DataFrame:
    """One row per setting, arm and baseline arm: the ratio arm / baseline at the highest
    level measured (``stats.replicated_ratio`` over the setting's processes in which the
    baseline ran; one process: its own rounds' interval), ``RATIO_COLUMNS``."""
    return _ratios(_by_setting(records))


def tables(records: list[dict]) -> dict[str, pd.DataFrame]:
    """The comparisons' three tables, by ``V.SET_TABLES`` key, each process's bootstrap done
    once: ``ratios``, ``processes`` and ``rounds``."""
    settings = _by_setting(records)
    rows = [row for pairs in settings for rs in pairs for row in rs]
    return {"interleaved": _ratios(settings),
            "interleaved_processes": pd.DataFrame(rows, columns=PROCESS_COLUMNS),
            "interleaved_rounds": rounds(records)}
