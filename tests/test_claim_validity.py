"""Claims a reviewer signs, on planted result sets: FP8 judged against amp-bf16 only (never
borrowing fp32's baseline), slowdowns named at n = 2 with the record's reason, an equivalence
inside ±3% said with its direction, and no claim where the repeats cannot decide it (two modes,
unsteady windows, compiled records made before compilations inside the timed window were
counted whose fields show one there, a host-bound cell without its interleaved ratio); a
host-bound cell decided by an interleaved comparison where one ran (interleaved.csv, planted as
the job side writes it), the cure (CUDA graphs) measured beside it, and how much the host's
speed varied."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tcbench import resultset
from tcbench import stats
from tcbench.analysis.noisy import noisy_cells
from tcbench.analysis.speedup import speedup
from tcbench.analysis.summarise import summarise
from tcbench.reports import verdict

from test_verdict import answers, cells, repeats, said, with_

KEYS = ("run", "experiment", "workload", "data", "batch_size", "model", "loader",
        "memory_format", "compile", "cuda_graphs", "cudnn_benchmark")


def build(rows, interleaved=None, via="verdict"):
    """The verdict of ``rows``; ``interleaved`` (interleaved.csv's rows) given to the verdict,
    or to speedup.csv as aggregate would (``via``)."""
    m = resultset.order(pd.DataFrame(rows))
    s = summarise(m)
    il = None if interleaved is None else pd.DataFrame(interleaved)
    sp = speedup(m, s, il if via == "speedup" else None)
    return verdict.build(s, sp, m, interleaved=il if via == "verdict" else None)


def row_of(v, exp):
    return answers(v)[exp]


# ---------------------------------------------------------- FP8 against amp-bf16, and only it
def fp8_mlp(bf16=(2.195e6, 2.201e6)):
    """fp8_mlp as committed: FP8 at 1.25-1.30x amp-bf16, 14.5x fp32; one bf16 repeat short."""
    kw = dict(bs=32768, busy=0.97)
    return [*with_(repeats("fp8_mlp", "fp32", [189e3, 189.5e3, 190e3], **kw), compile="default"),
            *with_(repeats("fp8_mlp", "amp-bf16", list(bf16), **kw), compile="default"),
            *with_(repeats("fp8_mlp", "fp8-rowwise", [2.72e6, 2.76e6, 2.79e6], **kw),
                   compile="default")]


def test_fp8_with_two_bf16_repeats_is_not_judged_and_borrows_nothing_from_fp32():
    v = build(fp8_mlp())
    row = row_of(v, "fp8_mlp")
    assert row["× its baseline [95% CI]"] == "1.25× (range 1.24–1.27) amp-bf16"
    assert row["claim"] == "n < 3"
    line = " ".join(v.bottom_line)
    assert "pays off" not in line and "14." not in line
    assert "cannot be judged from fewer than three repeats in fp8_mlp (fp8-rowwise, 1.25× " \
           "amp-bf16)" in line
    text = said(v, "fp8_mlp")
    assert "pays off" not in text and "fp32's throughput" not in text
    # with a third bf16 repeat it is judged, against bf16
    judged = row_of(build(fp8_mlp((2.195e6, 2.201e6, 2.198e6))), "fp8_mlp")
    assert judged["claim"] == "pays off" and judged["× its baseline [95% CI]"].endswith("amp-bf16")


def fp8_digits():
    """fp8_digits as committed: two fp32 runs, FP8 slower in every run, no amp-bf16 at all;
    only fc1 converted, no FP8 GEMM among the kernels its (older) record lists."""
    fp8 = dict(fp8_converted="fc1", fp8_kept="fc2", fp8_gemm_share=0.0,
               other_tensor_core_share=0.0, fp8_scaling_share=0.0,
               kernel_classes_from="top kernels", kernel_classes_coverage=0.39)
    return [*repeats("fp8_digits", "fp32", [29600, 31700], bs=64, busy=0.28, tc=0.0, mm=0.4),
            *with_(repeats("fp8_digits", "fp8-tensorwise", [12900, 13300, 14600], bs=64,
                           busy=0.13, tc=0.14, mm=0.15), **fp8)]


def test_every_run_slower_is_named_at_two_runs_with_the_records_reason():
    v = build(fp8_digits())
    row = row_of(v, "fp8_digits")
    assert row["× its baseline [95% CI]"] == "– (no amp-bf16 run at this setting)"
    assert row["claim"] == "not judged: no amp-bf16 run; against fp32: every run slower: " \
        "0.407–0.493×"
    text = said(v, "fp8_digits")
    assert "fp8-tensorwise at batch size 64 is not judged: no amp-bf16 run shares its setting" \
        in text
    assert "Slower than its baseline: fp8-tensorwise at batch size 64, every run slower: " \
           "0.407–0.493× against fp32 (only fc1 converted to FP8 (fc2 kept in bf16); compile " \
           "off, so its casts and scales run as separate kernels; no FP8 GEMM among the " \
           "kernels its record lists" in text, text
    assert "Slower than its baseline: fp8_digits (fp8-tensorwise at bs 64 against fp32)" in \
        " ".join(v.bottom_line)


def test_a_slow_transformer_counts_its_converted_layers_instead_of_listing_them():
    names = " ".join(f"hf.transformer.h.{i}.{m}" for i in range(12)
                     for m in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"))
    fp8 = dict(fp8_converted=names, fp8_kept="hf.lm_head")
    rows = [*with_(repeats("tf_gpt2", "amp-bf16", [293, 292, 294], bs=16, busy=0.98),
                   compile="default"),
            *with_(repeats("tf_gpt2", "fp8-tensorwise", [266, 267, 266], bs=16, busy=0.98),
                   compile="default", **fp8),
            *with_(repeats("tf_gpt2", "fp8-rowwise", [239, 238, 239], bs=16, busy=0.98),
                   compile="default", **fp8)]
    text = said(build(rows), "tf_gpt2")
    assert "(48 Linear layers converted to FP8 (hf.lm_head kept in bf16))" in text, text
    assert "h.0.attn" not in text and "only 48" not in text


def test_every_run_slower_needs_every_pair_and_two_runs_a_side():
    rows = [*repeats("s", "fp32", [1000, 1010], busy=0.95),
            *repeats("s", "tf32", [800, 820], busy=0.95),
            *repeats("o", "fp32", [1000, 1010], busy=0.95),
            *repeats("o", "tf32", [800, 1005], busy=0.95),     # one pair is not slower
            *repeats("one", "fp32", [1000], busy=0.95),
            *repeats("one", "tf32", [800], busy=0.95)]
    v = build(rows)
    assert row_of(v, "s")["claim"] == "every run slower: 0.792–0.820×"
    assert row_of(v, "o")["claim"] == "n < 3"
    assert row_of(v, "one")["claim"] == "n < 3"


# ------------------------------------------------------------------------- equivalence
def test_a_ratio_inside_the_margin_is_equivalent_with_its_direction():
    """A user's CNN: amp-bf16 0.976x [0.971, 0.981] fp32 is inside ±3%: equivalent, slower
    by 2.4%, never "significantly slower"."""
    rows = [*repeats("pets", "fp32", [1000, 1000.5, 999.5, 1000.2], busy=0.95),
            *repeats("pets", "amp-bf16", [976, 973.5, 978.5, 976.1], busy=0.95)]
    v = build(rows)
    row = row_of(v, "pets")
    assert row["× its baseline [95% CI]"].startswith("0.976× [0.97")
    assert row["claim"] == "equivalent within ±3%, 2.4% slower"
    assert "Slower than its baseline" not in said(v, "pets")
    assert "it is equivalent within ±3%" in said(v, "pets") and "2.4% slower" in said(v, "pets")


# ------------------------------------------------------------------------------ two modes
TWO_GROUPS = [354e3, 354e3, 356e3, 547e3, 565e3, 566e3, 591e3]


def bimodal_rows():
    return [*repeats("recipe", "fp32", [162.0e3, 162.1e3, 162.3e3], busy=0.97),
            *repeats("recipe", "tf32", TWO_GROUPS, busy=0.95)]


def test_a_cell_in_two_modes_reports_both_and_claims_nothing():
    rows = bimodal_rows()
    s = summarise(resultset.order(pd.DataFrame(rows)))
    tf32 = s[s["precision"].astype(str) == "tf32"].iloc[0]
    assert stats.flag(tf32["bimodal"]) and (tf32["slow_mode_n"], tf32["fast_mode_n"]) == (3, 4)
    assert pd.isna(tf32["throughput_samples_per_s_low"])            # no pooled interval
    assert tf32["throughput_samples_per_s_interval"] == stats.BIMODAL
    v = build(rows)
    row = row_of(v, "recipe")
    assert row["× its baseline [95% CI]"] == "two modes: 2.19× (n = 3) and 3.50× (n = 4) fp32"
    assert row["claim"] == "not judged: two modes"
    assert "tf32 in two modes (3 + 4 runs)" in row["how it was decided"]
    assert cells(v, "recipe")[("bs 512", "tf32")]["samples/s"] == \
        "two modes: 355,000 (n = 3) and 567,000 (n = 4)"
    assert "pays off" not in said(v, "recipe") and "pays off" not in " ".join(v.bottom_line)
    reason = noisy_cells(s).set_index("precision").loc["tf32", "reason"]
    assert reason.startswith("two modes, 354,667 (n = 3) and 567,250 (n = 4)")


def test_one_wide_mode_is_not_two():
    rows = [*repeats("recipe", "fp32", [162.0e3, 162.1e3, 162.3e3], busy=0.97),
            *repeats("recipe", "tf32", [400e3, 430e3, 455e3, 480e3, 510e3, 540e3, 560e3],
                     busy=0.95)]
    row = row_of(build(rows), "recipe")
    assert row["claim"] == "pays off" and "two modes" not in row["× its baseline [95% CI]"]


# --------------------------------------------------------------------- unsteady windows
def test_an_unsteady_window_withholds_the_claim_and_is_marked_where_shown():
    rows = [*with_(repeats("u", "fp32", [1000, 1002, 998], busy=0.95), steady=True),
            *with_(repeats("u", "amp-bf16", [2000, 2004, 1996], busy=0.95), steady=True)]
    rows[-1]["steady"] = False
    v = build(rows)
    assert row_of(v, "u")["claim"] == "not judged: unsteady windows"
    assert "amp-bf16: 1 of 3 windows unsteady" in row_of(v, "u")["how it was decided"]
    assert cells(v, "u")[("bs 512", "amp-bf16")]["samples/s"].endswith(
        ", 1 of 3 windows unsteady")
    # a set whose records predate the check says nothing of it
    old = build([*repeats("u", "fp32", [1000, 1002, 998], busy=0.95),
                 *repeats("u", "amp-bf16", [2000, 2004, 1996], busy=0.95)])
    assert row_of(old, "u")["claim"] == "pays off"


def test_an_unsteady_cell_whose_interval_is_inconclusive_is_not_judged_wherever_shown():
    """mnist_seed as committed: amp-fp16 0.97× [0.77, 1.23] fp32, every window of both sides
    unsteady. The verdict (answer, bottom line, first screen, section, overview figure) called
    it "inconclusive" while speedup.csv's gate, speedup.md's "judged by" and the speedup figure
    said it was not judged: every output now names the gate, as the printed rule says."""
    import matplotlib.colors

    from tcbench.render import bars, plot
    from tcbench.reports import figure_cells, overview_figure, speed_figures, tables

    rows = [*with_(repeats("seed", "fp32", [12500, 15500, 14000], busy=0.95), steady=False),
            *with_(repeats("seed", "amp-fp16", [11800, 15300, 13600], busy=0.95), steady=False)]
    m = resultset.order(pd.DataFrame(rows))
    s = summarise(m)
    sp = speedup(m, s)
    e = stats.from_row(sp[sp["precision"] == "amp-fp16"].iloc[0], "speedup")
    assert stats.claim(e) == stats.INCONCLUSIVE                  # what the interval alone says
    v = verdict.build(s, sp, m)
    assert row_of(v, "seed")["claim"] == stats.UNSTEADY
    assert "is not judged in seed (unsteady windows)" in " ".join(v.bottom_line)
    assert "is not judged in 1 of the 1 answers below (seed)" in v.headline
    assert "it is not judged: a timed window of its repeats was not steady" in said(v, "seed")
    assert "inconclusive" not in " ".join([*v.bottom_line, said(v, "seed")])
    assert [r.group for r in overview_figure.rows(v.answers)] == ["not judged"]
    table = tables.speedup_table(sp)
    fp16 = next(dict(zip(table.columns, r)) for r in table.rows if r[2] == "amp-fp16")
    assert fp16["claim"] == fp16["judged by"] == stats.UNSTEADY
    plot.style()
    fig = speed_figures.fig_speedup(figure_cells.experiment_rows(sp), "seed")
    hatched = [p for p in fig.axes[0].patches if p.get_hatch() == bars.UNJUDGED_HATCH]
    assert [matplotlib.colors.to_hex(p.get_facecolor()) for p in hatched] == \
        [matplotlib.colors.to_hex(bars.washed(plot.PALETTE["amp-fp16"]))]
    assert "not judged (unsteady windows)" in [x.get_text() for x in fig.legends[0].get_texts()]
    plot.plt.close("all")


# ---------------------------------------------------- host-bound: interleaved, and the cure
def recipe(graphs=False):
    """The recipe on a drifting host: fp32 GPU-bound; tf32 and amp-bf16 host-bound and wide.
    With ``graphs``, the same setting with CUDA graphs on."""
    rows = [*repeats("amp_recipe", "fp32", [162.0e3, 162.1e3, 162.3e3], busy=0.97, tc=0.0,
                     mm=0.9),
            *repeats("amp_recipe", "tf32", [400e3, 520e3, 450e3], busy=0.84, tc=0.68, mm=0.68),
            *repeats("amp_recipe", "amp-bf16", [300e3, 420e3, 390e3], busy=0.5, tc=0.3, mm=0.3)]
    if graphs:
        for p, thr in (("fp32", [162e3, 162.2e3, 161.9e3]), ("tf32", [606e3, 605e3, 607e3]),
                       ("amp-bf16", [711e3, 712e3, 710e3])):
            rows += with_(repeats("amp_recipe", p, thr, busy=0.98, tc=0.7, mm=0.7),
                          cuda_graphs="on")
    return rows


def interleaved_rows():
    """interleaved.csv as the job side writes it (contract): one row per arm and baseline."""
    base = dict(run="synthetic", experiment="amp_recipe", workload="mnist_cnn",
                data="synthetic", batch_size=512, model="mnist_cnn", loader="synthetic",
                memory_format="contiguous", compile="off", cuda_graphs="off",
                cudnn_benchmark="off", ratio_n=40, ratio_interval=stats.PAIRED, rounds=40,
                training_cpu=9, status="ok", throughput_cv=0.1, record="x.json")
    out = []
    for arm, b, r, lo, hi in (("tf32", "fp32", 2.57, 2.53, 2.67),
                              ("amp-bf16", "fp32", 2.13, 2.08, 2.17),
                              ("amp-bf16", "tf32", 0.824, 0.804, 0.844)):
        out.append(base | {"precision": arm, "baseline": b, "ratio": r, "ratio_low": lo,
                           "ratio_high": hi, "throughput_median": 1.0,
                           "baseline_throughput_median": 1.0})
    return out


def test_a_host_bound_cell_without_an_interleaved_ratio_is_not_judged():
    v = build(recipe())
    row = row_of(v, "amp_recipe")
    assert row["claim"] == "not judged: host-bound, no interleaved comparison"
    assert row["what limits it"].startswith("the host (GPU busy ")
    assert "pays off" not in " ".join(v.bottom_line)
    assert "2 not judged (host-bound, no interleaved comparison)" in " ".join(v.intro)


@pytest.mark.parametrize("via", ["verdict", "speedup"])
def test_a_host_bound_cell_is_decided_by_its_interleaved_ratio(via):
    v = build(recipe(), interleaved_rows(), via=via)
    row = row_of(v, "amp_recipe")
    assert row["best mode and setting"] == "tf32, bs 512"
    assert row["× its baseline [95% CI]"] == "2.57× [2.53, 2.67]¶ fp32"
    assert (row["claim"], row["how it was decided"]) == \
        ("pays off", "interleaved in one process, 40 rounds: its interval cannot see "
         "differences between processes")
    bf16 = cells(v, "amp_recipe")[("bs 512", "amp-bf16")]
    assert bf16["× its baseline"] == "2.13× [2.08, 2.17]¶ fp32"
    # the per-process repeats still give the absolute throughput with its spread
    assert bf16["samples/s"].startswith("370,000 [")
    intro = " ".join(v.intro)
    assert "2 by an interleaved comparison in one process" in intro
    assert "(interleaved in one process, 40 rounds: its interval cannot see differences " \
        "between processes)" in said(v, "amp_recipe")
    assert any("interleaved" in n for n in v.answer.notes)


def test_a_ratio_across_processes_says_its_level_everywhere_it_is_decided():
    """interleaved.csv from three processes a setting (a t interval across them): the answer,
    the finding and the verdict's count of decisions name the processes and their rounds."""
    rows = [r | {"processes": 3, "rounds": 20, "ratio_n": 3,
                 "ratio_interval": stats.REPLICATED} for r in interleaved_rows()]
    v = build(recipe(), rows)
    row = row_of(v, "amp_recipe")
    assert (row["claim"], row["how it was decided"]) == \
        ("pays off", "interleaved, 3 processes × 20 rounds")
    assert row["× its baseline [95% CI]"] == "2.57× [2.53, 2.67] fp32"
    assert "2 by interleaved comparisons across independent processes" in " ".join(v.intro)
    assert "in one process" not in " ".join(v.intro)
    assert "(interleaved, 3 processes × 20 rounds)" in said(v, "amp_recipe")


def test_the_cure_is_measured_beside_a_host_bound_cell():
    v = build(recipe(graphs=True))
    limits = cells(v, "amp_recipe")[("bs 512, graphs off", "amp-bf16")]["limited by"]
    assert limits.startswith("the host (GPU busy 50%); with CUDA graphs amp-bf16 reaches 4.39× [")
    assert "fp32 and 1.17× tf32 (ratio of means) (1.92× its eager throughput)" in limits
    # the graphs cells themselves are GPU-bound and judged as any other
    on = cells(v, "amp_recipe")[("bs 512, graphs on", "amp-bf16")]
    assert on["claim"] == "pays off"


def test_the_host_speed_over_the_study_is_stated():
    rows = recipe()
    for i, r in enumerate(rows):
        r |= {"host_probe_ops_per_s": 173e3 + i * (350e3 - 173e3) / (len(rows) - 1),
              "host_probe_change": 0.05 if i == 0 else -0.01}
    intro = " ".join(build(rows).intro)
    assert "ranged 173,000–350,000 ops/s over the study's 9 jobs (CV " in intro
    assert "within one job it changed by up to 5%" in intro
    assert "was not probed" in " ".join(build(recipe()).intro)


def test_tables_of_an_older_set_without_the_new_columns_still_make_a_verdict():
    m = resultset.order(pd.DataFrame(bimodal_rows()))
    s = summarise(m)
    sp = speedup(m, s)
    new = [c for c in sp.columns if c.endswith(("_gate", "_pairs_low", "_pairs_high"))
           or c in ("claim", "decided_by", "bimodal", "unsteady_n", "slow_mode", "fast_mode")]
    v = verdict.build(s.drop(columns=[c for c in ("bimodal", "unsteady_n", "slow_mode",
                                                  "fast_mode") if c in s]),
                      sp.drop(columns=new), m)
    assert "recipe" in answers(v)


def best_of(rows, interleaved):
    from tcbench.analysis.best import best
    from tcbench.reports import tables
    m = resultset.order(pd.DataFrame(rows))
    s = summarise(m)
    t = tables.best_table(best(s, speedup(m, s, pd.DataFrame(interleaved))))
    return {r[0]: dict(zip(t.columns, r)) for r in t.rows}


def test_the_fastest_of_a_host_bound_experiment_is_decided_by_its_interleaved_comparison():
    top = best_of(recipe(), interleaved_rows())["amp_recipe"]
    # tf32 beats fp32 and amp-bf16 in one process: it is the fastest, and so said
    assert top["fastest configuration"] == \
        "tf32, bs 512 (faster than every other mode in its interleaved comparison)"
    assert top["claim"] == "pays off"
    # the plain fp32 baseline is fp32 at this very setting: the paired ratio, not the
    # per-process one that carries the host's drift
    assert top["× plain fp32"] == "2.57× [2.53, 2.67]¶"
    assert top["changed besides precision"] == "nothing"


def test_an_interleaved_comparison_that_separates_no_arm_names_no_fastest():
    tied = [r | ({"ratio": 1.0, "ratio_low": 0.97, "ratio_high": 1.04}
                 if r["baseline"] == "tf32" else {}) for r in interleaved_rows()]
    top = best_of(recipe(), tied)["amp_recipe"]
    assert top["fastest configuration"] == "tf32, bs 512 (the highest mean, not judged " \
        "fastest: its interleaved comparison shows no arm faster than every other)"


def test_two_modes_their_own_comparison_ranks_are_no_tie_whatever_their_intervals_over_fp32():
    """amp_recipe on the H200: tf32 2.9× [2.2, 3.8] and amp-bf16 2.4× [1.8, 3.2] over fp32
    overlap, yet the comparison that ran both put amp-bf16 ÷ tf32 at 0.86 [0.76, 0.97]: ranked,
    so not tied; without that row the overlap alone is a tie, as before."""
    wide = {("tf32", "fp32"): (2.57, 2.30, 2.90), ("amp-bf16", "fp32"): (2.40, 2.20, 2.60),
            ("amp-bf16", "tf32"): (0.93, 0.90, 0.96)}
    rows = [r | dict(zip(("ratio", "ratio_low", "ratio_high"),
                         wide[r["precision"], r["baseline"]])) for r in interleaved_rows()]
    j = next(a.judgement for a in build(recipe(), rows).answers if a.experiment == "amp_recipe")
    assert (str(j.row["precision"]), j.tied) == ("tf32", ())
    rows = [r for r in rows if r["baseline"] != "tf32"]
    j = next(a.judgement for a in build(recipe(), rows).answers if a.experiment == "amp_recipe")
    assert {str(j.row["precision"]), *(str(t.row["precision"]) for t in j.tied)} == \
        {"tf32", "amp-bf16"} and len(j.tied) == 1


# ------------------------------------ compiled records made before the window's compile check
COMPILED = Path(__file__).parent / "data" / "h200_mnist_fastest_compiled_r1.json"


def compiled(precision, repeat, thr, *, compile="default", graphs=None, warmup=5,
             steps_per_epoch=8, samples=60_000):
    """A record of mnist_fastest's compiled cell on the H200 (batch 8192: its epoch of 60,000
    images ends in a batch of 2,656, the loader keeps it, 8 steps an epoch, 20 epochs),
    replanted: ``graphs``, the graphs it counted inside its timed window (None: the field
    absent, a record made before they were counted); ``warmup``, ``steps_per_epoch`` and
    ``samples`` change where and whether a smaller batch ends the epoch."""
    r = json.loads(COMPILED.read_text())
    r |= {"run": "planted", "experiment": "planted", "precision": precision, "repeat": repeat,
          "seed": repeat, "cell": f"{precision}_bs8192_compile-{compile}_r{repeat}"}
    r["params"]["compile"] = r["precision_flags"]["compile"] = compile
    m = r["metrics"]
    m |= {"throughput_samples_per_s": thr, "warmup_steps": warmup,
          "compile_cache": m["compile_cache"] if compile != "off" else None}
    m["step_counts"] |= {"warmup": warmup, "schedule": 20 * steps_per_epoch - warmup}
    r["data"]["samples_per_epoch"] = samples
    m["timed_window"].pop("graphs_compiled", None)
    if graphs is not None:
        m["timed_window"]["graphs_compiled"] = graphs
    return r


def planted(tmp_path, graphs=(None, None, None), **kw):
    """fp32 and amp-bf16 at one setting, amp-bf16 2.5 times as fast (tight): the tables."""
    from tcbench import aggregate
    from tcbench import record as R
    paths = []
    for p, thrs in (("fp32", (200e3, 201e3, 199e3)), ("amp-bf16", (500e3, 502e3, 498e3))):
        for rep, (thr, g) in enumerate(zip(thrs, graphs), 1):
            paths.append(R.write(compiled(p, rep, thr, graphs=g, **kw),
                                 tmp_path / f"{p}_r{rep}.json"))
    return aggregate.tables(paths)


def reports(t):
    """The verdict, the speed table, speedup.md's and best.md's rows of the planted cell."""
    from tcbench.reports import tables
    v = verdict.build(t["summary"], t["speedup"], t["metrics"])
    speed = tables.speed_table(tables.Experiment(t["summary"], t["speedup"], "planted"))
    sp, best = tables.speedup_table(t["speedup"]), tables.best_table(t["best"])
    return (v, {r[1]: dict(zip(speed.columns, r)) for r in speed.rows},
            {r[2]: dict(zip(sp.columns, r)) for r in sp.rows},
            dict(zip(best.columns, best.rows[0])), speed.notes + sp.notes + best.notes)


def test_a_compiled_record_without_the_count_predates_the_check(tmp_path):
    t = planted(tmp_path, graphs=(0, None, None))
    m = t["metrics"].set_index(["precision", "repeat"])

    def said(column, repeat):
        v = m.loc[("amp-bf16", repeat), column]
        return None if pd.isna(v) else v

    assert said("window_checked", 1) == True and said("graphs_compiled", 1) == 0  # noqa: E712
    assert said("window_checked", 2) == False and said("graphs_compiled", 2) is None  # noqa: E712
    # the epoch's last, smaller batch came after the warm-up: known to have compiled there
    assert said("uncounted_compile", 2) == True  # noqa: E712
    assert said("uncounted_compile", 1) is None   # its own count says
    s = t["summary"].set_index("precision").loc["amp-bf16"]
    assert s["window_checked"] == False and s["uncounted_compile_n"] == 2  # noqa: E712
    assert s["uncounted_compile_repeats"] == "2 3"
    v, speed, _, _, _ = reports(t)
    assert speed["amp-bf16"]["samples/s"].endswith(
        "], r2, r3 predate the compile-in-window check")
    assert "4 of the 6 compiled records of the set predate the compile-in-window check" in \
        " ".join(v.intro)


def test_a_compiled_cell_whose_epoch_tail_came_after_the_warm_up_is_not_judged(tmp_path):
    t = planted(tmp_path)
    v, speed, sp, best, notes = reports(t)
    phrase = "r1–r3 predate the compile-in-window check"
    assert answers(v)["planted"]["claim"] == "not judged: compiled inside the timed window"
    assert f"amp-bf16: {phrase}" in answers(v)["planted"]["how it was decided"]
    assert sp["amp-bf16"]["claim"] == "not judged: compiled inside the timed window"
    for row in (speed["fp32"], speed["amp-bf16"]):
        assert row["samples/s"].endswith(f"], {phrase}")
    assert sp["amp-bf16"]["samples/s"] == f"500,000, {phrase}"
    assert best["fastest configuration"] == (
        "amp-bf16, bs 8192, channels_last, compile default, graphs on (the highest "
        f"mean, not judged fastest: compiled inside the timed window; {phrase})")
    assert sum(n.startswith("'r1–r3 predate the compile-in-window check': ") for n in notes) \
        == 3
    intro = " ".join(v.intro)
    assert "All 6 compiled records of the set predate the compile-in-window check" in intro
    assert "6 of them (planted) met their epoch's last, smaller batch first after the " \
           "warm-up" in intro
    assert "1 not judged (compiled inside the timed window)" in intro
    assert "pays off" not in " ".join(v.bottom_line)


@pytest.mark.parametrize("kw", [dict(warmup=8),                # the tail fell in the warm-up
                                dict(samples=65_536),          # whole batches: no tail
                                dict(steps_per_epoch=7)],      # the loader dropped the tail
                         ids=["tail-in-warm-up", "no-tail", "tail-dropped"])
def test_a_compiled_record_whose_fields_show_no_new_shape_in_the_window_is_judged(tmp_path, kw):
    t = planted(tmp_path, **kw)
    assert set(t["metrics"]["window_checked"]) == {False}
    assert set(t["metrics"]["uncounted_compile"]) == {False}
    v, speed, _, best, _ = reports(t)
    assert answers(v)["planted"]["claim"] == "pays off"
    assert "predate" not in speed["amp-bf16"]["samples/s"] + best["fastest configuration"]
    # its window was not checked, and the verdict says so, without gating anything
    assert "All 6 compiled records of the set predate the compile-in-window check" in \
        " ".join(v.intro) and "met their epoch's last" not in " ".join(v.intro)


def test_an_eager_cell_with_the_same_epoch_tail_is_unaffected(tmp_path):
    t = planted(tmp_path, compile="off")
    assert t["metrics"]["window_checked"].isna().all()
    assert t["summary"]["uncounted_compile_n"].isna().all()
    v, speed, sp, best, notes = reports(t)
    assert answers(v)["planted"]["claim"] == "pays off"
    assert "predate" not in " ".join([*v.intro, *speed["amp-bf16"].values(),
                                      *sp["amp-bf16"].values(), *best.values(), *notes])


def test_a_counted_window_that_compiled_nothing_is_judged_as_any_other(tmp_path):
    t = planted(tmp_path, graphs=(0, 0, 0))
    assert set(t["metrics"]["window_checked"]) == {True}
    assert (t["summary"]["uncounted_compile_n"] == 0).all()
    v, speed, _, _, _ = reports(t)
    assert answers(v)["planted"]["claim"] == "pays off"
    assert "predate" not in " ".join([*v.intro, speed["amp-bf16"]["samples/s"]])
