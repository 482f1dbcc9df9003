"""The study's vocabulary, written down once: precision modes in order, the axes a study can
cross and their defaults, the keys that make a cell, the statuses, the harness phases and the
configuration error type.

Everything else reads these names from here: the matrix expansion, the job, the tables, the
figures, the verdict and the comparison. The JSON Schemas (``workflow/schemas/``) repeat some of
them as enums, because a schema must stand on its own; ``tests/test_vocabulary.py`` fails when
the two disagree. Standard library only: the workflow imports this while it parses.

Adding a precision mode is one ``Mode`` below (its behaviour on the device lives in
``tcbench.precision``); adding an axis is one ``Axis`` below plus the workload parameter it sets.
"""

from __future__ import annotations

from dataclasses import dataclass


class ConfigError(ValueError):
    """A configuration value that cannot be run; the message names the key and the value."""


# ----------------------------------------------------------------------------- precision modes
@dataclass(frozen=True)
class Mode:
    """What a precision mode is, in words a table can print and a job can act on.

    ``autocast`` names the torch dtype under ``torch.amp.autocast`` (None: no autocast);
    ``tf32`` switches TF32 math on for fp32 matmuls and convolutions; ``min_capability`` is the
    lowest CUDA compute capability that runs it; ``colour`` is its colour in every figure
    (Okabe-Ito, safe for every common colour-vision deficiency)."""

    name: str
    description: str
    colour: str
    autocast: str | None = None
    grad_scaler: bool = False
    tf32: bool = False
    min_capability: tuple[int, int] | None = None
    fp8_recipe: str | None = None


MODES: tuple[Mode, ...] = (
    Mode("fp32", "strict float32: TF32 off for matmul and cuDNN", "#0072B2"),
    Mode("tf32", "float32 storage, TF32 Tensor Core math for matmul and cuDNN", "#009E73",
         tf32=True, min_capability=(8, 0)),
    Mode("amp-fp16", "autocast to float16 with GradScaler (TF32 off elsewhere)", "#D55E00",
         autocast="float16", grad_scaler=True),
    Mode("amp-bf16", "autocast to bfloat16, no scaler (TF32 off elsewhere)", "#CC79A7",
         autocast="bfloat16", min_capability=(8, 0)),
)
PRECISIONS: tuple[str, ...] = tuple(m.name for m in MODES)
BASELINE = "fp32"                       # every speedup and memory ratio is against this mode
REDUCED: tuple[str, ...] = tuple(p for p in PRECISIONS if p != BASELINE)
PALETTE: dict[str, str] = {m.name: m.colour for m in MODES}


def mode(name: str) -> Mode:
    for m in MODES:
        if m.name == name:
            return m
    raise ValueError(f"unknown precision {name!r}; known: {', '.join(PRECISIONS)}")


# ----------------------------------------------------------------------------------- statuses
# Best first: a cell whose repeats differ takes the worst status among them.
STATUSES: tuple[str, ...] = ("ok", "diverged", "oom", "unsupported", "error")
STATUS_RANK: dict[str, int] = {s: i for i, s in enumerate(STATUSES)}


# --------------------------------------------------------------------------------------- axes
LOADERS = ("dataloader", "dataloader-tuned", "gpu-resident", "synthetic")


@dataclass(frozen=True)
class Axis:
    """One thing a study can vary besides precision and batch size; it sets the workload
    parameter of the same name.

    ``values`` None: open (the workload says which values exist). ``default`` None: the
    workload's own default. ``prefix`` goes before the value in cell names and labels where
    the bare value ("on", "default") would say nothing; ``onoff`` axes take YAML's bare
    on/off (which YAML 1.1 reads as booleans) as the words."""

    name: str
    label: str
    values: tuple[str, ...] | None = None
    default: str | None = None
    prefix: str = ""
    onoff: bool = False

    def text(self, value) -> str:
        """How a value reads in a cell name."""
        return f"{self.prefix}{value}"

    def display(self, value) -> str:
        """How a value reads in a table or on a figure's axis."""
        return f"{self.prefix.replace('-', ' ')}{value}"


AXES: tuple[Axis, ...] = (
    Axis("model", "model"),
    Axis("loader", "input pipeline", LOADERS),
    Axis("memory_format", "memory format", ("contiguous", "channels_last"), "contiguous"),
    Axis("compile", "torch.compile", ("off", "default", "reduce-overhead", "max-autotune"),
         "off", prefix="compile-", onoff=True),
    Axis("cuda_graphs", "CUDA graphs", ("off", "on"), "off", prefix="graphs-", onoff=True),
    Axis("cudnn_benchmark", "cuDNN autotuning", ("off", "on"), None, prefix="cudnn-",
         onoff=True),
)
AXIS_NAMES: tuple[str, ...] = tuple(a.name for a in AXES)
# the execution knobs left at their plain-PyTorch value: the "eager" baseline of best.csv
EAGER: dict[str, str] = {"memory_format": "contiguous", "compile": "off", "cuda_graphs": "off"}


def axis(name: str) -> Axis:
    for a in AXES:
        if a.name == name:
            return a
    raise ValueError(f"unknown axis {name!r}; known: {', '.join(AXIS_NAMES)}")


def onoff(value):
    """YAML 1.1 reads bare off/on as booleans; the on/off axes mean the words."""
    return {False: "off", True: "on"}.get(value, value) if isinstance(value, bool) else value


# -------------------------------------------------------------------------------------- cells
# A cell: everything that defines one configuration, except the repeat. ``data`` is derived
# from the workload's parameters (what it trains on), ``model`` is the workload's model.
CELL_KEYS: tuple[str, ...] = ("run", "experiment", "workload", "data", "batch_size",
                              *AXIS_NAMES, "precision")
SETTING_KEYS: tuple[str, ...] = ("batch_size", *AXIS_NAMES)   # what a row label shows
BASELINE_KEYS: tuple[str, ...] = tuple(k for k in CELL_KEYS if k != "precision")


# ---------------------------------------------------------------------------- harness phases
# tcbench.run's phases (record field harness.phases_s), in the order they happen
HARNESS_PHASES: tuple[str, ...] = (
    "imports", "gpu_pinning", "cuda_context", "device_and_environment", "building",
    "counting_flops",
    "capturing_cuda_graph", "training", "measuring", "profiling", "evaluating")
