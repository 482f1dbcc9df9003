"""The timed window: measurement steps until it is long enough, steadiness judged by its halves,
extension bounded, the seed's long schedule never lengthened."""

import numpy as np
import pytest

from tcbench.measure import window as Wn
from tcbench import workloads


def win(min_s=2.0, steps=20, max_s=8.0, tol=0.02):
    return Wn.Window(min_s, steps, max_s, tol)


def test_device_defaults_fill_what_the_study_leaves_null():
    p = workloads.resolve_params("amp_recipe", {})
    gpu, cpu = Wn.resolve(p, "cuda"), Wn.resolve(p, "cpu")
    assert (gpu.min_s, gpu.min_steps, gpu.max_s) == (2.0, 20, 8.0)
    assert (cpu.min_s, cpu.min_steps) == (0.0, 0)
    own = Wn.resolve(workloads.resolve_params("amp_recipe", {"min_timed_s": 0.5, "max_timed_s": 1}),
                     "cpu")
    assert (own.min_s, own.max_s) == (0.5, 1.0)


@pytest.mark.parametrize("bad", [{"min_timed_s": -1}, {"min_timed_steps": 2.5},
                                 {"steady_tolerance": 0}, {"min_timed_s": 3, "max_timed_s": 1},
                                 {"cpu_placement": "numa"}])
def test_bad_window_parameters_are_rejected_by_name(bad):
    with pytest.raises(ValueError, match=next(iter(bad)) if "max" not in str(bad) else "max"):
        workloads.resolve_params("amp_recipe", bad)


def fill(step_times, window):
    """Run window.fill over a synthetic loop: ``step_times(i)`` is step i's duration."""
    steps = [step_times(i) for i in range(145)]     # the recipe's steady schedule steps

    def more(n):
        steps.extend(step_times(len(steps) + i) for i in range(n))
    return Wn.fill(lambda: np.asarray(steps), more, window), steps


def test_a_short_schedule_gets_measurement_steps_until_the_window_is_long_enough():
    rec, steps = fill(lambda i: 1e-3, win())
    assert rec["steady"] and rec["timed_s"] >= 2.0 and rec["measurement_steps"] > 0
    assert rec["timed_s"] < 2 * 2.0 + 1e-9          # rounds at most double: no far overshoot
    assert rec["timed_steps"] == len(steps) == 145 + rec["measurement_steps"]


def test_an_unsteady_window_is_extended_then_flagged_with_the_reason():
    rec, steps = fill(lambda i: 1e-3 * (1 + i / 1000), win(max_s=4.0))   # keeps slowing
    assert rec["steady"] is False and "differ by" in rec["steady_reason"]
    assert rec["timed_s"] >= 2.0


def test_a_step_that_settles_is_steady_after_extension():
    rec, _ = fill(lambda i: 2e-3 if i < 1200 else 1e-3, win(max_s=20.0))
    assert rec["steady"] is True and rec["halves_median_diff"] <= 0.02


def test_a_schedule_longer_than_the_bound_is_never_lengthened():
    """mnist_seed: 20 epochs, about 65 s: already past the window and its bound."""
    calls = []
    rec = Wn.fill(lambda: np.r_[np.full(500, 0.1), np.full(500, 0.12)], calls.append, win())
    assert calls == [] and rec["measurement_steps"] == 0 and rec["steady"] is False


def test_too_few_steps_to_judge_say_so():
    rec = Wn.fill(lambda: np.asarray([1e-3] * 3), lambda n: None, win(0.0, 0, 0.0))
    assert rec["steady"] is None and "too few" in rec["steady_reason"]


def test_a_graph_compiled_inside_the_window_makes_it_unsteady_whatever_the_medians_say():
    steady = Wn.judge(np.full(40, 0.01), win())[1]
    assert steady["steady"] is True
    assert Wn.with_compilations(steady, None) == steady | {"graphs_compiled": None}
    assert Wn.with_compilations(steady, 0)["steady"] is True
    rec = Wn.with_compilations(steady, 2)
    assert rec["steady"] is False and rec["graphs_compiled"] == 2
    assert rec["steady_reason"].startswith("2 graph(s) compiled inside the timed window")
    # an unsteady window keeps its own reason beside the compilation's
    wobbly = {"steady": False, "steady_reason": "the two halves differ"}
    assert Wn.with_compilations(wobbly, 1)["steady_reason"].endswith("the two halves differ")
