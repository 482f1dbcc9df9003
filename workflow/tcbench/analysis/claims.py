"""One question, one baseline, one claim per cell, and per experiment the strongest claim its
intervals support.

A reduced-precision cell is judged against strict fp32 at the same setting (``speedup``); an
FP8 cell against the mode it replaces, amp-bf16 at the same setting (``bf16_speedup``,
``V.FP8_BASELINE``), and only against it: where no bf16 cell shares its setting, or too few
repeats of it finished, the FP8 cell is not judged, and nothing is claimed for it from fp32
(which would credit FP8 with bf16's own gain).

How a ratio is decided (``Judgement.decided_by``): from an interleaved comparison where one
measured it (``INTERLEAVED``: every precision arm of the setting in one process, alternated in
rounds, a paired ratio; over the setting's independent processes where it has several,
``stats.replicated_ratio``, else one process's block-bootstrap interval); else from the
per-process repeats, whose claim (``stats.claim``) holds only where they can decide it: not
where the cell or its baseline falls into two modes, has an unsteady timed window, has a run
recorded before compilations inside the timed window were counted that compiled there all the
same (``uncounted_compile_n``), or is host-bound (``diagnosis.host_bound``), each a
``stats.GATES`` "not judged" (``gate``). That
every run was slower than every run of the baseline is said whatever the gate
(``stats.ALL_SLOWER``).

An experiment's strongest claim ranks its cells by ``stats.strength``: the claim first (pays
off > faster > equivalent > inconclusive), then the interval's lower bound, so a supported
small gain beats a wide large point estimate; the cells of the same decided claim whose
intervals overlap the leader's tie with it (``stats.tied``, the rule best.md's fastest
configuration is tied by too), and of them the one of highest mean throughput is the answer. An experiment that runs FP8 asks about FP8: its
strongest claim is taken among its FP8 cells.

Rows are those of the verdict's joined table (summary with speedup.csv's columns), or of
speedup.csv itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from .. import resultset
from .. import stats
from .. import vocabulary as V
from . import diagnosis

FP8 = frozenset(m.name for m in V.MODES if m.fp8_recipe)
# the per-process ratio column of a baseline, by the baseline's mode
STEMS = {V.BASELINE: "speedup", V.FP8_BASELINE: "bf16_speedup"}
# the interleaved comparison's ratio column, by baseline (vocabulary.INTERLEAVED_BASELINES)
INTERLEAVED_STEMS = {b: f"interleaved_{STEMS.get(b) or b.replace('-', '_') + '_speedup'}"
                     for b in V.INTERLEAVED_BASELINES}
REPEATS, INTERLEAVED = "repeats", "interleaved"
# the claims that claim nothing of a ratio (``unjudged``): too few repeats, a gate, no baseline
NO_CLAIM = (stats.UNJUDGED, *stats.GATES, stats.NO_BASELINE)
# a column of this machine's own interleaved ratio where the judged one is across runs
OWN = "own_"


def baseline_of(precision: str) -> str:
    """The one mode a cell is judged against."""
    return V.FP8_BASELINE if str(precision) in FP8 else V.BASELINE


@dataclass(frozen=True)
class Judgement:
    """One cell's ratio to one baseline at the same setting, the claim it allows, and how it
    was decided (``REPEATS`` or ``INTERLEAVED``; ``gate``: why the repeats could not)."""

    row: pd.Series
    baseline: str
    estimate: stats.Estimate
    claim: str
    stem: str
    decided_by: str = REPEATS
    gate: str | None = None
    # the experiment's other cells with the same claim whose intervals overlap this one's
    # (``stats.tied``), where this is its strongest claim
    tied: tuple = ()

    @property
    def key(self) -> tuple:
        return stats.strength(self.claim, self.estimate)

    @property
    def pairs(self) -> tuple[float, float] | None:
        return pairs(self.row, self.stem)


def text_or_none(v) -> str | None:
    """A text column as read back from a CSV: None for empty or NaN."""
    return None if v is None or (isinstance(v, float) and v != v) or str(v) == "" else str(v)


def pairs(row, stem: str) -> tuple[float, float] | None:
    """The range of the ratios of any two runs (``stats.every_pair``), as the row holds it."""
    lo, hi = stats.finite(row.get(f"{stem}_pairs_low")), stats.finite(row.get(f"{stem}_pairs_high"))
    return None if lo is None or hi is None else (lo, hi)


# ------------------------------------------------------------------------------ validity
def gate(cell, base) -> str | None:
    """Why the per-process repeats of ``cell`` against ``base`` (summary rows, or None) cannot
    decide their ratio, the first of ``stats.GATES`` that applies; None where they can."""
    sides = [r for r in (cell, base) if r is not None]
    if any(stats.flag(r.get("bimodal")) for r in sides):
        return stats.TWO_MODES
    if any((stats.finite(r.get("unsteady_n")) or 0) > 0 for r in sides):
        return stats.UNSTEADY
    if any((stats.finite(r.get("uncounted_compile_n")) or 0) > 0 for r in sides):
        return stats.UNCOUNTED
    if any(diagnosis.host_bound(r) for r in sides):
        return stats.HOST_BOUND
    return None


def against(row, baseline: str) -> Judgement | None:
    """The cell against ``baseline`` at the same setting; None where there is no ratio."""
    il_stem = INTERLEAVED_STEMS.get(baseline)
    il = stats.from_row(row, il_stem) if il_stem else stats.EMPTY
    if il.value is not None:
        return Judgement(row, baseline, il, stats.claim(il), il_stem, INTERLEAVED)
    stem = STEMS.get(baseline)
    e = stats.from_row(row, stem) if stem else stats.EMPTY
    if e.value is None:
        return None
    g = text_or_none(row.get(f"{stem}_gate"))
    return Judgement(row, baseline, e, stats.gated(stats.claim(e, pairs(row, stem)), g), stem,
                     REPEATS, g)


def judgement(row) -> Judgement | None:
    """The cell's one question: against fp32, or for FP8 against amp-bf16 and nothing else
    (``stats.NO_BASELINE`` where that did not run)."""
    p = str(row["precision"])
    if p == V.BASELINE:
        return None
    base = baseline_of(p)
    j = against(row, base)
    if j is None and base != V.BASELINE and not pd.isna(row.get("repeats_ok", 1)) \
            and (row.get("repeats_ok", 1) or 0) > 0:
        return Judgement(row, base, stats.EMPTY, stats.NO_BASELINE, STEMS[base])
    return j


GAIN = "gain"    # a knobs study's ratio over the plain fp32 baseline (speedup.csv's column)


def shown(row, stem: str) -> Judgement | None:
    """The ratio a figure or a table shows of a cell over the baseline of ``stem`` (a column
    stem of ``STEMS``, or ``GAIN``), as the verdict judges it: the interleaved comparison's
    where one measured it (``against``), else the per-process repeats' with their gate; a
    knobs study's gain over plain fp32 gated by the cell's own repeats, as ``best`` judges
    it. None where the row has no such ratio."""
    if stem == GAIN:
        e = stats.from_row(row, GAIN)
        if e.value is None:
            return None
        g = gate(row, None)
        return Judgement(row, V.BASELINE, e, stats.gated(stats.claim(e), g), GAIN, REPEATS, g)
    base = next((b for b, s in STEMS.items() if s == stem), None)
    if base is None:
        raise ValueError(f"no baseline has the ratio column {stem!r}: use one of "
                         f"{sorted([*STEMS.values(), GAIN])}")
    return against(row, base)


def unjudged(j: Judgement | None) -> str | None:
    """Why the verdict makes no claim from the ratio ``j`` shows: its claim where that claims
    nothing (``NO_CLAIM``: fewer than three repeats on a side, a ``stats.GATES`` "not judged"
    of its repeats, no baseline run), or the gate of repeats that claim only that every run
    was slower (the fact is said, the ratio is not judged); None where it judges it. An
    interleaved ratio is never gated: the comparison measures what the gates guard against."""
    if j is None:
        return None
    if j.claim in NO_CLAIM:
        return j.claim
    return j.gate if j.decided_by == REPEATS else None


def _rows(df: pd.DataFrame):
    ok = df[df["repeats_ok"] > 0] if "repeats_ok" in df else df
    return [r for _, r in ok.iterrows()]


def judgements(df: pd.DataFrame) -> list[Judgement]:
    return [j for j in map(judgement, _rows(df)) if j is not None]


# the modes of a cell's setting that its interleaved comparison tells it apart from (a ratio
# whose 95% interval excludes 1, either way): ``told_apart``
APART = "interleaved_apart"


def told_apart(a, b) -> bool:
    """Whether two cells of one setting were ranked by their own interleaved comparison,
    which overlapping intervals against a common baseline cannot undo (``attach_interleaved``'s
    ``APART``): then they are no tie."""
    if any(str(a.get(k)) != str(b.get(k)) for k in V.BASELINE_KEYS):
        return False
    said = lambda r: str(r.get(APART) or "").split("; ")  # noqa: E731
    return str(b["precision"]) in said(a) or str(a["precision"]) in said(b)


def strongest(df: pd.DataFrame) -> Judgement | None:
    """The strongest claim the experiment's intervals support (see the module doc). Where
    others of the same claim cannot be told from it (``stats.tied``: their intervals overlap),
    the fastest of them by mean throughput, as best.md picks, with the rest as ``tied``."""
    js = judgements(df)
    fp8 = [j for j in js if str(j.row["precision"]) in FP8]
    pool = fp8 or js
    if not pool:
        return None
    top = max(pool, key=lambda j: j.key)
    # only a decided claim ties: two inconclusive ratios are no pick to choose between
    ties = [j for j in pool if j is not top and j.claim == top.claim
            and top.claim in (stats.PAYS_OFF, stats.FASTER, stats.EQUIVALENT)
            and stats.tied(j.estimate, top.estimate) and not told_apart(j.row, top.row)]
    if not ties:
        return top
    pick = max([top, *ties], key=lambda j: stats.finite(j.row.get(V.HEADLINE)) or 0.0)
    return replace(pick, tied=tuple(j for j in [top, *ties] if j is not pick))


def passed_over(df: pd.DataFrame, pick: Judgement) -> list[Judgement]:
    """The experiment's cells whose ratio is higher than its pick's but whose repeats cannot
    claim it (fewer than three, or a "not judged" gate), so a reader sees why the higher
    number is not the answer."""
    low = pick.estimate.value
    return [j for j in judgements(df) if j.estimate.value is not None and low is not None
            and j.estimate.value > low and j.baseline == pick.baseline
            and j.claim in (stats.UNJUDGED, *stats.GATES)]


def slowdowns(df: pd.DataFrame) -> list[Judgement]:
    """Every slowdown: a reduced cell slower than fp32 at the same setting (its interval says
    so, or every pair of runs does), and an FP8 cell slower than amp-bf16 or than fp32 at the
    same setting (slower than fp32 is slower than its baseline's baseline: said, though FP8
    claims nothing else from fp32)."""
    out = []
    for r in _rows(df):
        if str(r["precision"]) == V.BASELINE:
            continue
        for base in (V.FP8_BASELINE, V.BASELINE) if str(r["precision"]) in FP8 \
                else (V.BASELINE,):
            j = against(r, base)
            if j is not None and j.claim in (stats.SLOWER, stats.ALL_SLOWER):
                out.append(j)
                break
    return out


# -------------------------------------------------------------------- interleaved ratios
def attach_interleaved(df: pd.DataFrame, interleaved: pd.DataFrame | None) -> pd.DataFrame:
    """``df`` (rows keyed by ``V.CELL_KEYS``) with each cell's interleaved ratios, one stem
    per baseline (``INTERLEAVED_STEMS``: value, low, high, n, interval), and the processes,
    each one's rounds and the training CPUs behind them, from interleaved.csv (one row per
    setting, arm and baseline; a table made before replicates has no ``processes``: one);
    unchanged where there is none (a set made before the interleaved comparison existed).
    A ratio judged across runs (``stats.RUNS``, ``runs.across``) keeps this machine's own
    beside it (``own_<stem>``) and the runs it pools (``interleaved_runs``)."""
    if interleaved is None or interleaved.empty:
        return df
    il = resultset.order(interleaved)
    if "status" in il:
        il = il[il["status"].astype(str) == V.OK]
    found, apart = {}, {}
    for _, r in il.iterrows():
        e = stats.from_row(r, "ratio")
        if stats.clears(e, 1.0) or stats.clears(e, 1.0, above=False):   # the arms are ranked
            apart.setdefault(resultset.cell_key(r), set()).add(str(r["baseline"]))
        stem = INTERLEAVED_STEMS.get(str(r["baseline"]))
        if stem is None:
            continue
        found.setdefault(resultset.cell_key(r), {}).update(
            e.as_dict(stem) | {f"{stem}_interval": e.method,
                               "interleaved_processes": r.get("processes", 1),
                               "interleaved_rounds": r.get("rounds"),
                               "interleaved_training_cpu": r.get("training_cpu")})
        if e.method == stats.RUNS:
            # judged across runs (``runs.across``): this machine's own ratio stays beside it
            own = stats.from_row(r, OWN + "ratio")
            found[resultset.cell_key(r)].update(
                own.as_dict(OWN + stem) | {f"{OWN}{stem}_interval": own.method,
                                           "interleaved_runs": r.get("runs")})
    for key, modes in apart.items():
        found.setdefault(key, {})[APART] = "; ".join(sorted(modes))
    out = df.copy()
    cols = sorted({c for v in found.values() for c in v})
    for c in cols:
        out[c] = [found.get(resultset.cell_key(r), {}).get(c) for _, r in out.iterrows()]
    return out
