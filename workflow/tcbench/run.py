"""One training job: parse the cell, build, train, measure, write one record.

    python -m tcbench.run --spec '{"workload": "amp_recipe", "precision": "amp-fp16",
                                   "batch_size": 512}' --out results/x/records/a.json

Exit status: 0 when a record was written (whatever its status: ``ok``, ``unsupported``,
``oom``, ``diverged``); 2 for a bad cell or missing data (no record, nothing to measure);
anything else is a bug and leaves no record.

An out-of-memory error while building, training or evaluating is a result, not a crash: status
``oom``, with the phase, the step and the memory in use in ``error``. An optional spec key
``memory_limit_bytes`` holds the job to a memory budget (see tcbench.memlimit).

What is the same for every repeat of a cell (which kernels ran, the FLOPs of a step) is
collected once, in the cell's first repeat (workload parameter ``evidence_repeats: first``, the
default; ``all`` collects it in every repeat); the other repeats' records name that repeat.

``--compile-cache DIR`` keeps torch.compile's caches (Inductor's FX graph and autotuning caches,
Triton's kernels) in DIR, so the jobs of one study share them; the record says which directory
was used and whether the compilation hit it.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
import time
import traceback
from pathlib import Path

SPEC_KEYS = {"run", "experiment", "cell", "workload", "precision", "batch_size", "repeat",
             "params", "device", "memory_limit_bytes", "repeat_reason"}
# Markers of allocation failures that surface as plain RuntimeErrors (cuBLAS/cuDNN workspaces,
# cudaMalloc outside the caching allocator, the CPU allocator) rather than torch.OutOfMemoryError.
OOM_MARKERS = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
               "DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory")
# torch._dynamo.utils.counters that say whether a compilation came from the cache
COMPILE_CACHE_COUNTERS = {"inductor": ("fxgraph_cache_hit", "fxgraph_cache_miss",
                                       "fxgraph_cache_bypass"),
                          "aot_autograd": ("autograd_cache_hit", "autograd_cache_miss")}


def parse_spec(spec: dict) -> dict:
    """Check a job spec and resolve its parameters; raises ValueError naming the culprit."""
    from . import memlimit, precision as P
    from . import workloads as W

    if not isinstance(spec, dict):
        raise ValueError(f"the job spec must be a JSON object, got {type(spec).__name__}")
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise ValueError(f"unknown job spec key(s): {', '.join(unknown)}")
    for key in ("workload", "precision", "batch_size"):
        if key not in spec:
            raise ValueError(f"job spec lacks {key!r}")
    bs = spec["batch_size"]
    if not isinstance(bs, int) or isinstance(bs, bool) or bs < 1:
        raise ValueError(f"batch_size={bs!r} must be a positive integer")
    P.get(spec["precision"])
    memlimit.check(spec.get("memory_limit_bytes"))
    out = {"run": "adhoc", "experiment": spec["workload"], "repeat": 1, "device": "auto"} | spec
    out["params"] = W.resolve_params(spec["workload"], spec.get("params"))
    out.setdefault("cell", f"{out['precision']}_bs{bs}_r{out['repeat']}")
    return out


def pick_device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={name!r} but torch sees no CUDA device")
    return device


def is_oom(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.cuda.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and any(m in str(exc) for m in OOM_MARKERS))


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

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.spans[name] = self.spans.get(name, 0.0) + now - self.t
        self.t = now

    def result(self) -> dict:
        from .forkserver import origin

        return {"process": origin(), "process_start_to_main_s": self.started_s,
                "phases_s": {k: round(v, 6) for k, v in self.spans.items()}}


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
    misses = counts["fxgraph_cache_miss"] + counts["fxgraph_cache_bypass"]
    return {"dir": os.path.abspath(configured or default_cache_dir()),
            "source": "TORCHINDUCTOR_CACHE_DIR" if configured else "torch default",
            "hit": counts["fxgraph_cache_hit"] > 0 and misses == 0,
            "counters": counts}


# ------------------------------------------------------------------------------------ the job
class Job:
    """One job in flight: its spec, the record it fills in, the device, the precision mode, the
    step timer, the memory budget, the harness phases and the phase it is in (which an
    out-of-memory record names)."""

    def __init__(self, spec: dict, phases: Phases):
        from . import environment, measure, memlimit, precision as P

        self.spec, self.params, self.phases = spec, spec["params"], phases
        self.id = f"{spec['experiment']}/{spec['cell']}"
        self.device = pick_device(spec["device"])
        self.init_cuda()
        self.mode = P.get(spec["precision"])
        self.timer = measure.StepTimer(self.device)
        self.budget = memlimit.Budget(spec.get("memory_limit_bytes"), self.device)
        self.phase = "building"
        # read before anything compiles: Inductor writes its default into the environment
        self.compile_cache_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        self.record = {
            "schema_version": 1,
            **{k: spec[k] for k in ("run", "experiment", "cell", "workload", "precision",
                                    "batch_size", "repeat")},
            "seed": self.params["seed"], "repeat_reason": spec.get("repeat_reason", "initial"),
            "params": self.params,
            "config_hash": environment.config_hash({k: v for k, v in spec.items()
                                                    if k != "run"}),
            "status": "ok", "status_reason": None,
            "precision_flags": None, "data": None, "metrics": None, "telemetry": None,
            "tensor_cores": None, "error": None,
            "environment": environment.collect(self.device),
            "harness": None,
        }
        phases.mark("device_and_environment")

    def init_cuda(self) -> None:
        """Create the CUDA context now, so that its fixed cost (any CUDA program's first
        operation pays it) is a phase of its own rather than part of building the model."""
        if self.device.type == "cuda":
            import torch

            torch.zeros(1, device=self.device)
            self.phases.mark("cuda_context")

    @property
    def collects_evidence(self) -> bool:
        """Kernel profile and FLOP count: per cell, so by default in the first repeat only."""
        return self.params["evidence_repeats"] == "all" or self.spec["repeat"] == 1

    def enter(self, phase: str) -> None:
        self.phase = phase

    def finish(self, status: str | None = None, reason: str | None = None) -> dict:
        if status is not None:
            self.record |= {"status": status, "status_reason": reason}
        self.record["harness"] = self.phases.result()
        return self.record

    # -------------------------------------------------------------------------- the steps
    def run(self) -> dict:
        ok, reason = self.mode.supported(self.device)
        if not ok:
            return self.finish("unsupported", reason)
        if (self.budget.limit is not None and self.device.type != "cuda"
                and self.params["compile"] != "off"):
            raise ValueError("memory_limit_bytes on a CPU is simulated through autograd's "
                             "saved-tensor hooks, which torch.compile bypasses; use compile: "
                             "off with it")
        import torch
        # Optimizer.__init__ imports torch._dynamo (torch._disable_dynamo): every training
        # script pays it, so it counts with the imports rather than with building the model;
        # a job that cannot run (above) does not pay it.
        import torch._dynamo  # noqa: F401

        self.phases.mark("imports")
        torch.manual_seed(self.params["seed"])
        flags = self.mode.apply(self.params["cudnn_benchmark"] == "on")
        self.record["precision_flags"] = flags | {
            "autocast_dtype": str(self.mode.autocast_dtype).replace("torch.", "")
            if self.mode.autocast_dtype else None,
            "grad_scaler": self.mode.use_scaler, "memory_format": self.params["memory_format"],
            "compile": self.params["compile"]}
        try:
            with self.budget:
                self.train_and_measure()
        except Exception as exc:  # noqa: BLE001 - out of memory is a result; the rest re-raises
            if not is_oom(exc):
                raise
            self.record_oom(exc)
        self.phases.mark("capturing_cuda_graph" if self.phase.startswith("capturing")
                         else self.phase)
        return self.finish()

    def record_oom(self, exc: BaseException) -> None:
        from . import measure

        # Read while the failed step's tensors are still referenced by the traceback.
        mem = measure.memory_in_use(self.device)
        message = str(exc)
        step = len(self.timer) if self.phase == "training" else None
        self.record |= {
            "status": "oom", "metrics": None,
            "status_reason": f"out of memory while {self.phase}"
                             + (f" (step {step})" if step is not None else "")
                             + f": {message.splitlines()[0][:400]}",
            "error": {"type": type(exc).__name__, "message": message[:2000], "phase": self.phase,
                      "step": step, **mem, **self.budget.info()}}

    def build(self):
        """The workload: model, data, loss, optimiser (a seam the test suite's fault injection
        wraps; see tests/faultinject.py)."""
        from . import workloads as W

        return W.build(self.spec["workload"], self.params, self.spec["batch_size"], self.device)

    def train_and_measure(self) -> None:
        """Build, train, measure and profile one cell, filling in the record."""
        import torch

        from . import measure, train as T

        params, device, record = self.params, self.device, self.record
        w = self.build()
        record["data"] = w.data
        record["model"] = w.model_info  # what was built: name, source, parameter count
        self.phases.mark("building")
        channels_last = params["memory_format"] == "channels_last"
        flops_per_step = None
        if self.collects_evidence:
            flops_per_step = measure.count_training_flops(w.model, w.loss_fn, w.example_batch)
            self.phases.mark("counting_flops")
        # FP8 modes swap nn.Linear for torchao's Float8Linear after the FLOP count (the same
        # FLOPs) and before compile, which must see the swapped modules.
        batch = self.spec["batch_size"]
        batches = {batch, w.data.get("samples_per_epoch", 0) % batch} - {0}
        w.model, fp8 = self.mode.prepare(w.model, params["compile"], batches)
        record["precision_flags"]["fp8"] = fp8
        if fp8 is not None and fp8["unsupported_reason"]:
            record |= {"status": "unsupported", "status_reason": fp8["unsupported_reason"]}
            return
        if channels_last:
            w.model = w.model.to(memory_format=torch.channels_last)
        model = w.model if params["compile"] == "off" else torch.compile(
            w.model, mode=None if params["compile"] == "default" else params["compile"])
        self.budget.watch(w.model)
        scaler = self.mode.scaler(device)
        step = T.eager_step(model, w, scaler, self.mode, device)
        graphs = {"requested": params["cuda_graphs"] == "on", "captured": False, "reason": None}
        if graphs["requested"]:
            ok, reason = T.graphs_supported(w, self.mode, device)
            if not ok:
                record |= {"status": "unsupported", "status_reason": f"cuda_graphs=on: {reason}"}
                return
            self.enter("capturing a CUDA graph")
            step = T.GraphedStep(model, w, self.mode, device,
                                 T.to_device(w.example_batch, device, False, channels_last))
            graphs["captured"] = True
        record["precision_flags"]["cuda_graphs"] = graphs
        self.phases.mark("capturing_cuda_graph" if graphs["captured"] else "building")
        clock = measure.WallClock(device)
        sampler = measure.NvmlSampler(device, params["telemetry_interval_s"])

        self.enter("training")
        clock.start()
        with sampler:
            log = T.train(w, step, device, self.timer, scaler, channels_last,
                          params["sync_loss_every_step"], params["warmup_steps"],
                          at_steady=sampler.mark_steady)
            clock.stop()
        self.phases.mark("training")  # warm-up and compilation included, as in total_time_s

        self.enter("measuring")
        wait, comp = self.timer.intervals()
        steps = measure.step_statistics(wait, comp, log.samples, params["warmup_steps"],
                                        params["input_bound_share"])
        samples = sum(log.samples)
        memory = measure.memory_stats(device)
        bad_step = log.first_nonfinite_step()
        throughput = steps["throughput_samples_per_s"]
        per_sample = flops_per_step / self.spec["batch_size"] if flops_per_step else None
        record["metrics"] = {
            "total_time_s": clock.total_time_s,
            **{k: memory[k] for k in ("max_memory_allocated_bytes", "max_memory_reserved_bytes")},
            "epochs": w.epochs,
            "samples": samples,
            "wall_throughput_samples_per_s": samples / clock.total_time_s,
            **steps,
            "time_to_steady_s": log.time_to_steady_s,
            "compile_time_s": steps["first_step_time_s"] if params["compile"] != "off" else None,
            "compile_cache": compile_cache_info(self.compile_cache_dir)
            if params["compile"] != "off" else None,
            "final_loss": log.final_loss(),
            "loss_curve": [list(p) for p in log.loss_curve(params["loss_every"])],
            "first_nonfinite_step": bad_step,
            **log.scaler_stats(scaler),
            "flops_per_step": flops_per_step,
            "flops_per_sample": per_sample,
            "achieved_tflops": per_sample * throughput / 1e12
            if per_sample and throughput else None,
            "flops_evidence_repeat": self.evidence_repeat,
            "memory_note": memory["memory_note"],
            **self.budget.info(),
        }
        steady_samples = sum(log.samples[steps["warmup_steps"]:])
        record["telemetry"] = sampler.result(samples, steady_samples)
        if bad_step is not None:
            record |= {"status": "diverged",
                       "status_reason": f"loss became NaN/inf at step {bad_step}"}
        self.phases.mark("measuring")

        self.enter("profiling")
        record["tensor_cores"] = self.profile(step, w, channels_last)
        self.phases.mark("profiling")
        self.enter("evaluating")
        if w.evaluate is not None and record["status"] == "ok":
            record["metrics"] |= w.evaluate()
        self.phases.mark("evaluating")

    @property
    def evidence_repeat(self) -> int:
        """The repeat whose record carries the cell's kernel profile and FLOP count."""
        return self.spec["repeat"] if self.collects_evidence else 1

    def profile(self, step, w, channels_last: bool) -> dict:
        from . import train as T
        from .tensorcores import profile_kernels

        if not self.collects_evidence:
            return {"profiled": False, "evidence_repeat": self.evidence_repeat,
                    "profile_note": "kernels are profiled once per cell (evidence_repeats: "
                                    f"first): see repeat {self.evidence_repeat}'s record"}

        def one_step():
            step(*T.to_device(w.example_batch, self.device, False, channels_last))

        try:
            evidence = profile_kernels(one_step, self.params["profile_steps"], self.device)
        except Exception as exc:  # noqa: BLE001 - the training measurement above stands
            if not is_oom(exc):
                raise
            evidence = {"profiled": False,
                        "profile_note": f"out of memory while profiling: {exc}"[:500]}
        return evidence | {"evidence_repeat": self.evidence_repeat}


def run_job(spec: dict, phases: Phases | None = None) -> dict:
    """Run one cell and return its record (not yet written)."""
    phases = phases or Phases()
    import torch  # noqa: F401

    from . import environment, measure, memlimit, precision, train, workloads  # noqa: F401

    phases.mark("imports")
    return Job(parse_spec(spec), phases).run()


def main(argv: list[str] | None = None) -> int:
    phases = Phases(started_s=process_age_s())
    ap = argparse.ArgumentParser(prog="python -m tcbench.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", help="the job as a JSON object")
    src.add_argument("--spec-file", type=Path, help="the job as a JSON file")
    ap.add_argument("--out", type=Path, required=True, help="where the JSON record goes")
    ap.add_argument("--compile-cache", type=Path, metavar="DIR",
                    help="torch.compile's caches (Inductor, Triton) in DIR, shared by the jobs "
                         "that name it; default: torch's own (a per-user folder in /tmp)")
    args = ap.parse_args(argv)
    use_compile_cache(args.compile_cache)  # before torch is imported: it reads these once

    from . import gpus, record as R
    from .data import DataMissingError  # imports torch

    phases.mark("imports")
    try:
        gpus.pin()  # before anything initialises CUDA: one GPU per job, held until exit
        phases.mark("gpu_pinning")
        spec = json.loads(args.spec if args.spec else args.spec_file.read_text())
        record = run_job(spec, phases)
    except (ValueError, DataMissingError, json.JSONDecodeError) as exc:
        print(f"tcbench.run: error: {exc}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        return 1
    R.write(record, args.out)
    m = record.get("metrics") or {}
    print(f"{record['workload']} {record['precision']} bs={record['batch_size']}: "
          f"{record['status']}" + (f" ({record['status_reason']})" if record['status_reason']
                                   else "")
          + (f", {m['total_time_s']:.3f} s, {m['throughput_samples_per_s']:.1f} samples/s"
             if m.get("total_time_s") and m.get("throughput_samples_per_s") else ""))
    return 0


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
    import signal

    from .forkserver import descendants

    for pid in descendants():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
