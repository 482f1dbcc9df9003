"""The smoke study end to end, in a temporary copy of the workflow (CPU only)."""

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, copy_workflow, smoke_jobs, snakemake
from tcbench import record as R
from tcbench import vocabulary as V
from tcbench.reports.figures import KINDS

def test_smoke_study_writes_valid_records_tables_and_figures(smoke_run):
    records = sorted((smoke_run / "records").rglob("*.json"))
    assert len(records) == smoke_jobs()
    statuses = {}
    for path in records:
        rec = R.read(path)  # validates against workflow/schemas/record.schema.json
        statuses[(rec["experiment"], rec["precision"])] = rec["status"]
        assert rec["run"] == "smoke"
        # the workflow tried each model's step when it made the jobs; no job repeats it
        assert rec["status"] == "unsupported" or rec["harness"]["trial_step"] == "workflow"
    assert statuses[("amp_recipe", "tf32")] == "unsupported"
    assert statuses[("amp_recipe", "fp8-rowwise")] == "unsupported"
    assert statuses[("amp_recipe", "fp32")] == "ok" and statuses[("digits", "amp-bf16")] == "ok"
    metrics = pd.read_csv(smoke_run / "metrics.csv")
    assert sorted(metrics["record"].map(lambda p: Path(p).name)) == sorted(p.name for p in records)
    summary = pd.read_csv(smoke_run / "summary.csv")
    cells = metrics.assign(cell=metrics["cell"].str.replace(r"_r\d+$", "", regex=True))
    assert len(summary) == len(cells[["experiment", "cell"]].drop_duplicates())  # one per cell
    assert summary["repeats"].sum() == len(records)
    assert (smoke_run / "speedup.md").read_text().startswith("## Speedup over each cell's baseline")
    assert (smoke_run / "best.md").read_text().startswith("## Fastest configuration")
    assert json.loads((smoke_run / "calibration.json").read_text())["modes"]
    for exp in ("amp_recipe", "mnist_seed", "digits", "models", "own_model"):
        for kind in KINDS:
            for ext in ("pdf", "png"):
                figure = smoke_run / "figures" / f"{exp}_{kind}.{ext}"
                # a CPU measures no memory and profiles no kernel: no figure of them
                assert figure.stat().st_size > 1000 if kind not in V.GPU_ONLY_FIGURES \
                    else not figure.exists()


def test_smoke_records_carry_the_seed_loader_and_data(smoke_run):
    rec = json.loads((smoke_run / "records" / "mnist_seed" / "fp32_bs128_r1.json").read_text())
    assert rec["data"]["data"] == "mnist-format-random" and rec["data"]["loader"] == "dataloader"
    assert rec["params"]["num_workers"] == 2 and rec["params"]["sync_loss_every_step"] is True


def test_smoke_records_name_the_model(smoke_run):
    """A torchvision model by name and a model in a user's file, in the smoke study."""
    by_name = R.read(smoke_run / "records" / "models" / "fp32_bs2_mobilenet_v3_small_r1.json")
    own = R.read(smoke_run / "records" / "own_model" / "fp32_bs2_r1.json")
    assert by_name["status"] == own["status"] == "ok"
    assert by_name["model"]["name"] == "mobilenet_v3_small"
    assert by_name["model"]["source"] == "torchvision" and by_name["model"]["parameters"] > 10**6
    assert own["model"]["source"] == "custom" and own["model"]["input_shape"] == [3, 32, 32]


def test_lint_is_clean():
    proc = snakemake(REPO, "--lint", "--configfile", "config/smoke.yaml", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr


def test_gpu_config_without_gpu_stops_before_any_job(tmp_path):
    """A dry run (and a report) needs no GPU: it shows the plan with a note; a real run stops
    before its first job and points to the smoke config."""
    import shutil
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi")
    wd = copy_workflow(tmp_path / "wf")
    dry = snakemake(wd, "-n")
    assert "config/smoke.yaml" in dry.stdout + dry.stderr
    proc = snakemake(wd, "--cores", "1", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "require_gpu: true" in out and "--configfile config/smoke.yaml" in out
    assert not (wd / "results").exists() and not (wd / "logs").exists()


TINY = {"require_gpu": True, "run": "prov", "repeats": 1, "calibrate": {"enabled": False},
        "experiments": [{"name": "tiny", "workload": "amp_recipe", "precisions": ["fp32"],
                         "batch_sizes": [8],
                         "params": {"in_size": 16, "out_size": 16, "num_batches": 2,
                                    "epochs": 1, "warmup_steps": 1}}]}


def committed_copy(tmp_path) -> Path:
    """A workflow copy that is a git checkout of its own, clean."""
    import subprocess

    wd = copy_workflow(tmp_path / "wf")
    (wd / ".gitignore").write_text((REPO / ".gitignore").read_text())
    (wd / "config" / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "study"]):
        subprocess.run(["git", "-C", str(wd), "-c", "user.name=t", "-c", "user.email=t@t",
                        *args], check=True, capture_output=True)
    return wd


def test_a_gpu_study_on_a_dirty_tree_is_refused_unless_allowed(tmp_path):
    from test_gpus import fake_nvidia_smi

    wd = committed_copy(tmp_path)
    env = {"PATH": f"{fake_nvidia_smi(tmp_path / 'bin')}:{os.environ['PATH']}",
           "TCBENCH_GPU_LOCK_DIR": str(tmp_path / "locks")}
    (wd / "workflow/tcbench/vocabulary.py").write_text(
        (wd / "workflow/tcbench/vocabulary.py").read_text() + "# tried something\n")
    proc = snakemake(wd, "--cores", "1", "--configfile", "config/tiny.yaml", env=env,
                     check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "workflow/tcbench/vocabulary.py" in out and "allow_dirty" in out
    assert not (wd / "results").exists()

    snakemake(wd, "--cores", "1", "--configfile", "config/tiny.yaml", "--config",
              "allow_dirty=True", env=env)
    rec = R.read(wd / "results/prov/records/tiny/fp32_bs8_r1.json")["environment"]
    assert rec["allow_dirty"] is True and rec["git_dirty"] is True
    assert rec["git_dirty_files"] == ["workflow/tcbench/vocabulary.py"]
    assert rec["git_source"] == "git" and rec["execution"] == "native"


def test_a_clean_tree_runs_and_says_so(tmp_path):
    from test_gpus import fake_nvidia_smi

    wd = committed_copy(tmp_path)
    env = {"PATH": f"{fake_nvidia_smi(tmp_path / 'bin')}:{os.environ['PATH']}",
           "TCBENCH_GPU_LOCK_DIR": str(tmp_path / "locks")}
    snakemake(wd, "--cores", "1", "--configfile", "config/tiny.yaml", env=env)
    rec = R.read(wd / "results/prov/records/tiny/fp32_bs8_r1.json")["environment"]
    assert (rec["git_dirty"], rec["git_dirty_files"], rec["allow_dirty"]) == (False, [], False)


def test_the_run_ends_naming_the_results_and_their_bottom_line(smoke_run):
    out = (smoke_run.parents[1] / "snakemake.out").read_text()
    tail = out[out.rindex("Result set:"):]
    verdict = (smoke_run / "summary.md").read_text()
    bottom = verdict[verdict.index("**Bottom line.**") + len("**Bottom line.**"):]
    bottom = bottom.split("\n\n")[0].split()
    assert "Result set: results/smoke/" in tail
    assert "Verdict:    results/smoke/summary.md" in tail
    assert " ".join(bottom[:8]).replace("**", "") in " ".join(tail.split())
    assert "Figures:    results/smoke/figures/" in tail
    report = re.search(r"Report: +(.+)", tail).group(1)
    assert report == "snakemake --report report.html --configfile config/smoke.yaml " \
                     "--config run=smoke"
    assert len(tail.splitlines()) < 15  # the last lines, not a wall of text


def test_the_terminal_shows_one_line_per_job_not_commands(smoke_run):
    out = (smoke_run.parents[1] / "snakemake.out").read_text()
    assert "--spec" not in out and "PYTHONPATH" not in out  # no shell commands
    assert "train amp_recipe/fp32_bs64_r1 (log: logs/smoke/train/amp_recipe/" in out
    assert max(map(len, out.splitlines())) < 300  # no line listing every input
    assert "100%) done" in out  # progress stays visible


def test_results_are_readable_by_the_group(smoke_run):
    """Written with the mode any new file gets (0644 under the usual umask 022), not 0600."""
    import stat

    from tcbench import atomic

    expect = 0o666 & ~atomic.umask()
    for path in [*smoke_run.glob("tables/*"), *smoke_run.glob("records/*/*.json"),
                 smoke_run / "summary.md", smoke_run / "metrics.csv"]:
        assert stat.S_IMODE(path.stat().st_mode) == expect, path


def test_aggregate_takes_every_record_of_the_set_by_name(tmp_path):
    """Another study's records in the same result set (config/fastest.yaml's beside
    config/config.yaml's) are inputs of aggregate, named on its command line; never jobs."""
    wd = copy_workflow(tmp_path / "wf")
    (wd / "config" / "tiny.yaml").write_text(yaml.safe_dump(TINY | {"require_gpu": False}))
    other = wd / "results/prov/records/other_study/fp32_bs4_r1.json"
    other.parent.mkdir(parents=True)
    other.write_text("{}")
    bench = wd / "results/prov/benchmarks/train/other_study/fp32_bs4_r1.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\n1.0\n")
    plan = snakemake(wd, "-n", "--printshellcmds", "--configfile", "config/tiny.yaml").stdout
    aggregate = next(line for line in plan.splitlines() if "tcbench.aggregate" in line)
    assert "--records results/prov/records/tiny/fp32_bs8_r1.json " \
           "results/prov/records/other_study/fp32_bs4_r1.json" in aggregate
    assert "--benchmarks results/prov/benchmarks/train/tiny/fp32_bs8_r1.tsv " \
           "results/prov/benchmarks/train/other_study/fp32_bs4_r1.tsv" in aggregate
    stats = plan.split("Job stats:")[1]
    assert re.search(r"^train\s+1$", stats, re.M)  # this study's one cell, not the other's


def test_bad_config_value_stops_before_any_job(tmp_path):
    wd = copy_workflow(tmp_path / "wf")
    proc = snakemake(wd, "--cores", "1", "--configfile", "config/smoke.yaml",
                     "--config", "repeats=0", check=False)
    assert proc.returncode != 0 and "repeats" in proc.stdout + proc.stderr
    assert not (wd / "results").exists()


def test_another_devices_set_is_read_never_trained_into(tmp_path):
    """Regenerating a committed GPU set's reports on a CPU (run=nvidia-h200) must not train its
    missing or adaptive repeats here: the records it has are the data, and a measuring target
    named on purpose is refused before it starts."""
    wd = copy_workflow(tmp_path / "wf")
    cfg = TINY | {"require_gpu": False, "run": "nvidia-h200", "repeats": 3,
                  "adaptive_repeats": {"enabled": True, "target_halfwidth": 0.0001, "max": 6}}
    (wd / "config" / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    # an initial repeat and one its looks added there (no look here asked for it)
    for repeat in (1, 4):
        have = wd / f"results/nvidia-h200/records/tiny/fp32_bs8_r{repeat}.json"
        have.parent.mkdir(parents=True, exist_ok=True)
        have.write_text("{}")
    plan = snakemake(wd, "-n", "--printshellcmds", "--configfile", "config/tiny.yaml").stdout
    stats = plan.split("Job stats:")[1]
    assert not re.search(r"^(train|repeats_look)\s", stats, re.M)
    aggregate = next(line for line in plan.splitlines() if "tcbench.aggregate" in line)
    assert "fp32_bs8_r1.json" in aggregate and "fp32_bs8_r4.json" in aggregate
    assert "fp32_bs8_r2.json" not in aggregate and "--run nvidia-h200" in aggregate
    refused = snakemake(wd, "results/nvidia-h200/records/tiny/fp32_bs8_r2.json", "--cores", "1",
                        "--configfile", "config/tiny.yaml", check=False)
    assert refused.returncode != 0
    assert "result set of another device" in refused.stdout + refused.stderr



def test_a_comparison_another_study_left_in_the_set_is_an_input_not_a_job(tmp_path):
    """A set holds the interleaved comparisons of every study run into it (the GPU study's
    beside the FP8 study's): a study whose config does not have them reads them and plans no
    job for them; before, building its DAG stopped ("... is not an interleaved comparison of
    this study")."""
    wd = copy_workflow(tmp_path / "wf")
    tiny = TINY | {"require_gpu": False, "run": "mine"}
    tiny["experiments"] = [tiny["experiments"][0] | {"precisions": ["fp32", "tf32"],
                                                      "interleave": {"enabled": True}}]
    (wd / "config" / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    left = wd / "results/mine/interleaved/other_study/bs512_r1.json"
    left.parent.mkdir(parents=True)
    left.write_text("{}")
    plan = snakemake(wd, "-n", "--printshellcmds", "--configfile", "config/tiny.yaml").stdout
    stats = plan.split("Job stats:")[1]
    # this study's own three processes, only
    assert re.search(r"^interleave\s+3\s", stats, re.M), stats
    aggregate = next(line for line in plan.splitlines() if "tcbench.aggregate" in line)
    assert "interleaved/other_study/bs512_r1.json" in aggregate
    assert all(f"interleaved/tiny/bs8_r{k}.json" in aggregate for k in (1, 2, 3))


def test_measuring_jobs_run_round_robin(tmp_path):
    """Every cell's first repeat and every setting's first comparison process run before any
    second one, and so on: a cell's repeats straddle the study's drift instead of running back
    to back (Snakemake's order otherwise follows the DAG, cell by cell)."""
    wd = copy_workflow(tmp_path / "wf")
    tiny = TINY | {"require_gpu": False, "run": "order", "repeats": 2}
    exp = tiny["experiments"][0]
    tiny["experiments"] = [
        exp | {"precisions": ["fp32", "amp-bf16"],
               "interleave": {"enabled": True, "rounds": 3, "segment_s": 0.01}},
        exp | {"name": "other", "batch_sizes": [4, 8]}]
    (wd / "config" / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    targets = [f"results/order/records/{e}/{c}_r{r}.json" for r in (1, 2)
               for e, c in (("tiny", "fp32_bs8"), ("tiny", "amp-bf16_bs8"),
                            ("other", "fp32_bs4"), ("other", "fp32_bs8"))]
    targets += [f"results/order/interleaved/tiny/bs8_r{k}.json" for k in (1, 2, 3)]
    out = snakemake(wd, *reversed(targets), "--cores", "1", "--configfile",
                    "config/tiny.yaml").stderr
    started = re.findall(r"^Job \d+: (?:train|interleave the precisions of) \S+_r(\d+) ",
                         out, re.M)
    assert len(started) == len(targets), out
    assert started == sorted(started), started   # waves 1, 1, ..., 2, 2, ..., 3
