"""Measurement: the seed's wall clock and peak memory, per-step timing, GPU telemetry, FLOPs.

Everything here observes a training run without changing what it computes. On a CUDA device
step times come from ``torch.cuda.Event`` pairs read only after the loop ends, so timing adds no
host synchronisation inside the timed region.
"""

from __future__ import annotations

import copy
import gc
import time

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
    # free + reserved at one moment: the rest of the device is the CUDA context's, the
    # libraries' own and other processes' (what a capacity prediction must leave aside)
    try:
        free, total = torch.cuda.mem_get_info(device)
    except RuntimeError:  # a context broken by a failure still has the allocator's view
        free = total = None
    return {
        "max_memory_allocated_bytes": int(torch.cuda.max_memory_allocated(device)),
        "max_memory_reserved_bytes": int(torch.cuda.max_memory_reserved(device)),
        "memory_allocated_bytes": int(torch.cuda.memory_allocated(device)),
        "memory_reserved_bytes": int(torch.cuda.memory_reserved(device)),
        "device_free_bytes": None if free is None else int(free),
        "device_total_bytes": None if total is None else int(total),
        "memory_note": None,
    }


def memory_in_use(device: torch.device) -> dict:
    """What the process holds at the moment of a failure (out of memory), for the record:
    the allocator's view on CUDA, and the process's resident memory everywhere."""
    out: dict = {}
    try:  # a CUDA context broken by the failure must not cost the record
        out |= memory_stats(device)
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
                    warmup_steps: int, input_bound_share: float,
                    measurement_s: np.ndarray | None = None, measurement_samples: int = 0) -> dict:
    """Step-time distribution, steady-state throughput and input-pipeline attribution.

    The first ``warmup_steps`` steps carry CUDA context set-up, cuDNN autotuning and compilation;
    they are reported on their own and excluded from everything else. ``measurement_s``: the
    measurement steps after the schedule (each its chunk's mean, tcbench.job.train.Chunks), timed
    without a per-step split; they count in the throughput and the step-time distribution, while
    the data-wait attribution comes from the schedule's steps (``attribution_steps``).
    """
    step_s = data_wait_s + compute_s
    n = len(step_s)
    w = warmup_count(warmup_steps, n)
    extra = np.asarray(measurement_s if measurement_s is not None else [], dtype=float)
    steady, wait, comp = np.concatenate([step_s[w:], extra]), data_wait_s[w:], compute_s[w:]
    steady_samples = int(sum(samples[w:])) + int(measurement_samples)
    total = float(steady.sum())
    attributed = float(wait.sum() + comp.sum())
    share = float(wait.sum() / attributed) if attributed > 0 else None
    return {
        "steps": n + len(extra),
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
        "attribution_steps": int(len(wait)),
        "data_wait_share": share,
        "input_bound_threshold": input_bound_share,
        "input_bound": bool(share is not None and share >= input_bound_share),
    }


# telemetry lives in tcbench.measure.telemetry; re-exported here, where jobs and scripts look for it
from .telemetry import NvmlSampler, throttle_names  # noqa: E402,F401


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
