"""The conditions a result set ran under, from its records (metrics.csv): how many GPUs and
hosts, how the jobs were placed on the CPUs, which ran beside other tcbench jobs, how their
processes started. A set whose records agree on all of these has nothing to disclose; one that
mixes them (or whose records predate a field) is said to, so that no reader takes a set of
three GPUs of two host types for "one H200".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .. import vocabulary as V

# how a record's process started (its ``process_start``), as a sentence names it
START_WORDS = {"fresh_interpreter": "fresh interpreters",
               "forked": "forked from a preloaded interpreter"}

@dataclass
class Conditions:
    """Counts of records per GPU, host, placement, neighbours and process start (each
    ``{value: records}``, largest first; ``None`` keys: records that do not say)."""

    records: int
    gpus: dict = field(default_factory=dict)
    hosts: dict = field(default_factory=dict)
    placements: dict = field(default_factory=dict)
    beside_others: int | None = None
    starts: dict = field(default_factory=dict)
    cells_across_gpus: int = 0
    # the experiments with a record that says nothing of its placement or process start
    undisclosed: tuple[str, ...] = ()

    @property
    def uniform(self) -> bool:
        return (len(self.gpus) <= 1 and len(self.hosts) <= 1 and not self.beside_others
                and set(self.placements) <= {"pinned"} and len(self.starts) <= 1
                and None not in self.starts)


def _counts(s: pd.Series) -> dict:
    return {(None if pd.isna(k) else k): int(v)
            for k, v in s.value_counts(dropna=False).items()}


def _host(df: pd.DataFrame) -> pd.Series:
    # one host name can stand for several machines (a container's "vm"): its CPUs tell them apart
    name = df["hostname"].astype(str) if "hostname" in df else pd.Series("?", index=df.index)
    if "cpu_count" in df:
        cpus = pd.to_numeric(df["cpu_count"], errors="coerce")
        name = name + cpus.map(lambda c: "" if pd.isna(c) else f" with {int(c)} CPUs")
    return name


def _col(df: pd.DataFrame, c: str) -> pd.Series:
    return df[c] if c in df else pd.Series([None] * len(df), index=df.index, dtype=object)


def conditions(metrics: pd.DataFrame) -> Conditions:
    """The conditions of the records that ran (status ok or diverged: they have a device)."""
    df = metrics[metrics["status"].isin([V.OK, V.DIVERGED])] if "status" in metrics \
        else metrics
    gpu = _col(df, "gpu_uuid")
    keys = [k for k in V.CELL_KEYS if k in df]
    # only the keys and the GPU: the metrics frame is wide, and a copy of it all is not needed
    cells = df[keys].assign(_gpu=gpu.to_numpy())
    across = int((cells.dropna(subset=["_gpu"]).groupby(
        keys, observed=True, dropna=False)["_gpu"].nunique() > 1).sum()) if keys else 0
    neighbours = pd.to_numeric(_col(df, "neighbours"), errors="coerce")
    silent = _col(df, "cpu_placement").isna() | _col(df, "process_start").isna()
    undisclosed = tuple(dict.fromkeys(_col(df, "experiment")[silent].dropna().astype(str)))
    return Conditions(
        records=len(df), gpus=_counts(gpu.dropna()), hosts=_counts(_host(df)),
        placements=_counts(_col(df, "cpu_placement")),
        beside_others=int((neighbours > 0).sum()) if neighbours.notna().any() else None,
        starts=_counts(_col(df, "process_start")), cells_across_gpus=across,
        undisclosed=undisclosed)
