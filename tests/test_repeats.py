"""Repeats until the interval is tight (tcbench.launch.repeats): the rule on fixture records,
the cells that adapt, and the workflow giving a wide cell real extra repeat jobs."""

from __future__ import annotations

import copy
import csv
import json
import math
import re

import pytest
import yaml
from scipy.stats import t as student_t

from conftest import copy_workflow, never_backwards, progress, snakemake
from tcbench.launch import config as tcconfig
from tcbench.launch import matrix
from tcbench.launch import repeats
from tcbench import stats
from tcbench.vocabulary import ConfigError

SETTINGS = repeats.Settings(target=0.02, max=10, looks=2)


def rec(throughput, status="ok"):
    return {"status": status,
            "metrics": {"throughput_samples_per_s": throughput} if status == "ok" else None}


def recs(*values):
    return [rec(v) for v in values]


def reports_halfwidth(values):
    """The half-width the reports print, relative to the mean: stats.estimate's interval."""
    e = stats.estimate(values)
    return (e.high - e.low) / 2 / e.value


# ------------------------------------------------------------------------------------ the rule
def test_a_tight_cell_gets_no_more_repeats():
    values = [1000.0, 1004.0, 998.0]           # ~0.7% half-width
    got = repeats.look(recs(*values), SETTINGS, 1)
    assert got["halfwidth"] == pytest.approx(reports_halfwidth(values))
    assert got["status"] == repeats.TIGHT and got["n_planned"] == 3 and not got["more"]
    assert repeats.decide(recs(*values), SETTINGS)["status"] == repeats.TIGHT


def profiled(record, kernel_s_per_step, step_s):
    """``record`` as a cell's evidence repeat: kernels busy ``kernel_s_per_step`` of a timed
    step of ``step_s``."""
    record["metrics"]["step_time_median_s"] = step_s
    record["tensor_cores"] = {"profiled": True, "gpu_busy_share_source": "timed steps",
                              "gpu_busy_share": kernel_s_per_step / step_s}
    return record


def test_a_host_bound_cell_gets_no_added_repeats_and_its_decision_says_why():
    """Bimodal, as host-bound cells on a drifting host are: wide, yet more repeats would only
    sample the host's moods again."""
    values = [354e3, 356e3, 565e3]
    records = recs(*values)
    profiled(records[0], 0.0006, 0.0014)       # busy 43%
    got = repeats.look(records, SETTINGS, 1, interleaved=True)
    assert got["status"] == repeats.HOST_BOUND and not got["more"] and got["n_planned"] == 3
    assert "busy 43% of the timed steps (< 90%)" in got["reason"]
    assert "interleaved comparison decides its ratios" in got["reason"]
    final = repeats.decide(records, SETTINGS)
    assert final["status"] == repeats.HOST_BOUND and "no interleaved comparison" in final["reason"]
    row = next(csv.DictReader(repeats.summary([final | {"experiment": "e", "cell": "c",
                                                    "n_initial": 3}]).splitlines()))
    assert row["status"] == "host-bound" and float(row["gpu_busy_share"]) == pytest.approx(0.4286,
                                                                                         rel=1e-3)
    # the same spread with the GPU busy is a wide cell like any other
    busy = recs(*values)
    profiled(busy[0], 0.00139, 0.0014)
    assert repeats.look(busy, SETTINGS, 1)["status"] == repeats.WIDE


def test_a_wide_cell_gets_as_many_as_steins_rule_asks():
    values = [1000.0, 1030.0, 970.0]           # sd 30, cv 3%: half-width 7.5%
    got = repeats.look(recs(*values), SETTINGS, 1)
    assert got["status"] == repeats.WIDE and got["more"]
    stein = math.ceil((student_t.ppf(0.975, 2) * 0.03 / 0.02) ** 2)   # 4.30 * 1.5 -> 42 -> cap
    assert got["n_planned"] == min(10, stein) == 10
    milder = [1000.0, 1010.0, 990.0]           # cv 1%: half-width 2.5%, Stein asks for 5
    got = repeats.look(recs(*milder), SETTINGS, 1)
    assert got["n_planned"] == math.ceil((student_t.ppf(0.975, 2) * 0.01 / 0.02) ** 2) == 5
    assert got["reason"].startswith("added at look 1: half-width 2.48% > target 2.00% after 3")


def test_wide_means_stein_asks_for_more_than_it_has():
    """One scale, one t: a cell wider than the target is one Stein gives more repeats."""
    for values in ([100, 101, 99], [100, 100.5, 99.5, 101, 99], [50, 51, 49.5, 50.2]):
        wide = reports_halfwidth(values) > SETTINGS.target
        assert (repeats.stein_n(values, SETTINGS.target) > len(values)) == wide


def test_a_cell_wide_at_the_cap_is_noisy_with_its_numbers():
    values = [1000.0, 1200.0, 850.0, 1100.0, 900.0, 1000.0, 1300.0, 800.0, 950.0, 1150.0]
    at_cap = repeats.look(recs(*values), SETTINGS, 2)
    assert at_cap["n_planned"] == 10 and not at_cap["more"]
    got = repeats.decide(recs(*values), SETTINGS)
    assert got["status"] == repeats.NOISY and got["n"] == 10
    assert re.match(r"noisy: half-width \d+\.\d\d% > target 2\.00% after 10 repeats, at the cap "
                    r"of 10 repeats", got["reason"])


def test_the_second_look_re_estimates_and_adds_up_to_the_cap():
    first = repeats.look(recs(1000, 1010, 990), SETTINGS, 1)
    assert first["n_planned"] == 5
    # the added repeats show more spread than the first three: look 2 asks for more
    second = repeats.look(recs(1000, 1010, 990, 1040, 960), SETTINGS, 2)
    assert second["more"] and 5 < second["n_planned"] <= 10
    assert second["reason"].startswith("added at look 2:")
    # after the last look a cell still wide but below the cap is noisy, saying so
    final = repeats.decide(recs(1000, 1010, 990, 1040, 960), SETTINGS)
    assert final["status"] == repeats.NOISY and "after 2 look(s)" in final["reason"]


@pytest.mark.parametrize("status", ["unsupported", "oom", "error", "diverged"])
def test_cells_that_did_not_run_never_get_more(status):
    records = [rec(1000.0), rec(None, status), rec(1300.0)]
    got = repeats.look(records, SETTINGS, 1)
    assert got["status"] == repeats.NOT_OK and got["n_planned"] == 3 and not got["more"]
    assert status in got["reason"]
    assert repeats.decide(records, SETTINGS)["status"] == repeats.NOT_OK


def test_identical_runs_are_tight():
    assert repeats.look(recs(500.0, 500.0, 500.0), SETTINGS, 1)["status"] == repeats.TIGHT


# ------------------------------------------------------------------------------------ the cells
BASE = {"repeats": 3, "experiments": [
    {"name": "a", "workload": "amp_recipe", "precisions": ["fp32", "tf32"], "batch_sizes": [8]},
    {"name": "one", "workload": "amp_recipe", "precisions": ["fp32"], "batch_sizes": [8],
     "repeats": 1}]}


def adaptive(extra: dict):
    cfg = tcconfig.check(copy.deepcopy(BASE | extra))
    jobs = matrix.expand(cfg)
    return repeats.cells(cfg, jobs), jobs


def test_cells_adapt_only_when_switched_on_and_started_with_three():
    off, _ = adaptive({})
    assert off == {}
    cells, jobs = adaptive({"adaptive_repeats": {"enabled": True}})
    assert sorted(cells) == ["a/fp32_bs8", "a/tf32_bs8"]   # "one" has a single repeat
    assert cells["a/fp32_bs8"].initial == 3 and len(jobs) == 7


def test_an_added_repeat_is_its_own_seed_and_cell():
    cells, jobs = adaptive({"adaptive_repeats": {"enabled": True}})
    cell = cells["a/fp32_bs8"]
    r7 = cell.job(7)
    assert r7.cell == "fp32_bs8_r7" and r7.repeat == 7
    assert dict(r7.params)["seed"] == dict(jobs["a/fp32_bs8_r1"].params)["seed"] + 6
    assert r7.group == cell.group == jobs["a/fp32_bs8_r3"].group


def test_an_experiment_sets_its_own_keys_over_the_studys():
    cfg = copy.deepcopy(BASE)
    cfg["experiments"][0]["adaptive_repeats"] = {"max": 5, "target_halfwidth": 0.05}
    cfg["experiments"].append({"name": "b", "workload": "amp_recipe", "precisions": ["fp32"],
                               "batch_sizes": [8], "adaptive_repeats": {"enabled": False}})
    cells, _ = adaptive(cfg | {"adaptive_repeats": {"enabled": True}})
    assert sorted(cells) == ["a/fp32_bs8", "a/tf32_bs8"]          # b switched itself off
    assert cells["a/fp32_bs8"].settings == repeats.Settings(0.05, 5, 2)
    only_b, _ = adaptive(cfg | {"experiments": [
        cfg["experiments"][1], cfg["experiments"][2] | {"adaptive_repeats": {"enabled": True}}]})
    assert list(only_b) == ["b/fp32_bs8"] and only_b["b/fp32_bs8"].settings.max == 10


def test_a_cap_below_the_initial_repeats_is_named():
    with pytest.raises(ConfigError, match=r"adaptive_repeats.max=2: below the 3 repeats a/"):
        adaptive({"adaptive_repeats": {"enabled": True, "max": 2}})


@pytest.mark.parametrize("bad, culprit", [({"target_halfwidth": 0}, "target_halfwidth=0"),
                                          ({"max": 1}, "max=1"),
                                          ({"looks": 0}, "looks=0"),
                                          ({"enable": True}, "adaptive_repeats.enable=True")])
def test_bad_adaptive_settings_name_the_culprit(bad, culprit):
    with pytest.raises(ConfigError, match=re.escape(culprit)):
        adaptive({"adaptive_repeats": bad})


# ------------------------------------------------------------------------------------ files
def test_the_cli_writes_a_decision_and_the_summary(tiny_record, tmp_path):
    paths = []
    for i, thr in enumerate([1000.0, 1001.0, 999.0]):
        r = copy.deepcopy(tiny_record)
        r["metrics"]["throughput_samples_per_s"] = thr
        paths.append(tmp_path / f"r{i + 1}.json")
        paths[-1].write_text(json.dumps(r))
    out = tmp_path / "repeats" / "x" / "fp32_bs8.json"
    args = ["--records", *map(str, paths), "--target", "0.02", "--max", "10", "--looks", "2",
            "--experiment", "x", "--cell", "fp32_bs8", "--n-initial", "3", "--out", str(out)]
    assert repeats.main(["decide", *args]) == 0
    decision = json.loads(out.read_text())
    assert (decision["status"], decision["n"], decision["cell"]) == (repeats.TIGHT, 3, "fp32_bs8")
    assert not list(out.parent.glob(".*"))  # written atomically: no temporary left behind
    table = tmp_path / "repeats.csv"
    assert repeats.main(["summary", "--decisions", str(out), "--out", str(table)]) == 0
    row = next(csv.DictReader(table.open()))
    assert row["status"] == "tight" and row["n"] == "3" and row["target"] == "0.02"
    assert float(row["halfwidth"]) == pytest.approx(reports_halfwidth([1000, 1001, 999]), 1e-5)


# ------------------------------------------------------------------------------------ workflow
ADAPT = {"run": "adapt", "require_gpu": False, "repeats": 3, "calibrate": {"enabled": False},
         "experiments": [{"name": "tiny", "workload": "amp_recipe",
                          "precisions": ["fp32", "tf32"], "batch_sizes": [8],
                          "params": {"in_size": 16, "out_size": 16, "num_batches": 2,
                                     "epochs": 1, "warmup_steps": 1}}]}


@pytest.mark.slow
def test_a_wide_cell_gets_extra_repeat_jobs_and_a_failing_one_none(tmp_path):
    """A target no CPU job can meet: fp32 is wide after 3 and gets repeat jobs up to the cap;
    tf32 (unsupported on a CPU) gets none. Off, the same study runs exactly 3 a cell."""
    wd = copy_workflow(tmp_path / "wf")
    (wd / "config" / "adapt.yaml").write_text(yaml.safe_dump(ADAPT | {"adaptive_repeats": {
        "enabled": True, "target_halfwidth": 1e-6, "max": 4}}))
    (wd / "config" / "fixed.yaml").write_text(yaml.safe_dump(ADAPT | {"adaptive_repeats": {
        "enabled": False}}))
    fixed = snakemake(wd, "-n", "--configfile", "config/fixed.yaml").stdout
    assert re.search(r"^train\s+6$", fixed, re.M) and "repeats_look" not in fixed
    proc = snakemake(wd, "--cores", "2", "--configfile", "config/adapt.yaml")
    res = wd / "results" / "adapt"
    assert sorted(p.name for p in (res / "records" / "tiny").glob("fp32_*.json")) == [
        f"fp32_bs8_r{r}.json" for r in (1, 2, 3, 4)]
    assert len(list((res / "records" / "tiny").glob("tf32_*.json"))) == 3
    r4 = json.loads((res / "records" / "tiny" / "fp32_bs8_r4.json").read_text())
    assert r4["repeat_reason"].startswith("added at look 1: half-width")
    assert r4["seed"] == json.loads((res / "records/tiny/fp32_bs8_r1.json").read_text())[
        "seed"] + 3
    assert json.loads((res / "records/tiny/fp32_bs8_r2.json").read_text())[
        "repeat_reason"] == "initial"
    rows = {r["cell"]: r for r in csv.DictReader((res / "repeats.csv").open())}
    assert (rows["fp32_bs8"]["status"], rows["fp32_bs8"]["n"]) == ("noisy", "4")
    assert (rows["tf32_bs8"]["status"], rows["tf32_bs8"]["n"]) == ("not-ok", "3")
    metrics = list(csv.DictReader((res / "metrics.csv").open()))
    assert "fp32_bs8_r4" in {m["cell"] for m in metrics}  # the aggregate took the added one
    again = snakemake(wd, "-n", "--configfile", "config/adapt.yaml")
    assert "Nothing to be done" in again.stdout + again.stderr, proc.stdout[-2000:]
    # the start said how many jobs the adaptive repeats may add; as they were added (one to
    # fp32) and ruled out (tf32's), neither progress count went backwards
    said = proc.stdout + proc.stderr
    assert "6 measuring job(s) to run; the adaptive repeats may add up to 2 more (2 cell(s) " \
        "still wider than ±0.0001% after 3 repeats get more, up to 4 a cell)" in said
    counts = progress(said)
    assert never_backwards(counts["steps"]) and never_backwards(counts["jobs"]), counts
    assert counts["steps"][0][1] > counts["steps"][-1][1] and counts["jobs"][-1] == (7, 7)


def test_a_config_given_over_the_base_runs_its_own_repeats_unless_it_says_otherwise():
    """config/config.yaml's adaptive repeats are its own study's: a user's config with
    `repeats: 3` given over it (--configfile) runs three jobs a cell, one that says
    adaptive_repeats (in its file or on the command line) gets what it says, and the base
    config alone keeps its own."""
    from conftest import REPO

    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    mine = {"repeats": 3, "require_gpu": False, "experiments": [
        {"name": "mine", "workload": "amp_recipe", "precisions": ["fp32", "amp-bf16"],
         "batch_sizes": [8]}]}

    def cells(given, overrides=None):
        cfg = copy.deepcopy(base) | copy.deepcopy(given[0] if given else {})
        if overrides:
            cfg |= overrides
        cfg = tcconfig.check(tcconfig.own_settings(cfg, given, overrides))
        return repeats.cells(cfg, matrix.expand(cfg)), matrix.expand(cfg)

    adaptive, jobs = cells([mine])
    assert adaptive == {} and len(jobs) == 2 * 3
    assert len(cells([mine | {"adaptive_repeats": {"enabled": True}}])[0]) == 2
    assert len(cells([mine], {"adaptive_repeats": {"enabled": True}})[0]) == 2
    own = {e["name"] for e in base["experiments"]
           if (e.get("adaptive_repeats") or {}).get("enabled", True)}
    assert {c.experiment for c in cells([])[0].values()} == own
