"""The FP8 crossover study: the prediction from the device's ceilings (tcbench.crossover), the
measured map, its sentence and its figure (tcbench.reports.crossover) on fixture records, the copy
bandwidth the calibration now measures, and the study's config."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

import figure_text
from conftest import REPO
from tcbench.job import calibrate
from tcbench.launch import matrix
from tcbench.analysis import crossover
from tcbench.render import numbers
from tcbench.reports import crossover as crossover_report
from tcbench.reports import fp8_findings

H200 = crossover.Roofs(775e12, {"tensorwise": 1364e12, "rowwise": 1430e12}, 4.0e12)


def test_prediction_grows_with_the_shape_towards_the_roof_ratio():
    small = crossover.speedup("fp8-tensorwise", 1024, 1024, 3, H200)
    large = crossover.speedup("fp8-tensorwise", 65536, 8192, 3, H200)
    assert small < 1 < large < 1364 / 775            # casts dominate small, GEMMs large
    assert crossover.speedup("fp8-tensorwise", 8192, 4096, 3, H200) < \
        crossover.speedup("fp8-tensorwise", 32768, 4096, 3, H200)
    assert crossover.speedup("fp8-rowwise", 16384, 4096, 3, H200) < \
        crossover.speedup("fp8-tensorwise", 16384, 4096, 3, H200)   # rowwise moves more bytes here
    t = crossover.break_even_tokens("fp8-tensorwise", 4096, H200)
    assert crossover.speedup("fp8-tensorwise", t, 4096, 1, H200) >= 1 > \
        crossover.speedup("fp8-tensorwise", t - 1, 4096, 1, H200)
    slower_fp8 = crossover.Roofs(775e12, {"tensorwise": 700e12, "rowwise": 700e12}, 4e12)
    assert crossover.break_even_tokens("fp8-tensorwise", 4096, slower_fp8) is None  # never pays
    with pytest.raises(ValueError, match="no prediction for mode 'fp32'"):
        crossover.step_time("fp32", 1, 1, 1, H200)


def test_an_old_calibration_says_how_to_remake_it():
    # the committed calibration as one made before the copy bandwidth was measured
    cal = json.loads((REPO / "results" / "nvidia-h200" / "calibration.json").read_text())
    old = {k: v for k, v in cal.items() if k != "memory"}
    with pytest.raises(ValueError, match="no copy bandwidth.*forcerun calibrate"):
        crossover.Roofs.from_calibration(old)
    roofs = crossover.Roofs.from_calibration(old | {"memory": {"copy_bandwidth_bytes_per_s": 4e12}})
    assert roofs.fp8_flops["rowwise"] > roofs.bf16_flops
    cpu = {"modes": {m: {"status": "unsupported", "tflops": None} for m in crossover.FP8_MODES}}
    with pytest.raises(ValueError, match="no matmul roof for amp-bf16, fp8-tensorwise"):
        crossover.Roofs.from_calibration(cpu)


def test_calibration_measures_the_copy_bandwidth_on_the_cpu():
    row = calibrate.copy_bandwidth(2 ** 20, 2, torch.device("cpu"))
    assert row["copy_bandwidth_bytes_per_s"] == pytest.approx(2 * 2 ** 20 / row["median_time_s"])


def record(width, tokens, precision, repeat, throughput, memory, status="ok"):
    return {"workload": "amp_recipe", "batch_size": tokens, "precision": precision,
            "repeat": repeat, "status": status,
            "params": {"in_size": width, "out_size": width, "num_layers": 3},
            "metrics": {"throughput_samples_per_s": throughput,
                        "max_memory_allocated_bytes": memory} if status == "ok" else None}


def fixture_records():
    """Two widths x two token counts; FP8 faster only at the large shapes, the (2048, 16384)
    shape with two repeats (undecided), memory 5% higher under FP8."""
    out = []
    speed = {(1024, 4096): 0.8, (1024, 16384): 1.05, (4096, 4096): 1.3, (4096, 16384): 1.5}
    for (w, t), gain in speed.items():
        for r, jitter in enumerate((0.99, 1.0, 1.01), start=1):
            out.append(record(w, t, "amp-bf16", r, 1e6 * jitter, 1000))
            for mode in crossover.FP8_MODES:
                out.append(record(w, t, mode, r, 1e6 * gain * jitter ** 0.5, 1050))
    out.append(record(2048, 2048, "amp-bf16", 1, 1e6, 1000))
    out.append(record(2048, 2048, "fp8-rowwise", 1, 2e6, 1000, status="unsupported"))
    return out


def test_the_map_its_sentence_and_its_figure(tmp_path):
    table = crossover.ratios(crossover.cells(fixture_records()), H200)
    tw = table[table["mode"] == "fp8-tensorwise"].set_index(["width", "tokens"])
    assert tw.loc[(4096, 4096), "ratio"] == pytest.approx(1.3, rel=0.01)
    assert tw.loc[(4096, 4096), "pays"] is True and tw.loc[(1024, 4096), "pays"] is False
    assert tw.loc[(4096, 4096), "memory_ratio"] == pytest.approx(1.05)
    assert tw["predicted"].notna().all()
    sentence = fp8_findings.starts_to_pay(table, "fp8-tensorwise")
    assert sentence.startswith("fp8-tensorwise starts to pay at Linear width 4096 with 4,096 "
                               "tokens a step: 1.30× [") and "so it pays off" in sentence
    assert "the smallest (fewest FLOPs a step) of 2 of 4 shapes" in sentence
    row = table[(table["mode"] == "fp8-rowwise") & (table["width"] == 2048)]
    assert row["ratio"].isna().all() and row["statuses"].iloc[0] == "unsupported"
    assert "no fp8-rowwise run finished, unsupported" in row["unmeasured"].iloc[0]
    none = fp8_findings.starts_to_pay(table[table["width"] == 1024], "fp8-tensorwise")
    assert "at none of the 2 shapes measured" in none and "1.05×" in none
    from tcbench.render import plot
    paths = plot.save(crossover_report.figure(table), tmp_path, "fp8_crossover", formats=("png",))
    assert paths[0].stat().st_size > 10_000


@pytest.mark.parametrize("name", ["fp8_crossover.yaml", "fp8_crossover_quick.yaml"])
def test_the_study_config_is_small_and_square(name):
    text = (REPO / "config" / name).read_text()
    jobs = matrix.expand(yaml.safe_load(text))
    assert f"= {len(jobs)} jobs" in text
    shapes = {(dict(j.params)["in_size"], j.batch_size) for j in jobs.values()}
    assert all(dict(j.params)["in_size"] == dict(j.params)["out_size"] for j in jobs.values())
    assert len(shapes) <= 12 and {j.precision for j in jobs.values()} == \
        {"amp-bf16", "fp8-tensorwise", "fp8-rowwise"}
    assert {dict(j.params)["compile"] for j in jobs.values()} == {"default"}


def test_the_first_pass_is_a_part_of_the_whole_map():
    """The quick study's cells of width 4096 are the whole study's own (same experiment, same
    parameters, same cells), so the whole study run later into the same set reuses them."""
    def cells(name):
        cfg = yaml.safe_load((REPO / "config" / name).read_text())
        return {j.id: j.params for j in matrix.expand(cfg).values()}
    quick, whole = cells("fp8_crossover_quick.yaml"), cells("fp8_crossover.yaml")
    shared = {k for k in quick if k.startswith("fp8_crossover_w4096/")}
    assert len(shared) == 2 * 3 * 3 and shared <= set(whole)
    assert all(quick[k] == whole[k] for k in shared)
    widths = {dict(p)["in_size"] for p in quick.values()}
    assert widths == {2048, 4096}


def test_write_makes_the_table_the_sentences_and_the_figure(tmp_path, monkeypatch):
    """From the records of the crossover's experiments only (another experiment's amp_recipe
    records stay out), with the prediction from a calibration that has the copy bandwidth."""
    records = [r | {"experiment": "fp8_crossover_w1024"} for r in fixture_records()]
    records.append(record(1024, 4096, "fp8-tensorwise", 4, 9e9, 1) | {"experiment": "fp8_mlp"})
    monkeypatch.setattr(crossover_report.resultset, "find_records", lambda root: [root])
    monkeypatch.setattr(crossover_report.resultset, "load", lambda paths: records)
    cal = tmp_path / "calibration.json"
    cal.write_text(json.dumps({"modes": {"amp-bf16": {"tflops": 775}, "fp8-tensorwise":
                                         {"tflops": 1364}, "fp8-rowwise": {"tflops": 1430}},
                               "memory": {"copy_bandwidth_bytes_per_s": 4e12}}))
    paths = crossover_report.write(tmp_path / "records", cal, tmp_path / "out")
    names = {p.name for p in paths}
    assert {"fp8_crossover.csv", "fp8_crossover.md", "fp8_crossover.pdf"} <= names
    table = __import__("pandas").read_csv(tmp_path / "out" / "tables" / "fp8_crossover.csv")
    assert table["ratio_n"].max() == 3 and table["predicted"].notna().all()
    text = (tmp_path / "out" / "fp8_crossover.md").read_text()
    assert "fp8-tensorwise starts to pay at Linear width 4096" in text


def test_the_figure_draws_the_break_even_contour_and_boxes_each_paying_cell():
    """On a full 2 x 2 map: a dashed contour at 1.0 in the measured and predicted panels, and
    one box per shape whose interval clears 1.10 (two here, in each recipe's measured panel)."""
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    table = crossover.ratios(crossover.cells([r for r in fixture_records()
                                              if r["params"]["in_size"] != 2048]),
                             H200)
    fig = crossover_report.figure(table)
    assert figure_text.problems(fig) == []       # no text overlaps or leaves the canvas
    measured, predicted = fig.axes[0], fig.axes[1]
    # the measured panel: its own break-even (dashed) and the prediction's (dotted) over it,
    # each on the cells' edges (the axes are the shapes measured, nothing between them)
    edges = [c for c in measured.collections if isinstance(c, LineCollection)]
    assert len(edges) == 2 and len({str(c.get_linestyle()) for c in edges}) == 2
    for c in edges:
        for seg in c.get_segments():
            assert np.allclose(seg, np.round(seg)), seg      # whole cells, never interpolated
    assert sum(isinstance(c, LineCollection) for c in predicted.collections) == 1
    assert len(fig.axes) > 6                   # the colour bars: a scale a row, and memory's
    # a measured cell gives its 95% interval under the ratio
    tw = table[(table["mode"] == "fp8-tensorwise") & (table["width"] == 4096) &
               (table["tokens"] == 4096)].iloc[0]
    # as the tables print it (``numbers.with_interval``), the interval on a line of its own
    assert numbers.with_interval(tw["ratio"], tw["ratio_low"], tw["ratio_high"], tw["ratio_n"],
                                 kind=tw["ratio_interval"]).replace(" [", "\n[") in \
        {t.get_text() for t in measured.texts}
    boxes = [p for p in measured.patches if isinstance(p, Rectangle) and not p.get_fill()]
    paying = table[(table["mode"] == "fp8-tensorwise") & (table["pays"] == True)]  # noqa: E712
    assert len(boxes) == len(paying) == 2
    assert {(b.get_x(), b.get_y()) for b in boxes} == {(0, 0), (1, 0)}  # width 4096: the top row


def test_a_cpu_set_says_there_is_no_fp8_measurement_not_a_ratio(tmp_path):
    """FP8 unsupported at every shape (a CPU), and a calibration without FP8 roofs: no ratio,
    no claim, no prediction; the sentences and the figure say why."""
    records = []
    for w, t in ((64, 32), (64, 128), (128, 32), (128, 128)):
        records.append(record(w, t, "amp-bf16", 1, 1e4, None))
        for mode in crossover.FP8_MODES:
            records.append(record(w, t, mode, 1, None, None, status="unsupported") | {
                "status_reason": f"{mode} needs a CUDA GPU of compute capability >= 8.9; "
                                 f"this is a CPU"})
    records = [r | {"experiment": "fp8_crossover_tiny"} for r in records]
    cpu = {"modes": {"amp-bf16": {"status": "ok", "tflops": 0.5},
                     **{m: {"status": "unsupported", "tflops": None} for m in crossover.FP8_MODES}},
           "memory": {"copy_bandwidth_bytes_per_s": 1e10}}
    table = crossover_report.table_of(records, cpu)
    assert table["ratio"].isna().all() and table["predicted"].isna().all()
    assert not table["pays"].astype(str).eq("True").any()
    text = crossover_report.sentences(table)
    assert "fp8-rowwise: no FP8 measurement at any of the 4 shapes" in text
    assert "this is a CPU" in text and "cannot be judged" in text and "×" not in text
    assert "No prediction from the calibration" in text and "no matmul roof" in text
    from tcbench.render import plot
    fig = crossover_report.figure(table)
    assert figure_text.problems(fig) == []
    assert {t.get_text() for ax in fig.axes for t in ax.texts} == {"unsupported",
                                                                  "no prediction"}
    assert plot.save_as(fig, [tmp_path / "fp8_crossover.png"])[0].stat().st_size


def test_too_few_repeats_cannot_be_judged():
    two = [r for r in fixture_records() if r["repeat"] <= 2 and r["params"]["in_size"] != 2048]
    table = crossover.ratios(crossover.cells(two), H200)
    assert table["pays"].isna().all() and set(table["claim"]) == {"n < 3"}
    text = fp8_findings.starts_to_pay(table, "fp8-tensorwise")
    assert text.startswith("fp8-tensorwise: where it starts to pay cannot be judged") and \
        "fewer than three repeats on a side" in text


def test_the_command_writes_the_paths_it_is_given(tmp_path, monkeypatch):
    """The workflow's rule names every file (record files in, each output by path); without a
    calibration the sentences say there is no prediction."""
    files = []
    for i, r in enumerate(fixture_records()):
        files.append(tmp_path / "r" / f"{i}.json")
        files[-1].parent.mkdir(exist_ok=True)
        files[-1].write_text(json.dumps(r | {"experiment": "fp8_crossover_w"}))
    # the fixture's records are partial: read as they are, not against the record schema
    monkeypatch.setattr(crossover_report.resultset, "load", lambda paths: [json.loads(p.read_text())
                                                                           for p in paths])
    assert crossover_report.main(["--records", *map(str, files), "--csv", str(tmp_path / "a.csv"),
                                  "--md", str(tmp_path / "a.md"), "--figures",
                                  str(tmp_path / "fp8_crossover.png")]) == 0
    assert "No prediction from the calibration: no calibration.json" in \
        (tmp_path / "a.md").read_text()
    assert (tmp_path / "fp8_crossover.png").stat().st_size and \
        len(__import__("pandas").read_csv(tmp_path / "a.csv")) == 4 * 2 + 1


TINY_STUDY = {
    "run": "tiny-fp8", "require_gpu": False, "repeats": 1,
    "adaptive_repeats": {"enabled": False},
    "calibrate": {"enabled": True, "size": 256, "iterations": 3},
    "experiments": [
        {"name": "tiny_lm", "workload": "transformers",
         "precisions": ["fp32", "amp-bf16", "fp8-rowwise"], "batch_sizes": [2],
         "params": {"model": "llama", "seq_len": 32, "steps": 2, "warmup_steps": 1,
                    "profile_steps": 1,
                    "config": {"hidden_size": 64, "intermediate_size": 128,
                               "num_hidden_layers": 2, "num_attention_heads": 4,
                               "num_key_value_heads": 2, "vocab_size": 256}}},
        *({"name": f"fp8_crossover_w{w}", "workload": "amp_recipe",
           "precisions": ["amp-bf16", "fp8-tensorwise", "fp8-rowwise"], "batch_sizes": [32],
           "params": {"in_size": w, "out_size": w, "num_layers": 3, "num_batches": 2,
                      "epochs": 2, "warmup_steps": 1},
           "interleave": {"enabled": True, "rounds": 3, "segment_s": 0.01}} for w in (64, 128)),
    ]}


@pytest.mark.slow
def test_the_workflow_makes_the_map_on_a_cpu_and_says_fp8_was_not_measured(workflow_copy):
    """A tiny study with a transformer and the crossover's experiments (with an interleaved
    comparison a shape), on the CPU: rule all makes the map (FP8 unsupported: no ratio, no
    prediction, and why), the verdict's FP8
    section, tokens/s in the transformer's table, and the report holds the map."""
    pytest.importorskip("transformers")
    from conftest import snakemake

    (workflow_copy / "tiny.yaml").write_text(yaml.safe_dump(TINY_STUDY))
    snakemake(workflow_copy, "--cores", "2", "--configfile", "tiny.yaml")
    out = workflow_copy / "results" / "tiny-fp8"
    lm = {p.stem.split("_")[0]: json.loads(p.read_text())
          for p in (out / "records" / "tiny_lm").glob("*.json")}
    assert lm["fp32"]["status"] == lm["amp-bf16"]["status"] == "ok"
    assert lm["fp8-rowwise"]["status"] == "unsupported" and "CPU" in \
        lm["fp8-rowwise"]["status_reason"]
    text = (out / "fp8_crossover.md").read_text()
    assert "fp8-tensorwise: no FP8 measurement at any of the 2 shapes" in text
    assert "No prediction from the calibration" in text and "×" not in text
    compared = json.loads(
        (out / "interleaved" / "fp8_crossover_w64" / "bs32_r1.json").read_text())
    assert {a["precision"]: a["status"] for a in compared["arms"]} == {
        "amp-bf16": "ok", "fp8-tensorwise": "unsupported", "fp8-rowwise": "unsupported"}
    table = __import__("pandas").read_csv(out / "tables" / "fp8_crossover.csv")
    assert len(table) == 4 and set(table["decided_by"]) == {"repeats"}  # the records' reasons
    assert {p.name for p in (out / "figures").glob("fp8_crossover.*")} == \
        {"fp8_crossover.png", "fp8_crossover.pdf", "fp8_crossover.svg"}
    verdict = (out / "summary.md").read_text()
    assert "## FP8 on this GPU" in verdict and "**MFU:** not stated" in verdict
    assert "FP8 crossover, fp8-rowwise against amp-bf16: cannot be judged (no FP8 " \
        "measurement)." in verdict
    assert "| samples/s | tokens/s |" in (out / "tables" / "tiny_lm.md").read_text()
    snakemake(workflow_copy, "--report", "report.html", "--configfile", "tiny.yaml")
    assert "Where FP8 starts to pay on this GPU" in (workflow_copy / "report.html").read_text()


# ------------------------------------------------------------ the map from interleaved comparisons
CPU_COMPARISON = {"workload": "amp_recipe", "batch_size": 16, "device": "cpu",
                  "precisions": ["amp-bf16", "fp8-tensorwise", "fp8-rowwise"],
                  "params": {"in_size": 32, "out_size": 32, "num_batches": 2, "epochs": 1,
                             "warmup_steps": 1},
                  "interleave": {"rounds": 3, "segment_s": 0.005}}


@pytest.fixture(scope="module")
def cpu_comparison():
    """A real interleaved comparison of the recipe MLP's three modes on the CPU: FP8
    unsupported, so fewer than two arms ran and it has no rounds."""
    from tcbench.job import interleave

    return interleave.compare(json.loads(json.dumps(CPU_COMPARISON)))


def comparison(base, tmp_path, width, tokens, throughputs, statuses=None, experiment=None,
               replicate=1):
    """``base`` (a real comparison's record) made into process ``replicate`` of one of Linear
    width ``width`` at ``tokens`` a step whose arms ran at ``throughputs`` (arm -> samples/s
    per round) and whose other arms have ``statuses`` (arm -> (status, reason)); written
    schema-valid and read back as ``analysis.interleaved.load`` reads it."""
    import copy

    from tcbench import record as R
    from tcbench.analysis import interleaved

    r = copy.deepcopy(base)
    experiment = experiment or f"fp8_crossover_w{width}"
    r |= {"experiment": experiment, "batch_size": tokens, "setting": f"bs{tokens}",
          "replicate": replicate}
    r["params"] |= {"in_size": width, "out_size": width}
    statuses = statuses or {}
    steps = 10
    for arm in r["arms"]:
        ok = arm["precision"] in throughputs
        st, why = ("ok", None) if ok else statuses[arm["precision"]]
        arm |= {"status": st, "status_reason": why, "steps_per_segment": steps if ok else None,
                "warm_step_time_s": 0.01 if ok else None}
    n = len(next(iter(throughputs.values())))
    arms = [a for a in r["precisions"] if a in throughputs]
    r["rounds"] = [{"round": i, "host_probe_ops_per_s": 1e6, "segments": [
        {"precision": arm, "position": k, "steps": steps, "samples": tokens * steps,
         "seconds": tokens * steps / throughputs[arm][i]}
        for k, arm in enumerate(arms[i % len(arms):] + arms[:i % len(arms)])]}
        for i in range(n)]
    r["status"], r["status_reason"] = ("ok", None) if len(arms) >= 2 else (
        "unsupported", "fewer than two arms could run")
    path = tmp_path / "interleaved" / experiment / f"bs{tokens}_r{replicate}.json"
    R.write(r, path, R.INTERLEAVED)
    return interleaved.load([path])[0]


def drifting(gain, rounds=8, seed=0):
    """Per-round throughputs of amp-bf16 and an FP8 mode ``gain`` times as fast, on a host
    whose speed drifts round to round (both arms of a round alike) with a little noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    host = 1 + 0.3 * rng.random(rounds)
    base = 1e6 * host * (1 + 0.01 * rng.standard_normal(rounds))
    return base, 1e6 * gain * host * (1 + 0.01 * rng.standard_normal(rounds))


def test_a_shape_with_an_interleaved_comparison_takes_its_paired_ratio(cpu_comparison,
                                                                      tmp_path):
    """Its ratio, interval, claim and pays are stats.paired_ratio's of the comparison's rounds
    (not the records' 1.3), marked interleaved; its memory ratio is still the records'; the
    other shapes keep the repeats' ratios."""
    from tcbench import stats

    base, tw = drifting(1.6)
    _, rw = drifting(0.95, seed=1)
    c = comparison(cpu_comparison, tmp_path, 4096, 4096,
                   {"amp-bf16": base, "fp8-tensorwise": tw, "fp8-rowwise": rw})
    df = crossover.cells(fixture_records())
    table = crossover.ratios(df, H200, crossover.compared([c]))
    t = table.set_index(["width", "tokens", "mode"])
    row = t.loc[(4096, 4096, "fp8-tensorwise")]
    e = stats.paired_ratio(tw, base)
    assert (row["ratio"], row["ratio_low"], row["ratio_high"], row["ratio_n"]) == \
        pytest.approx((e.value, e.low, e.high, 8))
    assert row["ratio"] == pytest.approx(1.6, rel=0.03)        # not the records' 1.3
    assert row["ratio_interval"] == stats.PAIRED and row["decided_by"] == "interleaved"
    assert row["claim"] == stats.claim(e) == stats.PAYS_OFF and row["pays"] is True
    assert row["memory_ratio"] == pytest.approx(1.05)           # the records' own
    rowwise = t.loc[(4096, 4096, "fp8-rowwise")]
    assert rowwise["pays"] is False and rowwise["decided_by"] == "interleaved"
    others = table[~((table["width"] == 4096) & (table["tokens"] == 4096))]
    assert set(others["decided_by"]) == {"repeats"}
    old = crossover.ratios(df, H200).set_index(["width", "tokens", "mode"])
    assert t.loc[(4096, 16384, "fp8-tensorwise"), "ratio"] == \
        old.loc[(4096, 16384, "fp8-tensorwise"), "ratio"]
    sentence = fp8_findings.starts_to_pay(table, "fp8-tensorwise")
    assert "(interleaved, 95% CI)" in sentence and "interleaved in one process, 8 rounds" in \
        sentence
    assert "Of the 8 measured ratios (shape and FP8 mode), 2 come from interleaved " \
        "comparisons" in fp8_findings.sources(table)


def test_a_shape_compared_in_three_processes_takes_the_ratio_across_them(cpu_comparison,
                                                                         tmp_path):
    """A shape's replicates are one comparison: its ratio is stats.replicated_ratio over the
    processes (a t interval, n = 3), and the sentences name the processes and their rounds."""
    from tcbench import stats

    runs = [drifting(g, seed=k) for k, g in enumerate((1.5, 1.6, 1.7))]
    cs = [comparison(cpu_comparison, tmp_path, 4096, 4096,
                     {"amp-bf16": b, "fp8-tensorwise": t, "fp8-rowwise": 0.9 * b},
                     replicate=k + 1) for k, (b, t) in enumerate(runs)]
    compared = crossover.compared(cs[::-1])
    assert len(compared) == 1 and len(compared[(4096, 4096)].processes) == 3
    row = crossover.ratios(crossover.cells(fixture_records()), H200, compared).set_index(
        ["width", "tokens", "mode"]).loc[(4096, 4096, "fp8-tensorwise")]
    e = stats.replicated_ratio([stats.paired_ratio(t, b) for b, t in runs]).estimate
    assert (row["ratio"], row["ratio_low"], row["ratio_high"]) == \
        pytest.approx((e.value, e.low, e.high))
    assert (row["ratio_interval"], row["ratio_n"], row["processes"], row["rounds"]) == \
        (stats.REPLICATED, 3, 3, 8)
    table = crossover.ratios(crossover.cells(fixture_records()), H200, compared)
    assert "; interleaved, 3 processes × 8 rounds" in fp8_findings.starts_to_pay(table,
                                                                                 "fp8-tensorwise")
    assert "2 across independent processes" in fp8_findings.sources(table)


def test_without_comparisons_the_table_is_the_records_alone():
    """No comparisons: the table as it was (no decided_by); an empty set of them: the same
    rows, each decided by the repeats."""
    df = crossover.cells(fixture_records())
    old = crossover.ratios(df, H200)
    assert "decided_by" not in old and len(old) == 4 * 2 + 1
    given = crossover.ratios(df, H200, {})
    assert set(given["decided_by"]) == {"repeats"}
    import pandas as pd
    pd.testing.assert_frame_equal(given.drop(columns=["decided_by", "processes", "rounds"]),
                                  old)
    assert fp8_findings.sources(old) == fp8_findings.sources(given) == ""
    assert crossover_report._source_note(given) == ""


def test_a_shape_with_only_a_comparison_gets_its_row_without_memory(cpu_comparison, tmp_path):
    """No record of width 8192 at 65536 tokens: its rows come from the comparison alone, with
    no memory ratio (a comparison measures none), and the prediction of its layers."""
    base, tw = drifting(1.4)
    _, rw = drifting(1.2, seed=2)
    c = comparison(cpu_comparison, tmp_path, 8192, 65536,
                   {"amp-bf16": base, "fp8-tensorwise": tw, "fp8-rowwise": rw})
    table = crossover.ratios(crossover.cells(fixture_records()), H200, crossover.compared([c]))
    rows = table[(table["width"] == 8192) & (table["tokens"] == 65536)]
    assert len(rows) == 2 and set(rows["decided_by"]) == {"interleaved"}
    assert rows["memory_ratio"].isna().all() and rows["ratio"].notna().all()
    assert rows["predicted"].tolist() == pytest.approx(
        [crossover.speedup(m, 65536, 8192, 3, H200) for m in rows["mode"]])
    alone = crossover.ratios(crossover.cells([]), None,
                             crossover.compared([c]))    # no record at all
    assert len(alone) == 2 and alone["memory_ratio"].isna().all()
    # its memory cell says there is no record, not the comparison's status
    memory_panel = crossover_report.figure(table.astype({"pays": object})).axes[2]
    assert "no per-process\nrecord" in {t.get_text() for t in memory_panel.texts}


def test_an_fp8_arm_that_did_not_run_says_why(cpu_comparison, tmp_path):
    """An FP8 arm that could not run leaves its shape unmeasured with its status and reason
    (the other FP8 arm's ratio stands); the CPU's own comparison, no arm of FP8 run, gives
    both rows the reason."""
    base, tw = drifting(1.3)
    c = comparison(cpu_comparison, tmp_path, 8192, 2048,
                   {"amp-bf16": base, "fp8-tensorwise": tw},
                   {"fp8-rowwise": ("oom", "CUDA out of memory: tried to allocate 2 GiB")})
    t = crossover.ratios(crossover.cells([]), H200, crossover.compared([c])).set_index("mode")
    assert t.loc["fp8-tensorwise", "ratio"] == pytest.approx(1.3, rel=0.03)
    assert pd_isna(t.loc["fp8-rowwise", "ratio"]) and t.loc["fp8-rowwise", "statuses"] == "oom"
    assert t.loc["fp8-rowwise", "unmeasured"] == (
        "no fp8-rowwise run finished, oom (interleaved comparison): CUDA out of memory: tried "
        "to allocate 2 GiB")
    assert t.loc["fp8-rowwise", "pays"] is None
    cpu = cpu_comparison | {"experiment": "fp8_crossover_w32"}
    table = crossover_report.table_of([], None, comparisons=[cpu])
    assert table["ratio"].isna().all() and set(table["statuses"]) == {"unsupported"}
    assert all("compute capability >= 8.9" in w and "CPU" in w for w in table["unmeasured"])
    assert "fp8-rowwise: no FP8 measurement at any of the 1 shapes" in \
        crossover_report.sentences(table)


def pd_isna(v) -> bool:
    import pandas as pd
    return bool(pd.isna(v))


def test_the_command_reads_a_folder_of_comparisons(cpu_comparison, tmp_path, monkeypatch):
    """--comparisons FOLDER: every comparison in it; only the crossover experiments' decide
    (another experiment's comparison of the same shape is left out); the table, the sentences
    and the figure's note say where the ratio comes from."""
    import pandas as pd

    import figure_text
    files = []
    for i, r in enumerate(fixture_records()):
        files.append(tmp_path / "r" / f"{i}.json")
        files[-1].parent.mkdir(exist_ok=True)
        files[-1].write_text(json.dumps(r | {"experiment": "fp8_crossover_w"}))
    monkeypatch.setattr(crossover_report.resultset, "load", lambda paths: [json.loads(p.read_text())
                                                                           for p in paths])
    base, tw = drifting(1.6)
    comparison(cpu_comparison, tmp_path, 4096, 4096,
               {"amp-bf16": base, "fp8-tensorwise": tw, "fp8-rowwise": tw})
    comparison(cpu_comparison, tmp_path, 1024, 4096,          # not a crossover experiment
               {"amp-bf16": base, "fp8-tensorwise": 9 * tw, "fp8-rowwise": 9 * tw},
               experiment="amp_recipe_wide")
    assert crossover_report.main(["--records", *map(str, files), "--csv", str(tmp_path / "a.csv"),
                                  "--md", str(tmp_path / "a.md"), "--figures",
                                  str(tmp_path / "f.png"),
                                  "--comparisons", str(tmp_path / "interleaved")]) == 0
    table = pd.read_csv(tmp_path / "a.csv")
    il = table[table["decided_by"] == "interleaved"]
    assert set(zip(il["width"], il["tokens"])) == {(4096, 4096)} and len(table) == 4 * 2 + 1
    assert table.loc[(table["width"] == 1024) & (table["tokens"] == 4096), "ratio"].max() < 1
    md = (tmp_path / "a.md").read_text()
    assert "2 come from interleaved comparisons" in md and "interleaved in one process" in md
    fig = crossover_report.figure(table.astype({"pays": object}))
    assert figure_text.problems(fig) == []
    assert any("2 of 8 ratios: interleaved, 2 in one process" in t.get_text()
               for t in fig.texts)


@pytest.mark.slow
def test_the_quick_study_plans_one_comparison_a_shape_for_the_map(workflow_copy):
    """The quick study's dry run on a CPU: three interleave jobs per shape (its replicated
    comparison processes), and rule crossover reads them with --comparisons."""
    import re

    from conftest import snakemake

    plan = snakemake(workflow_copy, "-n", "--printshellcmds", "--configfile",
                     "config/fp8_crossover_quick.yaml", "--config", "require_gpu=false",
                     "run=xq").stdout
    stats = plan.split("Job stats:")[1]
    assert re.search(r"^interleave\s+12$", stats, re.M)
    assert re.search(r"^crossover\s+1$", stats, re.M)
    command = next(line for line in plan.splitlines() if "tcbench.reports.crossover" in line)
    given = command.split("--comparisons ")[1].split(" >")[0].split()
    assert given == [f"results/xq/interleaved/fp8_crossover_w{w}/bs{t}_compile-default_r{k}.json"
                     for w in (2048, 4096) for t in (2048, 16384) for k in (1, 2, 3)]


def test_a_models_cells_of_one_precision_are_told_apart_by_setting_and_experiment():
    """GPT-2 small in amp-bf16 at three settings across two experiments: each MFU and each
    table row names its setting (and its experiment where the model's cells come from
    several), never three bare "amp-bf16" entries."""
    rows = [("tf_gpt2", "gpt2-small", "amp-bf16", 16, "default", 0.331),
            ("tf_gpt2", "gpt2-small", "fp8-tensorwise", 16, "default", 0.167),
            ("tf_gpt2_fastest", "gpt2-small", "amp-bf16", 16, "off", 0.166),
            ("tf_gpt2_fastest", "gpt2-small-v50304", "amp-bf16", 32, "default", 0.370),
            ("tf_gpt2_fastest", "gpt2-small-v50304", "amp-bf16", 32, "max-autotune", 0.362)]
    df = pd.DataFrame([{"experiment": e, "workload": "transformers", "model": m,
                        "precision": p, "batch_size": bs, "compile": c, "mfu": mfu,
                        "ceiling_tflops": 775.0, "repeats_ok": 3, "compute_capability": "9.0"}
                       for e, m, p, bs, c, mfu in rows])
    [sentence] = fp8_findings.mfu_sentences(df)
    assert "gpt2-small: amp-bf16 at batch size 16, compile default (tf_gpt2) 33.1%" in sentence
    assert "fp8-tensorwise 16.7%" in sentence        # the only cell of its precision: bare
    assert "amp-bf16 at batch size 16, compile off (tf_gpt2_fastest) 16.6%" in sentence
    assert "gpt2-small-v50304: amp-bf16 at batch size 32, compile default 37.0%" in sentence
    assert "amp-bf16 at batch size 32, compile max-autotune 36.2%" in sentence
    v50304 = df[df["model"] == "gpt2-small-v50304"]
    assert list(fp8_findings._cell_names(v50304, long=False).values()) == \
        ["amp-bf16 (bs 32, compile default)", "amp-bf16 (bs 32, compile max-autotune)"]
