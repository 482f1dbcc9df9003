import pytest
import yaml

from tcbench.launch import config as tcconfig
from tcbench.launch import matrix

REPO_CONFIGS = ["config/config.yaml", "config/smoke.yaml", "config/fastest.yaml",
                "config/multigpu.yaml"]


def exp(**kw):
    return {"workload": "amp_recipe", "precisions": ["fp32"], "batch_sizes": [8]} | kw


def expand(cfg: dict) -> dict:
    """The matrix of a config as the workflow makes it: checked once, then expanded."""
    return matrix.expand(tcconfig.check(cfg))


def test_cross_product_and_cell_names():
    jobs = expand({"repeats": 2, "experiments": [exp(precisions=["fp32", "amp-bf16"],
                                                       batch_sizes=[8, 16])]})
    assert len(jobs) == 2 * 2 * 2
    assert "amp_recipe/amp-bf16_bs16_r2" in jobs
    job = jobs["amp_recipe/fp32_bs8_r1"]
    spec = job.spec("myrun")
    assert spec["run"] == "myrun" and spec["params"]["in_size"] == 4096


def test_each_repeat_has_its_own_seed_shared_by_every_precision():
    jobs = matrix.expand({"repeats": 3, "experiments": [
        exp(precisions=["fp32", "amp-bf16"]),
        exp(name="seeded", params={"seed": 10})]})
    seed = {j.id: dict(j.params)["seed"] for j in jobs.values()}
    assert [seed[f"amp_recipe/fp32_bs8_r{r}"] for r in (1, 2, 3)] == [0, 1, 2]
    assert [seed[f"amp_recipe/amp-bf16_bs8_r{r}"] for r in (1, 2, 3)] == [0, 1, 2]
    assert [seed[f"seeded/fp32_bs8_r{r}"] for r in (1, 2, 3)] == [10, 11, 12]
    assert jobs["amp_recipe/fp32_bs8_r2"].spec("x")["params"]["seed"] == 1


def test_axes_and_exclude():
    jobs = expand({"experiments": [{
        "name": "m", "workload": "mnist_cnn", "precisions": ["fp32", "tf32"],
        "batch_sizes": [512, 1024], "axes": {"loader": ["gpu-resident", "synthetic"]},
        "exclude": [{"precision": "tf32", "batch_size": 1024}],
        "params": {"data": "mnist-format-random"}}]})
    assert len(jobs) == 2 * 2 * 2 - 2
    assert "m/fp32_bs1024_synthetic_r1" in jobs and "m/tf32_bs1024_gpu-resident_r1" not in jobs
    job = jobs["m/tf32_bs512_gpu-resident_r1"]
    assert dict(job.params)["loader"] == "gpu-resident"
    assert job.inputs()[0].endswith("resources/mnist-format-random/MNIST/raw/train-images-idx3-ubyte")


def test_yaml_off_is_the_compile_mode_off():
    cfg = yaml.safe_load("experiments: [{workload: resnet50, precisions: [fp32], "
                         "batch_sizes: [2], axes: {compile: [off, default]}}]")
    jobs = expand(cfg)
    assert {dict(j.params)["compile"] for j in jobs.values()} == {"off", "default"}


@pytest.mark.parametrize("cfg,culprit", [
    ({"experiments": []}, "empty"),
    ({"experiments": [exp(workload="vgg")]}, "workload='vgg'"),
    ({"experiments": [exp(precisions=["fp8"])]}, "'fp8'"),
    ({"experiments": [exp(batch_sizes=[0])]}, "batch_sizes[0]=0"),
    ({"experiments": [exp(batch_sizes=[8.0])]}, "batch_sizes[0]=8.0"),
    ({"experiments": [exp(batch_sizes=[8, 8])]}, "duplicate"),
    ({"experiments": [exp(), exp()]}, "used twice"),
    ({"experiments": [exp(params={"nope": 1})]}, "nope=1"),
    ({"experiments": [exp(repeats=0)]}, "repeats=0"),
    ({"experiments": [exp(name="../up")]}, "name='../up'"),
    ({"experiments": [exp(exclude=[{"precision": "fp32"}])]}, "every cell is excluded"),
    # an exclude that matches no cell is a typo, and would run the cells it meant to drop
    ({"experiments": [exp(batch_sizes=[8, 16], exclude=[{"batch_size": 61}])]},
     "exclude[0]={'batch_size': 61}: matches no cell"),
    ({"experiments": [exp(exclude=[{"loader": "synthetic"}])]}, "matches no cell"),
    ({"experiments": [exp(params={"loader": "x"}, axes={"loader": ["synthetic"]})]},
     "set both in params and in axes"),
])
def test_bad_configs_name_the_culprit(cfg, culprit):
    with pytest.raises(matrix.ConfigError, match=None) as err:
        expand(cfg)
    assert culprit in str(err.value)


@pytest.mark.parametrize("run", ["../x", "a/b", ".hidden", "", "x..y"])
def test_run_names_cannot_escape_results(run):
    with pytest.raises(matrix.ConfigError, match="run="):
        tcconfig.check({"run": run, "experiments": [exp()]})


def test_auto_run_is_a_device_slug():
    run = matrix.resolve_run(tcconfig.check({"experiments": [exp()]}))
    tcconfig.check({"run": run, "experiments": [exp()]})  # a name the schema allows
    assert "/" not in run


def test_device_in_a_run_name_is_this_machines_slug(monkeypatch):
    from tcbench.host import environment

    monkeypatch.setattr(environment, "device_slug", lambda: "cpu-amd-epyc")
    assert matrix.resolve_run(tcconfig.check({"run": "smoke-{device}", "experiments": [exp()]})) \
        == "smoke-cpu-amd-epyc"
    assert matrix.resolve_run(tcconfig.check({"experiments": [exp()]})) == "cpu-amd-epyc"
    with pytest.raises(matrix.ConfigError, match="run="):
        tcconfig.check({"run": "smoke-{dev}", "experiments": [exp()]})


def test_the_smoke_study_and_the_gpu_study_never_share_a_set(monkeypatch):
    from conftest import REPO
    from tcbench.host import environment

    monkeypatch.setattr(environment, "device_slug", lambda: "cpu-amd-epyc")
    runs = {name: matrix.resolve_run(tcconfig.check(yaml.safe_load((REPO / "config" / name)
                                                               .read_text())))
            for name in ("config.yaml", "smoke.yaml")}
    assert runs == {"config.yaml": "cpu-amd-epyc", "smoke.yaml": "smoke-cpu-amd-epyc"}


def test_strays_are_another_studys_files_this_studys_rules_would_match():
    """A rule's constraints match experiment and name each on its own: the smoke study's
    amp_recipe/fp32_bs64_r1 looks like a GPU-study job (its amp_recipe, its digits'
    fp32_bs64_r1); another experiment, or a name of no cell of this study, is no stray."""
    mine = ["amp_recipe/fp32_bs512_r1", "digits/fp32_bs64_r1"]
    found = ["amp_recipe/fp32_bs64_r1", "amp_recipe/fp32_bs512_r1", "models/fp32_bs64_r1",
             "amp_recipe/fp8-rowwise_bs64_r1"]
    assert matrix.strays(found, mine) == ["amp_recipe/fp32_bs64_r1"]
    assert matrix.strays(mine, mine) == []


@pytest.mark.parametrize("path", REPO_CONFIGS)
def test_shipped_configs_expand(path):
    from conftest import REPO
    cfg = yaml.safe_load((REPO / path).read_text())
    assert len(expand(cfg)) > 5


def test_a_study_plan_is_the_crossing_less_its_excludes_and_must_cover_the_records():
    """fp8.yaml planned fp32 at batch 8192 though the set has no record of it; fastest.yaml's
    mnist_fastest never had fp32 at 8192 (excluded); a plan that lacks a recorded cell, or
    an experiment in no study, is not known."""
    from conftest import REPO
    studies = matrix.studies(REPO / "config")
    assert "config.yaml" in studies and "capacity.yaml" not in studies    # not a study
    jobs = matrix.expand(studies["fp8.yaml"])
    groups = list(dict.fromkeys(j.group for j in jobs.values() if j.experiment == "fp8_mlp"))
    plan = matrix.plan_of("fp8_mlp", {"amp-bf16_bs8192_compile-default"}, studies)
    assert plan == groups and "fp32_bs8192_compile-default" in plan
    fastest = matrix.plan_of("mnist_fastest", set(), studies)
    assert not any(c.startswith("fp32_bs8192") for c in fastest)
    assert any(c.startswith("amp-bf16_bs8192") for c in fastest)
    assert matrix.plan_of("fp8_mlp", {"fp32_bs1_compile-default"}, studies) is None
    assert matrix.plan_of("no_such_experiment", set(), studies) is None


def test_a_gpu_study_of_fp8_modes_without_torchao_stops_before_any_job(monkeypatch):
    real = matrix.importlib.util.find_spec
    monkeypatch.setattr(matrix.importlib.util, "find_spec",
                        lambda name, *a: None if name == "torchao" else real(name, *a))
    cfg = {"experiments": [exp(name="f", precisions=["fp32", "amp-bf16", "fp8-rowwise"])]}
    with pytest.raises(ValueError, match=r"experiments\[0\] \(f\)\.precisions: fp8-rowwise "
                                         r"need\(s\) torchao.*pip install -e '\.\[fp8\]'"):
        expand(cfg | {"require_gpu": True})
    # a CPU study records its FP8 cells unsupported whatever is installed; no FP8 mode, no need
    assert expand(cfg | {"require_gpu": False})
    assert expand({"experiments": [exp(precisions=["fp32"])], "require_gpu": True})


def test_every_bad_experiment_is_named_in_one_stop():
    cfg = {"experiments": [exp(name="a"), exp(name="b", params={"nope": 1}),
                           exp(name="c", batch_sizes=[8, 16], exclude=[{"batch_size": 61}])]}
    with pytest.raises(matrix.ConfigError) as err:
        expand(cfg)
    said = err.value.mistakes
    assert len(said) == 2 and said[0].startswith("experiments[1] (b)") and "nope=1" in said[0]
    assert said[1].startswith("experiments[2] (c).exclude[0]")
