"""A table's speedup cells, the ratio the verdict judges first: the cell against its one
baseline (``claims.judgement``: fp32, or amp-bf16 for an FP8 mode) from the interleaved
comparison where one measured it, else from the per-process repeats; how it was judged and
over what, or why it is not judged (the gate the verdict applies); and the per-process ratio
of means beside it where that is not the judged one, so that no table headlines a number
the verdict does not use."""

from __future__ import annotations

from .. import stats
from .. import vocabulary as V
from ..analysis import claims
from ..render.numbers import (MISSING, missing, modes_text, one_process_note, runs_note, times,
                              with_interval)

JUDGED_HEAD, HOW_HEAD, PER_PROCESS_HEAD = "× baseline, as judged", "judged by", "× per process"
JUDGED_NOTE = (f"× baseline, as judged: the ratio the verdict judges, over the cell's one "
               f"baseline at the same setting ({V.BASELINE}, or {V.FP8_BASELINE} for an FP8 "
               f"mode): an interleaved comparison's where one ran (every precision arm of the "
               f"setting alternated in rounds), else the per-process repeats' ratio of means; "
               f"'judged by' says which and over what, or why the verdict makes no claim of it "
               f"('not judged: ...'). × per process: the repeats' ratio of means over the same "
               f"baseline, beside an interleaved ratio; not judged on.")


def _estimate_text(e: stats.Estimate, row, stem: str) -> str:
    if e.method == stats.BIMODAL:            # no pooled interval: each mode's ratio
        shown = modes_text(row, times, stem)
        return shown if shown != MISSING else f"{times(e.value)} (two modes)"
    return with_interval(e.value, e.low, e.high, e.n, fmt=times, kind=e.method)


def judged(row) -> tuple[str, str]:
    """The judged ratio as text and how it was judged ("interleaved over fp32", "repeats over
    amp-bf16", "not judged: unsteady windows", of the repeats); the baseline's own row is
    1× and judged by nothing."""
    if str(row["precision"]) == V.BASELINE:
        return ("1×" if row.get("repeats_ok") else MISSING), ""
    j = claims.judgement(row)
    if j is None or j.estimate.value is None:
        base = claims.baseline_of(row["precision"])
        return (f"no {base}" if row.get("repeats_ok") else MISSING), ""
    how = f"{'interleaved' if j.decided_by == claims.INTERLEAVED else 'repeats'} over " \
          f"{j.baseline}"
    if j.estimate.method == stats.RUNS:
        how = f"interleaved, across {j.estimate.n} runs{V.RUNS_MARK} over {j.baseline}"
    # fewer than three repeats: judged by them all the same, the claim column says "n < 3"
    why = claims.unjudged(j)
    return _estimate_text(j.estimate, row, j.stem), how if why in (None, stats.UNJUDGED) else why


def per_process(row) -> str:
    """The per-process ratio of means over the cell's one baseline (its judged ratio's where
    no interleaved comparison ran)."""
    if str(row["precision"]) == V.BASELINE:
        return ""
    stem = claims.STEMS[claims.baseline_of(row["precision"])]
    e = stats.from_row(row, stem)
    if e.value is None:
        return f"no {claims.baseline_of(row['precision'])}" if row.get("repeats_ok") \
            else MISSING
    return _estimate_text(e, row, stem)


def any_interleaved(rows) -> bool:
    """Whether a judged ratio of ``rows`` (speedup.csv's) is an interleaved comparison's."""
    return any((j := claims.judgement(r)) is not None and j.decided_by == claims.INTERLEAVED
               for _, r in rows.iterrows() if not missing(r.get("precision")))


# the ratio columns a table row may hold, by stem: speedup.csv's interleaved ones, best.csv's
STEMS_SHOWN = (*claims.INTERLEAVED_STEMS.values(), "fair", "gain")


def mark_notes(rows) -> list[str]:
    """The footnotes of the marks a ratio of ``rows`` (a table's frame) carries: ``runs_note``
    where one is judged across runs, ``one_process_note`` where one rests on one process."""
    kinds = [(r.get(f"{s}_interval"), r.get(f"{s}_n")) for _, r in rows.iterrows()
             for s in STEMS_SHOWN]
    ns = [n for k, n in kinds if k == stats.RUNS]
    one = any(k == stats.PAIRED for k, _ in kinds)
    return ([runs_note(ns)] if ns else []) + ([one_process_note()] if one else [])
