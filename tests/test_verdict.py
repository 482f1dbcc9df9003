"""The verdict on small synthetic tables whose answers are known: the fastest configuration and
its speedup with an interval, claims only where the interval clears them, the warm-up on its
own, memory, Tensor Cores apart from what limits the step, accuracy paired by seed."""

from __future__ import annotations

import pandas as pd
import pytest

import gpu_like
from tcbench import closing, stats
from tcbench import resultset as RS
from tcbench.analysis import diagnosis as D
from tcbench.analysis.speedup import speedup
from tcbench.analysis.summarise import summarise
from tcbench.reports import verdict as Vd

MIB = 2**20


def row(exp, precision, bs=512, *, thr=1000.0, mem=1000 * MIB, tc=None, busy=None, mm=None,
        wait=0.01, status="ok", reason=None, acc=None, repeat=1, warm=2.0):
    ok = status == "ok"
    return {"run": "synthetic", "experiment": exp, "workload": "mnist_cnn", "cell": "c",
            "precision": precision, "batch_size": bs, "repeat": repeat, "seed": repeat - 1,
            "status": status, "status_reason": reason, "loader": "synthetic",
            "memory_format": "contiguous", "compile": "off", "cuda_graphs": "off",
            "cudnn_benchmark": "off", "model": "mnist_cnn", "data": "synthetic",
            "total_time_s": 51200 / thr + warm if ok else None,
            "time_to_steady_s": warm if ok else None,
            "throughput_samples_per_s": thr if ok else None,
            "max_memory_allocated_bytes": mem if ok else None,
            "data_wait_share": wait if ok else None, "input_bound": bool(ok and wait >= 0.2),
            "tensor_core_share": tc if ok else None, "gpu_busy_share": busy if ok else None,
            "matmul_share": mm if ok else None, "steady_energy_per_sample_j": 1.0 / thr
            if ok else None, "mfu": None, "test_accuracy": acc if ok else None,
            "device_name": "Test GPU", "compute_capability": "9.0",
            "top_kernel": "elementwise_kernel" if ok else None}


def repeats(exp, precision, thrs, **kw):
    """One row per repeat, throughputs as given (so the interval is known)."""
    accs = kw.pop("accs", [None] * len(thrs))
    return [row(exp, precision, thr=t, repeat=i + 1, acc=a, **kw)
            for i, (t, a) in enumerate(zip(thrs, accs))]


def build(rows):
    m = RS.order(pd.DataFrame(rows))
    s = summarise(m)
    return Vd.build(s, speedup(m, s), m)


@pytest.fixture
def verdict():
    rows = [
        # fast: amp-fp16 2.5x, interval clear of 1.10: pays off; Tensor Cores carry it
        *repeats("fast", "fp32", [1000, 1010, 990], mem=1000 * MIB, tc=0.0, mm=0.8, busy=0.95),
        *repeats("fast", "amp-fp16", [2500, 2480, 2520], mem=600 * MIB, tc=0.85, mm=0.9,
                 busy=0.95, warm=9.0),
        # input-bound: the data loader sets the pace; equivalent within the margin
        *repeats("input", "fp32", [1000, 1005, 995], tc=0.0, busy=0.2, wait=0.75),
        *repeats("input", "amp-bf16", [1001, 996, 1004], tc=0.7, mm=0.7, busy=0.1, wait=0.78),
        # host-bound and only a little faster: faster, not paying off
        *repeats("host", "fp32", [1000, 1002, 998], tc=0.0, busy=0.3),
        *repeats("host", "tf32", [1050, 1052, 1048], tc=0.6, mm=0.7, busy=0.3),
        # memory-bound, two repeats only: cannot be judged
        *repeats("membound", "fp32", [1000, 1010], tc=0.0, mm=0.3, busy=0.9),
        *repeats("membound", "amp-fp16", [1500, 1520], tc=0.2, mm=0.25, busy=0.9),
        # oom at 256 in fp32, amp-fp16 fits; tf32 unsupported
        *repeats("oom", "fp32", [100, 101, 99], bs=64, mem=4000 * MIB, tc=0.0, busy=0.95),
        *repeats("oom", "amp-fp16", [300, 301, 299], bs=64, mem=2500 * MIB, tc=0.85, mm=0.9,
                 busy=0.95),
        row("oom", "fp32", 256, status="oom", reason="CUDA out of memory"),
        *repeats("oom", "amp-fp16", [350, 351, 349], bs=256, mem=9000 * MIB, tc=0.9, busy=0.95),
        row("oom", "tf32", 64, status="unsupported", reason="no TF32 here"),
        # accuracy over five seeds, paired
        *repeats("acc", "fp32", [1000, 1010, 990, 1005, 995], tc=0.0, busy=0.95,
                 accs=[0.980, 0.975, 0.982, 0.978, 0.981]),
        *repeats("acc", "amp-bf16", [1001, 1011, 989, 1004, 996], tc=0.6, busy=0.95,
                 accs=[0.979, 0.976, 0.981, 0.977, 0.981]),
    ]
    return build(rows)


def section(v, name):
    return " ".join(next(s for s in v.sections if s.title.startswith(name + " ")).sentences)


def test_fastest_with_interval_and_claim(verdict):
    text = section(verdict, "fast")
    assert "**Fastest:** amp-fp16 at batch size 512, 2,500 [" in text
    assert "samples/s (95% CI, n = 3)" in text
    assert "2.50× [" in text and "it pays off" in text
    assert "**Warm-up**" in text and "9.00 s (all 3 runs) for the fastest configuration, " \
        "2.00 s (all 3 runs) for fp32" in text
    assert "40% less peak memory than fp32" in text


def test_tensor_cores_apart_from_what_limits_the_step(verdict):
    text = section(verdict, "fast")
    assert "the matrix work ran on Tensor Cores (85% of GPU kernel time" in text
    assert "**What limits amp-fp16 at batch size 512:** Tensor Core arithmetic" in text
    text = section(verdict, "input")
    assert "the input pipeline: the GPU waited for the next batch 78% of each step" in text
    assert "it is equivalent within ±3%" in text
    text = section(verdict, "host")
    assert "the host: the GPU had a kernel running only 30% of the wall time" in text
    assert "it is faster, but by less than the 1.10×" in text


def test_too_few_repeats_are_not_judged(verdict):
    text = section(verdict, "membound")
    assert "(range, n = 2)" in text and "cannot be judged" in text
    assert "memory-bound kernels" in text


def test_oom_unsupported_and_no_baseline(verdict):
    text = section(verdict, "oom")
    assert "**Memory made the difference:** fp32 ran out of memory at batch size 256, where " \
           "amp-fp16 fit in 8.79 GiB." in text
    assert "**Without a result:**" in text and "tf32 at batch size 64, unsupported: no TF32 " \
           "here" in text and "fp32 at batch size 256, oom: CUDA out of memory" in text


def test_accuracy_paired_by_seed(verdict):
    text = section(verdict, "acc")
    assert "**Test accuracy** (held-out set, mean over seeds): fp32 97.92% [" in text
    assert "paired by seed" in text and "amp-bf16 -0.04 [" in text
    assert "(equivalent within ±1.0 points)" in text


def test_bottom_line_covers_every_experiment(verdict):
    line = verdict.bottom_line
    assert line[0].startswith("Per experiment, the strongest claim its intervals support")
    assert len(line) == 1 + len(verdict.sections)
    said = " ".join(line)
    assert "fast: pays off: amp-fp16 at batch size 512, 2.50× [" in said
    assert "host: faster, by less than 1.10×: tf32 at batch size 512, 1.050× [1.04" in said
    assert "input: equivalent within ±3%: amp-bf16 at batch size 512" in said
    assert "membound: cannot be judged (n < 3): amp-fp16" in said
    assert "no difference" not in said


def test_rules_of_thumb():
    assert D.bottleneck({"input_bound": True, "gpu_busy_share": 0.1}) == "input"
    assert D.bottleneck({"input_bound": "True"}) == "input"          # as read back from CSV
    assert D.bottleneck({"input_bound": False, "gpu_busy_share": 0.49,
                         "tensor_core_share": 0.9}) == "host"
    assert D.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                         "tensor_core_share": 0.3, "matmul_share": 0.35}) == "memory"
    assert D.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                         "tensor_core_share": 0.0, "matmul_share": 0.8}) == "simt"
    assert D.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                         "tensor_core_share": 0.9}) == "tensor"
    assert D.bottleneck({"input_bound": False}) is None              # no profile (CPU)
    assert D.matmuls_on_tensor_cores({"tensor_core_share": 0.2, "matmul_share": 0.25}) is True
    assert D.matmuls_on_tensor_cores({"tensor_core_share": 0.0, "matmul_share": 0.8}) is False


def test_cpu_set_says_it_is_not_a_gpu():
    rows = repeats("x", "fp32", [100, 101, 99]) + repeats("x", "amp-bf16", [150, 151, 149])
    for r in rows:
        r |= {"compute_capability": None, "tensor_core_share": None, "gpu_busy_share": None,
              "max_memory_allocated_bytes": None, "device_name": "AMD EPYC"}
    v = build(rows)
    assert "not a CUDA GPU" in " ".join(v.intro)
    text = section(v, "x")
    assert "not measurable for amp-bf16" in text and "**Memory:** not measured" in text


def test_provenance_is_stated():
    rows = repeats("x", "fp32", [100, 101, 99]) + repeats("x", "amp-bf16", [150, 151, 149])
    for r in rows:
        r |= {"git_commit": "0123456789abcdef0123", "git_dirty": False, "execution": "native",
              "host_containerised": True}
    intro = " ".join(build(rows).intro)
    assert "commit 0123456789ab" in intro and "Every record ran on a clean tree." in intro
    assert "natively on a host that is itself a container" in intro
    rows[0] |= {"git_dirty": True, "allow_dirty": True}
    assert "1 of 6 records ran on a tree with uncommitted changes (the config set allow_dirty: " \
           "true)." in " ".join(build(rows).intro)


def test_a_model_zoo_is_answered_per_model(tmp_path):
    out = gpu_like.write(tmp_path)
    v = Vd.build(pd.read_csv(out / "summary.csv"), pd.read_csv(out / "speedup.csv"),
                 pd.read_csv(out / "metrics.csv"))
    titles = [s.title for s in v.sections]
    assert "zoo: resnet18 (torchvision, synthetic data)" in titles
    assert "zoo: vit_b_16 (torchvision, synthetic data)" in titles


def test_markdown_and_html_say_the_same(tmp_path):
    out = gpu_like.write(tmp_path)
    md, html = Vd.write(out / "metrics.csv", out / "summary.csv", out / "speedup.csv",
                         out / "summary.md", out / "summary.html")
    md_text, html_text = md.read_text(), html.read_text()
    assert md_text.startswith("# Verdict: gpu-like on NVIDIA H200")
    for exp in ("amp_recipe", "mnist_seed", "mnist_loaders", "digits", "resnet50"):
        assert f"## {exp} (" in md_text and f"<h3>{exp} (" in html_text
    assert "<strong>What limits" in html_text and "**" not in html_text
    assert closing.bottom_line(md).startswith("Per experiment, the strongest claim")


# ------------------------------------------------------------------ one scenario, one sentence
@pytest.fixture(scope="module")
def scenarios():
    rows = [
        # a supported small gain (tf32 1.16x, tight) beside a wide large one (amp-fp16 ~1.22x,
        # interval across 1), and amp-bf16 significantly slower at half the memory
        *repeats("mixed", "fp32", [1000, 1002, 998]),
        *repeats("mixed", "tf32", [1160, 1162, 1158]),
        *repeats("mixed", "amp-fp16", [900, 1200, 1560]),
        *repeats("mixed", "amp-bf16", [887, 885, 889], mem=500 * MIB),
        # equivalent within the margin, and inconclusive
        *repeats("equiv", "fp32", [1000, 1005, 995]),
        *repeats("equiv", "amp-bf16", [1001, 996, 1004]),
        *repeats("wide", "fp32", [1000, 1005, 995]),
        *repeats("wide", "tf32", [900, 1000, 1400]),
        # FP8 is judged against amp-bf16 at the same setting first
        *repeats("fp8", "fp32", [100, 101, 99]),
        *repeats("fp8", "amp-bf16", [1000, 1010, 990]),
        *repeats("fp8", "fp8-rowwise", [1300, 1310, 1290]),
        # fp32 only
        *repeats("only", "fp32", [1000, 1005, 995]),
        # accuracy over three seeds, paired, too spread for the +-1 point margin
        *repeats("acc3", "fp32", [1000, 1005, 995], accs=[0.970, 0.960, 0.975]),
        *repeats("acc3", "amp-bf16", [1001, 996, 1004], accs=[0.975, 0.950, 0.985]),
    ]
    return build(rows)


def said_of(v, exp):
    return next(x for x in v.bottom_line if x.startswith(exp + ": "))


def test_a_supported_small_gain_beats_a_wide_large_one(scenarios):
    line = said_of(scenarios, "mixed")
    assert line.startswith("mixed: pays off: tf32 at batch size 512, 1.160× [1.155, 1.165] (95% "
                           "CI) fp32's throughput at the same setting; peak memory 1.00× fp32's; "
                           "the largest memory saving is amp-bf16 at batch size 512, 0.500× "
                           "fp32's peak."), line
    assert "amp-fp16" not in line.split("Significantly")[0]


def test_a_significant_slowdown_is_said(scenarios):
    line = said_of(scenarios, "mixed")
    assert line.endswith(" Significantly slower: amp-bf16 at batch size 512, 0.887× [0.883, "
                         "0.891] (95% CI) fp32's."), line
    assert "**Significantly slower:** amp-bf16 at batch size 512, 0.887× [" in \
        section(scenarios, "mixed")


def test_inconclusive_is_not_equivalence(scenarios):
    assert said_of(scenarios, "equiv").startswith(
        "equiv: equivalent within ±3%: amp-bf16 at batch size 512, 1.00× [0.990, 1.01] (95% "
        "CI) fp32's")
    wide = said_of(scenarios, "wide")
    assert wide.startswith("wide: inconclusive: tf32 at batch size 512, 1.10× [0.605, 2.00] "
                           "(95% CI) fp32's"), wide
    assert "neither excludes 1 nor lies within ±3%" in section(scenarios, "wide")


def test_fp8_is_judged_against_bf16_first(scenarios):
    line = said_of(scenarios, "fp8")
    assert line.startswith("fp8: pays off: fp8-rowwise at batch size 512, 1.30× [") and \
        "amp-bf16's throughput at the same setting (13.0× [" in line, line
    assert "**FP8 against bf16:** fp8-rowwise at batch size 512, 1.30× [" in \
        section(scenarios, "fp8")


def test_an_experiment_with_fp32_only_says_so(scenarios):
    assert said_of(scenarios, "only") == \
        "only: only strict fp32 ran, so there is no reduced precision to judge."
    text = section(scenarios, "only")
    assert "Only strict fp32 ran in this experiment" in text and "beat" not in text


def test_accuracy_parity_the_seeds_cannot_resolve(scenarios):
    text = section(scenarios, "acc3")
    assert "amp-bf16 +0.17 [" in text and "(inconclusive: the interval is wider than the " \
        "±1.0-point margin, so 3 seeds on this test set cannot resolve it)" in text, text
    assert "equivalent within ±1.0 points" not in text
