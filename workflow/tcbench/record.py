"""The record: one JSON document per training job, validated against its schema, written
atomically (a temporary file in the same directory, fsync, rename), so a crash never leaves a
half-written record where the workflow would take it for a result.

An interleaved comparison (``tcbench.job.interleave``) writes a record of its own kind, validated
against ``interleaved.schema.json``; the parts it shares with a job's record (environment,
placement, host state, harness) are the job record's own definitions, filled in when the schema
is loaded, so each is written down once."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from . import atomic

SCHEMA_VERSION = 1
SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"
SCHEMA_PATH = SCHEMA_DIR / "record.schema.json"
RECORD, INTERLEAVED = "record", "interleaved"
SCHEMA_PATHS = {RECORD: SCHEMA_PATH, INTERLEAVED: SCHEMA_DIR / "interleaved.schema.json"}
# the interleaved record's properties that are the job record's, by the same name
SHARED_PROPERTIES = ("environment", "placement", "host_state", "harness")


class RecordError(ValueError):
    """A record file that cannot be used; the message names the file."""


@lru_cache(maxsize=None)
def schema(kind: str = RECORD) -> dict:
    out = json.loads(SCHEMA_PATHS[kind].read_text())
    if kind != RECORD:
        shared = schema(RECORD)["properties"]
        for name in SHARED_PROPERTIES:
            out["properties"][name] = shared[name]
    return out


def _clean(value):
    """JSON has no NaN or infinity: they become null (the status says what happened)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


@lru_cache(maxsize=None)
def validator(kind: str = RECORD):
    """One validator a kind for the process. ``jsonschema.validate`` would check the schema
    itself against its metaschema on every call (a few tenths of a second each time);
    tests/test_record.py checks it once."""
    import jsonschema

    return jsonschema.validators.validator_for(schema(kind))(schema(kind))


def validate(record: dict, source: str = "record", kind: str = RECORD) -> None:
    import jsonschema

    error = jsonschema.exceptions.best_match(validator(kind).iter_errors(record))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise RecordError(f"{source}: does not match {SCHEMA_PATHS[kind].name} at {where}: "
                          f"{error.message}") from None


def write(record: dict, path: Path, kind: str = RECORD) -> Path:
    record = _clean(record)
    validate(record, str(path), kind)
    return atomic.write_json(path, record)


def read(path: Path, kind: str = RECORD) -> dict:
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: not a readable JSON record ({exc})") from None
    validate(record, str(path), kind)
    return record
