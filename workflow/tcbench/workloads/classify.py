"""Image classification with any model: the one builder the ``resnet50``, ``torchvision``,
``timm`` and ``custom`` workloads share.

A model from a factory, cross-entropy (or one-hot binary cross-entropy), SGD with momentum (or
AdamW), and one epoch of ``warmup_steps + steps`` steps over synthetic batches made once on the
device (the default: no input pipeline, the GPU's own numbers) or over a folder of the user's
own images (``data: imagefolder``, ``data_dir``) through the loader the ``loader`` axis names.
Not a workload itself: the registry only knows the modules that use it.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import warnings
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from ..data import imagefolder, loaders
from . import Workload, positive_int

DATA_KINDS = ("synthetic", "imagefolder")
LOSSES = ("cross_entropy", "bce")
OPTIMIZERS = {"sgd": {"lr": 0.1, "weight_decay": 1e-4},     # torchvision's ResNet recipe
              "adamw": {"lr": 1e-3, "weight_decay": 0.05}}  # its ViT/ConvNeXt/Swin recipes
DEFAULT_IMAGE_SIZE = 224
DEFAULT_CLASSES = 1000
LOADERS = loaders.LOADERS
DEFAULTS = {
    "steps": 50,
    "warmup_steps": 10,
    "image_size": None,         # None: the model's own input size (its library's config), else 224
    "num_classes": None,        # None: 1000, or an image folder's number of class folders
    "loss": "cross_entropy",    # or bce: binary cross-entropy on one-hot targets
    "label_smoothing": 0.0,
    "optimizer": "sgd",         # or adamw
    "lr": None,                 # None: 0.1 for sgd, 0.001 for adamw
    "momentum": 0.9,            # sgd only
    "weight_decay": None,       # None: 1e-4 for sgd, 0.05 for adamw
    "data": "synthetic",        # or imagefolder
    "data_dir": None,           # the image folder: <data_dir>/<class>/<image>
    "loader": None,             # None: synthetic for synthetic data, else the seed's dataloader
    "num_workers": 2,           # the seed's DataLoader workers
    "train_samples": None,      # an image folder's random subset of this many images
    "distinct_batches": 4,      # synthetic batches made up front and cycled
    "cudnn_benchmark": "on",    # fixed shapes: autotune once, as any image training script does
}


def suggest(word: str, known) -> str:
    """' (did you mean a, b?)' for a misspelt name, or ''."""
    close = difflib.get_close_matches(word, list(known), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def unknown_name(workload: str, name, known, what: str = "model") -> ValueError:
    """The error for a name that is not one of ``known``: close matches, or a few known ones."""
    known = list(known)
    hint = suggest(str(name), known) or (f"; {len(known)} known, e.g. {', '.join(known[:8])}"
                                         if known else "")
    return ValueError(f"workload {workload!r}: {what}={name!r} is not a {workload} {what}{hint}")


def derive(workload: str, params: dict, image_size: Callable[[], int | None]) -> dict:
    """Defaults that depend on other parameters; ``image_size()`` is the model's own size."""
    kind, opt = params["data"], params["optimizer"]
    if kind not in DATA_KINDS:
        raise ValueError(f"workload {workload!r}: data={kind!r}; choose one of "
                         f"{', '.join(DATA_KINDS)}")
    if opt not in OPTIMIZERS:
        raise ValueError(f"workload {workload!r}: optimizer={opt!r}; choose one of "
                         f"{', '.join(OPTIMIZERS)}")
    out = dict(OPTIMIZERS[opt])
    out["loader"] = "dataloader" if kind == "imagefolder" else "synthetic"
    if params["image_size"] is None:
        out["image_size"] = image_size() or DEFAULT_IMAGE_SIZE
    if kind == "imagefolder":
        if not params["data_dir"]:
            raise ValueError(f"workload {workload!r}: data=imagefolder needs data_dir, the "
                             f"folder of <class>/<image> files")
        out["num_classes"] = len(folder_classes(workload, params["data_dir"]))
    else:
        out["num_classes"] = DEFAULT_CLASSES
    return out


def folder_classes(workload: str, data_dir) -> list[str]:
    try:
        return imagefolder.classes(data_dir)
    except loaders.DataMissingError as exc:  # a ValueError here: a bad parameter, before any job
        raise ValueError(f"workload {workload!r}: {exc}") from None


def check(workload: str, params: dict) -> None:
    """The parameters every classification workload shares; the model is checked apart."""
    positive_int(workload, params, "steps", "image_size", "num_classes", "distinct_batches",
                 "num_workers")
    if params["train_samples"] is not None:
        positive_int(workload, params, "train_samples")
    if params["loss"] not in LOSSES:
        raise ValueError(f"workload {workload!r}: loss={params['loss']!r}; choose one of "
                         f"{', '.join(LOSSES)}")
    for key, low in (("lr", 0.0), ("weight_decay", 0.0), ("momentum", 0.0),
                     ("label_smoothing", 0.0)):
        v = params[key]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < low or \
                (key == "lr" and v == 0) or (key == "label_smoothing" and v >= 1):
            raise ValueError(f"workload {workload!r}: {key}={v!r} must be a number "
                             + ("in [0, 1)" if key == "label_smoothing" else
                                "> 0" if key == "lr" else ">= 0"))
    if params["data"] == "synthetic" and params["loader"] != "synthetic":
        raise ValueError(f"workload {workload!r}: data=synthetic has no files to load, so "
                         f"loader={params['loader']!r} means nothing; use data: imagefolder "
                         f"with data_dir for a loader")
    if params["data"] == "imagefolder":
        n = len(folder_classes(workload, params["data_dir"]))
        if params["num_classes"] < n:
            raise ValueError(f"workload {workload!r}: num_classes={params['num_classes']} but "
                             f"data_dir={params['data_dir']!r} has {n} class folders")


# --------------------------------------------------------------------------- the model check
def on_meta(factory: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """The model with meta tensors (shapes only: no memory, no arithmetic)."""
    try:
        with torch.device("meta"):
            return factory()
    except Exception:  # noqa: BLE001 - builders that compute sizes with tensors (RegNet) need data
        return factory().to("meta")


def forward_check(what: str, factory, make_batch, loss_fn, hint: str = "") -> None:
    """One forward, loss and backward pass of the model as the job will run it, on PyTorch's meta
    device (how the job counts FLOPs; a ViT-B costs 0.1 s). Where that fails, the same on the CPU
    with a batch of two tells a model that is broken for this input from one the meta device
    cannot run. Raises ValueError naming the input shape and the model's own error (then
    ``hint``, where the step, not the building, fails)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the libraries' deprecation notes belong to the job
        try:
            model = on_meta(factory)
            x, y = make_batch(torch.device("meta"))
            loss_fn(model(x), y).backward()
            return
        except Exception as exc:  # noqa: BLE001 - retried for real below
            meta_error = exc
        try:
            model = factory()
        except Exception as exc:  # noqa: BLE001 - the user's or library's own error, named
            raise ValueError(f"{what}: building the model fails: {type(exc).__name__}: "
                             f"{exc}") from None
        x, y = make_batch(torch.device("cpu"))
        try:
            loss_fn(model(x), y).backward()
        except Exception as exc:  # noqa: BLE001
            raise ValueError(f"{what}: one training step fails on inputs of shape "
                             f"{tuple(x.shape)} (targets {tuple(y.shape)}): "
                             f"{type(exc).__name__}: {exc}{hint}") from None
    raise ValueError(f"{what}: trains on the CPU but not on PyTorch's meta device, which the "
                     f"job needs to count FLOPs: {type(meta_error).__name__}: {meta_error}")


def random_batch(sample_shape, num_classes: int, batch_size: int = 2):
    def make(device):
        return (torch.randn(batch_size, *sample_shape, device=device),
                torch.randint(0, num_classes, (batch_size,), device=device))
    return make


def call_factory(fn: Callable, num_classes: int) -> torch.nn.Module:
    """``fn(num_classes)``, or ``fn()`` for a factory that takes no argument."""
    try:
        takes = bool(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        takes = True
    return fn(num_classes) if takes else fn()


# ----------------------------------------------------------------------------- the builder
class ClassificationLoss(torch.nn.Module):
    """Cross-entropy, or binary cross-entropy on one-hot targets, on the model's logits. Models
    that return more than their logits in training (GoogLeNet and Inception v3 with their
    auxiliary heads) are scored on the first output, the main logits."""

    def __init__(self, kind: str = "cross_entropy", label_smoothing: float = 0.0):
        super().__init__()
        self.kind, self.label_smoothing = kind, label_smoothing

    def forward(self, output, target):
        if isinstance(output, (tuple, list)):
            output = output[0]
        if self.kind == "bce":
            onehot = torch.zeros_like(output).scatter_(1, target.unsqueeze(1), 1.0)
            if self.label_smoothing:
                onehot = onehot * (1 - self.label_smoothing) + \
                    self.label_smoothing / output.shape[1]
            return F.binary_cross_entropy_with_logits(output, onehot)
        return F.cross_entropy(output, target, label_smoothing=self.label_smoothing)


def loss_of(params: dict) -> ClassificationLoss:
    p = DEFAULTS | params
    return ClassificationLoss(p["loss"], p["label_smoothing"])


def optimizer_of(params: dict, parameters) -> torch.optim.Optimizer:
    p = DEFAULTS | params
    if p["optimizer"] == "adamw":
        return torch.optim.AdamW(parameters, lr=p["lr"], weight_decay=p["weight_decay"])
    return torch.optim.SGD(parameters, lr=p["lr"], momentum=p["momentum"],
                           weight_decay=p["weight_decay"])


class FixedBatches:
    """``steps`` steps over a few fixed batches already on the device (a user's own batches)."""

    def __init__(self, batches: list, steps: int):
        self.data, self.steps = batches, steps

    def __len__(self):
        return self.steps

    def __iter__(self):
        for i in range(self.steps):
            yield self.data[i % len(self.data)]


def build(workload: str, factory: Callable[[], torch.nn.Module], params: dict, batch_size: int,
          device: torch.device, info: dict, *, loss_fn=None, optimizer=None, batch=None,
          sample_shape=None) -> Workload:
    """The workload of ``factory()``'s model. ``loss_fn``, ``optimizer(parameters)``,
    ``batch(batch_size, device)`` and ``sample_shape`` replace the defaults (a user's own)."""
    p = DEFAULTS | params
    torch.manual_seed(p["seed"])
    with torch.device(device):  # initialised where it trains: no host-side init, no copy
        model = factory()
    model = model.to(device)    # parts a factory placed elsewhere explicitly
    steps = p["warmup_steps"] + p["steps"]
    size, classes = p["image_size"], p["num_classes"]
    shape = tuple(sample_shape or (3, size, size))
    data = {"data": p["data"], "loader": p["loader"], "samples_per_epoch": steps * batch_size}
    if p["data"] == "imagefolder" and p["loader"] != "synthetic":
        images = imagefolder.dataset(p["data_dir"], size, p["train_samples"], p["seed"])
        loader = imagefolder.loader(p["loader"], images, batch_size, steps, device, p["seed"],
                                    p["num_workers"])
        example = random_batch(shape, classes, batch_size)(device)
        data |= {"data_dir": str(p["data_dir"]), "images": len(images),
                 "classes": len(imagefolder.classes(p["data_dir"])),
                 "description": f"{len(images)} images of {p['data_dir']} (ImageFolder: "
                                f"RandomResizedCrop({size}), RandomHorizontalFlip, ImageNet "
                                f"normalisation), {steps} batches through {p['loader']}"}
    elif batch is not None and p["data"] == "synthetic":
        made = [tuple(t.to(device) for t in batch(batch_size, device))
                for _ in range(min(p["distinct_batches"], steps))]
        loader = FixedBatches(made, steps)
        example = made[0]
        data["description"] = (f"the model file's own batch(), {len(made)} distinct batches "
                               f"of inputs {tuple(example[0].shape[1:])} cycled on the device")
    else:
        loader = loaders.SyntheticLoader(shape, classes, batch_size, steps, device, p["seed"],
                                         distinct=p["distinct_batches"])
        example = loader.data[0]
        data["description"] = (f"random {'x'.join(map(str, shape))} inputs, {classes} classes, "
                               f"{len(loader.data)} distinct batches cycled on the device"
                               + (f" (shaped like the images of {p['data_dir']})"
                                  if p["data"] == "imagefolder" else ""))
    opt = optimizer(model.parameters()) if optimizer else optimizer_of(p, model.parameters())
    return Workload(
        name=workload,
        model=model,
        loss_fn=loss_fn or loss_of(p),
        optimizer=opt,
        epochs=1,
        train_loader=loader,
        example_batch=example,
        non_blocking=p["loader"] == "dataloader-tuned",
        data=data,
        model_info=info | {"num_classes": classes,
                           "loss": "own" if loss_fn else p["loss"],
                           "optimizer": "own" if optimizer else p["optimizer"]},
    )


# ----------------------------------------------------------------------------- models by name
@dataclass(frozen=True)
class ByName:
    """A library of models by name (torchvision, timm): ``names()`` lists them,
    ``default_image_size(name)`` reads a model's own input size from the library's config,
    ``create(name, num_classes, **kwargs)`` builds one without pretrained weights. The workload
    modules hand their ``derive``, ``check``, ``trial`` and ``build`` to this."""

    workload: str
    names: Callable[[], tuple]
    default_image_size: Callable[[str], int | None]
    create: Callable[..., torch.nn.Module]
    examples: tuple[str, str]     # two model names, for messages
    size_arg: str                 # the builder argument of a size-bound model (ViT)

    def model(self, name) -> str:
        if name is None:
            known = self.names()
            raise ValueError(f"workload {self.workload!r} needs a model: params: {{model: "
                             f"{self.examples[0]}}} or axes: {{model: [{', '.join(self.examples)}"
                             f"]}}; {len(known)} known, e.g. {', '.join(known[:8])}")
        if str(name).split(".", 1)[0] not in self.names():  # timm's name.pretrained_tag
            raise unknown_name(self.workload, name, self.names())
        return name

    def factory(self, params: dict):
        name, classes, kwargs = params["model"], params["num_classes"], params["model_kwargs"]
        return lambda: self.create(name, classes, **(kwargs or {}))

    def derive(self, params: dict) -> dict:
        name = self.model(params["model"])
        return derive(self.workload, params, lambda: self.default_image_size(name))

    def check(self, params: dict) -> None:
        check(self.workload, params)
        if not isinstance(params["model_kwargs"], dict):
            raise ValueError(f"workload {self.workload!r}: model_kwargs="
                             f"{params['model_kwargs']!r} must be a mapping of the model "
                             f"builder's arguments")

    def trial(self, params: dict) -> None:
        self._forward_check(params["model"], params["image_size"], params["num_classes"],
                            json.dumps(params["model_kwargs"], sort_keys=True))

    @functools.cache  # noqa: B019 - a few instances, module-level, alive as long as the process
    def _forward_check(self, name: str, size: int, classes: int, kwargs: str) -> None:
        kwargs = json.loads(kwargs)
        forward_check(f"workload {self.workload!r}: model {name!r}"
                      + (f" with model_kwargs {kwargs}" if kwargs else ""),
                      self.factory({"model": name, "num_classes": classes,
                                    "model_kwargs": kwargs}),
                      random_batch((3, size, size), classes), ClassificationLoss(),
                      hint=f". Its own input size is {self.default_image_size(name)}: set "
                           f"image_size to it, or give a size-bound model its own size "
                           f"argument in model_kwargs (a ViT's {self.size_arg})")

    def build(self, params: dict, batch_size: int, device, info: dict | None = None):
        return build(self.workload, self.factory(params), params, batch_size, device,
                     {"name": params["model"], "source": self.workload} | (info or {}))
