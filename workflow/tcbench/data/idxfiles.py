"""MNIST's IDX files written with numpy alone, so the workflow's data rule
(``python -m tcbench.data.idxfiles random-mnist ROOT``) starts without importing torch: a second or
more of a 2-core machine that the study's first training job runs beside. tcbench.data.loaders reads
them back (and re-exports these writers)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write a uint8 array in the IDX format MNIST ships in (big-endian header, then raw bytes)."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I",
                                                                          *array.shape)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(header)
        f.write(array.tobytes())
    os.replace(tmp, path)


def write_mnist_format(root: Path, train_images, train_labels, test_images, test_labels) -> Path:
    """Lay out IDX files where ``torchvision.datasets.MNIST(root)`` looks for them."""
    raw = Path(root) / "MNIST" / "raw"
    write_idx(raw / "train-images-idx3-ubyte", train_images)
    write_idx(raw / "train-labels-idx1-ubyte", train_labels)
    write_idx(raw / "t10k-images-idx3-ubyte", test_images)
    write_idx(raw / "t10k-labels-idx1-ubyte", test_labels)
    return raw


def write_random_mnist(root: Path, seed: int = 0, train_samples: int = 60000,
                       test_samples: int = 10000) -> Path:
    """MNIST-shaped random images and labels, as IDX files: read back through torchvision's
    MNIST class they cost the input pipeline exactly what real MNIST costs."""
    rng = np.random.default_rng(seed)
    return write_mnist_format(
        root,
        rng.integers(0, 256, (train_samples, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, train_samples, dtype=np.uint8),
        rng.integers(0, 256, (test_samples, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, test_samples, dtype=np.uint8),
    )


def main(argv=None) -> int:
    """python -m tcbench.data.idxfiles random-mnist ROOT [--seed N]: write MNIST-format random
    files."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tcbench.data.idxfiles")
    sub = ap.add_subparsers(dest="command", required=True)
    rm = sub.add_parser("random-mnist", help="random images/labels as MNIST IDX files")
    rm.add_argument("root", type=Path, help="written to ROOT/MNIST/raw/")
    rm.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    raw = write_random_mnist(args.root, args.seed)
    print(f"wrote random MNIST-format files to {raw}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
