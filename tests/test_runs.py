"""The runs level: a quantity over runs of a study on other machines (``stats.across_runs``),
claims that can both hold (``stats.compatible``), and a rerun checked against three or more
runs pooled (``analysis.runs``, ``snakemake reproduce --config reference=a,b,c``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tcbench import stats
from tcbench.analysis import reproduce
from tcbench.analysis import runs
from tcbench.references import CompareError
from tcbench.reports import reproduce as reproduce_report
from test_reproduce import ARMS, one, planted, rows, scaled


# ------------------------------------------------------------------------ the statistics
def test_runs_give_the_geometric_mean_a_t_interval_and_a_wider_prediction_interval():
    values = [3.39, 3.391, 3.415]
    mean, pred = stats.across_runs(values), stats.across_runs(values, predict=True)
    logs = np.log(values)
    g = math.exp(logs.mean())
    assert mean.value == pytest.approx(g) and pred.value == pytest.approx(g)
    assert (mean.method, pred.method, mean.n) == (stats.RUNS, stats.PREDICTION, 3)
    half = math.log(mean.high / g)
    assert half == pytest.approx(4.302653 * logs.std(ddof=1) / math.sqrt(3), rel=1e-5)
    # one more run varies by the runs' spread itself, not by the mean's: √(n + 1) wider
    assert math.log(pred.high / g) / half == pytest.approx(2.0)
    assert mean.method in stats.CONFIDENCE_METHODS and pred.method not in \
        stats.CONFIDENCE_METHODS and pred.method in stats.INTERVAL_METHODS
    assert pred.label == "3 runs, 95% prediction interval for one more run"
    assert stats.across_runs([2.0, 3.0]).method == stats.RANGE
    assert stats.across_runs([2.0]).method == stats.SINGLE
    assert stats.across_runs([]).value is None


def test_machines_that_differ_are_covered_by_runs_never_by_one_machines_processes():
    """Measured on four H200 machines: a GPU-bound interleaved ratio's machines differ by a
    log standard deviation of ~0.35%, its three processes on one machine by ~0.03%. One
    machine's t interval over its processes covers another machine's ratio rarely; the
    prediction interval from three machines covers it about 95% of the time."""
    rng = np.random.default_rng(7)
    machine_sd, process_sd, trials = 0.0035, 0.0003, 2000
    one_machine = runs_level = 0
    for _ in range(trials):
        machines = rng.normal(0.0, machine_sd, 4)          # three references and the rerun
        per_run = []
        for m in machines[:3]:
            processes = np.exp(m + rng.normal(0.0, process_sd, 3))
            per_run.append(stats.replicated_ratio(
                [stats.Estimate(p, p, p, 20, stats.PAIRED) for p in processes]).estimate)
        rerun = math.exp(machines[3] + rng.normal(0.0, process_sd / math.sqrt(3)))
        one_machine += per_run[0].low <= rerun <= per_run[0].high
        pooled = stats.across_runs([e.value for e in per_run], predict=True)
        runs_level += pooled.low <= rerun <= pooled.high
    assert one_machine / trials < 0.6
    assert runs_level / trials >= 0.9


@pytest.mark.parametrize("a, b, both", [
    (stats.FASTER, stats.EQUIVALENT, True),       # 1.02× is both
    (stats.PAYS_OFF, stats.FASTER, True),         # one interval clears 1.10×, the other 1×
    (stats.INCONCLUSIVE, stats.SLOWER, True),
    (stats.UNJUDGED, stats.PAYS_OFF, True),
    (stats.FASTER, stats.SLOWER, False),
    (stats.PAYS_OFF, stats.EQUIVALENT, False),
    (stats.PAYS_OFF, stats.ALL_SLOWER, False),
])
def test_two_claims_contradict_only_where_no_ratio_satisfies_both(a, b, both):
    assert stats.compatible(a, b) is both and stats.compatible(b, a) is both


# ------------------------------------------------------------------------ pooled reference
# three machines: the arms' interleaved ratios and every throughput a little apart
MACHINES = (1.0, 1.006, 0.995)


def machine(factor: float) -> dict:
    return {p: tuple(v * factor for v in r) for p, r in ARMS.items()}


def pooled(tmp_path, rerun_factor: float):
    refs = [planted(tmp_path / f"ref{i}", f"nvidia-planted-{i}",
                    scaled(lambda df: df.index == df.index, f), machine(f))
            for i, f in enumerate(MACHINES)]
    new = planted(tmp_path / "new", "nvidia-planted-rerun",
                  scaled(lambda df: df.index == df.index, rerun_factor), machine(rerun_factor))
    return reproduce_report.build(new, refs)


def test_a_rerun_on_another_machine_is_inside_the_runs_prediction_interval(tmp_path):
    frame, tol, ref, new = pooled(tmp_path, 1.008)
    assert isinstance(ref, runs.Pooled) and len(ref.sets) == 3
    for p in ARMS:
        r = one(frame, reproduce.INTERLEAVED, experiment="amp_recipe", precision=p)
        assert r["reference_interval"] == stats.PREDICTION and r["reference_n"] == 3
        assert r["outcome"] == reproduce.INSIDE
        c = one(frame, reproduce.CLAIM, experiment="amp_recipe", precision=p)
        assert c["reference_claim"] == stats.PAYS_OFF and c["outcome"] == reproduce.SAME
        assert "3 runs" in c["reference_basis"]
    assert tol.value is None        # the runs' intervals span machines already
    md = reproduce_report.markdown(frame, tol, ref, new)
    assert "The reference pools 3 runs" in md and "Between-run tolerance: none added" in md


def test_a_rerun_far_from_every_run_is_outside(tmp_path):
    frame, *_ = pooled(tmp_path, 0.8)
    assert set(rows(frame, reproduce.INTERLEAVED)["outcome"]) == {reproduce.OUTSIDE}


def test_runs_that_claim_differently_pool_their_answer_and_say_so():
    est = stats.Estimate(1.02, 1.0, 1.04, 3, stats.REPLICATED)
    answers = [{"digits": {"claim": c, "basis": "tf32, bs 64", "estimate": est}}
               for c in (stats.FASTER, stats.FASTER, stats.INCONCLUSIVE)]
    a = runs.answers(answers)["digits"]
    assert a["claim"] == f"{runs.DIFFERS}: faster; faster; inconclusive"
    assert a["estimate"].method == stats.RUNS and a["estimate"].value == pytest.approx(1.02)
    same = runs.answers(answers[:2] + answers[:1])["digits"]
    assert same["claim"] == stats.FASTER


def test_a_gated_claim_in_any_run_is_pooled_as_the_runs_common_claim():
    est = stats.Estimate(1.3, 1.1, 1.5, 3, stats.CI)
    js = [{"claim": stats.UNSTEADY, "basis": "repeats", "gate": stats.UNSTEADY,
           "estimate": est}] * 3
    assert runs.claim(js)["claim"] == stats.UNSTEADY
    mixed = js[:2] + [{"claim": stats.PAYS_OFF, "basis": "repeats", "gate": None,
                       "estimate": est}]
    assert runs.claim(mixed)["claim"] == runs.DIFFERS


def test_two_runs_are_refused_and_a_run_is_not_its_own_reference(tmp_path):
    a, b = (planted(tmp_path / n, f"nvidia-planted-{n}") for n in "ab")
    with pytest.raises(CompareError, match="needs at least 3"):
        runs.pool([a, b])
    c = planted(tmp_path / "c", "nvidia-planted-c")
    with pytest.raises(CompareError, match="among its own references"):
        reproduce_report.build(a, [a, b, c])
    with pytest.raises(CompareError, match="at least 3 runs"):
        reproduce.reference_tables("a,b", "c", tmp_path)
    with pytest.raises(CompareError, match="the rerun's own set"):
        reproduce.reference_tables("a,b,c", "c", tmp_path)
    tables = reproduce.reference_tables("a,b,c", "x", tmp_path)
    assert {str(tmp_path / n) for n in "abc"} == {t.rsplit("/", 1)[0] for t in tables}
    assert reproduce.references(["a", "b"]) == ["a", "b"] and reproduce.references(None) == []
