"""Atomic file writes: a temporary file in the target's directory, flushed to disk, then renamed
over the target. A reader sees the old file or the new one, never half of one; a crash leaves a
stray hidden temporary at worst, never a truncated result. Standard library only (the container
bootstrap in ``imagedeps`` uses it before anything else is installed)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_text(path: Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: Path, obj) -> Path:
    return write_text(path, json.dumps(obj, indent=2) + "\n")
