"""Fault injection, for the test suite only: tcbench.job.run knows nothing of it.

``TCBENCH_INJECT_FAULT`` holds ``;``-separated entries ``KIND@N[:PATTERN]``: at the N-th forward
pass (from 0) of every job whose ``experiment/cell`` matches the glob ``PATTERN`` (every job
when it is left out), ``oom`` raises an out-of-memory error, ``nan`` / ``inf`` turn the model's
output into NaNs / infinities, and ``stall`` prints ``injected stall ... (pid P)`` to stderr and
sleeps, so that a test can kill the job mid-run. A malformed entry is an error, not ignored.

Three ways in:
- in the test process: ``install(monkeypatch)`` wraps ``tcbench.job.run.Job.build`` so that every
  job's model gets the hook (undone after the test);
- one job: ``python tests/faultinject.py -m tcbench.job.run --spec ... --out ...``;
- a whole Snakemake run: ``python_wrapper(folder)`` writes a ``python`` that does the above for
  ``python -m tcbench.job.run`` and ``python -m tcbench.launch.forkclient`` (as a fresh
  tcbench.job.run: the fork server's modules carry no hook) and is the real interpreter
  otherwise; put the folder first on PATH.
"""

from __future__ import annotations

import os
import sys
import time
from fnmatch import fnmatchcase
from pathlib import Path

FAULT_ENV = "TCBENCH_INJECT_FAULT"
FAULT_KINDS = ("oom", "nan", "inf", "stall")


def parse_faults(text: str, job_id: str) -> list[tuple[str, int]]:
    """The (kind, forward index) pairs of ``text`` that apply to the job ``job_id``."""
    faults = []
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        head, _, pattern = entry.partition(":")
        kind, sep, at = head.partition("@")
        if kind not in FAULT_KINDS or not sep or not at.isdigit():
            raise ValueError(f"{FAULT_ENV}: {entry!r} is not KIND@N[:experiment/cell glob] with "
                             f"KIND one of {', '.join(FAULT_KINDS)}")
        if not pattern or fnmatchcase(job_id, pattern):
            faults.append((kind, int(at)))
    return faults


def fault_hook(job_id: str):
    """A forward hook that injects this job's faults, or None when it has none."""
    import torch

    faults = parse_faults(os.environ.get(FAULT_ENV, ""), job_id)
    if not faults:
        return None
    calls = [0]

    def hook(module, inputs, output):
        if output.is_meta:  # the FLOP count's copy of the model: not a forward pass that runs
            return output
        n = calls[0]
        calls[0] += 1
        for kind, at in faults:
            if n != at:
                continue
            if kind == "oom":
                raise torch.cuda.OutOfMemoryError(f"injected out-of-memory fault at forward {n}")
            if kind in ("nan", "inf"):
                output = output * float(kind)
            if kind == "stall":
                print(f"tcbench.job.run: injected stall at forward {n} (pid {os.getpid()})",
                      file=sys.stderr, flush=True)
                time.sleep(600)  # long enough to be killed; bounded if nobody does
        return output
    return hook


def install(monkeypatch=None) -> None:
    """Every job built from now on (in this process) gets its faults' hook on its model."""
    from tcbench.job import run

    build = run.Job.build

    def build_with_faults(job):
        w = build(job)
        hook = fault_hook(job.id)
        if hook:
            w.model.register_forward_hook(hook)
        return w

    if monkeypatch is not None:
        monkeypatch.setattr(run.Job, "build", build_with_faults)
    else:
        run.Job.build = build_with_faults


WRAPPER = """#!/bin/sh
# python for the fault-injection tests: tcbench.job.run jobs get the fault hook, the rest is python
if [ "$1" = "-m" ] && [ "$2" = "tcbench.job.run" ]; then
    exec {python} {script} "$@"
fi
# a forked job (tcbench.launch.forkclient takes run's arguments) would run the server's unhooked
# modules: it runs here as a fresh, hooked tcbench.job.run instead
if [ "$1" = "-m" ] && [ "$2" = "tcbench.launch.forkclient" ]; then
    shift 2
    exec {python} {script} -m tcbench.job.run "$@"
fi
exec {python} "$@"
"""


def python_wrapper(folder: Path) -> Path:
    """Write ``folder/python`` (see the module doc) and return the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "python"
    exe.write_text(WRAPPER.format(python=sys.executable, script=Path(__file__).resolve()))
    exe.chmod(0o755)
    return folder


def main(argv: list[str]) -> int:
    if argv[:2] != ["-m", "tcbench.job.run"]:
        raise SystemExit("usage: python faultinject.py -m tcbench.job.run ARGS...")
    from tcbench.job import run

    install()
    return run.main(argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
