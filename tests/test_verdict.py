"""The verdict on small synthetic tables whose answers are known: fastest configuration, speedup,
memory saving, whether Tensor Cores carried the work, and the bottleneck when they did not."""

from __future__ import annotations

import pandas as pd
import pytest

import gpu_like
from tcbench import aggregate as A
from tcbench import verdict as V

MIB = 2**20


def row(exp, precision, bs=512, *, time=10.0, mem=1000 * MIB, tc=None, busy=None, wait=0.01,
        status="ok", reason=None, acc=None, samples=51200, loader="synthetic"):
    ok = status == "ok"
    return {"run": "synthetic", "experiment": exp, "workload": "mnist_cnn", "cell": "c",
            "precision": precision, "batch_size": bs, "repeat": 1, "status": status,
            "status_reason": reason, "loader": loader, "memory_format": "contiguous",
            "compile": "off", "data": "synthetic",
            "total_time_s": time if ok else None,
            "throughput_samples_per_s": samples / time if ok else None,
            "max_memory_allocated_bytes": mem if ok else None,
            "data_wait_share": wait if ok else None, "input_bound": bool(ok and wait >= 0.2),
            "tensor_core_share": tc if ok else None, "gpu_busy_share": busy if ok else None,
            "mfu": None, "test_accuracy": acc if ok else None, "device_name": "Test GPU",
            "compute_capability": "9.0", "top_kernel": "elementwise_kernel" if ok else None}


def tables(rows):
    m = pd.DataFrame(rows)
    m["precision"] = pd.Categorical(m["precision"], A.PRECISION_ORDER, ordered=True)
    s = A.summarise(m)
    return s, A.speedup(s), m


@pytest.fixture
def verdict():
    rows = [
        # fast: amp-fp16 is 2.5x faster, 40% less memory, Tensor Cores carry it
        row("fast", "fp32", time=10.0, mem=1000 * MIB, tc=0.0, busy=0.95),
        row("fast", "amp-fp16", time=4.0, mem=600 * MIB, tc=0.9, busy=0.95),
        # input: the data loader sets the pace
        row("input", "fp32", time=10.0, tc=0.0, busy=0.2, wait=0.75),
        row("input", "amp-bf16", time=9.8, tc=0.7, busy=0.1, wait=0.78),
        # host: the GPU idles between tiny kernels
        row("host", "fp32", time=5.0, tc=0.0, busy=0.3),
        row("host", "tf32", time=4.9, tc=0.6, busy=0.3),
        # memory: busy GPU, little Tensor Core work
        row("membound", "fp32", time=8.0, tc=0.0, busy=0.9),
        row("membound", "amp-fp16", time=7.9, tc=0.2, busy=0.9),
        # oom: fp32 does not fit at 256, amp-fp16 does; tf32 unsupported
        row("oom", "fp32", 64, time=4.0, mem=4000 * MIB, tc=0.0, busy=0.95, samples=12800),
        row("oom", "amp-fp16", 64, time=2.0, mem=2500 * MIB, tc=0.85, busy=0.95, samples=12800),
        row("oom", "fp32", 256, status="oom", reason="CUDA out of memory"),
        row("oom", "amp-fp16", 256, time=6.0, mem=9000 * MIB, tc=0.9, busy=0.95, samples=76800),
        row("oom", "tf32", 64, status="unsupported", reason="no TF32 here"),
        # accuracy parity
        row("acc", "fp32", time=3.0, tc=0.0, busy=0.95, acc=0.98),
        row("acc", "amp-bf16", time=3.0, tc=0.6, busy=0.95, acc=0.975),
    ]
    return V.build(*tables(rows))


def section(v, name):
    return " ".join(next(s for s in v.sections if s.title.startswith(name)).sentences)


def test_fastest_speedup_memory_and_tensor_cores(verdict):
    text = section(verdict, "fast")
    assert "**Fastest:** amp-fp16 at batch size 512" in text
    assert "2.50× the speed in total time" in text and "(10.0 s)" in text
    assert "40% less peak memory than fp32 (600 MiB vs 1,000 MiB" in text
    assert "**Tensor Cores carried the work:** 90% of GPU kernel time" in text
    assert "(strict fp32: 0%)" in text
    assert "Bottleneck" not in text            # it paid off: nothing to explain


def test_input_bound(verdict):
    text = section(verdict, "input")
    assert "best speedup over fp32 is 1.02× (amp-bf16 at batch size 512)" in text
    assert "**Bottleneck: the input pipeline.**" in text and "78% of each step" in text


def test_host_bound(verdict):
    text = section(verdict, "host")
    assert "**Bottleneck: launch overhead on the host.**" in text
    assert "only 30% of the wall time" in text


def test_memory_bound(verdict):
    text = section(verdict, "membound")
    assert "**Tensor Cores did not carry the work:** only 20%" in text
    assert "**Bottleneck: memory-bound kernels.**" in text and "busy 90%" in text


def test_oom_unsupported_and_no_baseline(verdict):
    text = section(verdict, "oom")
    # the fastest by throughput (12,800 samples/s) has no fp32 at its batch size
    assert "**Fastest:** amp-fp16 at batch size 256" in text
    assert "fp32 has no result at this setting (oom)" in text
    assert "against the fastest fp32 configuration (batch size 64, 3,200 samples/s) it " \
           "delivers 4.00× the throughput" in text
    assert "fp32 ran out of memory at batch size 256, where amp-fp16 fit in 8.79 GiB" in text
    assert "tf32 at batch size 64 — unsupported: no TF32 here" in text
    assert "fp32 at batch size 256 — oom: CUDA out of memory" in text


def test_accuracy_parity(verdict):
    text = section(verdict, "acc")
    assert "fp32 98.00%, amp-bf16 97.50%" in text and "0.50 points" in text


def test_bottom_line_counts_and_names(verdict):
    line = " ".join(verdict.bottom_line)
    assert "in 2 of 6 experiments, most in fast (2.50× with amp-fp16 at batch size 512)" in line
    assert "input: 1.02× at best (amp-bf16 at batch size 512); bottleneck: the input " \
           "pipeline (Tensor Cores carried the work)." in line
    assert "host: 0.98" not in line and "host: 1.02× at best" in line
    assert "membound: 1.01× at best (amp-fp16 at batch size 512); bottleneck: memory-bound" \
        in line


def test_rules_of_thumb():
    assert V.bottleneck({"input_bound": True, "gpu_busy_share": 0.1}) == "input"
    assert V.bottleneck({"input_bound": "True"}) == "input"          # as read back from CSV
    assert V.bottleneck({"input_bound": False, "gpu_busy_share": 0.49}) == "host"
    assert V.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                         "tensor_core_share": 0.3}) == "memory"
    assert V.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                         "tensor_core_share": 0.9}) is None
    assert V.bottleneck({"input_bound": False}) is None              # no profile (CPU)
    assert V.tensor_cores_carried({"tensor_core_share": 0.5}) is True
    assert V.tensor_cores_carried({"tensor_core_share": None}) is None


def test_cpu_set_says_it_is_not_a_gpu():
    rows = [row("x", "fp32"), row("x", "amp-bf16", time=5.0)]
    for r in rows:
        r |= {"compute_capability": None, "tensor_core_share": None, "gpu_busy_share": None,
              "max_memory_allocated_bytes": None, "device_name": "AMD EPYC"}
    v = V.build(*tables(rows))
    assert "not a CUDA GPU" in " ".join(v.intro)
    text = section(v, "x")
    assert "**Tensor Cores:** not measured" in text and "**Memory:** not measured" in text


def test_markdown_and_html_say_the_same(tmp_path):
    out = gpu_like.write(tmp_path)
    md, html = V.write(out, out)
    md_text, html_text = md.read_text(), html.read_text()
    assert md_text.startswith("# Verdict: gpu-like on NVIDIA H200")
    for exp in ("amp_recipe", "mnist_seed", "mnist_loaders", "digits", "resnet50"):
        assert f"## {exp} (" in md_text and f"<h3>{exp} (" in html_text
    assert "<strong>Bottleneck: the input pipeline.</strong>" in html_text
    assert "**" not in html_text


def test_median_basis_counts_the_fastest_cells_own_repeats():
    rows = [row("r", "fp32", time=10.0, tc=0.0, busy=0.95),
            {**row("r", "fp32", time=10.2, tc=0.0, busy=0.95), "repeat": 2},
            row("r", "amp-fp16", time=4.0, tc=0.9, busy=0.95)]       # one repeat only
    assert "(median of 1 run)" in section(V.build(*tables(rows)), "r")
    rows += [{**row("r", "amp-fp16", status="oom", reason="CUDA out of memory"), "repeat": 2},
             {**row("r", "amp-fp16", time=4.2, tc=0.9, busy=0.95), "repeat": 3}]
    text = section(V.build(*tables(rows)), "r")
    assert "(median of 2 repeats; 1 of its 3 repeats did not finish)" in text
