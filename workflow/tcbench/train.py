"""The training loop: the seed's loop, with a precision mode and a step timer plugged in.

forward and loss under autocast; scale, backward, step, update; zero the gradients. A
disabled GradScaler passes everything through, so fp32, tf32 and bf16 share the loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .measure import StepTimer
from .precision import Precision
from .workloads import Workload


@dataclass
class TrainLog:
    """What the loop leaves behind, read only after the timed region has ended."""
    losses: torch.Tensor          # one loss per step, on the device (no sync inside the loop)
    scales: torch.Tensor | None   # GradScaler scale after each step, when a scaler is enabled
    samples: list[int]            # samples per step
    initial_scale: float | None = None
    steps: int = 0

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


def train(w: Workload, model, precision: Precision, device: torch.device, timer: StepTimer,
          scaler: torch.amp.GradScaler, channels_last: bool = False,
          sync_loss_every_step: bool = False) -> TrainLog:
    """Train ``model`` (``w.model``, or its compiled wrapper) for ``w.epochs`` epochs."""
    total_steps = w.epochs * len(w.train_loader)
    log = TrainLog(losses=torch.full((total_steps,), math.nan, device=device),
                   scales=torch.zeros(total_steps, device=device) if scaler.is_enabled() else None,
                   samples=[], initial_scale=scaler.get_scale() if scaler.is_enabled() else None)
    model.train()
    for epoch in range(w.epochs):
        batches = iter(w.train_loader)
        while True:
            timer.fetch()
            try:
                batch = next(batches)
            except StopIteration:
                break
            data, target = to_device(batch, device, w.non_blocking, channels_last)
            timer.data_ready()

            loss = train_step(model, w.loss_fn, w.optimizer, scaler, precision, device,
                              data, target)

            timer.step_done()
            log.losses[log.steps] = loss.detach()
            if log.scales is not None:
                log.scales[log.steps] = scaler._get_scale_async()
            if sync_loss_every_step:
                loss.item()  # the seed's per-step host synchronisation, kept when asked for
            log.samples.append(len(target))
            log.steps += 1
        if w.scheduler is not None:
            w.scheduler.step()
    return log
