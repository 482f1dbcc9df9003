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
``MIN_RUNS``: a range, never counted as inside)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import stats
from ..references import CompareError
from . import reproduce

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
