"""A rerun against its reference: two result sets of the same GPU model, quantity by quantity.

Each quantity is keyed so that the two sets line up (the cell's keys but the run, the baseline
of a ratio, the column it is read from) and read back from the sets' tables as
``stats.from_row`` reads any of them:

- ``THROUGHPUT``: each cell's steady-state throughput (summary.csv), in tokens/s where the
  experiment counts them (``analysis.throughput.main_column``), else samples/s;
- ``PER_PROCESS``: each cell's ratio of per-process means to its baseline at the same setting
  (speedup.csv: ``speedup`` against fp32, ``bf16_speedup`` of an FP8 cell against amp-bf16);
- ``INTERLEAVED``: each paired ratio of an interleaved comparison (interleaved.csv, one row per
  arm and baseline);
- ``CLAIM``: the claim of each judged ratio, decided by ``analysis.claims`` in each set as the
  verdict decides it; and ``ANSWER``: the verdict's claim per experiment, which the reports
  layer passes in (``reports.answer`` builds it). Two claims are the ``SAME``, ``COMPATIBLE``
  (both can hold: one interval clears a threshold the other does not, ``stats.compatible``),
  or ``CHANGED`` (no ratio satisfies both).

A rerun's estimate is ``INSIDE`` where it lies within the reference's 95% interval: a set's
confidence interval, or where the reference pools several runs (``analysis.runs``), the 95%
prediction interval for one more run.
Only a confidence interval on both sides decides that (n >= 3 repeats, or an interleaved
comparison's bootstrap interval): a range, a single run, or two modes give ``NO_INTERVAL``,
never counted as inside. A cell's throughput is also held to the between-run tolerance
(``Tolerance``): the reference's interval widened on each side by the run-to-run offset of the
machine, measured from the two sets themselves and capped at ``TOLERANCE_CAP``. A quantity of
one set only is listed as ``ONLY_REFERENCE`` or ``ONLY_RERUN``: counted and shown, not failed.
Another GPU model is compared (``reports.compare``), never reproduced: ``same_gpu`` refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import resultset
from .. import stats
from .. import vocabulary as V
from ..references import CompareError, load_run
from . import claims
from . import throughput

KEYS: tuple[str, ...] = tuple(k for k in V.CELL_KEYS if k != "run")
THROUGHPUT, PER_PROCESS, INTERLEAVED, CLAIM, ANSWER = (
    "throughput", "per-process ratio", "interleaved ratio", "claim", "answer")
ESTIMATED: tuple[str, ...] = (THROUGHPUT, PER_PROCESS, INTERLEAVED)
CLAIMED: tuple[str, ...] = (CLAIM, ANSWER)
INSIDE, OUTSIDE, NO_INTERVAL, SAME, COMPATIBLE, CHANGED = (
    "inside", "outside", "no interval", "same", "compatible", "changed")
ONLY_REFERENCE, ONLY_RERUN = "only in the reference", "only in the rerun"
OUTCOMES: tuple[str, ...] = (INSIDE, OUTSIDE, NO_INTERVAL, SAME, COMPATIBLE, CHANGED,
                             ONLY_REFERENCE, ONLY_RERUN)
# the run-to-run offset a rerun's throughput is allowed beyond the reference's interval is
# measured from the cells whose GPU was busy (the host's pace is not the machine's), up to this
TOLERANCE_CAP = 0.01
SIDES = ("reference", "rerun")
TABLES = ("metrics", "summary", "speedup")      # a set's tables the check needs


@dataclass(frozen=True)
class ResultSet:
    """One result set's tables, read and checked (``load``)."""

    folder: Path
    metrics: pd.DataFrame
    summary: pd.DataFrame
    speedup: pd.DataFrame
    interleaved: pd.DataFrame | None

    @property
    def run(self) -> str:
        return str(self.summary["run"].iloc[0]) if len(self.summary) else self.folder.name

    @property
    def devices(self) -> list[str]:
        return sorted(set(self.metrics["device_name"].dropna().astype(str)))

    def quantities(self) -> Quantities:
        return Quantities(throughputs(self.summary), process_ratios(self.speedup),
                          interleaved_ratios(self.interleaved),
                          {k: _judgement(j) for k, j in judged(self).items()})


@dataclass(frozen=True)
class Quantities:
    """What one side brings to the check, keyed as ``_key`` keys: ``throughputs`` (each an
    estimate and the cell's GPU-busy share), ``per_process`` and ``interleaved`` ratios, and
    the judged ratios' ``claims`` (``_judgement``); ``runs``: how many runs each estimate
    pools (1: one set; more: ``analysis.runs``, whose intervals already span machines, so no
    between-run tolerance is added to them)."""

    throughputs: dict
    per_process: dict
    interleaved: dict
    claims: dict
    runs: int = 1


def load(folder: Path) -> ResultSet:
    """A result set's tables (the vocabulary's names in ``folder``), each checked to exist;
    interleaved.csv is optional (a set made before interleaved comparisons has none)."""
    folder = Path(folder)
    names = [V.SET_TABLES[t] for t in TABLES]
    for path in (folder / n for n in names):
        if not path.exists():
            raise CompareError(f"{path}: no such table; a result set to check is a folder "
                               f"with its study's tables ({', '.join(names)}), made by "
                               f"`snakemake --config run=<name>` or committed")
    il = folder / V.SET_TABLES["interleaved"]
    return ResultSet(folder, load_run(folder / V.SET_TABLES["metrics"]),
                     resultset.read_raw(folder / V.SET_TABLES["summary"]),
                     resultset.read_raw(folder / V.SET_TABLES["speedup"]),
                     resultset.read_raw(il) if il.exists() and il.stat().st_size else None)


def same_gpu(reference: ResultSet, rerun: ResultSet) -> None:
    """Refuse two sets that ran on different GPU models (metrics.csv's device_name)."""
    for s in (reference, rerun):
        if not s.devices:
            raise CompareError(f"{s.folder / V.SET_TABLES['metrics']}: no record names its "
                               f"device (device_name), so it cannot be checked against a set "
                               f"of the same GPU model")
    if reference.devices != rerun.devices:
        raise CompareError(
            f"{rerun.folder} ran on {', '.join(rerun.devices)}, {reference.folder} on "
            f"{', '.join(reference.devices)}: another GPU model is compared, not reproduced; "
            f"use snakemake compare --config 'compare={{name: compare-{rerun.folder.name}, "
            f"runs: [{rerun.folder.name}, {reference.folder.name}]}}'")


def references(reference) -> list[str]:
    """The reference's set names: one, or several runs of the study to pool (``analysis.runs``),
    given as a list or as one comma-separated word (``--config reference=a,b,c``)."""
    if reference is None:
        return []
    names = reference if isinstance(reference, (list, tuple)) else str(reference).split(",")
    return [str(n).strip() for n in names if str(n).strip()]


def reference_tables(reference, run: str, results: Path = Path("results")) -> list[str]:
    """The reference's tables (``results/<reference>/``, for each of its runs) that the rerun
    ``run`` is checked against, once they are known to be usable: a reference is named, it is
    not the rerun's own set, it has its tables, and, where the rerun's tables are there
    already, both ran on the same GPU model (``check`` is refused again when the rerun's are
    made first)."""
    names = references(reference)
    if not names:
        raise CompareError(f"the check needs the set to check against: --config "
                           f"reference=<name>, a result set under {results}/ of the same GPU "
                           f"model (e.g. reference=nvidia-h200), or three or more runs of the "
                           f"study to pool (reference=a,b,c), with run=<name> the rerun's own "
                           f"set (now {run!r})")
    if run in names:
        raise CompareError(f"reference={','.join(names)!r}: {run!r} is the rerun's own "
                           f"set (run={run!r}): run the study under another name (--config "
                           f"run=<rerun>) and check that one against it")
    if len(names) > 1 and len(names) < stats.MIN_CI_N:
        raise CompareError(f"reference={','.join(names)!r}: an interval across runs needs at "
                           f"least {stats.MIN_CI_N} runs; name one set, or "
                           f"{stats.MIN_CI_N} or more")
    rerun = Path(results) / run
    out = []
    for name in names:
        folder = Path(results) / name
        try:
            ref = load(folder)
        except CompareError as exc:
            raise CompareError(f"reference={name!r}: {exc}") from None
        if all((rerun / V.SET_TABLES[t]).exists() for t in TABLES):
            same_gpu(ref, load(rerun))
        out += [str(folder / V.SET_TABLES[t]) for t in (*TABLES, "interleaved")
                if t in TABLES or (folder / V.SET_TABLES[t]).exists()]
    return out


# ---------------------------------------------------------------------- each set's quantities
def _key(row, baseline, quantity) -> tuple:
    return (*(str(row[k]) for k in KEYS), baseline, quantity)


def throughputs(summary: pd.DataFrame) -> dict[tuple, tuple[stats.Estimate, float | None]]:
    """Each cell's throughput (in the experiment's unit) and its GPU-busy share."""
    out = {}
    s = resultset.order(summary)
    for _, rows in s.groupby("experiment", sort=False, observed=True):
        column = throughput.main_column(rows)
        for _, r in rows.iterrows():
            e = stats.from_row(r, column)
            if e.value is not None:
                out[_key(r, None, column)] = (e, stats.finite(r.get("gpu_busy_share")))
    return out


def process_ratios(speedup: pd.DataFrame) -> dict[tuple, stats.Estimate]:
    """Each cell's ratio of per-process means to each of its baselines (``claims.STEMS``)."""
    out = {}
    for _, r in resultset.order(speedup).iterrows():
        for base, stem in claims.STEMS.items():
            e = stats.from_row(r, stem) if str(r["precision"]) != base else stats.EMPTY
            if e.value is not None:
                out[_key(r, base, stem)] = e
    return out


def interleaved_ratios(interleaved: pd.DataFrame | None) -> dict[tuple, stats.Estimate]:
    """Each interleaved paired ratio, by arm and baseline."""
    if interleaved is None or interleaved.empty:
        return {}
    out = {}
    for _, r in resultset.order(interleaved).iterrows():
        e = stats.from_row(r, "ratio")
        if e.value is not None:
            out[_key(r, str(r["baseline"]), "ratio")] = e
    return out


def judged(s: ResultSet) -> dict[tuple, claims.Judgement]:
    """Each judged ratio's judgement, as the verdict makes it (``claims.judgements`` of the
    set's cells with their interleaved ratios attached)."""
    df = claims.attach_interleaved(resultset.order(s.speedup), s.interleaved)
    # keyed by baseline alone: a claim the reference decided by an interleaved comparison and
    # the rerun by its repeats is the same claim, made on other evidence
    return {_key(j.row, j.baseline, CLAIM): j for j in claims.judgements(df)}


# ------------------------------------------------------------------------------- the check
@dataclass(frozen=True)
class Tolerance:
    """The between-run tolerance: ``measured`` is the median absolute relative shift of the
    throughput of the ``cells`` whose GPU was busy at least ``V.HOST_BOUND_BUSY_SHARE`` of
    their timed steps in both sets; ``value``, the one applied, is it capped at
    ``TOLERANCE_CAP`` (None where no such cell is in both sets)."""

    measured: float | None
    cells: int

    @property
    def value(self) -> float | None:
        return None if self.measured is None else min(self.measured, TOLERANCE_CAP)

    @property
    def capped(self) -> bool:
        return self.measured is not None and self.measured > TOLERANCE_CAP


def tolerance(reference: dict, rerun: dict) -> Tolerance:
    """``reference`` and ``rerun``: ``throughputs`` of each set."""
    shifts = []
    for key, (e, busy) in reference.items():
        if key not in rerun:
            continue
        e2, busy2 = rerun[key]
        if all(b is not None and b >= V.HOST_BOUND_BUSY_SHARE for b in (busy, busy2)):
            shifts.append(abs(e2.value / e.value - 1))
    return Tolerance(stats.median(shifts), len(shifts))


def _confident(e: stats.Estimate) -> bool:
    return e.method in stats.INTERVAL_METHODS and e.low is not None and e.high is not None


def inside(rerun: stats.Estimate, reference: stats.Estimate, widen: float = 0.0) -> bool | None:
    """Whether the rerun's estimate lies within the reference's 95% interval, widened by
    ``widen`` (relative) on each side; None unless both have a 95% interval (a confidence
    interval, or the reference's prediction interval for one more run)."""
    if not (_confident(rerun) and _confident(reference)):
        return None
    return reference.low * (1 - widen) <= rerun.value <= reference.high * (1 + widen)


def _side(name: str, e: stats.Estimate | None) -> dict:
    e = e or stats.EMPTY
    return e.as_dict(name) | {f"{name}_interval": e.method if e.value is not None else None}


def _base_row(kind: str, key: tuple) -> dict:
    return {"kind": kind, **dict(zip((*KEYS, "baseline", "quantity"), key))}


def estimate_row(kind: str, key: tuple, ref: stats.Estimate | None,
                 new: stats.Estimate | None, tol: Tolerance | None = None) -> dict:
    """One quantity of ``kind`` (one of ``ESTIMATED``) of the two sets, and its outcome."""
    row = _base_row(kind, key) | _side("reference", ref) | _side("rerun", new)
    if ref is None or new is None:
        return row | {"outcome": ONLY_RERUN if ref is None else ONLY_REFERENCE}
    judged_inside = inside(new, ref)
    row |= {"relative_difference": new.value / ref.value - 1, "inside": judged_inside,
            "outcome": NO_INTERVAL if judged_inside is None else
            INSIDE if judged_inside else OUTSIDE}
    if kind == THROUGHPUT and tol is not None and tol.value is not None:
        row["within_tolerance"] = inside(new, ref, tol.value)
    return row


def host_speed(s: ResultSet, experiments=None) -> float | None:
    """The median of the CPU dispatch probe (ops/s) over the set's records (of ``experiments``
    where given): the host's single-thread speed, which a host-bound cell's throughput follows
    (two machines' hosts can differ by a factor of two on the same GPU model)."""
    m = s.metrics
    if "host_probe_ops_per_s" not in m:
        return None
    if experiments is not None:
        m = m[m["experiment"].astype(str).isin(set(map(str, experiments)))]
    return stats.median(m["host_probe_ops_per_s"])


def host_bound(reference: dict, rerun: dict) -> set[tuple]:
    """The throughputs (keys of ``throughputs``) of cells whose GPU was busy less than
    ``V.HOST_BOUND_BUSY_SHARE`` of their timed steps in either set: their throughput is as much
    the host's speed as the GPU's."""
    return {k for k in (*reference, *rerun)
            if any(busy is not None and busy < V.HOST_BOUND_BUSY_SHARE
                   for busy in (reference.get(k, (None, None))[1], rerun.get(k, (None, None))[1]))}


def claim_row(kind: str, key: tuple, ref: dict | None, new: dict | None) -> dict:
    """One claim of ``kind`` (one of ``CLAIMED``) of the two sets: ``ref`` and ``new`` hold
    ``claim``, ``basis`` (what it rests on, in words) and ``estimate`` (the judged ratio)."""
    row = _base_row(kind, key)
    for name, side in zip(SIDES, (ref, new)):
        row |= _side(name, (side or {}).get("estimate"))
        row |= {f"{name}_claim": (side or {}).get("claim"),
                f"{name}_basis": (side or {}).get("basis")}
    if ref is None or new is None:
        return row | {"outcome": ONLY_RERUN if ref is None else ONLY_REFERENCE}
    return row | {"outcome": SAME if ref["claim"] == new["claim"] else
                  COMPATIBLE if stats.compatible(ref["claim"], new["claim"]) else CHANGED}


def _pairs(ref: dict, new: dict) -> list[tuple]:
    """Every key of either side: the reference's in its order, then the rerun's own."""
    return [*ref, *(k for k in new if k not in ref)]


def _judgement(j: claims.Judgement) -> dict:
    return {"claim": j.claim, "basis": j.decided_by, "gate": j.gate,
            "estimate": j.estimate if j.estimate.value is not None else None}


def check(reference, rerun,
          answers: tuple[dict, dict] | None = None) -> tuple[pd.DataFrame, Tolerance]:
    """Every quantity of the two sides, one row each (``estimate_row``, ``claim_row``), and the
    between-run tolerance the throughputs were held to. Each side is a ``ResultSet`` or
    anything with ``quantities()`` (``analysis.runs.Pooled``). ``answers``: the verdict's
    claim per experiment of each side, ``{experiment: {"claim", "basis"}}``
    (``reports.reproduce``)."""
    ref_q, new_q = reference.quantities(), rerun.quantities()
    t_ref, t_new = ref_q.throughputs, new_q.throughputs
    tol = tolerance(t_ref, t_new) if ref_q.runs == 1 else Tolerance(None, 0)
    bound = host_bound(t_ref, t_new)
    rows = [estimate_row(THROUGHPUT, k, t_ref.get(k, (None,))[0], t_new.get(k, (None,))[0],
                         tol) | {"host_bound": k in bound} for k in _pairs(t_ref, t_new)]
    for kind, name in ((PER_PROCESS, "per_process"), (INTERLEAVED, "interleaved")):
        ref, new = getattr(ref_q, name), getattr(new_q, name)
        rows += [estimate_row(kind, k, ref.get(k), new.get(k)) for k in _pairs(ref, new)]
    j_ref, j_new = ref_q.claims, new_q.claims
    rows += [claim_row(CLAIM, k, j_ref.get(k), j_new.get(k)) for k in _pairs(j_ref, j_new)]
    if answers is not None:
        a_ref, a_new = answers
        key = lambda e: (e, *[None] * (len(KEYS) + 1))  # noqa: E731  the experiment alone
        rows += [claim_row(ANSWER, key(e), a_ref.get(e), a_new.get(e))
                 for e in _pairs(a_ref, a_new)]
    return pd.DataFrame(rows, columns=COLUMNS), tol


COLUMNS = ["kind", *KEYS, "baseline", "quantity",
           *(f"{s}{part}" for s in SIDES for part in ("", "_low", "_high", "_n", "_interval")),
           "relative_difference", "inside", "within_tolerance", "host_bound", "reference_claim",
           "rerun_claim", "reference_basis", "rerun_basis", "outcome"]


def tally(frame: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Per kind, how many quantities had each outcome (every outcome, zero included)."""
    return {kind: {o: int((frame.loc[frame["kind"] == kind, "outcome"] == o).sum())
                   for o in OUTCOMES} for kind in (*ESTIMATED, *CLAIMED)}
