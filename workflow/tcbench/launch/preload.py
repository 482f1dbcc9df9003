"""What the fork server imports before it serves, and whether it may then fork: the imports
(``PRELOAD``, then what the study's workloads import, each tried in a child first) and the
state a forked child must not inherit (a second thread, CUDA started, an NVML handle)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from . import forkclient

# what a job imports anyway; torchvision for the workloads that build its models
PRELOAD = ("torch", "torch._dynamo", "torchvision", "tcbench.job.run", "tcbench.job.train",
           "tcbench.measure.core", "tcbench.job.precision", "tcbench.workloads",
           "tcbench.data.loaders", "tcbench.host.environment", "tcbench.record",
           "tcbench.host.gpus", "tcbench.job.memlimit", "tcbench.job.profiling",
           "tcbench.host.placement", "tcbench.host.hoststate", "tcbench.job.interleave")

ARROW_MALLOC = "JE_ARROW_MALLOC_CONF"


def preload() -> list[str]:
    """Imports PRELOAD, then what the study's workloads import (``forkclient.PRELOAD_ENV``)
    where a trial shows that importing it starts no thread (a thread would stop the server
    from forking at all). An optional package that is not installed is left out: the job that
    needs it says how to install it."""
    import importlib

    from .. import workloads

    for name in PRELOAD:
        importlib.import_module(name)
    names = [n for n in os.environ.get(forkclient.PRELOAD_ENV, "").split(",") if n]
    with no_allocator_thread():
        optional, why = threadless(workloads.preload_modules(names))
        if why:
            print(f"tcbench.launch.forkserver: not preloaded: {why}; its jobs import it "
                  f"themselves", file=sys.stderr, flush=True)
        for name in optional:
            importlib.import_module(name)
    return [*PRELOAD, *optional]


@contextlib.contextmanager
def no_allocator_thread():
    """pyarrow, which pandas loads (as transformers' model registry does where scikit-learn is
    installed), starts jemalloc's purging thread as it loads, and a process with a second
    thread must not fork. Arrow's jemalloc reads this variable once, as it starts: without the
    thread it purges freed pages on the thread that frees them. The variable is gone again
    before any job forks (a job's environment is a fresh process's); a user's own is kept."""
    if ARROW_MALLOC in os.environ:
        yield
        return
    os.environ[ARROW_MALLOC] = "background_thread:false"
    try:
        yield
    finally:
        del os.environ[ARROW_MALLOC]


def threadless(modules) -> tuple[list[str], str | None]:
    """The leading modules of ``modules`` whose import, tried in a forked child in order,
    starts no thread and succeeds; and why the rest are left out (None where none is)."""
    import importlib

    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        report = {"ok": [], "why": None}
        for name in modules:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                report["why"] = f"{name} ({exc})"
                break
            if not alone():
                report["why"] = f"{name} (importing it started {', '.join(thread_names())})"
                break
            report["ok"].append(name)
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(child, 0)
    report = json.loads(data or b'{"ok": [], "why": "the trial import died"}')
    return report["ok"], report["why"]


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def alone() -> bool:
    """Whether this process runs one thread, not counting a pool that its library stops itself
    before a fork (pthread_atfork): OpenBLAS, which NumPy and SciPy load, keeps one. One trial
    fork tells such threads from others."""
    if threads() != 1:
        trial = os.fork()
        if trial == 0:
            os._exit(0)
        os.waitpid(trial, 0)
    return threads() == 1


def thread_names() -> list[str]:
    """The running threads' names (/proc comm), to say which library started one."""
    names = []
    for task in Path("/proc/self/task").iterdir():
        try:
            names.append((task / "comm").read_text().strip())
        except OSError:
            continue
    return sorted(names)


def fork_hazards() -> list[str]:
    """What this process holds that a forked child must not inherit."""
    import torch

    from ..host import gpus

    problems = []
    if not alone():
        problems.append(f"{threads()} threads are running ({', '.join(thread_names())})")
    if driver_initialised():
        problems.append("the CUDA driver was initialised (cuInit)")
    if torch.cuda.is_initialized():
        problems.append("torch has initialised CUDA")
    if gpus._NVML not in (None,):
        problems.append("NVML was initialised")
    return problems


CUDA_ERROR_NOT_INITIALIZED = 3


def driver_initialised() -> bool:
    """Whether the CUDA driver has been initialised in this process. Loading libcuda is harmless
    to a fork (an import may load it: Triton's, on a GPU host); cuInit is not. Asked of the
    library already loaded, never loading it: cuDeviceGetCount answers NOT_INITIALIZED before
    cuInit and initialises nothing."""
    import ctypes

    maps = Path("/proc/self/maps").read_text()
    paths = {line.split()[-1] for line in maps.splitlines()
             if "libcuda.so" in line and line.split()[-1].startswith("/")}
    for path in paths:
        count = ctypes.c_int(0)
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != CUDA_ERROR_NOT_INITIALIZED:
            return True
    return False
