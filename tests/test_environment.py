"""Where a record's code version comes from, and how it says where it ran: the commit and a
dirty flag true to the tree (None, never False, without evidence); native or in the
workflow's image, and whether the host is a container itself."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tcbench import atomic
from tcbench.host import environment, sourcetree

pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="needs git")

SHIPPED_VARS = ("TCBENCH_GIT_COMMIT", "TCBENCH_GIT_DIRTY", "TCBENCH_TREE_MANIFEST")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A committed tree shaped like tcbench's: code, a config and a committed result set."""
    for var in SHIPPED_VARS:
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "repo"
    for rel, text in {"workflow/tcbench/job/run.py": "print('run')\n", "Snakefile": "# rules\n",
                      "config/config.yaml": "run: auto\n",
                      "results/gpu/metrics.csv": "a,b\n1,2\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return root


def test_a_clean_checkout_is_clean_with_gits_word(repo):
    info = sourcetree.git_info(repo)
    assert info == {"git_commit": git(repo, "rev-parse", "HEAD"), "git_dirty": False,
                    "git_dirty_files": [], "git_source": "git"}


def test_modified_code_is_dirty_and_named(repo):
    (repo / "workflow/tcbench/job/run.py").write_text("print('changed')\n")
    (repo / "config/config.yaml").unlink()
    info = sourcetree.git_info(repo)
    assert info["git_dirty"] is True
    assert info["git_dirty_files"] == ["config/config.yaml", "workflow/tcbench/job/run.py"]


def test_results_written_by_the_study_are_not_code(repo):
    (repo / "results/gpu/metrics.csv").write_text("rewritten by aggregate\n")
    (repo / "results/gpu/records").mkdir()
    (repo / "results/gpu/records/new.json").write_text("{}")
    (repo / "report.html").write_text("<html>")  # untracked, outside the code
    assert sourcetree.git_info(repo)["git_dirty"] is False


def test_a_new_module_the_package_could_import_is_dirty(repo):
    (repo / "workflow/tcbench/extra.py").write_text("X = 1\n")
    assert sourcetree.git_info(repo)["git_dirty_files"] == ["workflow/tcbench/extra.py"]


def test_one_git_call_per_record(repo, monkeypatch):
    calls = []
    real = sourcetree.run_quiet
    monkeypatch.setattr(sourcetree, "run_quiet", lambda cmd, **kw: calls.append(cmd) or real(cmd))
    sourcetree.git_info(repo)
    assert len(calls) == 1 and calls[0][:4] == ["git", "-C", str(repo), "status"]


def stale_copy(repo: Path) -> tuple[Path, str]:
    """What a remote machine gets: the tree at a newer commit, with the .git of an old one."""
    old = git(repo, "rev-parse", "HEAD")
    (repo / "workflow/tcbench/job/run.py").write_text("print('newer')\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "newer")
    new = git(repo, "rev-parse", "HEAD")
    atomic.write_json(repo / sourcetree.MANIFEST, sourcetree.tree_manifest(repo))
    git(repo, "update-ref", "HEAD", old)  # the copy's .git still says the old commit
    git(repo, "reset", "-q")
    return repo, new


def test_shipped_commit_wins_over_a_stale_git_but_clean_needs_evidence(repo, monkeypatch):
    copy, new = stale_copy(repo)
    (copy / sourcetree.MANIFEST).unlink()
    monkeypatch.setenv("TCBENCH_GIT_COMMIT", new)
    monkeypatch.setenv("TCBENCH_GIT_DIRTY", "0")  # a claim, not evidence
    assert sourcetree.git_info(copy) == {"git_commit": new, "git_dirty": None,
                                          "git_dirty_files": None,
                                          "git_source": "TCBENCH_GIT_COMMIT"}
    monkeypatch.setenv("TCBENCH_GIT_DIRTY", "1")  # dirty needs no proof
    assert sourcetree.git_info(copy)["git_dirty"] is True


def test_a_manifest_proves_the_copy_is_the_shipped_commit(repo, monkeypatch):
    copy, new = stale_copy(repo)
    monkeypatch.setenv("TCBENCH_GIT_COMMIT", new)
    assert sourcetree.git_info(copy) == {"git_commit": new, "git_dirty": False,
                                          "git_dirty_files": [], "git_source": "manifest"}
    (copy / "workflow/tcbench/job/run.py").write_text("print('edited on the device')\n")
    (copy / "workflow/tcbench/extra.py").write_text("X = 1\n")
    info = sourcetree.git_info(copy)
    assert info["git_dirty"] is True and info["git_source"] == "manifest"
    assert info["git_dirty_files"] == ["workflow/tcbench/extra.py", "workflow/tcbench/job/run.py"]


def test_a_manifest_of_another_commit_proves_nothing(repo, monkeypatch):
    copy, new = stale_copy(repo)
    monkeypatch.setenv("TCBENCH_GIT_COMMIT", "f" * 40)
    assert sourcetree.git_info(copy)["git_dirty"] is None


def test_without_git_the_commit_is_read_and_cleanliness_unknown(repo, monkeypatch):
    monkeypatch.setattr(sourcetree, "_git_status", lambda _repo: None)
    info = sourcetree.git_info(repo)
    assert info == {"git_commit": git(repo, "rev-parse", "HEAD"), "git_dirty": None,
                    "git_dirty_files": None, "git_source": "git-files"}


def test_the_manifest_command(repo, monkeypatch, capsys):
    monkeypatch.setattr(sourcetree, "REPO", repo)
    out = repo / sourcetree.MANIFEST
    assert sourcetree.main(["manifest", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    head = git(repo, "rev-parse", "HEAD")
    assert doc["commit"] == head and doc["dirty_when_written"] == []
    assert set(doc["files"]) == {"workflow/tcbench/job/run.py", "Snakefile", "config/config.yaml"}
    assert doc["files"]["Snakefile"] == git(repo, "rev-parse", "HEAD:Snakefile")
    assert f"export TCBENCH_GIT_COMMIT={head}" in capsys.readouterr().out


def test_clean_check_names_the_files_and_the_way_out(repo):
    assert sourcetree.check_clean(False, repo) is None
    (repo / "Snakefile").write_text("# edited\n")
    why = sourcetree.check_clean(False, repo)
    assert "Snakefile" in why and "allow_dirty" in why and git(repo, "rev-parse", "HEAD")[:12] in why
    assert sourcetree.check_clean(True, repo) is None


def test_unknown_cleanliness_is_refused_too(repo, monkeypatch):
    monkeypatch.setattr(sourcetree, "_git_status", lambda _repo: None)
    assert "cannot be told" in sourcetree.check_clean(False, repo)


# --- where it ran ---------------------------------------------------------------------------

@pytest.fixture
def bare_host(monkeypatch, tmp_path):
    """A host with no container marker at all."""
    monkeypatch.setattr(environment, "CONTAINER_MARKERS", (str(tmp_path / "none"),))
    monkeypatch.setattr(environment, "CGROUP", tmp_path / "cgroup")
    (tmp_path / "cgroup").write_text("0::/init.scope\n")
    for var in ("container", "APPTAINER_CONTAINER", "SINGULARITY_CONTAINER", "APPTAINER_NAME",
                "SINGULARITY_NAME", "KUBERNETES_SERVICE_HOST", "TCBENCH_IMAGE"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_a_bare_host_is_native_and_not_containerised(bare_host):
    info = environment.container_info()
    assert (info["execution"], info["host_containerised"], info["container_image"]) == \
        ("native", False, None)


@pytest.mark.parametrize("marker", ["dockerenv", "cgroup", "env"])
def test_a_containerised_host_is_still_native(bare_host, tmp_path, marker):
    if marker == "dockerenv":
        (tmp_path / "dockerenv").touch()
        bare_host.setattr(environment, "CONTAINER_MARKERS", (str(tmp_path / "dockerenv"),))
    elif marker == "cgroup":
        (tmp_path / "cgroup").write_text("0::/kubepods/burstable/pod1/abc\n")
    else:
        bare_host.setenv("container", "podman")
    bare_host.setenv("TCBENCH_IMAGE", "docker://leaked")  # not the workflow's image natively
    info = environment.container_info()
    assert (info["execution"], info["host_containerised"], info["container_image"]) == \
        ("native", True, None)


def test_allow_dirty_reaches_the_record(monkeypatch):
    import torch

    monkeypatch.delenv(environment.ALLOW_DIRTY_ENV, raising=False)
    assert environment.collect(torch.device("cpu"))["allow_dirty"] is False
    monkeypatch.setenv(environment.ALLOW_DIRTY_ENV, "1")
    assert environment.collect(torch.device("cpu"))["allow_dirty"] is True


def test_a_cpu_record_names_no_cuda_runtime():
    import torch

    env = environment.collect(torch.device("cpu"))
    assert env["cuda_runtime_version"] is None
    assert env["torch_cuda_version"] == torch.version.cuda


def test_collect_runs_one_command_on_the_job_path(monkeypatch):
    """Once torch is imported, collecting the environment is file reads and one git call: every
    other subprocess (nvidia-smi, lscpu, ...) on the job path would cost each record its time."""
    import torch

    calls = []
    real = sourcetree.run_quiet
    monkeypatch.setattr(sourcetree, "run_quiet", lambda cmd, **kw: calls.append(cmd) or real(cmd, **kw))
    monkeypatch.setattr(environment, "_run", lambda cmd, **kw: calls.append(cmd) or real(cmd, **kw))
    environment.collect(torch.device("cpu"))
    assert [c[0] for c in calls] == ["git"]