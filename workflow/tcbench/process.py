"""How this job's process began, and the processes it started (Linux /proc)."""

from __future__ import annotations

import os
from pathlib import Path

ORIGIN: dict | None = None  # set by tcbench.forkserver in a forked child (see origin())


def origin() -> dict:
    """``harness.process`` of a record: how this job's process began."""
    if ORIGIN is not None:
        return ORIGIN
    return {"start": "fresh_interpreter"}


def descendants(pid: int | None = None) -> list[int]:
    """The processes this one started, and theirs (Linux /proc), children first."""
    pid = os.getpid() if pid is None else pid
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = [int(k) for k in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
        for kid in kids:
            found += [kid, *descendants(kid)]
    return found
