"""Shared fixtures: the repository, and a throw-away copy of the workflow to run Snakemake in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# tests/data/user_model.py: the smoke study's model of a user's own (config/smoke.yaml)
WORKFLOW_FILES = ("Snakefile", "workflow", "config", "profiles", "containers",
                  "tests/data/user_model.py")


def smoke_jobs() -> int:
    """How many jobs config/smoke.yaml expands to: the count the end-to-end tests expect."""
    import yaml

    from tcbench.launch import config as tcconfig, matrix

    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    return len(matrix.expand(tcconfig.check(cfg)))


def tracked_files(root: Path = REPO) -> list[str]:
    """The repository's tracked files (``git ls-files``), relative to ``root``; in a copy
    without git, every file under it but the folders a run or an install writes."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True,
                             text=True, check=True, timeout=60).stdout
        return sorted(filter(None, out.split("\0")))
    except (OSError, subprocess.SubprocessError):
        skip = {".git", ".venv", ".snakemake", ".pytest_cache", ".whl", "logs", "resources",
                "data", "__pycache__"}
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                      if p.is_file() and not skip & set(p.relative_to(root).parts))


# ------------------------------------------------------------------------- the two test runs
# `python -m pytest` runs the unit and contract tests (pyproject's addopts deselect the slow
# ones); `python -m pytest -m slow` runs the rest: every test that runs Snakemake, forks or
# starts training jobs in processes of their own, builds an environment, or trains a real
# model. A test is slow when its module is in SLOW_MODULES, when it uses a fixture in
# SLOW_FIXTURES, or when it or its parameter carries @pytest.mark.slow in its module.
# snakemake() refuses to run in a test that is not slow, so a workflow test left unmarked fails
# by name. tests/README.md lists the slow set; tests/test_links.py holds the two to each other.
SLOW_MODULES = frozenset({"test_workflow.py", "test_publication_workflow.py",
                          "test_interrupt.py", "test_slurm.py", "test_apptainer.py"})
# the smoke study, natively and in the fake apptainer; a throw-away virtualenv pip installs into
SLOW_FIXTURES = frozenset({"smoke_run", "container_run", "image_like_python"})
_running = {"slow": False}


def slow_by_rule(module: str, fixtures) -> bool:
    """Slow by its module or its fixtures (a marker in the module aside)."""
    return module in SLOW_MODULES or bool(SLOW_FIXTURES & set(fixtures))


@pytest.hookimpl(tryfirst=True)   # before `-m` deselects by the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if slow_by_rule(item.path.name, getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)   # before the test's fixtures are set up (smoke_run runs there)
def pytest_runtest_setup(item):
    _running["slow"] = item.get_closest_marker("slow") is not None


def copy_workflow(dest: Path) -> Path:
    """The workflow, configs and profiles copied to ``dest`` (results and logs stay behind)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def snakemake(workdir: Path, *args: str, env: dict | None = None, timeout: float = 600,
              check: bool = True) -> subprocess.CompletedProcess:
    """Run the Snakemake CLI of this interpreter's environment in ``workdir``."""
    if not _running["slow"]:
        raise AssertionError("this test runs Snakemake: mark it slow (tests/conftest.py, "
                             "SLOW_MODULES or @pytest.mark.slow; tests/README.md)")
    full_env = os.environ | {"PYTHONPATH": str(workdir / "workflow")} | (env or {})
    exe = Path(sys.executable).with_name("snakemake")
    cmd = [str(exe) if exe.exists() else "snakemake", *args]
    proc = subprocess.run(cmd, cwd=workdir, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def progress(output: str) -> dict[str, list[tuple[int, int]]]:
    """The (done, total) of each progress line a run printed: Snakemake's step count
    ("3 of 20 steps (15%) done") and tcbench's measuring jobs ("Progress: 2 of at most 8
    measuring jobs done")."""
    import re

    return {"steps": [(int(a), int(b)) for a, b in
                      re.findall(r"^(\d+) of (\d+) steps \(", output, re.M)],
            "jobs": [(int(a), int(b)) for a, b in
                     re.findall(r"^Progress: (\d+) of at most (\d+) measuring", output, re.M)]}


def never_backwards(pairs: list[tuple[int, int]]) -> bool:
    """Totals that never grow, shares done that never fall, and the last one all done."""
    return (bool(pairs) and all(t2 <= t1 and d2 / t2 >= d1 / t1 for (d1, t1), (d2, t2)
                                in zip(pairs, pairs[1:])) and pairs[-1][0] == pairs[-1][1])


def fault_env(workdir: Path, faults: str) -> dict:
    """Environment for a Snakemake run whose training jobs get ``faults`` injected: a ``python``
    first on PATH that starts ``tcbench.job.run`` with the test-only fault hook
    (tests/faultinject.py; the production job path never imports it)."""
    import faultinject

    folder = faultinject.python_wrapper(Path(workdir) / ".fault-python")
    return {"TCBENCH_INJECT_FAULT": faults, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture(scope="session")
def tiny_record(tmp_path_factory) -> dict:
    """A real record of a tiny amp_recipe job on the CPU, written by ``tcbench.job.run``."""
    import json

    from tcbench.job import run

    out = tmp_path_factory.mktemp("tiny") / "r.json"
    spec = {"workload": "amp_recipe", "precision": "fp32", "batch_size": 8,
            "params": {"in_size": 16, "out_size": 16, "num_batches": 2, "epochs": 1,
                       "warmup_steps": 0}}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture
def workflow_copy(tmp_path) -> Path:
    return copy_workflow(tmp_path / "wf")


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """The CPU smoke study, run once per pytest run in a temporary copy; returns its
    result-set folder (results/<run>)."""
    wd = copy_workflow(tmp_path_factory.mktemp("smoke") / "wf")
    proc = snakemake(wd, "--cores", "2", "--configfile", "config/smoke.yaml", "--config",
                     "run=smoke")
    (wd / "snakemake.out").write_text(proc.stdout + proc.stderr)  # what the user saw
    return wd / "results" / "smoke"
