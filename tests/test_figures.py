"""Figures: every format written, fonts embedded in PDFs, one colour per precision, every slot
either a bar or a label saying why not, each run a dot on its bar, ratios with their 1x and
pays-off lines, every mode drawn the same way, a figure with nothing to show not drawn (and
marked so), widths of the two paper layouts; the set's host-bound and interleaved figures from
planted tables in the job half's columns."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import matplotlib
import numpy as np
import pandas as pd
import pytest

from conftest import REPO

import figure_text
import gpu_like
import host_like
from tcbench import stats
from tcbench import vocabulary as V
from tcbench.analysis.speedup import speedup as speedup_table
from tcbench.analysis.summarise import summarise
from tcbench.render import placeholder
from tcbench.render import plot
from tcbench.reports import figures
from tcbench.reports import host_figures

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
    written = figures.render(gpu_tables, out, experiments)
    expected = {out / f"{e}_{k}.{x}" for e in experiments for k in figures.KINDS
                for x in plot.FORMATS}
    expected |= {out / V.set_figure_name(k, x) for k in V.SET_FIGURES for x in plot.FORMATS}
    assert set(written) == expected and all(p.stat().st_size > 0 for p in expected)
    return written


@pytest.fixture(scope="module")
def rendered(gpu_tables, tmp_path_factory):
    """One experiment's figures in every format (a few seconds each: PDF and SVG are slow)."""
    out = tmp_path_factory.mktemp("figures")
    return out, render_and_check(gpu_tables, out, ["amp_recipe"])


def test_every_kind_in_every_format(rendered):
    out, written = rendered
    expected = {out / f"amp_recipe_{k}.{x}" for k in figures.KINDS for x in plot.FORMATS}
    expected |= {out / V.set_figure_name(k, x) for k in V.SET_FIGURES for x in plot.FORMATS}
    assert set(written) == expected and all(p.stat().st_size > 0 for p in expected)


@pytest.mark.slow
def test_every_experiment_in_every_format(gpu_tables, tmp_path):
    render_and_check(gpu_tables, tmp_path, ["amp_recipe", "resnet50", "mnist_seed"])


# every figure drawn and measured, text box by text box: about a second each
@pytest.mark.parametrize("width", ["auto", pytest.param("one", marks=pytest.mark.slow)])
def test_no_text_overlaps_or_leaves_the_canvas(gpu_tables, width):
    """Every figure of the GPU-shaped set, every experiment, each width."""
    plot.style()
    experiments = pd.read_csv(gpu_tables / "summary.csv")["experiment"].unique()
    checked = 0
    for exp in experiments:
        for kind, fig in figures.build(*figures.read_set(gpu_tables), exp, width).items():
            fig = plot.figure_of(fig)
            assert figure_text.problems(fig) == [], (exp, kind, width)
            checked += 1
            plot.plt.close(fig)
    assert checked == len(experiments) * len(figures.KINDS)


@pytest.mark.slow
@pytest.mark.parametrize("run", ["nvidia-h200"])
def test_committed_result_sets_figures_pass_the_same_check(run):
    """The figures a reader gets: every experiment of each committed GPU result set."""
    tables = REPO / "results" / run
    if not (tables / "summary.csv").exists():
        pytest.skip(f"no committed result set {run}")
    plot.style()
    for exp in pd.read_csv(tables / "summary.csv")["experiment"].unique():
        for kind, fig in figures.build(*figures.read_set(tables), exp, "auto").items():
            fig = plot.figure_of(fig)
            assert figure_text.problems(fig) == [], (run, exp, kind)
            plot.plt.close(fig)


def test_the_overlap_check_catches_overlaps():
    fig, ax = plot.plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "one label")
    ax.text(0.52, 0.5, "another label")
    assert any("overlaps" in p for p in figure_text.problems(fig))
    fig2, ax2 = plot.plt.subplots(figsize=(3, 2), layout="constrained")
    ax2.set_title("a title far too long for a figure three inches wide, it runs off the page")
    assert any("leaves the canvas" in p for p in figure_text.problems(fig2))
    # resnet50_fastest's y label ran into the top edge: longer than its axes
    fig3, ax3 = plot.plt.subplots(figsize=(3.5, 2.6), layout="constrained")
    ax3.set_ylabel("× plain fp32 (resnet50_fastest, bs 256)")
    ax3.set_xlabel("x")
    fig3.legend(handles=[plot.Patch(label=f"mode {i}") for i in range(6)], loc="outside lower "
                "center", ncols=2)
    assert any("outruns its axes" in p for p in figure_text.problems(fig3))
    plot.plt.close("all")


def test_tick_labels_too_wide_for_their_slots_are_broken_to_fit():
    """Settings side by side on a one-column figure: lines broken at spaces and hyphens so
    that no two labels meet; a single word wider than its slot leaves them upright."""
    from tcbench.render.axes import fit_ticks
    plot.style()
    groups = [f"bs 256\nchannels_last\ncompile {mode}"
              for mode in ("default", "max-autotune", "reduce-overhead", "default")]
    fig, ax = plot.plt.subplots(figsize=(plot.ONE_COLUMN_IN, 2.6), layout="constrained")
    ax.bar(range(4), [1, 2, 3, 4])
    ax.set_xticks(range(4), groups)
    assert any("overlaps" in p for p in figure_text.problems(fig))
    ticks, upright = fit_ticks(ax, groups)
    assert not upright and "compile\nreduce-\noverhead" in ticks[2]
    ax.set_xticks(range(4), ticks)
    assert figure_text.problems(fig) == []
    assert fit_ticks(ax, ["a_word_far_too_wide_for_its_slot"] * 4) == \
        (["a_word_far_too_wide_for_its_slot"] * 4, True)
    assert fit_ticks(ax, ["bs 64", "bs 128"]) == (["bs 64", "bs 128"], False)
    plot.plt.close("all")


def test_upright_tick_labels_have_no_more_lines_than_their_slot_is_wide():
    """Five-part settings in narrow slots stand upright: a label's lines then lie side by side,
    so the parts run on rather than five lines wide into the neighbour's slot."""
    from tcbench.render.axes import group_ticks
    plot.style()
    groups = [f"bs {b}\ncontiguous\ncompile {c}\ngraphs on\ncudnn on"
              for b in (512, 8192) for c in ("off", "default")] * 2
    fig, ax = plot.plt.subplots(figsize=(plot.ONE_COLUMN_IN, 2.6), layout="constrained")
    ax.bar(range(len(groups)), range(len(groups)))
    ax.set_xticks(range(len(groups)), groups)
    ax.tick_params(axis="x", labelrotation=90)
    assert any("overlaps" in p for p in figure_text.problems(fig))
    height = fig.get_figheight()
    group_ticks(ax, groups, narrow=True)
    assert fig.get_figheight() > height   # room for the upright labels' length
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert all(len(t.splitlines()) < 5 for t in labels)
    assert any("compile default" in line for line in labels[1].splitlines())   # never split
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


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
        fig, ax = plot.plt.subplots()
        ax.set_title("x")
        fig.savefig(tmp_path / "bad.pdf")
        plot.plt.close(fig)
    assert pdf_font_problems(tmp_path / "bad.pdf")


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text()
                                                                   for t in fig.texts]


def _cells(gpu_tables, exp, table="summary"):
    rows = pd.read_csv(gpu_tables / f"{table}.csv").query(f"experiment == '{exp}'")
    return figures.experiment_rows(rows)


def test_missing_cells_are_labelled_not_dropped(gpu_tables):
    plot.style()
    assert "oom" in _texts(figures.fig_throughput(_cells(gpu_tables, "resnet50"), "resnet50"))
    # fp32 (oom at bs 256) has no slot on the speedup figure; the cells it leaves without a
    # baseline say so
    texts = _texts(figures.fig_speedup(_cells(gpu_tables, "resnet50", "speedup"), "resnet50"))
    assert "oom" not in texts and texts.count("no fp32") == 3
    assert _texts(figures.fig_memory(_cells(gpu_tables, "mnist_seed"), "mnist_seed")).count(
        "no record") == 2                         # no plan known: only that there is none
    assert "diverged" in _texts(figures.fig_throughput(_cells(gpu_tables, "digits"), "digits"))
    plot.plt.close("all")


def test_a_cell_without_a_record_says_whether_the_design_had_it(gpu_tables):
    """mnist_seed has no tf32 nor amp-bf16 cell at batch 1024: with the study's plan, the
    one it planned says so and the one it never had says that instead."""
    plot.style()
    metrics = pd.read_csv(gpu_tables / "metrics.csv").query("experiment == 'mnist_seed'")
    planned = ["fp32_bs512", "tf32_bs512", "amp-fp16_bs512", "amp-bf16_bs512", "fp32_bs1024",
               "amp-fp16_bs1024", "tf32_bs1024"]
    plan = figures.Plan(metrics, planned)
    texts = _texts(figures.fig_throughput(_cells(gpu_tables, "mnist_seed"), "mnist_seed",
                                          plan=plan))
    assert texts.count(figures.PLANNED) == 1 and texts.count(figures.NOT_IN_DESIGN) == 1
    assert plan("bs 1024", "tf32") == figures.PLANNED and plan("bs 1024", "amp-bf16") == \
        figures.NOT_IN_DESIGN
    plot.plt.close("all")


def test_the_rule_passes_the_plan_and_the_cli_uses_it(gpu_tables, tmp_path):
    out = tmp_path / "mnist_seed_throughput.svg"
    assert figures.main(["--metrics", str(gpu_tables / "metrics.csv"), "--summary",
                         str(gpu_tables / "summary.csv"), "--speedup",
                         str(gpu_tables / "speedup.csv"),
                         "--experiment", "mnist_seed", "--outputs", str(out),
                         "--planned", "fp32_bs512", "tf32_bs1024"]) == 0
    assert out.stat().st_size > 0
    rule = (REPO / "workflow" / "rules" / "figures.smk").read_text()
    assert "planned_cells(wc.run, wc.experiment)" in rule and "{params.planned:q}" in rule


def test_knob_experiments_plot_the_gain_over_plain_fp32(gpu_tables):
    """The baseline is named in the title (the y label stays inside its axes), and its runs
    are another experiment's: each dot is one run over their mean."""
    plot.style()
    sp = _cells(gpu_tables, "resnet50_fast", "speedup")
    fig = figures.fig_speedup(sp, "resnet50_fast",
                              runs=figures.Runs(pd.read_csv(gpu_tables / "metrics.csv")))
    ax = fig.axes[0]
    assert ax.get_ylabel() == "× plain fp32"
    assert "resnet50's fp32 at bs 64" in ax.get_title().replace("\n", " ")
    heights = [p.get_height() for p in ax.patches]
    assert len(heights) == 3 and min(heights) > 1            # no empty panel
    dots = _dots(ax)
    assert len(dots) == 9 and min(dots) > 1
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_a_knobs_studys_own_baseline_cell_is_not_drawn_over_itself(gpu_tables):
    """resnet50_fastest's plain fp32 cell read 1.00 in a slot of its own; its setting's
    other slots read "not in design"."""
    plot.style()
    metrics = pd.read_csv(gpu_tables / "metrics.csv")
    own = metrics[(metrics["experiment"] == "resnet50") & (metrics["batch_size"] == 64)
                  & (metrics["precision"] == "fp32")].assign(experiment="resnet50_fast")
    m = pd.concat([metrics[metrics["experiment"] == "resnet50_fast"], own])
    summary = summarise(m)
    sp = figures.experiment_rows(speedup_table(m, summary))
    assert ((sp["precision"].astype(str) == "fp32") & (sp["gain"] == 1)).any()
    fig = figures.fig_speedup(sp, "resnet50_fast", runs=figures.Runs(m))
    ax = fig.axes[0]
    assert len(ax.patches) == 3 and all(p.get_height() > 1 for p in ax.patches)
    assert "fp32" not in [t.get_text() for t in fig.legends[0].get_texts()]
    assert "bs 64" not in [t.get_text() for t in ax.get_xticklabels()]
    plot.plt.close("all")


def test_cpu_figures_are_not_drawn_and_say_why(gpu_tables):
    plot.style()
    s = _cells(gpu_tables, "amp_recipe").assign(max_memory_allocated_bytes=float("nan"),
                                                tensor_core_share=float("nan"))
    memory, tensor = figures.fig_memory(s, "amp_recipe"), figures.fig_tensor_cores(s, "amp_recipe")
    assert isinstance(memory, plot.NotDrawn) and "only on CUDA devices" in memory.reason
    assert isinstance(tensor, plot.NotDrawn) and "no kernel profile" in tensor.reason
    note = plot.figure_of(memory)
    assert not note.axes and figure_text.problems(note) == []   # a note, not an empty panel
    plot.plt.close("all")


def test_fixed_colour_per_precision(gpu_tables):
    plot.style()
    fig = figures.fig_throughput(_cells(gpu_tables, "mnist_seed"), "mnist_seed")
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches}
    assert colours <= {c.lower() for c in plot.PALETTE.values()}
    handles = fig.legends[0].get_patches()
    assert [h.get_label() for h in handles] == ["fp32", "tf32", "amp-fp16", "amp-bf16"]
    assert [matplotlib.colors.to_hex(h.get_facecolor()) for h in handles] == \
        [plot.PALETTE[p].lower() for p in ("fp32", "tf32", "amp-fp16", "amp-bf16")]
    plot.plt.close("all")


def test_every_precisions_text_and_outline_colour_reads_on_white():
    """fp8-tensorwise's yellow fills a bar well, but as a "no record" label or an outline on
    white it all but vanishes (contrast 1.3:1): text and thin lines take each mode's colour
    darkened where it is light, every one at least 2.5:1 against white (WCAG's ratio)."""
    from tcbench.render import bars

    def luminance(c):
        rgb = np.array(matplotlib.colors.to_rgb(c))
        lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
        return float(lin @ np.array([0.2126, 0.7152, 0.0722]))

    def contrast(c):
        return 1.05 / (luminance(c) + 0.05)

    assert contrast(plot.PALETTE["fp8-tensorwise"]) < 2.5               # the fill itself
    assert {p: round(contrast(bars.legible(c)), 1) for p, c in plot.PALETTE.items()
            if contrast(bars.legible(c)) < 2.5} == {}
    assert bars.legible(plot.PALETTE["fp32"]) == matplotlib.colors.to_rgb(plot.PALETTE["fp32"])
    plot.style()
    fig, ax = plot.plt.subplots()
    bars.label_slot(ax, 0.0, "no record", plot.PALETTE["fp8-tensorwise"])
    assert contrast(ax.texts[0].get_color()) >= 2.5
    plot.plt.close("all")


def test_intervals_say_what_they_are(gpu_tables):
    plot.style()

    def error_bars(fig):
        return [c for c in fig.axes[0].containers
                if isinstance(c, matplotlib.container.ErrorbarContainer)]

    def legend(fig):
        return [t.get_text() for t in fig.legends[0].get_texts()]
    fig = figures.fig_throughput(_cells(gpu_tables, "amp_recipe"), "amp_recipe")
    assert len(error_bars(fig)) == 4 and "95% CI (n ≥ 3)" in legend(fig)      # n = 3
    fig = figures.fig_throughput(_cells(gpu_tables, "mnist_loaders"), "mnist_loaders")
    assert len(error_bars(fig)) == 8 and "range (n = 2)" in legend(fig) and \
        "95% CI (n ≥ 3)" not in legend(fig)
    fig = figures.fig_throughput(_cells(gpu_tables, "mnist_seed"), "mnist_seed")  # single runs
    assert not error_bars(fig) and "single run" in legend(fig)
    assert _texts(fig).count(plot.SINGLE) == 6
    fig = figures.fig_speedup(_cells(gpu_tables, "amp_recipe", "speedup"), "amp_recipe")
    assert len(error_bars(fig)) == 3                  # ratios carry intervals too; fp32 has no bar
    plot.plt.close("all")


def test_one_tick_format_and_log_axes_for_wide_spans():
    plot.style()
    fig, ax = plot.plt.subplots()
    ax.set_ylim(0, 12000)
    ax.yaxis.set_major_formatter(plot.Ticks())
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert all(label.endswith("k") for label in labels if label != "0k"), labels
    assert len({len(label.split(".")[-1]) if "." in label else 0 for label in labels}) == 1
    fig, ax = plot.plt.subplots()
    assert plot.value_axis(ax, [1.0, 50.0]) is True and ax.get_yscale() == "log"
    fig, ax = plot.plt.subplots()
    assert plot.value_axis(ax, [1.0, 5.0]) is False and ax.get_yscale() == "linear"
    plot.plt.close("all")


def test_tensor_core_share_and_gpu_busy_have_their_own_axes(gpu_tables):
    plot.style()
    fig = figures.fig_tensor_cores(_cells(gpu_tables, "resnet50"), "resnet50")
    assert len(fig.axes) == 2
    assert "kernel time" in fig.axes[0].get_ylabel() and "timed steps" in fig.axes[1].get_ylabel()
    plot.plt.close("all")


def test_widths_follow_the_paper_layouts():
    assert plot.figure_width(8) == plot.ONE_COLUMN_IN == 3.5
    assert plot.figure_width(16) == plot.TWO_COLUMN_IN == 7.0
    assert plot.figure_width(16, "one") == 3.5 and plot.figure_width(2, "two") == 7.0
    with pytest.raises(ValueError, match="width"):
        plot.figure_width(2, "three")


def test_cli_writes_exactly_the_outputs_it_is_given(gpu_tables, tmp_path):
    csvs = [x for k in ("metrics", "summary", "speedup")
            for x in (f"--{k}", str(gpu_tables / f"{k}.csv"))]
    wanted = [tmp_path / V.figure_name("digits", k, "png") for k in figures.KINDS]
    assert figures.main([*csvs, "--experiment", "digits", "--width", "two",
                         "--outputs", *map(str, wanted)]) == 0
    assert sorted(tmp_path.iterdir()) == sorted(wanted)
    assert figures.main([*csvs, "--experiment", "nope", "--outputs",
                         str(tmp_path / V.figure_name("nope", "memory", "png"))]) == 2
    # a file name that is no figure of the experiment is refused before anything is drawn
    assert figures.main([*csvs, "--experiment", "digits", "--outputs",
                         str(tmp_path / "digits_memory.jpg")]) == 2
    assert not (tmp_path / "digits_memory.jpg").exists()


def test_the_figure_kinds_are_the_vocabularys_and_each_has_a_caption():
    """The rules list vocabulary.FIGURES and SET_FIGURES as outputs; this module draws KINDS
    and SET_KINDS: one list each. Every caption says what a figure not drawn is."""
    from tcbench.reports import compare_figures

    assert tuple(figures.KINDS) == V.FIGURES and tuple(compare_figures.KINDS) == V.COMPARE_FIGURES
    assert tuple(figures.SET_KINDS) == V.SET_FIGURES
    report = REPO / "workflow" / "report"
    for k in (*V.FIGURES, *V.SET_FIGURES):
        assert "**not drawn**" in (report / f"figure_{k}.rst").read_text(), k
    assert all((report / f"compare_{k}.rst").exists() for k in V.COMPARE_FIGURES)
    rules = (REPO / "workflow" / "rules" / "figures.smk").read_text()
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    helpers = (REPO / "workflow" / "rules" / "figures_helpers.smk").read_text()
    # the report's "drawn" label: the rule asks its helper, which reads the file's mark
    assert "for kind in SET_FIGURE_KINDS" in rules and "drawn_label(" in rules
    assert "placeholder.label(" in helpers
    # every kind, but on a CPU set those of what a CPU cannot measure
    assert "SET_FIGURE_KINDS = [k for k in V.SET_FIGURES if not (CPU_SET and k in " \
        "V.GPU_ONLY_SET_FIGURES)]" in common
    assert "FIGURE_KINDS = [k for k in V.FIGURES if not (CPU_SET and k in V.GPU_ONLY_FIGURES)]" \
        in common
    assert set(V.GPU_ONLY_FIGURES) < set(V.FIGURES) and \
        set(V.GPU_ONLY_SET_FIGURES) < set(V.SET_FIGURES)
    assert "*expand(set_figures, run=RUN)" in common


def test_a_token_workloads_throughput_is_drawn_in_tokens_per_second(gpu_tables):
    """The throughput figure says its unit: tokens/s where the rows count tokens (the bars'
    heights are the tokens/s column), samples/s otherwise."""
    plot.style()
    s = _cells(gpu_tables, "amp_recipe")
    assert figures.fig_throughput(s,
                                  "amp_recipe").axes[0].get_ylabel() == "samples/s (steady state)"
    lm = s.copy()
    for end in ("", "_low", "_high", "_n"):
        lm[f"throughput_tokens_per_s{end}"] = lm[f"throughput_samples_per_s{end}"] * (
            1024 if end != "_n" else 1)
    ax = figures.fig_throughput(lm, "lm", runs=figures.NO_RUNS).axes[0]
    assert ax.get_ylabel() == "tokens/s (steady state)"
    assert max(p.get_height() for p in ax.patches) == pytest.approx(
        lm["throughput_tokens_per_s"].max())


def test_every_tick_prints_its_own_value():
    """2.5, 7.5, 12.5 GiB are "2.5", "7.5", "12.5" (they printed as 2, 8, 12)."""
    plot.style()
    fig, ax = plot.plt.subplots()
    ax.set_ylim(0, 20)
    ax.set_yticks([0, 2.5, 5, 7.5, 10, 12.5])
    ax.yaxis.set_major_formatter(plot.Ticks())
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0.0", "2.5", "5.0", "7.5",
                                                            "10.0", "12.5"]
    plot.plt.close("all")


def _log_labels(values):
    fig, ax = plot.plt.subplots()
    ax.bar([0, 1], values)
    assert plot.value_axis(ax, values) is True
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    labels = [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks())
              if t.get_text() and lo <= v <= hi]
    plot.plt.close(fig)
    return labels


def test_a_log_axis_of_few_decades_labels_1_2_and_5():
    """fp8_mlp's throughput (200k to 2.9M) had one labelled tick, its speedup (1 to 15) two."""
    plot.style()
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
    return figures.experiment_rows(pd.DataFrame(rows))


def test_warmup_is_points_with_their_range_and_misses_apart():
    """A median is a point, not a bar from zero; whiskers are the runs' own min and max (never
    below zero, so never clipped on a log axis); cache misses are diamonds of their own beside
    the point; a cell whose every run missed says so."""
    plot.style()
    fig = figures.fig_warmup(_warm_rows(), "e")
    ax = fig.axes[0]
    assert not [p for p in ax.patches if p.get_height() > 0]
    whiskers = [c for c in ax.containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
    lows = [seg[0][1] for c in whiskers for coll in c.lines[2] for seg in coll.get_segments()]
    assert lows and min(lows) > 0 and min(lows) >= ax.get_ylim()[0]
    medians = sorted(round(float(ln.get_ydata()[0]), 2) for ln in ax.get_lines()
                     if ln.get_marker() == "o")
    assert medians == [5.36, 6.56, 18.7]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "median, range" in legend and "cache miss" in legend
    assert "95% CI (n ≥ 3)" not in legend
    diamonds = [ln for ln in ax.get_lines() if ln.get_marker() == "D"]
    assert sorted(round(float(ln.get_ydata()[0]), 1) for ln in diamonds) == [12.4, 46.2]
    assert "every run missed" in _texts(fig)
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def _dots(ax) -> list[float]:
    """The y values of the run dots (``plot.RUN_MARK``) on ``ax``."""
    return [float(y) for ln in ax.get_lines() if ln.get_marker() == "o"
            and ln.get_markerfacecolor() == "white" for y in ln.get_ydata()]


def test_each_run_is_a_dot_on_its_bar(gpu_tables):
    """amp_recipe's throughput: a dot per finished run at its own value; its speedup: a dot
    per run of the mode over the mean of fp32's runs, whose mean is the bar."""
    plot.style()
    metrics = pd.read_csv(gpu_tables / "metrics.csv")
    runs = figures.Runs(metrics)
    amp = metrics[(metrics["experiment"] == "amp_recipe") & (metrics["status"] == "ok")]
    fig = figures.fig_throughput(_cells(gpu_tables, "amp_recipe"), "amp_recipe", runs=runs)
    assert sorted(_dots(fig.axes[0])) == pytest.approx(sorted(amp["throughput_samples_per_s"]))
    assert "each run" in [t.get_text() for t in fig.legends[0].get_texts()]
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    fig = figures.fig_speedup(sp, "amp_recipe", runs=runs)
    ax = fig.axes[0]
    fp32 = amp[amp["precision"] == "fp32"]["throughput_samples_per_s"].mean()
    tf32 = amp[amp["precision"] == "tf32"]["throughput_samples_per_s"]
    assert len(_dots(ax)) == 9
    assert set(map(round, (tf32 / fp32 * 1e6))) <= set(round(d * 1e6) for d in _dots(ax))
    bar = sp.loc[sp["precision"].astype(str) == "tf32", "speedup"].iloc[0]
    assert (tf32 / fp32).mean() == pytest.approx(bar)
    plot.plt.close("all")


def _hlines(ax) -> set[float]:
    return {round(float(ln.get_ydata()[0]), 6) for ln in ax.get_lines()
            if len(ln.get_ydata()) == 2 and ln.get_ydata()[0] == ln.get_ydata()[1]
            and ln.get_marker() in ("None", "", None)}


def test_speedup_panels_have_lines_at_1_and_at_the_pays_off_threshold(gpu_tables):
    plot.style()
    fig = figures.fig_speedup(_cells(gpu_tables, "amp_recipe", "speedup"), "amp_recipe")
    assert {1.0, stats.GAIN} <= _hlines(fig.axes[0])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert f"{stats.GAIN:.2f}× (pays-off threshold)" in legend and "fp32" not in legend
    assert not [p for p in fig.axes[0].patches
                if matplotlib.colors.to_hex(p.get_facecolor()) == plot.PALETTE["fp32"].lower()]
    plot.plt.close("all")


def _bar_of(ax, precision: str):
    colour = plot.PALETTE[precision].lower()
    return [p for p in ax.patches if matplotlib.colors.to_hex(p.get_facecolor()) == colour]


def test_a_cell_judged_by_its_interleaved_comparison_draws_that_ratio_as_its_bar(gpu_tables):
    """The bar was the per-process ratio of means and the verdict's interleaved ratio a
    diamond beside it (amp_recipe tf32: 3.41 drawn, 3.09 judged): now the bar, its interval
    and its printed value are the ratio the verdict judges, and the per-process ratio is a
    hollow square beside it, named in the legend as the one not judged on; a set without
    comparisons draws none."""
    from tcbench.reports import speed_figures

    plot.style()
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    plain = figures.fig_speedup(sp, "amp_recipe")
    assert speed_figures.PER_PROCESS_HANDLE.get_label() not in \
        [t.get_text() for t in plain.legends[0].get_texts()]
    tf32 = sp["precision"] == "tf32"
    per_process = float(sp.loc[tf32, "speedup"].iloc[0])
    assert abs(per_process - 3.5) > 0.1
    sp = sp.assign(interleaved_speedup=np.where(tf32, 3.5, np.nan),
                   interleaved_speedup_low=np.where(tf32, 3.4, np.nan),
                   interleaved_speedup_high=np.where(tf32, 3.6, np.nan),
                   interleaved_speedup_n=np.where(tf32, 3, np.nan),
                   interleaved_speedup_interval=np.where(tf32, stats.REPLICATED, None))
    fig = figures.fig_speedup(sp, "amp_recipe")
    ax = fig.axes[0]
    assert [round(b.get_height(), 6) for b in _bar_of(ax, "tf32")] == [3.5]
    squares = [ln for ln in ax.get_lines() if ln.get_marker() == "s"]
    assert len(squares) == 1 and squares[0].get_ydata()[0] == pytest.approx(per_process)
    assert "3.50" in _texts(fig) and num_text(per_process) not in _texts(fig)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert speed_figures.PER_PROCESS_HANDLE.get_label() in legend
    assert any(t.startswith("bar: interleaved ratio (judged)") for t in legend)
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def num_text(v: float) -> str:
    from tcbench.render.numbers import num
    return num(v)


def test_a_cell_the_verdict_does_not_judge_is_drawn_hatched_and_named(gpu_tables):
    """A cell whose repeats are gated (unsteady windows) was drawn as an ordinary bar: it is
    washed out and cross-hatched, and the legend says why no claim is made of it."""
    from tcbench.render import bars

    plot.style()
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    fp16 = sp["precision"] == "amp-fp16"
    sp = sp.assign(speedup_gate=np.where(fp16, stats.UNSTEADY, None))
    fig = figures.fig_speedup(sp, "amp_recipe")
    ax = fig.axes[0]
    hatched = [p for p in ax.patches if p.get_hatch() == bars.UNJUDGED_HATCH]
    assert len(hatched) == 1
    assert matplotlib.colors.to_hex(hatched[0].get_facecolor()) == \
        matplotlib.colors.to_hex(bars.washed(plot.PALETTE["amp-fp16"]))
    assert all(p.get_hatch() is None for p in _bar_of(ax, "tf32") + _bar_of(ax, "amp-bf16"))
    assert "not judged (unsteady windows)" in [t.get_text() for t in fig.legends[0].get_texts()]
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_a_cell_of_too_few_repeats_is_drawn_hatched_and_named(gpu_tables):
    """zoo's resnet18 amp-fp16 (n = 2, claim "n < 3") was drawn as a solid bar like a judged
    one: a cell with too few repeats for a claim is washed out and cross-hatched like any cell
    the verdict does not judge, the legend naming "n < 3" beside the gates."""
    from tcbench.render import bars

    plot.style()
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    fp16, bf16 = sp["precision"] == "amp-fp16", sp["precision"] == "amp-bf16"
    sp = sp.assign(speedup_n=np.where(fp16, 2, sp["speedup_n"]),
                   speedup_interval=np.where(fp16, stats.RANGE, sp["speedup_interval"]),
                   speedup_gate=np.where(bf16, stats.UNSTEADY, None))
    fig = figures.fig_speedup(sp, "amp_recipe")
    ax = fig.axes[0]
    hatched = {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches
               if p.get_hatch() == bars.UNJUDGED_HATCH}
    assert hatched == {matplotlib.colors.to_hex(bars.washed(plot.PALETTE[p]))
                       for p in ("amp-fp16", "amp-bf16")}
    assert all(p.get_hatch() is None for p in _bar_of(ax, "tf32"))
    assert "not judged (n < 3; unsteady windows)" in \
        [t.get_text() for t in fig.legends[0].get_texts()]
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_no_printed_value_is_struck_through_by_a_reference_line(gpu_tables):
    """tf_gpt2's 0.909 sat on the 1× line: a value whose label a reference line crosses is
    lifted above it, and the pays-off line keeps room above it where every bar is below."""
    from tcbench.render import bars

    plot.style()
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    reduced = sp["precision"] != "fp32"
    sp = sp.assign(speedup=np.where(reduced, 0.95, sp["speedup"]),
                   speedup_low=np.where(reduced, 0.94, sp["speedup_low"]),
                   speedup_high=np.where(reduced, 0.96, sp["speedup_high"]))
    fig = figures.fig_speedup(sp, "amp_recipe")
    fig.canvas.draw()
    ax, renderer = fig.axes[0], fig.canvas.get_renderer()
    lines = [ax.transData.transform((0, y))[1] for y in (1.0, stats.GAIN)]
    labels = [t for t in ax.texts if t.get_gid() == bars.VALUE_GID]
    assert len(labels) == 3
    for t in labels:
        box = t.get_window_extent(renderer)
        assert not any(box.y0 <= y <= box.y1 for y in lines), t.get_text()
    assert ax.get_ylim()[1] > stats.GAIN * 1.02
    plot.plt.close("all")


def _fp8_set(bf16_repeats: int = 2, with_bf16: bool = True):
    """An FP8 MLP: fp32, amp-bf16 (``bf16_repeats`` runs) and both FP8 recipes at one batch
    size, FP8 1.25x bf16 and bf16 11x fp32 (a span that takes a log axis)."""
    rng = np.random.default_rng(3)
    rows = []
    for p, t, n in (("fp32", 11.0, 3), ("amp-bf16", 1.0, bf16_repeats),
                    ("fp8-tensorwise", 0.8, 3), ("fp8-rowwise", 0.83, 3)):
        if p == "amp-bf16" and not with_bf16:
            continue
        rows += gpu_like._cell("fp8_mlp", "fp8_mlp", p, 32768, time=t, mem=900 * 10**6,
                               tc=0.0 if p == "fp32" else 0.5, busy=0.98, repeats=n,
                               samples=32768 * 100, rng=rng)
    m = pd.DataFrame(rows)
    summary = summarise(m)
    return m, figures.experiment_rows(speedup_table(m, summary))


def test_fp8_is_drawn_over_amp_bf16_and_fp32_only_for_the_others():
    """fp8_mlp: the FP8-over-bf16 ratio is its own panel (amp-bf16 at n = 2: the range), and
    no FP8 bar stands over fp32; the panel over fp32 has amp-bf16 alone, on a log axis that
    says so."""
    from tcbench.render import bars

    plot.style()
    m, sp = _fp8_set()
    fig = figures.fig_speedup(sp, "fp8_mlp", runs=figures.Runs(m))
    over_bf16, over_fp32 = fig.axes
    assert over_bf16.get_ylabel() == "× amp-bf16" and "FP8 over amp-bf16" in over_bf16.get_title()
    heights = sorted(round(p.get_height(), 6) for p in over_bf16.patches)
    assert heights == sorted(round(v, 6) for v in sp.loc[sp["precision"].astype(str).str
                                                         .startswith("fp8"), "bf16_speedup"])
    assert 1.15 < min(heights) and max(heights) < 1.4
    assert over_fp32.get_ylabel() == "× fp32 (log scale)"
    # a bar from a log axis's arbitrary floor would misstate its length: a point
    assert not over_fp32.patches
    # amp-bf16 ran twice: no claim of it, so its point is washed out and crossed (n < 3), and
    # every FP8 bar over it hatched
    points = [ln for ln in over_fp32.get_lines() if ln.get_marker() == "o"
              and ln.get_markerfacecolor() == bars.washed(plot.PALETTE["amp-bf16"])]
    assert [round(float(ln.get_ydata()[0]), 3) for ln in points] == [
        round(sp.loc[sp["precision"].astype(str) == "amp-bf16", "speedup"].iloc[0], 3)]
    assert len([ln for ln in over_fp32.get_lines() if ln.get_marker() == "x"]) == 1
    assert {p.get_hatch() for p in over_bf16.patches} == {bars.UNJUDGED_HATCH}
    assert "not judged (n < 3)" in [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(_dots(over_bf16)) == 6 and len(_dots(over_fp32)) == 2
    assert {1.0, stats.GAIN} <= _hlines(over_bf16)
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_fp8_without_amp_bf16_is_not_drawn_over_fp32_and_says_why():
    """fp8_digits drew its FP8 cells over fp32, the comparison the rules forbid (it credits
    FP8 with bf16's own gain): with no amp-bf16 beside them there is no ratio to draw."""
    plot.style()
    m, sp = _fp8_set(with_bf16=False)
    nd = figures.fig_speedup(sp, "fp8_digits", runs=figures.Runs(m))
    assert isinstance(nd, plot.NotDrawn)
    assert "judged against amp-bf16 only" in nd.reason and "no amp-bf16 run" in nd.reason
    tf32 = sp[sp["precision"] == "fp32"].assign(precision="tf32", speedup=1.3,
                                                 speedup_low=1.2, speedup_high=1.4)
    fig = figures.fig_speedup(pd.concat([sp, tf32]), "fp8_digits", runs=figures.Runs(m))
    assert "amp-bf16, did not run" in fig.axes[0].get_title()
    assert len(fig.axes[0].patches) == 1 and _texts(fig).count("no amp-bf16") == 2
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_tensor_core_panels_draw_every_mode_the_same_way(gpu_tables):
    """fp32 got a floating black line and no bar: now every cell is an outline as tall as its
    matrix kernels, filled as far as they ran on Tensor Cores, its share printed above; the
    host-bound line is the vocabulary's threshold."""
    plot.style()
    s = _cells(gpu_tables, "amp_recipe")
    fig = figures.fig_tensor_cores(s, "amp_recipe")
    top, bottom = fig.axes
    outlines = {matplotlib.colors.to_hex(p.get_edgecolor()): p.get_height()
                for p in top.patches if not p.get_fill()}
    for p in ("fp32", "tf32", "amp-fp16", "amp-bf16"):
        mm = float(s.loc[s["precision"].astype(str) == p, "matmul_share"].iloc[0]) * 100
        assert outlines[plot.PALETTE[p].lower()] == pytest.approx(mm)
    assert [t.get_text() for t in top.texts if t.get_text().isdigit()] == ["0", "60", "35", "35"]
    assert V.HOST_BOUND_BUSY_SHARE * 100 in _hlines(bottom)
    assert "host-bound below 90%" in [t.get_text() for t in fig.legends[0].get_texts()]
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_attribution_attributes_and_its_legend_lists_what_shows(gpu_tables):
    """amp_recipe (busy 0.3, wait 2%): GPU, host and wait all show and are named; resnet50
    with its wait under 1%: the wait is not in the legend and the axis says why; each bar
    adds up to the whole step."""
    plot.style()
    metrics = pd.read_csv(gpu_tables / "metrics.csv")
    amp = metrics.query("experiment == 'amp_recipe'")
    fig = figures.fig_attribution(amp, "amp_recipe")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"GPU running kernels", "GPU idle, host issuing work", "waiting for data"} <= \
        set(legend)
    assert "where the step time goes" in fig.axes[0].get_title()
    parts = figures.step_parts(figures.experiment_rows(amp))
    assert list(parts[["gpu", "host", "wait"]].sum(axis=1)) == pytest.approx([1.0] * 4)
    tf32 = parts[parts["precision"] == "tf32"].iloc[0]
    assert tf32["gpu"] == pytest.approx(0.3) and tf32["wait"] == pytest.approx(0.02)
    quiet = metrics.query("experiment == 'resnet50'").assign(
        data_wait_s=lambda d: d["compute_s"] * 0.001)
    fig = figures.fig_attribution(quiet, "resnet50")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "waiting for data" not in legend
    assert "waiting for data: under 1% of every step" in fig.axes[0].get_xlabel()
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_a_figure_with_nothing_to_draw_is_not_drawn_and_marked_so(gpu_tables, tmp_path):
    """zoo's speedup was an empty frame with one sentence: it is not drawn; its files are a
    note saying why, marked in every format's metadata, which the report reads."""
    plot.style()
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    sp = sp[sp["precision"].astype(str) != "fp32"].assign(speedup=float("nan"),
                                                          gain=float("nan"))
    nd = figures.fig_speedup(sp, "zoo")
    assert isinstance(nd, plot.NotDrawn) and "no fp32 run finished" in nd.reason
    paths = plot.save_as(nd, [tmp_path / f"zoo_speedup.{x}" for x in plot.FORMATS])
    for path in paths:
        assert placeholder.reason(path) == nd.reason, path.suffix
        assert placeholder.label(path) == f"no: {nd.reason}"
    drawn = plot.save_as(figures.fig_speedup(_cells(gpu_tables, "amp_recipe", "speedup"),
                                             "amp_recipe"),
                         [tmp_path / f"amp_recipe_speedup.{x}" for x in plot.FORMATS])
    assert all(placeholder.reason(p) is None and placeholder.label(p) == "yes" for p in drawn)
    plot.plt.close("all")


def test_a_figure_not_drawn_shows_what_the_experiment_ran(gpu_tables, tmp_path):
    """zoo_timm's speedup was a PNG of one sentence: the note now heads the experiment's cells,
    each a swatch in its precision's colour (washed where no run finished) with how many of
    its runs finished and, where some did not, their status; the file stays marked "not
    drawn" for the report."""
    from tcbench.render import bars
    plot.style()
    tables = [pd.read_csv(gpu_tables / f"{t}.csv") for t in ("metrics", "summary", "speedup")]
    fp32 = [t[(t["experiment"] == "amp_recipe") & (t["precision"] == "fp32")] for t in tables]
    oom = fp32[1].iloc[[0]].assign(precision="amp-fp16", status=V.OOM, repeats_ok=0)
    fp32[1] = pd.concat([fp32[1], oom], ignore_index=True)
    nd = figures.build(*fp32, "amp_recipe", kinds=["speedup"])["speedup"]
    assert isinstance(nd, plot.NotDrawn) and len(nd.cells) == len(fp32[1])
    fig = plot.figure_of(nd)
    texts = [t.get_text() for t in fig.texts]
    assert "only strict fp32 ran" in texts[0]
    runs = fp32[1]["repeats"].iloc[0]
    assert {"fp32", "amp-fp16", f"{runs} of {runs} finished", "no run finished\noom"} <= \
        set(texts)
    swatches = {matplotlib.colors.to_hex(a.get_facecolor()) for a in fig.artists}
    assert swatches == {plot.PALETTE["fp32"].lower(),
                        matplotlib.colors.to_hex(bars.washed(plot.PALETTE["amp-fp16"]))}
    assert figure_text.problems(fig) == []
    path, = plot.save_as(nd, [tmp_path / "amp_recipe_speedup.png"])
    assert placeholder.reason(path) == nd.reason
    plot.plt.close("all")


def test_the_not_drawn_mark_survives_text_beyond_latin_1(tmp_path):
    why = "needs compute capability ≥ 8.9 — none here"
    paths = plot.save_as(plot.NotDrawn("e: speedup", why), [tmp_path / f"n.{x}"
                                                            for x in plot.FORMATS])
    assert [placeholder.reason(p) for p in paths] == [why] * 3


def test_an_fp32_only_experiment_is_not_drawn(gpu_tables):
    """fp32 over fp32 is 1.00 by definition: an experiment that ran only fp32 (zoo_timm) has
    no speedup figure, and says why."""
    plot.style()
    sp = _cells(gpu_tables, "amp_recipe", "speedup")
    nd = figures.fig_speedup(sp[sp["precision"].astype(str) == "fp32"], "only_fp32")
    assert isinstance(nd, plot.NotDrawn) and "only strict fp32 ran" in nd.reason


def test_log_axes_say_so():
    plot.style()
    fig, ax = plot.plt.subplots()
    assert plot.value_axis(ax, [1.0, 50.0], label="× fp32") and ax.get_ylabel() == \
        "× fp32 (log scale)"
    assert plot.value_axis(ax, [1.0, 50.0], label="samples/s (steady state)")
    assert ax.get_ylabel() == "samples/s (steady state)\n(log scale)"
    fig, ax = plot.plt.subplots()
    assert not plot.value_axis(ax, [1.0, 5.0], label="× fp32") and ax.get_ylabel() == "× fp32"
    plot.plt.close("all")


# ------------------------------------------------------------------------ the set's figures
@pytest.fixture(scope="module")
def host_tables(tmp_path_factory):
    return host_like.write(tmp_path_factory.mktemp("host-like"))


def test_host_bound_cells_against_the_host_probe(host_tables):
    """One point per run of each host-bound cell (GPU busy < 90%: not fp32 at 0.99), at the
    probe's mean over its window, in the mode's colour."""
    plot.style()
    m = pd.read_csv(host_tables["metrics"])
    fig = host_figures.fig_host_bound(m)
    ax = fig.axes[0]
    points = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    colours = {matplotlib.colors.to_hex(ln.get_markerfacecolor()) for ln in points}
    assert colours == {plot.PALETTE[p].lower() for p in ("tf32", "amp-fp16", "amp-bf16")}
    xs = sorted(x for ln in points for x in ln.get_xdata())
    bound = m[m["precision"] != "fp32"]
    assert xs == pytest.approx(sorted(bound["host_probe_ops_per_s"]))
    assert sorted(y for ln in points for y in ln.get_ydata()) == pytest.approx(
        sorted(bound["throughput_samples_per_s"]))
    assert "amp_recipe, bs 512" in ax.get_title()
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_host_bound_figure_is_not_drawn_without_its_data():
    m = host_like.metrics(with_probe=False)
    assert "no host probe" in host_figures.fig_host_bound(m).reason
    busy = host_like.metrics().assign(gpu_busy_share=lambda d: d["gpu_busy_share"] * 0 + 0.99)
    assert "no cell is host-bound" in host_figures.fig_host_bound(busy).reason
    none = host_like.metrics().assign(gpu_busy_share=float("nan"))
    assert "GPU busy share" in host_figures.fig_host_bound(none).reason


def test_an_input_bound_cell_is_not_drawn_as_host_bound():
    """host_bound.png showed mnist_seed, whose GPU idles waiting for its loader, under the
    host-bound title: a cell most of whose runs were input-bound is left out."""
    plot.style()
    m = host_like.metrics()
    waits = m.assign(input_bound=m["precision"] == "tf32")
    fig = host_figures.fig_host_bound(waits)
    colours = {matplotlib.colors.to_hex(ln.get_markerfacecolor())
               for ax in fig.axes for ln in ax.get_lines() if ln.get_marker() == "o"}
    assert colours == {plot.PALETTE[p].lower() for p in ("amp-fp16", "amp-bf16")}
    assert "no cell is host-bound" in host_figures.fig_host_bound(m.assign(input_bound=True)).reason
    plot.plt.close("all")


def test_many_interleaved_settings_share_rows_and_rounds_are_whole(host_tables):
    """interleaved.png was 11,901 px tall, one row a setting, its round ticks at 0.5, 1.5:
    past four settings two share a row, and a round tick is a whole round."""
    plot.style()
    settings = [host_like.rounds(n=8, seed=k).assign(batch_size=64 * k) for k in range(1, 7)]
    rounds = pd.concat(settings, ignore_index=True)
    fig = host_figures.fig_interleaved(host_like.interleaved(rounds), rounds)
    assert len(fig.axes) == 12 and fig.axes[0].get_gridspec().ncols == 4
    assert fig.get_size_inches()[1] < 0.6 + 2.3 * 6
    fig.canvas.draw()
    for ax in fig.axes[::2]:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks)
    plot.plt.close("all")


def test_interleaved_rounds_and_paired_ratios(host_tables):
    """Left: each arm's throughput in every round; right: per arm but fp32, its per-round
    ratios to fp32 (recomputed here from the rounds) and the median with its bootstrap
    interval as interleaved.csv holds it."""
    plot.style()
    rounds = pd.read_csv(host_tables["interleaved_rounds"])
    ratios = pd.read_csv(host_tables["interleaved"])
    fig = host_figures.fig_interleaved(ratios, rounds)
    left, right = fig.axes
    assert len(left.get_lines()) == 4 and all(len(ln.get_xdata()) == 24
                                              for ln in left.get_lines())
    assert [t.get_text() for t in right.get_xticklabels()] == [
        "tf32\n÷ fp32", "amp-fp16\n÷ fp32", "amp-bf16\n÷ fp32"]
    medians = [c for c in right.containers
               if isinstance(c, matplotlib.container.ErrorbarContainer)]
    assert len(medians) == 3
    for c, arm in zip(medians, ("tf32", "amp-fp16", "amp-bf16")):
        row = ratios[(ratios["precision"] == arm) & (ratios["baseline"] == "fp32")].iloc[0]
        assert float(c.lines[0].get_ydata()[0]) == pytest.approx(row["ratio"])
        per_round = host_figures.round_ratios(rounds, arm, "fp32")
        assert len(per_round) == 24 and per_round.median() == pytest.approx(row["ratio"])
        assert row["ratio_low"] < row["ratio"] < row["ratio_high"]
    assert len(_dots(right)) == 3 * 24
    assert {1.0, stats.GAIN} <= _hlines(right)
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_interleaved_rounds_of_a_token_workload_are_in_tokens():
    """interleaved.png drew the transformers' rounds in samples/s, every other output their
    tokens/s: a setting whose experiment's records count tokens is drawn in tokens/s (its
    samples/s times the records' tokens per sample), another's in samples/s beside it; the
    ratios are the same in either unit."""
    plot.style()
    gpt = dict(host_like.SETTING, experiment="tf_gpt2", workload="transformers")
    rounds = pd.concat([host_like.rounds(n=6), host_like.rounds(n=6, setting=gpt)],
                       ignore_index=True)
    metrics = host_like.metrics().assign(tokens_per_sample=float("nan"))
    metrics = pd.concat([metrics, metrics.assign(experiment="tf_gpt2", tokens_per_sample=1024)])
    fig = host_figures.fig_interleaved(host_like.interleaved(rounds), rounds, metrics)
    mnist, tokens = fig.axes[0], fig.axes[2]
    assert mnist.get_ylabel().startswith("samples/s") and tokens.get_ylabel().startswith(
        "tokens/s")
    mine = rounds[rounds["experiment"] == "tf_gpt2"]
    assert sorted(y for ln in tokens.get_lines() for y in ln.get_ydata()) == pytest.approx(
        sorted(mine["throughput_samples_per_s"] * 1024))
    assert [float(c.lines[0].get_ydata()[0]) for c in fig.axes[3].containers] == \
        pytest.approx([float(c.lines[0].get_ydata()[0]) for c in fig.axes[1].containers])
    assert figure_text.problems(fig) == []
    two = metrics.assign(tokens_per_sample=lambda d: d["tokens_per_sample"].where(
        d["repeat"] != 1, 512))
    with pytest.raises(ValueError, match="'tf_gpt2'.*one sequence length"):
        host_figures.fig_interleaved(host_like.interleaved(rounds), rounds, two)
    plot.plt.close("all")


def test_interleaved_processes_are_laid_end_to_end_with_the_ratio_across_them():
    """Three processes of one setting: on the left one after another (a line between them),
    on the right every round of every process and the ratio across the processes (t CI)."""
    plot.style()
    rounds = pd.concat([host_like.rounds(n=8, seed=k).assign(replicate=k) for k in (1, 2, 3)])
    thr = [g.pivot(index="round", columns="precision", values="throughput_samples_per_s")
           for _, g in rounds.groupby("replicate")]
    rows = []
    for arm in ("tf32", "amp-fp16", "amp-bf16"):
        e = stats.replicated_paired([(t[arm], t["fp32"]) for t in thr])[0].estimate
        rows.append({**host_like.SETTING, "precision": arm, "baseline": "fp32",
                     **e.as_dict("ratio"), "ratio_interval": e.method, "processes": 3})
    fig = host_figures.fig_interleaved(pd.DataFrame(rows), rounds)
    left, right = fig.axes
    traces = [ln for ln in left.get_lines() if len(ln.get_xdata()) == 8]
    assert len(traces) == 4 * 3 and len(left.get_lines()) == 4 * 3 + 2   # two separators
    assert sorted({float(ln.get_xdata()[0]) for ln in traces}) == [0.0, 8.0, 16.0]
    assert "processes one after another" in left.get_xlabel()
    assert len(host_figures.round_ratios(rounds, "tf32",
                                         "fp32")) == 24 and len(_dots(right)) == 3 * 24
    assert "across processes, 95% t CI" in right.get_title()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert host_figures.IL_MARKS[stats.REPLICATED][1] in labels
    assert host_figures.IL_MARKS[stats.PAIRED][1] not in labels
    assert figure_text.problems(fig) == []
    plot.plt.close("all")


def test_interleaved_figure_is_not_drawn_without_its_tables():
    assert "no experiment of this set was compared interleaved" in \
        host_figures.fig_interleaved(None, None).reason
    empty = host_like.rounds().iloc[0:0]
    assert "empty" in host_figures.fig_interleaved(host_like.interleaved(host_like.rounds()),
                                                   empty).reason


def test_set_figures_cli(host_tables, tmp_path):
    outs = [tmp_path / V.set_figure_name(k, x) for k in V.SET_FIGURES for x in ("png", "svg")]
    args = ["--metrics", str(host_tables["metrics"]), "--interleaved",
            str(host_tables["interleaved"]), "--interleaved-rounds",
            str(host_tables["interleaved_rounds"])]
    assert figures.main([*args, "--outputs", *map(str, outs)]) == 0
    assert sorted(tmp_path.iterdir()) == sorted(outs)
    assert all(placeholder.reason(p) is None for p in outs)
    # without the interleaved tables (a set whose aggregate writes none): a note, not an error
    alone = tmp_path / "alone" / V.set_figure_name("interleaved", "png")
    assert figures.main(["--metrics", str(host_tables["metrics"]), "--outputs", str(alone)]) == 0
    assert "compared interleaved" in placeholder.reason(alone)
    # a table named but missing is an error naming it; a name that is no set figure too
    assert figures.main(["--metrics", str(host_tables["metrics"]), "--interleaved",
                         str(tmp_path / "nope.csv"), "--outputs", str(alone)]) == 2
    assert figures.main(["--metrics", str(host_tables["metrics"]), "--outputs",
                         str(tmp_path / "host.png")]) == 2


def test_a_throughput_whose_windows_were_unsteady_is_drawn_hatched_and_a_log_axis_has_points(
        gpu_tables):
    """mnist_seed's every-window-unsteady throughputs were drawn as ordinary bars: a cell of
    unsteady windows is washed out and hatched, named in the legend; where the values span a
    log axis each cell is a point (a bar's length from an arbitrary floor means nothing)."""
    from tcbench.render import bars

    plot.style()
    s = _cells(gpu_tables, "amp_recipe")
    s = s.assign(unsteady_n=np.where(s["precision"] == "tf32", 1, 0))
    fig = figures.fig_throughput(s, "amp_recipe")
    ax = fig.axes[0]
    assert [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches
            if p.get_hatch() == bars.UNJUDGED_HATCH] == [
        matplotlib.colors.to_hex(bars.washed(plot.PALETTE["tf32"]))]
    assert "unsteady windows" in [t.get_text() for t in fig.legends[0].get_texts()]
    wide = s.assign(throughput_samples_per_s=np.where(s["precision"] == "fp32", 1e3, 1e5),
                    throughput_samples_per_s_low=np.nan, throughput_samples_per_s_high=np.nan)
    ax = figures.fig_throughput(wide, "amp_recipe").axes[0]
    assert ax.get_yscale() == "log" and not ax.patches
    assert len([ln for ln in ax.get_lines() if ln.get_marker() == "x"]) == 1
    plot.plt.close("all")


def test_a_bars_label_carries_its_intervals_mark_as_the_tables_do():
    from tcbench.render import bars
    from tcbench.render.numbers import num

    row = {"ratio_low": 2.2, "ratio_high": 3.8, "ratio_n": 4}
    assert bars._value_label(num, 2.91, row | {"ratio_interval": stats.RUNS}, "ratio") == "2.9§"
    one = row | {"ratio_low": 1.25, "ratio_high": 1.27, "ratio_interval": stats.PAIRED}
    assert bars._value_label(num, 1.262, one, "ratio") == "1.26¶"
    assert bars._value_label(num, 2.91, row | {"ratio_interval": stats.CI}, "ratio") == "2.9"
