"""The verdict's answer on one screen: one row per experiment (per model in a model zoo) with
the question it answers, its best mode and setting (the strongest claim its intervals support,
``analysis.claims``), that mode's ratio to its one baseline with the interval (amp-bf16 for an
FP8 mode, fp32 otherwise), the claim, peak memory against the same baseline, what limits it and
how it was decided; and the bottom line, a sentence that says the same per claim.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..analysis import claims
from ..render.numbers import (INTERVAL_NOTE, MISSING, PAIRED_NOTE, marked_value,
                              one_process_note, runs_note, times)
from ..render.settings import changes, setting_text
from ..render.table import Table, listed
from .findings import Findings
from .phrases import (accuracy_against, claim_said, decided, judged_ratio, limits,
                      memory_against, same_cell)

COLUMNS = ["experiment", "question it answers", "best mode and setting",
           "× its baseline [95% CI]", "claim", "peak memory ×", "what limits it",
           "how it was decided"]
# workloads named after what builds them rather than what they train: the model names them
BY_MODEL = ("torchvision", "timm", "custom", "transformers")


def subject_of(df: pd.DataFrame) -> str:
    """What one experiment trains, in its question: the workload, or the model for a workload
    that builds any (one model by name); a model file of the user's own whose builder has no
    name of its own (``model()``) by the experiment's name."""
    w = str(df["workload"].iloc[0])
    if w not in BY_MODEL or df["model"].nunique() != 1:
        return w
    model = str(df["model"].iloc[0])
    if w == "custom" and model in V.CUSTOM_FACTORIES and "experiment" in df:
        return str(df["experiment"].iloc[0])
    return model


def question(df: pd.DataFrame) -> str:
    """What one experiment asks, from what it ran: FP8 against bf16; how far precision and
    execution knobs take a workload beyond plain fp32 (no fp32 cell at the reduced cells'
    settings); accuracy parity; else whether Tensor Cores speed it up, across what it varies."""
    subject = subject_of(df)
    modes = set(df["precision"].astype(str))
    # FP8 asks its own question only where an FP8 cell ran: where none could (no FP8 units,
    # no torchao), the experiment answers what its other modes measured
    ran = df[df["repeats_ok"].fillna(0) > 0] if "repeats_ok" in df else df
    accuracy = "test_accuracy" in df and df["test_accuracy"].notna().any()
    if set(ran["precision"].astype(str)) & claims.FP8:
        return (f"does FP8 keep the accuracy of {subject}, and train it faster than "
                f"{V.FP8_BASELINE}?" if accuracy else
                f"does FP8 train {subject} faster than {V.FP8_BASELINE}?")
    gains = "gain" in df and df["gain"].notna().any()
    if V.BASELINE not in modes and not gains:
        return f"does reduced precision speed up {subject}?"
    reduced = df[df["precision"].astype(str) != V.BASELINE]
    fp32 = {tuple(str(r[k]) for k in V.BASELINE_KEYS)
            for _, r in df[df["precision"].astype(str) == V.BASELINE].iterrows()}
    if len(reduced) and not any(tuple(str(r[k]) for k in V.BASELINE_KEYS) in fp32
                                for _, r in reduced.iterrows()):
        return f"how far do precision and execution knobs take {subject} beyond plain fp32?"
    if accuracy:
        return f"does reduced precision keep the accuracy of {subject}, and speed it up?"
    varied = (["batch sizes"] if df["batch_size"].nunique() > 1 else []) + \
        [V.axis(a).label + "s" for a in V.AXIS_NAMES if a != "model"
         and df[a].astype(str).nunique() > 1]
    return f"do Tensor Cores speed up {subject} over fp32" + \
        (f", across {' and '.join(varied)}" if varied else "") + "?"


@dataclass(frozen=True)
class Answer:
    """One experiment's row of the answer, and the judgement it rests on."""

    experiment: str
    cells: list[str]
    judgement: claims.Judgement | None
    findings: Findings | None

    @property
    def claim(self) -> str:
        return "" if self.judgement is None else self.judgement.claim


def _fp32_slowdown(x: Findings, j: claims.Judgement) -> str:
    """An FP8 cell not judged against bf16 that was slower than fp32 all the same."""
    for s in x.slowdowns:
        if same_cell(s.row, j.row) and s.baseline == V.BASELINE:
            return f"; against {V.BASELINE}: {claim_said(s)}"
    return ""


def _accuracy(r) -> str:
    """The judged mode's accuracy against fp32's, paired by seed, where the experiment
    measured it (its question asks): the difference with its interval and the claim it allows."""
    a = accuracy_against(r)
    if a is None:
        return ""
    return f"; accuracy {a[1].split(':')[0]} ({a[0]} points against {V.BASELINE})"


def _cell_name(j: claims.Judgement, pick: claims.Judgement, axes) -> str:
    """A cell beside the pick, by what differs: its mode where that differs, and its setting
    where that does."""
    r, same = j.row, str(j.row["precision"]) == str(pick.row["precision"])
    where = setting_text(r, axes)
    return where if same else (f"{r['precision']}" if where == setting_text(pick.row, axes)
                               else f"{r['precision']}, {where}")


def _beside(j: claims.Judgement, x: Findings) -> str:
    """What a reader must know of the pick's neighbours: those it ties with (``stats.tied``:
    the same claim, overlapping intervals; the pick is the fastest of them), and those whose
    ratio is higher but whose repeats cannot claim it (``claims.passed_over``)."""
    out = []
    if j.tied:
        names = " and ".join(_cell_name(t, j, x.axes) for t in j.tied)
        out.append(f"tied with {names} within their intervals; the higher mean")
    over: dict[str, list[str]] = {}
    for o in claims.passed_over(x.reduced, j):
        over.setdefault(o.claim, []).append(f"{_cell_name(o, j, x.axes)} "
                                            f"{times(o.estimate.value)}")
    out += [f"{', '.join(names)} not judged: {GATE_WORDS.get(c, c)}" for c, names in over.items()]
    return f" ({'; '.join(out)})" if out else ""


def answer(name: str, x: Findings | None) -> Answer:
    if x is None:
        return Answer(name, [name, MISSING, "no configuration finished", MISSING, "",
                             MISSING, MISSING, MISSING], None, None)
    q = question(x.df)
    j = x.strongest
    if j is None:
        top = x.fastest
        why = "only fp32 ran" if not len(x.reduced) else "no fp32 run to judge it against"
        return Answer(name, [name, q, f"{top['precision']}, {setting_text(top, x.axes)}",
                             f"{MISSING} ({why})", "", MISSING, limits(top, x.all),
                             f"n = {int(top['repeats_ok'])}"], None, x)
    r = j.row
    ratio = judged_ratio(j) + _beside(j, x)
    if j.stem == "gain":
        ratio += f" (also changed: {', '.join(changes(r, 'plain_')) or 'nothing'})"
    said = claim_said(j)
    if j.claim == stats.NO_BASELINE:
        said = f"not judged: no {j.baseline} run" + _fp32_slowdown(x, j)
    said += _accuracy(r)
    return Answer(name, [name, q, f"{r['precision']}, {setting_text(r, x.axes)}", ratio, said,
                         memory_against(j, x.all), limits(r, x.all), decided(j, x.all)], j, x)


def answers(facts: list[dict]) -> list[Answer]:
    return [answer(f["experiment"], f["findings"]) for f in facts]


def table(rows: list[Answer], evidence: str = "") -> Table:
    """``evidence``: how often one process's interval held a higher level's mean
    (``analysis.runs.Coverage``), said under the mark of such intervals."""
    notes = [INTERVAL_NOTE, stats.CLAIM_NOTE]
    if any(a.judgement is not None and a.judgement.decided_by == claims.INTERLEAVED
           for a in rows):
        notes.append(PAIRED_NOTE)
    runs = [a.judgement.estimate.n for a in rows
            if a.judgement is not None and a.judgement.estimate.method == stats.RUNS]
    if runs:
        notes.append(runs_note(runs))
    if any(V.ONE_PROCESS_MARK in c for a in rows for c in a.cells):
        notes.append(one_process_note(evidence))
    return Table("The answer, per experiment", COLUMNS, [a.cells for a in rows],
                 align="lllrllll", notes=notes)


# ---------------------------------------------------------------------------- bottom line
def _named(a: Answer) -> str:
    """An experiment with its judged mode and ratio, the ratio as the answer table prints it
    without its interval: its digits and mark ("2.9×§ fp32", ``marked_value``)."""
    j = a.judgement
    base = "plain fp32" if j.stem == "gain" else j.baseline
    mode = j.row["precision"] + (" with other knobs changed" if j.stem == "gain" else "")
    return f"{a.experiment} ({mode}, {marked_value(j.estimate, times)} {base})" \
        if j.estimate.value is not None else f"{a.experiment} ({mode})"


GROUPS = (("pays off in", (stats.PAYS_OFF,)),
          ("is faster, though not shown to reach the threshold, in", (stats.FASTER,)),
          (f"is equivalent to its baseline within ±{stats.MARGIN:.0%} in", (stats.EQUIVALENT,)),
          ("is slower in", (stats.SLOWER, stats.ALL_SLOWER)),
          ("is inconclusive in", (stats.INCONCLUSIVE,)),
          ("cannot be judged from fewer than three repeats in", (stats.UNJUDGED,)))
GATE_WORDS = {stats.TWO_MODES: "two modes", stats.UNSTEADY: "unsteady windows",
              stats.UNCOUNTED: "compiled inside the timed window",
              stats.HOST_BOUND: "host-bound, no interleaved comparison",
              stats.NO_BASELINE: "no baseline run"}


def bottom_line(rows: list[Answer]) -> str:
    """Per claim, the experiments that reach it (with the mode and its ratio), those whose
    repeats cannot decide it and why, and those with nothing to judge."""
    parts = []
    for words, kinds in GROUPS:
        named = [_named(a) for a in rows if a.claim in kinds]
        if named:
            parts.append(f"{words} {listed(named)}")
    gated = [f"{a.experiment} ({GATE_WORDS[a.claim]})" for a in rows if a.claim in GATE_WORDS]
    if gated:
        parts.append(f"is not judged in {listed(gated)}")
    nothing = [a.experiment for a in rows if a.judgement is None]
    said = ("Reduced precision " + "; it ".join(parts) + "." if parts else
            "No experiment has a reduced-precision cell to judge.")
    # the crossover map's shapes are the FP8 clause's (fp8_findings.starts_to_pay_short)
    slow = [f"{a.experiment} ({listed(s)})" for a in rows
            if not a.experiment.startswith(V.CROSSOVER_PREFIX) and (s := _other_slowdowns(a))]
    if slow:
        said += f" Slower than its baseline: {listed(slow)}."
    if nothing and parts:
        said += f" Nothing to judge in {listed(nothing)} (no reduced precision against fp32)."
    return said


def _other_slowdowns(a: Answer) -> list[str]:
    """The slowdowns of an experiment besides its answer, as "<mode> against <baseline>"."""
    if a.findings is None:
        return []
    j = a.judgement
    return [f"{s.row['precision']} at bs {int(s.row['batch_size'])} against {s.baseline}"
            for s in a.findings.slowdowns
            if j is None or not same_cell(s.row, j.row) or s.baseline != j.baseline]
