"""The record: one JSON document per training job, validated against its schema, written
atomically (a temporary file in the same directory, fsync, rename), so a crash never leaves a
half-written record where the workflow would take it for a result."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from . import atomic

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "record.schema.json"



class RecordError(ValueError):
    """A record file that cannot be used; the message names the file."""


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def _clean(value):
    """JSON has no NaN or infinity: they become null (the status says what happened)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


@lru_cache(maxsize=1)
def validator():
    """One validator for the process. ``jsonschema.validate`` would check the schema itself
    against its metaschema on every call (a few tenths of a second each time);
    tests/test_record.py checks it once."""
    import jsonschema

    return jsonschema.validators.validator_for(schema())(schema())


def validate(record: dict, source: str = "record") -> None:
    import jsonschema

    error = jsonschema.exceptions.best_match(validator().iter_errors(record))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise RecordError(f"{source}: does not match {SCHEMA_PATH.name} at {where}: "
                          f"{error.message}") from None


def write(record: dict, path: Path) -> Path:
    record = _clean(record)
    validate(record, str(path))
    return atomic.write_json(path, record)


def read(path: Path) -> dict:
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: not a readable JSON record ({exc})") from None
    validate(record, str(path))
    return record
