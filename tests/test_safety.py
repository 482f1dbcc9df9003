"""Safety of the workflow itself: every wildcard constrained to one harmless path component,
every value in a shell command quoted, results written under results/ only."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
import yaml

from conftest import REPO, snakemake

HOSTILE = ["..", ".", "", "a/b", "../x", "/abs", "a b", "x;rm", "$(id)", "`id`", "a'b", "*"]
INJECTION = "data'; touch PWNED_QUOTE; echo '$(touch PWNED_SUBST)`touch PWNED_TICK`"


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    """The workflow's rules as Snakemake parsed them (capacity study on, so all are there)."""
    import os

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    from conftest import copy_workflow

    wd = copy_workflow(tmp_path_factory.mktemp("safety") / "wf")
    (wd / "config" / "all.yaml").write_text(yaml.safe_dump({"capacity": {
        "enabled": True, "workloads": ["amp_recipe", "mnist_cnn", "resnet50"]}}))
    cwd = os.getcwd()
    try:
        with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
            wf = api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(configfiles=[wd / "config" / "smoke.yaml",
                                                            wd / "config" / "all.yaml"]),
                snakefile=wd / "Snakefile", workdir=wd)._workflow
            yield {r.name: r for r in wf.rules}
    finally:
        os.chdir(cwd)


WILDCARD = re.compile(r"\{\s*(\w+)\s*(?:,([^{}]*(?:\{[^{}]*\}[^{}]*)*))?\}")


def wildcards_of(pattern: str) -> dict[str, str | None]:
    return {m.group(1): m.group(2) for m in WILDCARD.finditer(pattern)}


def test_the_workflow_has_the_expected_rules(rules):
    assert {"train", "calibrate", "aggregate", "figures", "mnist_format_random",
            "capacity_search", "capacity_report", "compare", "reproduce"} <= set(rules)


def test_every_wildcard_is_constrained_to_one_harmless_component(rules):
    checked = 0
    for name, rule in rules.items():
        for f in [*rule.output, *rule.log]:
            for wc, constraint in wildcards_of(str(f)).items():
                assert constraint, f"rule {name}: wildcard {wc} in {f} has no constraint"
                for bad in HOSTILE:
                    assert not re.fullmatch(constraint, bad), \
                        f"rule {name}: {wc}={bad!r} matches {constraint!r}"
                checked += 1
        assert set(rule.wildcard_names) <= {wc for f in rule.output for wc in wildcards_of(str(f))}
    assert checked >= 15  # not vacuous: train alone has 3 wildcards in 2 paths


@pytest.mark.parametrize("target", [
    "results/../escape/records/tiny/fp32_bs8_r1.json",
    "results/a/b/records/tiny/fp32_bs8_r1.json",
    "results/x/records/../../../etc/passwd.json",
    "results/x/records/tiny/../../y.json",
    "results/x/records/tiny/a b.json",
    "results/x/capacity/resnet50/../fp32.json",
    "results/x/capacity/digits/fp32.json",
    "/tmp/results/x/metrics.csv",
])
def test_no_rule_makes_a_path_outside_its_folder(rules, target):
    assert not [n for n, r in rules.items() if r.output and r.is_producer(target)]


def test_every_shell_placeholder_is_quoted(rules):
    checked = 0
    for name, rule in rules.items():
        if not rule.shellcmd:
            continue
        for _, field, spec, _ in string.Formatter().parse(rule.shellcmd):
            if field is None:
                continue
            assert spec == "q", f"rule {name}: {{{field}}} is not :q-quoted"
            checked += 1
    assert checked >= 20


def test_results_are_written_under_results_only(rules):
    for name, rule in rules.items():
        for f in rule.output:
            path = str(f)
            # resources/ holds inputs the workflow makes (random MNIST files, the container's
            # extra packages); every result goes under results/
            allowed = ("resources/",) if name in ("mnist_format_random", "image_python") \
                else ("results/compare",) if name == "compare" else ("results/{run,",)
            if name == "reproduce":   # into this study's own set, named when the rule is read
                assert re.fullmatch(r"results/[A-Za-z0-9][A-Za-z0-9._-]*/(figures/)?"
                                    r"reproduce\.\w+", path), f"rule {name} writes {path}"
                continue
            assert path.startswith(allowed), f"rule {name} writes {path}"
        for f in rule.log:
            assert str(f).startswith("logs/"), f"rule {name} logs to {f}"
        if rule.benchmark:
            assert str(rule.benchmark).startswith("results/{run,")


@pytest.mark.slow
def test_a_hostile_config_string_stays_a_string(workflow_copy):
    """A config value made to break out of shell quoting reaches the job as data: the job fails
    for want of data in that (odd) folder, and nothing the string asks for happens."""
    config = {"run": "hostile", "require_gpu": False, "repeats": 1,
              "calibrate": {"enabled": False},
              "experiments": [{"name": "mnist", "workload": "mnist_cnn", "precisions": ["fp32"],
                               "batch_sizes": [8],
                               "params": {"data": "mnist", "data_dir": INJECTION, "epochs": 1}}]}
    (workflow_copy / "config" / "hostile.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(workflow_copy, "--cores", "1", "--configfile", "config/hostile.yaml",
                     check=False)
    log = (workflow_copy / "logs" / "hostile" / "train" / "mnist" / "fp32_bs8_r1.log").read_text()
    assert proc.returncode != 0
    assert "MNIST not found under" in log and "PWNED_QUOTE" in log  # the path, verbatim
    assert not [p for p in workflow_copy.rglob("PWNED*")]
    assert not [p for p in Path("/tmp").glob("PWNED*")]
    assert not (workflow_copy / "results" / "hostile" / "records").exists()


# ------------------------------------------------------------- where each rule runs
# the rules that are worth a batch job: GPU work, and the image's own Python
BATCH_RULES = {"train", "interleave", "calibrate", "capacity_search", "image_python"}


def test_every_rule_with_a_command_but_the_batch_ones_runs_where_snakemake_runs():
    """A report rule left out of `localrules` becomes a SLURM job of its own (set_tables did,
    when it was added): every rule with a shell command is either a batch rule or local."""
    text = "\n".join(p.read_text() for p in [REPO / "Snakefile",
                                             *sorted((REPO / "workflow" / "rules").glob("*.smk"))])
    blocks = re.split(r"^(?:rule|checkpoint) (\w+):\n", text, flags=re.M)[1:]
    with_command = {name for name, body in zip(blocks[::2], blocks[1::2])
                    if re.search(r"^    (shell|run|script):", body.split("\nrule ")[0], re.M)}
    local = set(re.search(r"^localrules:\n((?:    \w+,\n)+)", text, re.M).group(1)
                .replace(",", " ").split())
    assert with_command - BATCH_RULES == local - {"all"}, (with_command - BATCH_RULES) ^ local
