"""The training loop's bookkeeping: loss tensors kept without a kernel per step, progress lines
between epochs, step marks that leave no gap, the warm-up boundary."""

import time

import pytest
import torch

from tcbench.measure import core as measure
from tcbench.job import precision
from tcbench.job import train
from tcbench import workloads

CPU = torch.device("cpu")


def recipe(epochs=2, batches=5, seed=0):
    params = workloads.resolve_params("amp_recipe", {"in_size": 16, "out_size": 16,
                                                     "num_batches": batches, "epochs": epochs,
                                                     "seed": seed})
    torch.manual_seed(seed)
    return workloads.build("amp_recipe", params, 8, CPU)


def run(w, **kw):
    mode = precision.get("fp32")
    scaler = mode.scaler(CPU)
    timer = measure.StepTimer(CPU)
    loop = train.train(w, train.eager_step(w.model, w, scaler, mode, CPU), CPU, timer, scaler, **kw)
    return loop.log, timer


def loop_of(w, **kw):
    mode = precision.get("fp32")
    scaler = mode.scaler(CPU)
    return train.train(w, train.eager_step(w.model, w, scaler, mode, CPU), CPU,
                       measure.StepTimer(CPU), scaler, **kw)


def test_measurement_steps_come_after_the_schedule_in_chunks_and_leave_its_log_alone():
    loop = loop_of(recipe(epochs=1, batches=5))
    schedule = loop.log.losses[:loop.log.steps].clone()
    loop.more(40)                       # 8 passes over the 5 batches, chunks of at most 16
    assert loop.log.steps == 5 and torch.equal(loop.log.losses[:5], schedule)
    assert loop.chunks.steps == 40 and loop.chunks.samples == 40 * 8
    sizes = [n for *_, n, _ in loop.chunks.spans]
    assert sum(sizes) == 40 and max(sizes) <= train.Chunks.SIZE
    assert len(loop.chunks.step_s()) == 40 and (loop.chunks.step_s() > 0).all()
    assert not loop.chunks.nonfinite()
    loop.chunks.last_losses.append(torch.tensor(float("nan")))
    assert loop.chunks.nonfinite()


def test_measurement_steps_keep_training():
    w = recipe(epochs=1, batches=5)
    loop = loop_of(w)
    before = [p.detach().clone() for p in w.model.parameters()]
    loop.more(3)
    assert loop.chunks.steps == 3
    assert any(not torch.equal(a, b) for a, b in zip(before, w.model.parameters()))


def test_losses_flushed_in_chunks_equal_losses_kept_whole(monkeypatch):
    whole, _ = run(recipe(epochs=3))
    monkeypatch.setattr(train.TrainLog, "FLUSH", 4)   # 15 steps: three flushes, then one after
    chunked, _ = run(recipe(epochs=3))
    assert whole.steps == chunked.steps == 15
    assert torch.equal(whole.losses, chunked.losses)
    assert not torch.isnan(chunked.losses).any()
    assert [s for s, _ in chunked.loss_curve(5)] == [0, 5, 10, 14]


def test_a_reused_loss_tensor_is_copied_a_fresh_one_kept():
    log = train.TrainLog(losses=torch.full((2,), float("nan")), scales=None, samples=[])
    static = torch.tensor(1.0)
    log.add(static, 8, copy=True)
    static.fill_(2.0)  # a CUDA graph's replay overwrites its output tensor
    log.add(static, 8, copy=True)
    log.flush()
    assert log.losses.tolist() == [1.0, 2.0]


def test_a_loss_on_a_larger_buffer_is_copied_not_kept():
    """Keeping such a scalar would keep its whole buffer (CPU mse_loss returns one)."""
    log = train.TrainLog(losses=torch.full((2,), float("nan")), scales=None, samples=[])
    big = torch.ones(10_000)
    log.add(big[3], 8)
    own = torch.tensor(2.0)
    log.add(own, 8)
    assert log._losses[0].untyped_storage().nbytes() == 4      # a copy of the one value
    assert log._losses[1].untyped_storage().data_ptr() == own.untyped_storage().data_ptr()
    log.flush()
    assert log.losses.tolist() == [1.0, 2.0]


def test_progress_between_epochs_at_most_every_few_seconds(monkeypatch, capsys):
    run(recipe(epochs=3))
    assert capsys.readouterr().out == ""          # a short job says nothing
    monkeypatch.setattr(train, "PROGRESS_EVERY_S", 0.0)
    run(recipe(epochs=3))
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(",")[0] for line in lines] == ["epoch 1/3", "epoch 2/3", "epoch 3/3"]


def test_step_marks_leave_no_gap_within_an_epoch():
    """A step's end mark is the next step's fetch mark: the steps of an epoch add up to the
    epoch's time, and the harness's own bookkeeping is nobody's hidden time."""
    w = recipe(epochs=1, batches=20)
    t0 = time.perf_counter()
    log, timer = run(w)
    loop = time.perf_counter() - t0
    wait, comp = timer.intervals()
    assert len(wait) == 20 and (wait >= 0).all() and (comp > 0).all()
    assert (wait + comp).sum() == pytest.approx(
        timer._marks[-1][2] - timer._marks[0][0], rel=1e-9)
    assert (wait + comp).sum() <= loop


def test_warmup_boundary_is_called_once_after_the_warmup_steps():
    calls = []
    w = recipe(epochs=2, batches=3)
    w.model.register_forward_hook(lambda *a: calls.append("step"))
    log, _ = run(w, warmup_steps=3, at_steady=lambda: calls.append("steady"))
    assert calls.count("steady") == 1 and calls.index("steady") == 3
    assert 0 < log.time_to_steady_s


def test_the_boundary_keeps_a_steady_step():
    log, _ = run(recipe(epochs=1, batches=2), warmup_steps=10)   # only 2 steps
    assert log.time_to_steady_s is not None and measure.warmup_count(10, 2) == 1


class FakeEvent:
    """torch.cuda.Event's surface, on the host clock: counts creations and records."""
    made = 0
    records = 0

    def __init__(self, enable_timing=False):
        FakeEvent.made += 1
        self.t = None

    def record(self, stream=None):
        FakeEvent.records += 1
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def test_cuda_marks_are_made_before_the_loop_and_two_are_recorded_per_step(monkeypatch):
    """The CUDA path of the step timer without a GPU: events stand in for torch.cuda.Event."""
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: "stream")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    FakeEvent.made = FakeEvent.records = 0
    timer = measure.StepTimer(torch.device("cuda"))
    timer.start(10, restarts=3)
    made, recorded = FakeEvent.made, FakeEvent.records
    assert made == recorded == 2 * 10 + 3 + 1        # all made (and created by a record) up front
    timer.fetch()
    for epoch in range(2):
        if epoch:
            timer.fetch()                              # an epoch's fresh mark
        for _ in range(5):
            timer.data_ready()
            time.sleep(0.001)
            timer.step_done()
    assert FakeEvent.made == made                      # none made inside the loop
    assert FakeEvent.records - recorded == 2 * 10 + 2  # two per step, plus the fresh marks
    wait, comp = timer.intervals()
    assert len(wait) == 10 and (comp >= 0.001).all() and (wait >= 0).all()


def test_measurement_chunks_record_one_premade_event_per_chunk(monkeypatch):
    """The CUDA path of the chunk timer without a GPU: events made up front, one recorded per
    16 steps, each step given its chunk's mean."""
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    FakeEvent.made = FakeEvent.records = 0
    chunks = train.Chunks(torch.device("cuda"))
    chunks.reserve(40, passes=1)
    made, recorded = FakeEvent.made, FakeEvent.records
    chunks.open()
    for k in range(40):
        time.sleep(0.0005)
        chunks.count(8)
        if chunks.full() or k == 39:
            chunks.close(torch.tensor(1.0))
    assert FakeEvent.made == made                        # none made inside the loop
    assert FakeEvent.records - recorded == 1 + 3         # the opening mark, one per chunk
    assert [n for *_, n, _ in chunks.spans] == [16, 16, 8] and chunks.samples == 320
    step_s = chunks.step_s()
    assert len(step_s) == 40 and len(set(step_s[:16])) == 1 and (step_s >= 0.0004).all()


class Counted:
    """A planted loader: the workload's batches, numbered, counting passes and draws."""

    def __init__(self, loader):
        self.batches, self.passes, self.drawn = list(loader), 0, []

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        self.passes += 1
        for k, batch in enumerate(self.batches):
            self.drawn.append(k)
            yield batch


def seeing(step, loader: Counted, seen: list):
    """``step``, noting which of the loader's batches each call was given."""
    def counted(data, target):
        seen.append(next(k for k, (d, _) in enumerate(loader.batches) if d is data))
        return step(data, target)
    return counted


@pytest.fixture
def moved(monkeypatch):
    """Every batch moved to the device, counted."""
    calls, to_device = [], train.to_device
    monkeypatch.setattr(train, "to_device",
                        lambda batch, *a: (calls.append(1), to_device(batch, *a))[1])
    return calls


def test_the_schedule_and_its_measurement_steps_draw_one_batch_a_step_a_fresh_pass_each(moved):
    w = recipe(epochs=2, batches=5)
    w.train_loader = loader = Counted(w.train_loader)
    mode, seen = precision.get("fp32"), []
    scaler = mode.scaler(CPU)
    loop = train.train(w, seeing(train.eager_step(w.model, w, scaler, mode, CPU), loader, seen),
                       CPU, measure.StepTimer(CPU), scaler)
    loop.more(3)                     # a measurement call starts its own pass
    loop.more(7)
    assert seen == loader.drawn == [0, 1, 2, 3, 4] * 2 + [0, 1, 2] + [0, 1, 2, 3, 4, 0, 1]
    assert loader.passes == 5 and len(moved) == 20 == loop.log.steps + loop.chunks.steps


def test_an_interleaved_arm_draws_one_batch_a_step_resuming_across_segments(moved, monkeypatch):
    from tcbench.job import harness, interleave, run as job

    build, planted = job.Job.build, []

    def build_planted(self):
        w = build(self)
        w.train_loader = Counted(w.train_loader)
        planted.append(w.train_loader)
        return w

    monkeypatch.setattr(job.Job, "build", build_planted)
    spec = interleave.parse({"workload": "amp_recipe", "batch_size": 4, "device": "cpu",
                             "precisions": ["fp32", "amp-bf16"],
                             "params": {"in_size": 8, "out_size": 8, "num_batches": 3}})
    arm = interleave.Arm(spec["cells"][0], harness.Phases())
    arm.build()
    [loader], seen = planted, []
    arm.step = seeing(arm.step, loader, seen)
    moved.clear()
    assert arm.run(2)[0] == 8 and arm.run(5)[0] == 20   # a segment goes on where one stopped
    assert seen == loader.drawn == [0, 1, 2, 0, 1, 2, 0]
    assert loader.passes == 3 and len(moved) == 7
