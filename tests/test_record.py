import copy
import json

import pytest

from tcbench import record as R


@pytest.fixture
def good(tiny_record):
    return copy.deepcopy(tiny_record)


def test_a_real_record_validates(good):
    R.validate(good)


def test_the_schema_is_a_valid_draft_2020_12_schema():
    import jsonschema

    cls = jsonschema.validators.validator_for(R.schema())
    assert cls is jsonschema.Draft202012Validator
    cls.check_schema(R.schema())   # validate() skips this per record: it is checked here


@pytest.mark.parametrize("mutate,where", [
    (lambda r: r.pop("status"), "status"),
    (lambda r: r.update(status="fine"), "status"),
    (lambda r: r.update(batch_size=0), "batch_size"),
    (lambda r: r["metrics"].update(total_time_s=-1.0), "metrics/total_time_s"),
    (lambda r: r.update(unexpected=1), "unexpected"),
    (lambda r: r.update(status="oom", status_reason=None), "status_reason"),
])
def test_schema_rejects_and_names_the_field(good, mutate, where):
    bad = copy.deepcopy(good)
    mutate(bad)
    with pytest.raises(R.RecordError) as err:
        R.validate(bad, "x.json")
    assert "x.json" in str(err.value)
    assert where.split("/")[0] in str(err.value)


def test_write_is_atomic_and_refuses_invalid_records(tmp_path, good):
    path = tmp_path / "a" / "r.json"
    R.write(good, path)
    assert json.loads(path.read_text()) == good
    before = path.read_text()
    bad = copy.deepcopy(good)
    bad["batch_size"] = -3
    with pytest.raises(R.RecordError):
        R.write(bad, path)
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]


def test_nan_becomes_null(tmp_path, good):
    rec = copy.deepcopy(good)
    rec["metrics"]["final_loss"] = float("nan")
    R.write(rec, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["metrics"]["final_loss"] is None


def test_read_names_a_corrupt_file(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text("{not json")
    with pytest.raises(R.RecordError, match="broken.json"):
        R.read(p)
