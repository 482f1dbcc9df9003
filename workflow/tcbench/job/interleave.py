"""Precision modes compared interleaved, in one process: the instrument for host-bound cells.

    python -m tcbench.job.interleave --spec '{"workload": "amp_recipe", "batch_size": 512,
        "precisions": ["fp32", "tf32", "amp-fp16", "amp-bf16"]}' --out results/x/interleaved/a.json

Where the host sets a step's pace (the GPU waits on the thread that issues its kernels), the
host's speed drifts over minutes, so processes run one after another measure the host's mood as
much as the precision mode: their repeats come out bimodal, and more of them do not help. Here
one process builds every precision arm of one setting side by side (each its own model from the
same seed, its own copy of the same batches, its own optimiser, scaler and step: exactly what
``tcbench.job.run`` builds for the cell), warms each, then alternates them in ``rounds``: in each
round every arm runs one *segment* of steps, the order rotated from round to round so that each
arm takes each place equally often. Host drift hits every arm of a round alike, so the ratio of
two arms' throughputs *within* a round cancels it; the per-round ratios give a paired estimate
(``tcbench.stats.paired_ratio``: their median with a block-bootstrap 95% interval).

A segment: the arm's backend flags set (TF32 is a process-wide switch), ``lead_in_steps``
untimed steps (the other arm's weights leave the caches), a short CPU dispatch probe (the
host's speed right then), then its timed steps between two marks: CUDA events on the training
stream (the host clock on a CPU). The device is synchronised between segments, never inside
one. Short segments (``segment_s``, 0.1 s; the step count fixed per arm from its warm-up, so
every round times the same steps) keep most rounds within one state of a host whose speed
changes every few seconds. The record holds every segment's steps, samples, seconds and host
probe (``tcbench.host.hoststate``), so the ratios can be recomputed and the drift seen.

One process cannot show what differs between processes (allocations, cuBLAS and cuDNN choices,
clocks, the core) nor a drift slower than its minute: a study runs ``interleave.replicates``
(3) processes of 20 rounds a setting, replicate k seeded as the cells' repeat k and run in their
wave, and the reports build the interval across them (``tcbench.stats.replicated_ratio``).

Memory, warm-up and absolute throughput come from the per-process jobs (``tcbench.job.run``).
"""

from __future__ import annotations

import itertools
import json
import math
import time
import traceback

from .. import vocabulary as V
from ..host import environment, gpus, hoststate, placement  # the standard library's only
from ..host.process import exit_now
from .harness import Phases, job_arguments, process_age_s

# 20 rounds a process: a setting's three processes (matrix.REPLICATES) time 60 rounds in all
DEFAULTS = {"rounds": 20, "segment_s": 0.1, "lead_in_steps": 2, "warmup_rounds": 1}
LIMITS = {"rounds": (3, 10_000), "segment_s": (0.0, 60.0), "lead_in_steps": (0, 1000),
          "warmup_rounds": (0, 100)}
ROUND_PROBE_OPS = 2_000        # the host probe before each segment: about 5-15 ms
CALIBRATE_S = 0.05             # an arm's step time is measured over at least this long
SPEC_KEYS = {"run", "experiment", "setting", "replicate", "workload", "batch_size", "params",
             "device", "precisions", "interleave"}


def settings(given: dict | None) -> dict:
    """The comparison's settings (``DEFAULTS`` with ``given`` over them); ValueError naming one."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"interleave: unknown setting(s) {', '.join(unknown)}; "
                         f"accepted: {', '.join(DEFAULTS)}")
    out = DEFAULTS | given
    for key, (low, high) in LIMITS.items():
        v = out[key]
        kind = float if isinstance(DEFAULTS[key], float) else int
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and
                                                                     not isinstance(v, int)):
            raise ValueError(f"interleave: {key}={v!r} must be a{'n integer' if kind is int else ' number'}")
        if not low <= v <= high or (key == "segment_s" and v <= 0):
            raise ValueError(f"interleave: {key}={v!r} must be within {low}..{high}"
                             + (" and above 0" if key == "segment_s" else ""))
    return out


def parse(spec: dict, trial: bool = True) -> dict:
    """Check an interleaved comparison's spec; ValueError naming the culprit. Every arm's cell
    spec is checked as ``tcbench.job.run`` would check it (``trial``: see ``parse_spec``)."""
    from .spec import parse_spec

    if not isinstance(spec, dict):
        raise ValueError(f"the spec must be a JSON object, got {type(spec).__name__}")
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise ValueError(f"unknown interleave spec key(s): {', '.join(unknown)}")
    arms = spec.get("precisions")
    if not isinstance(arms, list) or len(arms) < 2 or len(set(arms)) != len(arms):
        raise ValueError(f"precisions={arms!r}: an interleaved comparison needs two or more "
                         "distinct precision modes")
    out = {"run": "adhoc", "device": "auto", "replicate": 1} | spec
    if type(k := out["replicate"]) is not int or k < 1:
        raise ValueError(f"replicate={k!r} must be a whole number from 1")
    out["interleave"] = settings(spec.get("interleave"))
    cells = [parse_spec({"run": out["run"], "experiment": out.get("experiment", spec.get(
                            "workload")), "workload": spec.get("workload"), "precision": p,
                         "batch_size": spec.get("batch_size"), "params": spec.get("params"),
                         "device": out["device"], "repeat": k,
                         "cell": f"{p}_{spec.get('setting') or 'interleaved'}_r{k}"}, trial)
             for p in arms]
    out["experiment"] = cells[0]["experiment"]
    out["setting"] = spec.get("setting") or f"bs{spec['batch_size']}"
    out["params"] = cells[0]["params"]
    out["cells"] = cells
    return out


# ------------------------------------------------------------------------------------ the arms
class Arm:
    """One precision mode of the comparison: the job ``tcbench.job.run`` would run for its cell,
    built (workload, step) but trained segment by segment."""

    def __init__(self, cell: dict, phases: Phases):
        from .run import Job

        self.precision = cell["precision"]
        self.job = Job(cell, phases, describe=False, evidence=False)
        self.status, self.reason = V.OK, None
        self.w = self.step = None
        self.steps_per_segment = None
        self.step_time_s = None
        self.nonfinite = False
        self.batches = None      # the workload's batches, pass after pass, drawn across rounds
        self.samples_per_step = cell["batch_size"]

    def build(self) -> None:
        job = self.job
        ok, reason = job.mode.supported(job.device)
        if not ok:
            self.status, self.reason = V.UNSUPPORTED, reason
            return
        import torch

        from .train import Batches

        torch.manual_seed(job.params["seed"])   # replicate k: the seed of the cell's repeat k
        w, step = job.prepare(flags=self.flags())
        if step is None:
            self.status, self.reason = job.record["status"], job.record["status_reason"]
            return
        self.w, self.step = w, step
        self.batches = Batches(w.train_loader, job.device, w.non_blocking,
                               job.channels_last).endless()
        w.model.train()

    def flags(self) -> dict:
        """This arm's process-wide backend flags (TF32 on or off), set now."""
        return self.job.apply_flags()

    @property
    def ok(self) -> bool:
        return self.status == V.OK

    def run(self, steps: int):
        """``steps`` training steps; returns (samples, last loss)."""
        samples, loss = 0, None
        sync_loss = self.job.params["sync_loss_every_step"]
        for data, target in itertools.islice(self.batches, steps):
            loss = self.step(data, target)
            if sync_loss:
                loss.item()   # host sync: the seed's per-step loss read, part of its step
            samples += len(target)
        return samples, loss


class Marks:
    """Start and end marks of a segment: CUDA events on the training stream, or the host clock
    on a CPU (where a step is done when it returns)."""

    def __init__(self, device):
        import torch

        self.cuda = device.type == "cuda"
        self.torch = torch

    def mark(self):
        if not self.cuda:
            return time.perf_counter()
        e = self.torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()   # host sync: between segments, never inside one

    def seconds(self, a, b) -> float:
        return a.elapsed_time(b) / 1e3 if self.cuda else b - a


def calibrate(arm: Arm, marks: Marks, segment_s: float) -> None:
    """The arm's step time over ``CALIBRATE_S`` or more after its warm-up: a segment's steps."""
    n = 1
    while True:
        marks.sync()
        a = marks.mark()
        arm.run(n)
        b = marks.mark()
        marks.sync()
        t = marks.seconds(a, b)
        if t >= CALIBRATE_S or n >= 4096:
            break
        n *= 4
    arm.step_time_s = t / n
    arm.steps_per_segment = max(4, math.ceil(segment_s / max(arm.step_time_s, 1e-9)))


def rotated(arms: list, k: int) -> list:
    """Round ``k``'s order: the arms rotated by ``k`` places (each takes every place in turn)."""
    s = k % len(arms)
    return arms[s:] + arms[:s]


def header(spec: dict, device, where: dict) -> dict:
    """The record's fields that do not depend on how the rounds went."""

    return {
        "schema_version": 1, "kind": "interleaved",
        **{k: spec[k] for k in ("run", "experiment", "setting", "replicate", "workload")},
        "batch_size": spec["batch_size"],
        "seed": spec["params"]["seed"], "params": spec["params"],
        "precisions": [c["precision"] for c in spec["cells"]],
        "protocol": {**spec["interleave"], "order": "rotated",
                     "round_probe_ops": ROUND_PROBE_OPS,
                     "timer": "CUDA events" if device.type == "cuda" else "host clock",
                     "what": "every arm one segment per round, order rotated; a segment is "
                             "lead_in_steps untimed steps, a host probe, then "
                             "steps_per_segment timed steps; the device synchronised "
                             "between segments"},
        "status": V.OK, "status_reason": None,
        "environment": environment.collect(device),
        "placement": where | {"torch_gpu_uuid": placement.device_uuid(device)},
    }


def build(arms: list[Arm]) -> None:
    from .spec import is_oom

    for arm in arms:
        try:
            arm.build()
        except Exception as exc:  # noqa: BLE001 - an arm out of memory is that arm's result
            if not is_oom(exc):
                raise
            arm.status, arm.reason = V.OOM, f"out of memory while building: {exc}"[:400]


def progress(what: str, t0: float) -> None:
    """A line in the job's log: how far a comparison stopped at a time limit got."""
    print(f"{what} ({time.perf_counter() - t0:.1f} s)", flush=True)


def warm(live: list[Arm], marks: Marks, s: dict) -> None:
    """Each arm's warm-up (compilation, autotuning, lazy loading), one arm at a time, its step
    time, then the rounds' own rhythm, untimed."""
    t0 = time.perf_counter()
    for arm in live:
        arm.flags()
        arm.run(max(arm.job.params["warmup_steps"], 3))
        calibrate(arm, marks, s["segment_s"])
        progress(f"{arm.precision} warmed: {arm.step_time_s * 1e3:.2f} ms a step, "
                 f"{arm.steps_per_segment} steps a segment", t0)
    for k in range(s["warmup_rounds"]):
        for arm in rotated(live, k):
            arm.flags()
            arm.run(arm.steps_per_segment)
    marks.sync()


def segment(arm: Arm, position: int, marks: Marks, lead_in: int) -> dict:
    """One arm's turn in a round: flags, lead-in, the host's speed, the timed steps."""
    import torch

    arm.flags()
    arm.run(lead_in)
    marks.sync()
    # the host's speed right before the timed steps: the host can change state within a
    # round, and a host-bound segment's throughput follows it
    host_speed = hoststate.probe(ROUND_PROBE_OPS)
    a = marks.mark()
    samples, loss = arm.run(arm.steps_per_segment)
    b = marks.mark()
    marks.sync()
    arm.nonfinite |= not bool(torch.isfinite(loss.detach().float()).all())
    return {"precision": arm.precision, "position": position, "steps": arm.steps_per_segment,
            "samples": samples, "seconds": marks.seconds(a, b),
            "host_probe_ops_per_s": host_speed}


def compare(spec: dict, phases: Phases | None = None, checked: bool = False) -> dict:
    """Run one interleaved comparison and return its record (not yet written); ``checked`` as
    in ``tcbench.job.run.run_job``."""
    phases = phases or Phases()
    import torch

    from .spec import pick_device

    phases.mark("imports")
    spec = parse(spec, trial=not checked)
    phases.trial_step = "workflow" if checked else "job"
    phases.mark("parameter_check")
    s = spec["interleave"]
    where = placement.place(spec["params"]["cpu_placement"], spec["device"])
    phases.mark("cpu_placement")
    try:
        device = pick_device(spec["device"])
        if device.type == "cuda":
            torch.zeros(1, device=device)   # the CUDA context, a phase of its own
            phases.mark("cuda_context")
        record = header(spec, device, where)
        phases.mark("device_and_environment")
        arms = [Arm(c, phases) for c in spec["cells"]]
        build(arms)
        phases.mark("building")
        live = [a for a in arms if a.ok]
        marks = Marks(device)
        rounds: list[dict] = []
        host = hoststate.Window(where["training_core"]["cpu"])
        if len(live) >= 2:
            warm(live, marks, s)
            phases.mark("training")
            host.start()
            t0 = time.perf_counter()
            for k in range(s["rounds"]):
                rounds.append({"round": k,
                               "host_probe_ops_per_s": hoststate.probe(ROUND_PROBE_OPS),
                               "segments": [segment(arm, i, marks, s["lead_in_steps"])
                                            for i, arm in enumerate(rotated(live, k))]})
                if (k + 1) % 10 == 0 or k + 1 == s["rounds"]:
                    progress(f"round {k + 1}/{s['rounds']}", t0)
            host.stop()
            phases.mark("measurement_steps")
        return record | finish(arms, rounds) | {"host_state": host.result(),
                                                "harness": phases.result()}
    finally:
        placement.release(where)


def finish(arms: list[Arm], rounds: list[dict]) -> dict:
    """The arms' last word and the rounds, for the record."""
    out = {}
    for arm in arms:
        if arm.ok and arm.nonfinite:
            arm.status, arm.reason = V.DIVERGED, "the loss became NaN/inf in the rounds"
    if len([a for a in arms if a.ok]) < 2:
        out = {"status": V.UNSUPPORTED if not rounds else V.DIVERGED,
               "status_reason": "fewer than two arms could run: " + "; ".join(
                   f"{a.precision}: {a.reason}" for a in arms if not a.ok)}
    return out | {"arms": [{"precision": a.precision, "status": a.status,
                            "status_reason": a.reason,
                            "precision_flags": a.job.record.get("precision_flags"),
                            "steps_per_segment": a.steps_per_segment,
                            "warm_step_time_s": a.step_time_s} for a in arms],
                  "rounds": rounds}


def main(argv: list[str] | None = None) -> int:
    phases = Phases(started_s=process_age_s())
    args = job_arguments("python -m tcbench.job.interleave", __doc__, "comparison", argv)

    from .. import cli, record as R

    phases.mark("imports")
    made = {}

    def comparison():
        gpus.pin()  # before anything initialises CUDA: one GPU per job, held until exit
        phases.mark("gpu_pinning")
        spec = json.loads(args.spec if args.spec else args.spec_file.read_text())
        made["record"] = compare(spec, phases, args.checked)

    try:
        status = cli.main("tcbench.job.interleave", comparison, (ValueError, json.JSONDecodeError))
    except Exception:
        traceback.print_exc()
        return 1
    if status:
        return status
    record = made["record"]
    R.write(record, args.out, R.INTERLEAVED)
    done = [a["precision"] for a in record["arms"] if a["status"] == V.OK]
    print(f"{record['experiment']}/{record['setting']} interleaved: {record['status']}, "
          f"{len(record['rounds'])} rounds of {', '.join(done) or 'no arm'}", flush=True)
    return 0


if __name__ == "__main__":
    exit_now(main())
