"""torchvision ResNet-50 on synthetic ImageNet-shaped batches: the standard CNN Tensor Core load.

No input pipeline (batches live on the device), so the numbers are the GPU's. One epoch of
``warmup_steps + steps`` steps; the first ``warmup_steps`` carry cuDNN autotuning and are
reported on their own.
"""

from __future__ import annotations

import torch

from .. import data as D
from . import Workload, positive_int

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
    from torchvision.models import resnet50

    torch.manual_seed(params["seed"])
    size = params["image_size"]
    with torch.device(device):  # initialised where it trains: no host copy of the weights
        model = resnet50(weights=None, num_classes=params["num_classes"])
    steps = params["warmup_steps"] + params["steps"]
    loader = D.SyntheticLoader((3, size, size), params["num_classes"], batch_size, steps, device,
                               params["seed"], distinct=params["distinct_batches"])
    return Workload(
        name="resnet50",
        model=model,
        loss_fn=torch.nn.CrossEntropyLoss(),
        optimizer=torch.optim.SGD(model.parameters(), lr=params["lr"],
                                  momentum=params["momentum"],
                                  weight_decay=params["weight_decay"]),
        epochs=1,
        train_loader=loader,
        example_batch=loader.data[0],
        data={"data": "synthetic", "loader": "synthetic", "samples_per_epoch": steps * batch_size,
              "description": f"random 3x{size}x{size} images, {params['num_classes']} classes, "
                             f"{len(loader.data)} distinct batches cycled on the device"},
    )
