"""The shipped studies: valid, every cell repeated enough for an interval, each one carrying
what its report needs (a plain fp32 baseline, the FP8 roof, the seed's training), a header
that tells a user what it answers and costs, and only the values that are its point."""

import re
from collections import Counter

import pytest
import yaml
from snakemake.utils import update_config

from conftest import REPO
from tcbench.launch import config as tcconfig
from tcbench.launch import matrix
from tcbench import vocabulary as V

# the zoo expands by trying every model's forward pass (seconds each on a CPU): slow
ZOO = pytest.param("zoo.yaml", marks=pytest.mark.slow)
GPU_STUDIES = ["config.yaml", "fastest.yaml", "fp8.yaml", ZOO]
CONFIGS = sorted(p.name for p in (REPO / "config").glob("*.yaml"))
BASE = "config.yaml"  # the Snakefile's configfile: every --configfile is read over it
# Values a config states although they equal the schema's default, each because it is what
# the study is about: (config, key path) -> why.
DEFAULT_IS_THE_POINT: dict[tuple[str, str], str] = {}


def raw(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def study(name: str) -> dict:
    """The config as the workflow reads it: config.yaml, ``name`` over it, checked (schema
    defaults filled in)."""
    cfg = raw(BASE)
    if name != BASE:
        update_config(cfg, raw(name))
    return tcconfig.check(cfg)


def jobs_of(name: str) -> list:
    return list(matrix.expand(study(name)).values())


def restated_defaults(cfg: dict, schema: dict, base: dict | None = None, path: str = ""):
    """Key paths of ``cfg`` whose value is the schema's default and would be without them: in
    config.yaml (``base`` None) any default; in a study read over it, a default that does not
    undo a different value of config.yaml's (``base``, checked)."""
    for key, sub in schema.get("properties", {}).items():
        if key not in cfg:
            continue
        here = f"{path}{key}"
        inherited = sub.get("default") if base is None else base.get(key, sub.get("default"))
        if "default" in sub and cfg[key] == sub["default"] == inherited:
            yield here
        if isinstance(cfg[key], dict):
            below = None if base is None else (base.get(key) or {})
            yield from restated_defaults(cfg[key], sub, below, here + ".")
        elif isinstance(cfg[key], list) and isinstance(sub.get("items"), dict):
            for i, item in enumerate(cfg[key]):
                if isinstance(item, dict):  # a list replaces config.yaml's: no base below it
                    yield from restated_defaults(item, sub["items"], None, f"{here}[{i}].")


def header(name: str) -> str:
    lines = (REPO / "config" / name).read_text().splitlines()
    return " ".join(line.lstrip("# ") for line in lines[:next(
        i for i, line in enumerate(lines) if not line.startswith("#"))])


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
    assert study("fp8.yaml")["calibrate"]["enabled"]  # the FP8 roof, for MFU
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


@pytest.mark.parametrize("name", CONFIGS)
def test_a_config_carries_only_the_values_that_are_its_point(name):
    """A schema default copied into a config is a second home for it: the schema's changes
    would not reach the config, and a reader cannot tell what the study chose."""
    base = None if name == BASE else study(BASE)
    found = {p for p in restated_defaults(raw(name), tcconfig.load_schema(), base)}
    allowed = {path for (cfg, path) in DEFAULT_IS_THE_POINT if cfg == name}
    assert found == allowed, f"{name} restates the schema's defaults: {sorted(found - allowed)}"


def test_a_restated_default_is_found():
    schema = tcconfig.load_schema()
    planted = {"calibrate": {"size": 8192, "iterations": 5},
               "experiments": [{"name": "x", "workload": "digits", "precisions": ["fp32"],
                                "batch_sizes": [8], "repeats": 2}]}
    assert list(restated_defaults(planted, schema)) == ["calibrate.size"]
    # over config.yaml, a default that undoes config.yaml's value is the study's own choice
    over = {"require_gpu": False, "calibrate": {"enabled": True}}
    assert list(restated_defaults(over, schema, study(BASE))) == ["calibrate.enabled"]


@pytest.mark.parametrize("name", CONFIGS)
def test_a_config_header_says_what_it_answers_runs_and_costs(name):
    """What question the study answers, which experiments it runs and how many jobs, and what
    that costs on a named machine."""
    text = header(name)
    assert "?" in text, f"{name}: the header asks no question"
    assert re.search(r"\bCost\b[^.]*? on (one |a )?(NVIDIA H200s?|shared 2-core CPU)", text), \
        f"{name}: the header names no cost on a named machine"
    own = raw(name).get("experiments")
    if own:
        jobs = jobs_of(name)
        assert f"= {len(jobs)} jobs" in text, f"{name}: the header's job count is not {len(jobs)}"
        for exp in own:
            stem = exp["name"]
            assert stem in text or f"_{stem.rsplit('_', 1)[-1]}" in text, \
                f"{name}: the header does not name experiment {stem}"
