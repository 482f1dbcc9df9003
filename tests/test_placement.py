"""CPU placement: disjoint slices per GPU, the training thread alone, helpers off it, the record
naming the set, its host and its neighbours; cpu_placement: os leaves the process as it was."""

import os
import threading

from tcbench import gpus, placement as PL


def test_slices_per_gpu_are_disjoint_and_prefer_the_gpus_own_cpus():
    allowed = set(range(32))
    local = set(range(16, 32))
    slices = [PL.slot_cpus(allowed, local, k, 2) for k in range(2)]
    assert slices == [list(range(16, 24)), list(range(24, 32))]
    assert PL.slot_cpus(allowed, {99}, 0, 1) == sorted(allowed)   # no overlap: what is allowed
    assert PL.slot_cpus({0, 1}, None, 1, 4) == [0, 1]              # fewer CPUs than GPUs


def test_pinned_puts_the_training_thread_alone_and_helpers_elsewhere_then_releases():
    before = os.sched_getaffinity(0)
    where = PL.place("pinned", "cuda")  # a GPU job: its training thread alone
    try:
        assert os.sched_getaffinity(0) == set(where["training_thread_cpus"])
        seen = []
        t = threading.Thread(target=lambda: (PL.to_helpers(), seen.append(os.sched_getaffinity(0))))
        t.start()
        t.join()
        assert seen == [set(where["helper_cpus"])]
        if len(where["cpu_set"]) > 1:
            assert not set(where["helper_cpus"]) & set(where["training_thread_cpus"])
        assert where["host"] == os.uname().nodename and where["cpu_placement"] == "pinned"
    finally:
        PL.release(where)
    assert os.sched_getaffinity(0) == before


def test_a_cpu_jobs_training_thread_keeps_the_whole_set_for_its_intra_op_threads():
    """On the CPU the training thread's intra-op pool does the work, and threads inherit the
    affinity of the thread that starts them: one CPU for it would leave the job one core."""
    before = os.sched_getaffinity(0)
    where = PL.place("pinned", "cpu")
    try:
        assert where["training_thread_cpus"] == where["cpu_set"] == where["helper_cpus"]
        assert os.sched_getaffinity(0) == set(where["cpu_set"])
        started = []
        t = threading.Thread(target=lambda: started.append(os.sched_getaffinity(0)))
        t.start()
        t.join()
        assert started == [set(where["cpu_set"])]
    finally:
        PL.release(where)
    assert os.sched_getaffinity(0) == before


def test_a_cpu_job_records_the_whole_set_as_its_training_cpus(tmp_path):
    from tcbench import run

    rec = run.run_job({"workload": "amp_recipe", "precision": "fp32", "batch_size": 8,
                       "device": "cpu", "params": {"in_size": 16, "out_size": 16,
                                                   "num_batches": 2, "epochs": 1,
                                                   "warmup_steps": 1}})
    p = rec["placement"]
    assert p["cpu_placement"] == "pinned" and p["training_thread_cpus"] == p["cpu_set"]


def test_os_placement_changes_nothing():
    before = os.sched_getaffinity(0)
    where = PL.place("os")
    assert os.sched_getaffinity(0) == before and where["cpu_set"] == sorted(before)
    PL.release(where)


def test_neighbours_are_the_gpu_locks_other_processes_hold(tmp_path):
    a, b = tmp_path / "gpu-GPU-a.lock", tmp_path / "gpu-GPU-b.lock"
    a.write_text("pid 4242 on host\n")
    b.write_text("")
    locks = (f"1: FLOCK  ADVISORY  WRITE 4242 00:2f:{a.stat().st_ino} 0 EOF\n"
             f"2: -> FLOCK  ADVISORY  WRITE 4243 00:2f:{b.stat().st_ino} 0 EOF\n")
    got = PL.neighbours(tmp_path, locks)
    assert got == [{"gpu_uuid": "GPU-a", "pid": 4242, "holder": "pid 4242 on host"}]


def test_a_held_lock_is_seen_in_proc_locks(tmp_path):
    claim = gpus.try_claim(gpus.Gpu(0, "GPU-x"), tmp_path)
    try:
        held = PL.held_flocks(open("/proc/locks").read())
        assert held.get((tmp_path / "gpu-GPU-x.lock").stat().st_ino) == os.getpid()
    finally:
        claim.release()
