"""Check our numbers on your own GPU: a rerun's result set against a reference set of the same
GPU model (``analysis.reproduce``), quantity by quantity, as ``reproduce.md`` (the summary line,
the between-run tolerance, what did not reproduce, what one set has alone, then every quantity
by kind), ``reproduce.csv`` (one row per quantity) and a figure (``reports.reproduce_figure``).

    python -m tcbench.reports.reproduce results/nvidia-h200-rerun \\
        --reference results/nvidia-h200 --out /tmp/reproduce

``--reference`` may name three or more runs of the same study (other machines or days): they
are pooled into one reference whose intervals span runs (``analysis.runs``).

Each set is read from its tables alone, as the comparison reads one (``tcbench.references``);
the verdict's answer per experiment is built by ``reports.answer`` from each set's tables, as
its own verdict builds it. Another GPU model is refused: that is ``snakemake compare``'s job.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from .. import atomic, cli, stats
from .. import vocabulary as V
from ..analysis import reproduce
from ..analysis import runs as runs_level
from ..references import CompareError
from ..render import plot
from ..render.numbers import INTERVAL_NOTE, MISSING, PAIRED_NOTE, missing, num, one_process_note, \
    times, with_interval
from ..render.settings import setting_text, shown_axes
from ..render.table import Table, to_markdown
from . import answer
from . import verdict
from .reproduce_figure import figure

TITLES = {reproduce.THROUGHPUT: "Throughputs", reproduce.PER_PROCESS: "Per-process ratios",
          reproduce.INTERLEAVED: "Interleaved ratios",
          reproduce.CLAIM: "Claims of the judged ratios",
          reproduce.ANSWER: "The answer per experiment"}
NO_CLAIM = "no claim"
BEST = "best mode and setting"       # the answer table's column a claim rests on
TOLERANCE_RULE = (f"the median absolute relative shift of the throughput of the cells whose GPU "
                  f"was busy at least {V.HOST_BOUND_BUSY_SHARE:.0%} of their timed steps in "
                  f"both sets (the machine's run-to-run offset; a host-bound cell's shift is "
                  f"the host's), capped at {reproduce.TOLERANCE_CAP:.0%}")
INSIDE_NOTE = ("Inside: the rerun's estimate lies within the reference's 95% interval. Only a "
               f"confidence interval on both sides decides it ({stats.ENOUGH} repeats, or an "
               "interleaved comparison's bootstrap interval); a range, a single run or two "
               "modes is 'no interval', never counted as inside. Where the reference pools "
               f"{runs_level.MIN_RUNS} or more runs, its interval is the 95% prediction interval "
               "for one more run, from the runs' estimates. Difference: the rerun's estimate over "
               "the reference's, less 1.")


def answers(s: reproduce.ResultSet) -> dict[str, dict]:
    """The verdict's answer per experiment of one set (per model in a model zoo): its claim,
    the best mode and setting it rests on, and the judged ratio."""
    v = verdict.build(s.summary, s.speedup, s.metrics, None, s.interleaved)
    out = {}
    for a in v.answers:
        j = a.judgement
        out[a.experiment] = {
            "claim": a.claim or NO_CLAIM, "basis": a.cells[answer.COLUMNS.index(BEST)],
            "estimate": j.estimate if j is not None and j.estimate.value is not None else None}
    return out


def build(rerun: Path, reference) -> tuple[pd.DataFrame, reproduce.Tolerance,
                                           reproduce.ResultSet | runs_level.Pooled,
                                           reproduce.ResultSet]:
    """``reference``: one set's folder, or a list of them (one: that set; ``runs_level.MIN_RUNS``
    or more: pooled across runs)."""
    refs = [reference] if isinstance(reference, (str, Path)) else list(reference)
    new = reproduce.load(rerun)
    if len(refs) == 1:
        ref = reproduce.load(refs[0])
        reproduce.same_gpu(ref, new)
        a_ref = answers(ref)
    else:
        if Path(rerun).resolve() in {Path(f).resolve() for f in refs}:
            raise CompareError(f"{rerun} is among its own references: check a run against the "
                               f"others")
        ref = runs_level.pool(refs)
        reproduce.same_gpu(ref.sets[0], new)
        a_ref = runs_level.answers([answers(s) for s in ref.sets])
    frame, tol = reproduce.check(ref, new, (a_ref, answers(new)))
    return frame, tol, ref, new


# ----------------------------------------------------------------------------------- words
def _of(counts: dict, good: str, *bad: str) -> tuple[int, int]:
    return counts[good], counts[good] + sum(counts[b] for b in bad)


def summary_line(frame: pd.DataFrame) -> str:
    """``N of M rerun estimates inside the reference's 95% interval; K of L claims the same``,
    then the same per kind, what has no interval, and what one set has alone."""
    t = reproduce.tally(frame)
    est = [(k, *_of(t[k], reproduce.INSIDE, reproduce.OUTSIDE)) for k in reproduce.ESTIMATED]
    cl = [(k, *_of(t[k], reproduce.SAME, reproduce.COMPATIBLE, reproduce.CHANGED))
          for k in reproduce.CLAIMED]
    words = {reproduce.THROUGHPUT: "throughputs", reproduce.PER_PROCESS: "per-process ratios",
             reproduce.INTERLEAVED: "interleaved ratios", reproduce.CLAIM: "judged ratios",
             reproduce.ANSWER: "the answer per experiment"}
    line = (f"{sum(e[1] for e in est)} of {sum(e[2] for e in est)} rerun estimates inside the "
            f"reference's 95% interval; {sum(c[1] for c in cl)} of {sum(c[2] for c in cl)} "
            f"claims the same. Estimates inside: "
            + ", ".join(f"{words[k]} {n} of {m}" for k, n, m in est)
            + "; claims the same: " + ", ".join(f"{words[k]} {n} of {m}" for k, n, m in cl)
            + ".")
    other = {o: sum(t[k][o] for k in reproduce.CLAIMED)
             for o in (reproduce.COMPATIBLE, reproduce.CHANGED)}
    if any(other.values()):
        changed = other[reproduce.CHANGED]
        # claims that differ but can both hold are not a failure to reproduce: say none
        # contradicts rather than leave "not the same" to read as one
        line += (f" Of the claims not the same, {other[reproduce.COMPATIBLE]} "
                 f"{'is' if other[reproduce.COMPATIBLE] == 1 else 'are'} compatible (both can "
                 f"hold: one side's interval clears a threshold the other's does not) and "
                 + (f"{changed} contradict{'s' if changed == 1 else ''} (no ratio satisfies "
                    f"both)." if changed else "no claim contradicts another."))
    none = sum(t[k][reproduce.NO_INTERVAL] for k in reproduce.ESTIMATED)
    if none:
        line += (f" {_n(none, 'estimate')} with no confidence interval on one side or both "
                 f"(a range, a single run, two modes) not counted.")
    only = {o: sum(c[o] for c in t.values())
            for o in (reproduce.ONLY_REFERENCE, reproduce.ONLY_RERUN)}
    if any(only.values()):
        line += (f" In one set only, not counted: "
                 f"{_n(only[reproduce.ONLY_REFERENCE], 'quantity')} "
                 f"{reproduce.ONLY_REFERENCE}, {only[reproduce.ONLY_RERUN]} "
                 f"{reproduce.ONLY_RERUN}.")
    return line


def tolerance_line(frame: pd.DataFrame, tol: reproduce.Tolerance, runs: int = 1) -> str:
    if runs > 1:
        return (f"Between-run tolerance: none added. The reference pools {runs} runs of the "
                f"study, each quantity {stats.METHOD_TEXT[stats.PREDICTION]} (t on the runs' "
                f"log estimates, {runs - 1} degrees of freedom, ×√(1 + 1/{runs})): its "
                f"intervals already span machines and hosts, and the judged ratios' claims "
                f"rest on the runs' 95% t interval of the mean.")
    if tol.value is None:
        return ("Between-run tolerance: not measured, since no cell whose GPU was busy at "
                f"least {V.HOST_BOUND_BUSY_SHARE:.0%} of its timed steps is in both sets; the "
                "throughputs are held to the reference's interval alone.")
    within = frame["within_tolerance"].dropna()
    cap = f" (measured {_pct(tol.measured)}, capped)" if tol.capped else ""
    return (f"Between-run tolerance: ±{_pct(tol.value)}{cap}, {TOLERANCE_RULE}; measured on "
            f"{_n(tol.cells, 'cell')}. "
            f"{int(within.astype(bool).sum())} of {len(within)} throughputs lie within the "
            f"reference's 95% interval widened by it on each side.")


def host_line(frame: pd.DataFrame, ref: reproduce.ResultSet, new: reproduce.ResultSet) -> str:
    """The two hosts' speed, and how many throughputs that did not reproduce are host-bound."""
    rows = frame[frame["kind"] == reproduce.THROUGHPUT]
    both = rows.loc[rows["outcome"].isin([reproduce.INSIDE, reproduce.OUTSIDE,
                                          reproduce.NO_INTERVAL]), "experiment"]
    each = [reproduce.host_speed(s, both.unique()) for s in getattr(ref, "sets", (ref,))]
    a, b = stats.median(each), reproduce.host_speed(new, both.unique())
    if a is None or b is None or None in each:
        return ""
    missed = rows[rows["outcome"].eq(reproduce.OUTSIDE) & ~rows["within_tolerance"].eq(True)]
    bound = int(missed["host_bound"].eq(True).sum())
    where = (f"{num(a)} ops/s in the reference" if len(each) == 1 else
             f"{', '.join(num(x) for x in each)} ops/s in the reference's runs (median "
             f"{num(a)})")
    return (f"The hosts: the CPU dispatch probe's median over the records of the experiments in "
            f"both sides, {where} and {num(b)} in the rerun ({times(b / a)}). A host-bound cell (its "
            f"GPU busy less than {V.HOST_BOUND_BUSY_SHARE:.0%} of its timed steps in either "
            f"side) runs at the host's pace, so its throughput follows the host's speed, not "
            f"the precision mode's; {bound} of the {len(missed)} throughputs outside the "
            f"reference's interval and the tolerance are host-bound. The interleaved ratios "
            f"cancel the host's speed within each round.")


def _n(n: int, what: str) -> str:
    plural = what[:-1] + "ies" if what.endswith("y") else what + "s"
    return f"{n} {what if n == 1 else plural}"


def _pct(v, signed: bool = False) -> str:
    return MISSING if missing(v) else f"{100 * float(v):{'+' if signed else ''}.2f}%"


# ----------------------------------------------------------------------------------- tables
def _value(r, side: str, fmt) -> str:
    if missing(r[side]):
        return MISSING
    return with_interval(r[side], r[f"{side}_low"], r[f"{side}_high"], r[f"{side}_n"],
                         fmt=fmt, kind=r[f"{side}_interval"])


def _setting(r, axes: dict) -> str:
    return MISSING if missing(r["batch_size"]) else \
        setting_text(r, axes.get(r["experiment"], []))


def _axes(frame: pd.DataFrame) -> dict[str, list[str]]:
    cells = frame.dropna(subset=["batch_size"])
    return {e: shown_axes(g) for e, g in cells.groupby("experiment", sort=False)}


def _claim(r, side: str) -> str:
    claim = r[f"{side}_claim"]
    if missing(claim):
        return MISSING
    said = stats.CLAIM_SHORT.get(claim, str(claim))
    ratio = "" if missing(r[side]) else f", {_value(r, side, times)}"
    basis = "" if missing(r[f"{side}_basis"]) else f" ({r[f'{side}_basis']})"
    return said + ratio + basis


def _quantity(r) -> str:
    """What a row's numbers are: a throughput's unit, a ratio's or claim's baseline."""
    if r["kind"] == reproduce.THROUGHPUT:
        # a host-bound cell's throughput is the host's pace (host_line says why)
        return V.metric(r["quantity"]).unit + (", host-bound" if r.get("host_bound") is True
                                               else "")
    if r["kind"] == reproduce.ANSWER:
        return "strongest claim"
    return f"{'against' if r['kind'] == reproduce.CLAIM else '×'} {r['baseline']}"


def table(frame: pd.DataFrame, tol: reproduce.Tolerance | None = None,
          axes: dict[str, list[str]] | None = None) -> Table:
    """Rows of any kinds (named where there are several): each with its setting (naming
    ``axes``, by experiment), both sides, the difference and the outcome; a throughput's place
    against the tolerance where given."""
    axes = _axes(frame) if axes is None else axes
    kinds = frame["kind"].nunique() > 1
    tolerated = tol is not None and tol.value is not None and \
        (frame["kind"] == reproduce.THROUGHPUT).any()
    cols = [*(["kind"] if kinds else []), "experiment", "setting", "precision", "quantity",
            "reference", "rerun", "difference", "outcome",
            *([f"within ±{_pct(tol.value)}"] if tolerated else [])]
    rows = []
    for _, r in frame.iterrows():
        claimed = r["kind"] in reproduce.CLAIMED
        fmt = num if r["kind"] == reproduce.THROUGHPUT else times
        rows.append([*([str(r["kind"])] if kinds else []), str(r["experiment"]),
                     _setting(r, axes),
                     MISSING if missing(r["precision"]) else str(r["precision"]),
                     _quantity(r),
                     _claim(r, "reference") if claimed else _value(r, "reference", fmt),
                     _claim(r, "rerun") if claimed else _value(r, "rerun", fmt),
                     MISSING if claimed else _pct(r["relative_difference"], signed=True),
                     str(r["outcome"]),
                     *([_yes(r["within_tolerance"])] if tolerated else [])])
    lead = "l" * (len(cols) - len(cols[cols.index("reference"):]))
    return Table("", cols, rows, align=lead + "rrr" + "l" * (len(cols) - len(lead) - 3))


def _yes(v) -> str:
    return MISSING if missing(v) else "yes" if bool(v) else "no"


def markdown(frame: pd.DataFrame, tol: reproduce.Tolerance, ref: reproduce.ResultSet,
             new: reproduce.ResultSet) -> str:
    out = [f"# Reproduction check: `{new.run}` against `{ref.run}`", "",
           f"Both sets ran on {', '.join(ref.devices)} (`{new.folder}` the rerun, "
           f"`{ref.folder}` the reference). **{summary_line(frame)}**", "",
           tolerance_line(frame, tol, len(getattr(ref, "sets", (ref,)))), ""]
    host = host_line(frame, ref, new)
    out += [host, ""] if host else []
    axes = _axes(frame)
    tolerated = frame["within_tolerance"].eq(True) & frame["outcome"].eq(reproduce.OUTSIDE)
    failed = frame[frame["outcome"].isin([reproduce.OUTSIDE, reproduce.COMPATIBLE,
                                          reproduce.CHANGED]) & ~tolerated]
    out += ["## What did not reproduce", ""]
    if tolerated.any():
        out += [f"{_n(int(tolerated.sum()), 'throughput')} outside the reference's interval "
                f"but within the between-run tolerance (the machine's offset) are not listed "
                f"here; the table of throughputs has them.", ""]
    out += [to_markdown(table(failed, tol, axes), heading=None) if len(failed) else
            "Nothing: every rerun estimate with an interval on both sides lies inside the "
            "reference's (a throughput within the between-run tolerance of it), and every "
            "claim is the same.\n"]
    only = frame[frame["outcome"].isin([reproduce.ONLY_REFERENCE, reproduce.ONLY_RERUN])]
    if len(only):
        out += ["## In one set only", "", to_markdown(table(only, axes=axes), heading=None)]
    for kind in (*reproduce.ESTIMATED, *reproduce.CLAIMED):
        rows = frame[frame["kind"] == kind]
        if len(rows):
            out += [f"## {TITLES[kind]}", "",
                    to_markdown(table(rows, tol, axes), heading=None)]
    out += ["## How to read it", "", INSIDE_NOTE, "", INTERVAL_NOTE, "", PAIRED_NOTE, "",
            stats.CLAIM_NOTE, ""]
    # a mark said in a row is said under them all, as every table of the verdict says it
    out += [one_process_note(), ""] if any(V.ONE_PROCESS_MARK in x for x in out) else []
    return "\n".join(out)


# ----------------------------------------------------------------------------------- files
def write(rerun: Path, reference: Path, md: Path | None = None, csv: Path | None = None,
          figures=()) -> list[Path]:
    frame, tol, ref, new = build(rerun, reference)
    written = []
    if csv is not None:
        written.append(atomic.write_text(csv, frame.to_csv(index=False)))
    if md is not None:
        written.append(atomic.write_text(md, markdown(frame, tol, ref, new)))
    if figures:
        plot.style()
        written += plot.save_as(figure(frame, tol, new.run, ref.run), list(figures))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.reproduce", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rerun", type=Path, help="the rerun's result set (a results/<run> folder)")
    ap.add_argument("--reference", type=Path, required=True, nargs="+",
                    help="the reference set of the same GPU model (a results/<run> folder), or "
                         f"{runs_level.MIN_RUNS} or more runs of the study to pool")
    ap.add_argument("--out", type=Path, help="a folder: every file, by the vocabulary's names")
    ap.add_argument("--md", type=Path)
    ap.add_argument("--csv", type=Path)
    ap.add_argument("--figures", type=Path, nargs="+", help="the figure's files, one per format")
    args = ap.parse_args(argv)
    if args.out is None and not (args.md or args.csv or args.figures):
        ap.error("give --out DIR, or --md/--csv/--figures")
    if args.out is not None:
        args.md = args.md or args.out / V.REPRODUCE_FILES["md"]
        args.csv = args.csv or args.out / V.REPRODUCE_FILES["csv"]
        args.figures = args.figures or [args.out / "figures" / f"{V.REPRODUCE_FIGURE}.{ext}"
                                        for ext in V.FIGURE_FORMATS]

    def written():
        for p in write(args.rerun, args.reference, args.md, args.csv, args.figures or ()):
            print(p)

    return cli.main("tcbench.reports.reproduce", written, (CompareError,))


if __name__ == "__main__":
    sys.exit(main())
