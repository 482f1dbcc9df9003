"""How a cell's setting reads: which axes a row label must name, and the words for their
values."""

from __future__ import annotations

import json

import pandas as pd

from .. import vocabulary as V
from ..resultset import params_of
from .numbers import MISSING, missing


def varying_axes(df: pd.DataFrame) -> list[str]:
    """The axes that take more than one value inside ``df``."""
    return [a for a in V.AXIS_NAMES if a in df and df[a].astype(str).nunique() > 1]


def shown_axes(df: pd.DataFrame) -> list[str]:
    """The axes a row label must name within ``df`` (one experiment): those that vary, and
    those held at a value other than the vocabulary's default (so a row says channels_last
    even where every row of the experiment is channels_last)."""
    out = []
    for a in V.AXES:
        if a.name not in df:
            continue
        values = df[a.name].astype(str)
        if values.nunique() > 1 or (a.default is not None and (values != a.default).any()):
            out.append(a.name)
    return out


def axis_value(axis: str, value) -> str:
    """Values that mean nothing without their axis ("on", "off", "default") carry its name."""
    return V.axis(axis).display(value)


def setting_text(row, axes: list[str], sep: str = ", ") -> str:
    return sep.join([f"bs {int(row['batch_size'])}", *(axis_value(a, row[a]) for a in axes)])


def param_changes(row, prefix: str) -> list[str]:
    """The workload parameters in which a cell differs from its baseline, from the baseline's
    value to the cell's ("in_size 4096 → 1024", "num_batches 50 → 10"), from the row's
    ``workload_params`` and ``{prefix}workload_params`` (``resultset.workload_params``);
    none where either is not known (a table made before the column)."""
    mine, theirs = (params_of(row.get(c)) for c in ("workload_params",
                                                    f"{prefix}workload_params"))
    if not mine or not theirs:
        return []
    return [f"{k} {theirs.get(k, MISSING)} → {mine.get(k, MISSING)}"
            for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]


def model_change(row, prefix: str) -> list[str]:
    """Where a cell's model is another preset than its baseline's: the two names and what
    their configurations differ in ("gpt2-small → gpt2-small-v50304 (vocab_size 50257 →
    50304)"), from ``model_config`` and ``{prefix}model_config``; none where they agree or
    the baseline's model is not known."""
    b = row.get(f"{prefix}model")
    if missing(b) or str(b) == str(row["model"]):
        return []
    mine, theirs = (json.loads(v) if isinstance(v, str) and v else {}
                    for v in (row.get("model_config"), row.get(f"{prefix}model_config")))
    differ = [f"{k} {theirs.get(k, MISSING)} → {mine.get(k, MISSING)}"
              for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
    return [f"{b} → {row['model']}" + (f" ({', '.join(differ)})" if differ else "")]


def changes(row, prefix: str) -> list[str]:
    """What differs between a cell and its baseline besides precision, from the baseline's
    value to the cell's ("bs 512 → 8192", "contiguous → channels_last", "num_batches 50 →
    10"): the baseline's setting is in the row's ``{prefix}batch_size``, ``{prefix}<axis>``
    and ``{prefix}workload_params`` columns."""
    out = []
    b = row.get(f"{prefix}batch_size")
    if not missing(b) and int(b) != int(row["batch_size"]):
        out.append(f"bs {int(b)} → {int(row['batch_size'])}")
    out += model_change(row, prefix)
    for a in V.AXIS_NAMES:
        v = row.get(f"{prefix}{a}")
        if a != "model" and not missing(v) and str(v) != str(row[a]):
            out.append(f"{axis_value(a, v)} → {axis_value(a, row[a])}")
    return out + param_changes(row, prefix)
