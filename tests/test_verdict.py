"""The verdict on small synthetic tables whose answers are known: one table per set first (every
experiment, its best mode against its one baseline with the interval, the claim, memory, what
limits it, how it was decided), then per experiment a table of its cells and at most three
sentences; claims only where the interval clears them, Tensor Cores apart from what limits the
step, accuracy paired by seed."""

from __future__ import annotations

import pandas as pd
import pytest

import gpu_like
from tcbench import closing
from tcbench import resultset
from tcbench import stats
from tcbench.analysis import claims, diagnosis
from tcbench.analysis.speedup import speedup
from tcbench.analysis.summarise import summarise
from tcbench.reports import answer
from tcbench.reports import findings
from tcbench.reports import noisy
from tcbench.reports import verdict as verdict_report
from tcbench.reports.phrases import judged_ratio

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
    m = resultset.order(pd.DataFrame(rows))
    s = summarise(m)
    return verdict_report.build(s, speedup(m, s), m)


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
    return next(s for s in v.sections if s.title.startswith(name + " "))


def said(v, name):
    """A section's sentences, as one text."""
    return " ".join(section(v, name).sentences)


def cells(v, name):
    """A section's table, by (setting, precision)."""
    t = section(v, name).table
    return {(r[0], r[1]): dict(zip(t.columns, r)) for r in t.rows}


def answers(v):
    """The one-screen table, by experiment."""
    return {r[0]: dict(zip(v.answer.columns, r)) for r in v.answer.rows}


def test_the_answer_table_has_every_experiment_and_its_columns(verdict):
    assert verdict.answer.columns == answer.COLUMNS
    experiments = [s.title.split(" (")[0] for s in verdict.sections if s.title != noisy.TITLE]
    assert list(answers(verdict)) == experiments
    fast = answers(verdict)["fast"]
    assert fast["best mode and setting"] == "amp-fp16, bs 512"
    assert fast["× its baseline [95% CI]"].startswith("2.50× [") and \
        fast["× its baseline [95% CI]"].endswith("] fp32")
    assert fast["claim"] == "pays off" and fast["peak memory ×"] == "0.600×"
    assert fast["what limits it"] == "Tensor Core 85%, non-matrix 10%"
    assert fast["how it was decided"] == "n = 3 vs 3, per process"
    assert fast["question it answers"] == "do Tensor Cores speed up mnist_cnn over fp32?"
    assert answers(verdict)["acc"]["question it answers"] == \
        "does reduced precision keep the accuracy of mnist_cnn, and speed it up?"
    # the row answers both halves of its question: the speed claim, then the accuracy's
    claim = answers(verdict)["acc"]["claim"]
    assert "; accuracy equivalent within ±1.0 points (-0.04 [" in claim and \
        claim.endswith("points against fp32)"), claim
    assert "accuracy" not in fast["claim"]


def test_an_fp8_accuracy_check_without_bf16_answers_its_accuracy_and_not_its_speed():
    accs = [0.97, 0.98, 0.975]
    rows = [*repeats("fp8acc", "fp32", [1000, 1010, 990], accs=accs),
            *repeats("fp8acc", "fp8-rowwise", [400, 410, 390],
                     accs=[a + d for a, d in zip(accs, (0.002, -0.003, 0.001))])]
    a = {r[0]: dict(zip(answer.COLUMNS, r)) for r in build(rows).answer.rows}["fp8acc"]
    assert a["question it answers"] == \
        "does FP8 keep the accuracy of mnist_cnn, and train it faster than amp-bf16?"
    assert a["claim"].startswith("not judged: no amp-bf16 run"), a["claim"]
    assert "; accuracy equivalent within ±1.0 points (" in a["claim"], a["claim"]
    assert a["claim"].endswith("points against fp32)"), a["claim"]


def test_a_section_is_a_table_and_at_most_three_sentences(verdict):
    for s in verdict.sections:
        if s.title == noisy.TITLE:
            continue
        assert s.table is not None and len(s.sentences) <= findings.MAX_SENTENCES, s.title
    fast = cells(verdict, "fast")
    assert fast[("bs 512", "amp-fp16")]["samples/s"].startswith("2,500 [")
    assert fast[("bs 512", "amp-fp16")]["claim"] == "pays off"
    assert fast[("bs 512", "fp32")]["× its baseline"] == ""
    text = said(verdict, "fast")
    assert "amp-fp16 at batch size 512: 2.50× [" in text and "it pays off" in text
    assert "**" not in text


def test_tensor_cores_apart_from_what_limits_the_step(verdict):
    text = said(verdict, "fast")
    # 85% of 90%: most of the matrix work, not all of it, ran on Tensor Cores
    assert "What limits amp-fp16 at batch size 512: Tensor Core kernels: they took 85% of " \
           "kernel time, and the GPU was busy 95% of the timed steps' wall time; 94% of its " \
           "matrix kernel time ran on Tensor Cores, the rest in other matrix kernels" in text
    assert "the matrix work ran on Tensor Cores" not in text
    text = said(verdict, "input")
    assert "the input pipeline: the GPU waited for the next batch 78% of each step" in text
    assert "it is equivalent within ±3%" in text
    assert answers(verdict)["input"]["what limits it"] == "input"


def test_a_host_bound_cell_is_not_judged_from_its_repeats(verdict):
    """GPU busy 30% and no interleaved comparison: tf32's tight 1.05x is no claim."""
    row = answers(verdict)["host"]
    assert row["claim"] == "not judged: host-bound, no interleaved comparison"
    assert row["what limits it"] == "the host (GPU busy 30%); CUDA graphs not measured here"
    assert "host-bound (GPU busy 30%), no interleaved comparison" in row["how it was decided"]
    text = said(verdict, "host")
    assert "the host: the GPU had a kernel running only 30% of the timed steps' wall time" \
        in text
    assert "faster" not in text and "pays off" not in text


def test_too_few_repeats_are_not_judged(verdict):
    row = cells(verdict, "membound")[("bs 512", "amp-fp16")]
    assert row["samples/s"].endswith("(range 1,500–1,520)") and row["claim"] == "n < 3"
    text = said(verdict, "membound")
    assert "cannot be judged" in text
    # 75% of kernel time outside matrix kernels: said as that, bandwidth not being measured
    assert "non-matrix kernels: the GPU was busy 90% of the timed steps' wall time, and 75% of " \
           "its kernel time went to kernels that do no matrix work" in text
    assert "whether they are bound by memory bandwidth is not measured" in text
    assert "memory-bound" not in text


def test_oom_unsupported_and_no_baseline(verdict):
    t = cells(verdict, "oom")
    assert t[("bs 256", "fp32")]["n"] == "0/1 oom" and t[("bs 64", "tf32")]["n"] == \
        "0/1 unsupported"
    assert t[("bs 256", "amp-fp16")]["× its baseline"] == ""
    assert "fp32 ran out of memory at batch size 256, where amp-fp16 fit in 8.79 GiB." in \
        said(verdict, "oom")


def test_accuracy_paired_by_seed(verdict):
    row = cells(verdict, "acc")[("bs 512", "amp-bf16")]
    assert row["Δ accuracy (points)"].startswith("-0.04 [")
    assert row["Δ accuracy (points)"].endswith("(equivalent within ±1.0 points)")
    assert "Δ accuracy (points)" not in section(verdict, "fast").table.columns


def test_the_bottom_line_says_each_experiments_claim(verdict):
    line = " ".join(verdict.bottom_line)
    assert line.startswith("Reduced precision pays off in fast (amp-fp16, 2.50× fp32)")
    assert "is equivalent to its baseline within ±3% in acc (amp-bf16, 1.00× fp32) and " \
           "input (amp-bf16, 1.00× fp32)" in line
    assert "cannot be judged from fewer than three repeats in membound" in line
    assert "is not judged in host (host-bound, no interleaved comparison)" in line
    assert "no difference" not in line


def test_the_bottom_line_prints_each_ratio_as_the_answer_table_does():
    """Its value at the digits its interval carries (``render.numbers.carried_place``), with
    the interval's mark, never three digits the interval does not carry."""
    v = build([*repeats("wide", "fp32", [1000, 1010, 990]),
               *repeats("wide", "amp-bf16", [2000, 3000, 2600])])
    assert answers(v)["wide"]["× its baseline [95% CI]"] == "2.5× [1.5, 4.1] fp32"
    assert " ".join(v.bottom_line) == "Reduced precision pays off in wide (amp-bf16, 2.5× fp32)."

    def named(exp, precision, e, base):
        j = claims.Judgement(pd.Series({"precision": precision}), base, e, stats.claim(e),
                             "interleaved_speedup", claims.INTERLEAVED)
        return answer.Answer(exp, [], j, None)

    rows = [named("across", "tf32", stats.Estimate(2.91, 2.2, 3.8, 3, stats.RUNS), "fp32"),
            named("one", "fp8-tensorwise", stats.Estimate(1.263, 1.258, 1.268, 1, stats.PAIRED),
                  "amp-bf16")]
    line = answer.bottom_line(rows)
    assert "across (tf32, 2.9×§ fp32)" in line
    assert "one (fp8-tensorwise, 1.26×¶ amp-bf16)" in line
    assert judged_ratio(rows[0].judgement) == "2.9× [2.2, 3.8]§ fp32"


def test_rules_of_thumb():
    assert diagnosis.bottleneck({"input_bound": True, "gpu_busy_share": 0.1}) == "input"
    assert diagnosis.bottleneck({"input_bound": "True"}) == "input"          # as read back from CSV
    assert diagnosis.bottleneck({"input_bound": False, "gpu_busy_share": 0.49,
                                 "tensor_core_share": 0.9}) == "host"
    # the host is named below the share at which a cell is decided as host-bound
    assert diagnosis.bottleneck({"input_bound": False, "gpu_busy_share": 0.84,
                                 "tensor_core_share": 0.68, "matmul_share": 0.68}) == "host"
    assert diagnosis.host_bound({"gpu_busy_share": 0.84})
    assert not diagnosis.host_bound({"gpu_busy_share": 0.9})
    assert not diagnosis.host_bound({"gpu_busy_share": 0.2, "input_bound": True})   # the loader's
    assert not diagnosis.host_bound({"gpu_busy_share": None})
    assert diagnosis.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                                 "tensor_core_share": 0.3, "matmul_share": 0.35}) == "non_matrix"
    # a near tie (51% Tensor Core, 49% the rest) is called for neither side
    assert diagnosis.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                                 "tensor_core_share": 0.51, "matmul_share": 0.51}) == "mixed"
    assert diagnosis.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                                 "tensor_core_share": 0.4, "matmul_share": 0.55}) == "mixed"
    assert diagnosis.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                                 "tensor_core_share": 0.0, "matmul_share": 0.8}) == "simt"
    assert diagnosis.bottleneck({"input_bound": False, "gpu_busy_share": 0.9,
                                 "tensor_core_share": 0.9}) == "tensor"
    assert diagnosis.bottleneck({"input_bound": False}) is None              # no profile (CPU)
    assert diagnosis.matmuls_on_tensor_cores({"tensor_core_share": 0.24,
                                              "matmul_share": 0.25}) is True
    # four fifths of the matrix time is not "the matrix work ran on Tensor Cores"
    assert diagnosis.matmuls_on_tensor_cores({"tensor_core_share": 0.2,
                                              "matmul_share": 0.25}) is False
    assert diagnosis.tensor_core_fraction({"tensor_core_share": 0.2, "matmul_share": 0.25}) == \
        pytest.approx(0.8)
    assert diagnosis.matmuls_on_tensor_cores({"tensor_core_share": 0.0,
                                              "matmul_share": 0.8}) is False


def test_cpu_set_says_it_is_not_a_gpu():
    rows = repeats("x", "fp32", [100, 101, 99]) + repeats("x", "amp-bf16", [150, 151, 149])
    for r in rows:
        r |= {"compute_capability": None, "tensor_core_share": None, "gpu_busy_share": None,
              "max_memory_allocated_bytes": None, "device_name": "AMD EPYC"}
    v = build(rows)
    assert "not a CUDA GPU" in " ".join(v.intro)
    assert "What a CPU cannot measure is not measured: peak memory" in " ".join(v.intro)
    # its steps were timed on the host's clock, which is what the intro must say
    assert "CUDA events" not in " ".join(v.intro) and "host's clock" in " ".join(v.intro)
    assert "CUDA events on the GPU's own timeline" in " ".join(build(repeats(
        "x", "fp32", [100, 101, 99]) + repeats("x", "amp-bf16", [150, 151, 149])).intro)
    assert "What limits amp-bf16 at batch size 512 is not measurable" in said(v, "x")
    assert answers(v)["x"]["peak memory ×"] == "–"


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


def test_the_intervals_are_described_as_computed():
    intro = " ".join(build(repeats("x", "fp32", [100, 101, 99])
                           + repeats("x", "amp-bf16", [150, 151, 149])).intro)
    assert "Welch's t on the log scale" not in intro
    assert "the delta method on the log scale with t at Welch–Satterthwaite degrees of " \
           "freedom" in intro


def test_a_model_zoo_is_answered_per_model(tmp_path):
    out = gpu_like.write(tmp_path)
    v = verdict_report.build(pd.read_csv(out / "summary.csv"), pd.read_csv(out / "speedup.csv"),
                             pd.read_csv(out / "metrics.csv"))
    titles = [s.title for s in v.sections]
    assert "zoo: resnet18 (torchvision, synthetic data)" in titles
    assert "zoo: vit_b_16 (torchvision, synthetic data)" in titles
    assert {"zoo: resnet18", "zoo: vit_b_16"} <= set(answers(v))


def test_summary_md_opens_with_the_table_of_every_experiment(tmp_path):
    out = gpu_like.write(tmp_path)
    md, html = verdict_report.write(out / "metrics.csv", out / "summary.csv", out / "speedup.csv",
                         out / "summary.md", out / "summary.html")
    lines = md.read_text().splitlines()
    first = next(i for i, x in enumerate(lines) if x.startswith("| "))
    assert first < 30, first
    table = []
    for x in lines[first:]:
        if not x.startswith("|"):
            break
        table.append(x)
    assert table[0].startswith("| experiment | question it answers | best mode and setting |")
    named = {x.split(" | ")[0].removeprefix("| ") for x in table[2:]}
    s = pd.read_csv(out / "summary.csv")
    for exp in s["experiment"].unique():
        models = s[s["experiment"] == exp]["model"].unique()
        want = {exp} if len(models) == 1 else {f"{exp}: {m}" for m in models}
        assert want <= named, (exp, named)
    # the methods follow the table, never before it
    assert lines.index(f"## {verdict_report.METHODS}") > first


def test_markdown_and_html_say_the_same(tmp_path):
    out = gpu_like.write(tmp_path)
    md, html = verdict_report.write(out / "metrics.csv", out / "summary.csv", out / "speedup.csv",
                         out / "summary.md", out / "summary.html")
    md_text, html_text = md.read_text(), html.read_text()
    assert md_text.startswith("# Verdict: gpu-like on NVIDIA H200")
    for exp in ("amp_recipe", "mnist_seed", "mnist_loaders", "digits", "resnet50"):
        assert f"## {exp} (" in md_text and f"<h3>{exp} (" in html_text
        assert f"<td style=\"text-align:left\">{exp}</td>" in html_text
    assert "question it answers</th>" in html_text and "**" not in html_text
    assert html_text.index("question it answers") < html_text.index(verdict_report.METHODS)
    assert closing.bottom_line(md).startswith("Reduced precision ")


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
        # FP8 is judged against amp-bf16 at the same setting
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


def test_a_supported_small_gain_beats_a_wide_large_one(scenarios):
    row = answers(scenarios)["mixed"]
    assert row["best mode and setting"] == "tf32, bs 512"
    # [1.155, 1.165] is narrower than the third digit: its half-width, not four digits
    assert row["× its baseline [95% CI]"] == "1.16× (95% CI ±0.43%) fp32"
    assert row["claim"] == "pays off"
    # tf32 keeps fp32's storage: the same peak memory is said as it is
    assert row["peak memory ×"] == "1.00×"


def test_a_significant_slowdown_is_said(scenarios):
    assert "Slower than its baseline: amp-bf16 at batch size 512, slower against fp32 " \
           "(0.887× [0.883, 0.891] fp32)" in said(scenarios, "mixed")
    assert cells(scenarios, "mixed")[("bs 512", "amp-bf16")]["claim"] == "slower"
    assert "Slower than its baseline: mixed (amp-bf16 at bs 512 against fp32)" in \
        " ".join(scenarios.bottom_line)


def test_inconclusive_is_not_equivalence(scenarios):
    equiv = answers(scenarios)["equiv"]
    assert (equiv["× its baseline [95% CI]"], equiv["claim"]) == \
        ("1.00× [0.99, 1.01] fp32", "equivalent within ±3%")
    wide = answers(scenarios)["wide"]
    assert (wide["× its baseline [95% CI]"], wide["claim"]) == \
        ("1.1× [0.6, 2.0] fp32", "inconclusive")
    assert "neither excludes 1 nor lies within ±3%" in said(scenarios, "wide")


def test_fp8_is_judged_against_bf16(scenarios):
    row = answers(scenarios)["fp8"]
    assert row["× its baseline [95% CI]"].startswith("1.30× [") and \
        row["× its baseline [95% CI]"].endswith("amp-bf16")
    assert row["question it answers"] == "does FP8 train mnist_cnn faster than amp-bf16?"
    assert "13.0×" not in row["× its baseline [95% CI]"]          # fp32's ratio is not its
    assert "fp8-rowwise at batch size 512: 1.30× [" in said(scenarios, "fp8")


def test_an_experiment_with_fp32_only_says_so(scenarios):
    assert answers(scenarios)["only"]["× its baseline [95% CI]"] == "– (only fp32 ran)"
    text = said(scenarios, "only")
    assert "Only strict fp32 ran" in text and "beat" not in text
    assert "Nothing to judge in only" in " ".join(scenarios.bottom_line)


def test_accuracy_parity_the_seeds_cannot_resolve(scenarios):
    acc = cells(scenarios, "acc3")[("bs 512", "amp-bf16")]["Δ accuracy (points)"]
    assert acc.startswith("+0.2 [-2.4, +2.8]") and acc.endswith(
        "(inconclusive: the interval is wider than the ±1.0-point margin, so 3 seeds on this "
        "test set cannot resolve it)"), acc


# ----------------------------------------------- evidence, fairness and conditions, by scenario
def with_(rows, **cols):
    for r in rows:
        r |= cols
    return rows


def test_a_mixed_hardware_set_says_so():
    rows = [*with_(repeats("x", "fp32", [100, 101, 99]), gpu_uuid="GPU-a", hostname="node1",
                   cpu_count=32, cpu_placement="pinned", neighbours=0,
                   process_start="fresh_interpreter"),
            *with_(repeats("x", "amp-bf16", [150, 151, 149]), gpu_uuid="GPU-a",
                   hostname="node1", cpu_count=32, cpu_placement="pinned", neighbours=1,
                   process_start="forked")]
    rows[-1] |= {"gpu_uuid": "GPU-b", "hostname": "node2", "cpu_count": 16,
                 "cpu_placement": "os"}
    rows[0]["process_start"] = "forked"
    intro = " ".join(build(rows).intro)
    assert "Conditions: the records ran on 2 GPUs (told apart by UUID: 5 and 1 records; the " \
           "repeats of 1 cell ran on more than one) and 2 host types (by name and CPU count: " \
           "node1 with 32 CPUs, 5 records; node2 with 16 CPUs, 1 record); CPU placement " \
           "pinned (5), left to the OS (1); 3 of 6 jobs started while other tcbench jobs held " \
           "GPUs of the same host; process starts forked from a preloaded interpreter (4), " \
           "fresh interpreters (2)." in intro, intro


def test_a_uniform_set_discloses_nothing_and_an_old_one_what_it_lacks():
    rows = [*repeats("x", "fp32", [100, 101, 99]), *repeats("x", "amp-bf16", [150, 151, 149])]
    with_(rows, gpu_uuid="GPU-a", hostname="node1", cpu_count=32, cpu_placement="pinned",
          neighbours=0, process_start="fresh_interpreter")
    assert "Conditions" not in " ".join(build(rows).intro)
    with_(rows, cpu_placement=None, neighbours=None, process_start=None)
    assert "Conditions: for all 6 records (x) CPU placement and the jobs beside it and how " \
           "its process started were not recorded (they predate those fields)." in \
        " ".join(build(rows).intro)
    # a set rerun in part names the experiments whose records are the older ones
    newer = with_([*repeats("y", "fp32", [100, 101, 99]),
                   *repeats("y", "amp-bf16", [150, 151, 149])], gpu_uuid="GPU-a",
                  hostname="node1", cpu_count=32, cpu_placement="pinned", neighbours=0,
                  process_start="forked")
    said = " ".join(build(rows + newer).intro)
    assert "for 6 of 12 records (x) CPU placement" in said, said


def test_a_fastest_study_with_a_changed_batch_says_what_changed():
    rows = [*repeats("fastest", "fp32", [1000, 1010, 990]),
            *with_(repeats("fastest", "amp-bf16", [3000, 3010, 2990], bs=4096),
                   memory_format="channels_last")]
    v = build(rows)
    assert "Against the plain fp32 baseline (fastest, batch size 512, eager), amp-bf16 at " \
           "batch size 4096, channels_last reaches 3.00× [2.93, 3.07] plain fp32's " \
           "throughput, with bs 512 → 4096, contiguous → channels_last changed besides " \
           "precision, so the ratio is not precision's alone: it pays off." in said(v, "fastest")
    row = answers(v)["fastest"]
    assert row["× its baseline [95% CI]"] == "3.00× [2.93, 3.07] plain fp32 (also changed: " \
        "bs 512 → 4096, contiguous → channels_last)"
    assert row["question it answers"] == \
        "how far do precision and execution knobs take mnist_cnn beyond plain fp32?"
    assert "pays off in fastest (amp-bf16 with other knobs changed, 3.00× plain fp32)" in \
        " ".join(v.bottom_line)


def best_rows(rows):
    from tcbench.analysis.best import best
    from tcbench.reports import tables
    m = resultset.order(pd.DataFrame(rows))
    s = summarise(m)
    t = tables.best_table(best(s, speedup(m, s)))
    return {r[0]: dict(zip(t.columns, r)) for r in t.rows}


def test_best_compares_like_with_like():
    rows = [
        # the fastest changed batch and layout: the overall ratio says so, with its claim
        *repeats("fastest", "fp32", [1000, 1010, 990]),
        *with_(repeats("fastest", "amp-bf16", [3000, 3010, 2990], bs=4096),
               memory_format="channels_last"),
        # another experiment of the same workload whose plain fp32 is faster: not the baseline
        *repeats("other", "fp32", [2000, 2010, 1990]),
        *repeats("other", "tf32", [1900, 2300, 2200]),
        # a model that ran in fp32 only, in channels_last: neither "no fp32 run" nor a gain
        *with_(repeats("only", "fp32", [500, 505]), memory_format="channels_last",
               workload="timm", model="nfnet_l0"),
    ]
    b = best_rows(rows)
    fastest = b["fastest"]
    assert fastest["plain fp32 baseline"] == "fastest, bs 512"
    assert fastest["changed besides precision"] == "bs 512 → 4096, contiguous → channels_last"
    assert fastest["× at the same setting"] == "– (no fp32 cell at this setting)"
    assert fastest["× plain fp32"] == "3.00× [2.93, 3.07], pays off"
    other = b["other"]   # a fastest that cannot be told from fp32 is said to be so
    assert other["× at the same setting"].endswith(" fp32") and other["claim"] == "inconclusive"
    assert other["changed besides precision"] == "nothing"
    only = b["only: nfnet_l0"]
    assert only["× at the same setting"] == "– (only fp32 ran)"
    assert only["× plain fp32"] == "– (no plain fp32 cell)"


def test_the_fastest_of_a_host_bound_cell_is_not_called_fastest():
    rows = [*repeats("hb", "fp32", [1000, 1010, 990], busy=0.95),
            *repeats("hb", "tf32", [2000, 2010, 1990], busy=0.5)]
    top = best_rows(rows)["hb"]
    assert top["fastest configuration"] == "tf32, bs 512 (the highest mean, not judged " \
        "fastest: host-bound, no interleaved comparison)"
    assert top["claim"] == "not judged: host-bound, no interleaved comparison"


def test_a_fastest_of_too_few_runs_is_not_called_fastest():
    rows = [*repeats("few", "fp32", [1000, 1010, 990]),
            *repeats("few", "amp-bf16", [3000, 3010, 2990]),
            *with_(repeats("few", "amp-bf16", [3300]), compile="max-autotune")]
    top = best_rows(rows)["few"]
    assert top["fastest configuration"] == "amp-bf16, bs 512, compile max-autotune (the " \
        "highest mean, not judged fastest: n < 3)"
    # three runs each, the same cells: the fastest is named without a caveat
    rows[-1:] = with_(repeats("few", "amp-bf16", [3300, 3310, 3290]), compile="max-autotune")
    assert best_rows(rows)["few"]["fastest configuration"] == \
        "amp-bf16, bs 512, compile max-autotune"


def fp8_against_bf16(exp, mode, thrs, split, source, coverage, *, tc, busy, mm=None):
    """An amp-bf16 cell and an FP8 one whose kernel split (FP8 GEMM, other Tensor Core,
    scaling) came from ``source`` ("all kernels", or an older record's "top kernels")."""
    return [*repeats(exp, "amp-bf16", [1000, 1010, 990], tc=0.75, mm=0.75, busy=0.95),
            *with_(repeats(exp, mode, thrs, tc=tc, mm=tc if mm is None else mm, busy=busy),
                   **dict(zip(("fp8_gemm_share", "other_tensor_core_share",
                               "fp8_scaling_share"), split)),
                   kernel_classes_from=source, kernel_classes_coverage=coverage)]


def test_an_fp8_cell_says_where_its_kernel_time_went():
    rows = fp8_against_bf16("fp8", "fp8-rowwise", [1300, 1310, 1290], (0.47, 0.05, 0.2),
                            "all kernels", 1.0, tc=0.52, busy=0.95)
    text = said(build(rows), "fp8")
    assert "FP8 GEMMs took 47% of kernel time and the casts and scales around them 20%." \
        in text, text
    # 52% Tensor Core against 48% the rest: no kind carries the step
    assert "What limits fp8-rowwise at batch size 512: no one kind of kernel" in text
    assert "the best case" not in text


def test_the_bottleneck_uses_the_busy_share_of_the_timed_steps():
    # under the profiler the GPU looked 30% busy (host-bound); in the timed steps it was 90%
    rows = [*with_(repeats("hostish", "fp32", [1000, 1002, 998], tc=0.0, mm=0.8, busy=0.9),
                   gpu_busy_share_under_profiler=0.4, gpu_busy_share_source="timed steps"),
            *with_(repeats("hostish", "tf32", [1500, 1502, 1498], tc=0.7, mm=0.7, busy=0.9),
                   gpu_busy_share_under_profiler=0.3, gpu_busy_share_source="timed steps")]
    text = said(build(rows), "hostish")
    assert "What limits tf32 at batch size 512: Tensor Core kernels: they took 70% of " \
           "kernel time, and the GPU was busy 90% of the timed steps' wall time (30% under " \
           "the profiler, which slows the host)" in text, text
    assert "the host:" not in text


def test_a_busy_share_above_one_says_why():
    rows = [*repeats("over", "fp32", [1000, 1002, 998], tc=0.0, mm=0.8, busy=1.063),
            *repeats("over", "tf32", [1500, 1502, 1498], tc=0.7, mm=0.7, busy=1.063)]
    text = said(build(rows), "over")
    assert "the GPU was busy 106% (above 100%: the profile's kernel time per step exceeds " \
           "the timed step) of the timed steps' wall time" in text, text


def test_an_old_fp8_record_whose_listed_kernels_hold_none_of_the_split_says_so():
    rows = fp8_against_bf16("fp8", "fp8-tensorwise", [900, 910, 890], (0.0, 0.0, 0.0),
                            "top kernels", 0.39, tc=0.14, mm=0.15, busy=0.95)
    text = said(build(rows), "fp8")
    assert "no FP8 GEMM, other Tensor Core GEMM or scaling kernel among the kernels its " \
           "record lists (39% of kernel time)" in text, text
    assert "at least 0%" not in text


def test_a_memory_change_precision_cannot_cause_is_not_a_saving():
    """tf32 stores every tensor in fp32: 25% less peak memory is shown, and neither counted as
    a saving nor put down to a cause the record does not measure."""
    rows = [*repeats("dg", "fp32", [1000, 1002, 998], mem=168 * MIB, busy=0.95),
            *repeats("dg", "tf32", [1000, 1001, 999], mem=127 * MIB, busy=0.95)]
    v = build(rows)
    assert answers(v)["dg"]["peak memory ×"] == \
        "0.756× (no storage saving: tf32 stores tensors as fp32 does)"
    text = said(v, "dg")
    assert "tf32 at batch size 512 has 0.756× fp32's peak memory (127 MiB vs 168 MiB), though " \
           "tf32 stores every tensor as fp32 does: the record does not say what made the " \
           "difference" in text, text
    assert "less peak memory" not in text and "most likely" not in text


# ------------------------------------------------------------------- FP8 on this GPU
ROOF = {"amp-bf16": 775.0, "fp8-tensorwise": 1364.0, "fp8-rowwise": 1430.0}


def lm_rows(precision, thrs, status="ok", reason=None):
    """A GPT-2-like transformer cell: 16 sequences of 1024 tokens, 14 TFLOP a step."""
    out = []
    for r in repeats("tf_gpt2", precision, thrs, bs=16, status=status, reason=reason):
        ok = r["status"] == "ok"
        tflops = 14.0 * r["throughput_samples_per_s"] / 16 if ok else None
        out.append(r | {"workload": "transformers", "model": "gpt2-small", "compile": "default",
                        "tokens_per_sample": 1024 if ok else None, "achieved_tflops": tflops,
                        "ceiling_tflops": ROOF[precision],
                        "mfu": tflops / ROOF[precision] if ok else None})
    return out


def lm_verdict(crossover=None, split=None):
    from tcbench.analysis.throughput import add_tokens

    rows = [*lm_rows("amp-bf16", [18.0, 18.2, 17.8]),
            *lm_rows("fp8-tensorwise", [16.0, 16.1, 15.9]),
            *lm_rows("fp8-rowwise", [1.0], status="error", reason="RuntimeError: boom")]
    m = add_tokens(resultset.order(pd.DataFrame(rows)))
    s = summarise(m)
    if split:
        for col, v in split.items():
            s[col] = [v if p == "fp8-tensorwise" else None for p in s["precision"].astype(str)]
    return verdict_report.build(s, speedup(m, s), m, crossover)


def test_each_transformer_fp8_against_bf16_and_mfu_against_its_modes_roof():
    v = lm_verdict()
    fp8 = " ".join(next(s for s in v.sections if s.title == "FP8 on this GPU").sentences)
    assert "**gpt2-small, FP8 against bf16:** fp8-tensorwise at batch size 16, 0.889× [" in fp8
    assert "the throughput of amp-bf16 at the same setting: it is slower" in fp8
    assert "into FP8 GEMMs, bf16 GEMMs and cast/scale kernels is missing" in fp8
    assert "fp8-rowwise at batch size 16: error: RuntimeError: boom" in fp8
    # MFU: each mode against its own roof, and how FP8 cells are counted
    assert "amp-bf16 2.0% of the amp-bf16 roof (775 TFLOP/s)" in fp8
    assert "fp8-tensorwise 1.0% of the fp8-tensorwise roof (1,360 TFLOP/s)" in fp8
    assert "How FP8 cells are counted" in fp8 and "Linear layers kept in bf16 included" in fp8
    # a token workload's speed in the verdict in tokens, the unit its users compare
    bf16 = [r for (_, mode), r in cells(v, "tf_gpt2").items() if mode == "amp-bf16"]
    assert "samples/s" not in bf16[0] and bf16[0]["tokens/s"].startswith("18,400 [")


def test_the_fp8_section_tables_each_transformer_mode_with_its_ratio_mfu_and_warmup():
    sec = next(s for s in lm_verdict().sections if s.title == "FP8 on this GPU")
    t = sec.table
    rows = {r[t.columns.index("precision")]: dict(zip(t.columns, r)) for r in t.rows}
    assert set(rows) == {"amp-bf16", "fp8-tensorwise", "fp8-rowwise"}
    bf16, fp8 = rows["amp-bf16"], rows["fp8-tensorwise"]
    assert bf16["tokens/s"].startswith("18,400 [") and bf16["× amp-bf16"] == ""
    assert fp8["× amp-bf16"].startswith("0.889× [") and fp8["claim"] == "slower"
    assert fp8["MFU (of its mode's roof, TFLOP/s)"] == "1.0% of 1,360"
    assert rows["fp8-rowwise"]["tokens/s"] == "error"     # a failed mode says so, no number
    assert "it is in no ratio" in " ".join(t.notes)


def test_the_fp8_split_is_read_from_the_tables_where_they_have_it():
    v = lm_verdict(split={"fp8_gemm_share": 0.41, "other_tensor_core_share": 0.22,
                          "fp8_scaling_share": 0.17})
    fp8 = " ".join(next(s for s in v.sections if s.title == "FP8 on this GPU").sentences)
    assert ("Its GPU kernel time: 41% FP8 GEMMs, 22% other Tensor Core kernels (the GEMMs kept "
            "in bf16), 17% cast and scale kernels.") in fp8
    older = lm_verdict(split={"fp8_gemm_share": 0.41, "other_tensor_core_share": 0.22,
                              "fp8_scaling_share": 0.17, "kernel_classes_from": "top kernels",
                              "kernel_classes_coverage": 0.9})
    assert "17% cast and scale kernels (at least: split from the top kernels its record lists, " \
        "90% of its kernel time)." in " ".join(next(
            s for s in older.sections if s.title == "FP8 on this GPU").sentences)


def test_the_verdict_says_where_fp8_starts_to_pay_from_the_crossover_map():
    from test_crossover import H200, fixture_records
    from tcbench.analysis import crossover as fp8_crossover

    table = fp8_crossover.ratios(fp8_crossover.cells(fixture_records()), H200)
    v = lm_verdict(crossover=table)
    fp8 = next(s for s in v.sections if s.title == "FP8 on this GPU").sentences
    assert fp8[0].startswith("**Where FP8 starts to pay:** fp8-tensorwise starts to pay at "
                             "Linear width 4096 with 4,096 tokens a step: 1.30× [")
    # where it loses: the slower shapes named; a shape faster by too little, said so
    assert fp8[1] == ("**Where it does not:** fp8-tensorwise is slower than amp-bf16 (95% CI "
                      "wholly below 1.0×) at 1 of 4 shapes, 0.800×: width 1024 at 4,096 tokens; "
                      "it neither pays nor loses at width 1024 at 16,384 tokens (faster, not "
                      "shown to reach 1.10×).")
    prediction = next(s for s in fp8 if s.startswith("**The prediction:** Beside each measured"))
    # how far off: measured / predicted per mode (fixture: 0.800/0.969, 1.05/0.986, 1.30/1.29,
    # 1.50/1.38 for tensorwise), and where the prediction's pays-or-not agreed
    assert "fp8-tensorwise: measured ÷ predicted 1.04 at the median of 4 shapes (range " \
           "0.825–1.09), furthest below at Linear width 1024 with 4,096 tokens a step (0.800× " \
           "measured, 0.969× predicted)" in prediction
    assert "agrees with the measured claim at 4 of 4" in prediction
    bottom = " ".join(v.bottom_line)
    assert "slower at 1 of 4 shapes (0.800×)" in bottom
    assert ("FP8 crossover, fp8-tensorwise against amp-bf16: pays off from Linear width 4096 "
            "with 4,096 tokens a step, 1.30× [") in bottom
    assert "(the smallest of 2 of 4 shapes whose interval clears 1.10×)" in bottom
    # a set without the crossover study or a transformer in FP8 has no such section
    assert not any(s.title == "FP8 on this GPU" for s in build(
        repeats("fast", "fp32", [1000, 1010, 990])).sections)


def test_a_set_made_by_two_commits_says_which_experiments_each_made():
    metrics = pd.DataFrame({
        "experiment": ["resnet50", "resnet50", "amp_recipe", "digits"],
        "git_commit": ["a" * 40, "a" * 40, "b" * 40, "b" * 40],
        "timestamp_utc": ["2026-11-20T10:00:00+00:00", "2026-11-20T10:01:00+00:00",
                          "2026-12-01T23:40:00+00:00", "2026-12-01T23:41:00+00:00"]})
    line = verdict_report.code_line(metrics)
    assert line == ("Code: 2 commits, newest first: bbbbbbbbbbbb (2 records: amp_recipe, digits); "
                    "aaaaaaaaaaaa (2 records: resnet50).")
    assert verdict_report.code_line(metrics.iloc[:2]) == "Code: commit aaaaaaaaaaaa."


def test_an_interleaved_comparison_of_a_newer_commit_is_named_beside_the_records():
    metrics = pd.DataFrame({"experiment": ["amp_recipe"] * 2, "git_commit": ["a" * 40] * 2,
                            "timestamp_utc": ["2026-11-20T10:00:00+00:00"] * 2})
    interleaved = pd.DataFrame({"experiment": ["amp_recipe"] * 3, "setting": ["bs512"] * 3,
                                "git_commit": ["b" * 40] * 3,
                                "timestamp_utc": ["2026-12-01T23:41:49+00:00"] * 3})
    assert verdict_report.code_line(metrics, interleaved) == (
        "Code: 2 commits, newest first: bbbbbbbbbbbb (1 interleaved comparison: amp_recipe); "
        "aaaaaaaaaaaa (2 records: amp_recipe).")
    # a setting whose processes ran two commits (interleaved.csv joins them): each named
    both = interleaved.assign(git_commit="a" * 40 + ";" + "b" * 40)
    assert verdict_report.code_line(metrics, both) == (
        "Code: 2 commits, newest first: bbbbbbbbbbbb (1 interleaved comparison: amp_recipe); "
        "aaaaaaaaaaaa (2 records and 1 interleaved comparison: amp_recipe).")


def test_an_experiment_whose_fp8_could_not_run_asks_what_its_other_modes_answer():
    rows = [*repeats("cpu", "fp32", [1000, 1010, 990]),
            *repeats("cpu", "amp-bf16", [100, 101, 99]),
            row("cpu", "fp8-rowwise", status="unsupported", reason="no FP8 units")]
    r = answers(build(rows))["cpu"]
    assert r["question it answers"] == "do Tensor Cores speed up mnist_cnn over fp32?"
    assert r["best mode and setting"] == "amp-bf16, bs 512"


def test_a_model_file_of_ones_own_is_asked_about_by_its_experiments_name():
    """A file's builder called model() names no model: its question names the experiment; a
    builder named for what it builds (axes.model) names itself."""
    rows = [{**r, "workload": "custom", "model": "model"}
            for p, thr in (("fp32", 1000), ("amp-bf16", 2000))
            for r in repeats("own_model", p, [thr, thr + 10, thr - 10])]
    assert answers(build(rows))["own_model"]["question it answers"] == \
        "do Tensor Cores speed up own_model over fp32?"
    named = [{**r, "model": "tiny_net"} for r in rows]
    assert answers(build(named))["own_model"]["question it answers"] == \
        "do Tensor Cores speed up tiny_net over fp32?"
