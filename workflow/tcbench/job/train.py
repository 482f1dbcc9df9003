"""The training loop: the seed's loop, with a precision mode and a step timer plugged in.

forward and loss under autocast; scale, backward, step, update; zero the gradients. A
disabled GradScaler passes everything through, so fp32, tf32 and bf16 share the loop.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import torch

from ..measure import window
from ..measure.core import StepTimer, warmup_count
from ..workloads import Workload
from .precision import Precision


@dataclass
class TrainLog:
    """What the loop leaves behind, read only after the timed region has ended.

    The loop keeps each step's loss tensor as it is (an eager step returns a fresh one: keeping
    it costs no kernel and no synchronisation) and copies it only where keeping it would be
    wrong or costly: a CUDA graph's static output (the next replay overwrites it), or a scalar
    that lives on a larger buffer (CPU ``mse_loss`` returns one on the whole squared-error
    tensor, which keeping would hold in memory). Every ``FLUSH`` steps the kept tensors are
    stacked into ``losses``, one kernel per ``FLUSH`` steps, so a long run holds no more than
    that many.
    """
    losses: torch.Tensor          # one loss per step, on the device (no sync inside the loop)
    scales: torch.Tensor | None   # GradScaler scale after each step, when a scaler is enabled
    samples: list[int]            # samples per step
    initial_scale: float | None = None
    steps: int = 0
    time_to_steady_s: float | None = None   # loop start to the end of the warm-up steps
    _losses: list = field(default_factory=list)
    _scales: list = field(default_factory=list)
    _flushed: int = 0

    FLUSH = 1024

    def add(self, loss: torch.Tensor, samples: int, copy: bool = False, scale=None) -> None:
        loss = loss.detach()
        if copy or loss.untyped_storage().nbytes() > loss.nbytes:
            loss = loss.clone()
        self._losses.append(loss)
        if scale is not None:
            self._scales.append(scale.clone())  # the scaler updates its tensor in place
        self.samples.append(samples)
        self.steps += 1
        if len(self._losses) == self.FLUSH:
            self.flush()

    def flush(self) -> None:
        a, b = self._flushed, self.steps
        if b == a:
            return
        torch.stack(self._losses, out=self.losses[a:b])
        if self._scales:
            torch.stack(self._scales, out=self.scales[a:b])
        self._losses, self._scales, self._flushed = [], [], b

    def loss_curve(self, every: int) -> list[tuple[int, float]]:
        values = self.losses[:self.steps].float().cpu().tolist()
        picked = sorted(set(range(0, self.steps, max(every, 1))) | {self.steps - 1})
        return [(i, values[i]) for i in picked if i >= 0]

    def first_nonfinite_step(self) -> int | None:
        bad = (~torch.isfinite(self.losses[:self.steps])).nonzero()
        return int(bad[0]) if len(bad) else None

    def final_loss(self) -> float | None:
        return float(self.losses[self.steps - 1]) if self.steps else None

    def scaler_stats(self, scaler: torch.amp.GradScaler) -> dict:
        if self.scales is None or not self.steps:
            return {"grad_scaler_final_scale": None, "grad_scaler_skipped_steps": None}
        s = self.scales[:self.steps].cpu()
        # GradScaler skips a step exactly when it finds inf/NaN gradients, and then backs the
        # scale off; so the skipped steps are the steps where the scale went down.
        before = torch.cat([torch.tensor([self.initial_scale]), s[:-1]])
        skipped = int((s < before).sum())
        return {"grad_scaler_final_scale": float(s[-1]), "grad_scaler_skipped_steps": skipped}


def to_device(batch, device, non_blocking=False, channels_last=False):
    """The batch on ``device`` (an indexed device: ``cuda:0``, not ``cuda``); a batch already
    there (a device-resident loader) is passed through without a ``.to`` call per tensor."""
    data, target = batch
    if data.device != device:
        data = data.to(device, non_blocking=non_blocking)
    if target.device != device:
        target = target.to(device, non_blocking=non_blocking)
    if channels_last and data.dim() == 4:
        data = data.contiguous(memory_format=torch.channels_last)
    return data, target


class Batches:
    """The workload's training batches on the device: the one source that the schedule's epochs,
    the measurement steps and an interleaved arm draw from, one loader batch a step. Drawing is
    ``next`` on the loader then ``to_device``; what times a step stays with the caller, around
    the draw."""

    def __init__(self, loader, device: torch.device, non_blocking: bool = False,
                 channels_last: bool = False):
        self.loader, self.device = loader, device
        self.non_blocking, self.channels_last = non_blocking, channels_last

    def epoch(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """One pass over the loader, started now (a worker loader starts its workers here, so
        a mark taken after this call leaves the start out)."""
        return self._moved(iter(self.loader))

    def endless(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Pass after pass, the next started when one ends; a caller that stops drawing and
        comes back later resumes where it stopped."""
        while True:
            yield from self.epoch()

    def _moved(self, batches):
        for batch in batches:
            yield to_device(batch, self.device, self.non_blocking, self.channels_last)


def train_step(model, loss_fn, optimizer, scaler, precision, device, data, target):
    with precision.autocast(device):
        output = model(data)
        loss = loss_fn(output, target)
    if scaler.is_enabled():   # fp16: scale the loss, unscale and check the gradients (host sync)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:                     # every other mode: the plain loop (a disabled scaler's wrappers
        loss.backward()       # would pass everything through, a few microseconds a step)
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


def eager_step(model, w: Workload, scaler, precision: Precision, device):
    def step(data, target):
        return train_step(model, w.loss_fn, w.optimizer, scaler, precision, device, data, target)
    return step


PROGRESS_EVERY_S = 5.0   # a long job says how far it got, at most this often, between epochs


class Chunks:
    """The measurement steps' timing: one mark per chunk of ``SIZE`` steps (a CUDA event on the
    training stream, pre-made; the host clock on a CPU), each chunk's steps, samples and last
    loss. Read after the loop: ``step_s()`` gives each step the mean of its chunk."""

    SIZE = 16

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.spans: list[tuple] = []        # (start mark, end mark, steps, samples)
        self.last_losses: list = []
        self._pool: list = []
        self._start = None
        self._steps = self._samples = 0

    def reserve(self, steps: int, passes: int) -> None:
        if self.cuda:
            more = [torch.cuda.Event(enable_timing=True) for _ in range(steps // self.SIZE
                                                                           + 2 * passes + 2)]
            for e in more:
                e.record()     # CUDA creates an event lazily at its first record: do it now
            self._pool = more + self._pool

    def _mark(self):
        if not self.cuda:
            return time.perf_counter()
        e = self._pool.pop() if self._pool else torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def open(self) -> None:
        self._start, self._steps, self._samples = self._mark(), 0, 0

    def count(self, samples: int) -> None:
        self._steps += 1
        self._samples += samples

    def full(self) -> bool:
        return self._steps == self.SIZE

    def close(self, loss) -> None:
        if not self._steps:
            return
        end = self._mark()
        self.spans.append((self._start, end, self._steps, self._samples))
        self.last_losses.append(loss.detach().clone())
        self._start, self._steps, self._samples = end, 0, 0

    @property
    def steps(self) -> int:
        return sum(n for *_, n, _ in self.spans)

    @property
    def samples(self) -> int:
        return sum(s for *_, s in self.spans)

    def step_s(self) -> np.ndarray:
        """Each measurement step's time, the mean of its chunk. Synchronises on CUDA."""
        if self.cuda:
            torch.cuda.synchronize()
        out = []
        for a, b, n, _ in self.spans:
            t = a.elapsed_time(b) / 1e3 if self.cuda else b - a
            out.extend([t / n] * n)
        return np.asarray(out, dtype=float)

    def nonfinite(self) -> bool:
        return bool(self.last_losses) and not bool(
            torch.isfinite(torch.stack(self.last_losses).float()).all())


@dataclass
class Loop:
    """What every training step of a job shares: the workload, the step, the timer and the log.
    ``epoch`` runs the loop body over one pass of the loader; ``train`` (the workload's own
    schedule) and ``more`` (measurement steps after it) are made of such passes."""
    w: Workload
    step: Callable
    device: torch.device
    timer: StepTimer
    log: TrainLog
    scaler: torch.amp.GradScaler
    channels_last: bool = False
    sync_loss_every_step: bool = False
    boundary: Callable[[], None] | None = None   # called once, after the warm-up steps
    warmup: int = 0
    chunks: "Chunks" = None                      # the measurement steps (``more``)
    batches: Batches = None                      # what every step draws from

    def __post_init__(self):
        if self.device.type == "cuda" and self.device.index is None:  # tensors say cuda:N
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.chunks = Chunks(self.device)
        self.batches = Batches(self.w.train_loader, self.device, self.w.non_blocking,
                               self.channels_last)

    def epoch(self) -> None:
        timer, log = self.timer, self.log
        static_loss = getattr(self.step, "loss", None)  # a CUDA graph's output, overwritten
        batches = self.batches.epoch()
        timer.fetch()                                   # a fresh mark: after the loader's start
        self.at_boundary()
        for data, target in batches:
            timer.data_ready()

            loss = self.step(data, target)

            timer.step_done()
            log.add(loss, len(target), copy=loss is static_loss,
                    scale=self.scaler._get_scale_async() if log.scales is not None else None)
            if self.sync_loss_every_step:
                loss.item()  # host sync: the seed's per-step loss read, kept when asked for
            self.at_boundary()

    def at_boundary(self) -> None:
        if self.boundary is not None and self.log.steps == self.warmup:
            boundary, self.boundary = self.boundary, None
            boundary()
            self.timer.fetch()  # a fresh mark: the boundary's synchronisation is no step's time

    def more(self, steps: int) -> None:
        """``steps`` measurement steps: more training on the workload's own batches after its
        schedule (no scheduler step: the learning rate stays where the schedule left it), so
        that a short schedule still gives a timed window long enough to decide.

        They are timed in chunks of ``Chunks.SIZE`` steps, one mark per chunk (per-step marks and
        the per-step loss log stay with the schedule's steps, the attribution window): what the
        harness adds to a host-bound step is then a few percent of a mark per step. The last
        loss of each chunk is kept, so a loss that turns NaN is still seen."""
        w, chunks = self.w, self.chunks
        chunks.reserve(steps, passes=steps // max(len(w.train_loader), 1) + 2)
        w.model.train()
        left = steps
        while left > 0:
            batches = self.batches.epoch()
            chunks.open()                 # a fresh mark: after the loader's start
            for data, target in batches:
                loss = self.step(data, target)
                chunks.count(len(target))
                if self.sync_loss_every_step:
                    loss.item()  # host sync: the seed's per-step loss read, kept when asked for
                left -= 1
                if chunks.full() or left == 0:
                    chunks.close(loss)
                if left == 0:
                    break
            chunks.close(loss)   # a pass's last, partial chunk (nothing if just closed)

    def fill(self, win: window.Window, resume) -> dict:
        """Measurement steps until the timed window ``win`` is long enough and steady
        (tcbench.measure.window); ``resume()`` before the first of them (the evaluation between
        is over). Reading the step times synchronises: only between rounds, never inside one."""

        def step_s():
            wait, comp = self.timer.intervals()
            return np.concatenate([(wait + comp)[self.warmup:], self.chunks.step_s()])

        def more(n):
            if not self.chunks.steps:   # after step_s's synchronisation: evaluation is over
                resume()
            self.more(n)

        def diverged():
            return self.log.first_nonfinite_step() is not None or self.chunks.nonfinite()

        return window.fill(step_s, more, win, diverged)


def train(w: Workload, step, device: torch.device, timer: StepTimer,
          scaler: torch.amp.GradScaler, channels_last: bool = False,
          sync_loss_every_step: bool = False, warmup_steps: int = 0,
          at_steady: Callable[[], None] | None = None) -> Loop:
    """Train for ``w.epochs`` epochs, the workload's own schedule; ``step(data, target) -> loss``
    is one training step (``eager_step``: the readable loop body above; or a ``GraphedStep``).
    Returns the loop, whose ``log`` holds what it did and whose ``more`` adds measurement steps.

    After the first ``warmup_steps`` steps (autotuning, compilation, lazy loading) the loop
    synchronises once and calls ``at_steady()``: the warm-up boundary, where the time to a
    steady step is read and the energy counter marked."""
    total_steps = w.epochs * len(w.train_loader)
    log = TrainLog(losses=torch.full((total_steps,), math.nan, device=device),
                   scales=torch.full((total_steps,), math.nan, device=device)
                   if scaler.is_enabled() else None,
                   samples=[], initial_scale=scaler.get_scale() if scaler.is_enabled() else None)
    timer.start(total_steps, restarts=w.epochs + 1)
    w.model.train()
    t0 = shown = time.perf_counter()

    def steady():
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # host sync: the warm-up boundary, once per run
        log.time_to_steady_s = time.perf_counter() - t0
        if at_steady is not None:
            at_steady()

    loop = Loop(w, step, device, timer, log, scaler, channels_last, sync_loss_every_step,
                steady, warmup_count(warmup_steps, total_steps))
    for epoch in range(w.epochs):
        loop.epoch()
        if w.scheduler is not None:
            w.scheduler.step()
        now = time.perf_counter()
        if now - shown >= PROGRESS_EVERY_S:
            print(f"epoch {epoch + 1}/{w.epochs}, {log.steps} steps, {now - t0:.1f} s",
                  flush=True)
            shown = now
    log.flush()
    return loop


def evaluate(w: Workload, log: TrainLog) -> dict:
    """Held-out metrics after the workload's own schedule, before any measurement step (which
    trains on); none for a run whose loss diverged."""
    if w.evaluate is None or log.first_nonfinite_step() is not None:
        return {}
    out = w.evaluate()
    w.model.train()
    return out
