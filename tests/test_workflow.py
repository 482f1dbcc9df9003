"""The smoke study end to end, in a temporary copy of the workflow (CPU only)."""

import json

import pytest

from conftest import REPO, copy_workflow, snakemake
from tcbench import record as R
from tcbench.figures import KINDS

pytestmark = pytest.mark.slow


def test_smoke_study_writes_valid_records_tables_and_figures(smoke_run):
    records = sorted((smoke_run / "records").rglob("*.json"))
    assert len(records) == 10   # config/smoke.yaml: 4 + 3 + 2 + 1 jobs
    statuses = {}
    for path in records:
        rec = R.read(path)  # validates against workflow/schemas/record.schema.json
        statuses[(rec["experiment"], rec["precision"])] = rec["status"]
        assert rec["run"] == "smoke"
    assert statuses[("amp_recipe", "tf32")] == "unsupported"
    assert statuses[("amp_recipe", "fp32")] == "ok" and statuses[("digits", "amp-bf16")] == "ok"
    for name in ("metrics.csv", "summary.csv", "speedup.csv", "speedup.md", "calibration.json"):
        assert (smoke_run / name).stat().st_size > 0
    for exp in ("amp_recipe", "mnist_seed", "digits", "resnet50"):
        for kind in KINDS:
            for ext in ("pdf", "png"):
                assert (smoke_run / "figures" / f"{exp}_{kind}.{ext}").stat().st_size > 1000


def test_smoke_records_carry_the_seed_loader_and_data(smoke_run):
    rec = json.loads((smoke_run / "records" / "mnist_seed" / "fp32_bs128_r1.json").read_text())
    assert rec["data"]["data"] == "mnist-format-random" and rec["data"]["loader"] == "dataloader"
    assert rec["params"]["num_workers"] == 2 and rec["params"]["sync_loss_every_step"] is True


def test_lint_is_clean():
    proc = snakemake(REPO, "--lint", "--configfile", "config/smoke.yaml", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr


def test_gpu_config_without_gpu_points_to_the_smoke_config(tmp_path):
    import shutil
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi")
    wd = copy_workflow(tmp_path / "wf")
    proc = snakemake(wd, "-n", check=False)
    assert proc.returncode != 0
    assert "config/smoke.yaml" in proc.stdout + proc.stderr
    assert not (wd / "results").exists()


def test_bad_config_value_stops_before_any_job(tmp_path):
    wd = copy_workflow(tmp_path / "wf")
    proc = snakemake(wd, "--cores", "1", "--configfile", "config/smoke.yaml",
                     "--config", "repeats=0", check=False)
    assert proc.returncode != 0 and "repeats" in proc.stdout + proc.stderr
    assert not (wd / "results").exists()
