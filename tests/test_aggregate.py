"""Aggregation arithmetic on records with known numbers."""

import copy
import json

import numpy as np
import pandas as pd
import pytest

from tcbench import aggregate
from tcbench import resultset
from tcbench import vocabulary as V
from tcbench.reports import tables
from tcbench import record as R


@pytest.fixture
def template(tiny_record):
    return copy.deepcopy(tiny_record)


def make(template, precision, repeat, time_s, thr, mem, status="ok"):
    r = copy.deepcopy(template)
    r |= {"precision": precision, "repeat": repeat, "cell": f"{precision}_bs8_r{repeat}",
          "experiment": "e", "run": "t"}
    if status != "ok":
        r |= {"status": status, "status_reason": "because", "metrics": None, "telemetry": None,
              "tensor_cores": None, "precision_flags": None, "data": None}
        return r
    r["metrics"] |= {"total_time_s": time_s, "throughput_samples_per_s": thr,
                     "max_memory_allocated_bytes": mem}
    return r


@pytest.fixture
def records_dir(tmp_path, template):
    rows = [("fp32", 1, 10.0, 100.0, 1000), ("fp32", 2, 12.0, 90.0, 1000),
            ("fp32", 3, 11.0, 95.0, 1000),
            ("amp-fp16", 1, 5.0, 200.0, 400), ("amp-fp16", 2, 5.5, 180.0, 400),
            ("amp-fp16", 3, 4.0, 210.0, 400)]
    for p, rep, t, thr, mem in rows:
        R.write(make(template, p, rep, t, thr, mem), tmp_path / "rec" / "e" / f"{p}_{rep}.json")
    R.write(make(template, "tf32", 1, 0, 0, 0, status="unsupported"),
            tmp_path / "rec" / "e" / "tf32_1.json")
    return tmp_path


def test_summary_speedup_and_memory_ratio(records_dir):
    out = aggregate.aggregate(records_dir / "rec", records_dir / "out")
    s = out["summary"].set_index("precision")
    fp32 = s.loc["fp32"]
    assert fp32["throughput_samples_per_s"] == pytest.approx(95.0)      # the mean
    assert fp32["throughput_samples_per_s_n"] == 3 and fp32["interval"] == "ci95"
    assert fp32["throughput_samples_per_s_low"] < 95.0 < fp32["throughput_samples_per_s_high"]
    assert fp32["total_time_s"] == pytest.approx(11.0)
    assert s.loc["fp32", "throughput_samples_per_s_cv"] == pytest.approx(
        np.std([100, 90, 95], ddof=1) / 95)
    sp = out["speedup"].set_index("precision")
    assert sp.loc["amp-fp16", "speedup"] == pytest.approx((590 / 3) / 95.0)
    assert sp.loc["amp-fp16", "speedup_low"] < sp.loc["amp-fp16", "speedup"] < \
        sp.loc["amp-fp16", "speedup_high"]
    assert bool(sp.loc["amp-fp16", "faster"]) is True
    assert sp.loc["amp-fp16", "seed_speedup"] == pytest.approx(11.0 / (14.5 / 3))
    assert sp.loc["amp-fp16", "memory_ratio"] == pytest.approx(0.4)
    assert sp.loc["fp32", "speedup"] == pytest.approx(1.0)
    assert sp.loc["tf32", "status"] == "unsupported"
    assert np.isnan(sp.loc["tf32", "speedup"])
    for f in ("metrics.csv", "summary.csv", "speedup.csv", "best.csv"):   # CSV only: no views
        assert (records_dir / "out" / f).exists()
    out = records_dir / "out"
    assert not (out / "speedup.md").exists()     # aggregate renders nothing: reports.tables does
    tables.write_views(pd.read_csv(out / "speedup.csv"), None, out / "speedup.md", None)
    md = (out / "speedup.md").read_text()
    assert "| e | bs 8 | amp-fp16 | 3/3 |" in md and "unsupported" in md and "faster" in md


def test_records_given_one_by_one_are_the_folder(records_dir):
    files = sorted((records_dir / "rec").rglob("*.json"))
    a = aggregate.aggregate(records_dir / "rec", records_dir / "a")["summary"]
    b = aggregate.aggregate(files, records_dir / "b")["summary"]
    assert a.equals(b)


def test_records_made_under_another_run_name_are_the_sets(records_dir, template):
    """A part of a study run under another name and copied into the set pools with the rest
    (one cell, not two), and every row and comparison carries the set's name."""
    R.write(make(template, "fp32", 4, 11.0, 97.0, 1000) | {"run": "t-part"},
            records_dir / "rec" / "e" / "fp32_4.json")
    apart = aggregate.aggregate(records_dir / "rec", records_dir / "a")["summary"]
    assert sorted(apart.loc[apart["precision"] == "fp32", "run"]) == ["t", "t-part"]
    pooled = aggregate.aggregate(records_dir / "rec", records_dir / "b", run="t")["summary"]
    fp32 = pooled[pooled["precision"] == "fp32"]
    assert len(fp32) == 1 and fp32.iloc[0]["throughput_samples_per_s_n"] == 4
    assert set(pooled["run"]) == {"t"}
    assert (records_dir / "rec" / "e" / "fp32_4.json").read_text().count('"t-part"') == 1


def test_mfu_uses_the_calibrated_ceiling(records_dir):
    cal = records_dir / "cal.json"
    cal.write_text(json.dumps({"modes": {"fp32": {"tflops": 2.0}, "amp-fp16": {"tflops": 4.0}}}))
    df = aggregate.aggregate(records_dir / "rec", records_dir / "out", calibration=cal)["metrics"]
    row = df[df["precision"] == "amp-fp16"].iloc[0]
    assert row["mfu"] == pytest.approx(row["achieved_tflops"] / 4.0)


def test_missing_expected_record_is_an_error(records_dir):
    with pytest.raises(R.RecordError, match="missing"):
        aggregate.aggregate(records_dir / "rec", records_dir / "out",
                            expected=[records_dir / "rec" / "e" / "nope.json"])


def test_best_is_the_fastest_cell_against_plain_fp32(records_dir):
    out = aggregate.aggregate(records_dir / "rec", records_dir / "out")
    top = out["best"].iloc[0]
    assert top["precision"] == "amp-fp16" and top["workload"] == "amp_recipe"
    assert top["throughput_samples_per_s"] == pytest.approx(590 / 3)
    assert top["gain"] == pytest.approx((590 / 3) / 95.0)
    assert top["gain_interval"] == "ci95" and top["baseline_batch_size"] == 8
    assert top["memory_ratio"] == pytest.approx(0.4)
    md = tables.write_views(None, out["best"], None, records_dir / "out" / "best.md")[0]
    assert md.read_text().count("amp-fp16") == 1


def test_overhead_from_snakemake_benchmarks(records_dir):
    bench = records_dir / "bench" / "e"
    bench.mkdir(parents=True)
    df = aggregate.aggregate(records_dir / "rec", records_dir / "out")["metrics"]
    ok = df[df["status"] == "ok"]
    for _, r in ok.iterrows():
        (bench / f"{r['cell']}.tsv").write_text(f"s\th:m:s\n{r['steady_time_s'] + 1.0}\t0:00:01\n")
    ov = aggregate.aggregate(records_dir / "rec", records_dir / "out",
                             benchmarks=records_dir / "bench")["overhead"]
    per_job = ov[ov["cell"] != "(all jobs)"]
    assert len(per_job) == len(df)  # the unsupported job is kept, not dropped
    assert per_job[per_job["status"] == "ok"]["overhead_s"].tolist() == pytest.approx([1.0] * 6)
    # fixed cost: the wall time less warm-up and steady steps
    ok_jobs = per_job[per_job["status"] == "ok"]
    assert (ok_jobs["fixed_cost_s"] <= ok_jobs["overhead_s"]).all()
    assert per_job[per_job["status"] != "ok"]["job_wall_s"].isna().all()
    # the overhead split comes from each record's harness field
    assert set(resultset.HARNESS_COLUMNS) <= set(ov.columns)
    assert (per_job[per_job["status"] == "ok"]["harness_training_s"] > 0).all()
    study = ov[ov["cell"] == "(all jobs)"].iloc[0]
    assert study["overhead_s"] == pytest.approx(6.0)
    assert study["overhead_share"] == pytest.approx(6.0 / study["job_wall_s"])


def test_later_repeats_take_the_cells_flop_count_with_their_own_throughput(template):
    """FLOPs are counted in a cell's first repeat only (evidence_repeats: first); the other
    repeats' TFLOP/s come from that count and their own throughput, so MFU has all n."""
    recs = [make(template, "fp32", r, 1.0, thr, 10) for r, thr in ((1, 100.0), (2, 50.0))]
    recs[0]["metrics"] |= {"flops_per_step": 8e9, "flops_per_sample": 1e9,
                           "achieved_tflops": 1e9 * 100 / 1e12}
    recs[1]["metrics"] |= {"flops_per_step": None, "flops_per_sample": None,
                           "achieved_tflops": None}
    df = resultset.tidy([r | {"_path": f"r{i}"} for i, r in enumerate(recs)])
    assert list(df["flops_per_sample"]) == [1e9, 1e9]
    assert list(df["achieved_tflops"]) == pytest.approx([0.1, 0.05])


def test_every_metric_of_the_vocabulary_is_a_column_and_is_pooled(records_dir):
    """A metric is defined once (vocabulary.METRICS): metrics.csv has its column and
    summary.csv its estimate with interval and n."""
    out = aggregate.aggregate(records_dir / "rec", records_dir / "out2")
    for m in V.METRICS:
        assert m.column in out["metrics"], m.column
        assert {m.column, f"{m.column}_low", f"{m.column}_high", f"{m.column}_n"} <= set(
            out["summary"].columns), m.column


def test_placement_and_process_start_become_columns(template):
    r = copy.deepcopy(template)
    r["placement"] = {"cpu_placement": "pinned", "cpu_set": [0, 1, 2, 3, 8], "host": "n1",
                      "gpu_uuid": "GPU-a", "neighbours": [{"gpu_uuid": "GPU-b", "pid": 7}]}
    r["harness"] = {"process_start_to_main_s": 0.01, "phases_s": {},
                    "process": {"start": "forked"}}
    assert resultset.conditions(r) == {"cpu_placement": "pinned", "cpu_set": "0-3,8",
                                       "neighbours": 1,
                                       "process_start": "forked"}
    old = {k: v for k, v in template.items() if k not in ("placement", "harness")}
    assert resultset.conditions(old) == {"cpu_placement": None, "cpu_set": None, "neighbours": None,
                                         "process_start": None}


def test_tokens_per_second_is_derived_once_from_the_records_tokens_per_sample(tmp_path,
                                                                               template):
    """A token workload's records say how many tokens a sample is (data.tokens_per_sample):
    tokens/s is samples/s times that, per record and pooled per cell with the same interval,
    shown beside samples/s in its tables with the unit; a workload without tokens has none."""
    for p, rep, thr in (("fp32", 1, 10.0), ("fp32", 2, 12.0), ("fp32", 3, 11.0),
                        ("amp-bf16", 1, 20.0), ("amp-bf16", 2, 22.0), ("amp-bf16", 3, 21.0)):
        r = make(template, p, rep, 1.0, thr, 100) | {"experiment": "lm"}
        r["data"] |= {"tokens_per_sample": 512}
        R.write(r, tmp_path / "rec" / "lm" / f"{p}_{rep}.json")
        R.write(make(template, p, rep, 1.0, thr, 100), tmp_path / "rec" / "e" / f"{p}_{rep}.json")
    out = aggregate.aggregate(tmp_path / "rec", tmp_path / "out")
    m = out["metrics"].set_index(["experiment", "precision", "repeat"])
    assert m.loc[("lm", "fp32", 2), "throughput_tokens_per_s"] == pytest.approx(12.0 * 512)
    assert np.isnan(m.loc[("e", "fp32", 2), "throughput_tokens_per_s"])
    s = out["summary"].set_index(["experiment", "precision"])
    lm = s.loc[("lm", "amp-bf16")]
    for end in ("", "_low", "_high"):
        assert lm[f"throughput_tokens_per_s{end}"] == pytest.approx(
            512 * lm[f"throughput_samples_per_s{end}"])
    lm_table = tables.speed_table(tables.Experiment(out["summary"], out["speedup"], "lm"))
    assert lm_table.columns[3:5] == ["samples/s", "tokens/s"]
    assert any("tokens/s is samples/s times its 512 tokens" in n for n in lm_table.notes)
    assert "tokens/s" not in tables.speed_table(tables.Experiment(out["summary"], out["speedup"],
                                                                  "e")).columns
    assert "tokens/s" in tables.speedup_table(out["speedup"]).columns


def _compiled(template, repeat, warm_s, cache):
    r = make(template, "fp32", repeat, 10.0, 100.0, 1000)
    r["metrics"] |= {"time_to_steady_s": warm_s, "compile_cache": cache}
    return r


def test_warmup_is_pooled_as_median_and_range_with_cache_misses_apart(tmp_path, template):
    """A compiled cell whose first repeat missed the cache (an old record: only counters and
    "hit") and whose others hit (current records, with the outcome): the miss is summarised
    apart, the hits as median and range, and the table shows both."""
    base = {"dir": "/c", "source": "TORCHINDUCTOR_CACHE_DIR"}
    old_miss = base | {"hit": False, "counters": {"fxgraph_cache_miss": 4}}
    hit = base | {"hit": True, "outcome": "hit", "counters": {"fxgraph_cache_hit": 4}}
    for rep, warm, cache in ((1, 46.2, old_miss), (2, 5.8, hit), (3, 7.3, hit)):
        R.write(_compiled(template, rep, warm, cache), tmp_path / "rec" / "e" / f"{rep}.json")
    out = aggregate.aggregate(tmp_path / "rec", tmp_path / "out")
    assert list(out["metrics"]["compile_cache"]) == ["miss", "hit", "hit"]
    s = out["summary"].iloc[0]
    assert (s[V.WARMUP], s[f"{V.WARMUP}_low"], s[f"{V.WARMUP}_high"], s[f"{V.WARMUP}_n"]) == \
        pytest.approx((6.55, 5.8, 7.3, 2))
    assert s[f"{V.WARMUP}_interval"] == "median-range"
    assert (s[V.WARMUP_MISS], s[f"{V.WARMUP_MISS}_n"]) == pytest.approx((46.2, 1))
    assert "time_to_steady_ratio" not in out["speedup"]     # no t interval on a warm-up
    speed = tables.experiment_tables(out["summary"], out["speedup"], "e")[0]
    row = dict(zip(speed.columns, speed.rows[0]))
    assert row[tables.WARMUP_HEAD] == "6.55 (5.80–7.30)"
    assert row[tables.WARMUP_MISS_HEAD] == "46.2 (1 run)"
    # a cell whose every run missed: its warm-up is all under the misses, none is a hit's
    for rep in (2, 3):
        R.write(_compiled(template, rep, 40.0 + rep, old_miss),
                tmp_path / "rec" / "e" / f"{rep}.json")
    out = aggregate.aggregate(tmp_path / "rec", tmp_path / "out2")
    speed = tables.experiment_tables(out["summary"], out["speedup"], "e")[0]
    row = dict(zip(speed.columns, speed.rows[0]))
    assert (row[tables.WARMUP_HEAD], row[tables.WARMUP_MISS_HEAD]) == \
        ("no hit", "43.0 (42.0–46.2)")


def test_a_job_that_compiled_nothing_is_uncompiled(records_dir):
    out = aggregate.aggregate(records_dir / "rec", records_dir / "out3")
    assert set(out["metrics"]["compile_cache"]) == {V.UNCOMPILED}
