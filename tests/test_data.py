import numpy as np
import pytest
import torch

from tcbench import data as D


def small_mnist(root, n_train=64, n_test=16, seed=1):
    rng = np.random.default_rng(seed)
    imgs = rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n_train, dtype=np.uint8)
    D.write_mnist_format(root, imgs, labels, imgs[:n_test], labels[:n_test])
    return imgs, labels


def test_idx_files_read_back_through_torchvision_mnist_with_seed_transforms(tmp_path):
    imgs, labels = small_mnist(tmp_path)
    train, test = D.mnist_datasets(tmp_path)
    assert len(train) == 64 and len(test) == 16
    x, y = train[5]
    assert x.shape == (1, 28, 28) and y == labels[5]
    expected = (torch.tensor(imgs[5], dtype=torch.float32) / 255 - D.MNIST_MEAN) / D.MNIST_STD
    torch.testing.assert_close(x[0], expected)


def test_random_mnist_has_mnist_sizes(tmp_path):
    raw = D.write_random_mnist(tmp_path, train_samples=100, test_samples=10)
    assert sorted(p.name for p in raw.iterdir()) == sorted(D.MNIST_FILES)
    assert (raw / "train-images-idx3-ubyte").stat().st_size == 16 + 100 * 28 * 28


def test_missing_mnist_says_where_the_files_go(tmp_path):
    with pytest.raises(D.DataMissingError) as err:
        D.mnist_datasets(tmp_path / "nowhere", download=False)
    msg = str(err.value)
    assert str((tmp_path / "nowhere").resolve() / "MNIST" / "raw") in msg
    assert "train-images-idx3-ubyte" in msg and "mnist-format-random" in msg


@pytest.mark.parametrize("kind", D.LOADERS)
def test_every_loader_kind_yields_full_epochs(tmp_path, kind):
    small_mnist(tmp_path, n_train=70)
    train, _ = D.mnist_datasets(tmp_path)
    loader = D.make_loader(kind, train, 32, torch.device("cpu"), seed=0, num_workers=1)
    sizes = [len(y) for _, y in loader]
    assert sizes == [32, 32, 6] and len(loader) == 3
    x, _ = next(iter(loader))
    assert x.shape == (32, 1, 28, 28)


def test_gpu_resident_loader_permutes_all_samples_each_epoch(tmp_path):
    ds = torch.utils.data.TensorDataset(torch.arange(10.0).view(10, 1), torch.arange(10))
    loader = D.GpuResidentLoader(ds, 4, torch.device("cpu"), seed=0)
    e1 = torch.cat([y for _, y in loader])
    e2 = torch.cat([y for _, y in loader])
    assert sorted(e1.tolist()) == list(range(10)) == sorted(e2.tolist())
    assert e1.tolist() != e2.tolist()


def test_digits_are_real_and_split(tmp_path):
    train, test = D.digits_datasets()
    assert len(train) + len(test) == 1797 and len(test) == 360
    x, y = train[0]
    assert x.shape == (1, 28, 28) and 0 <= int(y) <= 9
