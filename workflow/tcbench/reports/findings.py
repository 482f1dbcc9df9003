"""The findings of one experiment, for the verdict: one function per finding, each taking the
experiment's cells (``Findings``) and returning its sentences (none where it has nothing to
say). ``FINDINGS`` is their order; a new finding is one function here and its entry there.

Every sentence carries the numbers it rests on, with n and the kind of interval; a claim
("faster", "pays off", "equivalent") is made only where a 95% confidence interval supports
it (``stats.claim``), each cell judged against its one baseline (``analysis.claims``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..analysis import claims
from ..analysis import throughput as TP
from ..render.numbers import (memory, missing, n_text, num, pct, percent, points, spread_prose,
                              times, with_interval)
from ..render.settings import changes, setting_text, shown_axes
from .evidence import evidence


@dataclass
class Section:
    title: str
    sentences: list[str] = field(default_factory=list)


def config(row, axes) -> str:
    return f"{row['precision']} at {setting_text(row, axes, ', ').replace('bs ', 'batch size ')}"


def speed(row) -> str:
    """Throughput with its interval and what the interval is."""
    e = stats.method(0 if missing(row.get(f"{V.HEADLINE}_n")) else int(row[f"{V.HEADLINE}_n"]))
    label = {stats.CI: "95% CI", stats.RANGE: "range"}.get(e)
    text = with_interval(row.get(V.HEADLINE), row.get(f"{V.HEADLINE}_low"),
                         row.get(f"{V.HEADLINE}_high"), row.get(f"{V.HEADLINE}_n"))
    text += " samples/s"
    tokens = row.get(TP.TOKENS)
    if not missing(tokens):  # a token workload: the same speed in tokens too
        text += ", " + with_interval(tokens, row.get(f"{TP.TOKENS}_low"),
                                     row.get(f"{TP.TOKENS}_high"),
                                     row.get(f"{V.HEADLINE}_n")) + " tokens/s"
    return text + (f" ({label}, {n_text(row[f'{V.HEADLINE}_n'])})" if label else "")


def ratio_text(row, stem: str = "speedup") -> str:
    text = with_interval(row.get(stem), row.get(f"{stem}_low"), row.get(f"{stem}_high"),
                         row.get(f"{stem}_n"), fmt=times)
    kind = row.get(f"{stem}_interval")
    label = {stats.CI: "95% CI", stats.RANGE: "range"}.get(kind)
    return text + (f" ({label})" if label and "(" not in text else "")


def besides_precision(row) -> str:
    """What changed from the plain fp32 baseline besides precision ("bs 512 → 8192, ...")."""
    said = changes(row, "plain_")
    return ", ".join(said) if said else "nothing else"


def speed_claim(row) -> str:
    return stats.claim(stats.from_row(row, "speedup"))


def judged(j: claims.Judgement, what: str) -> str:
    """A judgement as a sentence tail: "<what>, <ratio> the throughput of <baseline> at the
    same setting: it <claim>"."""
    return (f"{what}, {ratio_text(j.row, j.stem)} the throughput of {j.baseline} at the same "
            f"setting: it {stats.CLAIM_WORDS[j.claim]}")


class Findings:
    """One experiment's cells and the rows every finding refers to: the fastest finished
    configuration, and the one with the strongest claim (``claims.strongest``: focus)."""

    def __init__(self, df: pd.DataFrame):
        self.df = df
        self.axes = [a for a in shown_axes(df) if a != "model" or df["model"].nunique() > 1]
        self.ok = df[(df["repeats_ok"] > 0)].dropna(subset=[V.HEADLINE])
        self.fp32 = self.ok[self.ok["precision"] == V.BASELINE]
        self.reduced = self.ok[self.ok["precision"] != V.BASELINE]
        self.fastest = self.ok.loc[self.ok[V.HEADLINE].astype(float).idxmax()] \
            if len(self.ok) else None
        self.strongest = claims.strongest(self.reduced)
        self.slowdowns = claims.slowdowns(self.reduced)
        self.focus = None if self.strongest is None else self.strongest.row

    def config(self, row) -> str:
        return config(row, self.axes)

    def facts(self, experiment: str) -> dict:
        """What the bottom line needs of this experiment."""
        j = self.strongest
        return {"experiment": experiment, "claim": "" if j is None else j.claim,
                "findings": self}


# ------------------------------------------------------------------------------- findings
def fastest(x: Findings) -> list[str]:
    """The fastest configuration, and its speedup over fp32 at the same setting."""
    f = x.fastest
    s = f"**Fastest:** {x.config(f)}, {speed(f)}."
    if not len(x.reduced):
        s += " Only strict fp32 ran in this experiment: there is no reduced precision to judge."
    elif f["precision"] == V.BASELINE:
        s += " No reduced-precision configuration had a higher mean throughput."
    elif not missing(f.get("speedup")):
        s += (f" Against strict fp32 at the same setting that is {ratio_text(f)} the "
              f"steady-state throughput: it {stats.CLAIM_WORDS[speed_claim(f)]}.")
    elif not missing(f.get("gain")):
        s += (f" This experiment has no fp32 cell at that setting; against the plain fp32 "
              f"baseline ({f['plain_experiment']}, batch size "
              f"{int(f['plain_batch_size'])}, eager) it reaches "
              f"{ratio_text(f, 'gain')} the throughput, with {besides_precision(f)} changed "
              f"besides precision, so the ratio is not precision's alone.")
    else:
        s += " No fp32 run exists to compare it with."
    return [s]


def strongest_claim(x: Findings) -> list[str]:
    """The strongest claim the intervals support, where it is not the fastest's already."""
    j = x.strongest
    if j is None or (x.config(j.row) == x.config(x.fastest) and j.baseline == V.BASELINE):
        return []
    head = "Not judged" if j.claim == stats.UNJUDGED else "Strongest claim"
    return [f"**{head}:** {judged(j, x.config(j.row))}."]


def slowdowns(x: Findings) -> list[str]:
    """Every significant slowdown (``claims.slowdowns``)."""
    if not x.slowdowns:
        return []
    return ["**Significantly slower:** " + "; ".join(
        f"{x.config(j.row)}, {ratio_text(j.row, j.stem)} the throughput of {j.baseline} at "
        f"the same setting" for j in x.slowdowns) + "."]


def fp8_against_bf16(x: Findings) -> list[str]:
    """FP8 is a question against bf16 (the mode it replaces) first, then against fp32."""
    out, alone = [], []
    for _, r in x.reduced[x.reduced["precision"].isin(claims.FP8)].iterrows():
        j = claims.against(r, V.FP8_BASELINE)
        if j is None:
            alone.append(x.config(r))
            continue
        fp32 = claims.against(r, V.BASELINE)
        out.append(f"**FP8 against bf16:** {judged(j, x.config(r))}"
                   + ("" if fp32 is None else f"; against fp32: {ratio_text(r)}") + ".")
    if alone:
        out.append(f"**FP8 against bf16:** no amp-bf16 cell shares the setting of "
                   f"{'; '.join(alone)}, so FP8 is judged against fp32 only here.")
    return out


def warmup(x: Findings) -> list[str]:
    """Warm-up, on its own: in no speedup; a median with its range, the runs whose compile
    cache missed apart (``stats.warmup``)."""
    f = x.fastest
    warm = stats.from_row(f, V.WARMUP)
    if warm.value is None:
        return []
    base = x.fp32[(x.fp32["batch_size"] == f["batch_size"])]
    s = (f"**Warm-up** (time to the first fast step: autotuning, compilation; not part of "
         f"any speedup): {spread_prose(warm)} for the fastest configuration")
    miss = stats.from_row(f, V.WARMUP_MISS)
    if miss.value is not None:
        s += f" and {spread_prose(miss)} where its compile cache missed"
    if len(base) and f["precision"] != V.BASELINE and \
            stats.from_row(base.iloc[0], V.WARMUP).value is not None:
        s += f", {spread_prose(stats.from_row(base.iloc[0], V.WARMUP))} for fp32 at batch " \
             f"size {int(f['batch_size'])}"
    return [s + "."]


def _memory_change(ratio: float) -> str:
    if abs(ratio - 1) < 0.005:
        return "the same peak memory as"
    return (f"{percent(1 - ratio)} less peak memory than" if ratio < 1 else
            f"{percent(ratio - 1)} more peak memory than")


def memory_use(x: Findings) -> list[str]:
    """Peak memory of the fastest configuration against fp32, or the largest saving."""
    f, out = x.fastest, []
    mem, ratio = f.get("max_memory_allocated_bytes"), f.get("memory_ratio")
    if not missing(mem) and f["precision"] != V.BASELINE and not missing(ratio):
        out.append(f"**Memory:** {_memory_change(float(ratio))} fp32 at the same setting "
                   f"({memory(mem)} vs {memory(float(mem) / float(ratio))}, "
                   f"torch.cuda.max_memory_allocated).")
    elif x.ok["max_memory_allocated_bytes"].isna().all():
        out.append("**Memory:** not measured (torch.cuda memory statistics need a "
                   "CUDA device).")
    savers = x.reduced.dropna(subset=["memory_ratio"])
    savers = savers[savers["memory_ratio"] < 0.995]
    if len(savers) and (f["precision"] == V.BASELINE or missing(ratio)):
        best = savers.loc[savers["memory_ratio"].idxmin()]
        out.append(f"**Memory:** the largest saving is {x.config(best)}, "
                   f"{percent(1 - best['memory_ratio'])} less peak memory than fp32 "
                   f"({memory(best['max_memory_allocated_bytes'])}).")
    return out


def memory_made_the_difference(x: Findings) -> list[str]:
    """Where fp32 ran out of memory and a reduced precision fit."""
    out = []
    for _, r in x.df[(x.df["precision"] == V.BASELINE) & (x.df["status"] == V.OOM)].iterrows():
        fits = x.reduced[(x.reduced["batch_size"] == r["batch_size"])
                         & x.reduced["max_memory_allocated_bytes"].notna()]
        if len(fits):
            f = fits.loc[fits["max_memory_allocated_bytes"].idxmin()]
            out.append(f"**Memory made the difference:** fp32 ran out of memory at "
                       f"batch size {int(r['batch_size'])}, where {f['precision']} "
                       f"fit in {memory(f['max_memory_allocated_bytes'])}.")
    return out


def energy(x: Findings) -> list[str]:
    f = x.fastest
    ratio = f.get("energy_ratio")
    if f["precision"] == V.BASELINE or missing(ratio):
        return []
    return [f"**Energy:** {num(float(f['steady_energy_per_sample_j']) * 1e3)} mJ per "
            f"sample over the steady steps, {times(ratio)} that of fp32 at the same setting "
            f"(NVML's energy counter, only from repeats where it resolves the window and "
            f"agrees with the power sampled over it)."]


def tensor_cores(x: Findings) -> list[str]:
    """Did the matrix work run on Tensor Cores, and what limits the step now: for the fastest
    configuration, and for the strongest claim where that is another one."""
    out = [evidence(x.fastest, x.config(x.fastest))]
    if x.focus is not None and x.config(x.focus) != x.config(x.fastest):
        out.append(evidence(x.focus, x.config(x.focus)))
    return out


def accuracy(x: Findings) -> list[str]:
    """Test accuracy per precision, and its difference to fp32 paired by seed."""
    df = x.df
    acc = df.dropna(subset=["test_accuracy"]) if "test_accuracy" in df else df.iloc[:0]
    if not len(acc):
        return []
    parts = [f"{r['precision']} " + with_interval(
        r["test_accuracy"], r.get("test_accuracy_low"), r.get("test_accuracy_high"),
        r.get("test_accuracy_n"), fmt=pct) for _, r in acc.iterrows()]
    s = f"**Test accuracy** (held-out set, mean over seeds): {'; '.join(parts)}."
    diffs = []
    for _, r in acc[acc["precision"] != V.BASELINE].iterrows():
        if missing(r.get("accuracy_diff")):
            continue
        d = with_interval(r["accuracy_diff"], r.get("accuracy_diff_low"),
                          r.get("accuracy_diff_high"), r.get("accuracy_diff_n"), fmt=points)
        said = stats.difference_claim(stats.from_row(r, "accuracy_diff"))
        diffs.append(f"{r['precision']} {d} points ({said})")
    if diffs:
        s += (" Against fp32, paired by seed (95% CI of the mean difference): "
              + "; ".join(diffs) + ".")
    return [s]


def without_result(x: Findings) -> list[str]:
    bad = x.df[x.df["status"] != V.OK]
    if bad.empty:
        return []
    parts = []
    for _, r in bad.iterrows():
        reason = r.get("status_reason")
        reason = "" if missing(reason) else f": {str(reason).split(';')[0][:120]}"
        done = f" ({int(r['repeats_ok'])} of {int(r['repeats'])} repeats finished)" \
            if r["repeats_ok"] else ""
        parts.append(f"{x.config(r)}, {r['status']}{done}{reason}")
    return ["**Without a result:** " + "; ".join(parts) + "."]


# in the order a section says them; the first group needs a finished configuration
FINDINGS = (fastest, strongest_claim, slowdowns, fp8_against_bf16, warmup, memory_use,
            memory_made_the_difference, energy, tensor_cores, accuracy, without_result)
WITHOUT_RUNS = (without_result,)


def experiment_section(df: pd.DataFrame, experiment: str) -> tuple[Section, dict]:
    """The findings of one experiment, and the facts the bottom line is built from."""
    workload = df["workload"].iloc[0]
    data = df["data"].dropna().astype(str)
    sec = Section(f"{experiment} ({workload}" + (f", {data.iloc[0]} data)" if len(data) else ")"))
    x = Findings(df)
    if x.fastest is None:
        sec.sentences.append("No configuration finished, so there is nothing to compare.")
        for finding in WITHOUT_RUNS:
            sec.sentences += finding(x)
        return sec, {"experiment": experiment, "claim": "", "findings": None}
    for finding in FINDINGS:
        sec.sentences += finding(x)
    return sec, x.facts(experiment)
