"""Atomic file writes: a temporary file in the target's directory, flushed to disk, then renamed
over the target. A reader sees the old file or the new one, never half of one; a crash leaves a
stray hidden temporary at worst, never a truncated result. Standard library only (the container
bootstrap in ``imagedeps`` uses it before anything else is installed)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def umask() -> int:
    """The process's umask, read without changing it where Linux tells it (/proc), else by
    setting and restoring it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file private (0600); the result gets the mode any new file gets,
        # so that a group sharing the result set can read it
        os.fchmod(fd, 0o666 & ~umask())
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
