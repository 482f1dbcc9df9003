"""Several sets pooled as one: every set (``run``) summarised exactly as a result set's own
summary and speedup tables are (``analysis.summarise``, ``analysis.speedup``), with the modes a
set's device cannot run marked unsupported, and which number an experiment is compared on."""

from __future__ import annotations

import pandas as pd

from .. import vocabulary as V
from ..resultset import order
from .speedup import speedup
from .summarise import summarise

SET_COLUMNS = ["kind", "label", "source", "source_url", "notes", "compute_capability"]

def _capability(g: pd.DataFrame) -> tuple[int, int] | None:
    cc = pd.to_numeric(g.get("compute_capability"), errors="coerce").dropna() \
        if "compute_capability" in g else pd.Series(dtype=float)
    if not len(cc):
        return None
    major, minor = divmod(round(float(cc.iloc[0]) * 10), 10)
    return int(major), int(minor)


def unsupported_rows(df: pd.DataFrame) -> pd.DataFrame:
    """For every set whose device is known: a row ``unsupported`` (with the reason) for each
    cell another set has, in a mode this device cannot run. A T4 has no TF32 or bf16, and that
    is a property of the GPU, not a gap in the study."""
    keys = ["experiment", *V.SETTING_KEYS, "precision"]
    cells_ = df.drop_duplicates(keys)
    rows = []
    for run, g in df.groupby("run", sort=False):
        cc = _capability(g)
        if cc is None:
            continue
        have = set(map(tuple, g[keys].astype(str).to_numpy()))
        first = g.iloc[0]
        for _, s in cells_[cells_["experiment"].isin(set(g["experiment"]))].iterrows():
            m = V.mode(str(s["precision"]))
            if tuple(str(s[k]) for k in keys) in have or not m.min_capability \
                    or cc >= m.min_capability:
                continue
            rows.append({**{c: first.get(c) for c in ("run", "kind", "label", "source",
                                                       "device_name", "set_order")},
                         **{k: s[k] for k in ("experiment", "workload", "data",
                                              *V.SETTING_KEYS)},
                         "precision": m.name, "repeat": 1, "status": V.UNSUPPORTED,
                         "status_reason": f"{m.name} needs compute capability "
                                          f">= {m.min_capability[0]}.{m.min_capability[1]}; "
                                          f"{first['device_name']} is {cc[0]}.{cc[1]}"})
    return pd.DataFrame(rows)


def pool(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (set, cell), pooled exactly as a result set's own summary and speedup
    tables are (``run`` names the set), with the set's label, kind and source attached."""
    extra = unsupported_rows(df)
    if len(extra):
        df = pd.concat([df, extra], ignore_index=True)
    df = order(df)
    summary = summarise(df)
    ratios = speedup(df, summary)
    keys = list(V.CELL_KEYS)
    out = summary.merge(ratios[[c for c in ratios if c not in summary or c in keys]],
                        on=keys, how="left")
    sets = df.drop_duplicates("run").set_index("run")
    for col in (*SET_COLUMNS, "set_order"):
        out[col] = out["run"].map(sets[col]) if col in sets else None
    out = order(out)
    return out.sort_values(["experiment", *V.SETTING_KEYS, "set_order", "precision"]
                           ).reset_index(drop=True)


def metric_of(c: pd.DataFrame) -> str:
    """The number an experiment's sets are compared on: the headline where every set has
    it, else the seed's total time (a published reference with no step timing)."""
    have = c.groupby("run")[V.HEADLINE].apply(lambda v: v.notna().any())
    return V.HEADLINE if have.all() else V.SEED_METRIC


def ratio_columns(metric: str) -> str:
    """The ratio to fp32 that goes with a compared metric (speedup.csv's column stem)."""
    return "speedup" if metric == V.HEADLINE else "seed_speedup"
