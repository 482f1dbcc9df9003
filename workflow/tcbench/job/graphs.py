"""The training step as one CUDA graph, for steps the host cannot issue fast enough.

A step bound by kernel-launch overhead (a small MLP, a CNN at a small batch) runs at the speed
of the CPU thread that launches its kernels; captured once as a CUDA graph and replayed, the
whole step is one launch, and the GPU's own speed shows. ``plan`` decides the training step a
job asks for, and what its record says of it: the eager step (``tcbench.job.train``), with the
workload's optimiser in its fused implementation where ``fused_optimizer: on``, captured as a
graph where ``cuda_graphs: on``; ``step`` builds it. The job writes the record.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

from ..workloads import Workload
from .precision import Precision
from .train import eager_step


def fused(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """The same optimiser (class, parameter groups, hyperparameters) in its fused
    implementation: one kernel for the whole update, and, where a GradScaler is enabled, the
    scaler's inf/NaN check consumed on the device (``_step_supports_amp_scaling``) instead of
    read on the host. Workload parameter ``fused_optimizer: on``; ValueError naming the class
    where it has no fused implementation."""
    strip = ("fused", "foreach")
    groups = [{k: v for k, v in g.items() if k not in strip} for g in optimizer.param_groups]
    # only what the constructor takes: a subclass may keep a fixed default of its base class
    # (torch's AdamW keeps Adam's decoupled_weight_decay=True, which AdamW() does not accept)
    takes = inspect.signature(type(optimizer).__init__).parameters
    defaults = {k: v for k, v in optimizer.defaults.items() if k not in strip and k in takes}
    try:
        return type(optimizer)(groups, **defaults, fused=True)
    except (TypeError, RuntimeError, ValueError) as exc:
        raise ValueError(f"fused_optimizer=on: {type(optimizer).__name__} has no fused "
                         f"implementation here ({exc})") from None


def scaler_on_device(optimizer: torch.optim.Optimizer) -> bool:
    """Whether GradScaler hands this optimiser its inf/NaN flag as a device tensor (fused
    optimisers): no host synchronisation in ``scaler.step``, so the step can be captured."""
    return bool(getattr(optimizer, "_step_supports_amp_scaling", False))


def graphs_supported(w: Workload, precision: Precision, device) -> tuple[bool, str | None]:
    if device.type != "cuda":
        return False, "CUDA graphs need a CUDA device"
    if precision.use_scaler and not scaler_on_device(w.optimizer):
        return False, ("GradScaler checks gradients for inf/NaN on the host every step with "
                       f"{type(w.optimizer).__name__}'s own implementation; that "
                       "synchronisation cannot be captured in a CUDA graph (fused_optimizer: on "
                       "keeps the check on the GPU where the optimiser has a fused version)")
    return True, None


class GraphedStep:
    """The whole training step (forward, loss, backward, optimiser step) captured once as a
    CUDA graph, then replayed with the batch copied into static input tensors: one launch per
    step instead of hundreds, for workloads bound by kernel-launch overhead.

    Capture follows PyTorch's whole-network recipe: a few warm-up iterations on a side stream
    (they train on the first batch, before the timed region), gradients set to None, then one
    captured iteration. The optimiser is made capturable (its step counters live on the device)
    and a learning rate that a scheduler changes becomes a device tensor updated in place, so the
    replayed graph sees the schedule. With an enabled GradScaler (amp-fp16) the optimiser must
    be a fused one (``scaler_on_device``): the captured step then scales the loss, unscales and
    checks the gradients, skips the update on inf/NaN and updates the scale, all on the GPU, as
    the eager step does. A batch of another shape (an epoch's last, smaller batch) runs eagerly.
    """

    def __init__(self, model, w: Workload, precision: Precision, device, example: tuple,
                 scaler: torch.amp.GradScaler | None = None, warmup: int = 3):
        self.model, self.w, self.precision, self.device = model, w, precision, device
        scaler = scaler if scaler is not None and scaler.is_enabled() else None
        for group in w.optimizer.param_groups:
            if "capturable" in group:
                group["capturable"] = True
            if w.scheduler is not None and not torch.is_tensor(group["lr"]):
                group["lr"] = torch.tensor(group["lr"], device=device)
        x, y = example
        self.x, self.y = x.clone(memory_format=torch.preserve_format), y.clone()
        self.eager = eager_step(model, w, scaler or torch.amp.GradScaler(device.type,
                                                                        enabled=False),
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
            if scaler is not None:
                scaler.scale(self.loss).backward()
                scaler.step(w.optimizer)
                scaler.update()
            else:
                self.loss.backward()
                w.optimizer.step()

    def __call__(self, data, target):
        if data.shape != self.x.shape or target.shape != self.y.shape:
            return self.eager(data, target)
        self.x.copy_(data)
        self.y.copy_(target)
        self.graph.replay()
        return self.loss


@dataclass(frozen=True)
class Plan:
    """Which step a job builds, decided before anything is captured: the CUDA-graph facts for
    the record (None where the fused optimiser failed first) and why the cell cannot run (None:
    it can)."""
    cuda_graphs: dict | None
    unsupported: str | None = None


def plan(w: Workload, precision: Precision, device, params: dict) -> Plan:
    """The step the job asks for: with the workload's optimiser swapped for its fused
    implementation where ``fused_optimizer: on``, captured as a CUDA graph where ``cuda_graphs:
    on`` and the device and optimiser allow it."""
    if params["fused_optimizer"] == "on":
        try:
            w.optimizer = fused(w.optimizer)
        except ValueError as exc:
            return Plan(None, str(exc))
    facts = {"requested": params["cuda_graphs"] == "on", "captured": False, "reason": None}
    if not facts["requested"]:
        return Plan(facts)
    ok, reason = graphs_supported(w, precision, device)
    return Plan(facts, None if ok else f"cuda_graphs=on: {reason}")


def step(chosen: Plan, model, w: Workload, precision: Precision, device, scaler, example):
    """The training step ``chosen`` (a plan without an ``unsupported`` reason): eager, or
    captured as a CUDA graph (``example``: a batch on the device, for the capture)."""
    if not chosen.cuda_graphs["requested"]:
        return eager_step(model, w, scaler, precision, device)
    return GraphedStep(model, w, precision, device, example(), scaler)
