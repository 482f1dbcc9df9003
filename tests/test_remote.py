"""scripts/remote/: the tarball a GPU host gets holds HEAD's code and a manifest that lets the
copy, which has no .git, prove its files are HEAD's; the host-side scripts refuse to start
without --out; the guide names the scripts there are."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import REPO

REMOTE = REPO / "scripts" / "remote"
SCRIPTS = sorted(p.name for p in REMOTE.iterdir() if p.suffix in (".sh", ".py"))
# what a temporary checkout needs for bundle.sh and setup.sh: the manifest's writer and reader
PACKAGE = ("__init__.py", "host/__init__.py", "host/sourcetree.py", "atomic.py", "cli.py")


def git(repo: Path, *args: str) -> str:
    env = os.environ | {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def shell_env(tmp_path: Path) -> dict:
    """This interpreter as python3 first on PATH, temporary files under tmp_path, and git kept
    from finding a repository above it."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    (folder / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (folder / "python3").chmod(0o755)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return os.environ | {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
                         "TMPDIR": str(tmp_path / "tmp"), "GIT_CEILING_DIRECTORIES": str(tmp_path)}


@pytest.fixture
def checkout(tmp_path):
    """A small git checkout with tcbench's manifest code and the remote scripts, one commit."""
    repo = tmp_path / "repo"
    (repo / "workflow" / "tcbench").mkdir(parents=True)
    for name in PACKAGE:
        (repo / "workflow" / "tcbench" / name).parent.mkdir(exist_ok=True)
        shutil.copy2(REPO / "workflow" / "tcbench" / name, repo / "workflow" / "tcbench" / name)
    shutil.copytree(REMOTE, repo / "scripts" / "remote")
    (repo / "Snakefile").write_text("# committed\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    return repo


@pytest.mark.parametrize("name", [n for n in SCRIPTS if n.endswith(".sh")])
def test_every_shell_script_parses(name):
    proc = subprocess.run(["bash", "-n", str(REMOTE / name)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("args", [
    ["study.sh"], ["study.sh", "config/config.yaml", "60"],
    ["study.sh", "--out", "{out}", "config/no-such-study.yaml", "60"],
    ["study.sh", "--out", "{out}", "config/config.yaml", "ten"],
    ["lab/bench/checks.sh", "60", "server"],
    ["lab/bench/checks.sh", "--out", "{out}", "60", "everything"],
    ["plan.sh", "a"], ["plan.sh", "--out", "{out}", "e"], ["bundle.sh"]])
def test_a_host_script_refuses_bad_arguments_before_it_does_anything(args, tmp_path):
    out = tmp_path / "out"
    argv = [a.replace("{out}", str(out)) for a in args]
    script = REPO / argv[0] if "/" in argv[0] else REMOTE / argv[0]  # the lab's from the root
    proc = subprocess.run(["bash", str(script), *argv[1:]], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "usage:" in proc.stderr or "no such config" in proc.stderr
    assert not out.exists()


def test_the_bundle_holds_heads_files_and_a_manifest_that_proves_them(checkout, tmp_path):
    env = shell_env(tmp_path)
    head = git(checkout, "rev-parse", "HEAD")
    (checkout / "Snakefile").write_text("# changed, not committed\n")
    (checkout / "results" / "gpu").mkdir(parents=True)
    (checkout / "results" / "gpu" / "record.json").write_text("{}\n")
    (checkout / ".whl").mkdir()
    (checkout / ".whl" / "x-1-py3-none-any.whl").write_bytes(b"wheel")
    tarball = tmp_path / "t.tgz"
    proc = subprocess.run(["bash", "scripts/remote/bundle.sh", str(tarball), "results/gpu"],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "differs from HEAD" in proc.stderr and "Snakefile" in proc.stderr
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        copy = tmp_path / "copy"
        tar.extractall(copy)
    assert not any(n == ".git" or n.startswith(".git/") for n in names)
    assert {"results/gpu/record.json", ".whl/x-1-py3-none-any.whl", ".tcbench-tree.json"} <= names
    assert (copy / "Snakefile").read_text() == "# committed\n"        # HEAD's, not the tree's
    manifest = json.loads((copy / ".tcbench-tree.json").read_text())
    assert manifest["commit"] == head and "workflow/tcbench/host/sourcetree.py" in manifest["files"]

    # there: no .git; setup.sh names the manifest's commit, and every job proves its files
    shutil.rmtree(copy / ".whl")  # the fake wheel would not install
    probe = ("source scripts/remote/setup.sh && echo \"$TCBENCH_GIT_COMMIT\" && "
             "command -v python && PYTHONPATH=workflow python -c "
             "'from tcbench.host import sourcetree as s; i = s.git_info(); print(i[\"git_dirty\"], i[\"git_source\"])'")
    there = subprocess.run(["bash", "-c", probe], cwd=copy, env=env, capture_output=True,
                           text=True, timeout=120)
    assert there.returncode == 0, there.stderr
    commit, python, info = there.stdout.split("\n")[:3]
    assert commit == head and Path(python).parent.name.startswith("tcbench-bin")
    assert info == "False manifest"
    (copy / "workflow" / "tcbench" / "atomic.py").write_text("# edited on the host\n")
    edited = subprocess.run(["bash", "-c", probe], cwd=copy, env=env, capture_output=True,
                            text=True, timeout=120)
    assert edited.stdout.split("\n")[2] == "True manifest"


def test_the_guide_names_every_script_and_only_those():
    guide = (REMOTE / "README.md").read_text()
    named = set(re.findall(r"scripts/remote/([\w.-]+\.(?:sh|py))", guide))
    table = guide[guide.index("## The scripts"):]
    listed = set(re.findall(r"`([\w-]+\.(?:sh|py))\b", table))
    assert named <= set(SCRIPTS), sorted(named - set(SCRIPTS))
    assert listed == set(SCRIPTS), (sorted(set(SCRIPTS) - listed), sorted(listed - set(SCRIPTS)))


def test_a_parts_targets_name_its_records_decisions_comparisons_and_the_calibration():
    out = subprocess.run([sys.executable, str(REMOTE / "targets.py"), "config/config.yaml",
                          "--only", "amp_recipe,digits,resnet50", "--run", "part"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    assert "results/part/records/amp_recipe/fp32_bs512_r1.json" in out
    assert "results/part/repeats/resnet50/amp-bf16_bs256.json" in out
    # the interleaved experiments' cells adapt no more: their ratios come from the comparisons
    assert not [p for p in out if "/repeats/digits/" in p or "/repeats/amp_recipe/" in p]
    assert {p for p in out if "/interleaved/" in p} == {
        f"results/part/interleaved/{e}_r{k}.json" for e in ("amp_recipe/bs512", "digits/bs64")
        for k in (1, 2, 3)}
    assert "results/part/calibration.json" in out
    assert not [p for p in out if "/mnist_" in p]


@pytest.mark.slow  # about 30 s: setup, the bound, the grace period
def test_a_study_killed_at_its_bound_leaves_no_lock_for_the_next(checkout, tmp_path):
    """A Snakemake that outlives its stop's grace period is killed (exit 137), and the lock it
    left would refuse the next run in that tree: study.sh unlocks it, with the run's own
    arguments, and still packs what was made."""
    env = shell_env(tmp_path)
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "bin" / "snakemake"
    # a run that ignores SIGTERM (as one stopping its jobs may, for longer than the grace)
    fake.write_text("#!/bin/sh\n"
                    f'echo "$*" >> "{calls}"\n'
                    'case " $* " in *" --unlock "*) exit 0 ;; esac\n'
                    "trap '' TERM\nsleep 60\n")
    fake.chmod(0o755)
    (checkout / "config").mkdir()
    (checkout / "config" / "tiny.yaml").write_text("repeats: 1\n")
    proc = subprocess.run(["bash", "scripts/remote/study.sh", "--out", str(tmp_path / "out"),
                           "config/tiny.yaml", "30", "a_target", "--config", "run=x"],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=60)
    assert "snakemake exit 137" in proc.stdout, proc.stdout + proc.stderr
    run, unlock = calls.read_text().splitlines()
    assert run.startswith("a_target --config run=x") and "--unlock" not in run
    assert unlock.startswith("a_target --config run=x") and "--unlock" in unlock
    assert "--configfile config/tiny.yaml" in unlock
    assert (tmp_path / "out" / "results.tgz").exists()


def test_a_study_packs_only_the_files_it_wrote(checkout, tmp_path):
    """The tarball that comes back holds what the run wrote under results/ and logs/, not the
    committed result sets beside it (tens of MB) nor records an earlier run left there."""
    env = shell_env(tmp_path)
    fake = tmp_path / "bin" / "snakemake"
    fake.write_text("#!/bin/sh\n"
                    'case " $* " in *" --unlock "*) exit 0 ;; esac\n'
                    "mkdir -p results/x/records/e logs/x\n"
                    "echo '{}' > results/x/records/e/new_r1.json\necho ran > logs/x/new.log\n")
    fake.chmod(0o755)
    (checkout / "config").mkdir()
    (checkout / "config" / "tiny.yaml").write_text("repeats: 1\n")
    for old in ("results/nvidia-h200/records/e/committed_r1.json", "results/x/records/e/old_r1.json"):
        (checkout / old).parent.mkdir(parents=True, exist_ok=True)
        (checkout / old).write_text("{}")
        os.utime(checkout / old, (1_000_000_000, 1_000_000_000))
    proc = subprocess.run(["bash", "scripts/remote/study.sh", "--out", str(tmp_path / "out"),
                           "config/tiny.yaml", "60", "a_target", "--config", "run=x"],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    assert "snakemake exit 0" in proc.stdout, proc.stdout + proc.stderr
    with tarfile.open(tmp_path / "out" / "results.tgz") as tar:
        names = sorted(tar.getnames())
    assert names == ["logs/x/new.log", "results/x/records/e/new_r1.json"], names
    assert not (tmp_path / "out" / ".started").exists()


def test_a_compile_cache_travels_to_the_next_run_without_tritons_binaries(checkout, tmp_path):
    """CACHE_OUT=1 packs Inductor's part of the compile cache (autotuning timings, graphs),
    not Triton's binaries; over CACHE_MAX_MB, the timings alone; CACHE_IN=FILE unpacks it
    before the next run's Snakemake starts."""
    env = shell_env(tmp_path)
    fake = tmp_path / "bin" / "snakemake"
    cache = "resources/compile-cache/x"
    fake.write_text("#!/bin/sh\n"
                    'case " $* " in *" --unlock "*) exit 0 ;; esac\n'
                    f'[ -f {cache}/inductor/cache/timings ] && echo found > found.txt\n'
                    f"mkdir -p {cache}/inductor/cache {cache}/inductor/fxgraph {cache}/triton\n"
                    f"echo t > {cache}/inductor/cache/timings\n"
                    f"echo g > {cache}/inductor/fxgraph/graph\necho b > {cache}/triton/binary\n")
    fake.chmod(0o755)
    (checkout / "config").mkdir()
    (checkout / "config" / "tiny.yaml").write_text("repeats: 1\n")

    def study(out, **extra):
        proc = subprocess.run(["bash", "scripts/remote/study.sh", "--out", str(out),
                               "config/tiny.yaml", "60", "a_target", "--config", "run=x"],
                              cwd=checkout, env=env | extra, capture_output=True, text=True,
                              timeout=120)
        assert "snakemake exit 0" in proc.stdout, proc.stdout + proc.stderr
        with tarfile.open(out / "compile-cache.tgz") as tar:
            return sorted(n for n in tar.getnames() if not tar.getmember(n).isdir())

    assert study(tmp_path / "a", CACHE_OUT="1") == [f"{cache}/inductor/cache/timings",
                                                    f"{cache}/inductor/fxgraph/graph"]
    assert study(tmp_path / "b", CACHE_OUT="1", CACHE_MAX_MB="0") == \
        [f"{cache}/inductor/cache/timings"]
    # a fresh host: only what travels is there
    shutil.rmtree(checkout / "resources")
    (checkout / "found.txt").unlink()
    study(tmp_path / "c", CACHE_OUT="1", CACHE_IN=str(tmp_path / "b" / "compile-cache.tgz"))
    assert (checkout / "found.txt").read_text() == "found\n"
