"""Precision modes: what each one switches on, and whether a device can run it.

A mode is a small immutable object. ``apply()`` sets the process-wide backend flags
(TF32 for matmul and cuDNN) and returns the flags actually in force, which go into the
record verbatim, so nobody has to trust the mode's name.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from . import vocabulary as V


# the first NVIDIA architecture of each compute capability a mode can require
GENERATIONS = {(7, 0): "Volta", (7, 5): "Turing", (8, 0): "Ampere", (8, 9): "Ada",
               (9, 0): "Hopper", (10, 0): "Blackwell"}


@dataclass(frozen=True)
class Precision:
    """The behaviour of one ``vocabulary.Mode`` on a device."""

    spec: V.Mode

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return getattr(torch, self.spec.autocast) if self.spec.autocast else None

    @property
    def use_scaler(self) -> bool:
        return self.spec.grad_scaler

    @property
    def allow_tf32(self) -> bool:
        return self.spec.tf32

    def supported(self, device: torch.device) -> tuple[bool, str | None]:
        """(True, None) if ``device`` can run this mode, else (False, reason)."""
        if device.type == "cuda":
            major, minor = torch.cuda.get_device_capability(device)
            need = self.spec.min_capability
            if need and (major, minor) < need:
                what = "TF32" if self.allow_tf32 else self.spec.autocast or self.name
                return False, (f"{what} needs compute capability >= {need[0]}.{need[1]} "
                               f"({GENERATIONS.get(need, 'newer GPUs')}); this GPU is "
                               f"{major}.{minor}")
            return True, None
        if device.type == "cpu":
            if self.allow_tf32:
                return False, "TF32 is a Tensor Core format of NVIDIA GPUs; the device is a CPU"
            return True, None
        return False, f"device type {device.type!r} is not supported by tcbench"

    def apply(self, cudnn_benchmark: bool = False) -> dict:
        """Set the backend flags for this mode and return the flags in force.

        ``cudnn_benchmark`` is not part of the mode: PyTorch's default (off) is what the seed
        ran with; workloads that train on fixed shapes turn autotuning on, and its cost lands
        in the first steps, which the step statistics report as warm-up."""
        torch.backends.cuda.matmul.allow_tf32 = self.allow_tf32
        torch.backends.cudnn.allow_tf32 = self.allow_tf32
        torch.set_float32_matmul_precision("high" if self.allow_tf32 else "highest")
        torch.backends.cudnn.benchmark = cudnn_benchmark
        return backend_flags()

    def autocast(self, device: torch.device, cache_enabled: bool = True):
        """``cache_enabled=False`` inside CUDA graph capture, as PyTorch's docs require: the
        cache of cast weights would otherwise outlive the captured region."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.amp.autocast(device.type, dtype=self.autocast_dtype,
                                  cache_enabled=cache_enabled)

    def scaler(self, device: torch.device) -> torch.amp.GradScaler:
        # A disabled scaler is a no-op pass-through, so one training loop serves every mode,
        # exactly as the PyTorch AMP recipe writes it.
        return torch.amp.GradScaler(device.type, enabled=self.use_scaler)


def backend_flags() -> dict:
    return {
        "cuda_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
    }


MODES: dict[str, Precision] = {m.name: Precision(m) for m in V.MODES}


def get(name: str) -> Precision:
    return MODES[V.mode(name).name]
