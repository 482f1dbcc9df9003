"""The timed window: long enough to decide, and steady.

The timed window is every step after the warm-up: the steps of the workload's own schedule,
then, where the schedule ends before the window is long enough, *measurement steps* (more
training on the same batches, see ``tcbench.job.train.Loop.more``). A window must last at least
``min_timed_s`` seconds and ``min_timed_steps`` steps; it is steady when the medians of its two
halves agree within ``steady_tolerance``. An unsteady window is extended (doubled) while it is
shorter than ``max_timed_s``; a window that is still unsteady is reported as such, with the
reason. A schedule that is already longer than ``max_timed_s`` (the seed's MNIST run) is never
extended: the job does not get longer than the workload's own loop.

Defaults depend on the device (``None`` in the parameters): a GPU window of 2 s (about 20 NVML
power samples, hundreds of energy-counter updates) and 20 steps; on a CPU, whose numbers say
nothing about GPUs, nothing beyond the schedule unless a study asks for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# device type -> (min_timed_s, min_timed_steps)
DEVICE_DEFAULTS = {"cuda": (2.0, 20), "cpu": (0.0, 0)}
MAX_OVER_MIN = 4.0           # max_timed_s default: this many times min_timed_s
MIN_HALF = 4                 # steps per half before steadiness can be judged
MAX_ROUNDS = 12              # measurement rounds at most
# A round adds at most as many steps as the window has (the window at most doubles), so a
# wrong first estimate of the step time (a slow schedule, a noisy host) cannot overshoot far.


@dataclass(frozen=True)
class Window:
    min_s: float
    min_steps: int
    max_s: float
    tolerance: float

    def as_record(self) -> dict:
        return {"min_timed_s": self.min_s, "min_timed_steps": self.min_steps,
                "max_timed_s": self.max_s, "steady_tolerance": self.tolerance}


def resolve(params: dict, device_type: str) -> Window:
    """The window a job uses: its parameters, with ``None`` filled from the device's defaults."""
    dflt_s, dflt_steps = DEVICE_DEFAULTS.get(device_type, DEVICE_DEFAULTS["cuda"])
    min_s = params["min_timed_s"] if params["min_timed_s"] is not None else dflt_s
    steps = params["min_timed_steps"] if params["min_timed_steps"] is not None else dflt_steps
    max_s = params["max_timed_s"] if params["max_timed_s"] is not None else MAX_OVER_MIN * min_s
    return Window(float(min_s), int(steps), float(max(max_s, min_s)),
                  float(params["steady_tolerance"]))


def check(workload: str, params: dict) -> None:
    """Raise ValueError naming a bad window parameter (before any job runs)."""
    for key in ("min_timed_s", "max_timed_s"):
        v = params[key]
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0
                              or not math.isfinite(v)):
            raise ValueError(f"workload {workload!r}: {key}={v!r} must be a number of seconds "
                             ">= 0 (or null: the device's default)")
    v = params["min_timed_steps"]
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
        raise ValueError(f"workload {workload!r}: min_timed_steps={v!r} must be an integer >= 0 "
                         "(or null: the device's default)")
    v = params["steady_tolerance"]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
        raise ValueError(f"workload {workload!r}: steady_tolerance={v!r} must be a fraction "
                         "between 0 and 1")
    if params["min_timed_s"] is not None and params["max_timed_s"] is not None \
            and params["max_timed_s"] < params["min_timed_s"]:
        raise ValueError(f"workload {workload!r}: max_timed_s={params['max_timed_s']!r} is "
                         f"below min_timed_s={params['min_timed_s']!r}")


def halves(step_s: np.ndarray) -> float | None:
    """Relative difference of the second half's median step time from the first's."""
    n = len(step_s) // 2
    if n < MIN_HALF:
        return None
    a, b = float(np.median(step_s[:n])), float(np.median(step_s[-n:]))
    return abs(b - a) / a if a > 0 else None


def steps_missing(timed: np.ndarray, window: Window) -> int:
    """How many more steps the window needs to reach its minimum length (0: none), from the
    median step so far, with 5% to spare so one round usually suffices."""
    need_s = window.min_s - float(timed.sum())
    need_n = window.min_steps - len(timed)
    median = float(np.median(timed)) if len(timed) else 0.0
    by_time = math.ceil(1.05 * need_s / median) if need_s > 0 and median > 0 else 0
    return max(by_time, need_n, 0)


def judge(timed: np.ndarray, window: Window) -> tuple[int, dict]:
    """(more steps to run, verdict so far) for the timed window ``timed`` (step seconds)."""
    missing = steps_missing(timed, window)
    diff = halves(timed)
    steady = diff is not None and diff <= window.tolerance
    total = float(timed.sum())
    verdict = {"timed_s": total, "timed_steps": int(len(timed)), "halves_median_diff": diff,
               "steady": steady, "steady_reason": None}
    if missing:
        return min(missing, max(len(timed), MIN_HALF)), verdict
    if not steady and total < window.max_s and len(timed):
        room = int((window.max_s - total) / max(float(np.median(timed)), 1e-9))
        more = min(len(timed), room)
        if more > 0:
            return more, verdict
    if diff is None:   # unknown, not unsteady
        verdict |= {"steady": None, "steady_reason": f"{len(timed)} timed step(s): too few to "
                    "compare the two halves of the window"}
    elif not steady:
        verdict["steady_reason"] = (f"the two halves' median step times differ by {diff:.1%} "
                                    f"(> {window.tolerance:.0%}) over {total:.2f} s "
                                    f"(no longer extended: max_timed_s={window.max_s:g})")
    return 0, verdict


def with_compilations(verdict: dict, graphs: int | None) -> dict:
    """The window's verdict given the graphs compiled inside it (None: an uncompiled job). A
    compilation inside the window (a new input shape: an epoch's last, smaller batch, which
    torch.compile meets only after the warm-up) puts seconds of compiling, or of loading from
    the cache, into a single step; the halves' medians do not see one step, so the window is
    called unsteady here, whatever they say."""
    out = verdict | {"graphs_compiled": graphs}
    if graphs:
        why = (f"{graphs} graph(s) compiled inside the timed window (a new input shape after "
               "the warm-up): the compilation's seconds are in it")
        out |= {"steady": False, "steady_reason": "; ".join(
            r for r in (why, verdict.get("steady_reason")) if r)}
    return out


def fill(step_s_of, run_more, window: Window, diverged=lambda: False) -> dict:
    """Run measurement steps until the window is long enough and steady, or its bound is
    reached. ``step_s_of()`` returns the timed steps' seconds so far (it may synchronise);
    ``run_more(n)`` runs ``n`` measurement steps; ``diverged()`` says the loss turned NaN/inf
    (no use measuring on). Returns the window's record."""
    measurement = rounds = 0
    while True:
        more, verdict = judge(step_s_of(), window)
        if not more or rounds == MAX_ROUNDS or diverged():
            break
        run_more(more)
        measurement += more
        rounds += 1
    if diverged():
        verdict |= {"steady": None, "steady_reason": "the loss diverged: measurement stopped"}
    elif more:
        verdict["steady_reason"] = verdict["steady_reason"] or (
            f"stopped after {MAX_ROUNDS} rounds of measurement steps")
    return window.as_record() | verdict | {"measurement_steps": measurement,
                                           "measurement_rounds": rounds}
