"""Summary tables: numbers rounded the same way in Markdown, LaTeX (booktabs) and HTML; cells
without a number say why; columns the device does not measure are named, not silently gone."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import gpu_like
from tcbench import resultset as RS
from tcbench import stats
from tcbench.render import numbers as N
from tcbench.render import table as TB
from tcbench.reports import tables as T


@pytest.mark.parametrize("value,text", [(54372.25, "54,400"), (7.020, "7.02"), (107.228, "107"),
                                        (0.02195, "0.0220"), (0.99996, "1.00"), (9.996, "10.0"),
                                        (None, "–"), (float("nan"), "–")])
def test_significant_digits(value, text):
    assert N.num(value) == text


def test_units():
    assert N.times(2.7812) == "2.78×" and N.percent(0.934) == "93%"
    assert N.memory(417359872) == "398 MiB" and N.memory(12 * 2**30) == "12.0 GiB"
    assert N.memory_unit(3 * 2**30) == ("MiB", 2**20) and N.memory_unit(5 * 2**30)[0] == "GiB"
    assert N.interval(1.0, 2.0) == "[1.00, 2.00]"


def test_an_interval_says_what_it_is():
    assert N.with_interval(5730, 5700, 5760, 3) == "5,730 [5,700, 5,760]"
    assert N.with_interval(5730, 5700, 5760, 2) == "5,730 (range 5,700–5,760)"
    assert N.with_interval(5730, None, None, 1) == "5,730 (1 run)"
    assert N.with_interval(2.79, 2.75, 2.83, 3, fmt=N.times) == "2.79× [2.75, 2.83]"
    assert N.with_interval(None, None, None, 0) == "–"
    assert N.with_interval(6.2, 5.8, 7.3, 3, kind=stats.SPREAD) == "6.2 (5.80–7.30)".replace(
        "6.2", N.num(6.2))


def test_an_interval_narrower_than_its_digits_says_so():
    """[162,000, 162,000] says nothing: the bounds get the digits that tell them apart, then
    the half-width, or that the runs agree exactly."""
    assert N.with_interval(161993, 161950, 162040, 3) == "161,990 [161,950, 162,040]"
    assert N.with_interval(1063.6, 1063.2, 1064.0, 3) == "1,064 [1,063, 1,064]"
    assert N.with_interval(1.0497, 1.0451, 1.0544, 3, fmt=N.times) == "1.050× [1.045, 1.054]"
    assert N.with_interval(18.71, 18.69, 18.74, 3, kind=stats.SPREAD) == "18.71 (18.69–18.74)"
    assert N.with_interval(162000, 161999.5, 162000.4, 3) == "162,000 (95% CI ±0.00028%)"
    assert N.with_interval(162000, 162000, 162000, 3) == \
        "162,000 (95% CI of zero width: the 3 runs agree exactly)"
    assert N.with_interval(162000, 150000, 170000, 3) == "162,000 [150,000, 170,000]"


def test_latex_writes_signs_not_escaped_operators():
    tex = TB.latex_escape("given only where n >= 3, or n <= 2")
    assert r"\textgreater{}=" not in tex and r"$\geq$ 3" in tex and r"$\leq$ 2" in tex


def test_a_note_shared_by_tables_is_given_once_and_referred_to():
    note = "a long note every table of a set shares"
    tables = [TB.Table(f"t{i}", ["a"], [["1"]], notes=[note, f"own {i}"], label=f"tab:{i}")
              for i in range(3)]
    tex = TB.to_latex_all(tables)
    assert tex.count(note) == 1 and all(f"own {i}" in tex for i in range(3))
    assert tex.count(r"as in Table~\ref{tab:0}") == 2


def test_latex_escapes_and_booktabs():
    t = TB.Table("amp_recipe: 50% & more", ["setting", "speedup"], [["bs 512", "2.78×"],
                                                                   ["x_y", "–"]], notes=["†: a"])
    tex = TB.to_latex(t)
    for part in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lr}",
                 r"amp\_recipe: 50\% \& more", r"2.78$\times$", r"x\_y & -- \\",
                 r"\textsuperscript{\dag}: a"):
        assert part in tex, part
    assert TB.to_latex(t, float_env=False).startswith(r"\begin{tabular}")


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="2 cells, expected 3"):
        TB.Table("t", ["a", "b", "c"], [["1", "2"]])


@pytest.fixture(scope="module")
def gpu_tables(tmp_path_factory):
    out = gpu_like.write(tmp_path_factory.mktemp("gpu-like"))
    return pd.read_csv(out / "summary.csv"), pd.read_csv(out / "speedup.csv"), out


def rows_of(t):
    return [dict(zip(t.columns, r)) for r in t.rows]


def test_experiment_tables_on_a_gpu_set(gpu_tables):
    s, sp, _ = gpu_tables
    speed, evidence = T.experiment_tables(s, sp, "resnet50")
    assert speed.columns[:6] == ["setting", "precision", "n", "samples/s", "× fp32",
                                 T.WARMUP_HEAD]
    assert "peak memory (GiB)" in speed.columns and T.WARMUP_MISS_HEAD not in speed.columns
    rows = {(r["setting"], r["precision"]): r for r in rows_of(speed)}
    oom = rows[("bs 256", "fp32")]
    assert oom["samples/s"] == "–" and oom["n"] == "0/3 oom"
    assert rows[("bs 256", "amp-fp16")]["× fp32"] == "no fp32"
    assert rows[("bs 64", "fp32")]["× fp32"] == "1×"
    assert re.fullmatch(r"3\.\d\d× \[\d\.\d\d, \d\.\d\d\]", rows[("bs 64", "amp-fp16")]["× fp32"])
    # warm-up: a median and its range, never a t interval's brackets
    assert re.fullmatch(r"[\d.]+ \([\d.]+–[\d.]+\)", rows[("bs 64", "amp-fp16")][T.WARMUP_HEAD])
    assert any("median (min–max)" in n for n in speed.notes)
    assert any("CUDA out of memory" in n for n in speed.notes)
    assert any("95% confidence interval" in n for n in speed.notes)
    assert "limited by" in evidence.columns
    limits = {r["precision"]: r["limited by"] for r in rows_of(evidence) if r["setting"] == "bs 64"}
    assert limits == {p: "non-matrix kernels" for p in ("fp32", "tf32", "amp-fp16", "amp-bf16")}
    md = TB.to_markdown(speed)
    assert len(re.findall(r"^\|", md, re.M)) == 2 + len(speed.rows)


def test_no_two_rows_look_alike(gpu_tables):
    s, sp, _ = gpu_tables
    for exp in s["experiment"].unique():
        t = T.experiment_tables(s, sp, exp)[0]
        keys = [(r[0], r[1]) for r in t.rows]
        assert len(keys) == len(set(keys)), exp
    t = T.speedup_table(sp)
    keys = [(r[0], r[1], r[2]) for r in t.rows]
    assert len(keys) == len(set(keys))
    fast = [r[1] for r in t.rows if r[0] == "resnet50_fast"]
    assert "bs 256, channels_last, compile default" in fast


def test_single_runs_and_ranges_are_marked(gpu_tables):
    s, sp, _ = gpu_tables
    seed = rows_of(T.experiment_tables(s, sp, "mnist_seed")[0])
    assert all(r["samples/s"].endswith("(1 run)") for r in seed)
    loaders = rows_of(T.experiment_tables(s, sp, "mnist_loaders")[0])
    assert all("(range " in r["samples/s"] for r in loaders)
    assert {r["setting"] for r in loaders} == {"bs 512, gpu-resident", "bs 512, synthetic"}


def test_claims_follow_the_interval(gpu_tables):
    _, sp, _ = gpu_tables
    claims = {(r["experiment"], r["precision"]): r["claim"] for r in rows_of(T.speedup_table(sp))
              if r["setting"] in ("bs 64", "bs 512", "bs 512, gpu-resident")}
    assert claims[("resnet50", "amp-fp16")] == "pays off"
    # [0.989, 1.04]: straddles 1 and reaches past the 3% margin, so neither side is shown
    assert claims[("digits", "amp-bf16")] == "inconclusive"
    assert claims[("mnist_seed", "amp-fp16")] == "n < 3"
    assert claims[("mnist_loaders", "amp-fp16")] == "n < 3"


def test_accuracy_difference_is_paired_by_seed(gpu_tables):
    s, sp, _ = gpu_tables
    t = T.experiment_tables(s, sp, "digits")[1]
    assert t.title.endswith("accuracy against fp32")
    rows = {r["precision"]: r for r in rows_of(t)}
    assert rows["fp32"]["Δ vs fp32 (points)"] == ""
    assert re.fullmatch(r"[+-]\d\.\d\d \[[+-]\d\.\d\d, [+-]\d\.\d\d\]",
                        rows["amp-bf16"]["Δ vs fp32 (points)"])
    assert rows["amp-fp16"]["n"] == "0/5 diverged"


def test_best_table_names_baseline_and_gain(gpu_tables):
    *_, out = gpu_tables
    b = rows_of(T.best_table(pd.read_csv(out / "best.csv")))
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
        assert T.main([*csvs, "--experiment", exp,
                       *(x for ext in ("md", "tex", "html")
                         for x in (f"--{ext}", str(tmp_path / "t" / f"{exp}.{ext}")))]) == 0
    assert T.main([*csvs, "--combined-md", str(tmp_path / "all.md"),
                   "--combined-tex", str(tmp_path / "all.tex")]) == 0
    names = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert names == ["digits.html", "digits.md", "digits.tex", "resnet50.html", "resnet50.md",
                     "resnet50.tex"]
    tex = (tmp_path / "all.tex").read_text()
    # every experiment of the set: speed, evidence, and accuracy where measured
    s, sp = pd.read_csv(out / "summary.csv"), pd.read_csv(out / "speedup.csv")
    n = sum(len(T.experiment_tables(s, sp, e)) for e in s["experiment"].unique())
    assert n > 2 * s["experiment"].nunique()
    assert tex.count(r"\begin{table}") == n and tex.count(r"\bottomrule") == n
    assert T.main([*csvs, "--experiment", "x", "--md", str(tmp_path / "x.md")]) == 2
    assert not (tmp_path / "x.md").exists()
    assert T.main([*csvs, "--md", str(tmp_path / "x.md")]) == 2      # which experiment?


def test_an_fp8_experiments_evidence_table_says_how_its_mfu_counts():
    from test_verdict import lm_rows
    from tcbench.analysis.speedup import speedup
    from tcbench.analysis.summarise import summarise

    m = RS.order(pd.DataFrame([*lm_rows("amp-bf16", [18.0, 18.2, 17.8]),
                               *lm_rows("fp8-tensorwise", [16.0, 16.1, 15.9])]))
    s = summarise(m).assign(tensor_core_share=0.5)
    notes = T.evidence_table(T.Experiment(s, speedup(m, s), "tf_gpt2")).notes
    assert any(n.startswith("MFU of the FP8 cells: an FP8 cell's FLOPs are those of the same "
                            "training step before the conversion") for n in notes)
    fp32 = m.assign(precision="fp32", experiment="plain")
    s = summarise(RS.order(fp32)).assign(tensor_core_share=0.5)
    assert not any("FP8" in n for n in T.evidence_table(
        T.Experiment(s, speedup(RS.order(fp32), s), "plain")).notes)


def test_a_finished_cell_without_a_number_says_why_never_n_a(gpu_tables):
    """An unprofiled cell's shares and limit say "not profiled" (and the note says what that
    means); a missing ratio of a finished cell says "no fp32"."""
    s, sp, _ = gpu_tables
    s = s.copy()
    mask = (s["experiment"] == "resnet50") & (s["precision"].astype(str) == "amp-fp16")
    s.loc[mask, ["tensor_core_share", "matmul_share", "gpu_busy_share"]] = float("nan")
    speed, evidence = T.experiment_tables(s, sp, "resnet50")
    cells = [c for t in (speed, evidence) for r in t.rows for c in r]
    assert "n/a" not in cells
    rows = [r for r in rows_of(evidence) if r["precision"] == "amp-fp16"]
    assert rows and all(r["Tensor Core share"] == "not profiled" == r["limited by"]
                        for r in rows)
    assert any("not profiled = not measurable without a kernel profile" in n
               for n in evidence.notes)
    no_fp32 = [r for r in rows_of(speed) if r["× fp32"] == "no fp32"]
    assert no_fp32 and all(r["memory × fp32"] == "no fp32" for r in no_fp32)
