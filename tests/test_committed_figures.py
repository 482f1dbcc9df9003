"""Every figure committed under results/ is one that today's rules make for its result set, and
every figure they make is there: a figure left from an older set, a kind that no longer exists
or an experiment the set no longer has fails here, in CI, without a GPU. The expected files come
from the code (the figure kinds of ``tcbench.reports.figures`` and of the comparison, the
vocabulary's file names and formats, the capacity study's) and from the set's own tables (its
experiments), never from a list kept here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO

from tcbench import capacity
from tcbench import vocabulary as V
from tcbench.reports import compare_figures
from tcbench.reports import figures

FIGURE_SUFFIXES = {f".{ext}" for ext in V.FIGURE_FORMATS}


def expected_figures(folder: Path) -> set[Path] | None:
    """The figures today's code writes for the result set or comparison in ``folder``, from
    its tables; None for a folder that is neither (no rule writes figures there)."""
    summary = folder / V.SET_TABLES["summary"]
    comparison = folder / V.COMPARE_FILES["csv"]
    if summary.exists():
        experiments, kinds = pd.read_csv(summary)["experiment"].unique(), figures.KINDS
        # rule overview_figure draws the answer at a glance that heads the set's verdict
        extra = [V.set_figure_name(k, ext) for k in (*figures.SET_KINDS, V.OVERVIEW_FIGURE)
                 for ext in V.FIGURE_FORMATS]
        # rule crossover draws the FP8 map where the set has the crossover study's experiments
        if any(str(e).startswith(V.CROSSOVER_PREFIX) for e in experiments):
            extra += [f"{V.CROSSOVER_FIGURE}.{ext}" for ext in V.FIGURE_FORMATS]
        # rule reproduce draws its figure into the rerun's set beside its reproduce.csv
        if (folder / V.REPRODUCE_FILES["csv"]).exists():
            extra += [f"{V.REPRODUCE_FIGURE}.{ext}" for ext in V.FIGURE_FORMATS]
    elif comparison.exists():
        experiments, kinds = pd.read_csv(comparison)["experiment"].unique(), compare_figures.KINDS
        extra = [f"{V.COMPARE_OVERVIEW}.{ext}" for ext in V.FIGURE_FORMATS]
    elif (folder / capacity.FILES["csv"]).exists():   # a set of the capacity study alone
        experiments, kinds, extra = [], [], []
    else:
        return None
    # rule capacity_report draws the capacity study's figures beside its capacity.csv
    if (folder / capacity.FILES["csv"]).exists():
        extra += [f"{k}.{ext}" for k in capacity.FIGURES for ext in V.FIGURE_FORMATS]
    names = [V.figure_name(e, k, ext) for e in experiments for k in kinds
             for ext in V.FIGURE_FORMATS] + extra
    return {folder / "figures" / n for n in names}


def figure_problems(results: Path) -> list[str]:
    """Every committed figure under ``results`` that no current rule makes (stale), and every
    figure a current rule makes that is missing."""
    found = {p for p in results.rglob("*") if p.suffix in FIGURE_SUFFIXES and p.is_file()}
    folders = {p.parent.parent for p in found if p.parent.name == "figures"}
    folders |= {t.parent for name in (V.SET_TABLES["summary"], V.COMPARE_FILES["csv"],
                                      capacity.FILES["csv"])
                for t in results.rglob(name)}
    expected: set[Path] = set()
    for folder in folders:
        expected |= expected_figures(folder) or set()
    rel = lambda p: str(p.relative_to(results))  # noqa: E731
    return ([f"stale (no rule makes it): {rel(p)}" for p in sorted(found - expected)]
            + [f"missing (a rule makes it): {rel(p)}" for p in sorted(expected - found)])


def test_every_committed_figure_is_made_by_a_current_rule():
    results = REPO / "results"
    if not results.exists():
        pytest.skip("no committed results")
    assert figure_problems(results) == []


@pytest.fixture
def committed_copy(tmp_path):
    """A copy of the committed H200 set's tables and figures, to break on purpose."""
    src = REPO / "results" / "nvidia-h200"
    if not (src / "summary.csv").exists():
        pytest.skip("no committed H200 set")
    dst = tmp_path / "results" / "nvidia-h200"
    (dst / "figures").mkdir(parents=True)
    shutil.copy(src / "summary.csv", dst / "summary.csv")
    for table in (V.REPRODUCE_FILES["csv"],   # the set's own check against other runs
                  capacity.FILES["csv"]):    # its capacity study
        if (src / table).exists():
            shutil.copy(src / table, dst / table)
    for p in (src / "figures").iterdir():
        (dst / "figures" / p.name).write_bytes(b"")   # names are what is checked
    return tmp_path / "results", dst


def test_a_figure_of_a_removed_experiment_kind_or_format_is_stale(committed_copy):
    results, dst = committed_copy
    assert figure_problems(results) == []
    for name in ("mnist_seed_time.png", "no_such_experiment_throughput.pdf"):
        (dst / "figures" / name).write_bytes(b"")
    assert figure_problems(results) == [
        "stale (no rule makes it): nvidia-h200/figures/mnist_seed_time.png",
        "stale (no rule makes it): nvidia-h200/figures/no_such_experiment_throughput.pdf"]


def test_a_figure_the_rules_make_that_is_missing_fails(committed_copy):
    results, dst = committed_copy
    exp = pd.read_csv(dst / "summary.csv")["experiment"].iloc[0]
    gone = dst / "figures" / V.figure_name(exp, next(iter(figures.KINDS)), "svg")
    gone.unlink()
    assert figure_problems(results) == [f"missing (a rule makes it): "
                                        f"{gone.relative_to(results)}"]


def test_a_reproduction_checks_figure_belongs_to_a_set_that_has_its_table(committed_copy):
    results, dst = committed_copy
    (dst / V.REPRODUCE_FILES["csv"]).unlink(missing_ok=True)
    names = [f"{V.REPRODUCE_FIGURE}.{ext}" for ext in V.FIGURE_FORMATS]
    for name in names:
        (dst / "figures" / name).write_bytes(b"")
    assert figure_problems(results) == [f"stale (no rule makes it): nvidia-h200/figures/{n}"
                                        for n in sorted(names)]
    (dst / V.REPRODUCE_FILES["csv"]).write_text("kind\n")
    assert figure_problems(results) == []


def test_figures_where_no_rule_writes_any_are_stale(tmp_path):
    stray = tmp_path / "results" / "bench" / "plot.png"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"")
    assert figure_problems(tmp_path / "results") == ["stale (no rule makes it): bench/plot.png"]


def test_the_capacity_figures_belong_to_a_set_that_has_its_table(committed_copy, tmp_path):
    results, dst = committed_copy
    (dst / capacity.FILES["csv"]).unlink(missing_ok=True)
    names = [f"{k}.{ext}" for k in capacity.FIGURES for ext in V.FIGURE_FORMATS]
    for name in names:
        (dst / "figures" / name).write_bytes(b"")
    assert figure_problems(results) == [f"stale (no rule makes it): nvidia-h200/figures/{n}"
                                        for n in sorted(names)]
    (dst / capacity.FILES["csv"]).write_text("workload\n")
    assert figure_problems(results) == []
    # a set of the capacity study alone: its figures, and nothing else, are expected
    alone = tmp_path / "alone" / "cpu-x"
    (alone / "figures").mkdir(parents=True)
    (alone / capacity.FILES["csv"]).write_text("workload\n")
    assert figure_problems(alone.parent) == [
        f"missing (a rule makes it): cpu-x/figures/{n}" for n in sorted(names)]

