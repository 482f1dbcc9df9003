"""Precision modes: what each one switches on, and whether a device can run it.

A mode is a small immutable object. ``apply()`` sets the process-wide backend flags
(TF32 for matmul and cuDNN) and returns the flags actually in force, which go into the
record verbatim, so nobody has to trust the mode's name. ``prepare()`` changes the model where
a mode needs more than flags and autocast: the FP8 modes swap ``nn.Linear`` layers for
torchao's ``Float8Linear`` and say which layers were swapped, which were not, and why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from dataclasses import dataclass

import torch

from .. import vocabulary as V


# the first NVIDIA architecture of each compute capability a mode can require
GENERATIONS = {(7, 0): "Volta", (7, 5): "Turing", (8, 0): "Ampere", (8, 9): "Ada",
               (9, 0): "Hopper", (10, 0): "Blackwell"}

# FP8 through torchao (an optional extra). 0.17 is the first torchao built against torch's
# stable ABI, for torch >= 2.11; older torchao releases each fit exactly one torch release.
FP8_INSTALL = V.FP8_INSTALL
MIN_TORCHAO = (0, 17)
MIN_TORCH_FOR_TORCHAO = (2, 11)
# torch._scaled_mm, hence torchao's Float8Linear, needs both matrix dimensions divisible by 16
FP8_DIM_MULTIPLE = 16


def _version(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def torchao_problem(recipe: str) -> str | None:
    """Why torchao's float8 training cannot run ``recipe`` in this environment (None: it can)."""
    try:
        import torchao
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training  # noqa: F401
    except ImportError as exc:
        return f"FP8 needs torchao, which is not installed ({exc}): {FP8_INSTALL}"
    except Exception as exc:  # noqa: BLE001 - an import that crashes is an incompatible install
        return (f"torchao does not import with torch {torch.__version__}: "
                f"{type(exc).__name__}: {str(exc)[:300]}")
    have = getattr(torchao, "__version__", "unknown")
    if _version(have) < MIN_TORCHAO:
        return (f"torchao {have} is too old: tcbench needs torchao >= "
                f"{'.'.join(map(str, MIN_TORCHAO))} ({FP8_INSTALL})")
    if _version(torch.__version__) < MIN_TORCH_FOR_TORCHAO:
        return (f"torchao {have} is built for torch >= "
                f"{'.'.join(map(str, MIN_TORCH_FOR_TORCHAO))}; this is torch {torch.__version__}")
    try:
        Float8LinearConfig.from_recipe_name(recipe)
    except Exception as exc:  # noqa: BLE001 - torchao names what it does not know
        return f"torchao {have} has no float8 recipe {recipe!r}: {str(exc)[:300]}"
    return None


def fp8_skip_reason(name: str, layer: torch.nn.Linear, parent: torch.nn.Module | None) -> str | None:
    """Why ``layer`` stays in higher precision under an FP8 mode (None: it is converted).

    Only what makes FP8 impossible or meaningless; torchao's own size heuristics (which leave
    small layers in bf16 because they do not pay off on an H100) are not applied: whether FP8
    pays off is what the study measures."""
    if isinstance(parent, torch.nn.MultiheadAttention):
        # MultiheadAttention passes out_proj's weight to F.multi_head_attention_forward and never
        # calls its forward(), so a Float8Linear there would change nothing.
        return "nn.MultiheadAttention reads this layer's weight directly, never its forward()"
    dims = (layer.in_features, layer.out_features)
    if any(d % FP8_DIM_MULTIPLE for d in dims):
        return (f"in/out features {dims[0]}/{dims[1]}: torch._scaled_mm needs both divisible by "
                f"{FP8_DIM_MULTIPLE}")
    return None


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

    @property
    def fp8_recipe(self) -> str | None:
        return self.spec.fp8_recipe

    def device_supported(self, device: torch.device) -> tuple[bool, str | None]:
        """(True, None) if the hardware of ``device`` can run this mode, else (False, reason)."""
        if device.type == "cuda":
            major, minor = torch.cuda.get_device_capability(device)
            need = self.spec.min_capability
            if need and (major, minor) < need:
                what = ("FP8" if self.fp8_recipe else "TF32" if self.allow_tf32
                        else self.spec.autocast or self.name)
                return False, (f"{what} needs compute capability >= {need[0]}.{need[1]} "
                               f"({GENERATIONS.get(need, 'newer GPUs')} or newer); this GPU is "
                               f"{major}.{minor}")
            return True, None
        if device.type == "cpu":
            if self.allow_tf32:
                return False, "TF32 is a Tensor Core format of NVIDIA GPUs; the device is a CPU"
            if self.fp8_recipe:
                return False, ("FP8 training runs on the float8 Tensor Cores of NVIDIA GPUs of "
                               "compute capability >= 8.9 (Ada, Hopper, Blackwell); the device "
                               "is a CPU")
            return True, None
        return False, f"device type {device.type!r} is not supported by tcbench"

    def supported(self, device: torch.device) -> tuple[bool, str | None]:
        """(True, None) if ``device`` and the installed libraries can run this mode, else
        (False, reason)."""
        ok, reason = self.device_supported(device)
        if ok and self.fp8_recipe:
            reason = torchao_problem(self.fp8_recipe)
            ok = reason is None
        return ok, reason

    def prepare(self, model: torch.nn.Module, compile: str = "off", batches=()):
        """``(model, fp8)``: the model this mode trains, and what was done to it for the record.

        Modes without FP8 return the model untouched and ``None``. The FP8 modes swap every
        ``nn.Linear`` that can run in float8 for torchao's ``Float8Linear`` (in place: the
        parameters, hence the optimiser's references, stay the same tensors); ``fp8`` lists the
        converted and the kept layers, the latter with the reason, and ``unsupported_reason`` is
        set when no layer could be converted. ``batches``: the numbers of samples the training
        batches hold; one that is not a multiple of 16 (an epoch's last, partial batch) would
        be the inner dimension of a weight-gradient GEMM that torch._scaled_mm refuses, so
        torchao then pads it (``pad_inner_dim``, a copy per GEMM: off unless needed). Call it
        after ``supported()`` said yes, after FLOPs are counted (the arithmetic is the same) and
        before ``torch.compile``."""
        if not self.fp8_recipe:
            return model, None
        import torchao
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        parents = {name: mod for name, mod in model.named_modules()}
        linears = {name: mod for name, mod in parents.items()
                   if isinstance(mod, torch.nn.Linear)}
        skip = {name: fp8_skip_reason(name, mod, parents.get(name.rpartition(".")[0])
                                      if name else None)
                for name, mod in linears.items()}
        skip = {name: why for name, why in skip.items() if why}
        config = Float8LinearConfig.from_recipe_name(self.fp8_recipe)
        ragged = sorted(b for b in set(batches) if b % FP8_DIM_MULTIPLE)
        if ragged:
            config = dataclasses.replace(config, pad_inner_dim=True)
        model = convert_to_float8_training(model, config=config,
                                           module_filter_fn=lambda mod, fqn: fqn not in skip)
        after = dict(model.named_modules())
        converted = [n for n in linears if after.get(n) is not linears[n]]
        weights = {n: linears[n].weight.numel() for n in linears}
        casts = {role: getattr(c, "short_str", c.__str__)()
                 for role, c in (("input", config.cast_config_input),
                                 ("weight", config.cast_config_weight),
                                 ("grad_output", config.cast_config_grad_output))}
        fp8 = {
            "recipe": self.fp8_recipe,
            "torchao_version": getattr(torchao, "__version__", "unknown"),
            "cast_configs": casts,
            "converted": converted,
            "kept": [{"layer": n, "in_features": linears[n].in_features,
                      "out_features": linears[n].out_features,
                      "reason": skip.get(n, "not converted by torchao")}
                     for n in linears if n not in converted],
            # Linear weights are what the FP8 GEMMs read: their share of the Linear work
            "linear_weights_converted_share":
                sum(weights[n] for n in converted) / sum(weights.values()) if weights else None,
            "pad_inner_dim": (f"on: batches of {', '.join(map(str, ragged))} samples, not a "
                              f"multiple of {FP8_DIM_MULTIPLE}") if ragged else None,
            "compile": compile,
            "eager_note": None if compile != "off" else (
                "compile: off; torchao's float8 scaling and casts run as separate eager "
                "kernels around each FP8 GEMM (torch.compile fuses them): expect FP8 to be slow"),
            "unsupported_reason": None,
        }
        if not converted:
            fp8["unsupported_reason"] = (
                "FP8 converts nn.Linear layers and this model has none" if not linears else
                f"none of the model's {len(linears)} nn.Linear layer(s) can run in FP8: "
                + "; ".join(f"{k['layer'] or '(the model)'}: {k['reason']}"
                            for k in fp8["kept"][:3]))
        return model, fp8

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
