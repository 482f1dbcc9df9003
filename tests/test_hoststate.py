"""The host's state over a job's timed window: the dispatch probe before and after, context
switches, and interrupt and steal time read from /proc/stat."""

import pytest

from tcbench.host import hoststate

STAT_A = """cpu  100 0 50 1000 0 10 5 2 0 0
cpu0 60 0 30 500 0 8 4 2 0 0
cpu1 40 0 20 500 0 2 1 0 0 0
intr 12345
"""
STAT_B = """cpu  200 0 90 1500 0 30 15 12 0 0
cpu0 120 0 50 700 0 26 12 10 0 0
cpu1 80 0 40 800 0 4 3 2 0 0
intr 22345
"""


def test_proc_stat_lines_are_read_per_cpu_in_ticks():
    got = hoststate.read_stat(STAT_A)
    assert set(got) == {"cpu", "cpu0", "cpu1"}
    assert got["cpu0"]["irq"] == 8 and got["cpu0"]["softirq"] == 4 and got["cpu0"]["steal"] == 2


def test_the_window_reports_the_training_cpus_and_the_hosts_interrupt_and_steal_seconds(
        monkeypatch):
    stats = iter([hoststate.read_stat(STAT_A), hoststate.read_stat(STAT_B)])
    speeds = iter([300e3, 200e3])
    monkeypatch.setattr(hoststate, "read_stat", lambda text=None: next(stats))
    monkeypatch.setattr(hoststate, "probe", lambda ops: next(speeds))
    monkeypatch.setattr(hoststate, "_ticks_per_s", lambda: 100.0)
    w = hoststate.Window(training_cpu=0, ops=500)
    w.start()
    w.stop()
    r = w.result()
    assert r["probe"]["before_ops_per_s"] == 300e3 and r["probe"]["after_ops_per_s"] == 200e3
    assert r["probe"]["ops"] == 500 and "500 x Tensor.add_(1)" in r["probe"]["what"]
    assert r["training_cpu"] == {"cpu": 0, "irq_s": pytest.approx(0.18),
                                 "softirq_s": pytest.approx(0.08), "steal_s": pytest.approx(0.08)}
    assert r["host"] == {"cpus": 2, "irq_s": pytest.approx(0.20), "softirq_s": pytest.approx(0.10),
                         "steal_s": pytest.approx(0.10)}
    assert r["window_wall_s"] >= 0
    assert set(r["process"]) == {"involuntary_ctx_switches", "voluntary_ctx_switches"}


def test_a_window_never_started_or_stopped_says_nothing():
    w = hoststate.Window(training_cpu=None, ops=10)
    assert w.result() is None
    w.start()
    assert w.result() is None
    w.stop()
    assert w.result()["training_cpu"] is None


def test_the_probe_measures_a_positive_rate():
    assert hoststate.probe(200) > 0


def test_a_job_records_the_hosts_state_over_its_timed_window():
    from tcbench import record as R
    from tcbench.job import run

    rec = run.run_job({"workload": "amp_recipe", "precision": "fp32", "batch_size": 8,
                       "device": "cpu", "params": {"in_size": 16, "out_size": 16,
                                                   "num_batches": 4, "epochs": 2,
                                                   "warmup_steps": 1}})
    R.validate(rec)
    hs = rec["host_state"]
    assert hs["probe"]["before_ops_per_s"] > 0 and hs["probe"]["after_ops_per_s"] > 0
    assert hs["window_wall_s"] > 0
    assert rec["placement"]["training_core"]["chosen_by"] == "cpu-job"
