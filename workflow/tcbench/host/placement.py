"""Where a job runs: its CPU set, the core its training thread runs on, the jobs beside it, the
host and the GPU. Provenance for the record (key ``placement``) and the pinning that keeps host
noise down.

A host-bound training step runs at the speed of the one thread that issues its kernels, so it
measures the host as much as the GPU when that thread may wander across cores, and it measures
the core it lands on: on a virtualised host the cores differ (on one H200 host a recipe step
issued from CPU 0 ran ~1.5x slower than from most others, and interrupt counts did not predict
which core was fast). Every thread of the job is pinned with ``os.sched_setaffinity`` to one
CPU set:

* the CPUs the job may use (its inherited affinity: a SLURM or container allotment stays in
  force), intersected with the CPUs NVML names as close to the job's GPU (its NUMA node), where
  that leaves any;
* with several GPUs on the host, that set split into disjoint, contiguous slices, one per GPU
  (the job takes the slice of its GPU's index), so concurrent jobs never share a core.

Within the set, the training thread (and what it starts itself: autograd's device threads,
CUDA's helper threads) runs on one CPU alone; the helpers move off it: the NVML sampling thread
and DataLoader workers call ``to_helpers()`` as they start (with a one-CPU set they share it).
Which CPU, by the workload parameter ``cpu_placement`` (``vocabulary.CPU_PLACEMENTS``):

* ``pinned`` (the default): the fastest core of the set by a CPU dispatch probe run on each
  candidate as the job starts (``tcbench.host.hoststate.probe``, the median of a few short probes a
  core), never CPU 0 where the set has another (the core the kernel's housekeeping favours);
* ``first``: the set's first CPU, as ``taskset -c N`` puts a plain script;
* ``os``: placement left to the operating system, as a user's own training may run.

While torch.compile works (a compiled job's warm-up steps) the training thread has the whole
set (``widen_for_compile``): Inductor's compile workers and max-autotune's precompile threads
inherit the affinity of the thread that starts them, and on its one CPU they would compile one
kernel at a time. At the warm-up boundary it and the threads it started meanwhile go back to
its CPU, so the timed window runs as an eager job's does.

The record names the set, the training core, why it was chosen and every probe's figure.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from .. import vocabulary as V
from . import gpus, hoststate

PLACEMENTS = V.CPU_PLACEMENTS
_HELPERS: set[int] | None = None   # where helper threads and worker processes go, once pinned


def allowed_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def gpu_local_cpus(gpu_index: int | None) -> set[int] | None:
    """The CPUs NVML names as close to physical GPU ``gpu_index`` (None where unknown)."""
    lib = gpus.nvml()
    if lib is None or gpu_index is None:
        return None
    try:
        h = lib.nvmlDeviceGetHandleByIndex(gpu_index)
        words = lib.nvmlDeviceGetCpuAffinity(h, (os.cpu_count() + 63) // 64)
    except Exception:  # noqa: BLE001 - NVML without affinity support: no preference
        return None
    return {64 * i + b for i, word in enumerate(words) for b in range(64) if word >> b & 1}


def slot_cpus(allowed: set[int], local: set[int] | None, slot: int, slots: int) -> list[int]:
    """The job's CPU set: ``allowed`` (near its GPU where possible), then slice ``slot`` of
    ``slots`` disjoint slices (one per GPU of the host)."""
    near = sorted(allowed & local) if local and allowed & local else sorted(allowed)
    if slots <= 1 or len(near) < slots:
        return near
    share = len(near) // slots
    return near[slot * share:(slot + 1) * share]


def pin_process(cpus: list[int]) -> None:
    """Every thread of this process onto ``cpus`` (threads already running included)."""
    cpu_set = set(cpus)
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpu_set)
        except OSError:  # a thread that just ended, or one the kernel will not move
            continue


def to_helpers(_worker_id: int | None = None) -> None:
    """Move the calling thread (or DataLoader worker process: a ``worker_init_fn``) onto the
    helper CPUs, off the training thread's; nothing when the job is not pinned."""
    if _HELPERS:
        os.sched_setaffinity(0, _HELPERS)


def held_flocks(locks_text: str) -> dict[int, int]:
    """``/proc/locks`` -> {inode: pid} of the FLOCK locks held (read-only: nothing is claimed)."""
    out = {}
    for line in locks_text.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK":   # waiters' lines read "n: -> FLOCK"
            try:
                out[int(parts[5].rsplit(":", 1)[1])] = int(parts[4])
            except (ValueError, IndexError):
                continue
    return out


def neighbours(directory: Path | None = None, locks_text: str | None = None) -> list[dict]:
    """The tcbench jobs holding other GPUs of this host now (their GPU locks, gpus.py): who ran
    beside this job. Read from /proc/locks, so nothing is claimed, not even for a moment."""
    directory = Path(directory) if directory is not None else gpus.lock_dir()
    if locks_text is None:
        try:
            locks_text = Path("/proc/locks").read_text()
        except OSError:
            return []
    held = held_flocks(locks_text)
    out = []
    for path in sorted(directory.glob("gpu-*.lock")) if directory.exists() else []:
        try:
            pid = held.get(path.stat().st_ino)
        except OSError:
            continue
        if pid is not None and pid != os.getpid():
            out.append({"gpu_uuid": path.stem.removeprefix("gpu-"), "pid": pid,
                        "holder": path.read_text().strip() or None})
    return out


def probe_cores(cpus: list[int], ops: int = hoststate.CORE_PROBE_OPS,
                repeats: int = hoststate.CORE_PROBE_REPEATS, measure=hoststate.probe) -> dict[int, float]:
    """The dispatch probe's operations per second on each CPU of ``cpus`` (the median of
    ``repeats`` probes, the rounds interleaved across the CPUs so that a drift of the host's
    speed while probing hits every CPU alike). Moves the calling thread; the caller pins it
    afterwards."""
    runs: dict[int, list[float]] = {c: [] for c in cpus}
    for _ in range(repeats):
        for c in cpus:
            os.sched_setaffinity(0, {c})
            runs[c].append(measure(ops))
    return {c: sorted(v)[len(v) // 2] for c, v in runs.items()}


def choose_core(cpus: list[int], speeds: dict[int, float] | None) -> tuple[int, str]:
    """(the training thread's CPU, why): the fastest probed CPU of ``cpus``, CPU 0 left out
    where the set has another; the first CPU where nothing was probed."""
    if not speeds:
        return cpus[0], "the set's first CPU (nothing probed)"
    candidates = [c for c in cpus if c in speeds and (c != 0 or len(cpus) == 1)]
    best = max(candidates, key=lambda c: (speeds[c], -c))
    slowest = min(speeds, key=lambda c: speeds[c])
    why = (f"fastest of {len(candidates)} CPU(s) probed: CPU {best} at {speeds[best]:,.0f} ops/s "
           f"(slowest CPU {slowest} at {speeds[slowest]:,.0f})")
    if 0 in cpus and len(cpus) > 1:
        why += "; CPU 0 not a candidate (the set has others)"
    return best, why


def place(mode: str, device: str = "auto", measure=hoststate.probe) -> dict:
    """Pin this job (``mode`` ``pinned`` or ``first``) or leave it (``os``); the record's
    ``placement``.

    A job that trains on the CPU itself (``device`` cpu, or auto on a host without a GPU) keeps
    the whole CPU set for its training thread: torch's intra-op threads, which do its work,
    start from it and inherit its affinity, so one CPU for it would leave the job one core.
    ``measure`` is the probe (a test passes a fake one)."""
    if mode not in PLACEMENTS:
        raise ValueError(f"cpu_placement={mode!r}; choose one of {', '.join(PLACEMENTS)}")
    held = gpus.held()
    found = gpus.discover()
    index = held.gpu.index if held else None
    uuid = held.gpu.uuid if held else os.environ.get("CUDA_VISIBLE_DEVICES") or None
    allowed = allowed_cpus()
    if mode != "os" and not hasattr(os, "sched_setaffinity"):
        raise ValueError(f"cpu_placement={mode} needs os.sched_setaffinity (Linux); "
                         "use cpu_placement: os here")
    core = {"cpu": None, "chosen_by": "os", "reason": "left to the operating system",
            "probe": None}
    if mode == "os":
        cpus = sorted(allowed)
        training = helpers = cpus
    else:
        slot = sorted(g.index for g in found).index(index) if index is not None and found \
            else 0
        cpus = slot_cpus(allowed, gpu_local_cpus(index), slot, max(len(found), 1))
        global _HELPERS
        if device == "cpu" or (device == "auto" and not found):
            pin_process(cpus)
            _HELPERS = set(cpus)
            training = helpers = cpus
            core = {"cpu": None, "chosen_by": "cpu-job", "probe": None,
                    "reason": "a CPU job: its intra-op threads do the work, so the training "
                              "thread keeps the whole set"}
        else:
            speeds = probe_cores(cpus, measure=measure) if mode == "pinned" and len(cpus) > 1 \
                else None
            cpu, why = choose_core(cpus, speeds) if mode == "pinned" else \
                (cpus[0], "the set's first CPU (cpu_placement: first)")
            pin_process(cpus)
            _HELPERS = set(cpus) - {cpu} or set(cpus)
            os.sched_setaffinity(0, {cpu})   # the calling (training) thread only
            training, helpers = [cpu], sorted(_HELPERS)
            core = {"cpu": cpu, "chosen_by": "probe" if speeds else "first", "reason": why,
                    "probe": None if not speeds else {
                        "what": hoststate.describe(hoststate.CORE_PROBE_OPS) + ", the median of "
                                f"{hoststate.CORE_PROBE_REPEATS} a CPU",
                        "ops": hoststate.CORE_PROBE_OPS,
                        "ops_per_s": {str(c): v for c, v in sorted(speeds.items())}}}
    return {"cpu_placement": mode, "cpu_set": cpus, "training_thread_cpus": training,
            "helper_cpus": helpers, "training_core": core, "cpus_allowed": sorted(allowed),
            "host": socket.gethostname(), "gpu_index": index, "gpu_uuid": uuid,
            "gpus_on_host": len(found), "neighbours": neighbours()}


def _thread_ids() -> set[int]:
    return {int(t.name) for t in Path("/proc/self/task").iterdir()}


def widen_for_compile(where: dict):
    """Give the calling (training) thread the job's whole CPU set while torch.compile works;
    returns the call that narrows it back at the warm-up boundary (it may be called again: the
    later calls do nothing), or None where the job is not pinned to one training CPU. Threads
    started meanwhile that still hold the whole set (they inherited it: autograd's device
    threads, the compiler's) go back to the training CPU too; helpers that moved themselves
    (``to_helpers``) stay where they went."""
    cpu = where["training_core"]["cpu"]
    wide = set(where["cpu_set"])
    if cpu is None or len(wide) < 2:
        return None
    before = _thread_ids()
    os.sched_setaffinity(0, wide)
    done = []

    def narrow() -> None:
        if done:
            return
        done.append(True)
        os.sched_setaffinity(0, {cpu})
        for tid in _thread_ids() - before:
            try:
                if os.sched_getaffinity(tid) == wide:
                    os.sched_setaffinity(tid, {cpu})
            except OSError:  # a thread that just ended
                continue

    return narrow


def compile_window(where: dict):
    """(narrow, what the record says of it): the job's CPU set for torch.compile until the
    warm-up boundary, where ``narrow()`` ends it (a no-op where the job is not pinned)."""
    import torch._inductor.config as inductor

    narrow = widen_for_compile(where)
    return narrow or (lambda: None), {
        "cpus": where["cpu_set"] if narrow else where["training_thread_cpus"],
        "compile_threads": inductor.compile_threads,
        "until": "the warm-up boundary" if narrow else "the job's end (not pinned)"}


def release(where: dict) -> None:
    """Give this process back the CPUs it was allowed before ``place`` (for a caller that goes
    on after the job, e.g. a test process running jobs in turn)."""
    global _HELPERS
    if where["cpu_placement"] != "os":
        pin_process(where["cpus_allowed"])
        _HELPERS = None


def device_uuid(device) -> str | None:
    """The CUDA device's UUID as torch sees it (``GPU-...``), None off CUDA."""
    if getattr(device, "type", None) != "cuda":
        return None
    import torch

    uuid = str(torch.cuda.get_device_properties(device).uuid)
    return uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
