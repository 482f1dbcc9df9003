"""Models by name (torchvision, timm), a model in the user's own file, and the user's own images:
each builds and trains on the CPU through the job's entry point, and each bad input stops the
study at parse time with a message naming it."""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from conftest import REPO, snakemake
from tcbench.data import imagefolder
from tcbench.launch import matrix
from tcbench import record as R
from tcbench.job import run
from tcbench import workloads
from tcbench.launch.matrix import ConfigError
from tcbench.workloads import classify
from tcbench.workloads import timm_models, torchvision_models

USER_MODEL = REPO / "tests" / "data" / "user_model.py"
TINY = {"steps": 2, "warmup_steps": 1, "profile_steps": 1}


def job(tmp_path, workload, params, precision="fp32", batch_size=2) -> dict:
    out = tmp_path / "r.json"
    spec = {"workload": workload, "precision": precision, "batch_size": batch_size,
            "params": TINY | params}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    rec = R.read(out)  # validated against the record schema
    assert rec["status"] == "ok", rec["status_reason"]
    assert rec["metrics"]["final_loss"] is not None and rec["metrics"]["flops_per_step"] > 0
    return rec


def write_images(root: Path, classes=("cat", "dog", "fish"), per_class=5, size=(40, 48)):
    """A tiny image folder of random PNGs, in ImageFolder's layout."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in classes:
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / c / f"{i}.png")
    return root


@pytest.fixture
def images(tmp_path):
    return write_images(tmp_path / "images")


# ------------------------------------------------------------------------ torchvision by name
@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_torchvision_model_by_name_trains_on_the_cpu(tmp_path, name):
    import torchvision

    rec = job(tmp_path, "torchvision", {"model": name, "image_size": 32, "num_classes": 10})
    expected = torchvision.models.get_model(name, weights=None, num_classes=10)
    assert rec["model"] == rec["model"] | {
        "name": name, "source": "torchvision", "input_shape": [3, 32, 32], "num_classes": 10,
        "parameters": sum(p.numel() for p in expected.parameters())}
    assert rec["data"]["data"] == "synthetic" and rec["data"]["samples_per_epoch"] == 3 * 2


@pytest.mark.slow
def test_resnet50_workload_is_the_torchvision_model(tmp_path):
    """The committed study's name still works, with its own parameters, built by the one
    builder: the same parameter count as torchvision's model."""
    rec = job(tmp_path, "resnet50", {"image_size": 32, "num_classes": 10})
    assert rec["model"]["name"] == "resnet50" and rec["model"]["source"] == "torchvision"
    assert rec["model"]["parameters"] == 23_528_522
    assert "model" not in rec["params"] and "optimizer" not in rec["params"]


@pytest.mark.parametrize("name,size", [("resnet18", 224), ("inception_v3", 299),
                                       ("efficientnet_v2_s", 384), ("vit_h_14", 224)])
def test_default_input_size_is_the_models_own(name, size):
    assert workloads.resolve_params("torchvision", {"model": name})["image_size"] == size


def test_defaults_follow_the_optimiser_and_the_data(images):
    sgd = workloads.resolve_params("torchvision", {"model": "resnet18"})
    adamw = workloads.resolve_params("torchvision", {"model": "resnet18", "optimizer": "adamw"})
    assert (sgd["lr"], sgd["weight_decay"], sgd["loader"], sgd["num_classes"]) == \
        (0.1, 1e-4, "synthetic", 1000)
    assert (adamw["lr"], adamw["weight_decay"]) == (1e-3, 0.05)
    assert workloads.resolve_params("torchvision", {"model": "resnet18", "optimizer": "adamw",
                                                    "lr": 0.01})["lr"] == 0.01
    folder = workloads.resolve_params("torchvision", {"model": "resnet18", "data": "imagefolder",
                                                      "data_dir": str(images)})
    assert folder["loader"] == "dataloader" and folder["num_classes"] == 3


def test_the_model_axis_names_the_cells():
    cfg = {"experiments": [{"name": "zoo", "workload": "torchvision", "precisions": ["fp32"],
                            "batch_sizes": [2], "axes": {"model": ["resnet18", "vit_b_16"]},
                            "params": TINY}]}
    jobs = matrix.expand(cfg)
    assert list(jobs) == ["zoo/fp32_bs2_resnet18_r1", "zoo/fp32_bs2_vit_b_16_r1"]
    assert [dict(j.params)["model"] for j in jobs.values()] == ["resnet18", "vit_b_16"]


def test_auxiliary_outputs_and_bce():
    """GoogLeNet/Inception return (logits, aux...) in training: scored on the logits; bce is
    binary cross-entropy against one-hot targets."""
    logits, target = torch.randn(4, 5), torch.tensor([0, 3, 1, 4])
    ce = classify.ClassificationLoss()
    assert torch.equal(ce((logits, torch.randn(4, 5)), target),
                       torch.nn.functional.cross_entropy(logits, target))
    onehot = torch.nn.functional.one_hot(target, 5).float()
    assert torch.allclose(classify.ClassificationLoss("bce")(logits, target),
                          torch.nn.functional.binary_cross_entropy_with_logits(logits, onehot))


@pytest.mark.slow
def test_googlenet_trains_with_its_auxiliary_heads(tmp_path):
    rec = job(tmp_path, "torchvision", {"model": "googlenet", "image_size": 64,
                                        "num_classes": 10, "optimizer": "adamw", "loss": "bce"},
              batch_size=2)
    assert rec["model"]["optimizer"] == "adamw" and rec["model"]["loss"] == "bce"


# ------------------------------------------------------------------------ the user's own model
def test_user_model_file_trains(tmp_path):
    rec = job(tmp_path, "custom", {"file": str(USER_MODEL), "num_classes": 10}, "amp-bf16", 4)
    assert rec["params"]["model"] == "model" and rec["params"]["image_size"] == 32
    import hashlib
    assert rec["model"] == rec["model"] | {
        "name": "model", "source": "custom", "input_shape": [3, 32, 32], "optimizer": "own",
        "file_sha256": hashlib.sha256(USER_MODEL.read_bytes()).hexdigest()}
    assert rec["model"]["parameters"] == 20_234


def test_user_functions_crossed_on_the_model_axis():
    cfg = {"experiments": [{"name": "mine", "workload": "custom", "precisions": ["fp32"],
                            "batch_sizes": [2], "axes": {"model": ["model", "wide"]},
                            "params": TINY | {"file": str(USER_MODEL), "num_classes": 10}}]}
    assert list(matrix.expand(cfg)) == ["mine/fp32_bs2_model_r1", "mine/fp32_bs2_wide_r1"]


def test_user_module_with_its_own_batches_and_loss(tmp_path, monkeypatch):
    """module: instead of file:, a regression model with its own batch() and loss()."""
    (tmp_path / "regress.py").write_text(
        "import torch\n"
        "def build_model(num_classes):\n"
        "    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),"
        " torch.nn.Linear(16, 1))\n"
        "def batch(batch_size, device):\n"
        "    return (torch.randn(batch_size, 8, device=device),"
        " torch.randn(batch_size, 1, device=device))\n"
        "def loss():\n"
        "    return torch.nn.MSELoss()\n")
    monkeypatch.chdir(tmp_path)  # found from the working directory, as python -m finds it
    rec = job(tmp_path, "custom", {"module": "regress"}, batch_size=8)
    assert rec["params"]["model"] == "build_model"
    assert rec["model"]["input_shape"] == [8] and rec["model"]["loss"] == "own"
    assert "own batch()" in rec["data"]["description"]
    sys.modules.pop("regress", None)


def test_a_changed_file_is_read_again(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import torch\ninput_shape = (4,)\n"
                 "def model(n): return torch.nn.Linear(4, n)\n")
    assert workloads.resolve_params("custom", {"file": str(f)})["image_size"] == 224
    f.write_text("import torch\ninput_shape = (3, 16, 16)\n"
                 "def model(n): return torch.nn.Sequential(torch.nn.Flatten(), "
                 "torch.nn.Linear(768, n))\n")
    import os
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    assert workloads.resolve_params("custom", {"file": str(f)})["image_size"] == 16


# ------------------------------------------------------------------------ the user's own images
@pytest.mark.parametrize("loader", ["dataloader", "dataloader-tuned", "gpu-resident"])
def test_image_folder_loaders_give_exactly_the_steps(images, loader):
    ds = imagefolder.dataset(images, 24)
    assert len(ds) == 15 and ds.classes == ["cat", "dog", "fish"]
    batches = list(imagefolder.loader(loader, ds, 4, 7, torch.device("cpu"), seed=0, num_workers=1))
    assert len(batches) == 7  # 28 samples from 15 images: the folder is walked again
    for x, y in batches:
        assert x.shape[1:] == (3, 24, 24) and x.dtype == torch.float32
        assert 0 <= int(y.min()) and int(y.max()) <= 2
    # normalised with the ImageNet statistics: roughly zero-centred, not in [0, 1]
    assert float(torch.cat([b[0] for b in batches]).min()) < -1.0


def test_image_folder_subset_is_random_not_the_first_class(images):
    ds = imagefolder.dataset(images, 16, train_samples=6, seed=0)
    labels = {ds.dataset.targets[i] for i in ds.indices}
    assert len(ds) == 6 and len(labels) > 1


@pytest.mark.slow
@pytest.mark.parametrize("loader", ["dataloader", "gpu-resident", "synthetic"])
def test_image_folder_job(tmp_path, images, loader):
    rec = job(tmp_path, "torchvision", {"model": "resnet18", "image_size": 32,
                                        "data": "imagefolder", "data_dir": str(images),
                                        "loader": loader, "num_workers": 1}, batch_size=4)
    assert rec["params"]["num_classes"] == 3 and rec["metrics"]["samples"] == 12
    assert rec["data"]["data"] == "imagefolder" and rec["data"]["loader"] == loader
    if loader != "synthetic":
        assert rec["data"]["images"] == 15 and rec["data"]["classes"] == 3


# ------------------------------------------------------------------------ timm
@pytest.mark.parametrize("package, params", [("timm", {"model": "resnet50d"}),
                                             ("transformers", {})])
def test_a_missing_extra_says_what_to_install(monkeypatch, package, params):
    """An optional extra that is not installed: the workload's check names it and the pip
    command, before any job (None in sys.modules makes every import of it fail)."""
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)
    for cached in ("names", "model_types"):  # memoised lookups must not hide the import
        for mod in (workloads.module("timm"), workloads.module("transformers")):
            if hasattr(getattr(mod, cached, None), "cache_clear"):
                getattr(mod, cached).cache_clear()
    install = re.escape(f"pip install -e '.[{package}]'")
    with pytest.raises(ValueError, match=install):
        workloads.resolve_params(package, params)
    with pytest.raises(ConfigError, match=rf"experiments\[0\] \(t\).*needs the {package} "
                                          rf"package.*{install}"):
        matrix.expand({"experiments": [{"name": "t", "workload": package, "precisions": ["fp32"],
                                        "batch_sizes": [2], "params": params}]})


@pytest.mark.slow
def test_timm_model_by_name_trains(tmp_path):
    pytest.importorskip("timm")
    rec = job(tmp_path, "timm", {"model": "resnet10t", "image_size": 32, "num_classes": 10})
    assert rec["model"]["source"] == "timm" and rec["model"]["timm_version"]
    assert workloads.resolve_params("timm", {"model": "tf_efficientnetv2_s"})["image_size"] == 300
    assert workloads.resolve_params("timm", {"model": "resnet50d.a1_in1k"})["model"] == \
        "resnet50d.a1_in1k"
    with pytest.raises(ValueError, match=r"model='resnet50e' is not a timm model \(did you mean "
                                         r"resnet50"):
        workloads.resolve_params("timm", {"model": "resnet50e"})


# ------------------------------------------------------------------------ bad input, named
def write(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    return str(f)


BAD = [  # (id, workload, params or a function of tmp_path making them, message fragments)
    ("tv-no-model", "torchvision", {}, ["needs a model", "params: {model: resnet18}"]),
    ("tv-misspelt", "torchvision", {"model": "resnet81"},
     ["model='resnet81' is not a torchvision model", "did you mean resnet18"]),
    ("tv-detection-model", "torchvision", {"model": "fasterrcnn_resnet50_fpn"},
     ["model='fasterrcnn_resnet50_fpn' is not a torchvision model"]),
    ("tv-vit-wrong-size", "torchvision", {"model": "vit_b_16", "image_size": 32},
     ["'vit_b_16'", "(2, 3, 32, 32)", "Expected 224 but got 32", "own input size is 224"]),
    ("tv-bad-kwargs", "torchvision", {"model": "resnet18", "model_kwargs": {"depth": 3}},
     ["building the model fails", "depth"]),
    ("tv-loader-without-files", "torchvision", {"model": "resnet18", "loader": "dataloader"},
     ["data=synthetic has no files", "loader='dataloader'"]),
    ("tv-unknown-optimizer", "torchvision", {"model": "resnet18", "optimizer": "adam"},
     ["optimizer='adam'", "sgd, adamw"]),
    ("tv-unknown-loss", "torchvision", {"model": "resnet18", "loss": "hinge"}, ["loss='hinge'"]),
    ("folder-no-data-dir", "torchvision", {"model": "resnet18", "data": "imagefolder"},
     ["data=imagefolder needs data_dir"]),
    ("folder-missing", "torchvision",
     lambda t: {"model": "resnet18", "data": "imagefolder", "data_dir": str(t / "nope")},
     ["nope", "no such folder", "<class>/<image>"]),
    ("folder-no-classes", "torchvision",
     lambda t: {"model": "resnet18", "data": "imagefolder",
                "data_dir": str(write_images(t / "f", ("a",)) / "a")},
     ["no class folders", "the images lie directly in it"]),
    ("folder-empty-class", "torchvision",
     lambda t: (write_images(t / "f", ("a",)), (t / "f" / "b").mkdir(),
                {"model": "resnet18", "data": "imagefolder", "data_dir": str(t / "f")})[-1],
     ["class folder(s) without a single image", ": b"]),
    ("folder-too-few-classes", "torchvision",
     lambda t: {"model": "resnet18", "data": "imagefolder", "num_classes": 2,
                "data_dir": str(write_images(t / "f"))},
     ["num_classes=2", "has 3 class folders"]),
    ("custom-nothing", "custom", {}, ["needs exactly one of file", "module"]),
    ("custom-both", "custom", {"file": "a.py", "module": "a"}, ["exactly one of file"]),
    ("custom-missing-file", "custom", lambda t: {"file": str(t / "my_model.py")},
     ["my_model.py' does not exist"]),
    ("custom-missing-module", "custom", {"module": "no_such_pkg.models"},
     ["importing module 'no_such_pkg.models' failed", "No module named 'no_such_pkg'"]),
    ("custom-syntax-error", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ndef model(n)\n    pass\n")},
     ["importing file", "SyntaxError", "line 2"]),
    ("custom-import-raises", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\n\nx = 1 / 0\n")},
     ["importing file", "failed (line 3)", "ZeroDivisionError"]),
    ("custom-no-function", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ndef modle(n): "
                                         "return torch.nn.Linear(3, n)\n")},
     ["defines neither model() nor build_model()", "def model(num_classes: int)"]),
    ("custom-named-function-missing", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ndef small(n): "
                                         "return torch.nn.Linear(3, n)\n"), "model": "smal"},
     ["has no function 'smal'", "did you mean small", "it defines small"]),
    ("custom-not-a-module", "custom",
     lambda t: {"file": write(t, "m.py", "def model(n):\n    return 42\n")},
     ["building the model fails", "returned int, not a torch.nn.Module"]),
    ("custom-forward-fails", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ninput_shape = (3, 32, 32)\n"
                                         "def model(n):\n    return torch.nn.Sequential("
                                         "torch.nn.Flatten(), torch.nn.Linear(100, n))\n")},
     ["one training step fails on inputs of shape (2, 3, 32, 32)", "mat1 and mat2",
      "declares input_shape = (3, 32, 32)"]),
    ("custom-undeclared-input", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ndef model(n):\n    return "
                                         "torch.nn.Linear(100, n)\n")},
     ["(2, 3, 224, 224)", "input_shape = (C, H, W)"]),
    ("custom-bad-input-shape", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ninput_shape = 32\n"
                                         "def model(n): return torch.nn.Linear(32, n)\n")},
     ["input_shape=32 must be a tuple of positive integers"]),
    ("custom-batch-not-a-pair", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ndef model(n): return "
                                         "torch.nn.Linear(8, n)\ndef batch(b, device): "
                                         "return torch.randn(b, 8, device=device)\n")},
     ["batch() must return (inputs, targets)", "got Tensor"]),
    ("custom-not-on-meta", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ninput_shape = (8,)\n"
                                         "class M(torch.nn.Linear):\n"
                                         "    def forward(self, x):\n"
                                         "        return super().forward(x) * float(x.sum())\n"
                                         "def model(n): return M(8, n)\n")},
     ["trains on the CPU but not on PyTorch's meta device", "count FLOPs"]),
    ("custom-rgb-folder-grey-model", "custom",
     lambda t: {"file": write(t, "m.py", "import torch\ninput_shape = (1, 28, 28)\n"
                                         "def model(n): return torch.nn.Linear(8, n)\n"),
                "data": "imagefolder", "data_dir": str(write_images(t / "f"))},
     ["input_shape=(1, 28, 28)", "3-channel"]),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_is_named_before_any_job(tmp_path, case):
    _, workload, params, fragments = case
    params = params(tmp_path) if callable(params) else params
    with pytest.raises(ValueError) as err:
        workloads.resolve_params(workload, params)
    for fragment in fragments:
        assert fragment in str(err.value), f"{fragment!r} not in {str(err.value)!r}"


def test_the_check_is_cached_per_model(monkeypatch):
    """It runs for every cell at parse time: a model's forward pass is tried once per model
    and input size, not once per cell."""
    from tcbench.workloads import classify

    tried = []
    real = classify.forward_check
    monkeypatch.setattr(classify, "forward_check",
                        lambda what, *a, **k: tried.append(what) or real(what, *a, **k))
    classify.ByName._forward_check.cache_clear()
    try:
        params = {"model": "resnet18", "image_size": 64}
        for fmt in ("contiguous", "channels_last") * 5:
            workloads.resolve_params("torchvision", params | {"memory_format": fmt})
        assert len(tried) == 1, tried
        workloads.resolve_params("torchvision", params | {"image_size": 32})
        assert len(tried) == 2, tried
    finally:
        classify.ByName._forward_check.cache_clear()  # no entry made with the stand-in kept


def test_the_trial_step_is_the_only_check_a_made_job_skips(tmp_path):
    """resolve_params(trial=False), as a job the workflow made: a model that cannot take its
    input passes (the workflow's own check stopped it), a misspelt parameter still does not."""
    broken = {"file": write(tmp_path, "m.py", "import torch\ninput_shape = (3, 32, 32)\n"
                                              "def model(n):\n    return torch.nn.Linear(7, n)\n")}
    with pytest.raises(ValueError, match="one training step fails"):
        workloads.resolve_params("custom", broken)
    assert workloads.resolve_params("custom", broken, trial=False)["file"] == broken["file"]
    with pytest.raises(ValueError, match="did you mean image_size"):
        workloads.resolve_params("custom", broken | {"image_sise": 32}, trial=False)


# ------------------------------------------------------------------------ through Snakemake
@pytest.mark.slow
@pytest.mark.parametrize("params,fragments", [
    ({"model": "resnet81"}, ["invalid configuration", "experiments[0] (mine)",
                             "'resnet81'", "did you mean resnet18"]),
    ({"file": "models/my_model.py"}, ["invalid configuration", "models/my_model.py' does not "
                                                               "exist"]),
], ids=["misspelt-model", "missing-file"])
def test_snakemake_stops_before_any_job(workflow_copy, params, fragments):
    workload = "custom" if "file" in params else "torchvision"
    cfg = {"run": "reject", "require_gpu": False, "calibrate": {"enabled": False},
           "experiments": [{
        "name": "mine", "workload": workload, "precisions": ["fp32"], "batch_sizes": [2],
        "params": TINY | params}]}
    (workflow_copy / "config" / "bad.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(workflow_copy, "--cores", "1", "--configfile", "config/bad.yaml",
                     check=False, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    for fragment in fragments:
        assert fragment in output, f"{fragment!r} not in {output[-3000:]!r}"
    assert not (workflow_copy / "results").exists()


# ------------------------------------------------------------------------ the documentation
DOC = REPO / "docs" / "own-model.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


def test_the_documented_model_file_is_the_tested_one():
    assert blocks("python")[0] == USER_MODEL.read_text()


def test_the_documented_config_expands(tmp_path, monkeypatch):
    """The doc's config, with the doc's model file where it says, passes every parse-time
    check and gives the cells it promises."""
    from snakemake.utils import validate

    from tcbench.launch import config as tcconfig

    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_model.py").write_text(blocks("python")[0])
    cfg = yaml.safe_load(blocks("yaml")[0])
    tcconfig.check(copy.deepcopy(cfg))
    validate(cfg, str(tcconfig.SCHEMA_PATH))
    jobs = matrix.expand(cfg)
    assert {j.workload for j in jobs.values()} == {"custom", "torchvision"}
    assert len(jobs) == 6


def test_the_readme_shows_the_documented_config():
    """One example in two places: README's own-model config is docs/own-model.md's, word for
    word (they had drifted to 27 jobs against 6)."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Benchmark your own model"):]
    assert re.search(r"```yaml\n(.*?)```", section, re.S).group(1) == blocks("yaml")[0]


# ------------------------------------------------------------------------ the model-zoo study
@pytest.mark.slow
def test_zoo_study_expands_to_what_its_header_says():
    """config/zoo.yaml: torchvision families and a timm one, fp32 against reduced precision,
    three repeats, short eager jobs, every model checked (timm's too) before any job."""
    pytest.importorskip("timm")
    from snakemake.utils import validate

    from tcbench.launch import config as tcconfig

    cfg = yaml.safe_load((REPO / "config" / "zoo.yaml").read_text())
    tcconfig.check(copy.deepcopy(cfg))
    validate(cfg, str(tcconfig.SCHEMA_PATH))
    jobs = matrix.expand(cfg)
    header = (REPO / "config" / "zoo.yaml").read_text()
    assert f"= {len(jobs)} " in header  # the job count the header promises
    sources = {(j.workload, dict(j.params)["model"]) for j in jobs.values()}
    assert {"torchvision", "timm"} == {w for w, _ in sources} and len(sources) >= 4
    assert "fp32" in {j.precision for j in jobs.values()} and len(
        {j.precision for j in jobs.values()}) >= 2
    assert {j.repeat for j in jobs.values()} == {1, 2, 3}
    for j in jobs.values():
        p = dict(j.params)
        assert (p["steps"], p["warmup_steps"], p["image_size"]) == (30, 10, 224)
        assert p["compile"] == "off" and j.batch_size == 256
