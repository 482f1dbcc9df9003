"""The sets a comparison reads, as frames: a result set's ``metrics.csv`` and a published
reference set (``config/reference/*.csv``), each checked before anything is drawn, combined
into one long table with a label per set.

A reference CSV has one row per run (or per repeat) with the columns ``REQUIRED`` (and any of
``OPTIONAL``): what was run, in tcbench's terms, what it measured, and where it was published.
Reference sets are marked everywhere: a double dagger (``V.REFERENCE_MARK``) after the set's name.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import vocabulary as V
from .resultset import fill_axes

REQUIRED = ["run", "experiment", "workload", "precision", "batch_size", "loader", "status",
            "total_time_s", "max_memory_allocated_bytes", "device_name", "source"]

OPTIONAL = ["repeat", "seed", *(a for a in V.AXIS_NAMES if a != "loader"), "data",
            "status_reason", "label", V.HEADLINE, "compute_capability", "torch_version",
            "driver_version", "cuda_runtime_version", "source_url", "source_file", "notes"]

DAGGER = V.REFERENCE_MARK   # after a published set's name, everywhere


class CompareError(ValueError):
    """An input that cannot be compared; the message names the file, and the row or column."""


def short_name(device: str) -> str:
    return str(device).removeprefix("NVIDIA ").strip() or str(device)


def load_run(path: Path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise CompareError(f"{path}: no such result set table (run the study, or commit "
                           f"results/<run>/metrics.csv)")
    df = pd.read_csv(path)
    missing = [c for c in REQUIRED if c not in df and c != "source"]
    if missing:
        raise CompareError(f"{path}: not a tcbench metrics.csv, missing {', '.join(missing)}")
    df = fill_axes(df)
    device = df["device_name"].dropna().astype(str)
    df["kind"] = "measured"
    df["source"] = f"measured by tcbench, {path.parent.as_posix()}"
    df["label"] = short_name(device.iloc[0]) if len(device) else str(df["run"].iloc[0])
    df["notes"] = None
    return df


def load_reference(path: Path) -> pd.DataFrame:
    """A published set, checked column by column and row by row before anything is drawn."""
    path = Path(path)
    if not path.exists():
        raise CompareError(f"{path}: reference file not found")
    df = pd.read_csv(path, comment="#", skipinitialspace=True)
    missing = [c for c in REQUIRED if c not in df]
    if missing:
        raise CompareError(f"{path}: missing column(s) {', '.join(missing)}; a reference "
                           f"needs {', '.join(REQUIRED)}")
    unknown = sorted(set(df) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise CompareError(f"{path}: unknown column(s) {', '.join(unknown)}; optional columns "
                           f"are {', '.join(OPTIONAL)}")
    if df.empty:
        raise CompareError(f"{path}: no rows")
    for i, r in df.iterrows():
        where = (f"{path}, data row {i + 1} ({r['experiment']}, {r['precision']}, "
                 f"batch {r['batch_size']})")
        if r["precision"] not in V.PRECISIONS:
            raise CompareError(f"{where}: precision={r['precision']!r}; choose one of "
                               f"{', '.join(V.PRECISIONS)}")
        if r["status"] not in V.STATUS_RANK:
            raise CompareError(f"{where}: status={r['status']!r}; choose one of "
                               f"{', '.join(V.STATUSES)}")
        bs = pd.to_numeric(r["batch_size"], errors="coerce")
        if pd.isna(bs) or bs < 1 or bs != int(bs):
            raise CompareError(f"{where}: batch_size={r['batch_size']!r} is not a positive "
                               f"integer")
        for col in ("total_time_s", "max_memory_allocated_bytes"):
            v = pd.to_numeric(r[col], errors="coerce")
            if not pd.isna(r[col]) and (pd.isna(v) or v <= 0):
                raise CompareError(f"{where}: {col}={r[col]!r} is not a positive number")
        if r["status"] == V.OK and pd.isna(r["total_time_s"]):
            raise CompareError(f"{where}: status ok but no total_time_s")
    df["batch_size"] = df["batch_size"].astype(int)
    df["repeat"] = df["repeat"].fillna(1) if "repeat" in df else 1
    df = fill_axes(df)
    df["kind"] = "reference"
    if "label" not in df:
        df["label"] = df["device_name"].map(short_name)
    df["label"] = df["label"].fillna(df["device_name"].map(short_name)).astype(str) + " " + DAGGER
    return df


def combine(runs: list[pd.DataFrame], references: list[pd.DataFrame]) -> pd.DataFrame:
    """All rows, references first (they came first in time); labels made unique."""
    df = pd.concat([*references, *runs], ignore_index=True)
    sets = df.drop_duplicates(["kind", "label", "run"])["run"]
    if sets.duplicated().any():
        raise CompareError(f"two compared sets share the run name {sets[sets.duplicated()].iloc[0]!r}"
                           "; a set's run name must be its own")
    labels = df.drop_duplicates("run")[["run", "label"]]
    dup = labels["label"].duplicated(keep=False)
    fixed = {r: f"{lab} ({r})" if d else lab for (r, lab), d in
             zip(labels.itertuples(index=False), dup)}
    df["label"] = df["run"].map(fixed)
    df["set_order"] = df["run"].map({r: i for i, r in enumerate(dict.fromkeys(df["run"]))})
    return df
