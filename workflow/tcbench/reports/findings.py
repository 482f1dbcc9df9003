"""The findings of one experiment, for the verdict: a table of its cells (``cell_table``) and at
most ``MAX_SENTENCES`` plain sentences, one function per finding (``FINDINGS``, in the order a
section says them; the first that have something to say are kept).

Every number carries its interval and says what it is; a claim ("pays off", "faster",
"equivalent") is made only where a 95% confidence interval supports it (``stats.claim``), each
cell judged against its one baseline (``analysis.claims``), and only where the repeats can
decide it (two modes, unsteady windows and host-bound cells without an interleaved comparison
are "not judged", and said so where the number is shown). The phrases shared with the verdict's
one-screen table (``judged_ratio``, ``claim_said``, ``decided``, ``memory_against``,
``limits``) are here, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..analysis import claims, diagnosis
from ..analysis import throughput
from ..render.numbers import memory, one_process_note, runs_note, times
from ..render.settings import setting_text, shown_axes
from ..render.table import Table
from .evidence import brief
from .phrases import (accuracy_against, baseline_row, besides_precision, claim_said, cure, decided,  # noqa: F401
                      gain_judgement, interleaved_level, judged_ratio, limits, memory_against,
                      memory_ratio, n_ok, n_status, not_precisions, ratio_text, same_cell,
                      slow_reason, throughput_text)

MAX_SENTENCES = 3


@dataclass
class Section:
    title: str
    sentences: list[str] = field(default_factory=list)
    table: Table | None = None


def config(row, axes) -> str:
    return f"{row['precision']} at {setting_text(row, axes, ', ').replace('bs ', 'batch size ')}"


# ------------------------------------------------------------------------------ findings
class Findings:
    """One experiment's cells, each cell's judgement, and the rows the findings refer to: the
    strongest claim (``claims.strongest``; against the plain fp32 baseline where no cell has
    fp32 at its own setting), every slowdown, the fastest configuration. ``everything``: the
    whole set, where baselines and CUDA-graphs cells of other experiments are found."""

    def __init__(self, df: pd.DataFrame, everything: pd.DataFrame | None = None):
        self.df = df
        self.all = df if everything is None else everything
        self.axes = [a for a in shown_axes(df) if a != "model" or df["model"].nunique() > 1]
        self.ok = df[(df["repeats_ok"] > 0)].dropna(subset=[V.HEADLINE])
        self.fp32 = self.ok[self.ok["precision"].astype(str) == V.BASELINE]
        self.reduced = self.ok[self.ok["precision"].astype(str) != V.BASELINE]
        self.fastest = self.ok.loc[self.ok[V.HEADLINE].astype(float).idxmax()] \
            if len(self.ok) else None
        self.strongest = claims.strongest(self.reduced)
        if self.strongest is None:
            gains = [j for j in (gain_judgement(r, self.all) for _, r in self.reduced.iterrows())
                     if j is not None]
            self.strongest = max(gains, key=lambda j: j.key) if gains else None
        self.slowdowns = claims.slowdowns(self.reduced)
        self.focus = self.fastest if self.strongest is None else self.strongest.row

    def config(self, row) -> str:
        return config(row, self.axes)

    def judgement(self, row) -> claims.Judgement | None:
        """A cell's one judgement; against the plain fp32 baseline only in an experiment
        answered so (none of its cells has fp32 at its own setting)."""
        if str(row["precision"]) == V.BASELINE:
            return None
        j = claims.judgement(row)
        if j is None and self.strongest is not None and self.strongest.stem == "gain":
            return gain_judgement(row, self.all)
        return j


def answer(x: Findings) -> list[str]:
    """The experiment's answer: its strongest claim, or why it has none."""
    if not len(x.reduced):
        return ["Only strict fp32 ran: there is no reduced precision to judge."]
    j = x.strongest
    if j is None:
        modes = ", ".join(dict.fromkeys(x.reduced["precision"].astype(str)))
        return [f"No fp32 run to judge {modes} against."]
    what = x.config(j.row)
    if j.claim == stats.NO_BASELINE:
        return [f"{what} is not judged: no {j.baseline} run shares its setting, and an FP8 "
                f"mode claims nothing from fp32 (which would credit it with {j.baseline}'s own "
                f"gain)."]
    if j.stem == "gain":
        return [f"Against the plain fp32 baseline ({j.row['plain_experiment']}, batch size "
                f"{int(j.row['plain_batch_size'])}, eager), {what} reaches "
                f"{judged_ratio(j)}'s throughput, with {besides_precision(j.row)} changed "
                f"besides precision, so the ratio is not precision's alone: it "
                f"{stats.CLAIM_WORDS[j.claim]}."]
    way = stats.direction(j.estimate) if j.claim == stats.EQUIVALENT else ""
    words = stats.CLAIM_WORDS[j.claim] + (f", {way}" if way else "")
    how = f" ({interleaved_level(j.row, j.stem)})" if j.decided_by == claims.INTERLEAVED else ""
    return [f"{what}: {judged_ratio(j)}'s throughput at the same setting{how}: it {words}."]


def slowdowns(x: Findings) -> list[str]:
    """Every slowdown other than the answer, with the record's reason where it has one."""
    slow = [s for s in x.slowdowns if x.strongest is None
            or not same_cell(s.row, x.strongest.row) or s.baseline != x.strongest.baseline]
    if not slow:
        return []
    parts = []
    for s in slow:
        why = slow_reason(s.row)
        parts.append(f"{x.config(s.row)}, {claim_said(s)} against {s.baseline}"
                     + ("" if s.claim == stats.ALL_SLOWER else f" ({judged_ratio(s)})")
                     + (f" ({why})" if why else ""))
    return ["Slower than its baseline: " + "; ".join(parts) + "."]


def what_limits(x: Findings) -> list[str]:
    """What limits the answer's configuration (the fastest where there is no answer)."""
    row = x.focus
    if row is None:
        return []
    said = brief(row, x.config(row))
    c = cure(row, x.all) if diagnosis.host_bound(row) else None
    return [said[:-1] + f"; {c}." if c else said]


def memory_note(x: Findings) -> list[str]:
    """A memory change precision cannot cause, explained rather than counted as a saving."""
    for _, r in x.reduced.iterrows():
        j = x.judgement(r)
        if not_precisions(j, x.all):
            base = baseline_row(j, x.all)
            return [f"{x.config(r)} has {times(memory_ratio(j, x.all))} {j.baseline}'s peak "
                    f"memory ({memory(r['max_memory_allocated_bytes'])} vs "
                    f"{memory(base['max_memory_allocated_bytes'])}), though "
                    f"{r['precision']} stores every tensor as {j.baseline} does: the record "
                    f"does not say what made the difference (it measures the peak, not its "
                    f"parts), so it is not counted as a saving."]
    return []


def memory_made_the_difference(x: Findings) -> list[str]:
    """Where fp32 ran out of memory and a reduced precision fit."""
    out = []
    for _, r in x.df[(x.df["precision"].astype(str) == V.BASELINE)
                     & (x.df["status"] == V.OOM)].iterrows():
        fits = x.reduced[(x.reduced["batch_size"] == r["batch_size"])
                         & x.reduced["max_memory_allocated_bytes"].notna()]
        if len(fits):
            f = fits.loc[fits["max_memory_allocated_bytes"].idxmin()]
            out.append(f"fp32 ran out of memory at batch size {int(r['batch_size'])}, where "
                       f"{f['precision']} fit in {memory(f['max_memory_allocated_bytes'])}.")
    return out[:1]


# in the order a section says them; the first MAX_SENTENCES that say something are kept
FINDINGS = (answer, slowdowns, what_limits, memory_note, memory_made_the_difference)


# ----------------------------------------------------------------------------- the table
def _accuracy(r) -> str:
    a = accuracy_against(r)
    return "" if a is None else f"{a[0]} ({a[1]})"


def cell_table(x: Findings) -> Table:
    """Every cell of the experiment: throughput, its one judgement (ratio, claim and how it was
    decided), peak memory against the same baseline, the accuracy difference where measured,
    and what limits it."""
    acc = bool("accuracy_diff" in x.df and x.df["accuracy_diff"].notna().any())
    speed = throughput.main_column(x.df)   # tokens/s for a token workload: what its users compare
    cols = ["setting", "precision", "n", throughput.unit(speed), "× its baseline", "claim",
            "how it was decided", "peak memory ×", *(["Δ accuracy (points)"] if acc else []),
            "limited by"]
    rows, across = [], []
    for _, r in x.df.iterrows():     # in the verdict's order: setting, then precision
        j = x.judgement(r) if n_ok(r) else None
        if j is not None and j.estimate.method == stats.RUNS:
            across.append(j.estimate.n)
        rows.append([setting_text(r, x.axes), str(r["precision"]), n_status(r),
                     throughput_text(r, speed), "" if j is None else judged_ratio(j), claim_said(j),
                     "" if j is None else decided(j, x.all),
                     "" if j is None else memory_against(j, x.all),
                     *([_accuracy(r)] if acc else []), limits(r, x.all)])
    # a section read on its own says what its marks mean, as the answer table does
    one = any(V.ONE_PROCESS_MARK in c for row in rows for c in row)
    return Table("", cols, rows, align="lllrrllr" + "r" * acc + "l",
                 notes=([runs_note(across)] if across else []) + ([one_process_note()] if one else []))


def experiment_section(df: pd.DataFrame, experiment: str,
                       everything: pd.DataFrame | None = None) -> tuple[Section, dict]:
    """The findings of one experiment, and the facts the one-screen table is built from."""
    workload = df["workload"].iloc[0]
    data = df["data"].dropna().astype(str)
    sec = Section(f"{experiment} ({workload}" + (f", {data.iloc[0]} data)" if len(data) else ")"))
    x = Findings(df, everything)
    sec.table = cell_table(x)
    if x.fastest is None:
        sec.sentences.append("No configuration finished, so there is nothing to compare.")
        return sec, {"experiment": experiment, "findings": None}
    for finding in FINDINGS:
        sec.sentences += finding(x)
        if len(sec.sentences) >= MAX_SENTENCES:
            break
    sec.sentences = sec.sentences[:MAX_SENTENCES]
    return sec, {"experiment": experiment, "findings": x}


def judged(j: claims.Judgement, what: str) -> str:
    """A judgement as a sentence tail: "<what>, <ratio> the throughput of <baseline> at the
    same setting: it <claim>"."""
    return (f"{what}, {ratio_text(j.row, j.stem)} the throughput of {j.baseline} at the same "
            f"setting: it {stats.CLAIM_WORDS[j.claim]}")


def host_bound_decisions(df: pd.DataFrame) -> str:
    """How the set's host-bound reduced-precision cells (``diagnosis.host_bound``) were
    decided: how many by an interleaved comparison, and each that was not, with why."""
    fp8 = {tuple(str(r[k]) for k in V.BASELINE_KEYS) for _, r in df.iterrows()
           if str(r["precision"]) in claims.FP8}
    # an FP8 setting's amp-bf16 arm is its baseline, with no question of its own
    cells = [r for _, r in df[df["precision"].astype(str) != V.BASELINE].iterrows()
             if diagnosis.host_bound(r) and n_ok(r) and not (
                 str(r["precision"]) == V.FP8_BASELINE
                 and tuple(str(r[k]) for k in V.BASELINE_KEYS) in fp8)]
    if not cells:
        return ""
    js = [(r, claims.judgement(r)) for r in cells]
    rest = [(r, j) for r, j in js if j is None or j.decided_by != claims.INTERLEAVED]
    out = (f"Of the {len(cells)} host-bound reduced-precision cells, "
           f"{len(cells) - len(rest)} were decided by an interleaved comparison")
    if not rest:
        return out + "."
    many = df.groupby("experiment", observed=True)["model"].nunique()

    def name(r, j) -> str:
        where = r["experiment"] + (f": {r['model']}" if many.get(r["experiment"], 1) > 1
                                   else "")
        why = (f"no {claims.baseline_of(r['precision'])} cell at its setting" if j is None
               else f"no {j.baseline} run" if j.claim == stats.NO_BASELINE
               else "no interleaved comparison ran: " + claim_said(j))
        return f"{where} {r['precision']} at bs {int(r['batch_size'])} ({why})"
    return out + f"; {len(rest)} were not: " + "; ".join(name(r, j) for r, j in rest) + "."
