"""Workloads: each module builds a model, its data, loss, optimiser and schedule.

A workload module has ``DEFAULTS`` (every parameter it accepts, with its default),
``LOADERS`` (the loader kinds it accepts) and ``build(params, batch_size, device) -> Workload``.
Optionally ``derive(params) -> dict``: values for parameters whose default depends on the
others (their ``DEFAULTS`` entry is None; e.g. a model's own input size),
``check(params)``: raises ValueError naming a bad value, and ``trial(params)``: one training
step of the model on PyTorch's meta device, raising ValueError where the model cannot take its
input. All run before any job, at the workflow's parse time, so they must be cheap (cache what
is slow); a job the workflow made skips the trial step (it ran there, on the same parameters).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch

from .. import vocabulary as V
from ..cli import suggestion
from ..host import placement
from ..measure import window

# workload name -> module under tcbench.workloads
MODULES: dict[str, str] = {
    "amp_recipe": "amp_recipe",
    "mnist_cnn": "mnist_cnn",
    "digits": "digits",
    "resnet50": "resnet50",
    "torchvision": "torchvision_models",   # any torchvision classification model, by name
    "timm": "timm_models",                 # any timm model, by name (optional extra)
    "transformers": "hf_transformers",     # any Hugging Face architecture, by name (optional extra)
    "custom": "custom",                    # a model in the user's own file or module
}
NAMES = tuple(MODULES)
# Where a cell's per-cell evidence (kernel profile, FLOP count) is collected: the same model,
# batch and shapes give the same kernels and FLOPs in every repeat, so once is enough.
EVIDENCE_REPEATS = ("first", "all")

# Parameters every workload accepts: how the run is measured rather than what it trains.
COMMON_DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "warmup_steps": 5,              # first steps reported on their own (init, autotuning)
    "sync_loss_every_step": False,  # the seed's per-step loss.item(); a host sync each step
    "loss_every": 10,               # loss curve resolution, in steps (read after the loop)
    "input_bound_share": 0.2,       # data-wait share of step time that makes a run input bound
    "memory_format": "contiguous",  # or channels_last (4-D inputs only)
    "compile": "off",               # off | default | reduce-overhead | max-autotune
    "cuda_graphs": "off",           # on: capture the whole training step once, then replay
    # on: the workload's optimiser in its fused implementation (one kernel; with GradScaler, the
    # inf/NaN check stays on the GPU, so amp-fp16 steps can be captured in a CUDA graph)
    "fused_optimizer": "off",
    "profile_steps": 5,             # steps profiled after the timed region for kernel evidence
    "evidence_repeats": "first",    # kernel profile + FLOP count: in a cell's first repeat | all
    "telemetry_interval_s": 0.1,   # NVML polling; the thread takes the GIL briefly per sample
    "cudnn_benchmark": "off",       # PyTorch's default, as the seed ran
    # the timed window (tcbench.measure.window): at least this long; null: the device's default
    "min_timed_s": None,            # seconds of timed steps (2.0 on a GPU, 0 on a CPU)
    "min_timed_steps": None,        # timed steps (20 on a GPU, 0 on a CPU)
    "max_timed_s": None,            # an unsteady window is extended up to this (4 x min_timed_s)
    "steady_tolerance": 0.02,       # the window's two halves' medians must agree within this
    "cpu_placement": "pinned",      # pinned: training thread on the fastest core of the job's set | first | os
}


@dataclass
class Workload:
    name: str
    model: torch.nn.Module
    loss_fn: Callable
    optimizer: torch.optim.Optimizer
    epochs: int
    train_loader: Iterable            # iterated once per epoch, yields (data, target)
    example_batch: tuple              # a representative (data, target), for FLOPs and profiling
    data: dict                        # what data was used, for the record
    scheduler: Any = None             # stepped once per epoch, like the seed's StepLR
    non_blocking: bool = False        # host-to-device copies (pinned loaders only)
    evaluate: Callable[[], dict] | None = None   # held-out metrics, where there is held-out data
    notes: list[str] = field(default_factory=list)
    model_info: dict | None = None    # what was built, for the record (see build below)


def module(name: str):
    if name not in NAMES:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(NAMES)}")
    return importlib.import_module(f"tcbench.workloads.{MODULES[name]}")


def preload_modules(names) -> tuple[str, ...]:
    """What the jobs of workloads ``names`` import beyond torch and tcbench (each workload
    module's ``PRELOAD``), for a preloaded interpreter to import once; unknown names are
    skipped (the plan names them)."""
    found = []
    for name in names:
        if name in MODULES:
            found += [f"tcbench.workloads.{MODULES[name]}", *getattr(module(name), "PRELOAD", ())]
    return tuple(dict.fromkeys(found))


def resolve_params(name: str, overrides: dict | None, trial: bool = True) -> dict:
    """Defaults merged with ``overrides``; an unknown key or an out-of-range value is an error
    that names it, raised before anything is built. ``trial``: also the module's trial step
    on the meta device (false only where it already passed on these parameters)."""
    mod = module(name)
    defaults = COMMON_DEFAULTS | mod.DEFAULTS
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ValueError(f"workload {name!r}: unknown parameter(s) "
                         f"{', '.join(f'{k}={overrides[k]!r}' for k in unknown)}"
                         f"{''.join(suggestion(k, defaults) for k in unknown)};"
                         f" accepted: {', '.join(sorted(defaults))}")
    params = defaults | overrides
    if hasattr(mod, "derive"):
        params |= {k: v for k, v in mod.derive(params).items() if params.get(k) is None}
    for axis in V.AXES:
        if axis.name not in params:
            continue
        if axis.onoff:
            params[axis.name] = V.onoff(params[axis.name])
        known = mod.LOADERS if axis.name == "loader" else axis.values
        if known is not None and params[axis.name] not in known:
            raise ValueError(f"workload {name!r}: {axis.name}={params[axis.name]!r} is not "
                             f"available{suggestion(params[axis.name], known)}; choose one of "
                             f"{', '.join(known)}")
    for key in ("warmup_steps", "loss_every", "profile_steps"):
        if not isinstance(params[key], int) or isinstance(params[key], bool) or params[key] < 0:
            raise ValueError(f"workload {name!r}: {key}={params[key]!r} must be an integer >= 0")
    if params["evidence_repeats"] not in EVIDENCE_REPEATS:
        raise ValueError(f"workload {name!r}: evidence_repeats={params['evidence_repeats']!r}; "
                         f"choose one of {', '.join(EVIDENCE_REPEATS)}")
    params["fused_optimizer"] = V.onoff(params["fused_optimizer"])
    if params["fused_optimizer"] not in ("off", "on"):
        raise ValueError(f"workload {name!r}: fused_optimizer={params['fused_optimizer']!r}; "
                         "choose off or on")
    window.check(name, params)
    if params["cpu_placement"] not in placement.PLACEMENTS:
        raise ValueError(f"workload {name!r}: cpu_placement={params['cpu_placement']!r}; "
                         f"choose one of {', '.join(placement.PLACEMENTS)}")
    if hasattr(mod, "check"):
        mod.check(params)
    if trial and hasattr(mod, "trial"):
        mod.trial(params)
    return params


def build(name: str, params: dict, batch_size: int, device: torch.device) -> Workload:
    """The workload, its ``model_info`` completed for the record: the model's name and where
    it comes from (the module's word, else the workload's own), parameter count, input shape."""
    w = module(name).build(params, batch_size, device)
    x = w.example_batch[0]
    w.model_info = {"name": name, "source": "tcbench"} | (w.model_info or {}) | {
        "parameters": sum(p.numel() for p in w.model.parameters()),
        "input_shape": list(x.shape[1:]) if torch.is_tensor(x) else None}
    return w


def optional_package(package: str, workload: str, install: str):
    """An optional extra's package (timm, transformers), or the error that names the workload
    that needs it and how to install it (raised before any job runs)."""
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        raise ValueError(f"workload '{workload}' needs the {package} package, which is not "
                         f"installed here ({exc}): {install}") from None


def positive_int(workload: str, params: dict, *keys: str) -> None:
    for key in keys:
        v = params[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"workload {workload!r}: {key}={v!r} must be a positive integer")
