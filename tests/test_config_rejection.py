"""Bad configurations are rejected before any job runs, with a message naming key and value.

Every case goes through the same checks the workflow makes at parse time (the one schema check,
which also fills in the defaults; then what only the matrix and the capacity plan know); a
representative subset also goes through the real ``snakemake`` command line, which must stop
before creating results.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from conftest import snakemake
from tcbench import capacity, cli
from tcbench.launch import matrix
from tcbench.launch import config as tcconfig
from tcbench.vocabulary import ConfigError

BASE = {
    "run": "reject",
    "require_gpu": False,
    "repeats": 1,
    "calibrate": {"enabled": False},
    "experiments": [{
        "name": "tiny", "workload": "amp_recipe", "precisions": ["fp32"], "batch_sizes": [8],
        "params": {"in_size": 16, "out_size": 16, "num_batches": 2, "epochs": 1,
                   "warmup_steps": 1},
    }],
}
CAPACITY_OK = {"enabled": True, "workloads": ["amp_recipe"], "precisions": ["fp32"],
               "start": 8, "max": 64, "resolution": 8}


def exp(**changes):
    def mutate(c):
        c["experiments"][0].update(changes)
    return mutate


def top(**changes):
    def mutate(c):
        c.update(changes)
    return mutate


def cap(**changes):
    def mutate(c):
        c["capacity"] = CAPACITY_OK | changes
    return mutate


def param(**changes):
    def mutate(c):
        c["experiments"][0]["params"].update(changes)
    return mutate


def second_experiment_named_tiny(c):
    c["experiments"].append(copy.deepcopy(c["experiments"][0]))


def drop_batch_sizes(c):
    del c["experiments"][0]["batch_sizes"]


# (id, mutation, fragments that must all appear in the message: the key and the value)
CASES = [
    ("unknown-top-level-key", top(repeat=3), ["repeat=3", "unknown key"]),
    ("unknown-experiment-key", exp(batchsize=[8]), ["experiments[0] (tiny).batchsize=[8]",
                                                     "(did you mean batch_sizes?)",
                                                     "unknown key"]),
    ("unknown-calibrate-key", top(calibrate={"iters": 5}), ["calibrate.iters=5"]),
    ("repeats-wrong-type", top(repeats="three"), ["repeats='three'"]),
    ("repeats-zero", top(repeats=0), ["repeats=0"]),
    ("repeats-negative", top(repeats=-2), ["repeats=-2"]),
    ("experiment-repeats-fraction", exp(repeats=1.5), ["experiments[0] (tiny).repeats=1.5"]),
    ("batch-size-zero", exp(batch_sizes=[8, 0]), ["experiments[0] (tiny).batch_sizes[1]=0"]),
    ("batch-size-negative", exp(batch_sizes=[-8]), ["experiments[0] (tiny).batch_sizes[0]=-8"]),
    ("batch-size-fraction", exp(batch_sizes=[8.5]),
     ["experiments[0] (tiny).batch_sizes[0]=8.5"]),
    ("batch-size-string", exp(batch_sizes=["8"]),
     ["experiments[0] (tiny).batch_sizes[0]='8'"]),
    ("batch-size-bool", exp(batch_sizes=[True]),
     ["experiments[0] (tiny).batch_sizes[0]=True"]),
    # JSON Schema counts 8.0 as an integer; tcbench's check does not.
    ("batch-size-integral-float", exp(batch_sizes=[8.0]),
     ["experiments[0] (tiny).batch_sizes[0]=8.0", "not of type 'integer'"]),
    ("capacity-start-integral-float", cap(start=64.0), ["capacity.start=64.0"]),
    ("batch-sizes-empty", exp(batch_sizes=[]),
     ["experiments[0] (tiny).batch_sizes=[]", "empty"]),
    ("batch-sizes-duplicate", exp(batch_sizes=[8, 8]),
     ["experiments[0] (tiny).batch_sizes=[8, 8]", "duplicate"]),
    ("batch-sizes-missing", drop_batch_sizes, ["experiments[0] (tiny).batch_sizes", "missing"]),
    ("precision-unknown", exp(precisions=["fp32", "fp8"]),
     ["experiments[0] (tiny).precisions[1]='fp8'", "did you mean fp8-tensorwise or fp8-rowwise?"]),
    ("precision-typo", exp(precisions=["fp32", "bf16"]),
     ["experiments[0] (tiny).precisions[1]='bf16'", "(did you mean amp-bf16?)"]),
    ("precisions-empty", exp(precisions=[]), ["experiments[0] (tiny).precisions=[]"]),
    ("precisions-duplicate", exp(precisions=["fp32", "fp32"]),
     ["experiments[0] (tiny).precisions=['fp32', 'fp32']", "duplicate"]),
    ("workload-unknown", exp(workload="vgg16"), ["experiments[0] (tiny).workload='vgg16'"]),
    ("experiments-empty", top(experiments=[]), ["experiments=[]"]),
    ("experiments-not-a-list", top(experiments={"tiny": 1}), ["experiments={'tiny': 1}"]),
    ("experiment-name-duplicate", second_experiment_named_tiny,
     ["experiments[1]", "'tiny'", "used twice"]),
    ("experiment-name-slash", exp(name="a/b"), ["experiments[0] (a/b).name='a/b'"]),
    ("experiment-name-dotdot", exp(name=".."), ["experiments[0] (..).name='..'"]),
    ("run-slash", top(run="a/b"), ["run='a/b'", "no path separators"]),
    ("run-dotdot", top(run=".."), ["run='..'"]),
    ("run-dotdot-inside", top(run="x..y"), ["run='x..y'"]),
    ("run-absolute", top(run="/tmp/x"), ["run='/tmp/x'"]),
    ("reference-outside-results", top(reference="../nvidia-h200"),
     ["reference='../nvidia-h200'", "no path separators"]),
    ("require-gpu-string", top(require_gpu="yes"), ["require_gpu='yes'"]),
    ("calibrate-size-too-small", top(calibrate={"size": 8}), ["calibrate.size=8"]),
    ("param-unknown", param(lr_rate=0.1), ["lr_rate=0.1", "unknown parameter"]),
    ("param-typo", param(warmup_step=2),
     ["experiments[0] (tiny)", "warmup_step=2", "(did you mean warmup_steps?)"]),
    ("param-non-positive", param(epochs=0), ["epochs=0"]),
    ("param-wrong-type", param(in_size="big"), ["in_size='big'"]),
    ("axis-unknown-value", exp(axes={"loader": ["turbo"]}),
     ["experiments[0] (tiny).axes.loader[0]='turbo'"]),
    ("axis-typo", exp(axes={"loader": ["gpu_resident"]}),
     ["experiments[0] (tiny).axes.loader[0]='gpu_resident'", "(did you mean gpu-resident?)"]),
    ("axis-name-typo", exp(axes={"memory_formats": ["channels_last"]}),
     ["experiments[0] (tiny).axes.memory_formats", "(did you mean memory_format?)"]),
    ("exclude-unknown-key", exp(exclude=[{"gpu": 1}]),
     ["experiments[0] (tiny).exclude[0].gpu=1"]),
    ("exclude-matches-nothing", exp(exclude=[{"precision": "tf32"}]),
     ["experiments[0] (tiny).exclude[0]={'precision': 'tf32'}", "matches no cell"]),
    ("params-and-axes-clash", exp(axes={"memory_format": ["contiguous"]},
                                  params={"memory_format": "contiguous"}),
     ["memory_format set both in params and in axes"]),
    ("experiment-name-dotdot-inside", exp(name="a..b"),
     ["experiments[0] (a..b).name='a..b'"]),
    ("allow-dirty-string", top(allow_dirty="yes"), ["allow_dirty='yes'"]),
    ("capacity-start-off-grid", cap(start=12), ["capacity.start=12", "resolution"]),
    ("capacity-start-above-max", cap(start=128), ["capacity.start=128", "capacity.max=64"]),
    ("capacity-workload-unknown", cap(workloads=["digits"]), ["capacity.workloads[0]='digits'"]),
    ("capacity-negative-limit", cap(memory_limit_bytes=-1), ["capacity.memory_limit_bytes=-1"]),
    ("capacity-bounded-param", cap(params={"amp_recipe": {"epochs": 3}}),
     ["capacity.params.amp_recipe.epochs=3"]),
]
CLI_CASES = ["unknown-top-level-key", "batch-size-zero", "precision-typo", "run-slash",
             "experiment-name-duplicate", "capacity-start-off-grid"]


def bad_config(case_id: str) -> tuple[dict, list[str]]:
    _, mutate, fragments = next(c for c in CASES if c[0] == case_id)
    cfg = copy.deepcopy(BASE)
    mutate(cfg)
    return cfg, fragments


def parse_time_checks(cfg: dict) -> dict:
    """What the workflow does with a config before it schedules anything."""
    cfg = tcconfig.check(copy.deepcopy(cfg))
    jobs = matrix.expand(cfg)
    run = matrix.resolve_run(cfg)
    capacity.plan(cfg, run)
    return jobs


def test_enough_cases():
    assert len(CASES) >= 20
    assert len({c[0] for c in CASES}) == len(CASES)


def test_base_config_is_accepted():
    """The control: without the mutation every case would pass and schedule a job."""
    assert list(parse_time_checks(BASE)) == ["tiny/fp32_bs8_r1"]
    assert parse_time_checks(BASE | {"capacity": CAPACITY_OK})


@pytest.mark.parametrize("case_id", [c[0] for c in CASES])
def test_rejected_naming_key_and_value(case_id):
    cfg, fragments = bad_config(case_id)
    with pytest.raises(ConfigError) as err:
        parse_time_checks(cfg)
    message = str(err.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


@pytest.mark.slow
def test_base_config_runs_jobs_on_the_command_line(workflow_copy):
    (workflow_copy / "config" / "base.yaml").write_text(yaml.safe_dump(BASE))
    proc = snakemake(workflow_copy, "-n", "--cores", "1", "--configfile", "config/base.yaml")
    assert "train" in proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("case_id", CLI_CASES)
def test_rejected_by_snakemake_before_any_job(workflow_copy, case_id):
    cfg, fragments = bad_config(case_id)
    (workflow_copy / "config" / "bad.yaml").write_text(yaml.safe_dump(cfg))
    # A real run, not a dry run: had the config got through, the job would have run.
    proc = snakemake(workflow_copy, "--cores", "1", "--configfile", "config/bad.yaml",
                     check=False, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "invalid configuration" in output, output
    for fragment in fragments:
        assert fragment in output, f"{fragment!r} not in {output[-3000:]!r}"
    assert not (workflow_copy / "results").exists()
    assert not (workflow_copy / "logs").exists()


@pytest.mark.parametrize("text, value", [("false", False), ("True", True)])
def test_a_boolean_given_as_text_on_the_command_line_is_that_boolean(text, value):
    """`--config require_gpu=false` arrives as the text 'false' (Snakemake parses numbers only)."""
    assert tcconfig.check(copy.deepcopy(BASE) | {"require_gpu": text})["require_gpu"] is value
    with pytest.raises(ConfigError, match="require_gpu"):
        tcconfig.check(copy.deepcopy(BASE) | {"require_gpu": "maybe"})


def test_each_mistake_is_one_line_of_its_own():
    """The workflow prints each mistake on a line of its own (the Snakefile's config_stop)."""
    cfg = copy.deepcopy(BASE)
    cfg["repeats"] = 0
    cfg["experiments"][0]["precisions"] = ["bf16"]
    with pytest.raises(ConfigError) as err:
        tcconfig.check(cfg)
    assert err.value.mistakes == [
        "experiments[0] (tiny).precisions[0]='bf16': not one of fp32, tf32, amp-fp16, amp-bf16, "
        "fp8-tensorwise, fp8-rowwise (did you mean amp-bf16?)",
        "repeats=0: 0 is less than the minimum of 1"]
    assert str(err.value) == "; ".join(err.value.mistakes)


@pytest.mark.parametrize("value, known, hint", [
    ("bf16", ["fp32", "amp-fp16", "amp-bf16"], " (did you mean amp-bf16?)"),     # a part of it
    ("FP32", ["fp32", "tf32"], " (did you mean fp32?)"),                         # its case
    ("warmup_step", ["warmup_steps", "steps", "seed"], " (did you mean warmup_steps?)"),
    ("fp8", ["fp32", "fp8-tensorwise", "fp8-rowwise"],
     " (did you mean fp8-tensorwise or fp8-rowwise?)"),
    ("turbo", ["dataloader", "gpu-resident", "synthetic"], ""),                  # nothing close
])
def test_a_name_not_known_gets_the_known_ones_closest_to_it(value, known, hint):
    assert cli.suggestion(value, known) == hint
