"""A folder of the user's own images, in ``torchvision.datasets.ImageFolder``'s layout
(``DATA_DIR/<class>/<image>``, any depth below the class folder), with the usual ImageNet
training transforms: ``RandomResizedCrop``, ``RandomHorizontalFlip``, ``ToTensor``, ``Normalize``
with the ImageNet statistics.

Fed through the loader kinds the seed's MNIST has (``tcbench.data.loaders``): the seed's plain
``DataLoader``, the tuned one, or ``gpu-resident`` (every image decoded and transformed once,
before the timed steps, and kept on the device). A job trains a fixed number of steps, whatever
the folder's size: the folder is walked again (reshuffled) as often as the steps need.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from . import loaders

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_SCANNED: dict[tuple, list[str]] = {}


def _extensions() -> tuple[str, ...]:
    from torchvision.datasets.folder import IMG_EXTENSIONS

    return IMG_EXTENSIONS


def _has_image(folder: Path, extensions: tuple[str, ...]) -> bool:
    for _, _, files in os.walk(folder, followlinks=True):
        if any(f.lower().endswith(extensions) for f in files):
            return True
    return False


def classes(data_dir) -> list[str]:
    """The folder's classes, as ImageFolder will find them; a missing or empty folder, or a
    class folder without a single image, is an error naming it. Stops at the first image of
    each class, so it costs milliseconds on a folder of a million images (and is cached)."""
    root = Path(data_dir)
    if not root.is_dir():
        raise loaders.DataMissingError(
            f"data_dir={str(data_dir)!r}: no such folder ({root.resolve()}). An image folder "
            f"holds one sub-folder per class: {data_dir}/<class>/<image>.jpg")
    key = (str(root.resolve()), root.stat().st_mtime_ns)
    if key in _SCANNED:
        return _SCANNED[key]
    extensions = _extensions()
    # ImageFolder's own rule (find_classes): every directory entry is a class, hidden or not
    found = sorted(e.name for e in os.scandir(root) if e.is_dir())
    if not found:
        loose = any(f.lower().endswith(extensions) for f in os.listdir(root))
        raise loaders.DataMissingError(
            f"data_dir={str(data_dir)!r}: no class folders in {root.resolve()}"
            + (" (the images lie directly in it)" if loose else "")
            + f"; ImageFolder expects one sub-folder per class: {data_dir}/<class>/<image>.jpg")
    empty = [c for c in found if not _has_image(root / c, extensions)]
    if empty:
        raise loaders.DataMissingError(
            f"data_dir={str(data_dir)!r}: class folder(s) without a single image "
            f"({', '.join(extensions)}): {', '.join(empty[:8])}"
            + (f" and {len(empty) - 8} more" if len(empty) > 8 else ""))
    _SCANNED[key] = found
    return found


def dataset(data_dir, image_size: int, train_samples: int | None = None, seed: int = 0):
    """ImageFolder with the usual training transforms; ``train_samples``: a seeded random
    subset of that many images (a folder is ordered by class, its first N would be one class)."""
    from torchvision import datasets, transforms

    classes(data_dir)
    transform = transforms.Compose([
        transforms.RandomResizedCrop(image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])
    folder = datasets.ImageFolder(str(data_dir), transform=transform)
    if train_samples and train_samples < len(folder):
        g = torch.Generator().manual_seed(seed)
        pick = torch.randperm(len(folder), generator=g)[:train_samples].tolist()
        return torch.utils.data.Subset(folder, pick)
    return folder


class Steps:
    """Exactly ``batches`` batches from ``loader``, starting it over (a new epoch, a new
    permutation) as often as needed."""

    def __init__(self, loader, batches: int):
        self.loader, self.batches = loader, batches

    def __len__(self):
        return self.batches

    def __iter__(self):
        done = 0
        while done < self.batches:
            for batch in self.loader:
                yield batch
                done += 1
                if done == self.batches:
                    return


def loader(kind: str, images, batch_size: int, batches: int, device: torch.device, seed: int,
           num_workers: int = 2):
    """``batches`` full batches of ``images`` through the loader ``kind`` (not ``synthetic``:
    random batches need no folder)."""
    n = len(images)
    if kind == "gpu-resident":
        return Steps(loaders.GpuResidentLoader(loaders.dataset_tensors(images), batch_size,
                                               device, seed, drop_last=n >= batch_size), batches)
    # DataLoaders: one shuffled pass over the folder's indices repeated to exactly
    # batches x batch_size samples, so every step has a full batch and the workers start once.
    repeated = torch.utils.data.Subset(images, [i % n for i in range(batches * batch_size)])
    return loaders.make_loader(kind, repeated, batch_size, device, seed, num_workers)
