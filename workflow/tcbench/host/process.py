"""How this job's process began, and the processes it started (Linux /proc)."""

from __future__ import annotations

import atexit
import os
import signal
import sys
from pathlib import Path

ORIGIN: dict | None = None  # set by tcbench.launch.forkserver in a forked child (see origin())


FRESH_BECAUSE_ENV = "TCBENCH_FRESH_BECAUSE"   # set by tcbench.launch.forkclient when it falls back


def origin() -> dict:
    """``harness.process`` of a record: how this job's process began."""
    if ORIGIN is not None:
        return ORIGIN
    because = os.environ.get(FRESH_BECAUSE_ENV)
    return {"start": "fresh_interpreter"} | ({"because": because} if because else {})


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


def exit_now(code: int) -> None:
    """End the job process once its record is written (fsynced, renamed into place): kill the
    processes it started, run the exit handlers, flush the logs, and skip the interpreter's
    teardown of every imported module, which for torch + torch._dynamo takes a second or more
    and changes nothing on disk.

    The processes are killed rather than shut down because that waits for nothing of value:
    Inductor's exit handler (shutdown_compile_workers) asks its compile-worker sidecar to shut
    down and waits for it, and a sidecar started at the job's first compilation may still be
    importing torch (about 7 s after every compiled job on the H200). DataLoader workers are done
    by now. Killed, each is reaped at once by the handlers that would have waited for it."""
    for pid in descendants():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
