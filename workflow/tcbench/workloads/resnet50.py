"""torchvision ResNet-50 on synthetic ImageNet-shaped batches: the standard CNN Tensor Core load.
The ``torchvision`` workload with ``model: resnet50`` builds the same; this name and its
parameters stay for the committed study's records.

No input pipeline (batches live on the device), so the numbers are the GPU's. One epoch of
``warmup_steps + steps`` steps; the first ``warmup_steps`` carry cuDNN autotuning and are
reported on their own.
"""

from __future__ import annotations

import torch

from . import Workload, classify, positive_int, torchvision_models

LOADERS = ("synthetic",)
DEFAULTS = {
    "steps": 50,
    "warmup_steps": 10,
    "image_size": 224,
    "num_classes": 1000,
    "lr": 0.1,
    "momentum": 0.9,
    "weight_decay": 1e-4,
    "loader": "synthetic",
    "distinct_batches": 4,
    "cudnn_benchmark": "on",  # fixed shapes: autotune once, as any ResNet training script does
}


def check(params: dict) -> None:
    positive_int("resnet50", params, "steps", "image_size", "num_classes", "distinct_batches")


def build(params: dict, batch_size: int, device: torch.device) -> Workload:
    # the torchvision workload's builder, with this workload's own (older) parameter set
    factory = torchvision_models.LIBRARY.factory(params | {"model": "resnet50", "model_kwargs": {}})
    return classify.build("resnet50", factory, params, batch_size, device,
                          {"name": "resnet50", "source": "torchvision"})
