"""Data: MNIST-format files, the seed's DataLoader and the faster ways to feed a GPU.

Loader kinds (the ``loader`` axis):

``dataloader``        the seed's ``DataLoader(shuffle=True, num_workers=2)``, nothing else
``dataloader-tuned``  pinned memory, persistent workers, deeper prefetch, a worker per core
``gpu-resident``      the whole dataset passed through the same transforms once (as tensor
                      math over all images at once: the same values), kept on the device,
                      and indexed by a fresh permutation every epoch
``synthetic``         random tensors of the dataset's shape already on the device: no input
                      pipeline at all, the compute-only bound
"""

from __future__ import annotations

import gzip
import importlib.util
import math
import os
import struct
from pathlib import Path

import numpy as np
import torch

from ..host import placement
# IDX files are written without torch (the data rule's module) and read back here
from .idxfiles import write_idx, write_mnist_format, write_random_mnist  # noqa: F401
from ..vocabulary import LOADERS  # the input pipelines, named once in the vocabulary

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
MNIST_FILES = {
    "train-images-idx3-ubyte": (60000, (28, 28)),
    "train-labels-idx1-ubyte": (60000, ()),
    "t10k-images-idx3-ubyte": (10000, (28, 28)),
    "t10k-labels-idx1-ubyte": (10000, ()),
}


class DataMissingError(FileNotFoundError):
    """The data a job needs is not where the configuration says it is."""


# ----------------------------------------------------------------------------------- IDX files
def read_idx(path: Path) -> torch.Tensor:
    """An IDX file (MNIST's format) as a uint8 tensor: what torchvision's MNIST class reads."""
    raw = Path(path).read_bytes()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    shape = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    return torch.from_numpy(data.copy()).view(*shape)


def _mnist_missing(root: Path, why) -> DataMissingError:
    raw = Path(root).resolve() / "MNIST" / "raw"
    return DataMissingError(
        f"MNIST not found under {raw} ({why}). Put the four uncompressed IDX files there "
        f"({', '.join(MNIST_FILES)}), or set the workload parameter download: true on a "
        f"machine with internet access, or use data: mnist-format-random to measure the same "
        f"input pipeline on random MNIST-format files.")


def mnist_tensors(root: Path, train: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST's images (N x 28 x 28, uint8) and labels (int64), read straight from the IDX files
    where ``torchvision.datasets.MNIST(root)`` finds them, without torchvision."""
    prefix = "train" if train else "t10k"
    raw = Path(root) / "MNIST" / "raw"
    try:
        images = read_idx(raw / f"{prefix}-images-idx3-ubyte")
        labels = read_idx(raw / f"{prefix}-labels-idx1-ubyte").long()
    except FileNotFoundError as exc:
        raise _mnist_missing(root, f"{exc.strerror}: {exc.filename}") from exc
    return images, labels


def mnist_samples(root: Path) -> int:
    """How many training images the MNIST files under ``root`` hold (the IDX header only)."""
    path = Path(root) / "MNIST" / "raw" / "train-images-idx3-ubyte"
    try:
        with open(path, "rb") as f:
            return struct.unpack(">I", f.read(8)[4:])[0]
    except FileNotFoundError as exc:
        raise _mnist_missing(root, f"{exc.strerror}: {exc.filename}") from exc


def normalise_mnist(images: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``ToTensor()`` then ``Normalize((0.1307,), (0.3081,))`` over every image at once, on
    ``device``: the same float32 operations in the same order as torchvision's per-image path
    (tests/test_data.py holds them equal), without a Python call per image.

    The constants are tensors on the device, as in ``Normalize``: dividing by a host scalar
    would let CUDA multiply by its reciprocal instead, which rounds differently."""
    def const(v):
        return torch.tensor(v, dtype=torch.float32, device=device).view(1, 1, 1)

    x = images.to(device).unsqueeze(1).to(torch.float32)
    return x.div_(const(255.0)).sub_(const(MNIST_MEAN)).div_(const(MNIST_STD))


def mnist_datasets(root: Path, download: bool = False):
    """The seed's MNIST: ``ToTensor()`` then ``Normalize((0.1307,), (0.3081,))``."""
    from torchvision import datasets, transforms

    transform = transforms.Compose([transforms.ToTensor(),
                                    transforms.Normalize((MNIST_MEAN,), (MNIST_STD,))])
    try:
        train = datasets.MNIST(root, train=True, download=download, transform=transform)
        test = datasets.MNIST(root, train=False, download=download, transform=transform)
    except RuntimeError as exc:
        raise _mnist_missing(root, exc) from exc
    return train, test


# ----------------------------------------------------------------------------------- digits
DIGITS_SPLIT_SEED = 0   # one fixed split: every repeat and precision tests on the same images


def digits_file() -> Path:
    """scikit-learn's bundled digits (``load_digits`` reads this file), found without importing
    scikit-learn, which would import scipy too: a second or more of a job's start-up."""
    spec = importlib.util.find_spec("sklearn")
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" \
        / "digits.csv.gz" if spec and spec.submodule_search_locations else None
    if path is None or not path.is_file():
        raise DataMissingError(f"scikit-learn's digits data not found ({path or 'no sklearn'}); "
                               f"pip install scikit-learn")
    return path


def stratified_split(labels: np.ndarray, test_fraction: float, seed: int):
    """(train, test) indices: ``ceil(test_fraction * n)`` test samples, spread over the classes
    in proportion to their sizes (largest remainders), each class's picked at random."""
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(labels, return_counts=True)
    n_test = math.ceil(test_fraction * len(labels))
    exact = counts * n_test / len(labels)
    take = np.floor(exact).astype(int)
    take[np.argsort(-(exact - take), kind="stable")[:n_test - take.sum()]] += 1
    test = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:k]
                           for c, k in zip(classes, take)])
    test.sort()
    return np.setdiff1d(np.arange(len(labels)), test), test


def digits_tensors(test_fraction: float = 0.2):
    """scikit-learn's bundled handwritten digits (1,797 real 8x8 images), upsampled to 28x28 and
    normalised like MNIST so the seed's CNN runs on them unchanged; a fixed stratified split.
    Returns ((train_x, train_y), (test_x, test_y)), on the CPU."""
    import torch.nn.functional as F

    with gzip.open(digits_file(), "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    images = torch.from_numpy(table[:, :-1]).view(-1, 1, 8, 8) / 16.0
    images = F.interpolate(images, size=(28, 28), mode="bilinear", align_corners=False)
    images = (images - MNIST_MEAN) / MNIST_STD
    labels = torch.from_numpy(table[:, -1].astype(np.int64))
    train, test = stratified_split(labels.numpy(), test_fraction, DIGITS_SPLIT_SEED)
    return (images[train], labels[train]), (images[test], labels[test])


def digits_datasets(test_fraction: float = 0.2):
    """``digits_tensors`` as two TensorDatasets (for the DataLoader kinds)."""
    train, test = digits_tensors(test_fraction)
    return torch.utils.data.TensorDataset(*train), torch.utils.data.TensorDataset(*test)


# ----------------------------------------------------------------------------------- loaders
class GpuResidentLoader:
    """Whole dataset on the device; each epoch walks a fresh permutation in batch-sized slices.
    ``tensors``: (inputs, targets), already transformed (see ``dataset_tensors``)."""

    def __init__(self, tensors: tuple[torch.Tensor, torch.Tensor], batch_size: int,
                 device: torch.device, seed: int, drop_last: bool = False):
        xs, ys = tensors
        self.x, self.y = xs.to(device), ys.to(device)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def __len__(self):
        n = len(self.y)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        perm = torch.randperm(len(self.y), device=self.x.device, generator=self.generator)
        for i in range(len(self)):
            idx = perm[i * self.batch_size:(i + 1) * self.batch_size]
            yield self.x[idx], self.y[idx]


class SyntheticLoader:
    """``batches`` per epoch of fixed random tensors, made on the device by a seeded generator
    of the device (no host tensors, no copies). A few distinct batches are cycled so repeated
    steps do not all hit the same cache lines."""

    def __init__(self, sample_shape, num_classes: int, batch_size: int, batches: int,
                 device: torch.device, seed: int, distinct: int = 4, last_batch: int | None = None,
                 target_shape=None, target_dtype=torch.long):
        g = torch.Generator(device=device).manual_seed(seed)
        self.batches = batches
        self.data = []
        for _ in range(min(distinct, batches)):
            x = torch.randn((batch_size, *sample_shape), generator=g, device=device)
            if target_shape is None:
                y = torch.randint(0, num_classes, (batch_size,), generator=g, dtype=target_dtype,
                                  device=device)
            else:
                y = torch.randn((batch_size, *target_shape), generator=g, device=device)
            self.data.append((x, y))
        self.last_batch = last_batch

    def __len__(self):
        return self.batches

    def __iter__(self):
        for i in range(self.batches):
            x, y = self.data[i % len(self.data)]
            if self.last_batch and i == self.batches - 1:
                x, y = x[:self.last_batch], y[:self.last_batch]
            yield x, y


def materialise(dataset) -> tuple[torch.Tensor, torch.Tensor]:
    """Every sample passed through the dataset's own transforms, stacked (done once, untimed)."""
    loader = torch.utils.data.DataLoader(dataset, batch_size=4096, shuffle=False, num_workers=0)
    xs, ys = zip(*loader)
    return torch.cat(xs), torch.cat(ys)


def dataset_tensors(dataset) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) of a whole dataset: a TensorDataset's own tensors (or a Subset of
    one), else every sample through the dataset's transforms."""
    if isinstance(dataset, torch.utils.data.TensorDataset):
        return dataset.tensors[0], dataset.tensors[1]
    if isinstance(dataset, torch.utils.data.Subset) and \
            isinstance(dataset.dataset, torch.utils.data.TensorDataset):
        idx = torch.as_tensor(list(dataset.indices))
        return tuple(t[idx] for t in dataset.dataset.tensors[:2])
    return materialise(dataset)


def make_loader(kind: str, dataset, batch_size: int, device: torch.device, seed: int,
                num_workers: int = 2):
    """A loader of the given kind over ``dataset``; every kind yields (data, target) batches."""
    if kind == "dataloader":
        # The seed's loader, exactly: no pinning, no persistent workers, default prefetch.
        g = torch.Generator().manual_seed(seed)
        return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True,
                                           num_workers=num_workers, generator=g,
                                           worker_init_fn=placement.to_helpers)
    if kind == "dataloader-tuned":
        g = torch.Generator().manual_seed(seed)
        workers = max(1, min(8, (os.cpu_count() or 2) - 1))
        return torch.utils.data.DataLoader(
            dataset, batch_size=batch_size, shuffle=True, num_workers=workers,
            pin_memory=device.type == "cuda", persistent_workers=True, prefetch_factor=4,
            generator=g, worker_init_fn=placement.to_helpers)
    if kind == "gpu-resident":
        return GpuResidentLoader(dataset_tensors(dataset), batch_size, device, seed)
    if kind == "synthetic":
        x0, _ = dataset[0]
        n = len(dataset)
        rem = n % batch_size
        return SyntheticLoader(tuple(x0.shape), 10, batch_size, -(-n // batch_size), device,
                               seed, last_batch=rem or None)
    raise ValueError(f"unknown loader {kind!r}; known: {', '.join(LOADERS)}")
