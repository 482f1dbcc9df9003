"""Throughput in the unit a workload counts its work in: samples/s for every workload, and
tokens/s as well for those that train on tokens (a transformers sample is one sequence of
``data.tokens_per_sample`` tokens). Tokens/s is derived here and nowhere else: from a record's
steady-state samples/s and its tokens per sample, so both carry the same interval (the tokens of
a sample are the same in every repeat of a cell) and every ratio is the same in either unit.
"""

from __future__ import annotations

import pandas as pd

from .. import vocabulary as V
from ..resultset import numeric

TOKENS = "throughput_tokens_per_s"
PER_SAMPLE = "tokens_per_sample"


def add_tokens(df: pd.DataFrame) -> pd.DataFrame:
    """metrics.csv's tokens/s column: samples/s times the record's tokens per sample (empty
    for a workload without tokens, and for a run without a throughput)."""
    per = numeric(df[PER_SAMPLE]) if PER_SAMPLE in df else pd.Series(float("nan"), df.index)
    df[PER_SAMPLE] = per
    df[TOKENS] = numeric(df[V.HEADLINE]) * per
    return df


def counts_tokens(rows: pd.DataFrame) -> bool:
    """Whether these rows (one experiment's) have a throughput in tokens."""
    return TOKENS in rows and numeric(rows[TOKENS]).notna().any()


def columns(rows: pd.DataFrame) -> list[str]:
    """The throughput columns to show for these rows: samples/s, and tokens/s where counted."""
    return [V.HEADLINE, *([TOKENS] if counts_tokens(rows) else [])]


def unit(column: str) -> str:
    return V.metric(column).unit


def main_column(rows: pd.DataFrame) -> str:
    """The throughput a figure of these rows draws: tokens/s for a token workload (the unit its
    users compare), samples/s otherwise."""
    return TOKENS if counts_tokens(rows) else V.HEADLINE


def per_sample(metrics: pd.DataFrame | None) -> dict[str, float]:
    """Each token workload's experiment and its tokens per sample, from its per-process
    records (metrics.csv): a sequence's length is no axis, so it is one number an experiment;
    two are a set this cannot draw in one unit, and an error naming the experiment."""
    if metrics is None or PER_SAMPLE not in metrics or "experiment" not in metrics:
        return {}
    per = metrics.assign(**{PER_SAMPLE: numeric(metrics[PER_SAMPLE])}).dropna(
        subset=[PER_SAMPLE])
    out = {}
    for exp, values in per.groupby("experiment", sort=False, observed=True)[PER_SAMPLE]:
        seen = sorted(set(values))
        if len(seen) > 1:
            raise ValueError(f"experiment {exp!r}: its records count {seen} tokens per sample; "
                             f"one experiment trains on one sequence length (split it in two)")
        out[str(exp)] = seen[0]
    return out


def with_tokens(rows: pd.DataFrame, metrics: pd.DataFrame | None) -> pd.DataFrame:
    """Rows without a record's tokens per sample (an interleaved comparison's rounds) with
    ``TOKENS`` beside samples/s for each experiment whose records count tokens (``per_sample``),
    so that a figure draws them in the unit the rest of the outputs use (``main_column``)."""
    per = rows["experiment"].astype(str).map(per_sample(metrics)) if len(rows) else \
        pd.Series(dtype=float)
    return add_tokens(rows.assign(**{PER_SAMPLE: per}))
