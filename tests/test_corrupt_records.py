"""A corrupt or schema-invalid record stops aggregation with a message naming the file, and no
table is written from the records that were fine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import snakemake
from tcbench import aggregate
from tcbench import record as R
from tcbench.job import run

SRC = str(Path(run.__file__).resolve().parents[1])
PARAMS = {"in_size": 16, "out_size": 16, "num_batches": 3, "epochs": 1, "warmup_steps": 1}
CELLS = ("fp32_bs8_r1", "amp-bf16_bs8_r1")


@pytest.fixture(scope="module")
def good_records() -> dict[str, dict]:
    return {cell: run.run_job({"run": "corrupt", "experiment": "tiny", "cell": cell,
                               "workload": "amp_recipe", "precision": cell.split("_")[0],
                               "batch_size": 8, "params": PARAMS}) for cell in CELLS}


def write_records(folder: Path, records: dict[str, dict]) -> list[Path]:
    return [R.write(r, folder / "tiny" / f"{cell}.json") for cell, r in records.items()]


def as_json(mutate):
    def corrupt(path: Path):
        doc = json.loads(path.read_text())
        mutate(doc)
        path.write_text(json.dumps(doc))
    return corrupt


def truncate(path: Path):
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


CORRUPTIONS = {
    # JSON that does not parse
    "truncated": (truncate, "not a readable JSON record"),
    "empty-file": (lambda p: p.write_bytes(b""), "not a readable JSON record"),
    "not-utf8": (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "not a readable JSON record"),
    # JSON that parses but is not a record
    "not-an-object": (lambda p: p.write_text("[1, 2, 3]"), "does not match"),
    "unknown-status": (as_json(lambda d: d.update(status="finished")), "at status"),
    "missing-key": (as_json(lambda d: d.pop("environment")), "does not match"),
    "bad-batch-size": (as_json(lambda d: d.update(batch_size=0)), "at batch_size"),
    "ok-without-metrics": (as_json(lambda d: d.update(metrics=None)), "does not match"),
    "unknown-key": (as_json(lambda d: d.update(extra=1)), "does not match"),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_aggregation_fails_naming_the_file(tmp_path, good_records, kind):
    corrupt, why = CORRUPTIONS[kind]
    paths = write_records(tmp_path / "records", good_records)
    bad = paths[1]
    corrupt(bad)
    out = tmp_path / "tables"
    with pytest.raises(R.RecordError) as err:
        aggregate.aggregate(tmp_path / "records", out, expected=paths)
    assert str(bad) in str(err.value) and why in str(err.value)
    assert not out.exists()  # nothing written from the good half

    # The command line the workflow runs: exit status 2, the file named on stderr.
    proc = subprocess.run([sys.executable, "-m", "tcbench.aggregate", str(tmp_path / "records"),
                           "--out", str(out), "--expect", *map(str, paths)],
                          capture_output=True, text=True, env=os.environ | {"PYTHONPATH": SRC},
                          timeout=300)
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_intact_records_aggregate(tmp_path, good_records):
    """The control: the same records, uncorrupted, make the tables."""
    paths = write_records(tmp_path / "records", good_records)
    aggregate.aggregate(tmp_path / "records", tmp_path / "tables", expected=paths)
    assert (tmp_path / "tables" / "metrics.csv").exists()


def test_a_missing_expected_record_is_named(tmp_path, good_records):
    paths = write_records(tmp_path / "records", good_records)
    paths[0].unlink()
    with pytest.raises(R.RecordError, match="fp32_bs8_r1.json"):
        aggregate.aggregate(tmp_path / "records", tmp_path / "tables", expected=paths)


@pytest.mark.slow
def test_the_workflow_stops_at_a_corrupt_record(workflow_copy, good_records):
    config = {"run": "corrupt", "require_gpu": False, "repeats": 1,
              "calibrate": {"enabled": False},
              "experiments": [{"name": "tiny", "workload": "amp_recipe",
                               "precisions": ["fp32", "amp-bf16"], "batch_sizes": [8],
                               "params": PARAMS}]}
    (workflow_copy / "config" / "corrupt.yaml").write_text(yaml.safe_dump(config))
    records = workflow_copy / "results" / "corrupt" / "records"
    paths = write_records(records, good_records)
    truncate(paths[0])
    proc = snakemake(workflow_copy, "--cores", "1", "--configfile", "config/corrupt.yaml",
                     check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", output.split("Job stats:")[1], re.M))
    assert jobs.get("aggregate") == "1"
    assert "train" not in jobs  # the records were taken as made
    named = "results/corrupt/records/tiny/fp32_bs8_r1.json: not a readable JSON record"
    assert named in (workflow_copy / "logs" / "corrupt" / "aggregate.log").read_text()
    assert named in output  # the profile's show-failed-logs puts it in front of the user
    assert not (workflow_copy / "results" / "corrupt" / "metrics.csv").exists()
