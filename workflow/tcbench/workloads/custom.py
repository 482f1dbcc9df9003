"""A model of the user's own, in a Python file (``file: path/to/my_model.py``) or an importable
module (``module: mypackage.models``). The contract (docs/own-model.md), all plain PyTorch:

    def model(num_classes: int) -> torch.nn.Module       # required (or build_model; or the
                                                         # function the `model` parameter names)
    input_shape = (3, 224, 224)                          # optional: one sample's shape
    def batch(batch_size, device) -> (inputs, targets)   # optional: your own synthetic batch
    def loss() -> callable(output, target) -> loss       # optional: default cross-entropy
    def optimizer(parameters) -> torch.optim.Optimizer   # optional: default SGD, momentum 0.9

Everything else (synthetic batches or an image folder, steps, the loader axis) is the shared
classification builder's (``classify``). The file is imported, its model built and one
training step run on the meta device when the workflow starts, so a missing file, a missing
function or a model that fails on its input stops the study before any job.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

import torch

from .. import vocabulary as V
from . import classify

LOADERS = classify.LOADERS
DEFAULTS = classify.DEFAULTS | {
    "file": None,     # a Python file defining model(num_classes), or
    "module": None,   # an importable module defining it
    "model": None,    # the function that builds the model; None: model, else build_model
}
FACTORIES = V.CUSTOM_FACTORIES
OPTIONAL = ("input_shape", "batch", "loss", "optimizer")
DOC = "docs/own-model.md"
_LOADED: dict[tuple, object] = {}   # imported user modules, by path and modification time
_CHECKED: set = set()               # what passed the one-step check, by everything it depends on


def source(params: dict) -> str:
    return f"file {params['file']!r}" if params["file"] else f"module {params['module']!r}"


def load(params: dict):
    """The user's module, imported once per process (again when the file changes). A file's
    folder goes on ``sys.path`` so that it can import its neighbours, as ``python file.py``
    would; a module is looked up from the working directory too, as ``python -m`` does."""
    file, mod = params["file"], params["module"]
    if bool(file) == bool(mod):
        raise ValueError("workload 'custom' needs exactly one of file (a Python file) and module "
                         f"(an importable module), got file={file!r}, module={mod!r}; see {DOC}")
    if file:
        path = Path(file)
        if not path.is_file():
            raise ValueError(f"workload 'custom': file={file!r} does not exist (looked for "
                             f"{path.resolve()}; a relative path is relative to the directory "
                             f"Snakemake runs in)")
        key = (str(path.resolve()), path.stat().st_mtime_ns)
    else:
        key = (mod, None)
    if key in _LOADED:
        return _LOADED[key]
    try:
        if file:
            folder = str(path.resolve().parent)
            if folder not in sys.path:
                sys.path.insert(0, folder)
            name = f"tcbench_user_{path.stem}_{hashlib.sha256(key[0].encode()).hexdigest()[:8]}"
            spec = importlib.util.spec_from_file_location(name, path)
            user = importlib.util.module_from_spec(spec)
            sys.modules[name] = user  # dataclasses, pickling and torch.compile look it up here
            spec.loader.exec_module(user)
        else:
            if os.getcwd() not in sys.path:
                sys.path.append(os.getcwd())
            user = importlib.import_module(mod)
    except Exception as exc:  # noqa: BLE001 - the user's code: any error, named, stops the study
        where = ""
        tb = exc.__traceback__
        while tb is not None:  # the innermost frame in the user's file
            if file and Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
                where = f" (line {tb.tb_lineno})"
            tb = tb.tb_next
        raise ValueError(f"workload 'custom': importing {source(params)} failed{where}: "
                         f"{type(exc).__name__}: {exc}") from None
    _LOADED[key] = user
    return user


def factory_name(user, params: dict) -> str:
    if params["model"] is not None:
        name = params["model"]
        if not callable(getattr(user, str(name), None)):
            defined = [k for k, v in vars(user).items() if callable(v) and not k.startswith("_")
                       and getattr(v, "__module__", None) == user.__name__]
            raise ValueError(f"workload 'custom': {source(params)} has no function "
                             f"{name!r}{classify.suggest(str(name), defined)}; it defines "
                             f"{', '.join(defined) or 'no functions'}")
        return name
    for name in FACTORIES:
        if callable(getattr(user, name, None)):
            return name
    raise ValueError(f"workload 'custom': {source(params)} defines neither model() nor "
                     f"build_model(): a model file needs def model(num_classes: int) -> "
                     f"torch.nn.Module (see {DOC}), or name its function in params: "
                     f"{{model: my_function}}")


def input_shape(user, params: dict) -> tuple[int, ...] | None:
    shape = getattr(user, "input_shape", None)
    if shape is None:
        return None
    if not isinstance(shape, (tuple, list)) or not shape or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape):
        raise ValueError(f"workload 'custom': {source(params)}: input_shape={shape!r} must be a "
                         f"tuple of positive integers, one sample's shape, e.g. (3, 224, 224)")
    return tuple(shape)


def derive(params: dict) -> dict:
    user = load(params)
    shape = input_shape(user, params)
    square = shape is not None and len(shape) >= 2 and shape[-1] == shape[-2]
    out = {"model": factory_name(user, params)}
    return out | classify.derive("custom", params, lambda: shape[-1] if square else None)


def hooks(user, params: dict) -> dict:
    """The optional parts the file defines, checked to be callables."""
    found = {}
    for name in ("batch", "loss", "optimizer"):
        value = getattr(user, name, None)
        if value is not None and not callable(value):
            raise ValueError(f"workload 'custom': {source(params)}: {name} must be a function "
                             f"(see {DOC}), got {type(value).__name__}")
        found[name] = value
    return found


def sample_shape(user, params: dict) -> tuple[int, ...]:
    """One sample's shape: an image folder's, or the file's own, or 3 x image_size^2."""
    size = params["image_size"]
    shape = input_shape(user, params)
    if params["data"] == "imagefolder" or shape is None:
        return (3, size, size)
    return shape


def pair(made, what: str) -> tuple:
    """A user's batch() result, checked to be (inputs, targets)."""
    if not isinstance(made, (tuple, list)) or len(made) != 2 or \
            not all(torch.is_tensor(t) for t in made):
        raise ValueError(f"{what}: batch() must return (inputs, targets), two tensors; got "
                         f"{type(made).__name__}"
                         + (f" of {len(made)}" if isinstance(made, (tuple, list)) else ""))
    return tuple(made)


def factory(user, params: dict):
    fn = getattr(user, params["model"])

    def make():
        built = classify.call_factory(fn, params["num_classes"])
        if not isinstance(built, torch.nn.Module):
            raise TypeError(f"{params['model']}() returned {type(built).__name__}, not a "
                            f"torch.nn.Module")
        return built
    return make


def check(params: dict) -> None:
    classify.check("custom", params)
    user = load(params)
    shape = input_shape(user, params)
    if params["data"] == "imagefolder" and shape is not None and shape[0] != 3:
        raise ValueError(f"workload 'custom': {source(params)} declares input_shape={shape}, "
                         f"but an image folder gives 3-channel (RGB) images")


def trial(params: dict) -> None:
    """One training step on the meta device with the file's own batch and loss, where it has
    them (each failure names the hook that failed)."""
    user = load(params)
    shape = input_shape(user, params)
    key = (params["file"] and str(Path(params["file"]).resolve()), params["module"],
           params["model"], sample_shape(user, params), params["num_classes"],
           params["data"], params["loss"], params["label_smoothing"], id(user))
    if key in _CHECKED:
        return
    h = hooks(user, params)
    what = f"workload 'custom': {source(params)}, model {params['model']}()"
    if h["batch"] is not None and params["data"] == "synthetic":
        def make_batch(device):
            try:
                made = h["batch"](2, device)
            except Exception as exc:  # noqa: BLE001 - the user's code, named
                raise ValueError(f"{what}: batch(2, {device}) fails: {type(exc).__name__}: "
                                 f"{exc}") from None
            return pair(made, what)
    else:
        make_batch = classify.random_batch(sample_shape(user, params), params["num_classes"])
    loss_fn = classify.loss_of(params)
    if h["loss"] is not None:
        try:
            loss_fn = h["loss"]()
        except Exception as exc:  # noqa: BLE001
            raise ValueError(f"{what}: loss() fails: {type(exc).__name__}: {exc}") from None
    if h["batch"] is not None and params["data"] == "synthetic":
        hint = ""  # the file's own batch: its error says it all
    elif shape is not None and params["data"] == "synthetic":
        hint = f". The file declares input_shape = {shape}"
    else:
        hint = (f". Declare the model's input in the file, input_shape = (C, H, W), or set "
                f"image_size (see {DOC})")
    classify.forward_check(what, factory(user, params), make_batch, loss_fn, hint=hint)
    _CHECKED.add(key)



def build(params: dict, batch_size, device):
    user = load(params)
    h = hooks(user, params)
    info = {"name": params["model"], "source": "custom"}
    if params["file"]:
        path = Path(params["file"])
        info |= {"file": str(path), "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    else:
        info |= {"module": params["module"], "module_file": getattr(user, "__file__", None)}
    return classify.build("custom", factory(user, params), params, batch_size, device, info,
                          loss_fn=h["loss"]() if h["loss"] else None, optimizer=h["optimizer"],
                          batch=h["batch"] and (lambda n, device: pair(h["batch"](n, device),
                                                                       "batch()")),
                          sample_shape=sample_shape(user, params))
