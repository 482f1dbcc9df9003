"""A set's verdict judges an experiment that ran on three or more machines across those runs
(``analysis.runs.siblings``, ``runs.across``): the judged ratio is the geometric mean of the
runs' own interleaved ratios with the 95% t interval over them, marked with ``V.RUNS_MARK`` and
its footnote everywhere it is shown (summary.md, the overview figure, the speedup and best
tables, the README's answer table); with fewer runs the set's own ratio stays."""

from __future__ import annotations

import math
import sys

import pandas as pd
import pytest

from conftest import REPO
from tcbench import stats
from tcbench import vocabulary as V
from tcbench.analysis import claims, runs
from tcbench.analysis.best import best
from tcbench.analysis.speedup import speedup
from tcbench.references import CompareError
from tcbench.render.numbers import one_process_note, times, with_interval
from tcbench.reports import overview_figure, tables, verdict
from test_reproduce import ARMS, planted

sys.path.insert(0, str(REPO / "scripts"))
import readme  # noqa: E402

# each machine's interleaved ratios: ARMS times its factor
FACTORS = {"gpu": 1.0, "gpu-rerun": 1.02, "gpu-rerun2": 0.97, "gpu-container": 1.05}
RATIO_HEAD = "× its baseline [95% CI]"


def arms(factor: float) -> dict:
    return {p: tuple(v * factor for v in r) for p, r in ARMS.items()}


def results(tmp_path, *names) -> object:
    """A results folder holding the planted sets ``names`` (``FACTORS``)."""
    out = tmp_path / "results"
    for n in names:
        planted(out / n, n, arms=arms(FACTORS[n]))
    return out


def judged(folder, runs_with=()) -> verdict.Verdict:
    """The set's verdict as its rule makes it: its tables and its siblings' interleaved.csv."""
    t = {k: folder / V.SET_TABLES[k] for k in ("metrics", "summary", "speedup", "interleaved")}
    return verdict.read(t["metrics"], t["summary"], t["speedup"], None, t["interleaved"],
                        runs.sibling_tables(folder, runs_with))


def amp_recipe(v: verdict.Verdict):
    return next(a for a in v.answers if a.experiment == "amp_recipe")


def geomean(values) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


# ------------------------------------------------------------------- which runs are pooled
def test_reruns_by_name_are_siblings_and_a_container_set_is_not(tmp_path):
    r = results(tmp_path, "gpu", "gpu-rerun", "gpu-rerun2", "gpu-container")
    assert runs.siblings(r / "gpu") == [r / "gpu-rerun", r / "gpu-rerun2"]
    assert runs.siblings(r / "gpu-rerun2") == [r / "gpu", r / "gpu-rerun"]
    assert runs.siblings(r / "gpu-container") == []
    assert runs.siblings(r / "gpu", ["gpu-container"])[-1] == r / "gpu-container"
    assert runs.base_of("nvidia-h200-rerun3") == "nvidia-h200"
    assert runs.base_of("nvidia-h200-container") == "nvidia-h200-container"


def test_a_named_set_that_is_missing_or_the_set_itself_is_a_clear_error(tmp_path):
    r = results(tmp_path, "gpu", "gpu-rerun")
    with pytest.raises(CompareError, match=r"runs_with names 'nope'.*results/nope/interleaved"
                                           r"\.csv does not exist.*gpu, gpu-rerun"):
        runs.siblings(r / "gpu", ["nope"])
    with pytest.raises(CompareError, match="the set itself"):
        runs.siblings(r / "gpu", ["gpu"])
    planted(r / "other", "other", lambda df: df.assign(device_name="Another GPU"))
    with pytest.raises(CompareError, match="'other', which ran on Another GPU.*not pooled"):
        runs.siblings(r / "gpu", ["other"])


# ------------------------------------------------------------------------- the verdict
def test_three_runs_judge_the_experiment_across_them_and_mark_it(tmp_path):
    r = results(tmp_path, "gpu", "gpu-rerun", "gpu-rerun2")
    v = judged(r / "gpu")
    a = amp_recipe(v)
    j = a.judgement
    mode = str(j.row["precision"])
    e = j.estimate
    assert (e.method, e.n) == (stats.RUNS, 3)
    each = [ARMS[mode][0] * FACTORS[n] for n in ("gpu", "gpu-rerun", "gpu-rerun2")]
    assert e.value == pytest.approx(geomean(each))
    assert e == stats.across_runs(each)
    assert j.claim == stats.claim(e)
    # the ratio is marked, the footnote says what the interval is, this machine's own is beside
    ratio = a.cells[verdict.answer.COLUMNS.index(RATIO_HEAD)]
    assert V.RUNS_MARK in ratio
    notes = [n for n in v.answer.notes if n.startswith(V.RUNS_MARK)]
    assert len(notes) == 1 and "95% t interval over 3 runs on different machines" in notes[0]
    how = a.cells[verdict.answer.COLUMNS.index("how it was decided")]
    mine = with_interval(*ARMS[mode], 20, fmt=times, kind=stats.PAIRED)
    assert how.startswith(f"across 3 runs on different machines{V.RUNS_MARK}; this machine: "
                          f"{mine}, interleaved")
    md = v.markdown()
    assert ratio in md and notes[0] in md
    # the experiment's own section says what its marks mean too, read on its own
    (section,) = [s for s in v.sections if s.title.startswith("amp_recipe ")]
    assert any(V.RUNS_MARK in c for row in section.table.rows for c in row)
    # this machine's own ratio beside it rests on one process: marked and said so, both places
    assert V.ONE_PROCESS_MARK in mine and one_process_note() in section.table.notes
    assert section.table.notes == [*notes, one_process_note()]
    assert any(n.startswith(one_process_note()) for n in v.answer.notes)
    assert f"{len(ARMS)} by interleaved comparisons judged across runs of the study on " \
        "different machines" in md
    # the overview figure: the same ratio and mark, this machine's own drawn beside it
    row = next(x for x in overview_figure.rows(v.answers) if x.label.startswith("amp_recipe"))
    assert row.value == pytest.approx(e.value) and row.runs == 3
    assert row.own == pytest.approx(ARMS[mode][0]) and V.RUNS_MARK in row.text


def test_two_runs_leave_the_machines_own_ratio(tmp_path):
    r = results(tmp_path, "gpu", "gpu-rerun")
    v = judged(r / "gpu")
    j = amp_recipe(v).judgement
    assert j.estimate.method == stats.PAIRED
    assert j.estimate.value == pytest.approx(ARMS[str(j.row["precision"])][0])
    assert V.RUNS_MARK not in v.markdown()


def test_a_set_of_another_name_counts_where_the_config_names_it(tmp_path):
    r = results(tmp_path, "gpu", "gpu-rerun", "gpu-container")
    assert amp_recipe(judged(r / "gpu")).judgement.estimate.method == stats.PAIRED
    e = amp_recipe(judged(r / "gpu", ["gpu-container"])).judgement.estimate
    assert (e.method, e.n) == (stats.RUNS, 3)


def test_an_experiment_only_this_set_ran_stays_its_own(tmp_path):
    r = results(tmp_path, "gpu", "gpu-rerun", "gpu-rerun2")
    own = pd.read_csv(r / "gpu" / V.SET_TABLES["interleaved"])
    lone = own.assign(experiment="lone")
    out = runs.across(pd.concat([own, lone]), [pd.read_csv(r / n / V.SET_TABLES["interleaved"])
                                               for n in ("gpu-rerun", "gpu-rerun2")])
    assert set(out.loc[out["experiment"] == "lone", "ratio_interval"]) == {stats.PAIRED}
    pooled = out[out["experiment"] == "amp_recipe"]
    assert set(pooled["ratio_interval"]) == {stats.RUNS}
    assert list(pooled[claims.OWN + "ratio"]) == [v[0] for v in ARMS.values()]


# -------------------------------------------------------- the tables and the README agree
def test_speedup_and_best_tables_show_the_marked_ratio(tmp_path):
    r = results(tmp_path, "gpu", "gpu-rerun", "gpu-rerun2")
    f = r / "gpu"
    metrics, summary = (pd.read_csv(f / V.SET_TABLES[k]) for k in ("metrics", "summary"))
    il = runs.read_across(f / V.SET_TABLES["interleaved"], runs.sibling_tables(f))
    sp = speedup(metrics, summary, il)
    j = amp_recipe(judged(f)).judgement
    for table in (tables.speedup_table(sp), tables.best_table(best(summary, sp))):
        text = "\n".join(" | ".join(map(str, row)) for row in table.rows)
        assert V.RUNS_MARK in text
        assert any(n.startswith(V.RUNS_MARK) and "over 3 runs" in n for n in table.notes)
    shown = tables.speedup_table(sp)
    row = next(x for x in shown.rows if x[0] == "amp_recipe" and x[2] == j.row["precision"])
    assert any(c.startswith(verdict.answer.judged_ratio(j).rsplit(" ", 1)[0]) for c in row)



def test_the_speedup_figure_says_its_judged_intervals_span_runs(tmp_path):
    from figure_text import texts

    from tcbench.reports import figures, speed_figures

    r = results(tmp_path, "gpu", "gpu-rerun", "gpu-rerun2")
    f = r / "gpu"
    metrics, summary = (pd.read_csv(f / V.SET_TABLES[k]) for k in ("metrics", "summary"))
    il = runs.read_across(f / V.SET_TABLES["interleaved"], runs.sibling_tables(f))
    sp = speedup(metrics, summary, il)
    rows = figures.experiment_rows(sp[sp["experiment"] == "amp_recipe"])
    fig = speed_figures.fig_speedup(rows, "amp_recipe")
    said = [t for t, _ in texts(fig)]
    assert any("interleaved ratio (judged),\n§ 95% t interval over 3 runs on different machines"
               in t for t in said), said
    speed_figures.plt.close(fig)

def test_the_readme_answer_shows_the_judged_number_of_summary_md(tmp_path):
    r = results(tmp_path, "gpu", "gpu-rerun", "gpu-rerun2")
    md = tmp_path / "summary.md"
    t = {k: r / "gpu" / V.SET_TABLES[k] for k in ("metrics", "summary", "speedup", "interleaved")}
    verdict.write(t["metrics"], t["summary"], t["speedup"], md, None, None, t["interleaved"],
                  None, runs.sibling_tables(r / "gpu"))
    shown = readme.Blocks(r, "gpu").answer()
    row = next(x for x in shown.splitlines() if x.startswith("| amp_recipe |"))
    ratio = row.split(" | ")[readme.README_COLUMNS.index(RATIO_HEAD)]
    summary_row = next(x for x in md.read_text().splitlines() if x.startswith("| amp_recipe |"))
    assert V.RUNS_MARK in ratio
    assert ratio.removesuffix(" …") in summary_row.split(" | ")[verdict.answer.COLUMNS.index(
        RATIO_HEAD)]
    assert "95% t interval over 3 runs on different machines" in shown


def test_claims_that_differ_but_can_both_hold_are_said_to_contradict_none():
    """digits' tf32 at 1.02× sits on the thresholds: one run claims faster, another
    equivalent; both can hold, and the summary says no claim contradicts."""
    from tcbench.analysis import reproduce
    from tcbench.reports import reproduce as reproduce_report

    outcomes = [reproduce.SAME] * 3 + [reproduce.COMPATIBLE]
    frame = pd.DataFrame([{"kind": reproduce.CLAIM, "outcome": o} for o in outcomes],
                         columns=reproduce.COLUMNS)
    line = reproduce_report.summary_line(frame)
    assert "3 of 4 claims the same" in line
    assert line.endswith("1 is compatible (both can hold: one side's interval clears a "
                         "threshold the other's does not) and no claim contradicts another.")
    frame.loc[len(frame)] = {"kind": reproduce.CLAIM, "outcome": reproduce.CHANGED}
    assert "and 1 contradicts (no ratio satisfies both)" in reproduce_report.summary_line(frame)


# ------------------------------------------------------------------------ the workflow
@pytest.mark.slow
def test_the_rules_that_judge_read_the_sibling_runs_and_a_missing_named_one_stops(workflow_copy):
    """A set's aggregate, overview figure and verdict declare the sibling runs'
    interleaved.csv as inputs and pass them with --runs, so a change in one remakes them; a
    set named in runs_with that is not there stops the dry run, naming it."""
    from conftest import snakemake

    for n in ("smk-rerun", "smk-rerun2"):
        planted(workflow_copy / "results" / n, n)
    plan = snakemake(workflow_copy, "-n", "--printshellcmds", "--configfile", "config/smoke.yaml",
                     "--config", "require_gpu=false", "run=smk").stdout
    given = ["results/smk-rerun/interleaved.csv", "results/smk-rerun2/interleaved.csv"]
    for module in ("tcbench.aggregate", "tcbench.reports.overview_figure",
                   "tcbench.reports.verdict"):
        command = next(line for line in plan.splitlines() if f"-m {module} " in line)
        assert command.split("--runs ")[1].split(" >")[0].split(" --")[0].split() == given, \
            module
    bad = snakemake(workflow_copy, "-n", "--configfile", "config/smoke.yaml", "--config",
                    "require_gpu=false", "run=smk", "runs_with=[nope]", check=False)
    assert bad.returncode != 0
    assert "runs_with names 'nope'" in bad.stdout + bad.stderr


# ------------------------------------------- what one process's interval is worth, measured
def processes(run: str, ratios, half: float = 0.01, setting: str = "bs512") -> pd.DataFrame:
    """interleaved_processes.csv rows of one setting's comparison in ``run``: one process a
    ratio, each with an interval of ±``half`` (relative) around it."""
    return pd.DataFrame([{"run": run, "experiment": "amp_recipe", "workload": "amp_recipe",
                          "data": "synthetic", "model": "amp_recipe", "batch_size": 512,
                          "setting": setting, "replicate": i + 1, "precision": "tf32", "baseline": "fp32", "ratio": r,
                          "ratio_low": r * (1 - half), "ratio_high": r * (1 + half),
                          "rounds": 20, "status": V.OK} for i, r in enumerate(ratios)])


def test_one_process_intervals_are_held_against_the_mean_over_the_runs():
    # the runs' ratios 2.0, 2.2 and 2.4 (each its processes' geometric mean): their mean is
    # about 2.19, which only the processes at 2.2 hold within ±1%
    own = processes("gpu", [2.0, 2.0, 2.0])
    others = [processes("gpu-rerun", [2.2, 2.2, 2.2]), processes("gpu-rerun2", [2.4] * 3)]
    c = runs.process_coverage(own, others)
    assert (c.held, c.total, c.level, c.runs, c.processes, c.rounds) == (3, 9, "runs", 3, 3, 20)
    assert "3 processes of 20 rounds on each of 3 machines" in c.text()
    assert "held the mean over the machines 3 of 9 times (33%)" in c.text()
    # wide enough intervals hold it every time; a failed process counts for nothing
    wide = runs.process_coverage(processes("gpu", [2.0] * 3, half=0.2),
                                 [processes("gpu-rerun", [2.2] * 3, half=0.2),
                                  processes("gpu-rerun2", [2.4] * 3, half=0.2)
                                  .assign(status=["ok", "ok", "failed"])])
    assert (wide.held, wide.total) == (8, 8)


def test_with_too_few_runs_the_sets_own_processes_are_the_level_and_one_process_is_none():
    own = processes("gpu", [1.9, 2.0, 2.1])
    c = runs.process_coverage(own, [processes("gpu-rerun", [3.0] * 3)])
    # two runs are too few: the set's own three processes, whose mean is 2.0, the rerun unread
    assert (c.held, c.total, c.level, c.runs) == (1, 3, "processes", 1)
    assert "held the mean of the processes 1 of 3 times (33%)" in c.text()
    # a comparison of one process has no higher level to be held against
    assert runs.process_coverage(processes("gpu", [2.0]), []) is None
    assert runs.process_coverage(None, []) is None


def test_a_ratio_judged_in_one_process_is_marked_and_footnoted_everywhere(tmp_path):
    r = results(tmp_path, "gpu")
    v = judged(r / "gpu")
    a = amp_recipe(v)
    assert a.judgement.estimate.method == stats.PAIRED
    ratio = a.cells[verdict.answer.COLUMNS.index(RATIO_HEAD)]
    assert V.ONE_PROCESS_MARK in ratio and V.RUNS_MARK not in ratio
    assert any(n.startswith(one_process_note()) for n in v.answer.notes)
    md = v.markdown()
    assert md.count(one_process_note()) >= 1 + sum(
        any(V.ONE_PROCESS_MARK in c for row in s.table.rows for c in row)
        for s in v.sections if s.table is not None)
    # the README's answer keeps the footnote with the mark
    row = next(x for x in overview_figure.rows(v.answers) if x.label.startswith("amp_recipe"))
    assert V.ONE_PROCESS_MARK in row.text
