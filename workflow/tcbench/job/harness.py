"""The job's own bookkeeping outside its timed steps: where its wall time went (phases, the CUDA
context's start one of them), how old its process is, and torch.compile's on-disk cache (where it
is, whether the job hit it)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from ..host.process import origin
from ..vocabulary import COMPILE_CACHE_COUNTERS, compile_cache_outcome


def process_age_s() -> float | None:
    """Seconds since this process started (Linux /proc), None where that cannot be read."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class Phases:
    """Where a job's time goes outside its timed steps: named spans, each from the previous mark
    to this one (the harness overhead, split; names in vocabulary.HARNESS_PHASES). Host wall
    clock; cheap enough to leave on."""

    def __init__(self, started_s: float | None = None):
        self.started_s = started_s  # process start to the first mark's origin
        self.t = time.perf_counter()
        self.spans: dict[str, float] = {}
        # where the model's trial step on the meta device ran: "job" (in parameter_check) or
        # "workflow" (when the workflow made the job, on the same parameters; not repeated)
        self.trial_step: str | None = None

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.spans[name] = self.spans.get(name, 0.0) + now - self.t
        self.t = now

    def result(self) -> dict:
        return {"process": origin(), "process_start_to_main_s": self.started_s,
                "phases_s": {k: round(v, 6) for k, v in self.spans.items()}} | (
                    {"trial_step": self.trial_step} if self.trial_step else {})


# ------------------------------------------------------------------------------------ compile cache
def use_compile_cache(directory: Path | None, environ=os.environ) -> None:
    """Point torch.compile's on-disk caches at ``directory``; before torch is imported."""
    if directory is None:
        return
    directory = Path(directory).resolve()
    environ["TORCHINDUCTOR_CACHE_DIR"] = str(directory / "inductor")
    environ["TRITON_CACHE_DIR"] = str(directory / "triton")


def compile_cache_info(configured: str | None) -> dict:
    """Which cache directory torch.compile used (``configured``: TORCHINDUCTOR_CACHE_DIR as the
    job found it), and whether this job's compilation hit it."""
    from torch._dynamo.utils import counters
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    except ImportError:  # older torch: the same rule, not yet a function of its own
        def default_cache_dir():
            import getpass
            import tempfile
            return os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")

    counts = {name: int(counters[group].get(name, 0))
              for group, names in COMPILE_CACHE_COUNTERS.items() for name in names}
    outcome = compile_cache_outcome(counts)
    return {"dir": os.path.abspath(configured or default_cache_dir()),
            "source": "TORCHINDUCTOR_CACHE_DIR" if configured else "torch default",
            "hit": outcome == "hit",
            # hit: every graph came from the cache; miss: none did (compiled and autotuned
            # afresh: its warm-up is a miss's); partial: some did; none: nothing was compiled
            "outcome": outcome,
            "counters": counts}


def graphs_compiled() -> int:
    """Inductor graphs this process has compiled or loaded from the cache so far (0 before
    anything compiled): read at the warm-up boundary and after the window, it says whether a
    compilation fell inside the timed window."""
    import sys
    if "torch._dynamo" not in sys.modules:   # nothing compiled: do not import the compiler
        return 0
    from torch._dynamo.utils import counters
    return sum(int(counters[group].get(name, 0))
               for group, names in COMPILE_CACHE_COUNTERS.items() for name in names)


class Compilations:
    """The graphs compiled between ``start()`` and ``stop()``, over one or more spans (the timed
    window, interrupted by the held-out evaluation): ``inside``."""

    def __init__(self):
        self.inside, self._from = 0, None

    def start(self) -> None:
        self._from = graphs_compiled()

    def stop(self) -> None:
        if self._from is not None:   # a schedule shorter than its warm-up never started one
            self.inside += graphs_compiled() - self._from
            self._from = None


# ------------------------------------------------------------------------------ command line
def job_arguments(prog: str, doc: str, what: str, argv: list[str] | None) -> argparse.Namespace:
    """The command line of a job's entry point (``tcbench.job.run``,
    ``tcbench.job.interleave``): the spec as JSON or a JSON file, where the record goes,
    torch.compile's cache folder; the cache is pointed at before torch is imported (it reads
    the variables once)."""
    ap = argparse.ArgumentParser(prog=prog, description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", help=f"the {what} as a JSON object")
    src.add_argument("--spec-file", type=Path, help=f"the {what} as a JSON file")
    ap.add_argument("--out", type=Path, required=True, help="where the JSON record goes")
    ap.add_argument("--checked", action="store_true",
                    help=f"the {what}'s parameters were checked when the workflow made it, the "
                         "model's trial step on the meta device included: skip repeating it")
    ap.add_argument("--compile-cache", type=Path, metavar="DIR",
                    help="torch.compile's caches (Inductor, Triton) in DIR, shared by the jobs "
                         "that name it; default: torch's own (a per-user folder in /tmp)")
    args = ap.parse_args(argv)
    use_compile_cache(args.compile_cache)
    return args


def start_cuda(device, phases: Phases) -> None:
    """Create the CUDA context now, so that its fixed cost (any CUDA program's first operation
    pays it) is a phase of its own rather than part of building the model."""
    if device.type == "cuda":
        import torch

        torch.zeros(1, device=device)
        phases.mark("cuda_context")
