"""config/fp8.yaml and config/fastest.yaml: valid, expanded into the jobs their headers count,
and the fastest study still names the records issue 5 committed (so they are not run again)."""

from collections import Counter

import pytest
import yaml

from conftest import REPO
from tcbench import config as tcconfig
from tcbench import matrix as M
from tcbench import workloads as W


def load(name: str, known_only: bool = False) -> dict:
    cfg = yaml.safe_load((REPO / "config" / name).read_text())
    if known_only:  # a workload another branch adds (torchvision) is checked once it is here
        cfg["experiments"] = [e for e in cfg["experiments"] if e["workload"] in W.NAMES]
    return cfg


def test_fp8_study_expands_as_its_header_says():
    cfg = load("fp8.yaml")
    vit = [e for e in cfg["experiments"] if e["name"] == "fp8_vit"][0]
    assert vit["workload"] == "torchvision" and vit["params"]["model"] == "vit_b_16"
    if "torchvision" not in W.NAMES:
        cfg = load("fp8.yaml", known_only=True)
    tcconfig.check(cfg)
    jobs = M.expand(cfg)
    per = Counter(j.experiment for j in jobs.values())
    assert per["fp8_mlp"] == 36 and per["fp8_digits"] == 15
    assert per.get("fp8_vit", 9) == 9
    assert cfg["calibrate"]["enabled"]  # the FP8 roof, for MFU
    mlp = [j for j in jobs.values() if j.experiment == "fp8_mlp"]
    assert {j.precision for j in mlp} == {"fp32", "amp-bf16", "fp8-tensorwise", "fp8-rowwise"}
    assert {j.batch_size for j in mlp} == {512, 8192, 32768}
    assert all(dict(j.params)["compile"] == "default" for j in mlp)
    assert all(dict(j.params)["in_size"] == dict(j.params)["out_size"] == 4096 for j in mlp)
    digits = [j for j in jobs.values() if j.experiment == "fp8_digits"]
    assert max(j.repeat for j in digits) == 5 and "fp32" in {j.precision for j in digits}


def test_fastest_study_expands_as_its_header_says():
    cfg = load("fastest.yaml")
    tcconfig.check(cfg)
    jobs = M.expand(cfg)
    per = Counter(j.experiment for j in jobs.values())
    assert per == {"mnist_fast": 16, "resnet50_fast": 8, "mnist_fastest": 15,
                   "resnet50_fastest": 12, "resnet50_autotune": 3}
    cells = {j.cell.rsplit("_r", 1)[0] for j in jobs.values()
             if j.experiment in ("mnist_fastest", "resnet50_fastest", "resnet50_autotune")}
    assert cells == {
        "amp-bf16_bs4096_gpu-resident_contiguous_compile-off_graphs-on_cudnn-on",
        "amp-bf16_bs4096_gpu-resident_channels_last_compile-off_graphs-on_cudnn-off",
        "amp-bf16_bs4096_gpu-resident_channels_last_compile-off_graphs-on_cudnn-on",
        "amp-bf16_bs8192_gpu-resident_channels_last_compile-off_graphs-on_cudnn-on",
        "amp-bf16_bs4096_gpu-resident_channels_last_compile-default_graphs-on_cudnn-on",
        "amp-fp16_bs256_channels_last_compile-default",
        "amp-bf16_bs256_channels_last_compile-default",
        "amp-bf16_bs512_channels_last_compile-default",
        "amp-bf16_bs256_channels_last_compile-reduce-overhead",
        "amp-bf16_bs256_channels_last_compile-max-autotune",
    }
    # the MNIST cells keep the seed's training: net, optimiser, schedule, 20 epochs, all samples
    for j in jobs.values():
        if j.workload == "mnist_cnn":
            p = dict(j.params)
            assert (p["epochs"], p["lr"], p["gamma"], p["train_samples"]) == (20, 0.001, 0.8, None)


@pytest.mark.parametrize("experiment", ["mnist_fast", "resnet50_fast"])
def test_fastest_study_still_names_issue_5s_records(experiment):
    recorded = {p.stem for p in (REPO / "results" / "nvidia-h200" / "records" / experiment)
                .glob("*.json")}
    if not recorded:
        pytest.skip("no committed H200 records")
    jobs = M.expand(load("fastest.yaml"))
    assert recorded <= {j.cell for j in jobs.values() if j.experiment == experiment}
