"""One question, one baseline, one claim per cell, and per experiment the strongest claim its
intervals support.

A reduced-precision cell is judged against strict fp32 at the same setting (``speedup``); an
FP8 cell first against the mode it replaces, amp-bf16 at the same setting
(``bf16_speedup``, ``V.FP8_BASELINE``), and against fp32 where no bf16 cell shares its
setting or too few repeats of it finished to judge. The claim is ``stats.claim`` of that ratio's interval. An experiment's strongest
claim ranks its cells by ``stats.strength``: the claim first (pays off > faster > equivalent
> inconclusive), then the interval's lower bound, so a supported small gain beats a wide
large point estimate. An experiment that runs FP8 asks about FP8: its strongest claim is
taken among its FP8 cells where any of them is judged.

Rows are those of the verdict's joined table (summary with speedup.csv's columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import stats
from .. import vocabulary as V

FP8 = frozenset(m.name for m in V.MODES if m.fp8_recipe)
# the ratio column of a baseline, by the baseline's mode
STEMS = {V.BASELINE: "speedup", V.FP8_BASELINE: "bf16_speedup"}


@dataclass(frozen=True)
class Judgement:
    """One cell's ratio to one baseline at the same setting, and the claim it allows."""

    row: pd.Series
    baseline: str
    estimate: stats.Estimate
    claim: str

    @property
    def stem(self) -> str:
        return STEMS[self.baseline]

    @property
    def key(self) -> tuple:
        return stats.strength(self.claim, self.estimate)


def against(row, baseline: str) -> Judgement | None:
    """The cell against ``baseline`` at the same setting; None where there is no ratio."""
    e = stats.from_row(row, STEMS[baseline])
    return None if e.value is None else Judgement(row, baseline, e, stats.claim(e))


def judgement(row) -> Judgement | None:
    """The cell's one question: FP8 against amp-bf16 where that ran with enough repeats to
    judge, else against fp32 (where neither can be judged, the bf16 ratio stands)."""
    if str(row["precision"]) == V.BASELINE:
        return None
    fp32 = against(row, V.BASELINE)
    if str(row["precision"]) not in FP8:
        return fp32
    bf16 = against(row, V.FP8_BASELINE)
    if bf16 is None or (bf16.claim == stats.UNJUDGED and fp32 is not None
                        and fp32.claim != stats.UNJUDGED):
        return fp32
    return bf16


def _rows(df: pd.DataFrame):
    ok = df[df["repeats_ok"] > 0] if "repeats_ok" in df else df
    return [r for _, r in ok.iterrows()]


def judgements(df: pd.DataFrame) -> list[Judgement]:
    return [j for j in map(judgement, _rows(df)) if j is not None]


def strongest(df: pd.DataFrame) -> Judgement | None:
    """The strongest claim the experiment's intervals support (see the module doc)."""
    js = judgements(df)
    fp8 = [j for j in js if str(j.row["precision"]) in FP8]
    pool = fp8 or js
    return max(pool, key=lambda j: j.key) if pool else None


def slowdowns(df: pd.DataFrame) -> list[Judgement]:
    """Every significant slowdown: a reduced cell slower than fp32 at the same setting, and an
    FP8 cell slower than amp-bf16 at the same setting."""
    out = []
    for r in _rows(df):
        if str(r["precision"]) == V.BASELINE:
            continue
        for base in (V.FP8_BASELINE, V.BASELINE) if str(r["precision"]) in FP8 \
                else (V.BASELINE,):
            j = against(r, base)
            if j is not None and j.claim == stats.SLOWER:
                out.append(j)
    return out
