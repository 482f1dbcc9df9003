"""my_model.py: a model of my own for tcbench (docs/own-model.md), a small CNN for 32x32
colour images. Plain PyTorch; tcbench imports this file and calls what it defines."""
import torch
from torch import nn

input_shape = (3, 32, 32)  # one sample: channels, height, width


def model(num_classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(64, num_classes),
    )


def wide(num_classes: int) -> nn.Module:
    """A second model in the same file: axes: {model: [model, wide]} runs both."""
    return nn.Sequential(
        nn.Conv2d(3, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(128, num_classes),
    )


def optimizer(parameters):
    return torch.optim.AdamW(parameters, lr=1e-3)
