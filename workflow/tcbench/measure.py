"""Measurement: the seed's wall clock and peak memory, per-step timing, GPU telemetry, FLOPs.

Everything here observes a training run without changing what it computes. On a CUDA device
step times come from ``torch.cuda.Event`` pairs read only after the loop ends, so timing adds no
host synchronisation inside the timed region.
"""

from __future__ import annotations

import copy
import gc
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch


# ----------------------------------------------------------------------------------- wall clock
class WallClock:
    """The seed's timer: collect garbage, empty the cache, reset the peak, synchronise, start;
    stop after a synchronise. Peak memory is ``torch.cuda.max_memory_allocated`` since the reset."""

    def __init__(self, device: torch.device):
        self.device = device
        self.start_s: float | None = None
        self.total_time_s: float | None = None

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def start(self):
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(self.device)
        self._sync()
        self.start_s = time.perf_counter()

    def stop(self) -> float:
        self._sync()
        self.total_time_s = time.perf_counter() - self.start_s
        return self.total_time_s


def memory_stats(device: torch.device) -> dict:
    if device.type != "cuda":
        return {"max_memory_allocated_bytes": None, "max_memory_reserved_bytes": None,
                "memory_allocated_bytes": None,
                "memory_note": "torch.cuda memory statistics exist only on CUDA devices"}
    return {
        "max_memory_allocated_bytes": int(torch.cuda.max_memory_allocated(device)),
        "max_memory_reserved_bytes": int(torch.cuda.max_memory_reserved(device)),
        "memory_allocated_bytes": int(torch.cuda.memory_allocated(device)),
        "memory_note": None,
    }


def memory_in_use(device: torch.device) -> dict:
    """What the process holds at the moment of a failure (out of memory), for the record:
    the allocator's view on CUDA, and the process's resident memory everywhere."""
    out: dict = {}
    try:  # a CUDA context broken by the failure must not cost the record
        out |= memory_stats(device)
        if device.type == "cuda":
            free, total = torch.cuda.mem_get_info(device)
            out |= {"device_free_bytes": int(free), "device_total_bytes": int(total)}
    except RuntimeError as exc:
        out["memory_note"] = f"CUDA memory statistics unavailable: {exc}"[:300]
    try:
        import resource
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        out["process_rss_bytes"] = pages * resource.getpagesize()
        out["process_peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except (OSError, ImportError, ValueError, IndexError):
        out["process_rss_bytes"] = out["process_peak_rss_bytes"] = None
    return out


# ----------------------------------------------------------------------------------- step timer
class StepTimer:
    """Splits every training step into *data wait* and *compute*.

    Marks: before asking the loader for a batch, once the batch is on the device, and after the
    optimiser step has been issued. On CUDA the marks are events on the training stream, so the
    intervals are GPU-timeline intervals: ``data_wait`` is how long the GPU sat with nothing
    queued while the host fetched and copied the batch, ``compute`` is from the batch's arrival
    to the end of the step's kernels. On the CPU the marks are host clocks (CPU execution is
    synchronous, so the two views coincide).

    Within an epoch a step's end mark is also the next step's fetch mark: the loop queues no
    device work between the two, so a third event per step would read the same GPU time.
    ``fetch()`` sets a fresh mark where that does not hold (an epoch's start, after the loader's
    start-up; after the warm-up boundary's synchronisation).

    ``start(steps)`` creates (and records once) every event the loop will need before the timed
    region, so the loop itself only records pre-made events: no allocation, no event creation.
    """

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self._marks: list[tuple] = []
        self._events: list = []
        self._next = 0
        self._fetch = None
        self._ready = None
        self._stream = None

    def start(self, steps: int, restarts: int = 0) -> None:
        """Make the marks for ``steps`` steps and ``restarts`` fresh fetch marks up front."""
        if not self.cuda:
            return
        self._stream = torch.cuda.current_stream()
        self._events = [torch.cuda.Event(enable_timing=True)
                        for _ in range(2 * steps + restarts + 1)]
        for e in self._events:  # CUDA creates an event lazily at its first record: do it now
            e.record(self._stream)
        self._next = 0

    def _mark(self):
        if not self.cuda:
            return time.perf_counter()
        if self._next < len(self._events):
            e = self._events[self._next]
            self._next += 1
        else:  # more marks than start() was told of: still correct, only slower
            e = torch.cuda.Event(enable_timing=True)
        e.record(self._stream)
        return e

    def fetch(self):
        self._fetch = self._mark()

    def data_ready(self):
        self._ready = self._mark()

    def step_done(self):
        done = self._mark()
        self._marks.append((self._fetch, self._ready, done))
        self._fetch = done

    def __len__(self):
        return len(self._marks)

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """(data_wait_s, compute_s), one entry per step. Synchronises on CUDA: call after the loop."""
        if self.cuda:
            torch.cuda.synchronize()
            wait = [a.elapsed_time(b) / 1e3 for a, b, _ in self._marks]
            comp = [b.elapsed_time(c) / 1e3 for _, b, c in self._marks]
        else:
            wait = [b - a for a, b, _ in self._marks]
            comp = [c - b for _, b, c in self._marks]
        return np.asarray(wait, dtype=float), np.asarray(comp, dtype=float)


def warmup_count(warmup_steps: int, steps: int) -> int:
    """How many of ``steps`` steps are warm-up: ``warmup_steps``, keeping at least one steady."""
    return min(warmup_steps, max(steps - 1, 0))


def step_statistics(data_wait_s: np.ndarray, compute_s: np.ndarray, samples: list[int],
                    warmup_steps: int, input_bound_share: float) -> dict:
    """Step-time distribution, steady-state throughput and input-pipeline attribution.

    The first ``warmup_steps`` steps carry CUDA context set-up, cuDNN autotuning and compilation;
    they are reported on their own and excluded from everything else.
    """
    step_s = data_wait_s + compute_s
    n = len(step_s)
    w = warmup_count(warmup_steps, n)
    steady, wait, comp = step_s[w:], data_wait_s[w:], compute_s[w:]
    steady_samples = int(sum(samples[w:]))
    total = float(steady.sum())
    share = float(wait.sum() / total) if total > 0 else None
    return {
        "steps": n,
        "warmup_steps": w,
        "warmup_time_s": float(step_s[:w].sum()),
        "first_step_time_s": float(step_s[0]) if n else None,
        "steady_steps": int(len(steady)),
        "steady_time_s": total,
        "step_time_median_s": float(np.median(steady)) if len(steady) else None,
        "step_time_p10_s": float(np.percentile(steady, 10)) if len(steady) else None,
        "step_time_p90_s": float(np.percentile(steady, 90)) if len(steady) else None,
        "throughput_samples_per_s": steady_samples / total if total > 0 else None,
        "data_wait_s": float(wait.sum()),
        "compute_s": float(comp.sum()),
        "data_wait_share": share,
        "input_bound_threshold": input_bound_share,
        "input_bound": bool(share is not None and share >= input_bound_share),
    }


# ----------------------------------------------------------------------------------- telemetry
@dataclass
class _Samples:
    t: list = field(default_factory=list)
    power_w: list = field(default_factory=list)
    sm_clock_mhz: list = field(default_factory=list)
    temperature_c: list = field(default_factory=list)
    memory_used_bytes: list = field(default_factory=list)
    throttle: int = 0


class NvmlSampler:
    """Samples power, SM clock, temperature, memory and clock-event (throttle) reasons from a
    background thread while the timed region runs; energy comes from the GPU's own cumulative
    counter where it has one, else from integrating the sampled power.

    ``mark_steady()`` reads the energy counter once more at the warm-up boundary, so the record
    carries the energy of the steady-state steps beside the whole run's.

    The thread holds the GIL only for the Python around each NVML call, but every call must get
    the GIL back from the training loop; so it makes few calls: power and SM clock every
    ``interval_s``, the slow quantities (temperature, memory, throttle reasons) every
    ``slow_every``-th sample.
    """

    def __init__(self, device: torch.device, interval_s: float = 0.1, slow_every: int = 5):
        self.interval_s = interval_s
        self.slow_every = slow_every
        self.handle = None
        self.reason: str | None = None
        self._stop = threading.Event()
        self._samples = _Samples()
        self._e0 = self._e1 = self._steady = None
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
        nv, h, s = self.nvml, self.handle, self._samples
        n = 0
        while not self._stop.is_set():
            try:
                s.t.append(time.perf_counter())
                s.power_w.append(nv.nvmlDeviceGetPowerUsage(h) / 1e3)
                s.sm_clock_mhz.append(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
                if n % self.slow_every == 0:
                    s.temperature_c.append(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
                    s.memory_used_bytes.append(nv.nvmlDeviceGetMemoryInfo(h).used)
                    s.throttle |= self._throttle()
            except Exception:  # noqa: BLE001 - a failed sample is skipped, not fatal
                pass
            n += 1
            self._stop.wait(self.interval_s)

    def __enter__(self):
        if self.handle is not None:
            self._e0 = self._energy_mj()
            self._t0 = time.perf_counter()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def mark_steady(self) -> None:
        """The warm-up boundary: call after a synchronisation, so the counter holds the warm-up's
        energy and nothing of the steady steps."""
        if self.handle is not None:
            self._steady = (time.perf_counter(), self._energy_mj())

    def __exit__(self, *exc):
        if self.handle is not None:
            self._stop.set()
            self._thread.join()
            self._t1 = time.perf_counter()
            self._e1 = self._energy_mj()
        return False

    def steady_energy(self, steady_samples: int | None) -> dict:
        """Energy of the steady-state steps (warm-up boundary to the end of the loop), from the
        GPU's energy counter; null with a note where it cannot be had."""
        out = dict.fromkeys(("steady_energy_j", "steady_energy_per_sample_j",
                             "steady_energy_window_s"))
        if self.handle is None:
            return out | {"steady_energy_note": self.reason}
        if self._steady is None:
            return out | {"steady_energy_note": "no warm-up boundary was marked (no steady steps)"}
        t, e = self._steady
        if e is None or self._e1 is None:
            return out | {"steady_energy_note": "this GPU has no NVML total-energy counter"}
        energy = (self._e1 - e) / 1e3
        return {"steady_energy_j": energy,
                "steady_energy_per_sample_j": energy / steady_samples if steady_samples else None,
                "steady_energy_window_s": self._t1 - t,
                "steady_energy_note": None}

    def result(self, samples: int | None = None, steady_samples: int | None = None) -> dict:
        keys = ("energy_j", "energy_source", "power_mean_w", "power_max_w", "sm_clock_mean_mhz",
                "temperature_max_c", "nvml_memory_used_max_bytes", "throttle_reasons",
                "energy_per_sample_j", "telemetry_samples")
        steady = self.steady_energy(steady_samples)
        if self.handle is None:
            return dict.fromkeys(keys) | {"telemetry_note": self.reason} | steady
        s = self._samples
        if self._e0 is not None and self._e1 is not None:
            energy, source = (self._e1 - self._e0) / 1e3, "nvml_total_energy_counter"
        elif len(s.t) > 1:
            energy, source = float(np.trapezoid(s.power_w, s.t)), "integrated_power_samples"
        else:
            energy, source = None, None
        return {
            "energy_j": energy,
            "energy_source": source,
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


# ----------------------------------------------------------------------------------- FLOPs
def conv_backward_flops(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                        transposed, _output_padding, _groups, output_mask, out_shape=None) -> int:
    """A convolution's backward: the input gradient and the weight gradient each cost what the
    forward costs. (torch's own count builds the weight gradient as a dense convolution and so
    overcounts a grouped one by the number of groups: 65x for a depthwise 3x3 layer.)"""
    from torch.utils.flop_counter import conv_flop_count

    forward = conv_flop_count(list(x_shape), list(w_shape), list(grad_out_shape), transposed)
    return forward * (int(bool(output_mask[0])) + int(bool(output_mask[1])))


def count_training_flops(model: torch.nn.Module, loss_fn, example: tuple) -> int:
    """FLOPs of one forward + backward pass, counted by ``torch.utils.flop_counter`` on a copy of
    the model on the meta device: exact for matmuls and convolutions, costs no device time and
    leaves the real model and the GPU's autotuning state untouched. The copy is made with meta
    tensors in place of the weights (no copy of the weights' data)."""
    from torch.utils.flop_counter import FlopCounterMode

    memo: dict = {}
    for t in (*model.parameters(), *model.buffers()):
        meta = torch.empty_like(t, device="meta")
        memo[id(t)] = torch.nn.Parameter(meta, t.requires_grad) \
            if isinstance(t, torch.nn.Parameter) else meta
    meta_model = copy.deepcopy(model, memo)
    data, target = (t.to("meta") for t in example)
    counter = FlopCounterMode(display=False, custom_mapping={
        torch.ops.aten.convolution_backward: conv_backward_flops})
    with counter:
        loss = loss_fn(meta_model(data), target)
        loss.backward()
    return int(counter.get_total_flops())
