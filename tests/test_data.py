import numpy as np
import pytest
import torch

from tcbench.data import loaders


def small_mnist(root, n_train=64, n_test=16, seed=1):
    rng = np.random.default_rng(seed)
    imgs = rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n_train, dtype=np.uint8)
    loaders.write_mnist_format(root, imgs, labels, imgs[:n_test], labels[:n_test])
    return imgs, labels


def test_idx_files_read_back_through_torchvision_mnist_with_seed_transforms(tmp_path):
    imgs, labels = small_mnist(tmp_path)
    train, test = loaders.mnist_datasets(tmp_path)
    assert len(train) == 64 and len(test) == 16
    x, y = train[5]
    assert x.shape == (1, 28, 28) and y == labels[5]
    pixels = torch.tensor(imgs[5], dtype=torch.float32) / 255
    expected = (pixels - loaders.MNIST_MEAN) / loaders.MNIST_STD
    torch.testing.assert_close(x[0], expected)


def test_random_mnist_has_mnist_sizes(tmp_path):
    raw = loaders.write_random_mnist(tmp_path, train_samples=100, test_samples=10)
    assert sorted(p.name for p in raw.iterdir()) == sorted(loaders.MNIST_FILES)
    assert (raw / "train-images-idx3-ubyte").stat().st_size == 16 + 100 * 28 * 28


def test_the_data_rule_writes_mnist_files_without_torch(tmp_path):
    """python -m tcbench.data.idxfiles random-mnist, as the data rule runs it: the files, and no
    torch import (it runs beside the study's first training job on a small machine)."""
    import subprocess
    import sys

    code = ("import sys; from tcbench.data import idxfiles; "
            "idxfiles.main(['random-mnist', sys.argv[1]]); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    raw = tmp_path / "MNIST" / "raw"
    assert (raw / "train-images-idx3-ubyte").stat().st_size == 16 + 60000 * 28 * 28
    assert loaders.read_idx(raw / "t10k-labels-idx1-ubyte").shape == (10000,)


def test_missing_mnist_says_where_the_files_go(tmp_path):
    with pytest.raises(loaders.DataMissingError) as err:
        loaders.mnist_datasets(tmp_path / "nowhere", download=False)
    msg = str(err.value)
    assert str((tmp_path / "nowhere").resolve() / "MNIST" / "raw") in msg
    assert "train-images-idx3-ubyte" in msg and "mnist-format-random" in msg


@pytest.mark.parametrize("kind", loaders.LOADERS)
def test_every_loader_kind_yields_full_epochs(tmp_path, kind):
    small_mnist(tmp_path, n_train=70)
    train, _ = loaders.mnist_datasets(tmp_path)
    loader = loaders.make_loader(kind, train, 32, torch.device("cpu"), seed=0, num_workers=1)
    sizes = [len(y) for _, y in loader]
    assert sizes == [32, 32, 6] and len(loader) == 3
    x, _ = next(iter(loader))
    assert x.shape == (32, 1, 28, 28)


def test_gpu_resident_loader_permutes_all_samples_each_epoch(tmp_path):
    tensors = (torch.arange(10.0).view(10, 1), torch.arange(10))
    loader = loaders.GpuResidentLoader(tensors, 4, torch.device("cpu"), seed=0)
    e1 = torch.cat([y for _, y in loader])
    e2 = torch.cat([y for _, y in loader])
    assert sorted(e1.tolist()) == list(range(10)) == sorted(e2.tolist())
    assert e1.tolist() != e2.tolist()


def test_digits_are_real_and_split(tmp_path):
    train, test = loaders.digits_datasets()
    assert len(train) + len(test) == 1797 and len(test) == 360
    x, y = train[0]
    assert x.shape == (1, 28, 28) and 0 <= int(y) <= 9


def test_digits_split_is_stratified_fixed_and_disjoint():
    (_, ytr), (_, yte) = loaders.digits_tensors()
    (_, ytr2), (_, yte2) = loaders.digits_tensors()
    assert torch.equal(yte, yte2) and torch.equal(ytr, ytr2)  # the same split every time
    counts = torch.bincount(ytr, minlength=10) + torch.bincount(yte, minlength=10)
    share = torch.bincount(yte, minlength=10) / counts
    assert share.min() > 0.18 and share.max() < 0.22  # every class 20% held out


@pytest.mark.parametrize("n,frac", [(1797, 0.2), (10, 0.3), (7, 0.5)])
def test_stratified_split_sizes(n, frac):
    labels = np.arange(n) % 3
    train, test = loaders.stratified_split(labels, frac, seed=1)
    assert len(test) == int(np.ceil(frac * n)) and len(train) + len(test) == n
    assert not set(train) & set(test)


def test_vectorised_mnist_equals_torchvision_per_image_transforms(tmp_path):
    """The gpu-resident path (IDX files read directly, ToTensor + Normalize as tensor math over
    all images at once) gives exactly torchvision's per-image values, not just close ones."""
    imgs, labels = small_mnist(tmp_path, n_train=200, n_test=20)
    train, _ = loaders.mnist_datasets(tmp_path)
    per_image = torch.stack([train[i][0] for i in range(len(train))])
    images, targets = loaders.mnist_tensors(tmp_path)
    assert torch.equal(images, torch.from_numpy(imgs)) and targets.dtype == torch.long
    assert targets.tolist() == labels.tolist() == [train[i][1] for i in range(len(train))]
    vectorised = loaders.normalise_mnist(images, torch.device("cpu"))
    assert vectorised.shape == per_image.shape == (200, 1, 28, 28)
    assert torch.equal(vectorised, per_image)
    assert loaders.mnist_samples(tmp_path) == 200


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_vectorised_mnist_on_the_gpu_equals_the_per_image_path(tmp_path):
    small_mnist(tmp_path, n_train=200)
    train, _ = loaders.mnist_datasets(tmp_path)
    per_image = torch.stack([train[i][0] for i in range(len(train))])
    on_gpu = loaders.normalise_mnist(loaders.mnist_tensors(tmp_path)[0], torch.device("cuda")).cpu()
    assert torch.equal(on_gpu, per_image)


def test_missing_mnist_files_say_where_they_go_without_torchvision(tmp_path):
    for fn in (loaders.mnist_tensors, loaders.mnist_samples):
        with pytest.raises(loaders.DataMissingError) as err:
            fn(tmp_path / "nowhere")
        assert "MNIST/raw" in str(err.value) and "mnist-format-random" in str(err.value)


def test_synthetic_batches_are_seeded_on_the_device():
    a = loaders.SyntheticLoader((3, 4), 10, 8, 2, torch.device("cpu"), seed=3)
    b = loaders.SyntheticLoader((3, 4), 10, 8, 2, torch.device("cpu"), seed=3)
    c = loaders.SyntheticLoader((3, 4), 10, 8, 2, torch.device("cpu"), seed=4)
    assert all(torch.equal(x, y) for (x, _), (y, _) in zip(a, b))
    assert not torch.equal(next(iter(a))[0], next(iter(c))[0])
