"""GPU telemetry from NVML: power, SM clock, temperature, memory, clock-event reasons, energy.

A background thread samples while the job trains; one sampler runs for the whole job (its
start, ``nvmlInit`` and the handle lookup, happens once, before training). The job marks its
segments: the warm-up boundary (``mark_steady``), the end of the workload's own schedule
(``pause``: held-out evaluation follows, which is no training step), the start of the
measurement steps (``resume``). The steady-state energy is the GPU's cumulative energy counter
over the steady segments only.

Power is NVML's instant reading (``NVML_FI_DEV_POWER_INSTANT`` through
``nvmlDeviceGetFieldValues``) where the driver and GPU answer it, else
``nvmlDeviceGetPowerUsage``, which on Ampere and newer is the mean of the last second and so
lags the counter; the record says which (``power_source``). Whether a window's counter
reading becomes an energy figure is ``tcbench.energy.check``: the counter must resolve the
window, imply no more power than was sampled, and agree with the sampled power integrated over
the same window. Otherwise the figure is null and the record says why.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import energy
from ..host import placement

# re-exported where scripts and tests look for them
MIN_COUNTER_UPDATES = energy.MIN_COUNTER_UPDATES
CROSS_CHECK_TOLERANCE = energy.CROSS_CHECK_TOLERANCE

STEADY_KEYS = tuple(f"{energy.STEADY}{f}" for f in energy.FIELDS)
RUN_KEYS = tuple(f"{energy.RUN}{f}" for f in energy.FIELDS)
# a field value's union member, by NVML's value type (nvmlValueType_t's order)
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


@dataclass
class _Samples:
    t: list = field(default_factory=list)
    power_w: list = field(default_factory=list)
    energy_mj: list = field(default_factory=list)
    sm_clock_mhz: list = field(default_factory=list)
    temperature_c: list = field(default_factory=list)
    memory_used_bytes: list = field(default_factory=list)
    throttle: int = 0


def _integral(t: np.ndarray, p: np.ndarray, a: float, b: float) -> tuple[float, float]:
    """Sampled power over exactly ``[a, b]`` (the counter's window is the marks', not the first
    and last sample's): trapezoids over the samples inside, the edges interpolated from their
    neighbours (held beyond the first and last sample). Returns (joules, highest watts)."""
    grid = np.concatenate([[a], t[(t > a) & (t < b)], [b]])
    watts = np.interp(grid, t, p)
    return float(np.trapezoid(watts, grid)), float(watts.max())


def _updates(a_mj, readings: np.ndarray, b_mj) -> int:
    """How often the counter moved between the segment's end reads, counting every read."""
    seq = np.concatenate([[a_mj], readings, [b_mj]]).astype(float)
    return int(np.count_nonzero(np.diff(seq)))


def window_energy(segments: list[tuple[tuple[float, float | None], tuple[float, float | None]]],
                  samples: _Samples, prefix: str = energy.STEADY, *,
                  power_source: str | None) -> dict:
    """The counter's energy over ``segments`` ((t, counter mJ) at each end) with what
    ``energy.check`` judges it by; the energy itself only where the check passes."""
    out = dict.fromkeys(f"{prefix}{f}" for f in energy.FIELDS)
    if any(e is None for (_, e), _ in segments) or any(e is None for _, (_, e) in segments):
        return out | {f"{prefix}note": "this GPU has no NVML total-energy counter"}
    window = sum(b[0] - a[0] for a, b in segments)
    joules = sum(b[1] - a[1] for a, b in segments) / 1e3
    t = np.asarray(samples.t, dtype=float)
    counted = len(samples.energy_mj) == len(t)
    e = np.asarray([np.nan if v is None else v for v in samples.energy_mj], dtype=float) \
        if counted else np.full(len(t), np.nan)
    updates = 0
    for (ta, ea), (tb, eb) in segments:
        inside = (t >= ta) & (t <= tb) & np.isfinite(e)
        updates += _updates(ea, e[inside], eb)
    p = np.asarray(samples.power_w, dtype=float)
    sampled = peak = None
    if len(p) == len(t) and len(t) > 1:
        parts = [_integral(t, p, a[0], b[0]) for a, b in segments]
        sampled, peak = sum(j for j, _ in parts), max(w for _, w in parts)
    out |= {f"{prefix}window_s": window, f"{prefix}counter_updates": updates,
            f"{prefix}implied_power_w": joules / window if window > 0 else None,
            f"{prefix}power_max_w": peak, f"{prefix}sampled_j": sampled}
    c = energy.check(out | {"power_source": power_source}, prefix)
    return out | {f"{prefix}j": joules if c.ok else None,
                  f"{prefix}cross_check_ratio": c.ratio,
                  f"{prefix}cross_check_tolerance": c.tolerance,
                  f"{prefix}cross_check_ok": c.agrees, f"{prefix}note": c.reason}


def _field_value(v) -> float:
    return float(getattr(v.value, _VALUE_MEMBERS[v.valueType]))


class NvmlSampler:
    """Samples power, the energy counter and the SM clock every ``interval_s`` from a background
    thread, the slow quantities (temperature, memory, throttle reasons) every ``slow_every``-th
    sample. The thread holds the GIL only for the Python around each NVML call, but every call
    must get the GIL back from the training loop; so it makes few calls. Made and entered once
    per job: ``nvmlInit``, the handle lookup and the thread's start cost milliseconds, which a
    sampler started every few steps would put on those steps."""

    def __init__(self, device: torch.device, interval_s: float = 0.1, slow_every: int = 5):
        self.interval_s = interval_s
        self.slow_every = slow_every
        self.handle = None
        self.reason: str | None = None
        self._stop = threading.Event()
        self._samples = _Samples()
        self._marks: dict[str, tuple[float, float | None]] = {}
        self.power_source: str | None = None
        self._power_mw = None
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

    def _choose_power(self) -> None:
        """Instant power where this NVML has the field and the GPU answers it; else the
        averaged reading. Asked once, before the thread starts, so that every sample of a job
        reads the same quantity."""
        nv, h = self.nvml, self.handle
        fid = getattr(nv, "NVML_FI_DEV_POWER_INSTANT", None)
        ok = getattr(nv, "NVML_SUCCESS", 0)

        def instant():
            v = nv.nvmlDeviceGetFieldValues(h, [fid])[0]
            if v.nvmlReturn != ok:
                raise RuntimeError(f"NVML field {fid} returned {v.nvmlReturn}")
            return _field_value(v)
        if isinstance(fid, int):
            try:
                instant()
                self.power_source, self._power_mw = energy.POWER_INSTANT, instant
                return
            except Exception:  # noqa: BLE001 - an older driver or GPU: the averaged reading
                pass
        self.power_source = energy.POWER_AVERAGE
        self._power_mw = lambda: nv.nvmlDeviceGetPowerUsage(h)

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
                t, p, e = time.perf_counter(), self._power_mw(), self._energy_mj()
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
            self._choose_power()
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
        measurement steps), from the counter where ``energy.check`` passes; else null + why."""
        null = dict.fromkeys(STEADY_KEYS) | {"steady_energy_per_sample_j": None}
        if self.handle is None:
            return null | {"steady_energy_note": self.reason}
        if "steady" not in self._marks:
            return null | {"steady_energy_note": "no warm-up boundary was marked (no steady steps)"}
        out = window_energy(self._steady_segments(), self._samples, energy.STEADY,
                            power_source=self.power_source)
        e = out["steady_energy_j"]
        return out | {"steady_energy_per_sample_j": e / steady_samples
                      if e is not None and steady_samples else None}

    def run_energy(self, samples: int | None) -> dict:
        """The workload's own loop (warm-up included), under the same rule as the steady
        window (one segment)."""
        m = self._marks
        end = m.get("schedule_end", m.get("end"))
        out = window_energy([(m["start"], end)], self._samples, energy.RUN,
                            power_source=self.power_source)
        e = out["energy_j"]
        return out | {"energy_source": "nvml_total_energy_counter" if e is not None else None,
                      "energy_per_sample_j": e / samples if e is not None and samples else None}

    def result(self, samples: int | None = None, steady_samples: int | None = None) -> dict:
        keys = ("energy_source", "power_mean_w", "power_max_w", "power_source",
                "sm_clock_mean_mhz", "temperature_max_c", "nvml_memory_used_max_bytes",
                "throttle_reasons", "energy_per_sample_j", "telemetry_samples")
        steady = self.steady_energy(steady_samples)
        if self.handle is None:
            return dict.fromkeys(keys) | dict.fromkeys(RUN_KEYS) | {
                "energy_note": self.reason, "telemetry_note": self.reason} | steady
        s = self._samples
        return {
            "power_source": self.power_source,
            "power_mean_w": float(np.mean(s.power_w)) if s.power_w else None,
            "power_max_w": float(np.max(s.power_w)) if s.power_w else None,
            "sm_clock_mean_mhz": float(np.mean(s.sm_clock_mhz)) if s.sm_clock_mhz else None,
            "temperature_max_c": int(np.max(s.temperature_c)) if s.temperature_c else None,
            "nvml_memory_used_max_bytes": int(np.max(s.memory_used_bytes))
            if s.memory_used_bytes else None,
            "throttle_reasons": throttle_names(s.throttle, self.nvml),
            "telemetry_samples": len(s.t),
            "telemetry_note": None,
        } | self.run_energy(samples) | steady


def throttle_names(mask: int, nvml) -> list[str]:
    names = []
    for attr in dir(nvml):
        for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
            if attr.startswith(prefix) and attr[len(prefix):] not in ("All", "None", "Unknown"):
                bit = getattr(nvml, attr)
                if isinstance(bit, int) and bit and mask & bit:
                    names.append(attr[len(prefix):])
    return sorted(set(names))
