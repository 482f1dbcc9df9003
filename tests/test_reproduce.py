"""The reproduction check (``analysis.reproduce``, ``reports.reproduce``, rule ``reproduce``) on
planted result sets: the synthetic GPU-shaped set of ``gpu_like`` as the reference, and a rerun
made from the same runs through the real summary and speedup code, changed where a test says.
Every estimate inside and every claim the same where nothing changed; an estimate outside; a
claim changed; cells of one set only; another GPU model refused; the between-run tolerance
measured from the two sets and capped at 1%; the summary line's counts; the rule end to end."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest

import gpu_like
from conftest import REPO, copy_workflow, snakemake
from figure_text import problems
from tcbench import stats
from tcbench import vocabulary as V
from tcbench.analysis import interleaved
from tcbench.analysis import reproduce
from tcbench.analysis.speedup import speedup
from tcbench.analysis.summarise import summarise
from tcbench.references import CompareError
from tcbench.reports import reproduce as reproduce_report
from tcbench.reports.reproduce_figure import figure
from tcbench.render.numbers import one_process_note

AMP = {"experiment": "amp_recipe", "workload": "amp_recipe", "data": "synthetic",
       "batch_size": 512, "model": "amp_recipe", "loader": "synthetic",
       "memory_format": "contiguous", "compile": "off", "cuda_graphs": "off",
       "cudnn_benchmark": "off", "setting": "bs512"}
# the recipe's arms against fp32, interleaved: ratio, low, high (every one pays off)
ARMS = {"tf32": (2.6, 2.5, 2.7), "amp-fp16": (2.9, 2.8, 3.0), "amp-bf16": (2.8, 2.7, 2.9)}


def interleaved_ratios(run: str, arms: dict = ARMS) -> pd.DataFrame:
    rows = [AMP | {"run": run, "precision": p, "baseline": V.BASELINE, "ratio": r,
                   "ratio_low": lo, "ratio_high": hi, "ratio_n": 20,
                   "ratio_interval": stats.PAIRED, "rounds": 20, "status": V.OK}
            for p, (r, lo, hi) in arms.items()]
    return pd.DataFrame(rows, columns=interleaved.RATIO_COLUMNS)


def planted(folder, run: str, edit=None, arms: dict = ARMS):
    """A result set's four tables under ``folder``, from the synthetic runs (``edit``-ed:
    a function of the metrics frame) through the real summary and speedup code."""
    df = gpu_like.metrics(0)
    df["run"] = run
    if edit is not None:
        df = edit(df)
    il = interleaved_ratios(run, arms)
    summary = summarise(df)
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in (("metrics", df), ("summary", summary),
                        ("speedup", speedup(df, summary, il)), ("interleaved", il)):
        table.to_csv(folder / V.SET_TABLES[name], index=False)
    return folder


def scaled(where, factor: float):
    """An edit: the throughput of the runs ``where`` selects, times ``factor``."""
    def edit(df):
        rows = where(df)
        df.loc[rows, V.HEADLINE] = df.loc[rows, V.HEADLINE] * factor
        return df
    return edit


def check(tmp_path, edit=None, arms: dict = ARMS, both=None):
    """The check of a rerun (its runs ``edit``-ed) against the reference; ``both``: an edit
    of both sets' runs, made first."""
    ref = planted(tmp_path / "ref", "nvidia-planted", both)
    new = planted(tmp_path / "new", "nvidia-planted-rerun",
                  edit if both is None else lambda df: (edit or (lambda d: d))(both(df)), arms)
    return reproduce_report.build(new, ref)


def rows(frame, kind, **keys) -> pd.DataFrame:
    out = frame[frame["kind"] == kind]
    for k, v in keys.items():
        out = out[out[k].astype(str) == str(v)]
    return out


def one(frame, kind, **keys) -> pd.Series:
    found = rows(frame, kind, **keys)
    assert len(found) == 1, found
    return found.iloc[0]


RESNET_AMP16 = {"experiment": "resnet50", "precision": "amp-fp16", "batch_size": 64}


# ------------------------------------------------------------------------------ the check
def test_a_rerun_of_the_same_runs_is_inside_everywhere_and_claims_the_same(tmp_path):
    frame, tol, ref, new = check(tmp_path)
    assert set(frame["outcome"]) == {reproduce.INSIDE, reproduce.NO_INTERVAL, reproduce.SAME}
    t = reproduce.tally(frame)
    for kind in reproduce.ESTIMATED:
        assert t[kind][reproduce.INSIDE] > 0, kind
    assert t[reproduce.INTERLEAVED][reproduce.INSIDE] == len(ARMS)
    # every claim of the verdict's answer, one per experiment (per model in the zoo)
    assert t[reproduce.ANSWER][reproduce.SAME] == len(reproduce_report.answers(ref)) > 5
    assert tol.measured == 0 and tol.cells > 0
    n_in, n_same = (sum(t[k][o] for k in ks) for ks, o in ((reproduce.ESTIMATED, reproduce.INSIDE),
                                                           (reproduce.CLAIMED, reproduce.SAME)))
    assert reproduce_report.summary_line(frame).startswith(
        f"{n_in} of {n_in} rerun estimates inside the reference's 95% interval; "
        f"{n_same} of {n_same} claims the same.")
    assert "Nothing: every rerun estimate" in reproduce_report.markdown(frame, tol, ref, new)


def test_a_range_or_a_single_run_is_no_interval_never_inside(tmp_path):
    frame, *_ = check(tmp_path)
    # mnist_loaders has two repeats a cell (a range), mnist_seed one (a single run)
    for exp in ("mnist_loaders", "mnist_seed"):
        found = rows(frame, reproduce.THROUGHPUT, experiment=exp)
        assert len(found) and set(found["outcome"]) == {reproduce.NO_INTERVAL}
        assert found["inside"].isna().all()
    assert set(rows(frame, reproduce.THROUGHPUT,
                    experiment="mnist_seed")["reference_interval"]) == \
        {stats.SINGLE}


def resnet_amp16(df):
    return (df["experiment"] == "resnet50") & (df["precision"] == "amp-fp16") & \
        (df["batch_size"] == 64)


def test_an_estimate_outside_the_reference_interval(tmp_path):
    frame, tol, ref, new = check(tmp_path, scaled(resnet_amp16, 0.8))
    for kind in (reproduce.THROUGHPUT, reproduce.PER_PROCESS):
        r = one(frame, kind, **RESNET_AMP16, **({"baseline": V.BASELINE}
                                                if kind == reproduce.PER_PROCESS else {}))
        assert r["outcome"] == reproduce.OUTSIDE and r["inside"] == False  # noqa: E712
        assert r["relative_difference"] == pytest.approx(-0.2)
    assert one(frame, reproduce.THROUGHPUT,
               **RESNET_AMP16)["within_tolerance"] == False  # noqa: E712
    others = rows(frame, reproduce.THROUGHPUT, experiment="resnet50")
    assert (others["outcome"] == reproduce.OUTSIDE).sum() == 1
    md = reproduce_report.markdown(frame, tol, ref, new)
    failed = md.split("## What did not reproduce")[1].split("\n## ")[0]
    assert "| throughput | resnet50 | bs 64 | amp-fp16 | samples/s |" in failed
    assert "−20.00%" in failed or "-20.00%" in failed
    # the planted interleaved ratios rest on one process each: marked, and the mark said
    assert V.ONE_PROCESS_MARK in md.split("## How to read it")[0]
    assert md.rstrip().endswith(one_process_note())


def test_a_changed_claim_of_a_judged_ratio_and_of_the_answer(tmp_path):
    level = {p: (1.0, 0.985, 1.015) for p in ARMS}     # every arm equivalent within ±3%
    frame, *_ = check(tmp_path, arms=level)
    for p in ARMS:
        c = one(frame, reproduce.CLAIM, experiment="amp_recipe", precision=p)
        assert (c["reference_claim"], c["rerun_claim"], c["outcome"]) == \
            (stats.PAYS_OFF, stats.EQUIVALENT, reproduce.CHANGED)
        assert c["reference_basis"] == c["rerun_basis"] == "interleaved"
        assert one(frame, reproduce.INTERLEAVED, experiment="amp_recipe",
                   precision=p)["outcome"] == \
            reproduce.OUTSIDE
    a = one(frame, reproduce.ANSWER, experiment="amp_recipe")
    assert (a["reference_claim"], a["rerun_claim"], a["outcome"]) == \
        (stats.PAYS_OFF, stats.EQUIVALENT, reproduce.CHANGED)
    assert set(rows(frame, reproduce.ANSWER)["outcome"]) == {reproduce.SAME, reproduce.CHANGED}
    assert reproduce.tally(frame)[reproduce.CLAIM][reproduce.CHANGED] == len(ARMS)


def test_cells_of_one_set_only_are_listed_and_not_counted(tmp_path):
    def edit(df):
        gone = (df["experiment"] == "resnet50") & (df["precision"] == "tf32") & \
            (df["batch_size"] == 64)
        extra = df[df["experiment"] == "resnet50_fast"].assign(experiment="resnet50_faster")
        return pd.concat([df[~gone], extra], ignore_index=True)
    frame, tol, ref, new = check(tmp_path, edit)
    gone = rows(frame, reproduce.THROUGHPUT, experiment="resnet50", precision="tf32", batch_size=64)
    assert list(gone["outcome"]) == [reproduce.ONLY_REFERENCE] and gone["rerun"].isna().all()
    assert one(frame, reproduce.PER_PROCESS, experiment="resnet50", precision="tf32",
               batch_size=64)["outcome"] == reproduce.ONLY_REFERENCE
    added = rows(frame, reproduce.THROUGHPUT, experiment="resnet50_faster")
    assert len(added) == 3 and set(added["outcome"]) == {reproduce.ONLY_RERUN}
    t = reproduce.tally(frame)
    speeds = t[reproduce.THROUGHPUT]
    assert speeds[reproduce.ONLY_REFERENCE] == 1 and speeds[reproduce.ONLY_RERUN] == 3
    assert t[reproduce.THROUGHPUT][reproduce.OUTSIDE] == 0
    only = sum(t[k][o] for k in t for o in (reproduce.ONLY_REFERENCE, reproduce.ONLY_RERUN))
    line = reproduce_report.summary_line(frame)
    n_in = sum(t[k][reproduce.INSIDE] for k in reproduce.ESTIMATED)
    assert line.startswith(f"{n_in} of {n_in} rerun estimates inside")
    rerun_only = sum(t[k][reproduce.ONLY_RERUN] for k in t)
    assert f"In one set only, not counted: {only - rerun_only} " \
           f"quantities only in the reference, {rerun_only} only in " \
           f"the rerun." in line
    md = reproduce_report.markdown(frame, tol, ref, new)
    assert "## In one set only" in md and "| resnet50_faster |" in md


def test_another_gpu_model_is_refused_pointing_to_compare(tmp_path, capsys):
    ref = planted(tmp_path / "ref", "nvidia-planted")
    new = planted(tmp_path / "new", "nvidia-planted-rerun",
                  lambda df: df.assign(device_name="NVIDIA A100-SXM4-80GB"))
    with pytest.raises(CompareError, match="another GPU model is compared, not reproduced; "
                                           "use snakemake compare"):
        reproduce_report.build(new, ref)
    assert reproduce_report.main([str(new), "--reference", str(ref), "--out",
                                  str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NVIDIA A100-SXM4-80GB" in err and "NVIDIA H200" in err
    assert not (tmp_path / "o").exists()


def test_a_set_without_its_tables_is_named(tmp_path):
    ref = planted(tmp_path / "ref", "nvidia-planted")
    (ref / V.SET_TABLES["speedup"]).unlink()
    with pytest.raises(CompareError, match=f"{ref / 'speedup.csv'}: no such table"):
        reproduce.load(ref)


def test_the_rules_reference_is_checked_before_anything_is_read(tmp_path):
    """What rule reproduce asks for its input: the reference's tables, each refusal naming the
    culprit and what to do."""
    results = tmp_path / "results"
    ref = planted(results / "nvidia-planted", "nvidia-planted")
    check = lambda reference: reproduce.reference_tables(reference, "nvidia-planted-rerun",
                                                         results)  # noqa: E731
    assert check("nvidia-planted") == [str(ref / V.SET_TABLES[t]) for t in
                                       ("metrics", "summary", "speedup", "interleaved")]
    for reference, said in ((None, "needs the set to check against: --config reference="),
                            ("nvidia-planted-rerun", "is the rerun's own set"),
                            ("nvidia-none", f"reference='nvidia-none': "
                                            f"{results / 'nvidia-none' / 'metrics.csv'}: no such "
                                            f"table")):
        with pytest.raises(CompareError, match=re.escape(said)):
            check(reference)
    (ref / V.SET_TABLES["interleaved"]).unlink()       # a set made before interleaved ones
    assert check("nvidia-planted")[-1] == str(ref / V.SET_TABLES["speedup"])
    planted(results / "nvidia-planted-rerun", "nvidia-planted-rerun",
            lambda df: df.assign(device_name="NVIDIA A100-SXM4-80GB"))
    with pytest.raises(CompareError, match="another GPU model is compared"):
        check("nvidia-planted")


GPU_BOUND = ("resnet50", "resnet50_fast", "zoo")      # busy >= 90% in gpu_like, every cell


def gpu_bound(df):
    return df["experiment"].isin(GPU_BOUND) | ((df["experiment"] == "amp_recipe")
                                               & (df["precision"] == V.BASELINE))


TIGHT = {"experiment": "resnet50", "precision": "tf32", "batch_size": 64}


def tight(df):
    """An edit: one GPU-bound cell whose three runs agree within 0.1%."""
    rows = (df["experiment"] == "resnet50") & (df["precision"] == "tf32") & \
        (df["batch_size"] == 64)
    df.loc[rows, V.HEADLINE] = [1000.0, 1000.5, 1001.0]
    return df


def test_the_tolerance_is_the_gpu_bound_cells_median_shift(tmp_path):
    """GPU-bound cells 0.4% faster, host-bound ones 30% faster: the tolerance is 0.4%, from
    the GPU-bound cells alone, and admits a GPU-bound cell that is outside its tight interval."""
    host_bound = lambda df: df["experiment"].isin(["digits", "mnist_loaders"])  # noqa: E731
    frame, tol, *_ = check(tmp_path, lambda df: scaled(host_bound, 1.3)(
        scaled(gpu_bound, 1.004)(df)), both=tight)
    ref = pd.read_csv(tmp_path / "ref" / "summary.csv")
    busy = ref[(ref["gpu_busy_share"] >= V.HOST_BOUND_BUSY_SHARE) & ref[V.HEADLINE].notna()]
    assert tol.cells == len(busy) and set(busy["experiment"]) == {*GPU_BOUND, "amp_recipe"}
    assert tol.measured == pytest.approx(0.004) and tol.value == pytest.approx(0.004)
    assert not tol.capped
    held = one(frame, reproduce.THROUGHPUT, **TIGHT)
    assert (held["outcome"], held["within_tolerance"]) == (reproduce.OUTSIDE, True)
    shifted = rows(frame, reproduce.THROUGHPUT)
    shifted = shifted[shifted["experiment"].isin(GPU_BOUND) & shifted["inside"].notna()]
    assert shifted["within_tolerance"].all()
    host = rows(frame, reproduce.THROUGHPUT, experiment="digits").dropna(subset=["inside"])
    assert len(host) and not host["within_tolerance"].any()
    assert "Between-run tolerance: ±0.40%" in reproduce_report.tolerance_line(frame, tol)


def test_host_bound_throughputs_are_named_with_the_two_hosts_speed(tmp_path):
    """A rerun on a host half as fast: its host-bound cells run 30% slower and miss the
    reference's intervals; the report names them host-bound and gives both hosts' probe."""
    host = lambda df: df["experiment"].isin(["digits", "mnist_loaders"])  # noqa: E731

    def slower_host(df):
        df = scaled(host, 0.7)(df)
        df["host_probe_ops_per_s"] = 150_000.0
        return df

    def probed(df):
        df["host_probe_ops_per_s"] = 300_000.0
        return df

    frame, tol, ref, new = check(tmp_path, slower_host, both=probed)
    assert reproduce.host_speed(ref) == 300_000 and reproduce.host_speed(new) == 150_000
    missed = rows(frame, reproduce.THROUGHPUT)
    missed = missed[missed["outcome"].eq(reproduce.OUTSIDE) & ~missed["within_tolerance"].eq(True)]
    assert len(missed) and missed["host_bound"].all()
    assert not rows(frame, reproduce.THROUGHPUT, experiment="resnet50")["host_bound"].any()
    line = reproduce_report.host_line(frame, ref, new)
    assert "300,000 ops/s in the reference and 150,000 in the rerun (0.500×)" in line
    assert f"{len(missed)} of the {len(missed)} throughputs outside" in line
    assert "host-bound" in reproduce_report.markdown(frame, tol, ref, new).split("## In one set")[0]


def test_the_tolerance_is_capped_at_one_percent(tmp_path):
    frame, tol, ref, new = check(tmp_path, scaled(gpu_bound, 1.2))
    assert tol.measured == pytest.approx(0.2)
    assert tol.value == reproduce.TOLERANCE_CAP == 0.01 and tol.capped
    assert not rows(frame, reproduce.THROUGHPUT, experiment="resnet50")["within_tolerance"] \
        .dropna().any()
    said = reproduce_report.tolerance_line(frame, tol)
    assert said.startswith("Between-run tolerance: ±1.00% (measured 20.00%, capped)")
    assert "capped at 1%" in said


def test_no_gpu_bound_cell_in_both_sets_measures_no_tolerance(tmp_path):
    frame, tol, *_ = check(tmp_path, lambda df: df[~gpu_bound(df)])
    assert tol.measured is None and tol.value is None and tol.cells == 0
    assert frame["within_tolerance"].isna().all()
    assert reproduce_report.tolerance_line(frame,
                                           tol).startswith("Between-run tolerance: not measured")


def test_the_summary_line_counts_each_kind():
    planted_outcomes = {reproduce.THROUGHPUT: [reproduce.INSIDE] * 5 + [reproduce.OUTSIDE,
                                                                        reproduce.NO_INTERVAL,
                                                         reproduce.ONLY_REFERENCE],
                        reproduce.PER_PROCESS: [reproduce.INSIDE] * 3 + [reproduce.OUTSIDE] * 2,
                        reproduce.INTERLEAVED: [reproduce.INSIDE, reproduce.ONLY_RERUN],
                        reproduce.CLAIM: [reproduce.SAME] * 4 + [reproduce.COMPATIBLE,
                                                                 reproduce.CHANGED],
                        reproduce.ANSWER: [reproduce.SAME, reproduce.SAME,
                                           reproduce.ONLY_REFERENCE]}
    frame = pd.DataFrame([{"kind": k, "outcome": o} for k, os in planted_outcomes.items()
                          for o in os], columns=reproduce.COLUMNS)
    assert reproduce_report.summary_line(frame) == (
        "9 of 12 rerun estimates inside the reference's 95% interval; 6 of 8 claims the same. "
        "Estimates inside: throughputs 5 of 6, per-process ratios 3 of 5, interleaved ratios "
        "1 of 1; claims the same: judged ratios 4 of 6, the answer per experiment 2 of 2. "
        "Of the claims not the same, 1 is compatible (both can hold: one side's interval "
        "clears a threshold the other's does not) and 1 contradicts (no ratio satisfies "
        "both). 1 estimate with no confidence interval on one side or both (a range, a single "
        "run, two modes) not counted. In one set only, not counted: 2 quantities only in the "
        "reference, 1 only in the rerun.")


def test_a_claim_decided_otherwise_in_the_rerun_is_the_same_claim_on_other_evidence(tmp_path):
    """The reference decided the recipe's arms by its interleaved comparison; a rerun without
    one decides them by its repeats (host-bound: not judged), and says so, the claim keyed
    alike on both sides."""
    frame, *_ = check(tmp_path, arms={})
    c = one(frame, reproduce.CLAIM, experiment="amp_recipe", precision="amp-bf16")
    assert (c["reference_basis"], c["rerun_basis"]) == ("interleaved", "repeats")
    # a rerun that could not judge it does not contradict the reference's claim
    assert (c["rerun_claim"], c["outcome"]) == (stats.HOST_BOUND, reproduce.COMPATIBLE)
    assert set(rows(frame, reproduce.INTERLEAVED)["outcome"]) == {reproduce.ONLY_REFERENCE}


# --------------------------------------------------------------------------- files, figure
def test_the_files_and_a_figure_whose_text_never_overlaps(tmp_path):
    ref = planted(tmp_path / "ref", "nvidia-planted")
    new = planted(tmp_path / "new", "nvidia-planted-rerun",
                  lambda df: scaled(resnet_amp16, 0.7)(scaled(gpu_bound, 1.003)(df)))
    out = tmp_path / "out"
    assert reproduce_report.main([str(new), "--reference", str(ref), "--out", str(out)]) == 0
    csv = pd.read_csv(out / V.REPRODUCE_FILES["csv"])
    assert list(csv.columns) == reproduce.COLUMNS and set(csv["kind"]) == {*reproduce.ESTIMATED,
                                                                           *reproduce.CLAIMED}
    md = (out / V.REPRODUCE_FILES["md"]).read_text()
    assert md.startswith("# Reproduction check: `nvidia-planted-rerun` against "
                         "`nvidia-planted`")
    assert re.search(r"\*\*\d+ of \d+ rerun estimates inside the reference's 95% interval; "
                     r"\d+ of \d+ claims the same\.", md)
    for ext in V.FIGURE_FORMATS:
        assert (out / "figures" / f"{V.REPRODUCE_FIGURE}.{ext}").stat().st_size > 1000
    frame, tol, r, n = reproduce_report.build(new, ref)
    fig = figure(frame, tol, n.run, r.run)
    assert problems(fig) == []
    assert [ax.get_title().split(" (")[0] for ax in fig.axes] == \
        ["throughputs", "per-process ratios", "interleaved ratios"]


def test_nothing_in_both_sets_is_a_note_not_a_figure(tmp_path):
    frame, tol, *_ = check(tmp_path)
    none = frame.assign(relative_difference=None)
    assert "nothing to set against the reference" in figure(none, tol, "a", "b").reason


@pytest.mark.slow
def test_the_committed_set_against_itself_reproduces_everything(tmp_path):
    """The committed H200 set checked against a copy of itself under another name."""
    src = REPO / "results" / "nvidia-h200"
    if not (src / "summary.csv").exists():
        pytest.skip("no committed H200 set")
    copy = tmp_path / "nvidia-h200-copy"
    copy.mkdir()
    for name in ("metrics", "summary", "speedup", "interleaved"):
        shutil.copy(src / V.SET_TABLES[name], copy / V.SET_TABLES[name])
    frame, tol, *_ = reproduce_report.build(copy, src)
    assert set(frame["outcome"]) <= {reproduce.INSIDE, reproduce.NO_INTERVAL, reproduce.SAME}
    assert reproduce.tally(frame)[reproduce.ANSWER][reproduce.SAME] > 10


# --------------------------------------------------------------------------------- the rule
@pytest.mark.slow
def test_the_rule_checks_a_rerun_from_tables_alone_and_refuses_another_gpu(tmp_path):
    """Two planted sets, no records, the GPU study's config (require_gpu: true) on a machine
    without a GPU: only the reproduce job runs and writes into the rerun's set; a bad or
    missing reference, or one of another GPU model, stops it before any job."""
    wd = copy_workflow(tmp_path / "wf")
    results = wd / "results"
    planted(results / "nvidia-planted", "nvidia-planted")
    rerun = planted(results / "nvidia-planted-rerun", "nvidia-planted-rerun",
                    scaled(lambda df: df["experiment"] == "resnet50", 0.8))
    args = ("reproduce", "--cores", "1", "--config", "run=nvidia-planted-rerun")
    plan = snakemake(wd, *args, "reference=nvidia-planted", "-n").stdout
    jobs = re.findall(r"^(\w+)\s+\d+$", plan.split("Job stats:")[1], re.M)
    assert [j for j in jobs if j != "total"] == ["reproduce"]
    proc = snakemake(wd, *args, "reference=nvidia-planted")
    md = (rerun / V.REPRODUCE_FILES["md"]).read_text()
    failed = md.split("## What did not reproduce")[1].split("\n## ")[0]
    assert "| resnet50 | bs 64 | tf32 | samples/s |" in failed   # only throughputs: no kind
    assert "| zoo |" not in failed
    assert (rerun / "figures" / f"{V.REPRODUCE_FIGURE}.png").exists()
    assert "Reproduced: results/nvidia-planted-rerun/reproduce.md" in proc.stdout + proc.stderr
    for extra, said in (((), "needs the set to check against: --config reference=<name>"),
                        (("reference=nvidia-none",), "results/nvidia-none/metrics.csv: no "
                                                     "such table"),
                        (("reference=nvidia-planted-rerun",), "is the rerun's own set")):
        proc = snakemake(wd, *args, *extra, "-n", check=False)
        assert proc.returncode != 0 and said in proc.stdout + proc.stderr, extra
    metrics = rerun / V.SET_TABLES["metrics"]
    metrics.write_text(metrics.read_text().replace("NVIDIA H200", "NVIDIA A100-SXM4-80GB"))
    proc = snakemake(wd, *args, "reference=nvidia-planted", "-n", check=False)
    assert proc.returncode != 0
    assert "another GPU model is compared, not reproduced; use snakemake compare" in \
        proc.stdout + proc.stderr
