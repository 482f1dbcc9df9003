"""The host's part in a step: how fast the CPU that issues the kernels runs, and what disturbed it.

A training step whose GPU waits on the host (a small MLP, a CNN at a small batch) runs at the
speed of the one thread that issues its kernels, and on a shared or virtualised host that speed
drifts over minutes and differs from core to core. Throughput then follows the host, and a
comparison of processes run minutes apart measures the host as much as the precision mode. Two
things follow, and this module provides both:

* **A CPU dispatch probe** (``probe``): ``ops`` calls of ``Tensor.add_(1)`` on a one-element CPU
  tensor, timed with the host's clock, as operations per second. It is what a host-bound
  training thread does all day (Python, then torch's dispatcher, a tiny kernel), so it moves with
  what such a step can issue. It is used to choose the core the training thread runs on
  (``tcbench.host.placement``, a few milliseconds per candidate) and, longer, right before and right
  after every job's timed window (``Window``).
* **What the window shared the host with** (``Window``): the training thread's and the process's
  involuntary context switches (``getrusage``: the scheduler took the CPU away) and the host's
  interrupt and steal time over the window (``/proc/stat``: time the CPU served interrupts, or a
  hypervisor gave the virtual CPU to someone else), for the training thread's CPU and for the
  whole host.

Standard library and torch only; reads ``/proc`` where it exists (Linux) and says ``None``
elsewhere.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

PROBE_OPS = 10_000          # around a timed window: ~0.03-0.05 s on a server core
CORE_PROBE_OPS = 1_000      # per candidate core: a few milliseconds
CORE_PROBE_REPEATS = 3      # the median of these per core: one interrupt does not decide
PROBE_WHAT = ("CPU dispatch probe: {ops} x Tensor.add_(1) on a one-element CPU tensor, timed "
              "with time.perf_counter on the calling thread, in operations per second")
# /proc/stat's columns after the CPU's name, in clock ticks (USER_HZ)
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def probe(ops: int = PROBE_OPS) -> float:
    """Operations per second of the dispatch probe on the calling thread."""
    import torch

    x = torch.zeros(1)
    x.add_(1)   # the first call pays lazy initialisation: not the host's speed
    add = x.add_
    t0 = time.perf_counter()
    for _ in range(ops):
        add(1)
    return ops / (time.perf_counter() - t0)


def describe(ops: int) -> str:
    return PROBE_WHAT.format(ops=f"{ops:,}")


# ------------------------------------------------------------------------------- /proc readings
def _ticks_per_s() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100.0


def read_stat(text: str | None = None) -> dict[str, dict[str, int]] | None:
    """``/proc/stat``'s CPU lines -> {"cpu": {...}, "cpu0": {...}, ...} in ticks; None off Linux."""
    if text is None:
        try:
            text = Path("/proc/stat").read_text()
        except OSError:
            return None
    out = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *values = line.split()
        out[name] = {k: int(v) for k, v in zip(STAT_FIELDS, values)}
    return out


def _switches(who: int) -> dict[str, int]:
    u = resource.getrusage(who)
    return {"involuntary_ctx_switches": int(u.ru_nivcsw), "voluntary_ctx_switches": int(u.ru_nvcsw)}


def _thread_switches() -> dict[str, int] | None:
    who = getattr(resource, "RUSAGE_THREAD", None)   # Linux only
    return _switches(who) if who is not None else None


def _delta(a: dict | None, b: dict | None) -> dict | None:
    if a is None or b is None:
        return None
    return {k: b[k] - a[k] for k in a if k in b}


def _cpu_time(before: dict | None, after: dict | None, name: str) -> dict | None:
    """irq, softirq and steal seconds of one /proc/stat line over the window."""
    if not before or not after or name not in before or name not in after:
        return None
    hz = _ticks_per_s()
    d = {k: (after[name][k] - before[name][k]) / hz for k in ("irq", "softirq", "steal")}
    return {f"{k}_s": v for k, v in d.items()}


class Window:
    """The host's state over a timed window: ``start()`` right before it, ``stop()`` right
    after it (both on the training thread, outside any timed step), ``result()`` for the record
    (key ``host_state``)."""

    def __init__(self, training_cpu: int | None, ops: int = PROBE_OPS):
        self.cpu, self.ops = training_cpu, ops
        self._start = self._stop = None

    def _readings(self) -> dict:
        return {"wall": time.perf_counter(), "thread": _thread_switches(),
                "process": _switches(resource.RUSAGE_SELF), "stat": read_stat()}

    def start(self) -> None:
        # the probe first, then the readings: the window's counts leave both probes out
        ops_per_s = probe(self.ops)
        self._start = self._readings() | {"probe_ops_per_s": ops_per_s}
        self._stop = None

    def stop(self) -> None:
        if self._start is not None and self._stop is None:
            readings = self._readings()
            self._stop = readings | {"probe_ops_per_s": probe(self.ops)}

    def result(self) -> dict | None:
        a, b = self._start, self._stop
        if a is None or b is None:
            return None
        host = _cpu_time(a["stat"], b["stat"], "cpu")
        cpus = len([k for k in (b["stat"] or {}) if k != "cpu"])
        core = _cpu_time(a["stat"], b["stat"], f"cpu{self.cpu}") if self.cpu is not None else None
        return {
            "probe": {"what": describe(self.ops), "ops": self.ops,
                      "before_ops_per_s": a["probe_ops_per_s"],
                      "after_ops_per_s": b["probe_ops_per_s"]},
            # from the end of the first probe to the start of the second: the window itself
            "window_wall_s": b["wall"] - a["wall"],
            "training_thread": _delta(a["thread"], b["thread"]),
            "process": _delta(a["process"], b["process"]),
            "training_cpu": None if core is None else {"cpu": self.cpu, **core},
            "host": None if host is None else {"cpus": cpus, **host},
        }
