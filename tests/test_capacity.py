"""The capacity study: doubling then bisection finds the largest batch that fits, checked against
known answers; end to end on a CPU with the simulated memory budget."""

from __future__ import annotations

import copy
import json
import math
import random

import pandas as pd
import pytest
import yaml

from conftest import REPO, snakemake
from tcbench import atomic
from tcbench import capacity as C
from tcbench.launch import config as tcconfig
from tcbench import record as R
from tcbench.job import run
from tcbench.vocabulary import ConfigError

TINY = {"workload": "amp_recipe", "precisions": ["fp32"], "batch_sizes": [8]}


def checked(capacity: dict | None = None, **top) -> dict:
    """A config through the one validation (schema, defaults), as the workflow has it."""
    cfg = {"experiments": [dict(TINY)], **top}
    if capacity is not None:
        cfg["capacity"] = capacity
    return tcconfig.check(cfg)


def threshold_probe(largest_fitting: int, calls: list | None = None):
    """A device on which exactly the batch sizes up to ``largest_fitting`` fit."""
    def probe(bs):
        if calls is not None:
            calls.append(bs)
        return C.Outcome(bs <= largest_fitting, "ok" if bs <= largest_fitting else "oom")
    return probe


# ------------------------------------------------------------------------------ the search alone
def test_doubling_then_bisection_in_order():
    result = C.search(threshold_probe(72), start=8, maximum=1024, resolution=8)
    assert result["order"] == [8, 16, 32, 64, 128, 96, 80, 72]
    assert (result["status"], result["largest_ok"], result["smallest_oom"]) == ("found", 72, 80)


def test_start_too_large_bisects_down():
    result = C.search(threshold_probe(20), start=64, maximum=1024, resolution=8)
    assert result["order"] == [64, 32, 16, 24]
    assert (result["status"], result["largest_ok"], result["smallest_oom"]) == ("found", 16, 24)


def test_nothing_fits():
    result = C.search(threshold_probe(5), start=16, maximum=64, resolution=8)
    assert (result["status"], result["largest_ok"], result["smallest_oom"]) == ("none", None, 8)


def test_everything_fits_up_to_max():
    result = C.search(threshold_probe(10**9), start=8, maximum=100 * 8, resolution=8)
    assert result["order"] == [8, 16, 32, 64, 128, 256, 512, 800]
    assert (result["status"], result["largest_ok"], result["smallest_oom"]) == ("capped", 800, None)


@pytest.mark.parametrize("seed", range(40))
def test_known_answers(seed):
    rng = random.Random(seed)
    resolution = rng.choice([1, 2, 8, 32])
    start = resolution * rng.randint(1, 16)
    maximum = start * rng.randint(1, 64) // resolution * resolution or start
    truth = rng.randint(0, maximum + 100)
    calls = []
    result = C.search(threshold_probe(truth, calls), start, maximum, resolution)
    expected = min(truth // resolution * resolution, maximum // resolution * resolution)
    if truth >= maximum:
        assert (result["status"], result["largest_ok"]) == ("capped", maximum)
    elif expected == 0:
        assert (result["status"], result["smallest_oom"]) == ("none", resolution)
    else:
        assert result["status"] == "found"
        assert result["largest_ok"] == expected and result["smallest_oom"] == expected + resolution
    assert len(calls) == len(set(calls))  # never probes a size twice
    assert len(calls) <= math.log2(maximum / start) + math.log2(max(maximum, start)) + 3


def test_a_failed_probe_stops_the_search_and_says_where():
    def probe(bs):
        if bs == 128:
            return C.Outcome(None, "error", "the probe was killed by signal 9")
        return C.Outcome(bs <= 100, "ok" if bs <= 100 else "oom")
    result = C.search(probe, 8, 1024, 8)
    assert result["status"] == "error"
    assert result["largest_ok"] == 64 and result["smallest_oom"] is None
    assert "batch size 128" in result["status_reason"] and "signal 9" in result["status_reason"]


def test_unsupported_precision_stops_at_once():
    result = C.search(lambda bs: C.Outcome(None, "unsupported", "TF32 needs a GPU"), 8, 64, 8)
    assert (result["status"], result["order"]) == ("unsupported", [8])


@pytest.mark.parametrize("args", [(12, 64, 8), (8, 60, 8), (0, 64, 8), (128, 64, 8)])
def test_search_refuses_an_off_grid_plan(args):
    with pytest.raises(ValueError):
        C.search(threshold_probe(10), *args)


def test_only_an_oom_record_means_does_not_fit():
    assert C.outcome_of({"status": "ok"}, 0, "").fits is True
    assert C.outcome_of({"status": "diverged", "status_reason": "NaN"}, 0, "").fits is True
    assert C.outcome_of({"status": "oom", "status_reason": "x"}, 0, "").fits is False
    assert C.outcome_of({"status": "unsupported", "status_reason": "x"}, 0, "").fits is None
    crashed = C.outcome_of(None, -9, "...")
    assert crashed.fits is None and "signal 9" in crashed.reason
    assert "status 1" in C.outcome_of(None, 1, "Traceback").reason


# ------------------------------------------------------------------------------ plan
def test_plan_off_by_default():
    assert C.plan(checked(), "r") == {}


def test_the_schema_offers_the_workloads_the_study_can_bound():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    enum = schema["properties"]["capacity"]["properties"]["workloads"]["items"]["enum"]
    assert enum == list(C.WORKLOADS)


def test_plan_takes_the_schemas_defaults():
    plan = C.plan(checked({"enabled": True}), "r")
    assert list(plan) == ["resnet50/fp32", "resnet50/tf32", "resnet50/amp-fp16",
                          "resnet50/amp-bf16"]
    assert {k: plan["resnet50/fp32"][k] for k in ("start", "max", "resolution", "steps")} == \
        {"start": 64, "max": 65536, "resolution": 8, "steps": 2}


def test_plan_one_search_per_workload_and_precision():
    plan = C.plan(checked({"enabled": True, "workloads": ["amp_recipe", "resnet50"],
                           "precisions": ["fp32", "amp-bf16"],
                           "params": {"resnet50": {"image_size": 64}}}), "r")
    assert list(plan) == ["amp_recipe/fp32", "amp_recipe/amp-bf16", "resnet50/fp32",
                          "resnet50/amp-bf16"]
    spec = C.probe_spec(plan["resnet50/fp32"], 512)
    p = run.parse_spec(spec)["params"]
    assert (p["image_size"], p["steps"], p["warmup_steps"], p["distinct_batches"],
            p["profile_steps"]) == (64, 2, 1, 1, 0)
    assert spec["experiment"] == "capacity" and spec["cell"] == "resnet50_fp32_bs512"


def test_plan_rejects_a_bad_workload_parameter():
    with pytest.raises(ConfigError, match=r"capacity.params.resnet50: .*image_sise=64"):
        C.plan(checked({"enabled": True, "params": {"resnet50": {"image_sise": 64}}}), "r")


# ------------------------------------------------------------------------------ result and report
def fake_doc(workload, precision, status, lo, hi, peak=None, reason=None):
    return {"schema": C.RESULT_SCHEMA, "run": "r", "workload": workload, "precision": precision,
            "start": 64, "max": 4096, "resolution": 64, "steps": 2, "memory_limit_bytes": None,
            "params": {}, "status": status, "status_reason": reason, "largest_ok": lo,
            "smallest_oom": hi, "peak_memory_bytes": peak,
            "peak_memory_source": "torch.cuda.max_memory_allocated" if peak else None,
            "throughput_samples_per_s": None, "probes": [{"status": "ok"}, {"status": "oom"}],
            "device_name": "NVIDIA H200", "gpu_memory_total_bytes": 150 * 10**9}


def test_report_table_markdown_and_figure(tmp_path):
    docs = [fake_doc("resnet50", "fp32", "found", 1024, 1088, 100 * 2**30),
            fake_doc("resnet50", "tf32", "error", 512, None, 50 * 2**30,
                     "batch size 1024: the probe exited with status 1"),
            fake_doc("resnet50", "amp-fp16", "capped", 4096, None, 120 * 2**30),
            fake_doc("resnet50", "amp-bf16", "unsupported", None, None, None,
                     "batch size 64: bfloat16 needs compute capability >= 8.0")]
    paths = []
    for d in docs:
        paths.append(tmp_path / f"{d['precision']}.json")
        atomic.write_json(paths[-1], d)
    C.report(paths, tmp_path, tmp_path / "figures")
    df = pd.read_csv(tmp_path / "capacity.csv").set_index("precision")
    assert df.loc["amp-fp16", "capacity_vs_fp32"] == 4.0
    assert df.loc["fp32", "bytes_per_sample"] == 100 * 2**30 / 1024
    assert pd.isna(df.loc["amp-bf16", "largest_batch_size"])
    md = (tmp_path / "capacity.md").read_text()
    assert "NVIDIA H200" in md and "≥ 4,096" in md and "| 1,088 |" in md
    assert "resnet50 amp-bf16 (unsupported): batch size 64: bfloat16 needs" in md
    assert (tmp_path / "figures" / "capacity.pdf").stat().st_size > 0
    assert (tmp_path / "figures" / "capacity.png").stat().st_size > 0



def test_the_committed_csv_reads_back_into_the_table_it_was_written_with(tmp_path):
    """The generated docs render capacity.md's table from capacity.csv: read back, the batch
    sizes are whole numbers again (a CSV reads a column with gaps as floats: "1024.0")."""
    from tcbench.capacity.report import markdown, read

    docs = [fake_doc("resnet50", "fp32", "found", 1024, 1088, 100 * 2**30),
            fake_doc("resnet50", "amp-bf16", "unsupported", None, None, None,
                     "batch size 64: bfloat16 needs compute capability >= 8.0")]
    paths = []
    for d in docs:
        paths.append(tmp_path / f"{d['precision']}.json")
        atomic.write_json(paths[-1], d)
    C.report(paths, tmp_path, tmp_path / "figures")
    md = markdown(read(tmp_path / "capacity.csv"))
    assert md == (tmp_path / "capacity.md").read_text()
    assert "| 1,024 | 1,088 |" in md and "1024.0" not in md
    (tmp_path / "old.csv").write_text("workload,precision\nresnet50,fp32\n")
    with pytest.raises(ValueError, match=r"old\.csv: no column largest_batch_size.*snakemake "
                                         r"capacity"):
        read(tmp_path / "old.csv")

def test_figure_labels_the_searches_without_a_number(tmp_path, monkeypatch):
    from tcbench.render import plot as F

    docs = [fake_doc("resnet50", "fp32", "found", 1024, 1088),
            fake_doc("resnet50", "tf32", "capped", 4096, None),
            fake_doc("resnet50", "amp-bf16", "unsupported", None, None)]
    texts, save = [], F.save

    def keep(fig, *args, **kw):  # read the labels before the figure is closed
        texts.extend(t.get_text() for ax in fig.axes for t in ax.texts)
        return save(fig, *args, **kw)
    monkeypatch.setattr(F, "save", keep)
    C.figure(C.table(docs), tmp_path)
    assert [t.strip() for t in texts] == ["1,024", "≥4,096\n(capped)", "unsupported"]


def test_report_refuses_a_file_that_is_not_a_result(tmp_path):
    bad = tmp_path / "fp32.json"
    bad.write_text('{"status": "found"}')
    with pytest.raises(ValueError, match=str(bad)):
        C.report([bad], tmp_path, tmp_path / "figures")


def test_run_search_writes_its_result(tmp_path):
    s = C.plan(checked({"enabled": True, "workloads": ["amp_recipe"], "precisions": ["fp32"],
                        "start": 8, "max": 64}), "r")["amp_recipe/fp32"]

    class Fake:
        records, log = {}, []

        def __call__(self, bs):
            self.log.append({"batch_size": bs})
            return threshold_probe(40)(bs)
    out = tmp_path / "capacity" / "amp_recipe" / "fp32.json"
    (out.with_suffix("") / "bs999.json").parent.mkdir(parents=True)
    (out.with_suffix("") / "bs999.json").write_text("stale")
    doc = C.run_search(s, out, probe=Fake())
    assert json.loads(out.read_text()) == doc
    assert (doc["status"], doc["largest_ok"], doc["smallest_oom"]) == ("found", 40, 48)
    assert not (out.with_suffix("") / "bs999.json").exists()  # a rerun starts clean


# ------------------------------------------------------------------------------ through the workflow
LIMIT = 200_000
PARAMS = {"in_size": 64, "out_size": 64, "num_layers": 3}
CONFIG = {
    "run": "cap", "require_gpu": False, "repeats": 1, "calibrate": {"enabled": False},
    "experiments": [{"name": "tiny", "workload": "amp_recipe", "precisions": ["fp32"],
                     "batch_sizes": [8], "params": {"num_batches": 2, "epochs": 1}}],
    "capacity": {"enabled": True, "workloads": ["amp_recipe"], "precisions": ["fp32", "amp-bf16"],
                 "start": 64, "max": 128, "resolution": 16, "steps": 1,
                 "memory_limit_bytes": LIMIT, "params": {"amp_recipe": PARAMS}},
}


def simulated_peak(precision: str, bs: int) -> int:
    """The simulated memory of one probe, measured directly (no search): the known answer."""
    s = C.plan(tcconfig.check(copy.deepcopy(CONFIG)), "cap")[f"amp_recipe/{precision}"]
    spec = C.probe_spec(s, bs) | {"memory_limit_bytes": 10**12}
    return run.run_job(spec)["metrics"]["simulated_peak_bytes"]


@pytest.mark.slow
def test_capacity_study_end_to_end(workflow_copy):
    (workflow_copy / "config" / "cap.yaml").write_text(yaml.safe_dump(CONFIG))
    snakemake(workflow_copy, "capacity", "--cores", "2", "--configfile", "config/cap.yaml")
    res = workflow_copy / "results" / "cap"
    table = pd.read_csv(res / "capacity.csv").set_index("precision")
    for precision in ("fp32", "amp-bf16"):
        row = table.loc[precision]
        assert row["status"] == "found"
        largest, first_oom = int(row["largest_batch_size"]), int(row["smallest_oom_batch_size"])
        assert first_oom == largest + 16
        # The known answer: the largest size fits the budget, the next one on the grid does not.
        assert simulated_peak(precision, largest) <= LIMIT < simulated_peak(precision, first_oom)
        assert row["peak_memory_source"] == "simulated"
        assert row["peak_memory_bytes"] == simulated_peak(precision, largest)
        # Every probe left its record; the out-of-memory ones say so, with the limit.
        doc = json.loads((res / "capacity" / "amp_recipe" / f"{precision}.json").read_text())
        assert [p["batch_size"] for p in doc["probes"]][:3] == [64, 128, 96]  # double, bisect
        for p in doc["probes"]:
            r = R.read(res / "capacity" / "amp_recipe" / precision / p["record"])
            assert r["batch_size"] == p["batch_size"] and r["status"] == p["status"]
            if r["status"] == "oom":
                assert r["error"]["memory_limit_bytes"] == LIMIT
                assert r["error"]["memory_limit_kind"] == "simulated-saved-tensors"
    assert table.loc["amp-bf16", "capacity_vs_fp32"] == pytest.approx(
        table.loc["amp-bf16", "largest_batch_size"] / table.loc["fp32", "largest_batch_size"])
    assert "| amp_recipe | fp32 | found |" in (res / "capacity.md").read_text()
    assert (res / "figures" / "capacity.pdf").exists() and (res / "figures" / "capacity.png").exists()
    # The main study was not run: `snakemake capacity` is the capacity study only.
    assert not (res / "records").exists()
