"""Cross-GPU comparison: the seed's T4 reference, matching cells across sets, reference rows
marked everywhere, bad reference files refused with the culprit named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import figure_text
import gpu_like
from tcbench import references
from tcbench.analysis import crossgpu
from tcbench.render import plot
from tcbench.reports import compare
from tcbench.reports import compare_figures
from test_figures import pdf_font_problems

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "config" / "reference" / "seed_t4.csv"


def test_seed_reference_has_the_seed_numbers():
    ref = references.load_reference(SEED)
    assert set(ref["kind"]) == {"reference"} and set(ref["label"]) == {"T4 (seed) ‡"}
    assert set(ref["device_name"]) == {"Tesla T4"} and set(ref["torch_version"].astype(str)) \
        == {"1.11"}
    assert set(ref["driver_version"]) == {"470.57.02"}
    assert set(ref["cuda_runtime_version"].astype(str)) == {"11.4"}
    assert ref["source_url"].str.contains("leolui2004/tensorcore").all()
    got = {(r.experiment, r.precision, r.batch_size): (r.total_time_s,
                                                       r.max_memory_allocated_bytes)
           for r in ref.itertuples()}
    assert got == {("amp_recipe", "fp32", 512): (7.020, 1350681600),
                   ("amp_recipe", "amp-fp16", 512): (2.524, 1577232384),
                   ("mnist_seed", "fp32", 512): (107.228, 417359872),
                   ("mnist_seed", "amp-fp16", 512): (104.948, 175422976),
                   ("mnist_seed", "amp-fp16", 1024): (100.529, 320654848)}


@pytest.fixture(scope="module")
def combined(tmp_path_factory):
    out = gpu_like.write(tmp_path_factory.mktemp("gpu-like"))
    df = references.combine([references.load_run(out / "metrics.csv")],
                            [references.load_reference(SEED)])
    return out, crossgpu.pool(df)


def cell(c, label, exp, precision, bs):
    r = c[(c["label"] == label) & (c["experiment"] == exp) & (c["precision"] == precision)
          & (c["batch_size"] == bs)]
    assert len(r) == 1
    return r.iloc[0]


def test_each_set_is_pooled_like_its_own_tables(combined):
    out, c = combined
    t4 = cell(c, "T4 (seed) ‡", "amp_recipe", "amp-fp16", 512)
    assert t4["seed_speedup"] == pytest.approx(7.020 / 2.524)      # the seed's total-time metric
    assert t4["memory_ratio"] == pytest.approx(1577232384 / 1350681600)
    assert pd.isna(t4["throughput_samples_per_s"])                  # the seed timed no steps
    # the seed did not run fp32 at 1024: no baseline, no invented speedup
    assert pd.isna(cell(c, "T4 (seed) ‡", "mnist_seed", "amp-fp16", 1024)["seed_speedup"])
    h200 = cell(c, "H200", "amp_recipe", "amp-fp16", 512)
    own = pd.read_csv(out / "speedup.csv").query("experiment == 'amp_recipe' and "
                                                 "precision == 'amp-fp16'").iloc[0]
    assert h200["speedup"] == pytest.approx(own["speedup"])          # one statistics core
    assert h200["speedup_low"] == pytest.approx(own["speedup_low"])
    assert h200["kind"] == "measured" and h200["repeats"] == 3


def test_what_a_device_cannot_run_is_unsupported_not_missing(combined):
    _, c = combined
    for p in ("tf32", "amp-bf16"):
        r = cell(c, "T4 (seed) ‡", "amp_recipe", p, 512)
        assert r["status"] == "unsupported" and "7.5" in r["status_reason"]
    assert not len(c[(c["label"] == "T4 (seed) ‡") & (c["precision"] == "fp32") &
                     (c["batch_size"] == 1024)])                    # fp32 runs on a T4: not run


def test_the_compared_metric_is_named(combined):
    _, c = combined
    assert crossgpu.metric_of(c[c["experiment"] == "amp_recipe"]) == "total_time_s"   # vs the seed
    assert crossgpu.metric_of(c[c["experiment"] == "resnet50"]) == "throughput_samples_per_s"
    t = compare.experiment_table(c, "amp_recipe")
    assert "total time (s)" in t.columns
    assert any(n.startswith("Compared on total time (the seed's metric)") for n in t.notes)


def test_references_are_marked_in_tables(combined):
    _, c = combined
    t = compare.experiment_table(c, "mnist_seed")
    sets = [r[0] for r in t.rows]
    assert sets.count("T4 (seed) ‡") == 5                         # 3 published + 2 unsupported
    assert any(n.startswith("‡ T4 (seed): published numbers") and "leolui2004" in n
               for n in t.notes)
    assert any("different data" in n and "T4 (seed) ‡ on mnist" in n for n in t.notes)


def test_a_cpu_sets_memory_is_not_measured_rather_than_missing_its_fp32(tmp_path):
    """A CPU has no torch.cuda memory statistics: its rows say so, where a missing fp32 cell
    would say "no fp32" (it ran)."""
    out = gpu_like.write(tmp_path)
    m = pd.read_csv(out / "metrics.csv")
    m = m[m["experiment"] == "amp_recipe"].assign(compute_capability=None,
                                                  max_memory_allocated_bytes=None)
    m.to_csv(out / "metrics.csv", index=False)
    c = crossgpu.pool(references.combine([references.load_run(out / "metrics.csv")], []))
    rows = [dict(zip(t.columns, r)) for t in [compare.experiment_table(c, "amp_recipe")]
            for r in t.rows if r[-1] == "ok"]
    assert rows and {(r["peak memory (MiB)"], r["memory × fp32"]) for r in rows} == \
        {("not measured on a CPU", "not measured on a CPU")}


def test_seed_table_row_by_row(combined):
    _, c = combined
    t = compare.seed_table(c)
    rows = [dict(zip(t.columns, r)) for r in t.rows]
    first = rows[0]
    assert first["experiment"] == "amp_recipe" and first["run"] == "fp32, bs 512"
    assert first["T4 (seed) ‡: time, memory"] == "7.02 s, 1,290 MiB"
    assert rows[1]["T4 (seed) ‡: time, memory"] == "2.52 s, 1,500 MiB"
    assert "[" in first["H200: time (s)"]                         # three repeats: a CI
    assert [r["T4 (seed) ‡: time, memory"] for r in rows].count("not run by the seed") == 5


def test_the_seed_table_says_which_cells_are_unsteady_or_noisy(combined):
    """compare/seed.md showed mnist_seed's ±24–26%, every-window-unsteady throughputs as
    ordinary numbers: each says so, with the note, as the verdict does."""
    from tcbench.reports import phrases

    _, c = combined
    here = (c["kind"] == "measured") & (c["experiment"] == "amp_recipe") & \
        (c["precision"] == "fp32") & (c["batch_size"] == 512)
    mean = c.loc[here, "throughput_samples_per_s"]
    c = c.assign(unsteady_n=np.where(here, 2, 0),
                 throughput_samples_per_s_low=np.where(here, mean * 0.75,
                                                       c["throughput_samples_per_s_low"]),
                 throughput_samples_per_s_high=np.where(here, mean * 1.25,
                                                        c["throughput_samples_per_s_high"]))
    t = compare.seed_table(c)
    rows = {r[1]: dict(zip(t.columns, r)) for r in t.rows if r[0] == "amp_recipe"}
    assert rows["fp32, bs 512"]["samples/s"].endswith("windows unsteady, noisy (±25%)")
    assert any("noisy" not in r["samples/s"] and "unsteady" not in r["samples/s"]
               for r in rows.values())
    assert phrases.NOISY_NOTE in t.notes


def test_figures_mark_references_and_gaps(combined):
    _, c = combined
    plot.style()
    fig = compare_figures.fig_metric(c, "mnist_seed", "speedup")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "unsupported" in texts and "no fp32" in texts
    hatched = [p for p in fig.axes[0].patches if p.get_hatch()]
    assert len(hatched) == 1          # the seed's amp-fp16 bar: fp32 over itself is not drawn
    assert "1.10× (pays-off threshold)" in [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("published" in t.get_text() for t in fig.legends[0].get_texts())
    assert "on H200" not in fig.axes[0].get_title() and "across GPUs" in fig.axes[0].get_title()
    for exp in ("amp_recipe", "mnist_seed", "resnet50"):
        for kind in compare_figures.KINDS:
            assert figure_text.problems(plot.figure_of(compare_figures.fig_metric(c, exp,
                                                                                  kind))) == [], \
                (exp, kind)
    # each kind is a panel of its own (a new kind must not fall through to another's)
    labels = {plot.figure_of(compare_figures.fig_metric(c, "amp_recipe", kind)).axes[0].get_ylabel()
              for kind in compare_figures.KINDS}
    assert len(labels) == len(compare_figures.KINDS), labels
    assert figure_text.problems(compare_figures.fig_overview(c)) == []
    plot.plt.close("all")


def test_wide_spans_get_a_log_axis(combined):
    _, c = combined
    plot.style()
    fig = compare_figures.fig_metric(c, "mnist_loaders", "speed")
    assert fig.axes[0].get_yscale() == "linear"
    fig = compare_figures.fig_metric(c, "amp_recipe",
                                     "speed")                 # 2.4 s to 7.0 s: linear
    assert fig.axes[0].get_yscale() == "linear"
    wide = c.copy()
    wide.loc[wide["label"] == "H200", "total_time_s"] /= 20
    assert compare_figures.fig_metric(wide, "amp_recipe", "speed").axes[0].get_yscale() == "log"
    plot.plt.close("all")


@pytest.mark.slow
def test_end_to_end_from_tables_alone(combined, tmp_path):
    out, _ = combined
    written = compare.compare([out / "metrics.csv"], [SEED], tmp_path)
    assert not (out / "records").exists()        # nothing but the tables was there to read
    csv = pd.read_csv(tmp_path / "comparison.csv")
    assert set(csv["kind"]) == {"measured", "reference"}
    assert (tmp_path / "figures" / "overview.svg").exists()
    for kind in compare_figures.KINDS:
        for ext in plot.FORMATS:
            assert tmp_path / "figures" / f"amp_recipe_{kind}.{ext}" in written
    assert pdf_font_problems(tmp_path / "figures" / "overview.pdf") == []
    md = (tmp_path / "comparison.md").read_text()
    assert "| T4 (seed) ‡ | bs 512 | amp-fp16 | 1/1 | 2.52 (1 run) | 2.78× (1 run) |" in md
    assert r"T4 (seed) \textsuperscript{\ddag}" in (tmp_path / "comparison.tex").read_text()
    assert (tmp_path / "seed.md").read_text().startswith("## The seed's runs, row by row")
    pooled = crossgpu.pool(references.combine([references.load_run(out / "metrics.csv")],
                                              [references.load_reference(SEED)]))
    assert compare_figures.overview_experiments(pooled) == ["amp_recipe", "mnist_seed"]


def test_unknown_experiment_is_an_error(combined, tmp_path):
    out, _ = combined
    with pytest.raises(references.CompareError, match="nope.*in no compared set"):
        compare.compare([out / "metrics.csv"], [SEED], tmp_path, ["amp_recipe", "nope"])
    assert compare.main(["--metrics", str(tmp_path / "missing.csv"), "--out", str(tmp_path)]) == 2


@pytest.mark.parametrize("edit,message", [
    (lambda d: d.drop(columns=["source"]), "missing column.*source"),
    (lambda d: d.assign(extra=1), "unknown column.*extra"),
    (lambda d: d.assign(precision=["fp32", "fp8", "fp32", "fp32", "fp32"]),
     r"data row 2 \(amp_recipe, fp8, batch 512\): precision='fp8'"),
    (lambda d: d.assign(status=["ok", "ok", "ok", "crashed", "ok"]), r"data row 4 .*: status='crashed'"),
    (lambda d: d.assign(batch_size=[512, 512, 0, 512, 1024]), r"data row 3 .*: batch_size=0"),
    (lambda d: d.assign(total_time_s=[7.0, -1, 1, 1, 1]), r"data row 2 .*: total_time_s=-1"),
])
def test_bad_reference_names_the_culprit(tmp_path, edit, message):
    df = pd.read_csv(SEED, comment="#")
    bad = tmp_path / "bad.csv"
    edit(df).to_csv(bad, index=False)
    with pytest.raises(references.CompareError, match=message) as exc:
        references.load_reference(bad)
    assert str(bad) in str(exc.value)


def test_a_table_of_one_set_is_not_across_gpus_and_says_why_a_ratio_is_missing(combined):
    """resnet50 is in one set only (the seed did not run it); mnist_seed at batch 1024 has no
    fp32 cell in the seed's set: its ratios say so, not "n/a"."""
    _, c = combined
    assert compare.experiment_table(c, "resnet50").title == "resnet50: on H200"
    t = compare.experiment_table(c, "mnist_seed")
    assert t.title == "mnist_seed: across GPUs"
    rows = [dict(zip(t.columns, r)) for r in t.rows]
    at_1024 = [r for r in rows if r["setting"] == "bs 1024" and r["precision"] == "amp-fp16"
               and r["set"].startswith("T4")]
    assert len(at_1024) == 1 and all(r["× fp32"] == "no fp32" and r["memory × fp32"] == "no fp32"
                           for r in at_1024)
    assert not any("n/a" in cell for r in t.rows for cell in r)


def test_a_speedup_in_the_seeds_total_time_says_so(combined):
    """amp_recipe is compared on the seed's total time (warm-up included), not tcbench's steady
    throughput: its speedup panels say which, resnet50's (throughput only) say the other."""
    _, c = combined
    plot.style()
    assert "total time" in compare_figures.fig_metric(c, "amp_recipe",
                                                      "speedup").axes[0].get_title()
    assert "throughput" in compare_figures.fig_metric(c, "resnet50", "speedup").axes[0].get_title()
    over = compare_figures.fig_overview(c)
    titles = [ax.get_title() for ax in over.axes if "speedup" in ax.get_title()]
    assert titles and all("(total time)" in t for t in titles
                          if t.startswith(("amp_recipe", "mnist_seed")))
    assert figure_text.problems(over) == []
    plot.plt.close("all")
