"""The seed's CNN trained to convergence on real handwritten digits shipped with scikit-learn.

1,797 8x8 scans, upsampled to 28x28 and normalised like MNIST; a fixed stratified 80/20 split
(the same for every seed, so repeats and precisions test on the same images) gives a held-out
set, so accuracy parity between precisions is measured on real data, offline, on any
machine. Optimiser settings are those of pytorch/examples' MNIST (Adadelta lr=1.0, gamma 0.7),
which converge; the seed's lr=0.001 barely moves the weights. ``train_samples`` trains on the
first N images of the training split only (the test set stays whole): a smoke run's schedule.
"""

from __future__ import annotations

import torch

from ..data import loaders
from . import Workload, positive_int
from .mnist_cnn import Net, evaluate

LOADERS = ("dataloader", "dataloader-tuned", "gpu-resident")
DEFAULTS = {
    "epochs": 15,
    "lr": 1.0,
    "gamma": 0.7,
    "loader": "gpu-resident",
    "num_workers": 2,
    "train_samples": None,   # None: the whole training split; else its first N (smoke runs)
}


def check(params: dict) -> None:
    positive_int("digits", params, "epochs", "num_workers")
    if params["train_samples"] is not None:
        positive_int("digits", params, "train_samples")


def build(params: dict, batch_size: int, device: torch.device) -> Workload:
    torch.manual_seed(params["seed"])
    train, test = loaders.digits_tensors()
    if params["train_samples"] is not None:  # the split's order mixes the classes
        train = tuple(t[:params["train_samples"]] for t in train)
    if params["loader"] == "gpu-resident":
        loader = loaders.GpuResidentLoader(train, batch_size, device, params["seed"])
    else:
        loader = loaders.make_loader(params["loader"], torch.utils.data.TensorDataset(*train),
                                     batch_size, device, params["seed"], params["num_workers"])
    with torch.device(device):  # initialised where it trains: no host copy of the weights
        model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=params["lr"])
    x0 = train[0][0]
    test_set = torch.utils.data.TensorDataset(*test)
    return Workload(
        name="digits",
        model=model,
        loss_fn=torch.nn.NLLLoss(),
        optimizer=optimizer,
        scheduler=torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=params["gamma"]),
        epochs=params["epochs"],
        train_loader=loader,
        example_batch=(x0.expand(batch_size, -1, -1, -1).contiguous().to(device),
                       torch.zeros(batch_size, dtype=torch.long, device=device)),
        non_blocking=params["loader"] == "dataloader-tuned",
        evaluate=lambda: evaluate(model, test_set, device),
        data={"data": "sklearn-digits", "loader": params["loader"],
              "samples_per_epoch": len(train[1]),
              "description": "scikit-learn's bundled digits, 8x8 upsampled to 28x28, fixed "
                             "stratified 80/20 split, test accuracy on the held-out 20%"},
    )
