"""The seed's MNIST CNN (``mnist_0_512.py`` / ``mnist_1_512.py`` / ``mnist_1_1024.py``).

Net, loss, ``Adadelta(lr=0.001)``, ``StepLR(step_size=1, gamma=0.8)`` and 20 epochs as the seed
had them; the data comes from ``torchvision.datasets.MNIST`` (real MNIST, or random images
written as MNIST IDX files) through the loader the ``loader`` axis names, or is synthetic.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F

from ..data import loaders
from . import Workload, positive_int

DATA_KINDS = ("mnist", "mnist-format-random", "synthetic")
LOADERS = loaders.LOADERS
DEFAULTS = {
    "epochs": 20,
    "lr": 0.001,
    "gamma": 0.8,
    "data": "mnist",
    "data_dir": "data",
    "download": False,
    "loader": "dataloader",
    "num_workers": 2,
    "train_samples": None,   # None: the whole training set; else the first N (smoke runs)
}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3, 1)
        self.conv2 = torch.nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = torch.nn.Dropout(0.4)
        self.dropout2 = torch.nn.Dropout(0.25)
        self.fc1 = torch.nn.Linear(9216, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def check(params: dict) -> None:
    positive_int("mnist_cnn", params, "epochs", "num_workers")
    if params["data"] not in DATA_KINDS:
        raise ValueError(f"workload 'mnist_cnn': data={params['data']!r}; choose one of {DATA_KINDS}")
    if params["data"] == "synthetic" and params["loader"] != "synthetic":
        raise ValueError("workload 'mnist_cnn': data='synthetic' has no files to load; "
                         "use loader: synthetic with it")
    if params["train_samples"] is not None:
        positive_int("mnist_cnn", params, "train_samples")


def evaluate(model, dataset, device, batch_size=1000) -> dict:
    """Held-out loss and accuracy, in fp32, outside any timing."""
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss_sum += F.nll_loss(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
    model.train()
    return {"test_loss": loss_sum / len(dataset), "test_accuracy": correct / len(dataset),
            "test_samples": len(dataset)}


def training_data(params: dict, batch_size: int, device: torch.device):
    """(loader, samples per epoch, held-out test set or None) for the ``data`` and ``loader``
    parameters. Only the seed's DataLoader kinds go through torchvision's per-image transforms
    (that pipeline is what they measure); the others read the IDX files once."""
    kind, loader_kind, cap = params["data"], params["loader"], params["train_samples"]
    if kind == "synthetic":
        n = cap or 60000
        return loaders.SyntheticLoader((1, 28, 28), 10, batch_size, -(-n // batch_size), device,
                                       params["seed"], last_batch=(n % batch_size) or None), n, None
    root = Path(params["data_dir"])
    if loader_kind in ("dataloader", "dataloader-tuned") or params["download"]:
        train, _ = loaders.mnist_datasets(root, download=params["download"])
    if loader_kind in ("dataloader", "dataloader-tuned"):
        if cap:
            train = torch.utils.data.Subset(train, range(min(cap, len(train))))
        loader = loaders.make_loader(loader_kind, train, batch_size, device, params["seed"],
                                     params["num_workers"])
        n = len(train)
    elif loader_kind == "gpu-resident":
        images, labels = loaders.mnist_tensors(root, train=True)
        images, labels = images[:cap], labels[:cap]   # [:None] is everything
        loader = loaders.GpuResidentLoader((loaders.normalise_mnist(images, device), labels),
                                           batch_size, device, params["seed"])
        n = len(labels)
    else:  # synthetic batches of MNIST's shape, as many as the files hold
        n = min(loaders.mnist_samples(root), cap or math.inf)
        loader = loaders.SyntheticLoader((1, 28, 28), 10, batch_size, -(-n // batch_size), device,
                                         params["seed"], last_batch=(n % batch_size) or None)
    test = None
    if kind == "mnist":  # accuracy on random labels means nothing: only real MNIST is evaluated
        images, labels = loaders.mnist_tensors(root, train=False)
        test = torch.utils.data.TensorDataset(loaders.normalise_mnist(images, torch.device("cpu")),
                                              labels)
    return loader, n, test


def build(params: dict, batch_size: int, device: torch.device) -> Workload:
    torch.manual_seed(params["seed"])
    kind = params["data"]
    loader, samples, test = training_data(params, batch_size, device)
    with torch.device(device):  # initialised where it trains: no host copy of the weights
        model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=params["lr"])
    x0 = torch.randn(batch_size, 1, 28, 28, device=device)
    y0 = torch.randint(0, 10, (batch_size,), device=device)
    evaluator = (lambda: evaluate(model, test, device)) if test is not None else None
    return Workload(
        name="mnist_cnn",
        model=model,
        # The seed applies CrossEntropyLoss to log_softmax outputs (a second softmax); kept as is.
        loss_fn=torch.nn.CrossEntropyLoss(),
        optimizer=optimizer,
        scheduler=torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=params["gamma"]),
        epochs=params["epochs"],
        train_loader=loader,
        example_batch=(x0, y0),
        non_blocking=params["loader"] == "dataloader-tuned",
        evaluate=evaluator,
        data={"data": kind, "loader": params["loader"], "samples_per_epoch": samples,
              "data_dir": None if kind == "synthetic" else str(Path(params["data_dir"])),
              "description": {"mnist": "torchvision MNIST, training set",
                              "mnist-format-random": "random uint8 images and labels written as "
                              "MNIST IDX files, read through torchvision MNIST (accuracy "
                              "meaningless, not reported)",
                              "synthetic": "random MNIST-shaped tensors on the device, no loader"
                              }[kind]},
    )
