"""The smoke study through a real SLURM: `snakemake --profile profiles/slurm` against a one-node
cluster on this machine (Debian's slurm, started by .ci/slurm-up.sh).

Opt-in: it installs Debian packages and starts daemons as root, so it runs only with
TCBENCH_SLURM_TEST=1 (set by .ci/slurm.sh) and is skipped otherwise. Once opted in, anything
that keeps it from running (not root, no packages, a daemon that will not start) fails it.
Every wait is bounded: a stuck cluster fails the test instead of hanging CI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, copy_workflow, snakemake

OPT_IN = "TCBENCH_SLURM_TEST"
CLUSTER_DIR = Path(os.environ.get("TCBENCH_SLURM_DIR", "/tmp/tcbench-slurm"))
UP_TIMEOUT_S = 900       # includes apt-get install on a fresh machine (about a minute usually)
STUDY_TIMEOUT_S = 1800   # the smoke study as batch jobs: about 3 minutes on 2 cores
SUBMITTED = re.compile(r"_slurm_rpc_submit_batch_job: JobId=(\d+)")

pytestmark = [
    pytest.mark.skipif(os.environ.get(OPT_IN) != "1",
                       reason=f"real-SLURM test is opt-in: set {OPT_IN}=1 or run .ci/slurm.sh "
                              "(installs slurm and munge from Debian, starts daemons as root)"),
]


def _sh(*cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def slurm_cluster():
    """The cluster's log directory; started here unless it already runs (left running then)."""
    if os.geteuid() != 0:
        pytest.fail(f"{OPT_IN}=1 but not root: the test cluster needs root to install and start")
    up = _sh("bash", str(REPO / ".ci" / "slurm-up.sh"), str(CLUSTER_DIR), timeout=UP_TIMEOUT_S)
    if up.returncode != 0:
        pytest.fail(f".ci/slurm-up.sh failed ({up.returncode}):\n{up.stdout}\n{up.stderr}")
    started_here = "already up" not in up.stderr
    yield CLUSTER_DIR / "log"
    if started_here:
        _sh("scancel", "--user", "root", timeout=30)
        _sh("bash", str(REPO / ".ci" / "slurm-down.sh"), str(CLUSTER_DIR), timeout=120)


def test_smoke_study_runs_as_slurm_batch_jobs(slurm_cluster, tmp_path):
    ctld_log = slurm_cluster / "slurmctld.log"
    log_start = ctld_log.stat().st_size if ctld_log.exists() else 0
    wd = copy_workflow(tmp_path / "wf")
    # the profile unchanged; the two flags are what a cluster without accounting needs
    proc = snakemake(wd, "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml",
                     "--config", "run=smoke", "--slurm-status-command", "squeue",
                     "--slurm-init-seconds-before-status-checks", "5",
                     timeout=STUDY_TIMEOUT_S, check=False)
    assert proc.returncode == 0, f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"

    from tcbench.launch import config as tcconfig, matrix
    cfg = tcconfig.check(yaml.safe_load((wd / "config" / "smoke.yaml").read_text()))
    jobs = matrix.expand(cfg)
    results = wd / "results" / "smoke"
    paths = [results / "records" / f"{key}.json" for key in jobs] + [results / "calibration.json"]
    # the interleaved comparisons are GPU jobs too, one batch job each
    paths += [results / "interleaved" / f"{key}.json" for key in matrix.comparisons(cfg, jobs)]
    envs = {p.relative_to(results).as_posix(): json.loads(p.read_text())["environment"]
            for p in paths}

    # every GPU job ran in a batch job of its own ...
    ids = {name: env.get("slurm_job_id") for name, env in envs.items()}
    assert all(ids.values()), f"records without a SLURM job id: {ids}"
    assert len(set(ids.values())) == len(ids), f"two records share a SLURM job: {ids}"
    # ... that slurmctld took in through sbatch during this run ...
    submitted = set(SUBMITTED.findall(ctld_log.read_text(errors="replace")[log_start:]))
    assert set(ids.values()) <= submitted, (
        f"job ids not submitted during this run: {set(ids.values()) - submitted}")
    for name, job_id in ids.items():
        # ... asking for one GPU (`gpu: 1` -> --gpus=1), which SLURM granted and named
        show = _sh("scontrol", "show", "job", job_id, timeout=30).stdout
        assert "TresPerJob=gres:gpu:1" in show, f"{name}: job {job_id} did not ask for a GPU"
        assert envs[name]["cuda_visible_devices"] in {"0", "1", "2", "3"}, envs[name]
        # the plugin kept each batch job's log, named after the job id
        rule = "calibrate" if name == "calibration.json" else \
            "interleave" if name.startswith("interleaved/") else "train"
        assert list((wd / ".snakemake" / "slurm_logs" / f"rule_{rule}").rglob(f"{job_id}.log"))

    # aggregation and figures ran where snakemake ran (localrules), not as batch jobs
    slurm_rules = {p.name for p in (wd / ".snakemake" / "slurm_logs").iterdir()}
    assert slurm_rules == {"rule_train", "rule_calibrate", "rule_interleave"}, slurm_rules
    assert (results / "speedup.md").exists()
    assert len(list((results / "figures").glob("*.png"))) > 0
