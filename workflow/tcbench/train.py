"""The training loop: the seed's loop, with a precision mode and a step timer plugged in.

forward and loss under autocast; scale, backward, step, update; zero the gradients. A
disabled GradScaler passes everything through, so fp32, tf32 and bf16 share the loop.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from .measure import StepTimer, warmup_count
from .precision import Precision
from .workloads import Workload


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
    data, target = batch
    data = data.to(device, non_blocking=non_blocking)
    target = target.to(device, non_blocking=non_blocking)
    if channels_last and data.dim() == 4:
        data = data.contiguous(memory_format=torch.channels_last)
    return data, target


def train_step(model, loss_fn, optimizer, scaler, precision, device, data, target):
    with precision.autocast(device):
        output = model(data)
        loss = loss_fn(output, target)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss


def eager_step(model, w: Workload, scaler, precision: Precision, device):
    def step(data, target):
        return train_step(model, w.loss_fn, w.optimizer, scaler, precision, device, data, target)
    return step


def graphs_supported(w: Workload, precision: Precision, device) -> tuple[bool, str | None]:
    if device.type != "cuda":
        return False, "CUDA graphs need a CUDA device"
    if precision.use_scaler:
        return False, ("GradScaler checks gradients for inf/NaN on the host every step; that "
                       "synchronisation cannot be captured in a CUDA graph")
    return True, None


class GraphedStep:
    """The whole training step (forward, loss, backward, optimiser step) captured once as a
    CUDA graph, then replayed with the batch copied into static input tensors: one launch per
    step instead of hundreds, for workloads bound by kernel-launch overhead.

    Capture follows PyTorch's whole-network recipe: a few warm-up iterations on a side stream
    (they train on the first batch, before the timed region), gradients set to None, then one
    captured iteration. The optimiser is made capturable (its step counters live on the device)
    and a learning rate that a scheduler changes becomes a device tensor updated in place, so the
    replayed graph sees the schedule. A batch of another shape (an epoch's last, smaller batch)
    runs eagerly.
    """

    def __init__(self, model, w: Workload, precision: Precision, device, example: tuple,
                 warmup: int = 3):
        self.model, self.w, self.precision, self.device = model, w, precision, device
        for group in w.optimizer.param_groups:
            if "capturable" in group:
                group["capturable"] = True
            if w.scheduler is not None and not torch.is_tensor(group["lr"]):
                group["lr"] = torch.tensor(group["lr"], device=device)
        x, y = example
        self.x, self.y = x.clone(memory_format=torch.preserve_format), y.clone()
        self.eager = eager_step(model, w, torch.amp.GradScaler(device.type, enabled=False),
                                precision, device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                self.eager(self.x, self.y)
        torch.cuda.current_stream().wait_stream(side)
        w.optimizer.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            with precision.autocast(device, cache_enabled=False):
                self.loss = w.loss_fn(model(self.x), self.y)
            self.loss.backward()
            w.optimizer.step()

    def __call__(self, data, target):
        if data.shape != self.x.shape or target.shape != self.y.shape:
            return self.eager(data, target)
        self.x.copy_(data)
        self.y.copy_(target)
        self.graph.replay()
        return self.loss


PROGRESS_EVERY_S = 5.0   # a long job says how far it got, at most this often, between epochs


def train(w: Workload, step, device: torch.device, timer: StepTimer,
          scaler: torch.amp.GradScaler, channels_last: bool = False,
          sync_loss_every_step: bool = False, warmup_steps: int = 0,
          at_steady: Callable[[], None] | None = None) -> TrainLog:
    """Train for ``w.epochs`` epochs; ``step(data, target) -> loss`` is one training step
    (``eager_step``: the readable loop body above; or a ``GraphedStep``).

    After the first ``warmup_steps`` steps (autotuning, compilation, lazy loading) the loop
    synchronises once and calls ``at_steady()``: the warm-up boundary, where the time to a
    steady step is read and the energy counter marked."""
    total_steps = w.epochs * len(w.train_loader)
    warmup = warmup_count(warmup_steps, total_steps)
    log = TrainLog(losses=torch.full((total_steps,), math.nan, device=device),
                   scales=torch.full((total_steps,), math.nan, device=device)
                   if scaler.is_enabled() else None,
                   samples=[], initial_scale=scaler.get_scale() if scaler.is_enabled() else None)
    static_loss = getattr(step, "loss", None)   # a CUDA graph's output, overwritten every replay
    timer.start(total_steps, restarts=w.epochs + 1)
    w.model.train()
    t0 = shown = time.perf_counter()

    def steady():
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # host sync: the warm-up boundary, once per run
        log.time_to_steady_s = time.perf_counter() - t0
        if at_steady is not None:
            at_steady()
        timer.fetch()  # a fresh mark: the synchronisation is no step's time

    for epoch in range(w.epochs):
        batches = iter(w.train_loader)
        timer.fetch()
        if log.steps == warmup and log.time_to_steady_s is None:
            steady()
        for batch in batches:
            data, target = to_device(batch, device, w.non_blocking, channels_last)
            timer.data_ready()

            loss = step(data, target)

            timer.step_done()
            log.add(loss, len(target), copy=loss is static_loss,
                    scale=scaler._get_scale_async() if log.scales is not None else None)
            if sync_loss_every_step:
                loss.item()  # the seed's per-step host synchronisation, kept when asked for
            if log.steps == warmup and log.time_to_steady_s is None:
                steady()
        if w.scheduler is not None:
            w.scheduler.step()
        now = time.perf_counter()
        if now - shown >= PROGRESS_EVERY_S:
            print(f"epoch {epoch + 1}/{w.epochs}, {log.steps} steps, {now - t0:.1f} s",
                  flush=True)
            shown = now
    log.flush()
    return log
