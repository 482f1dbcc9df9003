"""One training job: parse the cell, build, train, measure, write one record.

    python -m tcbench.job.run --spec '{"workload": "amp_recipe", "precision": "amp-fp16",
                                       "batch_size": 512}' --out results/x/records/a.json

Exit status: 0 when a record was written (whatever its status: ``ok``, ``unsupported``,
``oom``, ``diverged``); 2 for a bad cell or missing data (no record, nothing to measure);
anything else is a bug and leaves no record.

An out-of-memory error while building, training or evaluating is a result, not a crash: status
``oom``, with the phase, the step and the memory in use in ``error``. An optional spec key
``memory_limit_bytes`` holds the job to a memory budget (see tcbench.job.memlimit).

What is the same for every repeat of a cell (which kernels ran, the FLOPs of a step) is
collected once, in the cell's first repeat (workload parameter ``evidence_repeats: first``, the
default; ``all`` collects it in every repeat); the other repeats' records name that repeat.

``--compile-cache DIR`` keeps torch.compile's caches (Inductor's FX graph and autotuning caches,
Triton's kernels) in DIR, so the jobs of one study share them; the record says which directory
was used and whether the compilation hit it.
"""

from __future__ import annotations

import json
import os
import traceback

from ..host import environment, gpus, hoststate, placement  # the standard library's only
from ..host.process import exit_now  # noqa: F401 - the job's end, for python -m and the fork server
from .harness import (Compilations, Phases, compile_cache_info, job_arguments,  # noqa: F401
                      process_age_s, start_cuda, use_compile_cache)
from .spec import (OOM_MARKERS, SPEC_KEYS, is_oom, oom_fields, parse_spec,  # noqa: F401
                   pick_device)
from .. import vocabulary as V


# ------------------------------------------------------------------------------------ the job
class Job:
    """One job in flight: its spec, the record it fills in, the device, the precision mode, the
    step timer, the memory budget, the harness phases and the phase it is in (which an
    out-of-memory record names)."""

    def __init__(self, spec: dict, phases: Phases, describe: bool = True,
                 evidence: bool | None = None):
        """``describe``: collect the environment for the record (an interleaved comparison's
        arms share their comparison's); ``evidence``: profile and count FLOPs (None: as
        ``evidence_repeats`` says)."""
        from ..measure import core as measure
        from . import memlimit, precision

        self.spec, self.params, self.phases = spec, spec["params"], phases
        self.id = f"{spec['experiment']}/{spec['cell']}"
        self.device = pick_device(spec["device"])
        start_cuda(self.device, phases)
        self.mode = precision.get(spec["precision"])
        self.timer = measure.StepTimer(self.device)
        self.budget = memlimit.Budget(spec.get("memory_limit_bytes"), self.device)
        self.phase = "building"
        self.channels_last = self.params["memory_format"] == "channels_last"
        self._evidence = evidence
        self.where = None          # the placement, once placed (tcbench.host.placement)
        self.narrow = lambda: None  # ends widen_for_compile's window, where one was opened
        # read before anything compiles: Inductor writes its default into the environment
        self.compile_cache_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        self.record = {
            "schema_version": 1,
            **{k: spec[k] for k in ("run", "experiment", "cell", "workload", "precision",
                                    "batch_size", "repeat")},
            "seed": self.params["seed"],
            "repeat_reason": spec.get("repeat_reason", V.REPEAT_INITIAL),
            "params": self.params,
            "config_hash": environment.config_hash({k: v for k, v in spec.items()
                                                    if k != "run"}),
            "status": V.OK, "status_reason": None,
            "precision_flags": None, "data": None, "metrics": None, "telemetry": None,
            "tensor_cores": None, "error": None, "host_state": None,
            "environment": environment.collect(self.device) if describe else None,
            "harness": None,
        }
        phases.mark("device_and_environment")

    @property
    def training_cpu(self) -> int | None:
        """The training thread's CPU (None before placement or where it is not pinned)."""
        return self.where["training_core"]["cpu"] if self.where else None

    @property
    def collects_evidence(self) -> bool:
        """Kernel profile and FLOP count: per cell, so by default in the first repeat only."""
        if self._evidence is not None:
            return self._evidence
        return self.params["evidence_repeats"] == "all" or self.spec["repeat"] == 1

    def apply_flags(self) -> dict:
        """Set the mode's process-wide backend flags (TF32 on or off) now; the flags set."""
        return self.mode.apply(self.params["cudnn_benchmark"] == "on")

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
            return self.finish(V.UNSUPPORTED, reason)
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
        flags = self.apply_flags()
        self.record["precision_flags"] = flags | {
            "autocast_dtype": str(self.mode.autocast_dtype).replace("torch.", "")
            if self.mode.autocast_dtype else None,
            "grad_scaler": self.mode.use_scaler, "memory_format": self.params["memory_format"],
            "fused_optimizer": self.params["fused_optimizer"],
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
        from ..measure import core as measure

        # Read while the failed step's tensors are still referenced by the traceback.
        mem = measure.memory_in_use(self.device) | self.budget.info()
        step = len(self.timer) if self.phase in ("training", "measuring") else None
        self.record |= oom_fields(exc, self.phase, step, mem)

    def build(self):
        """The workload: model, data, loss, optimiser (a seam the test suite's fault injection
        wraps; see tests/faultinject.py)."""
        from .. import workloads

        return workloads.build(self.spec["workload"], self.params, self.spec["batch_size"],
                               self.device)

    def prepare(self, flags: dict | None = None):
        """Build the workload and its training step (precision, memory format, compile, CUDA
        graph); (workload, step), or (workload, None) where the cell cannot run (the record says
        why). ``flags``: the precision flags the record starts with, where the job has not
        recorded its own (an interleaved comparison's arm)."""
        import torch

        from ..measure import core as measure
        from . import graphs, train

        params, device, record = self.params, self.device, self.record
        if flags is not None:
            record["precision_flags"] = flags
        w = self.build()
        record["data"] = w.data
        record["model"] = w.model_info  # what was built: name, source, parameter count
        self.phases.mark("building")
        self.flops_per_step = None
        if self.collects_evidence:
            self.flops_per_step = measure.count_training_flops(w.model, w.loss_fn,
                                                               w.example_batch)
            self.phases.mark("counting_flops")
        # FP8 modes swap nn.Linear for torchao's Float8Linear after the FLOP count (the same
        # FLOPs) and before compile, which must see the swapped modules.
        batch = self.spec["batch_size"]
        batches = {batch, w.data.get("samples_per_epoch", 0) % batch} - {0}
        w.model, fp8 = self.mode.prepare(w.model, params["compile"], batches)
        record["precision_flags"]["fp8"] = fp8
        if fp8 is not None and fp8["unsupported_reason"]:
            record |= {"status": V.UNSUPPORTED, "status_reason": fp8["unsupported_reason"]}
            return w, None
        if self.channels_last:
            w.model = w.model.to(memory_format=torch.channels_last)
        if params["compile"] != "off" and self.where is not None:
            self.narrow, self.record["placement"]["compile"] = placement.compile_window(
                self.where)
        model = w.model if params["compile"] == "off" else torch.compile(
            w.model, mode=None if params["compile"] == "default" else params["compile"])
        self.budget.watch(w.model)
        self.scaler = self.mode.scaler(device)
        chosen = graphs.plan(w, self.mode, device, params)
        if chosen.cuda_graphs is not None:
            record["precision_flags"]["cuda_graphs"] = chosen.cuda_graphs
        if chosen.unsupported:
            record |= {"status": V.UNSUPPORTED, "status_reason": chosen.unsupported}
            return w, None
        captured = chosen.cuda_graphs["requested"]   # captured, or the capture raised
        if captured:
            self.enter("capturing a CUDA graph")
        step = graphs.step(chosen, model, w, self.mode, device, self.scaler,
                           lambda: train.to_device(w.example_batch, device, False,
                                                   self.channels_last))
        record["precision_flags"]["cuda_graphs"]["captured"] = captured
        self.phases.mark("capturing_cuda_graph" if captured else "building")
        return w, step

    def train_and_measure(self) -> None:
        """Build; train the workload's own schedule (the seed's wall clock around exactly that);
        evaluate on held-out data; fill the timed window with measurement steps; profile."""
        from ..measure import core as measure, telemetry, window
        from . import train

        params, device = self.params, self.device
        w, step = self.prepare()
        if step is None:
            return
        clock = measure.WallClock(device)
        sampler = telemetry.NvmlSampler(device, params["telemetry_interval_s"])
        host = hoststate.Window(self.training_cpu)
        compiled = Compilations()   # torch.compile's graphs inside the timed window
        self.enter("training")
        clock.start()
        with sampler:
            loop = train.train(w, step, device, self.timer, self.scaler, self.channels_last,
                               params["sync_loss_every_step"], params["warmup_steps"],
                           # the timed window starts: the host's state, the energy mark
                               at_steady=lambda: (self.narrow(), host.start(),
                                                  sampler.mark_steady(), compiled.start()))
            clock.stop()      # synchronised: the workload's own loop ends here (total_time_s)
            compiled.stop()   # the held-out evaluation's own graphs are outside the window
            sampler.pause()
            self.schedule_steps = loop.log.steps
            memory = measure.memory_stats(device)  # the peak of the workload's own loop
            self.phases.mark("training")  # warm-up and compilation included, as total_time_s
            self.enter("evaluating")
            held_out = train.evaluate(w, loop.log)
            self.phases.mark("evaluating")
            self.enter("measuring")
            self.narrow()   # a schedule shorter than its warm-up never reached the boundary
            compiled.start()
            timed = loop.fill(window.resolve(params, device.type), sampler.resume)
            host.stop()   # after the fill's last synchronisation: the window has ended
            compiled.stop()
        if params["compile"] != "off":
            timed = window.with_compilations(timed, compiled.inside)
        self.record["host_state"] = host.result()
        self.phases.mark("measurement_steps")
        self.record_metrics(loop, clock, memory, sampler, timed, held_out)
        self.phases.mark("measuring")
        self.enter("profiling")
        self.record["tensor_cores"] = self.profile(step, w)
        self.phases.mark("profiling")

    def record_metrics(self, loop, clock, memory, sampler, timed: dict, held_out: dict):
        from ..measure import core as measure

        params, w, log, chunks = self.params, loop.w, loop.log, loop.chunks
        wait, comp = self.timer.intervals()
        steps = measure.step_statistics(wait, comp, log.samples, params["warmup_steps"],
                                        params["input_bound_share"], chunks.step_s(),
                                        chunks.samples)
        schedule_samples = sum(log.samples)
        steady_samples = sum(log.samples[steps["warmup_steps"]:]) + chunks.samples
        bad_step = log.first_nonfinite_step()
        if bad_step is None and chunks.nonfinite():
            bad_step = log.steps + chunks.steps - 1   # within the last measurement chunk
        throughput = steps["throughput_samples_per_s"]
        flops = self.flops_per_step
        per_sample = flops / self.spec["batch_size"] if flops else None
        compiled = params["compile"] != "off"
        self.record["metrics"] = {
            "total_time_s": clock.total_time_s,
            **{k: memory[k] for k in ("max_memory_allocated_bytes", "max_memory_reserved_bytes")},
            **{k: memory[k] for k in ("memory_reserved_bytes", "device_free_bytes",
                                      "device_total_bytes") if k in memory},
            "epochs": w.epochs,
            "samples": schedule_samples,
            "wall_throughput_samples_per_s": schedule_samples / clock.total_time_s,
            **steps,
            "step_counts": {"warmup": steps["warmup_steps"],
                            "schedule": self.schedule_steps - steps["warmup_steps"],
                            "measurement": chunks.steps},
            "timed_window": timed,
            "time_to_steady_s": log.time_to_steady_s,
            "compile_time_s": steps["first_step_time_s"] if compiled else None,
            "compile_cache": compile_cache_info(self.compile_cache_dir) if compiled else None,
            "final_loss": log.final_loss(),
            "loss_curve": [list(p) for p in log.loss_curve(params["loss_every"])],
            "first_nonfinite_step": bad_step,
            **log.scaler_stats(self.scaler),
            "flops_per_step": flops,
            "flops_per_sample": per_sample,
            "achieved_tflops": per_sample * throughput / 1e12
            if per_sample and throughput else None,
            "flops_evidence_repeat": self.evidence_repeat,
            "memory_note": memory["memory_note"],
            **self.budget.info(),
            **held_out,
        }
        self.record["telemetry"] = sampler.result(schedule_samples, steady_samples)
        if bad_step is not None:
            self.record |= {"status": V.DIVERGED,
                            "status_reason": f"loss became NaN/inf at step {bad_step}"}

    @property
    def evidence_repeat(self) -> int:
        """The repeat whose record carries the cell's kernel profile and FLOP count."""
        return self.spec["repeat"] if self.collects_evidence else 1

    def profile(self, step, w) -> dict:
        """Kernel evidence (once per cell by default), and the GPU's busy share of the timed
        steps from it."""
        from . import profiling, train

        if not self.collects_evidence:
            return {"profiled": False, "evidence_repeat": self.evidence_repeat,
                    "profile_note": "kernels are profiled once per cell (evidence_repeats: "
                                    f"first): see repeat {self.evidence_repeat}'s record"}
        batch = train.to_device(w.example_batch, self.device, False, self.channels_last)
        median = (self.record["metrics"] or {}).get("step_time_median_s")
        return profiling.cell_evidence(lambda: step(*batch), self.params["profile_steps"],
                                       self.device, median) | {
            "evidence_repeat": self.evidence_repeat}


def run_job(spec: dict, phases: Phases | None = None, checked: bool = False) -> dict:
    """Run one cell and return its record (not yet written). ``checked``: the workflow made
    the spec and ran the model's trial step on its parameters; not repeated here."""
    phases = phases or Phases()
    import torch  # noqa: F401

    from ..measure import core as measure
    from . import memlimit, precision, train  # noqa: F401

    phases.mark("imports")
    # the workload's own check (a transformers model imports its library's registry here)
    spec = parse_spec(spec, trial=not checked)
    phases.trial_step = "workflow" if checked else "job"
    phases.mark("parameter_check")
    # before CUDA starts its threads
    where = placement.place(spec["params"]["cpu_placement"], spec["device"])
    phases.mark("cpu_placement")
    try:
        job = Job(spec, phases)
        job.where = where
        job.record["placement"] = where | {"torch_gpu_uuid": placement.device_uuid(job.device)}
        return job.run()
    finally:
        placement.release(where)


def main(argv: list[str] | None = None) -> int:
    phases = Phases(started_s=process_age_s())
    args = job_arguments("python -m tcbench.job.run", __doc__, "job", argv)

    from .. import cli, record as R
    from ..data.loaders import DataMissingError  # imports torch

    phases.mark("imports")
    ran = []

    def job():
        gpus.pin()  # before anything initialises CUDA: one GPU per job, held until exit
        phases.mark("gpu_pinning")
        spec = json.loads(args.spec if args.spec else args.spec_file.read_text())
        ran.append(run_job(spec, phases, args.checked))

    try:
        if status := cli.main("tcbench.job.run", job, (ValueError, DataMissingError)):
            return status
    except Exception:
        traceback.print_exc()
        return 1
    record = ran[0]
    R.write(record, args.out)
    m = record.get("metrics") or {}
    print(f"{record['workload']} {record['precision']} bs={record['batch_size']}: "
          f"{record['status']}" + (f" ({record['status_reason']})" if record['status_reason']
                                   else "")
          + (f", {m['total_time_s']:.3f} s, {m['throughput_samples_per_s']:.1f} samples/s"
             if m.get("total_time_s") and m.get("throughput_samples_per_s") else ""))
    return 0


if __name__ == "__main__":
    exit_now(main())
