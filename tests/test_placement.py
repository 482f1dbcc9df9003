"""CPU placement: disjoint slices per GPU, the training thread alone, helpers off it, the record
naming the set, its host and its neighbours; cpu_placement: os leaves the process as it was."""

import os
import threading

from tcbench.host import gpus, placement


def test_slices_per_gpu_are_disjoint_and_prefer_the_gpus_own_cpus():
    allowed = set(range(32))
    local = set(range(16, 32))
    slices = [placement.slot_cpus(allowed, local, k, 2) for k in range(2)]
    assert slices == [list(range(16, 24)), list(range(24, 32))]
    assert placement.slot_cpus(allowed, {99}, 0, 1) == sorted(allowed)   # no overlap: all of it
    assert placement.slot_cpus({0, 1}, None, 1, 4) == [0, 1]              # fewer CPUs than GPUs


def test_pinned_puts_the_training_thread_alone_and_helpers_elsewhere_then_releases():
    before = os.sched_getaffinity(0)
    where = placement.place("pinned", "cuda")  # a GPU job: its training thread alone
    try:
        assert os.sched_getaffinity(0) == set(where["training_thread_cpus"])
        seen = []
        t = threading.Thread(target=lambda: (placement.to_helpers(),
                                             seen.append(os.sched_getaffinity(0))))
        t.start()
        t.join()
        assert seen == [set(where["helper_cpus"])]
        if len(where["cpu_set"]) > 1:
            assert not set(where["helper_cpus"]) & set(where["training_thread_cpus"])
        assert where["host"] == os.uname().nodename and where["cpu_placement"] == "pinned"
    finally:
        placement.release(where)
    assert os.sched_getaffinity(0) == before


def test_a_cpu_jobs_training_thread_keeps_the_whole_set_for_its_intra_op_threads():
    """On the CPU the training thread's intra-op pool does the work, and threads inherit the
    affinity of the thread that starts them: one CPU for it would leave the job one core."""
    before = os.sched_getaffinity(0)
    where = placement.place("pinned", "cpu")
    try:
        assert where["training_thread_cpus"] == where["cpu_set"] == where["helper_cpus"]
        assert os.sched_getaffinity(0) == set(where["cpu_set"])
        started = []
        t = threading.Thread(target=lambda: started.append(os.sched_getaffinity(0)))
        t.start()
        t.join()
        assert started == [set(where["cpu_set"])]
    finally:
        placement.release(where)
    assert os.sched_getaffinity(0) == before


def test_a_cpu_job_records_the_whole_set_as_its_training_cpus(tmp_path):
    from tcbench.job import run

    rec = run.run_job({"workload": "amp_recipe", "precision": "fp32", "batch_size": 8,
                       "device": "cpu", "params": {"in_size": 16, "out_size": 16,
                                                   "num_batches": 2, "epochs": 1,
                                                   "warmup_steps": 1}})
    p = rec["placement"]
    assert p["cpu_placement"] == "pinned" and p["training_thread_cpus"] == p["cpu_set"]


def test_os_placement_changes_nothing():
    before = os.sched_getaffinity(0)
    where = placement.place("os")
    assert os.sched_getaffinity(0) == before and where["cpu_set"] == sorted(before)
    placement.release(where)


def test_neighbours_are_the_gpu_locks_other_processes_hold(tmp_path):
    a, b = tmp_path / "gpu-GPU-a.lock", tmp_path / "gpu-GPU-b.lock"
    a.write_text("pid 4242 on host\n")
    b.write_text("")
    locks = (f"1: FLOCK  ADVISORY  WRITE 4242 00:2f:{a.stat().st_ino} 0 EOF\n"
             f"2: -> FLOCK  ADVISORY  WRITE 4243 00:2f:{b.stat().st_ino} 0 EOF\n")
    got = placement.neighbours(tmp_path, locks)
    assert got == [{"gpu_uuid": "GPU-a", "pid": 4242, "holder": "pid 4242 on host"}]


def test_a_held_lock_is_seen_in_proc_locks(tmp_path):
    claim = gpus.try_claim(gpus.Gpu(0, "GPU-x"), tmp_path)
    try:
        held = placement.held_flocks(open("/proc/locks").read())
        assert held.get((tmp_path / "gpu-GPU-x.lock").stat().st_ino) == os.getpid()
    finally:
        claim.release()


# ------------------------------------------------------------------ the training thread's core
def test_the_fastest_probed_core_trains_and_cpu0_is_never_chosen_where_the_set_has_another():
    assert placement.choose_core([0, 1, 2, 3], {0: 900e3, 1: 400e3, 2: 600e3, 3: 550e3})[0] == 2
    assert placement.choose_core([0], {0: 300e3})[0] == 0                 # nothing else to take
    assert placement.choose_core([4, 5], {4: 500e3, 5: 500e3})[0] == 4    # a tie: the lower CPU
    cpu, why = placement.choose_core([0, 1, 2], {0: 300e3, 1: 520e3, 2: 610e3})
    assert cpu == 2 and "CPU 2 at 610,000 ops/s" in why and "slowest CPU 0" in why
    assert "CPU 0 not a candidate" in why
    assert placement.choose_core([3, 7], None) == (3, "the set's first CPU (nothing probed)")


class FakeHost:
    """A host of ``speeds`` (CPU -> probe ops/s) on which sched_setaffinity only remembers where
    the calling thread was put: the core choice runs on any machine, whatever its CPUs."""

    def __init__(self, speeds):
        self.speeds, self.at, self.probed = speeds, None, []

    def setaffinity(self, pid, cpus):
        if pid == 0:
            self.at = set(cpus)

    def measure(self, ops):
        (cpu,) = self.at
        self.probed.append(cpu)
        return self.speeds[cpu]


def test_pinned_probes_every_core_of_the_set_and_records_the_choice(monkeypatch):
    host = FakeHost({0: 370e3, 1: 580e3, 2: 600e3, 3: 420e3})
    monkeypatch.setattr(placement, "allowed_cpus", lambda: {0, 1, 2, 3})
    monkeypatch.setattr(placement, "pin_process", lambda cpus: None)
    monkeypatch.setattr(placement.os, "sched_setaffinity", host.setaffinity)
    monkeypatch.setattr(gpus, "discover", lambda: [])
    where = placement.place("pinned", "cuda", measure=host.measure)
    core = where["training_core"]
    assert where["training_thread_cpus"] == [2] and core["cpu"] == 2 and host.at == {2}
    assert core["chosen_by"] == "probe" and "fastest of 3 CPU(s)" in core["reason"]
    assert core["probe"]["ops_per_s"] == {"0": 370e3, "1": 580e3, "2": 600e3, "3": 420e3}
    assert sorted(host.probed) == sorted([0, 1, 2, 3] * placement.hoststate.CORE_PROBE_REPEATS)
    assert where["helper_cpus"] == [0, 1, 3]
    placement._HELPERS = None


def test_the_median_probe_decides_so_one_interrupted_probe_does_not(monkeypatch):
    runs = {0: iter([1e3, 300e3, 300e3]), 1: iter([900e3, 400e3, 400e3])}
    host = FakeHost({})
    host.measure = lambda ops: next(runs[next(iter(host.at))])
    monkeypatch.setattr(placement.os, "sched_setaffinity", host.setaffinity)
    assert placement.probe_cores([0, 1], measure=host.measure) == {0: 300e3, 1: 400e3}


def test_first_takes_the_sets_first_cpu_without_probing(monkeypatch):
    host = FakeHost({0: 1.0, 1: 2.0})
    monkeypatch.setattr(placement, "allowed_cpus", lambda: {0, 1})
    monkeypatch.setattr(placement, "pin_process", lambda cpus: None)
    monkeypatch.setattr(placement.os, "sched_setaffinity", host.setaffinity)
    monkeypatch.setattr(gpus, "discover", lambda: [])
    where = placement.place("first", "cuda", measure=host.measure)
    assert where["training_core"] == {"cpu": 0, "chosen_by": "first", "probe": None,
                                      "reason": "the set's first CPU (cpu_placement: first)"}
    assert host.probed == [] and where["helper_cpus"] == [1]
    placement._HELPERS = None


def test_a_compiled_jobs_training_thread_has_the_whole_set_until_the_warm_up_boundary():
    """Threads inherit the affinity of the thread that starts them: the compiler's, started
    while widened, hold the whole set and go back to the training CPU with it; a helper that
    moved itself stays on the helpers."""
    before = os.sched_getaffinity(0)
    where = placement.place("pinned", "cuda")
    if len(where["cpu_set"]) < 2:
        placement.release(where)
        assert placement.widen_for_compile(where) is None
        return
    try:
        cpu = where["training_core"]["cpu"]
        narrow = placement.widen_for_compile(where)
        assert os.sched_getaffinity(0) == set(where["cpu_set"])
        go, seen = threading.Event(), {}

        def compiler():
            seen["started"] = os.sched_getaffinity(0)
            go.wait()
            seen["after"] = os.sched_getaffinity(0)

        def helper():
            placement.to_helpers()
            go.wait()
            seen["helper"] = os.sched_getaffinity(0)

        threads = [threading.Thread(target=compiler), threading.Thread(target=helper)]
        for t in threads:
            t.start()
        while "started" not in seen:
            pass
        narrow()
        narrow()   # the second call does nothing
        go.set()
        for t in threads:
            t.join()
        assert seen["started"] == set(where["cpu_set"])
        assert seen["after"] == {cpu} == os.sched_getaffinity(0)
        assert seen["helper"] == set(where["helper_cpus"])
    finally:
        placement.release(where)
    assert os.sched_getaffinity(0) == before
