"""Figures: every format written, fonts embedded in PDFs, one colour per precision, every slot
either a bar or a label saying why not, widths of the two paper layouts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import matplotlib
import pandas as pd
import pytest

from conftest import REPO

import figure_text
import gpu_like
from tcbench import vocabulary as V
from tcbench.render import plot as P
from tcbench.reports import figures as F

matplotlib.use("Agg")


def pdf_font_problems(path) -> list[str]:
    """Why the fonts of a PDF would be rejected by a journal (empty: all embedded, none Type 3).
    Pure Python: matplotlib writes object dictionaries uncompressed."""
    data = path.read_bytes()
    objects = dict(re.findall(rb"(\d+) 0 obj\s*(.*?)endobj", data, re.S))
    problems, fonts = [], 0
    for num, body in objects.items():
        if not re.search(rb"/Type\s*/Font\b", body):
            continue
        fonts += 1
        subtype = re.search(rb"/Subtype\s*/(\w+)", body).group(1).decode()
        name = (re.search(rb"/BaseFont\s*/([^\s/<>\[]+)", body) or [b"", b"?"])[1]
        if subtype == "Type3":
            problems.append(f"{name!r}: Type 3 font")
        elif subtype != "Type0":     # composite fonts embed through their descendant
            desc = re.search(rb"/FontDescriptor\s+(\d+) 0 R", body)
            if not desc:
                problems.append(f"{name!r}: {subtype} font without a descriptor (not embedded)")
            elif not re.search(rb"/FontFile[23]?\s", objects.get(desc.group(1), b"")):
                problems.append(f"{name!r}: {subtype} font not embedded")
    if fonts == 0:
        problems.append("no fonts at all (text missing?)")
    return problems


@pytest.fixture(scope="module")
def gpu_tables(tmp_path_factory):
    return gpu_like.write(tmp_path_factory.mktemp("gpu-like"))


def render_and_check(gpu_tables, out, experiments):
    written = F.render(gpu_tables, out, experiments)
    expected = {out / f"{e}_{k}.{x}" for e in experiments for k in F.KINDS for x in P.FORMATS}
    assert set(written) == expected and all(p.stat().st_size > 0 for p in expected)
    return written


@pytest.fixture(scope="module")
def rendered(gpu_tables, tmp_path_factory):
    """One experiment's figures in every format (a few seconds each: PDF and SVG are slow)."""
    out = tmp_path_factory.mktemp("figures")
    return out, render_and_check(gpu_tables, out, ["amp_recipe"])


def test_every_kind_in_every_format(rendered):
    out, written = rendered
    assert {p.name for p in written} == {f"amp_recipe_{k}.{x}" for k in F.KINDS
                                         for x in P.FORMATS}


@pytest.mark.slow
def test_every_experiment_in_every_format(gpu_tables, tmp_path):
    render_and_check(gpu_tables, tmp_path, ["amp_recipe", "resnet50", "mnist_seed"])


# every figure drawn and measured, text box by text box: about a second each
@pytest.mark.parametrize("width", ["auto", pytest.param("one", marks=pytest.mark.slow)])
def test_no_text_overlaps_or_leaves_the_canvas(gpu_tables, width):
    """Every figure of the GPU-shaped set, every experiment, each width."""
    P.style()
    experiments = pd.read_csv(gpu_tables / "summary.csv")["experiment"].unique()
    checked = 0
    for exp in experiments:
        for kind, fig in F.build(*F.read_set(gpu_tables), exp, width).items():
            assert figure_text.problems(fig) == [], (exp, kind, width)
            checked += 1
            P.plt.close(fig)
    assert checked == len(experiments) * len(F.KINDS)


@pytest.mark.slow
@pytest.mark.parametrize("run", ["nvidia-h200"])
def test_committed_result_sets_figures_pass_the_same_check(run):
    """The figures a reader gets: every experiment of each committed GPU result set."""
    tables = REPO / "results" / run
    if not (tables / "summary.csv").exists():
        pytest.skip(f"no committed result set {run}")
    P.style()
    for exp in pd.read_csv(tables / "summary.csv")["experiment"].unique():
        for kind, fig in F.build(*F.read_set(tables), exp, "auto").items():
            assert figure_text.problems(fig) == [], (run, exp, kind)
            P.plt.close(fig)


def test_the_overlap_check_catches_overlaps():
    fig, ax = P.plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "one label")
    ax.text(0.52, 0.5, "another label")
    assert any("overlaps" in p for p in figure_text.problems(fig))
    fig2, ax2 = P.plt.subplots(figsize=(3, 2), layout="constrained")
    ax2.set_title("a title far too long for a figure three inches wide, it runs off the page")
    assert any("leaves the canvas" in p for p in figure_text.problems(fig2))
    P.plt.close("all")


def test_pdfs_embed_truetype_fonts(rendered):
    out, _ = rendered
    pdfs = sorted(out.glob("*.pdf"))
    assert pdfs
    for pdf in pdfs:
        assert pdf_font_problems(pdf) == [], pdf.name


@pytest.mark.skipif(shutil.which("pdffonts") is None
                    and os.environ.get("TCBENCH_REQUIRE_LATEX") != "1",
                    reason="poppler-utils not installed (CI installs it)")
def test_pdffonts_agrees(rendered):
    out, _ = rendered
    for pdf in sorted(out.glob("*.pdf"))[:6]:
        lines = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True,
                               check=True).stdout.splitlines()[2:]
        assert lines, pdf.name
        for line in lines:
            assert "Type 3" not in line and line.split()[-5] == "yes", line


@pytest.mark.parametrize("rc", [{"pdf.fonttype": 3}, {"pdf.use14corefonts": True}])
def test_font_check_catches_what_journals_reject(tmp_path, rc):
    """The check above is not vacuous: Type 3 and non-embedded core fonts fail it."""
    with matplotlib.rc_context(rc):
        fig, ax = P.plt.subplots()
        ax.set_title("x")
        fig.savefig(tmp_path / "bad.pdf")
        P.plt.close(fig)
    assert pdf_font_problems(tmp_path / "bad.pdf")


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text()
                                                                   for t in fig.texts]


def _cells(gpu_tables, exp, table="summary"):
    return F.experiment_rows(pd.read_csv(gpu_tables / f"{table}.csv").query(f"experiment == '{exp}'"))


def test_missing_cells_are_labelled_not_dropped(gpu_tables):
    P.style()
    assert "oom" in _texts(F.fig_throughput(_cells(gpu_tables, "resnet50"), "resnet50"))
    texts = _texts(F.fig_speedup(_cells(gpu_tables, "resnet50", "speedup"), "resnet50"))
    assert "oom" in texts and texts.count("no fp32") == 3
    assert _texts(F.fig_memory(_cells(gpu_tables, "mnist_seed"), "mnist_seed")).count(
        "no record") == 2                         # no plan known: only that there is none
    assert "diverged" in _texts(F.fig_throughput(_cells(gpu_tables, "digits"), "digits"))
    P.plt.close("all")


def test_a_cell_without_a_record_says_whether_the_design_had_it(gpu_tables):
    """mnist_seed has no tf32 nor amp-bf16 cell at batch 1024: with the study's plan, the
    one it planned says so and the one it never had says that instead."""
    P.style()
    metrics = pd.read_csv(gpu_tables / "metrics.csv").query("experiment == 'mnist_seed'")
    planned = ["fp32_bs512", "tf32_bs512", "amp-fp16_bs512", "amp-bf16_bs512", "fp32_bs1024",
               "amp-fp16_bs1024", "tf32_bs1024"]
    plan = F.Plan(metrics, planned)
    texts = _texts(F.fig_throughput(_cells(gpu_tables, "mnist_seed"), "mnist_seed", plan=plan))
    assert texts.count(F.PLANNED) == 1 and texts.count(F.NOT_IN_DESIGN) == 1
    assert plan("bs 1024", "tf32") == F.PLANNED and plan("bs 1024", "amp-bf16") == \
        F.NOT_IN_DESIGN
    P.plt.close("all")


def test_the_rule_passes_the_plan_and_the_cli_uses_it(gpu_tables, tmp_path):
    out = tmp_path / "mnist_seed_throughput.svg"
    assert F.main(["--metrics", str(gpu_tables / "metrics.csv"), "--summary",
                   str(gpu_tables / "summary.csv"), "--speedup", str(gpu_tables / "speedup.csv"),
                   "--experiment", "mnist_seed", "--outputs", str(out),
                   "--planned", "fp32_bs512", "tf32_bs1024"]) == 0
    assert out.stat().st_size > 0
    rule = (REPO / "workflow" / "rules" / "figures.smk").read_text()
    assert "planned_cells(wc.run, wc.experiment)" in rule and "{params.planned:q}" in rule


def test_knob_experiments_plot_the_gain_over_plain_fp32(gpu_tables):
    P.style()
    fig = F.fig_speedup(_cells(gpu_tables, "resnet50_fast", "speedup"), "resnet50_fast")
    ax = fig.axes[0]
    assert "plain fp32 (resnet50, bs 64)" in ax.get_ylabel()
    heights = [p.get_height() for p in ax.patches]
    assert len(heights) == 3 and min(heights) > 1            # no empty panel
    P.plt.close("all")


def test_cpu_figures_say_not_measured(gpu_tables):
    P.style()
    s = _cells(gpu_tables, "amp_recipe").assign(max_memory_allocated_bytes=float("nan"),
                                                tensor_core_share=float("nan"))
    for fig in (F.fig_memory(s, "amp_recipe"), F.fig_tensor_cores(s, "amp_recipe")):
        assert any(t.startswith("not measured") for t in _texts(fig))
        assert not fig.axes or not fig.axes[0].patches        # a note, not an empty panel
    P.plt.close("all")


def test_fixed_colour_per_precision(gpu_tables):
    P.style()
    fig = F.fig_throughput(_cells(gpu_tables, "mnist_seed"), "mnist_seed")
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches}
    assert colours <= {c.lower() for c in P.PALETTE.values()}
    handles = fig.legends[0].get_patches()
    assert [h.get_label() for h in handles] == ["fp32", "tf32", "amp-fp16", "amp-bf16"]
    assert [matplotlib.colors.to_hex(h.get_facecolor()) for h in handles] == \
        [P.PALETTE[p].lower() for p in ("fp32", "tf32", "amp-fp16", "amp-bf16")]
    P.plt.close("all")


def test_intervals_say_what_they_are(gpu_tables):
    P.style()

    def bars(fig):
        return [c for c in fig.axes[0].containers
                if isinstance(c, matplotlib.container.ErrorbarContainer)]

    def legend(fig):
        return [t.get_text() for t in fig.legends[0].get_texts()]
    fig = F.fig_throughput(_cells(gpu_tables, "amp_recipe"), "amp_recipe")
    assert len(bars(fig)) == 4 and "95% CI (n ≥ 3)" in legend(fig)      # n = 3
    fig = F.fig_throughput(_cells(gpu_tables, "mnist_loaders"), "mnist_loaders")
    assert len(bars(fig)) == 8 and "range (n = 2)" in legend(fig) and \
        "95% CI (n ≥ 3)" not in legend(fig)
    fig = F.fig_throughput(_cells(gpu_tables, "mnist_seed"), "mnist_seed")  # single runs
    assert not bars(fig) and "single run" in legend(fig)
    assert _texts(fig).count(P.SINGLE) == 6
    fig = F.fig_speedup(_cells(gpu_tables, "amp_recipe", "speedup"), "amp_recipe")
    assert len(bars(fig)) == 4                                # ratios carry intervals too
    P.plt.close("all")


def test_one_tick_format_and_log_axes_for_wide_spans():
    P.style()
    fig, ax = P.plt.subplots()
    ax.set_ylim(0, 12000)
    ax.yaxis.set_major_formatter(P.Ticks())
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert all(label.endswith("k") for label in labels if label != "0k"), labels
    assert len({len(label.split(".")[-1]) if "." in label else 0 for label in labels}) == 1
    fig, ax = P.plt.subplots()
    assert P.value_axis(ax, [1.0, 50.0]) is True and ax.get_yscale() == "log"
    fig, ax = P.plt.subplots()
    assert P.value_axis(ax, [1.0, 5.0]) is False and ax.get_yscale() == "linear"
    P.plt.close("all")


def test_tensor_core_share_and_gpu_busy_have_their_own_axes(gpu_tables):
    P.style()
    fig = F.fig_tensor_cores(_cells(gpu_tables, "resnet50"), "resnet50")
    assert len(fig.axes) == 2
    assert "kernel time" in fig.axes[0].get_ylabel() and "timed steps" in fig.axes[1].get_ylabel()
    P.plt.close("all")


def test_widths_follow_the_paper_layouts():
    assert P.figure_width(8) == P.ONE_COLUMN_IN == 3.5
    assert P.figure_width(16) == P.TWO_COLUMN_IN == 7.0
    assert P.figure_width(16, "one") == 3.5 and P.figure_width(2, "two") == 7.0
    with pytest.raises(ValueError, match="width"):
        P.figure_width(2, "three")


def test_cli_writes_exactly_the_outputs_it_is_given(gpu_tables, tmp_path):
    csvs = [x for k in ("metrics", "summary", "speedup")
            for x in (f"--{k}", str(gpu_tables / f"{k}.csv"))]
    wanted = [tmp_path / V.figure_name("digits", k, "png") for k in F.KINDS]
    assert F.main([*csvs, "--experiment", "digits", "--width", "two",
                   "--outputs", *map(str, wanted)]) == 0
    assert sorted(tmp_path.iterdir()) == sorted(wanted)
    assert F.main([*csvs, "--experiment", "nope", "--outputs",
                   str(tmp_path / V.figure_name("nope", "memory", "png"))]) == 2
    # a file name that is no figure of the experiment is refused before anything is drawn
    assert F.main([*csvs, "--experiment", "digits", "--outputs",
                   str(tmp_path / "digits_memory.jpg")]) == 2
    assert not (tmp_path / "digits_memory.jpg").exists()


def test_the_figure_kinds_are_the_vocabularys_and_each_has_a_caption():
    """The rule lists vocabulary.FIGURES as outputs; this module draws KINDS: one list."""
    assert tuple(F.KINDS) == V.FIGURES
    report = REPO / "workflow" / "report"
    assert all((report / f"figure_{k}.rst").exists() for k in V.FIGURES)
    assert all((report / f"compare_{k}.rst").exists() for k in V.COMPARE_FIGURES)


def test_a_token_workloads_throughput_is_drawn_in_tokens_per_second(gpu_tables):
    """The throughput figure says its unit: tokens/s where the rows count tokens (the bars'
    heights are the tokens/s column), samples/s otherwise."""
    P.style()
    s = _cells(gpu_tables, "amp_recipe")
    assert F.fig_throughput(s, "amp_recipe").axes[0].get_ylabel() == "samples/s (steady state)"
    lm = s.copy()
    for end in ("", "_low", "_high", "_n"):
        lm[f"throughput_tokens_per_s{end}"] = lm[f"throughput_samples_per_s{end}"] * (
            1024 if end != "_n" else 1)
    ax = F.fig_throughput(lm, "lm").axes[0]
    assert ax.get_ylabel() == "tokens/s (steady state)"
    assert max(p.get_height() for p in ax.patches) == pytest.approx(
        lm["throughput_tokens_per_s"].max())


def test_every_tick_prints_its_own_value():
    """2.5, 7.5, 12.5 GiB are "2.5", "7.5", "12.5" (they printed as 2, 8, 12)."""
    P.style()
    fig, ax = P.plt.subplots()
    ax.set_ylim(0, 20)
    ax.set_yticks([0, 2.5, 5, 7.5, 10, 12.5])
    ax.yaxis.set_major_formatter(P.Ticks())
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0.0", "2.5", "5.0", "7.5",
                                                            "10.0", "12.5"]
    P.plt.close("all")


def _log_labels(values):
    fig, ax = P.plt.subplots()
    ax.bar([0, 1], values)
    assert P.value_axis(ax, values) is True
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    labels = [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks())
              if t.get_text() and lo <= v <= hi]
    P.plt.close(fig)
    return labels


def test_a_log_axis_of_few_decades_labels_1_2_and_5():
    """fp8_mlp's throughput (200k to 2.9M) had one labelled tick, its speedup (1 to 15) two."""
    P.style()
    assert _log_labels([1.9e5, 2.9e6]) == ["200k", "500k", "1M", "2M"]
    assert _log_labels([1.0, 15.0]) == ["1", "2", "5", "10", "20"]
    assert _log_labels([1.0, 1e5]) == ["1", "10", "100", "1k", "10k", "100k"]   # decades


def _warm_rows():
    rows = []
    for p, warm, miss in (("fp32", (18.7, 18.69, 18.74, 3), None),
                          ("tf32", (5.36, 4.70, 17.34, 3), None),
                          ("amp-bf16", (6.56, 5.83, 7.29, 2), (46.2, None, None, 1)),
                          ("amp-fp16", (None, None, None, 0), (12.4, 11.9, 12.9, 2))):
        r = {"run": "r", "experiment": "e", "workload": "w", "data": "d", "batch_size": 256,
             "precision": p, "status": "ok", "repeats": 3, "repeats_ok": 3}
        for stem, v in ((V.WARMUP, warm), (V.WARMUP_MISS, miss or (None, None, None, 0))):
            r |= dict(zip((stem, f"{stem}_low", f"{stem}_high", f"{stem}_n"), v))
            r[f"{stem}_interval"] = "median-range" if (v[3] or 0) > 1 else \
                "single" if v[3] == 1 else "none"
        rows.append(r)
    return F.experiment_rows(pd.DataFrame(rows))


def test_warmup_bars_are_medians_with_their_range_and_misses_apart():
    """Whiskers are the runs' own min and max (never below zero, so never clipped on a log
    axis); cache misses are diamonds of their own; a cell whose every run missed says so."""
    P.style()
    fig = F.fig_warmup(_warm_rows(), "e")
    ax = fig.axes[0]
    whiskers = [c for c in ax.containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
    lows = [seg[0][1] for c in whiskers for coll in c.lines[2] for seg in coll.get_segments()]
    assert lows and min(lows) > 0 and min(lows) >= ax.get_ylim()[0]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "median, range" in legend and "cache miss" in legend
    assert "95% CI (n ≥ 3)" not in legend
    diamonds = [ln for ln in ax.get_lines() if ln.get_marker() == "D"]
    assert sorted(round(float(ln.get_ydata()[0]), 1) for ln in diamonds) == [12.4, 46.2]
    assert "every run missed" in _texts(fig)
    assert figure_text.problems(fig) == []
    P.plt.close("all")


def test_attribution_is_per_sample_with_an_interval(gpu_tables):
    """Settings of other batch sizes compare per sample; the sum of compute and data wait
    carries the interval of its repeats."""
    P.style()
    m = pd.read_csv(gpu_tables / "metrics.csv").query("experiment == 'amp_recipe'")
    fig = F.fig_attribution(m, "amp_recipe")
    assert "per sample" in fig.axes[0].get_ylabel()
    assert [c for c in fig.axes[0].containers
            if isinstance(c, matplotlib.container.ErrorbarContainer)]
    ok = F.per_sample(F.experiment_rows(m))
    one = ok.iloc[0]
    steady = (one["steps"] - one["warmup_steps"]) * one["batch_size"]
    assert one["compute_us"] == pytest.approx(one["compute_s"] / steady * 1e6)
    P.plt.close("all")


def test_a_figure_with_nothing_to_draw_keeps_its_axes_and_says_why(gpu_tables):
    """zoo's speedup had only a sentence: the settings stay on the x axis, every slot says
    why it has no bar, and the panel says why the figure is empty."""
    P.style()
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    sp = sp[sp["precision"].astype(str) != "fp32"].assign(speedup=float("nan"),
                                                          gain=float("nan"))
    fig = F.fig_speedup(sp, "amp_recipe")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(dict.fromkeys(sp["group"]))
    texts = _texts(fig)
    assert texts.count("no fp32") == len(sp) and any("no fp32 run finished" in t for t in texts)
    assert fig.legends and figure_text.problems(fig) == []
    P.plt.close("all")


def test_an_fp32_only_experiment_draws_no_speedup_bar(gpu_tables):
    """fp32 over fp32 is 1.00 by definition: an experiment that ran only fp32 (zoo_timm) gets
    its axes and the reason, not one 1.00 bar that looks like a result."""
    P.style()
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    sp = sp[sp["precision"].astype(str) == "fp32"]
    fig = F.fig_speedup(sp, "only_fp32")
    assert not [p for p in fig.axes[0].patches if p.get_height() > 0]
    assert any("only strict fp32 ran" in t for t in _texts(fig))
    assert figure_text.problems(fig) == []
    P.plt.close("all")
