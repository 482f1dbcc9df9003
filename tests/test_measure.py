import time

import numpy as np
import pytest
import torch

from tcbench.measure import core as measure
from tcbench.measure import telemetry
from tcbench.workloads.amp_recipe import make_model


def test_step_statistics_on_known_steps():
    wait = np.array([1.0, 0.1, 0.1, 0.1, 0.1])
    comp = np.array([2.0, 0.3, 0.3, 0.5, 0.3])
    s = measure.step_statistics(wait, comp, [10] * 5, warmup_steps=1, input_bound_share=0.2)
    assert s["warmup_time_s"] == pytest.approx(3.0)
    assert s["steady_steps"] == 4 and s["steady_time_s"] == pytest.approx(1.8)
    assert s["step_time_median_s"] == pytest.approx(0.4)
    assert s["throughput_samples_per_s"] == pytest.approx(40 / 1.8)
    assert s["data_wait_share"] == pytest.approx(0.4 / 1.8)
    assert s["input_bound"] is True
    assert measure.step_statistics(wait, comp, [10] * 5, 1, 0.5)["input_bound"] is False


def test_timer_attributes_a_slow_loader_to_data_wait():
    timer = measure.StepTimer(torch.device("cpu"))

    def slow_loader():
        for _ in range(5):
            time.sleep(0.05)
            yield torch.ones(2)
    it = iter(slow_loader())
    for _ in range(5):
        timer.fetch()
        next(it)
        timer.data_ready()
        time.sleep(0.01)
        timer.step_done()
    wait, comp = timer.intervals()
    assert len(wait) == 5
    assert np.all(wait >= 0.045) and np.all(wait < 0.2)
    assert np.all(comp >= 0.009) and np.all(comp < 0.05)
    s = measure.step_statistics(wait, comp, [2] * 5, 1, 0.2)
    assert s["input_bound"] and s["data_wait_share"] > 0.7


def test_recipe_mlp_flops_match_the_hand_count():
    # 3 Linear layers of 2*b*n*n FLOPs each forward; backward computes the weight gradient of
    # every layer and the input gradient of layers 2 and 3 only (the data needs no gradient):
    # 3 + 3 + 2 = 8 matmuls of 2*b*n*n, not the naive 3 x 3 = 9.
    b, n = 512, 4096
    model = make_model(n, n, 3)
    flops = measure.count_training_flops(model, torch.nn.MSELoss(),
                                         (torch.randn(b, n), torch.randn(b, n)))
    assert flops == 8 * 2 * b * n * n
    # the real model is untouched (still on the CPU, no gradients)
    assert next(model.parameters()).device.type == "cpu"
    assert all(p.grad is None for p in model.parameters())


def test_nvml_absent_gives_null_fields_and_a_reason():
    s = measure.NvmlSampler(torch.device("cpu"))
    with s:
        pass
    r = s.result(samples=100)
    assert r["energy_j"] is None and r["power_mean_w"] is None
    assert "no CUDA device" in r["telemetry_note"]


def test_nvml_failure_is_a_reason_not_a_crash(monkeypatch):
    import pynvml

    def boom():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    monkeypatch.setattr(pynvml, "nvmlInit", boom)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: None)
    s = measure.NvmlSampler(torch.device("cuda", 0))
    assert s.handle is None and s.reason.startswith("NVML unavailable")
    assert s.result(1)["energy_j"] is None


def test_memory_stats_on_cpu_are_null_with_a_note():
    m = measure.memory_stats(torch.device("cpu"))
    assert m["max_memory_allocated_bytes"] is None and "CUDA" in m["memory_note"]


class FakeNvml:
    """Just enough of pynvml for the sampler: an energy counter that advances 1 J per read."""
    NVML_CLOCK_SM, NVML_TEMPERATURE_GPU = 1, 0

    def __init__(self, counter=True):
        self.mj, self.counter, self.calls = 0, counter, []

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.counter:
            raise RuntimeError("not supported")
        self.mj += 1000
        return self.mj

    def __getattr__(self, name):  # every other query: a constant, counted
        def query(*a):
            self.calls.append(name)
            return type("Mem", (), {"used": 1})() if "Memory" in name else 100
        return query


def fake_sampler(counter=True, interval=0.01):
    s = measure.NvmlSampler(torch.device("cpu"), interval_s=interval)
    s.handle, s.nvml, s.reason = object(), FakeNvml(counter), None
    return s


class PowerNvml(FakeNvml):
    """A GPU drawing ``watts`` steadily: its energy counter follows the clock, its instant
    power (NVML's field) reads ``sampled_w``."""
    NVML_FI_DEV_POWER_INSTANT, NVML_SUCCESS = 186, 0

    def __init__(self, watts=200.0, sampled_w=210.0):
        super().__init__()
        self.watts, self.sampled_w, self.t0 = watts, sampled_w, time.perf_counter()

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return int(self.watts * 1e3 * (time.perf_counter() - self.t0))

    def nvmlDeviceGetFieldValues(self, h, fields):
        assert fields == [186]
        value = type("Value", (), {"uiVal": int(self.sampled_w * 1e3)})()
        return [type("Field", (), {"nvmlReturn": 0, "valueType": 1, "value": value})()]


def test_steady_energy_is_the_counter_over_the_steady_segments_only():
    s = measure.NvmlSampler(torch.device("cpu"), interval_s=0.005)
    s.handle, s.nvml, s.reason = object(), PowerNvml(), None
    with s:
        time.sleep(0.05)
        s.mark_steady()
        time.sleep(0.2)
        s.pause()              # evaluation: not part of the steady window
        time.sleep(0.2)
        s.resume()
        time.sleep(0.2)
    r = s.result(samples=100, steady_samples=40)
    assert r["steady_energy_window_s"] == pytest.approx(0.4, abs=0.05)
    assert r["steady_energy_j"] == pytest.approx(200 * r["steady_energy_window_s"], rel=0.02)
    assert r["steady_energy_per_sample_j"] == pytest.approx(r["steady_energy_j"] / 40)
    assert r["steady_energy_counter_updates"] >= 10 and r["steady_energy_cross_check_ok"]
    assert r["steady_energy_note"] is None and r["energy_j"] is not None
    assert r["power_source"] == "instant" and r["power_max_w"] == pytest.approx(210)


def samples(t, watts_counter, watts_sampled, step_s=0.1):
    out = telemetry._Samples()
    for k in range(int(t / step_s) + 1):
        out.t.append(k * step_s)
        out.energy_mj.append(watts_counter * 1e3 * k * step_s)
        out.power_w.append(watts_sampled)
    return out


def segment(t0, t1, w):
    return ((t0, w * 1e3 * t0), (t1, w * 1e3 * t1))


def test_energy_of_a_window_the_counter_cannot_resolve_is_null_with_the_reason():
    r = telemetry.window_energy([segment(0.0, 0.4, 300)], samples(2.0, 300, 300),
                                power_source="instant")
    assert r["steady_energy_j"] is None and r["steady_energy_counter_updates"] < 10
    assert "too short" in r["steady_energy_note"]


def test_energy_implying_more_power_than_was_sampled_is_null():
    """A case seen on an H200: a counter implying 367-572 W while sampled power stayed below 141 W."""
    r = telemetry.window_energy([segment(0.0, 2.0, 500)], samples(2.0, 500, 140),
                                power_source="instant")
    assert r["steady_energy_j"] is None
    assert r["steady_energy_implied_power_w"] == pytest.approx(500)
    assert "more than the 140 W sampled" in r["steady_energy_note"]


def test_counter_and_sampled_power_that_disagree_give_no_energy():
    r = telemetry.window_energy([segment(0.0, 2.0, 100)], samples(2.0, 100, 140),
                                power_source="instant")
    assert r["steady_energy_j"] is None
    assert r["steady_energy_implied_power_w"] == pytest.approx(100)
    assert r["steady_energy_sampled_j"] == pytest.approx(280)
    assert r["steady_energy_cross_check_ok"] is False and "0.71x" in r["steady_energy_note"]
    agree = telemetry.window_energy([segment(0.0, 2.0, 100)], samples(2.0, 100, 104),
                                    power_source="instant")
    assert agree["steady_energy_j"] == pytest.approx(200)
    assert agree["steady_energy_cross_check_ok"] and agree["steady_energy_note"] is None


def test_steady_energy_without_a_counter_is_null_with_a_note():
    s = fake_sampler(counter=False)
    with s:
        s.mark_steady()
    r = s.result(samples=10, steady_samples=5)
    assert r["steady_energy_j"] is None and "energy counter" in r["steady_energy_note"]
    s = fake_sampler()
    with s:
        pass
    assert "warm-up boundary" in s.result(10, 5)["steady_energy_note"]


def test_sampler_reads_slow_quantities_less_often():
    s = fake_sampler(interval=0.002)
    with s:
        time.sleep(0.2)
    calls = s.nvml.calls
    power = calls.count("nvmlDeviceGetPowerUsage")
    assert power > 10
    assert calls.count("nvmlDeviceGetTemperature") <= power // s.slow_every + 1


@pytest.mark.parametrize("groups", [1, 4, 64])
def test_a_grouped_convolutions_backward_costs_twice_its_forward(groups):
    """Weight gradient + nothing for the input (data needs no gradient): once the forward
    again, whatever the groups; torch's own count would give 64x that for depthwise."""
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, groups=groups, bias=False)
    forward = 2 * 8 * 64 * 32 * 32 * (64 // groups) * 9
    flops = measure.count_training_flops(conv, lambda out, _: out.sum(),
                                         (torch.randn(8, 64, 32, 32), torch.zeros(8)))
    assert flops == 2 * forward
