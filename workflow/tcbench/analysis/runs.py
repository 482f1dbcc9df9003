"""The runs level: one study run several times, on other machines or days, pooled into one
reference that a further rerun is checked against (``analysis.reproduce``).

Processes on one machine share its GPU and its host: on the H200 the GPU-bound interleaved
ratios of one machine differed from the next one's by up to 0.7%, and the hosts' single-thread
speed by 1.5×, moving every host-bound cell's throughput and ratios with it. Intervals from one
machine's processes cannot see that, so a rerun on another machine falls outside them (the
standard: an interval is built from the highest level that varies). Pooling ``MIN_RUNS`` or
more result sets of the same GPU model, each quantity of the reference is the geometric mean
of the runs' estimates with the 95% prediction interval for one more run (``stats.across_runs``,
``predict``), and each judged ratio's claim is made from the runs' 95% t interval of the mean
(``stats.RUNS``). A quantity not in every run pools the runs that have it (fewer than
``MIN_RUNS``: a range, never counted as inside).

A set's own verdict goes to the same level (``siblings``, ``across``): an experiment that ran on
``MIN_RUNS`` or more machines, the set included, is judged from the geometric mean of every
run's own interleaved ratio with the 95% t interval across the runs, this machine's ratio kept
beside it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import resultset, stats
from .. import vocabulary as V
from ..references import CompareError
from . import claims, reproduce

MIN_RUNS = stats.MIN_CI_N
DIFFERS = "differs between the runs"


@dataclass(frozen=True)
class Pooled:
    """Several result sets of one GPU model (``pool``), read as one reference."""

    sets: tuple[reproduce.ResultSet, ...]

    @property
    def run(self) -> str:
        return " + ".join(s.run for s in self.sets)

    @property
    def folder(self) -> str:
        return ", ".join(str(s.folder) for s in self.sets)

    @property
    def devices(self) -> list[str]:
        return self.sets[0].devices

    def quantities(self) -> reproduce.Quantities:
        each = [s.quantities() for s in self.sets]
        tp = _by_key(each, "throughputs")
        return reproduce.Quantities(
            # a cell host-bound in any run is host-bound: its lowest GPU-busy share stands
            {k: (_predicted(e.value for e, _ in v),
                 min((b for _, b in v if b is not None), default=None)) for k, v in tp.items()},
            {k: _predicted(e.value for e in v) for k, v in _by_key(each, "per_process").items()},
            {k: _predicted(e.value for e in v) for k, v in _by_key(each, "interleaved").items()},
            {k: claim(v) for k, v in _by_key(each, "claims").items()},
            runs=len(self.sets))


def pool(folders) -> Pooled:
    """The result sets in ``folders`` (``MIN_RUNS`` or more, one GPU model), read and checked."""
    folders = [Path(f) for f in folders]
    if len(folders) < MIN_RUNS:
        raise CompareError(
            f"a reference of {len(folders)} runs ({', '.join(map(str, folders))}): an interval "
            f"across runs needs at least {MIN_RUNS}; name one reference set, or {MIN_RUNS} or "
            f"more runs of the same study (reference=a,b,c)")
    if len(set(f.resolve() for f in folders)) < len(folders):
        raise CompareError(f"a run is named twice among the references: {folders}")
    sets = tuple(reproduce.load(f) for f in folders)
    for s in sets[1:]:
        reproduce.same_gpu(sets[0], s)
    return Pooled(sets)


def _by_key(each: list[reproduce.Quantities], name: str) -> dict[tuple, list]:
    """Per key of the ``name`` quantities (the first run's order, then the others'), the value
    of every run that has it."""
    out: dict[tuple, list] = {}
    for q in each:
        for k, v in getattr(q, name).items():
            out.setdefault(k, []).append(v)
    return out


def _predicted(values) -> stats.Estimate:
    return stats.across_runs(list(values), predict=True)


def claim(judgements: list[dict]) -> dict:
    """One judged ratio's claim across runs (each run's ``reproduce._judgement``): made from
    the runs' 95% t interval of the mean where every run judged it; where a run could not (a
    gate: unsteady, noisy, not judged) the runs' common claim, or ``DIFFERS``."""
    est = stats.across_runs([j["estimate"].value for j in judgements
                             if j.get("estimate") is not None])
    n = len(judgements)
    bases = sorted({str(j["basis"]) for j in judgements})
    basis = f"{n} runs' judged ratios ({', '.join(bases)}), {est.label}"
    if any(j.get("gate") for j in judgements) or est.value is None:
        claims = {j["claim"] for j in judgements}
        return {"claim": claims.pop() if len(claims) == 1 else DIFFERS, "basis": basis,
                "estimate": est if est.value is not None else None}
    return {"claim": stats.claim(est), "basis": basis, "estimate": est}


def answers(each: list[dict]) -> dict:
    """The verdict's answer per experiment across runs (each run's ``{experiment: {"claim",
    "basis", "estimate"}}``): the runs' claim where they all make the same one, else
    ``DIFFERS`` with each run's; the estimate pooled as the runs' t interval of the mean."""
    out = {}
    for e in dict.fromkeys(k for a in each for k in a):
        given = [a[e] for a in each if e in a]
        claims = [g["claim"] for g in given]
        bases = list(dict.fromkeys(str(g["basis"]) for g in given))
        est = stats.across_runs([g["estimate"].value for g in given
                                 if g.get("estimate") is not None])
        same = len(set(claims)) == 1 and len(given) == len(each)
        out[e] = {"claim": claims[0] if same else f"{DIFFERS}: {'; '.join(claims)}",
                  "basis": "; ".join(bases),
                  "estimate": est if est.value is not None else None}
    return out


# ------------------------------------------------------- a set's verdict at the runs level
# a set's reruns by name: ``<base>-rerun``, ``<base>-rerun2``, ... beside ``<base>`` itself
RERUN = re.compile(r"-rerun\d*$")
SIBLINGS_HELP = ("the interleaved.csv of the study's other runs on other machines: its experiments "
                 "that ran on enough of them are judged across the runs")
OWN = claims.OWN     # this machine's own interleaved ratio, kept beside the runs-level one


def base_of(run: str) -> str:
    """The study a run's name reruns: the name without its ``-rerun\\d*`` suffix."""
    return RERUN.sub("", str(run))


def siblings(folder, runs_with=()) -> list[Path]:
    """The other committed runs of the study of the result set in ``folder`` whose
    interleaved comparisons its verdict pools: every set beside it named ``<base>`` or
    ``<base>-rerun*`` (``base_of``) that has an interleaved.csv, and the sets named in
    ``runs_with`` (the config key, for runs of other names), each of which must exist and have
    run on the same GPU model. A container set (``<base>-container*``) is another way of running, not a rerun: only
    ``runs_with`` makes it one."""
    folder = Path(folder)
    table = V.SET_TABLES["interleaved"]
    base = base_of(folder.name)
    named = [f for f in sorted(folder.parent.iterdir()) if f.is_dir()
             and f.name != folder.name and base_of(f.name) == base
             and (f.name == base or RERUN.search(f.name))] if folder.parent.is_dir() else []
    found = [f for f in named if (f / table).exists()]
    for name in runs_with or ():
        f = folder.parent / str(name)
        if f.resolve() == folder.resolve():
            raise CompareError(f"runs_with names {name!r}, the set itself: name the other "
                               f"runs of its study")
        if not (f / table).exists():
            have = ", ".join(sorted(p.name for p in folder.parent.iterdir()
                                    if (p / table).exists())) if folder.parent.is_dir() else ""
            raise CompareError(f"runs_with names {name!r}, but {f / table} does not exist: "
                               f"name a result set under {folder.parent}/ with interleaved "
                               f"comparisons ({have or 'none there'})")
        mine, theirs = _devices(folder), _devices(f)
        if mine and theirs and mine != theirs:
            raise CompareError(f"runs_with names {name!r}, which ran on {', '.join(theirs)}; "
                               f"{folder.name} ran on {', '.join(mine)}: runs of another GPU "
                               f"model are compared (snakemake compare), not pooled")
        if f not in found:
            found.append(f)
    return found


def _devices(folder: Path) -> list[str]:
    """The GPU models a set's records name (none where it has no metrics.csv yet)."""
    path = folder / V.SET_TABLES["metrics"]
    if not path.exists():
        return []
    m = pd.read_csv(path, usecols=lambda c: c == "device_name")
    return sorted(m["device_name"].dropna().astype(str).unique()) if "device_name" in m else []


def _ratios(il: pd.DataFrame) -> dict[tuple, float]:
    """Each ok interleaved ratio of a set's interleaved.csv, by cell and baseline."""
    ok = il[il["status"].astype(str) == V.OK] if "status" in il else il
    return {_key(r): stats.finite(r["ratio"]) for _, r in ok.iterrows()
            if stats.finite(r.get("ratio")) is not None}


def _key(r) -> tuple:
    # an axis a table made before it existed does not name holds its default
    return (*(str(r[k]) if k in r.index else _ASSUMED[k] for k in reproduce.KEYS),
            str(r["baseline"]))


_ASSUMED = {a.name: a.assumed for a in V.AXES}


def across(own: pd.DataFrame | None, others: list[pd.DataFrame], names=()) -> pd.DataFrame | None:
    """A set's interleaved comparisons (interleaved.csv) judged at the runs level where its
    study ran on ``MIN_RUNS`` or more machines: an experiment that this set and at least
    ``MIN_RUNS`` − 1 of ``others`` (the sibling runs' interleaved.csv, ``names`` theirs) hold
    gets, per ratio every one of those runs measured, the geometric mean of the runs' ratios
    with the 95% t interval across them (``stats.RUNS``), n the runs; this machine's own
    ratio and interval move to ``own_``-prefixed columns and ``runs`` names the runs pooled.
    Other experiments and ratios stay as measured here. None stays None."""
    if own is None or own.empty:
        return own
    out = own.reset_index(drop=True)     # one label per row: each is set on its own
    mine = _ratios(own)
    theirs = [(n, _ratios(o)) for n, o in zip(names or [""] * len(others), others)]
    held = {e: [n for n, t in theirs if any(k[0] == e for k in t)]
            for e in dict.fromkeys(out["experiment"].astype(str))}
    cols = ("ratio", "ratio_low", "ratio_high", "ratio_n", "ratio_interval")
    for c in cols:
        out[OWN + c] = None
    out["runs"] = None
    for i, r in out.iterrows():
        key = _key(r)
        if key not in mine or 1 + len(held[str(r["experiment"])]) < MIN_RUNS:
            continue
        each = [(n, t[key]) for n, t in theirs if key in t]
        if 1 + len(each) < MIN_RUNS:
            continue
        e = stats.across_runs([mine[key], *(v for _, v in each)])
        for c in cols:
            out.at[i, OWN + c] = r.get(c)
        out.at[i, "ratio"], out.at[i, "ratio_low"], out.at[i, "ratio_high"] = \
            e.value, e.low, e.high
        out.at[i, "ratio_n"], out.at[i, "ratio_interval"] = e.n, e.method
        out.at[i, "runs"] = "; ".join([str(r.get("run", "")), *(n for n, _ in each)])
    return out


def read_across(own: Path | None, others) -> pd.DataFrame | None:
    """``across`` of the interleaved.csv files ``own`` and ``others`` (a missing own file:
    None, a set without interleaved comparisons)."""
    if own is None or not Path(own).exists() or not Path(own).stat().st_size:
        return None
    others = [Path(p) for p in others or ()]
    return across(resultset.read_raw(own), [resultset.read_raw(p) for p in others],
                  [p.parent.name for p in others])


def sibling_tables(folder, runs_with=()) -> list[str]:
    """The interleaved.csv of every run of ``siblings``: what a verdict judged across runs
    reads (the workflow's inputs)."""
    return [str(f / V.SET_TABLES["interleaved"]) for f in siblings(folder, runs_with)]


@dataclass(frozen=True)
class Coverage:
    """How often one interleaved process's own 95% interval held the mean of the level above
    it (``process_coverage``): the measured cost of judging a ratio from one process."""

    held: int
    total: int
    level: str           # "runs": the mean over the study's runs; "processes": over the set's
    runs: int            # the runs pooled (1 at the processes level)
    processes: int       # a comparison's processes in a run (the most common count)
    rounds: int          # a process's rounds (the most common count)

    def text(self) -> str:
        share = f"{self.held} of {self.total} times ({100 * self.held / self.total:.0f}%)"
        each = f"{self.processes} processes of {self.rounds} rounds"
        if self.level == "runs":
            return (f"Measured: where a comparison ran as {each} on each of {self.runs} "
                    f"machines, one process's interval held the mean over the machines {share}.")
        return (f"Measured: where a comparison ran as {each}, one process's interval held the "
                f"mean of the processes {share}.")


def process_coverage(own: pd.DataFrame | None, others=()) -> Coverage | None:
    """How often each process's own interval (interleaved_processes.csv) held the mean of its
    ratio at the highest level measured: over the runs, where ``MIN_RUNS`` or more runs (the
    set, ``own``, and ``others``) measured it, each run's ratio the geometric mean of its
    processes; else over the set's own processes, where ``MIN_RUNS`` or more measured it. None
    where neither level was measured (a set of one process a setting)."""
    if own is None or own.empty:
        return None
    frames = [f for f in (own, *others) if f is not None and not f.empty]
    rows = pd.concat(frames, ignore_index=True)
    rows = rows[rows["status"].astype(str) == V.OK] if "status" in rows else rows
    rows = rows[[all(stats.finite(r.get(c)) for c in ("ratio", "ratio_low", "ratio_high"))
                 for _, r in rows.iterrows()]]
    if rows.empty:
        return None
    rows = rows.assign(key=[_key(r) for _, r in rows.iterrows()],
                       log=np.log(rows["ratio"].astype(float)))
    by_run = rows.groupby(["key", "run"])["log"].mean()
    per_key = by_run.groupby(level="key").agg(["mean", "count"])
    level, means = "runs", per_key.loc[per_key["count"] >= MIN_RUNS, "mean"]
    if means.empty:      # too few runs: the set's own processes are the highest level it has
        level = "processes"
        rows = rows[rows["run"].isin(set(own["run"]))]
        per_key = rows.groupby("key")["log"].agg(["mean", "count"])
        means = per_key.loc[per_key["count"] >= MIN_RUNS, "mean"]
    judged = rows[rows["key"].isin(means.index)]
    if judged.empty:
        return None
    mean = np.exp(judged["key"].map(means).astype(float))
    held = int(((judged["ratio_low"] <= mean) & (mean <= judged["ratio_high"])).sum())
    counts = judged.groupby(["key", "run"]).size()
    return Coverage(held, len(judged), level, int(judged["run"].nunique()) if level == "runs"
                    else 1, int(counts.mode().iloc[0]), int(judged["rounds"].mode().iloc[0]))


def read_coverage(interleaved: Path | None, others=()) -> Coverage | None:
    """``process_coverage`` of the interleaved_processes.csv beside the interleaved.csv
    ``interleaved`` and each of ``others`` (a set without one: None)."""
    name = V.SET_TABLES["interleaved_processes"]
    paths = [Path(p).parent / name for p in (interleaved, *(others or ())) if p is not None]
    if not paths or not paths[0].exists() or not paths[0].stat().st_size:
        return None
    frames = [resultset.read_raw(p) for p in paths if p.exists() and p.stat().st_size]
    return process_coverage(frames[0], frames[1:])
