"""The official PyTorch AMP recipe, as the seed ran it (``sample_0.py`` / ``sample_1.py``).

A stack of ``Linear(4096, 4096)`` + ReLU layers, 50 batches of ``randn(512, 4096)`` inputs and
targets made on the device up front, ``MSELoss``, ``SGD(lr=0.001)``, 3 epochs.
"""

from __future__ import annotations

import torch

from . import Workload, positive_int

LOADERS = ("synthetic",)
DEFAULTS = {
    "in_size": 4096,
    "out_size": 4096,
    "num_layers": 3,
    "num_batches": 50,
    "epochs": 3,
    "lr": 0.001,
    "loader": "synthetic",
}


def check(params: dict) -> None:
    positive_int("amp_recipe", params, "in_size", "out_size", "num_layers", "num_batches", "epochs")


def make_model(in_size: int, out_size: int, num_layers: int) -> torch.nn.Sequential:
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*layers)


class _Batches:
    """The recipe's two lists of tensors, iterated together once per epoch."""

    def __init__(self, data, targets):
        self.data, self.targets = data, targets

    def __len__(self):
        return len(self.data)

    def __iter__(self):
        return iter(zip(self.data, self.targets))


def build(params: dict, batch_size: int, device: torch.device) -> Workload:
    torch.manual_seed(params["seed"])
    n, i, o = params["num_batches"], params["in_size"], params["out_size"]
    data = [torch.randn(batch_size, i, device=device) for _ in range(n)]
    targets = [torch.randn(batch_size, o, device=device) for _ in range(n)]
    with torch.device(device):  # initialised where it trains: no host copy of the weights
        model = make_model(i, o, params["num_layers"])
    return Workload(
        name="amp_recipe",
        model=model,
        loss_fn=torch.nn.MSELoss(),
        optimizer=torch.optim.SGD(model.parameters(), lr=params["lr"]),
        epochs=params["epochs"],
        train_loader=_Batches(data, targets),
        example_batch=(data[0], targets[0]),
        data={"data": "synthetic", "loader": "synthetic", "samples_per_epoch": n * batch_size,
              "description": f"{n} batches of randn({batch_size}, {i}) created on the device"},
    )
