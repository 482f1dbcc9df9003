"""Any timm model, by name, trained from scratch (``pretrained=False``). timm is an optional
extra: ``pip install -e '.[timm]'`` (or ``pip install timm``).

    workload: timm
    params: {model: resnet50d}                  # one model, or
    axes: {model: [resnet50d, nfnet_l0]}        # several, one cell each

``timm.create_model(model, pretrained=False, num_classes=..., **model_kwargs)``; the names are
``timm.list_models()`` (``name.tag`` picks a pretrained tag's config). The input size is the
model's own (``pretrained_cfg["input_size"]``) unless ``image_size`` says otherwise.
Everything else (data, loss, optimiser, steps) is the shared classification builder's
(``classify``).
"""

from __future__ import annotations

import functools

from . import classify, optional_package

LOADERS = classify.LOADERS
DEFAULTS = classify.DEFAULTS | {
    "model": None,        # required: a timm model's name
    "model_kwargs": {},   # passed to timm.create_model, e.g. {drop_path_rate: 0.1}
}
PRELOAD = ("timm",)   # what a job imports to build its model (tcbench.launch.forkserver)
INSTALL = "pip install -e '.[timm]' in a checkout of tcbench, or pip install timm"


def timm():
    """The timm package, or the error that says how to install it."""
    return optional_package("timm", "timm", INSTALL)


@functools.cache
def names() -> tuple[str, ...]:
    return tuple(timm().list_models())


@functools.cache
def default_image_size(name: str) -> int | None:
    cfg = timm().get_pretrained_cfg(name)
    size = getattr(cfg, "input_size", None) if cfg is not None else None
    return int(size[-1]) if size else None


def create(name: str, num_classes: int, **kwargs):
    return timm().create_model(name, pretrained=False, num_classes=num_classes, **kwargs)


LIBRARY = classify.ByName("timm", names, default_image_size, create,
                          examples=("resnet50d", "nfnet_l0"), size_arg="img_size")
check, trial = LIBRARY.check, LIBRARY.trial


def derive(params: dict) -> dict:
    timm()  # first, and every time: the names are cached, a missing package must still say so
    return LIBRARY.derive(params)


def build(params: dict, batch_size, device):
    return LIBRARY.build(params, batch_size, device, {"timm_version": timm().__version__})
