"""Any torchvision classification model, by name, trained from scratch (``weights=None``).

    workload: torchvision
    params: {model: convnext_tiny}              # one model, or
    axes: {model: [resnet18, vit_b_16]}         # several, one cell each

``torchvision.models.get_model(model, weights=None, num_classes=..., **model_kwargs)``; the
names are ``torchvision.models.list_models(module=torchvision.models)``. The input size is the
model's own (the crop size of its smallest published weights: 224 for most, 299 for
Inception v3, 384 for EfficientNet-V2-S) unless ``image_size`` says otherwise. Everything else
(data, loss, optimiser, steps) is the shared classification builder's (``classify``).
"""

from __future__ import annotations

import functools

from . import classify

LOADERS = classify.LOADERS
DEFAULTS = classify.DEFAULTS | {
    "model": None,        # required: a torchvision classification model's name
    "model_kwargs": {},   # passed to the model's builder, e.g. {image_size: 64} for a ViT
}


@functools.cache
def names() -> tuple[str, ...]:
    import torchvision

    return tuple(torchvision.models.list_models(module=torchvision.models))


@functools.cache
def default_image_size(name: str) -> int | None:
    """The crop size of the model's smallest published weights (vit_h_14 is published at 518
    and at 224; built without weights it takes 224)."""
    from torchvision.models import get_model_weights

    crops = [min(w.transforms().crop_size) for w in get_model_weights(name)]
    return min(crops) if crops else None


def create(name: str, num_classes: int, **kwargs):
    from torchvision.models import get_model

    return get_model(name, weights=None, num_classes=num_classes, **kwargs)


LIBRARY = classify.ByName("torchvision", names, default_image_size, create,
                          examples=("resnet18", "vit_b_16"), size_arg="image_size")
derive, check, trial, build = LIBRARY.derive, LIBRARY.check, LIBRARY.trial, LIBRARY.build
