"""The smoke study in a real Apptainer: `snakemake --use-singularity` with the CPU image built
from containers/cpu/ (the design card's command), every job inside the image.

Opt-in: the image and the runtime take minutes to make (.ci/container.sh makes both and runs
this), so it runs only with TCBENCH_APPTAINER_SIF naming the image, with the `apptainer` to use
first on PATH, and is skipped otherwise. Once opted in, anything that keeps the study from
running in the image fails it. tests/test_containers.py covers the same code path on every
machine with a stand-in for Apptainer (tests/fake_apptainer).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import copy_workflow, snakemake

OPT_IN = "TCBENCH_APPTAINER_SIF"
STUDY_TIMEOUT_S = 1500   # the smoke study takes about 2 minutes natively on 2 cores

pytestmark = [
    pytest.mark.skipif(not os.environ.get(OPT_IN),
                       reason=f"real-Apptainer test is opt-in: set {OPT_IN} to a SIF built by "
                              "containers/cpu/build.sh, or run .ci/container.sh"),
]


def in_image(sif: Path, *cmd: str) -> str:
    proc = subprocess.run(["apptainer", "exec", str(sif), *cmd], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"apptainer exec {sif} {' '.join(cmd)}:\n{proc.stderr}"
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def apptainer_run(tmp_path_factory):
    """(workdir, image) of the smoke study run with --use-singularity in the real image."""
    sif = Path(os.environ[OPT_IN]).resolve()
    if not sif.is_file():
        pytest.fail(f"{OPT_IN}={sif}: no such image file (build one: bash containers/cpu/build.sh)")
    if shutil.which("apptainer") is None:
        pytest.fail(f"{OPT_IN} is set but no apptainer is on PATH (bash "
                    "containers/apptainer/install.sh PREFIX; then PATH=PREFIX/bin:$PATH)")
    wd = copy_workflow(tmp_path_factory.mktemp("apptainer") / "wf")
    proc = snakemake(wd, "--cores", "2", "--use-singularity", "--configfile",
                     "config/smoke.yaml", "--config", "run=smoke", f"container={sif}",
                     timeout=STUDY_TIMEOUT_S, check=False)
    (wd / "snakemake.out").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    return wd, sif


@pytest.mark.slow
def test_every_record_was_made_in_the_image(apptainer_run):
    wd, sif = apptainer_run
    from tcbench.launch import config as tcconfig, matrix

    cfg = tcconfig.check(yaml.safe_load((wd / "config" / "smoke.yaml").read_text()))
    jobs = matrix.expand(cfg)
    results = wd / "results" / "smoke"
    paths = [results / "records" / f"{key}.json" for key in jobs] + [results / "calibration.json"]
    paths += [p for key in matrix.comparisons(cfg, jobs)
              for p in sorted((results / "interleaved").glob(f"{key}*.json"))]
    assert len(paths) > len(jobs) + 1, "no interleaved comparison was written"

    # computed here, independently of the workflow's own hashing
    h = hashlib.sha256()
    with sif.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    digest = f"sha256:{h.hexdigest()}"
    runtime = subprocess.run(["apptainer", "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    # the image's torch (Debian's CPU build), never the host's: proof that Python ran inside
    torch_inside = in_image(sif, "python", "-c", "import torch; print(torch.__version__)")
    for path in paths:
        env = json.loads(path.read_text())["environment"]
        where = path.relative_to(results)
        assert env["execution"] == "workflow-image", (where, env["execution"])
        assert env["container_runtime"] == "apptainer", where
        assert env["container_image"] == str(sif), where
        assert env["container_image_digest"] == digest, where
        assert env["container_runtime_version"] == runtime, where
        assert env["torch_version"] == torch_inside, where
        # an image built from containers/cpu/ has every requirement: nothing added at run time
        assert env["container_python_overlay"] == {}, where
        # run from the SIF unpacked once (by its digest), so that jobs can be forked
        assert env["container_image_file"].startswith(str(wd / "resources/image-sandboxes")), where
    servers = set()
    for key in jobs:
        process = json.loads((results / "records" / f"{key}.json").read_text())["harness"]["process"]
        assert process["start"] == "forked", (key, process)
        servers.add(process["server_pid"])
    assert len(servers) == 1, f"one preloaded interpreter served every job, not {servers}"


@pytest.mark.slow
def test_the_image_is_a_cpu_build_with_no_cuda_wheels(apptainer_run):
    _, sif = apptainer_run
    assert in_image(sif, "python", "-c", "import torch; print(torch.version.cuda)") == "None"
    wheels = in_image(sif, "python", "-m", "pip", "list", "--format", "json")
    cuda = [p["name"] for p in json.loads(wheels)
            if p["name"].lower().startswith(("nvidia-cu", "nvidia-nccl", "cuda-"))]
    assert not cuda, f"CUDA wheels in the CPU image: {cuda}"
