"""The shipped GPU studies: valid, every cell repeated enough for an interval, and each one
carrying what its report needs (a plain fp32 baseline, the FP8 roof, the seed's training)."""

from collections import Counter

import pytest
import yaml

from conftest import REPO
from tcbench import config as tcconfig
from tcbench import matrix as M
from tcbench import vocabulary as V

# the zoo expands by trying every model's forward pass (seconds each on a CPU): slow
ZOO = pytest.param("zoo.yaml", marks=pytest.mark.slow)
GPU_STUDIES = ["config.yaml", "fastest.yaml", "fp8.yaml", ZOO]


def jobs_of(name: str) -> list:
    cfg = yaml.safe_load((REPO / "config" / name).read_text())
    return list(M.expand(tcconfig.check(cfg)).values())


def cell(job) -> tuple:
    return job.experiment, job.cell.rsplit("_r", 1)[0]


@pytest.mark.parametrize("name", GPU_STUDIES)
def test_every_cell_of_a_gpu_study_has_three_independent_repeats(name):
    """An interval needs n >= 3 (tcbench.stats); each repeat its own seed."""
    jobs = jobs_of(name)
    repeats = Counter(cell(j) for j in jobs)
    assert min(repeats.values()) >= 3, {c: n for c, n in repeats.items() if n < 3}
    seeds = {}
    for j in jobs:
        seeds.setdefault(cell(j), set()).add(dict(j.params)["seed"])
    assert all(len(s) == repeats[c] for c, s in seeds.items())


@pytest.mark.parametrize("name", ["config.yaml", "fastest.yaml", ZOO])
def test_every_experiment_has_its_fp32_baseline(name):
    """Speedups are against fp32 in the same experiment (for the fastest study: plain fp32,
    eager, so that best.md's gain is against what a plain script runs)."""
    by_exp = Counter()
    for j in jobs_of(name):
        p = dict(j.params)
        plain = p.get("compile", "off") == "off" and p.get("cuda_graphs", "off") == "off"
        by_exp[j.experiment] += j.precision == V.BASELINE and (plain or name != "fastest.yaml")
    assert all(by_exp.values()), by_exp


def test_fastest_study_keeps_the_seeds_training():
    """Only the execution changes: net, optimiser, schedule, 20 epochs, every sample."""
    for j in jobs_of("fastest.yaml"):
        if j.workload == "mnist_cnn":
            p = dict(j.params)
            assert (p["epochs"], p["lr"], p["gamma"], p["train_samples"]) == (20, 0.001, 0.8, None)


def test_fp8_study_measures_both_recipes_against_bf16_and_fp32():
    cfg = yaml.safe_load((REPO / "config" / "fp8.yaml").read_text())
    assert cfg["calibrate"]["enabled"]  # the FP8 roof, for MFU
    jobs = jobs_of("fp8.yaml")
    for exp in ("fp8_mlp", "fp8_digits"):
        modes = {j.precision for j in jobs if j.experiment == exp}
        assert {"fp32", "fp8-tensorwise", "fp8-rowwise"} <= modes
    # torchao's float8 is meant for torch.compile: the speed experiment compiles every mode
    assert all(dict(j.params)["compile"] == "default" for j in jobs if j.experiment == "fp8_mlp")


@pytest.mark.slow
def test_zoo_has_a_torchvision_and_a_timm_model():
    sources = {(j.workload, dict(j.params)["model"]) for j in jobs_of("zoo.yaml")}
    assert ("torchvision", "resnet18") in sources
    assert any(w == "timm" for w, _ in sources)
