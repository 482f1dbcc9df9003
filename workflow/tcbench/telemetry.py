"""GPU telemetry from NVML: power, SM clock, temperature, memory, clock-event reasons, energy.

A background thread samples while the job trains. The job marks its segments: the warm-up
boundary (``mark_steady``), the end of the workload's own schedule (``pause``: held-out
evaluation follows, which is no training step), the start of the measurement steps
(``resume``). The steady-state energy is the GPU's cumulative energy counter over the steady
segments only, and it is reported only where the counter resolves it:

* the counter must have moved at least ``MIN_COUNTER_UPDATES`` times within the steady
  segments (the thread reads it with every sample, so the count is measured, not assumed);
* the energy it implies over the window must not exceed the highest power sampled in it (a
  window shorter than the counter's update period can imply several times the board's power);
* it is cross-checked against the sampled power integrated over the same segments; a
  disagreement beyond ``CROSS_CHECK_TOLERANCE`` is flagged in the record.

Otherwise the figure is null and the record says why.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from . import placement

MIN_COUNTER_UPDATES = 10        # counter steps a window needs before its energy is reported
CROSS_CHECK_TOLERANCE = 0.15    # |counter / sampled - 1| beyond which the two disagree


STEADY_KEYS = ("steady_energy_j", "steady_energy_window_s", "steady_energy_counter_updates",
               "steady_energy_implied_power_w", "steady_energy_sampled_j",
               "steady_energy_cross_check_ratio", "steady_energy_cross_check_ok",
               "steady_energy_note")


@dataclass
class _Samples:
    t: list = field(default_factory=list)
    power_w: list = field(default_factory=list)
    energy_mj: list = field(default_factory=list)
    sm_clock_mhz: list = field(default_factory=list)
    temperature_c: list = field(default_factory=list)
    memory_used_bytes: list = field(default_factory=list)
    throttle: int = 0


def _in_segments(t: np.ndarray, segments: list[tuple[float, float]]) -> np.ndarray:
    keep = np.zeros(len(t), dtype=bool)
    for a, b in segments:
        keep |= (t >= a) & (t <= b)
    return keep


def window_energy(segments: list[tuple[tuple[float, float | None], tuple[float, float | None]]],
                  samples: _Samples) -> dict:
    """Energy over ``segments`` ((t, counter mJ) at each end), if the counter resolves it."""
    out = dict.fromkeys(STEADY_KEYS)
    if any(e is None for (_, e), _ in segments) or any(e is None for _, (_, e) in segments):
        return out | {"steady_energy_note": "this GPU has no NVML total-energy counter"}
    window = sum(b[0] - a[0] for a, b in segments)
    energy = sum(b[1] - a[1] for a, b in segments) / 1e3
    t = np.asarray(samples.t)
    spans = [(a[0], b[0]) for a, b in segments]
    keep = _in_segments(t, spans) if len(t) else np.zeros(0, dtype=bool)
    e = np.asarray(samples.energy_mj, dtype=float)[keep] if len(samples.energy_mj) == len(t) \
        else np.zeros(0)
    updates = int(np.count_nonzero(np.diff(e))) if len(e) > 1 else 0
    power = np.asarray(samples.power_w, dtype=float)[keep] if len(samples.power_w) == len(t) \
        else np.zeros(0)
    sampled = sum(float(np.trapezoid(np.asarray(samples.power_w)[m], t[m]))
                  for m in (_in_segments(t, [s]) for s in spans) if m.sum() > 1) \
        if len(power) > 1 else None
    implied = energy / window if window > 0 else None
    out |= {"steady_energy_window_s": window, "steady_energy_counter_updates": updates,
            "steady_energy_implied_power_w": implied, "steady_energy_sampled_j": sampled}
    if updates < MIN_COUNTER_UPDATES:
        return out | {"steady_energy_note": f"the energy counter moved {updates} time(s) in "
                      f"the {window:.3f} s steady window (< {MIN_COUNTER_UPDATES}): too short "
                      "for the counter to resolve"}
    if implied is not None and len(power) and implied > float(power.max()):
        return out | {"steady_energy_note": f"the counter implies {implied:.0f} W over the "
                      f"window, more than the {float(power.max()):.0f} W sampled in it"}
    out["steady_energy_j"] = energy
    if sampled:
        ratio = energy / sampled
        ok = abs(ratio - 1) <= CROSS_CHECK_TOLERANCE
        out |= {"steady_energy_cross_check_ratio": ratio, "steady_energy_cross_check_ok": ok}
        if not ok:
            out["steady_energy_note"] = (f"counter energy is {ratio:.2f}x the sampled power "
                                         f"integrated over the window (tolerance "
                                         f"{CROSS_CHECK_TOLERANCE:.0%})")
    return out


class NvmlSampler:
    """Samples power, the energy counter and the SM clock every ``interval_s`` from a background
    thread, the slow quantities (temperature, memory, throttle reasons) every ``slow_every``-th
    sample. The thread holds the GIL only for the Python around each NVML call, but every call
    must get the GIL back from the training loop; so it makes few calls."""

    def __init__(self, device: torch.device, interval_s: float = 0.1, slow_every: int = 5):
        self.interval_s = interval_s
        self.slow_every = slow_every
        self.handle = None
        self.reason: str | None = None
        self._stop = threading.Event()
        self._samples = _Samples()
        self._marks: dict[str, tuple[float, float | None]] = {}
        if device.type != "cuda":
            self.reason = "no CUDA device: NVML telemetry does not apply"
            return
        try:
            import pynvml
            pynvml.nvmlInit()
            uuid = str(torch.cuda.get_device_properties(device).uuid)
            uuid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
            self.nvml = pynvml
        except Exception as exc:  # noqa: BLE001 - any NVML failure only nulls the telemetry
            self.reason = f"NVML unavailable: {type(exc).__name__}: {exc}"
            self.handle = None

    def _energy_mj(self):
        try:
            return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception:  # noqa: BLE001 - counter absent on older GPUs
            return None

    def _throttle(self):
        fn = getattr(self.nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            self.nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        return int(fn(self.handle))

    def _run(self):
        placement.to_helpers()   # off the training thread's CPU (when the job is pinned)
        nv, h, s = self.nvml, self.handle, self._samples
        n = 0
        while not self._stop.is_set():
            try:
                t, p, e = time.perf_counter(), nv.nvmlDeviceGetPowerUsage(h), self._energy_mj()
                clock = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
                s.t.append(t)
                s.power_w.append(p / 1e3)
                s.energy_mj.append(e)
                s.sm_clock_mhz.append(clock)
                if n % self.slow_every == 0:
                    s.temperature_c.append(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
                    s.memory_used_bytes.append(nv.nvmlDeviceGetMemoryInfo(h).used)
                    s.throttle |= self._throttle()
            except Exception:  # noqa: BLE001 - a failed sample is skipped, not fatal
                pass
            n += 1
            self._stop.wait(self.interval_s)

    def _mark(self, name: str) -> None:
        if self.handle is not None:
            self._marks[name] = (time.perf_counter(), self._energy_mj())

    def __enter__(self):
        if self.handle is not None:
            self._mark("start")
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="tcbench-nvml")
            self._thread.start()
        return self

    def mark_steady(self) -> None:
        """The warm-up boundary: call after a synchronisation."""
        self._mark("steady")

    def pause(self) -> None:
        """The end of the workload's own schedule (after a synchronisation)."""
        self._mark("schedule_end")

    def resume(self) -> None:
        """The start of the measurement steps (after a synchronisation)."""
        self._mark("measure_start")

    def __exit__(self, *exc):
        if self.handle is not None:
            self._stop.set()
            self._thread.join()
            self._mark("end")
        return False

    def _steady_segments(self):
        m = self._marks
        schedule_end = m.get("schedule_end", m.get("end"))
        segments = [(m["steady"], schedule_end)]
        if "measure_start" in m:
            segments.append((m["measure_start"], m["end"]))
        return segments

    def steady_energy(self, steady_samples: int | None) -> dict:
        """Energy of the steady steps (warm-up boundary to the end of the schedule, and the
        measurement steps), from the counter where it resolves the window; else null + why."""
        null = dict.fromkeys(STEADY_KEYS) | {"steady_energy_per_sample_j": None}
        if self.handle is None:
            return null | {"steady_energy_note": self.reason}
        if "steady" not in self._marks:
            return null | {"steady_energy_note": "no warm-up boundary was marked (no steady steps)"}
        out = window_energy(self._steady_segments(), self._samples)
        e = out["steady_energy_j"]
        return out | {"steady_energy_per_sample_j": e / steady_samples
                      if e is not None and steady_samples else None}

    def run_energy(self) -> tuple[float | None, str | None, str | None]:
        """The workload's own loop (warm-up included), under the same rules as the steady
        window: (energy J, source, note)."""
        m = self._marks
        end = m.get("schedule_end", m.get("end"))
        out = window_energy([(m["start"], end)], self._samples)
        if out["steady_energy_j"] is None:
            return None, None, out["steady_energy_note"]
        return out["steady_energy_j"], "nvml_total_energy_counter", out["steady_energy_note"]

    def result(self, samples: int | None = None, steady_samples: int | None = None) -> dict:
        keys = ("energy_j", "energy_source", "energy_note", "power_mean_w", "power_max_w",
                "sm_clock_mean_mhz", "temperature_max_c", "nvml_memory_used_max_bytes",
                "throttle_reasons", "energy_per_sample_j", "telemetry_samples")
        steady = self.steady_energy(steady_samples)
        if self.handle is None:
            return dict.fromkeys(keys) | {"telemetry_note": self.reason} | steady
        s = self._samples
        energy, source, note = self.run_energy()
        return {
            "energy_j": energy,
            "energy_source": source,
            "energy_note": note,
            "power_mean_w": float(np.mean(s.power_w)) if s.power_w else None,
            "power_max_w": float(np.max(s.power_w)) if s.power_w else None,
            "sm_clock_mean_mhz": float(np.mean(s.sm_clock_mhz)) if s.sm_clock_mhz else None,
            "temperature_max_c": int(np.max(s.temperature_c)) if s.temperature_c else None,
            "nvml_memory_used_max_bytes": int(np.max(s.memory_used_bytes))
            if s.memory_used_bytes else None,
            "throttle_reasons": throttle_names(s.throttle, self.nvml),
            "energy_per_sample_j": energy / samples if energy is not None and samples else None,
            "telemetry_samples": len(s.t),
            "telemetry_note": None,
        } | steady


def throttle_names(mask: int, nvml) -> list[str]:
    names = []
    for attr in dir(nvml):
        for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
            if attr.startswith(prefix) and attr[len(prefix):] not in ("All", "None", "Unknown"):
                bit = getattr(nvml, attr)
                if isinstance(bit, int) and bit and mask & bit:
                    names.append(attr[len(prefix):])
    return sorted(set(names))
