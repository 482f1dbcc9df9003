"""The verdict's section "How much larger a batch fits", from the capacity study's table
(``results/<run>/capacity.csv``, tcbench.capacity): per workload the largest batch each
precision trains, as a multiple of fp32's, the memory each sample adds (the slope of the line
through two small probes), and which precisions were not probed and why."""

from __future__ import annotations

import pandas as pd

from .. import vocabulary as V
from ..render.numbers import MISSING, memory, missing, times
from ..render.table import Table, listed, said_once
from .findings import Section

TITLE = "How much larger a batch fits"
COLUMNS = ("workload", "precision", "status", "largest_batch_size", "status_reason")


def check(capacity: pd.DataFrame, source: str = "capacity.csv") -> pd.DataFrame:
    """The table, or a ValueError naming the columns it lacks."""
    lacking = [c for c in COLUMNS if c not in capacity.columns]
    if lacking:
        raise ValueError(f"{source}: no column {', '.join(lacking)}; rebuild it with "
                         f"`snakemake capacity` (python -m tcbench.capacity report)")
    return capacity


def _largest(r) -> str:
    if missing(r.get("largest_batch_size")):
        return f"as {V.BASELINE}" if r["status"] == "not_probed" else f"— ({r['status']})"
    text = f"{int(r['largest_batch_size']):,}"
    if r["status"] == "capped":
        text = f"≥ {text}"
    tokens = r.get("largest_batch_tokens")
    return text + ("" if missing(tokens) else f" ({int(tokens):,} tokens)")


def _name(r) -> str:
    """The workload as the tables say it, with its model (transformers (gpt2-small))."""
    return str(r["shown_as"]) if isinstance(r.get("shown_as"), str) else str(r["workload"])


def _rows(d: pd.DataFrame) -> list[list[str]]:
    rows = []
    for _, r in d.iterrows():
        ratio = r.get(f"capacity_vs_{V.BASELINE}")
        slope = r.get("fit_bytes_per_sample")
        pred = r.get("predicted_batch_size")
        rows.append([_name(r), str(r["precision"]), _largest(r),
                     MISSING if missing(ratio) else times(ratio),
                     MISSING if missing(slope) else memory(slope, "MiB"),
                     MISSING if missing(pred) else f"{int(pred):,}"])
    return rows


def _gain(d: pd.DataFrame) -> str | None:
    """The largest gain over fp32 of one workload, as a clause."""
    ratios = pd.to_numeric(d[f"capacity_vs_{V.BASELINE}"], errors="coerce") \
        if f"capacity_vs_{V.BASELINE}" in d else pd.Series(dtype=float)
    found = d[(ratios > 0) & (d["precision"].astype(str) != V.BASELINE)]
    base = d[d["precision"].astype(str) == V.BASELINE]
    if found.empty or base.empty:
        return None
    best = found.loc[ratios[found.index].idxmax()]
    # precisions that fit the same batch (amp-fp16 and amp-bf16 store alike) are named together
    tied = found[found["largest_batch_size"] == best["largest_batch_size"]]["precision"]
    return (f"{_name(best)}, {listed(list(dict.fromkeys(map(str, tied))))}: "
            f"{times(ratios[best.name])} "
            f"({_largest(best)} against {_largest(base.iloc[0])})")


def _autotuning(main: pd.DataFrame, other: pd.DataFrame) -> list[str]:
    """Whether a search with another setting (cuDNN autotuning on) found the same limit."""
    out = []
    for _, r in other.iterrows():
        same = main[(main["workload"] == r["workload"])
                    & (main["precision"].astype(str) == str(r["precision"]))]
        if not len(same) or missing(r["largest_batch_size"]) \
                or missing(same.iloc[0]["largest_batch_size"]):
            continue
        alike = same.iloc[0]["largest_batch_size"] == r["largest_batch_size"]
        out.append(f"With {r['setting']}, {_name(r)} {r['precision']} fits "
                   f"{_largest(r)} against {_largest(same.iloc[0])} without: "
                   + ("the same answer." if alike else "a different answer, so the "
                      "autotuned workspaces' memory matters."))
    return out


def _unprobed(main: pd.DataFrame) -> list[str]:
    """One sentence: which precisions have no limit of their own, where, and why in a word
    (the table's notes give each reason in full)."""
    gone = main[main["largest_batch_size"].isna()]
    if gone.empty:
        return []
    parts = []
    for (precision, status), g in gone.groupby([gone["precision"].astype(str), "status"],
                                               sort=False):
        where = "every workload" if set(g["workload"]) == set(main["workload"]) \
            else ", ".join(dict.fromkeys(_name(r) for _, r in g.iterrows()))
        why = (f"it stores tensors in {V.BASELINE}, so it fits what {V.BASELINE} fits"
               if status == "not_probed" else status)
        parts.append(f"{precision} on {where} ({why})")
    return ["No limit of their own: " + "; ".join(parts) + "."]


def section(capacity: pd.DataFrame | None) -> Section | None:
    """None without a capacity study; else the table of its own searches (those repeated with
    cuDNN autotuning on are said in words) and at most three sentences: the
    gains over fp32, whether autotuning changed an answer, and which precisions have no limit
    of their own."""
    if capacity is None or capacity.empty:
        return None
    d = check(capacity).copy()
    setting = d["setting"] if "setting" in d else pd.Series([None] * len(d), index=d.index)
    main, other = d[setting.isna()], d[setting.notna()]
    gains = [g for w in dict.fromkeys(main["workload"])
             if (g := _gain(main[main["workload"] == w]))]
    sentences = ([f"The largest batch that trains, as a multiple of {V.BASELINE}'s: "
                  + "; ".join(gains) + "."] if gains else []) \
        + _autotuning(main, other)[:1] + _unprobed(main)
    # each reason once, with the searches it holds for (capacity.md's notes say it alike)
    notes = [f"{', '.join(names)} {text}" for text, names in said_once(
        (f"{_name(r)} {r['precision']}" + (f" ({r['setting']})" if isinstance(
            r.get("setting"), str) else ""), f"({r['status']}): {r['status_reason']}")
        for _, r in d.iterrows() if isinstance(r["status_reason"], str)).items()]
    table = Table(f"Largest batch that trains, per workload and precision (probes eager, "
                  f"one process each)",
                  ["workload", "precision", "largest batch", f"× {V.BASELINE}",
                   "memory per sample", "predicted"], _rows(main), align="llrrrr",
                  notes=["Memory per sample is the slope of peak memory "
                         "(torch.cuda.max_memory_allocated) over the batch, through two "
                         "small probes; predicted is where that line meets the memory the "
                         "allocator can have (capacity.md says the budget).", *notes])
    return Section(TITLE, sentences, table)
