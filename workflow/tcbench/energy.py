"""When the GPU's energy counter gives an energy figure: one rule, applied by the job when it
writes a record (``tcbench.measure.telemetry``) and by the result set when it reads one
(``tcbench.resultset``), so a record made before a field existed is judged by the same
function on what it holds and never gains a figure its job withheld.

A window's energy is NVML's cumulative counter read at its ends. It becomes a figure only if

1. the counter moved at least ``MIN_COUNTER_UPDATES`` times inside the window (counted from the
   sampler's reads; a record that did not count them cannot show the counter resolved it);
2. the power it implies over the window is no higher than the highest power sampled (a window
   near the counter's update period can imply several times the board's power);
3. it agrees with the sampled power integrated over the same window within
   ``CROSS_CHECK_TOLERANCE``. Instant power (``POWER_INSTANT``) is checked as it is. The other
   reading (``POWER_AVERAGE``: ``nvmlDeviceGetPowerUsage``, on Ampere and newer the mean of the
   last ``AVERAGE_PERIOD_S``; every record made before the sampler said which it read) lags
   the counter. Its integral over a segment ``[a, b]`` is the true one plus ``E(a) - E(b)``,
   where ``E(t)`` is the power of ``[t - period, t]`` weighted from 0 to 1, so each lies in
   ``[0, period x the reading at t]``: the lag moves the integral by at most
   ``segments x period x the highest reading``. The tolerance grows by that share of the
   sampled energy; where the share exceeds ``MAX_LAG_SHARE`` the average cannot check the
   counter and the window gives no figure (on a 2 s window at a steady draw the share is
   ~100%: only windows of tens of seconds qualify).

Otherwise the figure is null and the reason is said.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_COUNTER_UPDATES = 10        # counter steps a window needs before its energy is a figure
CROSS_CHECK_TOLERANCE = 0.15    # |counter / integrated power - 1| allowed
AVERAGE_PERIOD_S = 1.0          # what nvmlDeviceGetPowerUsage averages over (Ampere and newer)
MAX_LAG_SHARE = 0.05            # the most the average's lag may move a check that still counts

# what the sampler read as power (the record's ``telemetry.power_source``)
POWER_INSTANT = "instant"       # nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)
POWER_AVERAGE = "average"       # nvmlDeviceGetPowerUsage
POWER_SOURCES = (POWER_INSTANT, POWER_AVERAGE)
POWER_READING = {POWER_INSTANT: "instant power",
                 POWER_AVERAGE: "power read as NVML's 1-second average"}

# the two windows a record holds, by the prefix of their fields, and how many segments each
# may have (the steady window: the schedule after the warm-up, and the measurement steps)
STEADY, RUN = "steady_energy_", "energy_"
SEGMENTS = {STEADY: 2, RUN: 1}
# a window's fields after its prefix
FIELDS = ("j", "window_s", "counter_updates", "implied_power_w", "power_max_w", "sampled_j",
          "cross_check_ratio", "cross_check_tolerance", "cross_check_ok", "note")


@dataclass(frozen=True)
class Check:
    ok: bool                        # the counter's energy is a figure
    ratio: float | None = None      # counter energy / integrated sampled power
    tolerance: float | None = None  # what |ratio - 1| was allowed
    agrees: bool | None = None      # the cross-check's outcome where one was made
    reason: str | None = None       # why there is no figure


def _num(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def check(t: dict, prefix: str = STEADY) -> Check:
    """Whether the window ``prefix`` of telemetry ``t`` (a record's, or the sampler's own
    before it writes one) gives an energy figure, and why not."""
    window, implied = _num(t.get(f"{prefix}window_s")), _num(t.get(f"{prefix}implied_power_w"))
    updates = t.get(f"{prefix}counter_updates")
    if implied is None and window:    # a record made before the implied power was a field
        j = _num(t.get(f"{prefix}j"))
        implied = j / window if j is not None else None
    if window is None or implied is None or window <= 0:
        return Check(False, reason="no counter reading over the window")
    if updates is None:
        return Check(False, reason="the record does not count the energy counter's updates "
                     "in the window, so it cannot show that the counter resolved it")
    if updates < MIN_COUNTER_UPDATES:
        return Check(False, reason=f"the energy counter moved {updates} time(s) in the "
                     f"{window:.3f} s window (< {MIN_COUNTER_UPDATES}): too short for the "
                     "counter to resolve")
    # the window's own highest sample; a record without it, the job's (never lower)
    peak = _num(t.get(f"{prefix}power_max_w"))
    peak = peak if peak is not None else _num(t.get("power_max_w"))
    if peak is not None and implied > peak:
        return Check(False, reason=f"the counter implies {implied:.0f} W over the window, "
                     f"more than the {peak:.0f} W sampled")
    sampled = _num(t.get(f"{prefix}sampled_j"))
    if not sampled or sampled <= 0:
        return Check(False, reason="no power samples in the window to cross-check the "
                     "counter against")
    source = t.get("power_source") or POWER_AVERAGE
    ratio, tolerance = implied * window / sampled, CROSS_CHECK_TOLERANCE
    if source != POWER_INSTANT:
        lag = SEGMENTS[prefix] * AVERAGE_PERIOD_S * peak / sampled if peak is not None \
            else math.inf
        if lag > MAX_LAG_SHARE:
            return Check(False, ratio, reason=f"{POWER_READING[POWER_AVERAGE]}: its lag can "
                         f"move the integral over this {window:.1f} s window by up to "
                         f"{lag:.0%} (> {MAX_LAG_SHARE:.0%}), so it cannot cross-check the "
                         "counter")
        tolerance += lag
    agrees = abs(ratio - 1) <= tolerance
    if not agrees:
        return Check(False, ratio, tolerance, False,
                     f"counter energy is {ratio:.2f}x the {POWER_READING[source]} integrated "
                     f"over the window (tolerance {tolerance:.0%})")
    return Check(True, ratio, tolerance, True)


def figures(t: dict | None) -> dict:
    """A record's energy figures as the result set reads them: each window's energy and
    energy per sample where ``check`` passes, else null, with the steady window's reason
    (``steady_energy_excluded``) and the power it was checked against."""
    t = t or {}
    # every record made before the sampler said which it read had the averaged reading
    out = {"power_source": t.get("power_source") or (POWER_AVERAGE if t.get(
        "telemetry_samples") else None)}
    for prefix in (STEADY, RUN):
        c = check(t, prefix)
        keep = c.ok and _num(t.get(f"{prefix}j")) is not None
        out[f"{prefix}j"] = t.get(f"{prefix}j") if keep else None
        out[f"{prefix}per_sample_j"] = t.get(f"{prefix}per_sample_j") if keep else None
    steady = check(t, STEADY)
    read = _num(t.get("steady_energy_window_s")) is not None and (
        _num(t.get("steady_energy_implied_power_w")) is not None
        or _num(t.get("steady_energy_j")) is not None)
    out["steady_energy_excluded"] = None if out["steady_energy_j"] is not None else \
        steady.reason if read else (t.get("steady_energy_note") or t.get("telemetry_note")
                                    or steady.reason)
    out["steady_energy_cross_check_ratio"] = steady.ratio
    return out
