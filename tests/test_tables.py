"""Summary tables: numbers rounded the same way in Markdown, LaTeX (booktabs) and HTML; cells
without a number say why; columns the device does not measure are named, not silently gone."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import gpu_like
from conftest import REPO
from tcbench import resultset
from tcbench import stats
from tcbench.render import numbers
from tcbench.render import table
from tcbench.reports import ratio_cells
from tcbench.reports import tables


@pytest.mark.parametrize("value,text", [(54372.25, "54,400"), (7.020, "7.02"), (107.228, "107"),
                                        (0.02195, "0.0220"), (0.99996, "1.00"), (9.996, "10.0"),
                                        (None, "–"), (float("nan"), "–")])
def test_significant_digits(value, text):
    assert numbers.num(value) == text


def test_units():
    assert numbers.times(2.7812) == "2.78×" and numbers.percent(0.934) == "93%"
    assert numbers.memory(417359872) == "398 MiB" and numbers.memory(12 * 2**30) == "12.0 GiB"
    assert numbers.memory_unit(3 * 2**30) == ("MiB",
                                              2**20) and numbers.memory_unit(5 * 2**30)[0] == "GiB"
    assert numbers.interval(1.0, 2.0) == "[1.00, 2.00]"


def test_an_interval_says_what_it_is():
    assert numbers.with_interval(5730, 5700, 5760, 3) == "5,730 [5,700, 5,760]"
    assert numbers.with_interval(5730, 5700, 5760, 2) == "5,730 (range 5,700–5,760)"
    assert numbers.with_interval(5730, None, None, 1) == "5,730 (1 run)"
    assert numbers.with_interval(2.79, 2.75, 2.83, 3, fmt=numbers.times) == "2.79× [2.75, 2.83]"
    assert numbers.with_interval(None, None, None, 0) == "–"
    assert numbers.with_interval(6.2, 5.8, 7.3, 3, kind=stats.SPREAD) == \
        "6.2 (5.80–7.30)".replace("6.2", numbers.num(6.2))


def test_an_interval_narrower_than_its_digits_says_so():
    """[162,000, 162,000] says nothing, and 161,990 [161,950, 162,040] says more than a rerun
    carries: an interval narrower than the third significant digit gives its half-width, or
    that the runs agree exactly; a range (not a confidence interval) likewise."""
    assert numbers.with_interval(161993, 161950, 162040, 3) == "162,000 (95% CI ±0.028%)"
    assert numbers.with_interval(1063.6, 1063.2, 1064.0, 3) == "1,060 (95% CI ±0.038%)"
    assert numbers.with_interval(1.0497, 1.0451, 1.0544, 3,
                                 fmt=numbers.times) == "1.05× (95% CI ±0.44%)"
    assert numbers.with_interval(18.71, 18.69, 18.74, 3,
                                 kind=stats.SPREAD) == "18.7 (range ±0.13%)"
    assert numbers.with_interval(162000, 161999.5, 162000.4, 3) == "162,000 (95% CI ±0.00028%)"
    assert numbers.with_interval(162000, 162000, 162000, 3) == \
        "162,000 (95% CI of zero width: the 3 runs agree exactly)"
    assert numbers.with_interval(162000, 150000, 170000, 3) == "162,000 [150,000, 170,000]"


def test_latex_writes_signs_not_escaped_operators():
    tex = table.latex_escape("given only where n >= 3, or n <= 2")
    assert r"\textgreater{}=" not in tex and r"$\geq$ 3" in tex and r"$\leq$ 2" in tex


def test_a_note_shared_by_tables_is_given_once_and_referred_to():
    note = "a long note every table of a set shares"
    made = [table.Table(f"t{i}", ["a"], [["1"]], notes=[note, f"own {i}"], label=f"tab:{i}")
              for i in range(3)]
    tex = table.to_latex_all(made)
    assert tex.count(note) == 1 and all(f"own {i}" in tex for i in range(3))
    assert tex.count(r"as in Table~\ref{tab:0}") == 2


def test_latex_escapes_and_booktabs():
    t = table.Table("amp_recipe: 50% & more", ["setting", "speedup"],
                    [["bs 512", "2.78×"], ["x_y", "–"]], notes=["†: a"])
    tex = table.to_latex(t)
    for part in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lr}",
                 r"amp\_recipe: 50\% \& more", r"2.78$\times$", r"x\_y & -- \\",
                 r"\textsuperscript{\dag}: a"):
        assert part in tex, part
    assert table.to_latex(t, float_env=False).startswith(r"\begin{tabular}")


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="2 cells, expected 3"):
        table.Table("t", ["a", "b", "c"], [["1", "2"]])


@pytest.fixture(scope="module")
def gpu_tables(tmp_path_factory):
    out = gpu_like.write(tmp_path_factory.mktemp("gpu-like"))
    return pd.read_csv(out / "summary.csv"), pd.read_csv(out / "speedup.csv"), out


def rows_of(t):
    return [dict(zip(t.columns, r)) for r in t.rows]


def test_experiment_tables_on_a_gpu_set(gpu_tables):
    s, sp, _ = gpu_tables
    speed, evidence = tables.experiment_tables(s, sp, "resnet50")
    # no interleaved comparison in this set: the judged ratio is the per-process one, once
    assert speed.columns[:7] == ["setting", "precision", "n", "samples/s", ratio_cells.JUDGED_HEAD,
                                 ratio_cells.HOW_HEAD, tables.WARMUP_HEAD]
    assert "peak memory (GiB)" in speed.columns and tables.WARMUP_MISS_HEAD not in speed.columns
    rows = {(r["setting"], r["precision"]): r for r in rows_of(speed)}
    oom = rows[("bs 256", "fp32")]
    assert oom["samples/s"] == "–" and oom["n"] == "0/3 oom"
    assert rows[("bs 256", "amp-fp16")][ratio_cells.JUDGED_HEAD] == "no fp32"
    assert rows[("bs 64", "fp32")][ratio_cells.JUDGED_HEAD] == "1×"
    assert re.fullmatch(r"3\.\d\d× \[\d\.\d\d, \d\.\d\d\]",
                        rows[("bs 64", "amp-fp16")][ratio_cells.JUDGED_HEAD])
    assert rows[("bs 64", "amp-fp16")][ratio_cells.HOW_HEAD] == "repeats over fp32"
    # warm-up: a median and its range, never a t interval's brackets
    assert re.fullmatch(r"[\d.]+ \([\d.]+–[\d.]+\)", rows[("bs 64",
                                                           "amp-fp16")][tables.WARMUP_HEAD])
    assert any("median (min–max)" in n for n in speed.notes)
    assert any("CUDA out of memory" in n for n in speed.notes)
    assert any("95% confidence interval" in n for n in speed.notes)
    assert "limited by" in evidence.columns
    limits = {r["precision"]: r["limited by"] for r in rows_of(evidence) if r["setting"] == "bs 64"}
    # the largest share of kernel time, with its number
    assert set(limits) == {"fp32", "tf32", "amp-fp16", "amp-bf16"}
    assert all(re.fullmatch(r"non-matrix \d+%", v) for v in limits.values()), limits
    md = table.to_markdown(speed)
    assert len(re.findall(r"^\|", md, re.M)) == 2 + len(speed.rows)


def test_no_two_rows_look_alike(gpu_tables):
    s, sp, _ = gpu_tables
    for exp in s["experiment"].unique():
        t = tables.experiment_tables(s, sp, exp)[0]
        keys = [(r[0], r[1]) for r in t.rows]
        assert len(keys) == len(set(keys)), exp
    t = tables.speedup_table(sp)
    keys = [(r[0], r[1], r[2]) for r in t.rows]
    assert len(keys) == len(set(keys))
    fast = [r[1] for r in t.rows if r[0] == "resnet50_fast"]
    assert "bs 256, channels_last, compile default" in fast


def test_single_runs_and_ranges_are_marked(gpu_tables):
    s, sp, _ = gpu_tables
    seed = rows_of(tables.experiment_tables(s, sp, "mnist_seed")[0])
    assert all(r["samples/s"].endswith("(1 run)") for r in seed)
    loaders = rows_of(tables.experiment_tables(s, sp, "mnist_loaders")[0])
    assert all("(range " in r["samples/s"] for r in loaders)
    assert {r["setting"] for r in loaders} == {"bs 512, gpu-resident", "bs 512, synthetic"}


def test_the_speedup_table_prints_each_throughput_as_the_experiment_table_does(gpu_tables):
    # one number, one way: with its interval (or its n), never a bare mean of more digits
    s, sp, _ = gpu_tables
    whole = {(r["experiment"], r["setting"], r["precision"]): r["samples/s"]
             for r in rows_of(tables.speedup_table(sp, s))}
    for exp in ("resnet50", "mnist_loaders", "mnist_seed"):
        for r in rows_of(tables.experiment_tables(s, sp, exp)[0]):
            assert whole[(exp, r["setting"], r["precision"])] == r["samples/s"]
    assert any("(range " in v for v in whole.values())
    assert any("(1 run)" in v for v in whole.values())


def test_claims_follow_the_interval(gpu_tables):
    _, sp, _ = gpu_tables
    rows = {(r["experiment"], r["precision"]): r for r in rows_of(tables.speedup_table(sp))
            if r["setting"] in ("bs 64", "bs 512", "bs 512, gpu-resident")}
    claims = {k: r["claim"] for k, r in rows.items()}
    assert claims[("resnet50", "amp-fp16")] == "pays off"
    # [0.989, 1.04] straddles 1 and reaches past the 3% margin (inconclusive), but the cell is
    # host-bound with no interleaved comparison: not judged, whatever its interval says
    assert claims[("digits", "amp-bf16")] == stats.HOST_BOUND
    assert claims[("mnist_seed", "amp-fp16")] == "n < 3"
    # two repeats and host-bound: a gated cell is its gate's "not judged", n < 3 or not
    assert claims[("mnist_loaders", "amp-fp16")] == stats.HOST_BOUND
    # judged by its repeats all the same: the claim says why none is made
    assert rows[("mnist_seed", "amp-fp16")][ratio_cells.HOW_HEAD] == "repeats over fp32"


def test_accuracy_difference_is_paired_by_seed(gpu_tables):
    s, sp, _ = gpu_tables
    t = tables.experiment_tables(s, sp, "digits")[1]
    assert t.title.endswith("accuracy against fp32")
    rows = {r["precision"]: r for r in rows_of(t)}
    assert rows["fp32"]["Δ vs fp32 (points)"] == ""
    assert re.fullmatch(r"[+-]\d\.\d+ \[[+-]\d\.\d+, [+-]\d\.\d+\]",
                        rows["amp-bf16"]["Δ vs fp32 (points)"])
    assert rows["amp-fp16"]["n"] == "0/5 diverged"


def test_best_table_names_baseline_and_gain(gpu_tables):
    *_, out = gpu_tables
    b = rows_of(tables.best_table(pd.read_csv(out / "best.csv")))
    resnet = next(r for r in b if r["experiment"] == "resnet50_fast")
    assert resnet["fastest configuration"] == "amp-bf16, bs 256, channels_last, compile default"
    assert resnet["plain fp32 baseline"] == "resnet50, bs 64"
    assert resnet["changed besides precision"] == \
        "bs 64 → 256, contiguous → channels_last, compile off → compile default"
    assert resnet["memory × baseline"] == "–"          # other batch size: not compared
    assert {r["experiment"] for r in b} >= {"zoo: resnet18", "zoo: vit_b_16"}


def test_cli_writes_what_it_is_given_and_the_combined_set(gpu_tables, tmp_path):
    *_, out = gpu_tables
    csvs = ["--summary", str(out / "summary.csv"), "--speedup", str(out / "speedup.csv")]
    for exp in ("digits", "resnet50"):
        assert tables.main([*csvs, "--experiment", exp,
                            *(x for ext in ("md", "tex", "html")
                              for x in (f"--{ext}", str(tmp_path / "t" / f"{exp}.{ext}")))]) == 0
    assert tables.main([*csvs, "--combined-md", str(tmp_path / "all.md"),
                        "--combined-tex", str(tmp_path / "all.tex")]) == 0
    names = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert names == ["digits.html", "digits.md", "digits.tex", "resnet50.html", "resnet50.md",
                     "resnet50.tex"]
    tex = (tmp_path / "all.tex").read_text()
    # every experiment of the set: speed, evidence, and accuracy where measured
    s, sp = pd.read_csv(out / "summary.csv"), pd.read_csv(out / "speedup.csv")
    n = sum(len(tables.experiment_tables(s, sp, e)) for e in s["experiment"].unique())
    assert n > 2 * s["experiment"].nunique()
    parts = tex.count("continued, part")        # a table too tall or wide for a page, in parts
    assert tex.count(r"\begin{table}") - parts == n and tex.count(r"\bottomrule") - parts == n
    assert tables.main([*csvs, "--experiment", "x", "--md", str(tmp_path / "x.md")]) == 2
    assert not (tmp_path / "x.md").exists()
    assert tables.main([*csvs, "--md", str(tmp_path / "x.md")]) == 2      # which experiment?


def test_an_fp8_experiments_evidence_table_says_how_its_mfu_counts():
    from test_verdict import lm_rows
    from tcbench.analysis.speedup import speedup
    from tcbench.analysis.summarise import summarise

    m = resultset.order(pd.DataFrame([*lm_rows("amp-bf16", [18.0, 18.2, 17.8]),
                                      *lm_rows("fp8-tensorwise", [16.0, 16.1, 15.9])]))
    s = summarise(m).assign(tensor_core_share=0.5)
    notes = tables.evidence_table(tables.Experiment(s, speedup(m, s), "tf_gpt2")).notes
    assert any(n.startswith("MFU of the FP8 cells: an FP8 cell's FLOPs are those of the same "
                            "training step before the conversion") for n in notes)
    fp32 = m.assign(precision="fp32", experiment="plain")
    s = summarise(resultset.order(fp32)).assign(tensor_core_share=0.5)
    assert not any("FP8" in n for n in tables.evidence_table(
        tables.Experiment(s, speedup(resultset.order(fp32), s), "plain")).notes)


def test_a_finished_cell_without_a_number_says_why_never_n_a(gpu_tables):
    """An unprofiled cell's shares and limit say "not profiled" (and the note says what that
    means); a missing ratio of a finished cell says "no fp32"."""
    s, sp, _ = gpu_tables
    s = s.copy()
    mask = (s["experiment"] == "resnet50") & (s["precision"].astype(str) == "amp-fp16")
    s.loc[mask, ["tensor_core_share", "matmul_share", "gpu_busy_share"]] = float("nan")
    speed, evidence = tables.experiment_tables(s, sp, "resnet50")
    cells = [c for t in (speed, evidence) for r in t.rows for c in r]
    assert "n/a" not in cells
    rows = [r for r in rows_of(evidence) if r["precision"] == "amp-fp16"]
    assert rows and all(r["Tensor Core share"] == "not profiled" == r["limited by"]
                        for r in rows)
    assert any("not profiled = not measurable without a kernel profile" in n
               for n in evidence.notes)
    no_fp32 = [r for r in rows_of(speed) if r[ratio_cells.JUDGED_HEAD] == "no fp32"]
    assert no_fp32 and all(r["memory × fp32"] == "no fp32" for r in no_fp32)


# --------------------------------------------------- no more digits than the interval carries
@pytest.mark.parametrize("value,low,high,fmt,text", [
    # narrower than the third digit: never a fourth, the half-width instead
    (4.320, 4.319, 4.321, numbers.times, "4.32× (95% CI ±0.023%)"),
    (4.31, 4.28, 4.34, numbers.times, "4.31× [4.28, 4.34]"),             # h 0.03: hundredths kept
    (3.56, 3.02, 3.67, numbers.times, "3.6× [3.0, 3.7]"),                # h 0.325: tenths
    (0.971, 0.770, 1.23, numbers.times, "0.97× [0.77, 1.23]"),           # h 0.23: leading 2, finer
    (7190, 7090, 7290, numbers.num, "7,190 [7,090, 7,290]"),             # h 100: leading 1, tens
    (13200, 9720, 16700, numbers.num, "13,000 [10,000, 17,000]"),
    (0.0019, -0.0125, 0.0162, numbers.points, "+0.2 [-1.2, +1.6]"),      # points: signed
    (-0.0009, -0.0049, 0.0031, numbers.points, "-0.1 [-0.5, +0.3]"),
    (0.9685, 0.9580, 0.9791, numbers.pct, "96.9% [95.8, 97.9]"),
])
def test_a_confidence_interval_sets_the_digits(value, low, high, fmt, text):
    assert numbers.with_interval(value, low, high, 3, fmt=fmt) == text
    assert numbers.overstated(text) == []


def test_without_a_confidence_interval_the_precision_is_fixed():
    assert numbers.with_interval(0.9685, 0.9580, 0.9791, 2,
                                 fmt=numbers.pct) == "96.85% (range 95.80–97.91)"
    assert numbers.with_interval(0.0019, -0.0125, 0.0162, 2, fmt=numbers.points) == \
        "+0.19 (range -1.25–+1.62)"
    assert numbers.with_interval(4.3204, None, None, 1, fmt=numbers.times) == "4.32× (1 run)"
    with pytest.raises(ValueError, match="num, times, pct, points, not .*lambda"):
        numbers.with_interval(1.0, 0.9, 1.1, 3, fmt=lambda v: f"{v:.4f}")


def test_the_rule_holds_for_any_interval():
    """Over a million-fold range of values and half-widths from 0.001% to 100%: no value with
    more than three significant digits, nothing the scanner flags, and each bound printed
    within a sixth of the half-width of its own (half a unit of the third digit where the
    interval is narrower than that)."""
    rng = np.random.default_rng(0)
    for _ in range(3000):
        value = 10 ** rng.uniform(-3, 6)
        below, above = value * 10 ** rng.uniform(-5, 0, size=2)
        low, high = value - below, value + above
        text = numbers.with_interval(value, low, high, 3)
        shown = re.fullmatch(r"(\S+) \[(\S+), (\S+)\]", text)
        assert numbers.overstated(text) == [] and numbers._digits(text.split()[0])[0] <= 3, text
        if shown:
            lo, hi = (float(x.replace(",", "")) for x in shown.groups()[1:])
            slack = max((high - low) / 12, 0.5 * 10.0 ** numbers._place(max(abs(low), abs(high))))
            assert abs(lo - low) <= slack * 1.000001 and abs(hi - high) <= slack * 1.000001, \
                (value, low, high, text)
        else:
            assert "(95% CI " in text, text


def test_the_scanner_finds_digits_no_rerun_carries():
    text = ("tf32 4.320× [4.319, 4.321] fp32; 1,023 [1,022, 1,025] samples/s; "
            "| 189,620 [189,600, 189,650] | and 2.320× [2.316, 2.324]; kept: 0.935× [0.934, "
            "0.938], 4.31× [4.28, 4.34], 7,190 [7,090, 7,290], 96.85% [95.80, 97.91], "
            "+0.19 [-1.25, +1.62], 2.36× [1.97, 2.81], 4.32× (95% CI ±0.023%)")
    assert numbers.overstated(text) == ["4.320× [4.319, 4.321]", "1,023 [1,022, 1,025]",
                                        "189,620 [189,600, 189,650]", "2.320× [2.316, 2.324]"]


def test_a_bar_label_prints_the_digits_of_its_interval():
    from tcbench.render import bars
    from tcbench.render import plot

    plot.style()
    fig, ax = plot.plt.subplots(figsize=(7, 3))
    rows = pd.DataFrame({"group": ["a", "b", "c"], "precision": ["tf32"] * 3,
                         "status": ["ok"] * 3, "repeats_ok": [3, 3, 2],
                         "ratio": [4.320, 3.56, 1.234], "ratio_low": [4.319, 3.02, 1.2],
                         "ratio_high": [4.321, 3.67, 1.3], "ratio_n": [3, 3, 2]})
    bars.grouped_bars(ax, rows, "ratio", interval="ratio", annotate=numbers.num)
    assert {t.get_text() for t in ax.texts} >= {"4.32", "3.6", "1.23"}     # n = 2: a range
    plot.plt.close(fig)


H200 = REPO / "results" / "nvidia-h200"


@pytest.mark.skipif(not (H200 / "summary.md").exists(), reason="no committed H200 result set")
def test_committed_reports_print_no_digits_a_rerun_does_not_carry():
    """The committed files as generated (results/nvidia-h200/summary.md, its tables/*.md and
    README.md, docs/results.md): one written before today's digits rule fails here, naming its
    intervals, until the set's reports and the README are regenerated (the report rules,
    scripts/readme.py)."""
    files = [H200 / "summary.md", *sorted((H200 / "tables").glob("*.md")), REPO / "README.md",
             REPO / "docs" / "results.md"]
    found = {p.relative_to(REPO).as_posix(): numbers.overstated(p.read_text()) for p in files}
    assert not any(found.values()), {k: v[:3] for k, v in found.items() if v}


def test_the_headline_ratio_is_the_one_the_verdict_judges(gpu_tables):
    """amp_recipe's tf32 read 3.34× per process in tables/ while the verdict judged its
    interleaved 3.56×: the table's headline ratio is the interleaved one with how it was
    judged, the per-process one beside it; a gated cell says it is not judged; speedup.md's
    claim is the verdict's, FP8 over amp-bf16."""
    s, sp, _ = gpu_tables
    amp = sp["experiment"] == "amp_recipe"
    tf32, fp16 = amp & (sp["precision"] == "tf32"), amp & (sp["precision"] == "amp-fp16")
    per_process = numbers.with_interval(*sp.loc[tf32, ["speedup", "speedup_low", "speedup_high",
                                                       "speedup_n"]].iloc[0], fmt=numbers.times)
    sp = sp.assign(interleaved_speedup=np.where(tf32, 3.56, np.nan),
                   interleaved_speedup_low=np.where(tf32, 3.50, np.nan),
                   interleaved_speedup_high=np.where(tf32, 3.62, np.nan),
                   interleaved_speedup_n=np.where(tf32, 3, np.nan),
                   interleaved_speedup_interval=np.where(tf32, stats.REPLICATED, None),
                   speedup_gate=np.where(fp16, stats.UNSTEADY, None))
    speed = tables.experiment_tables(s, sp, "amp_recipe")[0]
    rows = {r["precision"]: r for r in rows_of(speed)}
    assert rows["tf32"][ratio_cells.JUDGED_HEAD] == "3.56× [3.50, 3.62]"
    assert rows["tf32"][ratio_cells.HOW_HEAD] == "interleaved over fp32"
    assert rows["tf32"][ratio_cells.PER_PROCESS_HEAD] == per_process != \
        rows["tf32"][ratio_cells.JUDGED_HEAD]
    assert rows["amp-fp16"][ratio_cells.HOW_HEAD] == stats.UNSTEADY
    assert rows["amp-bf16"][ratio_cells.HOW_HEAD] == "repeats over fp32"
    assert ratio_cells.JUDGED_NOTE in speed.notes
    whole = {r["precision"]: r for r in rows_of(tables.speedup_table(sp))
             if r["experiment"] == "amp_recipe"}
    assert whole["tf32"][ratio_cells.JUDGED_HEAD] == "3.56× [3.50, 3.62]"
    assert whole["tf32"]["claim"] == "pays off"
    assert whole["amp-fp16"][ratio_cells.HOW_HEAD] == stats.UNSTEADY


def test_a_noisy_cell_is_marked_where_its_throughput_is_shown(gpu_tables):
    """mnist_seed's ±24–26% throughputs read as ordinary numbers in tables/: a cell whose
    interval is wider than ±3% of its mean says so, with a note; a precise one does not."""
    s, sp, _ = gpu_tables
    amp = (s["experiment"] == "amp_recipe") & (s["precision"] == "tf32")
    mean = s.loc[amp, "throughput_samples_per_s"]
    s = s.assign(throughput_samples_per_s_low=np.where(amp, mean * 0.8,
                                                       s["throughput_samples_per_s_low"]),
                 throughput_samples_per_s_high=np.where(amp, mean * 1.2,
                                                        s["throughput_samples_per_s_high"]),
                 throughput_samples_per_s_n=np.where(amp, 3, s["throughput_samples_per_s_n"]))
    speed = tables.experiment_tables(s, sp, "amp_recipe")[0]
    rows = {r["precision"]: r for r in rows_of(speed)}
    assert rows["tf32"]["samples/s"].endswith(", noisy (±20%)")
    precise = [p for p, r in rows.items() if p != "tf32" and "noisy" not in r["samples/s"]]
    assert precise and tables.NOISY_NOTE in speed.notes
    assert "noisy" in table._latex_cell(rows["tf32"]["samples/s"], "r")
