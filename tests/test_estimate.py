"""How long a study takes (tcbench.launch.estimate): jobs priced from planted benchmark files and
records, interleaved processes scaled by their rounds, the device named whose measurements price
them, the adaptive repeats' worst case with the line that turns them off, and a progress line
whose total never grows while its share never falls."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tcbench.launch import estimate
from tcbench.launch import matrix
from tcbench.launch import repeats

PARAMS = {"seed": 0, "in_size": 16, "epochs": 1}


def plant(folder: Path, kind: str, key: str, seconds: float, record: dict) -> None:
    """A measured job: Snakemake's benchmark file and the record beside it."""
    records = "records" if kind == "train" else "interleaved"
    bench = folder / "benchmarks" / kind / f"{key}.tsv"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:{int(seconds):02d}\t25.3\n")
    path = folder / records / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def train(folder, key, seconds, precision="fp32", bs=8, **params):
    plant(folder, "train", key, seconds, {"workload": "amp_recipe", "precision": precision,
                                          "batch_size": bs, "params": PARAMS | params})


def job(experiment="exp", precision="fp32", bs=8, repeat=1, **params):
    p = PARAMS | {"seed": repeat - 1} | params
    return matrix.Cell(experiment, f"{precision}_bs{bs}_r{repeat}", "amp_recipe", precision, bs,
                       repeat, tuple(sorted(p.items())))


def comparison(rounds=20, segment_s=0.1, replicate=1):
    return matrix.Comparison("exp", "bs8", "amp_recipe", 8, ("fp32", "amp-bf16"),
                             tuple(sorted(PARAMS.items())),
                             tuple(sorted({"rounds": rounds, "segment_s": segment_s}.items())),
                             replicate)


def test_a_job_is_priced_by_the_jobs_measured_like_it(tmp_path):
    """The median of the alike jobs, whatever their experiment's name or seed; a parameter
    only one side has is no difference (one added since); one that differs is."""
    for r, s in enumerate((10.0, 12.0, 30.0), 1):
        train(tmp_path, f"other_name/fp32_bs8_r{r}", s, seed=r - 1)
    train(tmp_path, "other_name/fp32_bs16_r1", 99.0, bs=16)
    book = estimate.Book("dev", True, [tmp_path], estimate.measured(tmp_path))
    assert book.price(estimate.task(job(repeat=5))) == 12.0
    assert book.price(estimate.task(job(new_knob=3))) == 12.0
    assert book.price(estimate.task(job(epochs=3))) is None
    assert book.price(estimate.task(job(precision="amp-bf16"))) is None
    assert estimate.seconds(tmp_path / "benchmarks/train/other_name/fp32_bs16_r1.tsv") == 99.0


def test_a_model_is_priced_at_another_setting_where_none_is_alike(tmp_path):
    train(tmp_path, "zoo/fp32_bs8_resnet18_r1", 40.0, model="resnet18",
          memory_format="channels_last")
    book = estimate.Book("dev", True, [tmp_path], estimate.measured(tmp_path))
    assert book.price(estimate.task(job(model="resnet18", memory_format="contiguous"))) == 40.0
    assert book.price(estimate.task(job(model="vit_b_16", memory_format="contiguous"))) is None
    assert book.price(estimate.task(job(memory_format="contiguous"))) is None   # no model to go by


def test_an_interleaved_process_is_scaled_to_its_rounds(tmp_path):
    """The rounds' phase scales with rounds x segment length, the rest stays as measured: a
    process of 60 rounds, 24 s of its 30 in its rounds, prices one of 20 rounds at 6 + 8."""
    plant(tmp_path, "interleave", "exp/bs8_r1", 30.0, {
        "workload": "amp_recipe", "batch_size": 8, "precisions": ["fp32", "amp-bf16"],
        "params": PARAMS, "protocol": {"rounds": 60, "segment_s": 0.1},
        "harness": {"phases_s": {"building": 1.0, "measurement_steps": 24.0}}})
    book = estimate.Book("dev", True, [tmp_path], estimate.measured(tmp_path))
    assert book.price(estimate.task(comparison(rounds=20, replicate=3))) == pytest.approx(14.0)
    assert book.price(estimate.task(comparison(rounds=20, segment_s=0.2))) == pytest.approx(22.0)
    assert book.price(estimate.task(comparison(rounds=60))) == pytest.approx(30.0)
    lines = estimate.summary([estimate.task(comparison())], [], book)
    assert lines[-1] == ("  its interleaved comparisons measured in processes of 60 rounds, "
                         "their rounds' time scaled to 20 rounds")


def test_this_devices_measurements_first_else_the_device_that_prices_most(tmp_path):
    results = tmp_path / "results"
    train(results / "nvidia-h200", "exp/fp32_bs8_r1", 6.0)
    train(results / "bench" / "cpu-amd-epyc" / "smoke", "exp/fp32_bs8_r1", 60.0, epochs=2)
    shelf = estimate.books(results, "smoke-cpu-amd-epyc", "cpu-amd-epyc")
    assert [(b.device, b.here) for b in shelf] == [("cpu-amd-epyc", True),
                                                   ("nvidia-h200", False)]
    here, there = estimate.choose([estimate.task(job())], shelf)
    assert here.price(estimate.task(job())) is None and there.device == "nvidia-h200"
    lines = estimate.estimate([estimate.task(job())], [], shelf, "", others=4)
    assert lines[1:] == [
        "  1 measuring job(s) to run",
        "  this device (cpu-amd-epyc) has measured none of them: its time is unknown until "
        "they run (the progress line then prices the rest)",
        f"  on nvidia-h200 ({results / 'nvidia-h200'}/): about 6 s",
        "  plus 4 job(s) not timed (calibration, tables, figures, reports)"]
    # measured here: priced here, and no other device is asked
    train(results / "smoke-cpu-amd-epyc", "exp/fp32_bs8_r1", 50.0)
    shelf = estimate.books(results, "smoke-cpu-amd-epyc", "cpu-amd-epyc")
    assert estimate.choose([estimate.task(job())], shelf)[1] is None
    assert estimate.estimate([estimate.task(job())], [], shelf, "", others=0)[2] == \
        f"  on this device ({results / 'smoke-cpu-amd-epyc'}/, {results}/bench/cpu-amd-epyc/" \
        f"smoke/): about 50 s"
    assert estimate.device_of("smoke-cpu-amd-epyc") == "cpu-amd-epyc"
    assert estimate.device_of("mine") is None
    assert estimate.device_of("nvidia-h200") == "nvidia-h200"


def test_the_adaptive_repeats_worst_case_says_why_and_how_to_turn_it_off(tmp_path):
    train(tmp_path / "mine", "exp/fp32_bs8_r1", 60.0)
    shelf = estimate.books(tmp_path, "mine", "cpu-x")
    cell = repeats.Cell("exp", "fp32_bs8", 3, job(), repeats.Settings(0.02, 10, 2))
    firm = [estimate.task(job(repeat=r)) for r in (1, 2, 3)]
    extra = [estimate.task(cell.job(r)) for r in range(4, 11)]
    lines = estimate.estimate([*firm, estimate.task(job(epochs=9))], extra, shelf,
                              estimate.adaptive_words([cell]), others=0)
    assert lines[1:] == [
        "  4 measuring job(s) to run; the adaptive repeats may add up to 7 more (1 cell(s) "
        "still wider than ±2% after 3 repeats get more, up to 10 a cell); `adaptive_repeats: "
        "{enabled: false}` in the config runs exactly its repeats",
        f"  on this device ({tmp_path / 'mine'}/): about 3 min, at most 10 min if every "
        "adaptive repeat runs",
        "    not priced there: 1 job(s) like none measured (exp/fp32_bs8_r1)"]


def test_the_bound_of_a_cells_repeats_follows_its_looks():
    cell = repeats.Cell("exp", "fp32_bs8", 3, job(), repeats.Settings(0.02, 10, 2))
    assert repeats.bound([], cell) == (10, 2)                                     # no look yet
    assert repeats.bound([{"n_planned": 6, "more": True}], cell) == (10, 2)       # look 2 may add
    assert repeats.bound([{"n_planned": 6, "more": True},
                          {"n_planned": 7, "more": True}], cell) == (7, 2)        # the last look
    assert repeats.bound([{"n_planned": 3, "more": False}], cell) == (3, 1)       # tight at once
    assert repeats.bound([{"n_planned": 12, "more": True}], cell) == (10, 1)      # at the cap


def test_the_progress_total_never_grows_and_its_share_never_falls(tmp_path):
    """Adaptive repeats join the DAG (pending grows) as the optional ones they were leave it;
    a look that settles its cell drops the rest; time left scales with the jobs done so far
    against their estimates."""
    train(tmp_path, "exp/fp32_bs8_r1", 10.0)
    clock = estimate.Clock(estimate.Book("dev", True, [tmp_path], estimate.measured(tmp_path)))
    t = [estimate.task(job(repeat=r)) for r in range(1, 11)]
    steps = [  # (done with measured seconds, pending, optional)
        ([], t[:3], t[3:]),
        ([(t[0], 20.0)], t[1:3], t[3:]),
        ([(t[0], 20.0), (t[1], 20.0), (t[2], 20.0)], [], t[3:]),
        ([(t[0], 20.0), (t[1], 20.0), (t[2], 20.0)], t[3:6], t[6:]),    # look 1 asked for 3
        ([(x, 20.0) for x in t[:6]], [], []),                           # look 2: settled at 6
    ]
    lines = [clock.line(*s) for s in steps]
    totals = [int(re.search(r"of at most (\d+)", x).group(1)) for x in lines]
    shares = [int(re.search(r"\((\d+)%\)", x).group(1)) for x in lines]
    assert totals == [10, 10, 10, 10, 6] and shares == [0, 10, 30, 30, 100]
    assert lines[0].endswith("about 30 s left, at most 2 min if every adaptive repeat runs")
    assert "about 60 s left" in lines[3]          # priced by this run's own repeats of the cell
    assert clock.line(*steps[-1]) is None         # nothing new: no line
    # a job like none of this run's: the book's estimate, scaled as this run's jobs were to it
    train(tmp_path, "exp2/fp32_bs8_r1", 5.0, epochs=2)
    clock = estimate.Clock(estimate.Book("dev", True, [tmp_path], estimate.measured(tmp_path)))
    assert clock.line(steps[2][0], [estimate.task(job(epochs=2))], []).endswith("about 10 s left")
    assert clock.line(steps[1][0], [estimate.task(job(epochs=2))], []).endswith("about 5 s left")
    assert clock.line([], [estimate.task(job(epochs=7))], []) == \
        "Progress: 0 of at most 1 measuring jobs done (0%); 1 job(s) to come like none " \
        "measured yet"
    # Snakemake's step count: its total grows when a look adds jobs; the bound does not
    assert [clock.steps(total, possible) for total, possible in
            [(20, 9), (20, 9), (23, 6), (26, 0)]] == [29, 29, 29, 26]
    assert clock.steps(30, 0) == 30                        # never below Snakemake's own count


def search(folder: Path, workload: str, precision: str, seconds: float, variant=None) -> None:
    """A capacity search measured: its benchmark file and its result."""
    name = f"{precision}.{variant}" if variant else precision
    bench = folder / "benchmarks" / "capacity" / workload / f"{name}.tsv"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text(f"s\th:m:s\n{seconds}\t0:00:{int(seconds):02d}\n")
    result = folder / "capacity" / workload / f"{name}.json"
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_text(json.dumps({"workload": workload, "precision": precision,
                                  "variant": variant, "status": "found"}))


def test_a_capacity_search_is_priced_by_the_searches_measured_like_it(tmp_path):
    """The same workload, precision and variant: the autotuned check is not the plain search,
    and a precision never searched is named, not guessed; a search without its result (one a
    time bound stopped) prices nothing."""
    search(tmp_path, "resnet50", "fp32", 14.0)
    search(tmp_path, "resnet50", "amp-bf16", 23.0)
    search(tmp_path, "transformers", "fp32", 53.0)
    (tmp_path / "benchmarks" / "capacity" / "resnet50" / "fp8-tensorwise.tsv").write_text(
        "s\th:m:s\n500.0\t0:08:20\n")
    book = estimate.Book("dev", True, [tmp_path], estimate.measured(tmp_path))
    assert len(book.jobs) == 3
    price = lambda *a: book.price(estimate.capacity_task(*a))  # noqa: E731
    assert (price("resnet50", "fp32"), price("resnet50", "amp-bf16")) == (14.0, 23.0)
    assert price("resnet50", "fp32", "cudnn-on") is None
    assert price("resnet50", "amp-fp16") is None and price("resnet50", "fp8-tensorwise") is None
    search(tmp_path, "resnet50", "fp32", 180.0, variant="cudnn-on")
    book = estimate.Book("dev", True, [tmp_path], estimate.measured(tmp_path))
    assert book.price(estimate.capacity_task("resnet50", "fp32", "cudnn-on")) == 180.0
    lines = estimate.estimate([estimate.capacity_task("resnet50", "fp32"),
                               estimate.capacity_task("resnet50", "amp-fp16")], [],
                              [book], "", 1)
    assert "  on this device" in lines[2] and lines[2].endswith("about 14 s")
    assert "capacity/resnet50/amp-fp16" in lines[3]


def test_durations_read_as_a_person_says_them():
    assert [estimate.duration(s) for s in (4.4, 89, 600, 5399, 7500)] == [
        "4 s", "89 s", "10 min", "90 min", "2 h 05 min"]


@pytest.mark.slow
def test_the_smoke_study_then_the_gpu_studys_dry_run(smoke_run, tmp_path):
    """README command 1, then the GPU study's dry run on the same machine: the smoke run said
    its estimate and counted its progress without going backwards; the GPU study's dry run
    exits 0 with the H200's estimate; and where the smoke's records sit in the GPU study's
    set, one plain line says so instead of an InputFunctionException."""
    import shutil

    from conftest import REPO, copy_workflow, never_backwards, progress, snakemake

    said = (smoke_run.parents[1] / "snakemake.out").read_text()
    assert "Time estimate, from measured job costs" in said
    counts = progress(said)
    assert never_backwards(counts["steps"]) and never_backwards(counts["jobs"]), counts
    wd = copy_workflow(tmp_path / "wf")
    shutil.copytree(smoke_run, wd / "results" / "smoke")
    for part in ("benchmarks", "records", "interleaved"):
        shutil.copytree(REPO / "results" / "nvidia-h200" / part,
                        wd / "results" / "nvidia-h200" / part)
    dry = snakemake(wd, "-n", "--cores", "1")
    out = dry.stdout + dry.stderr
    assert re.search(r"^  on nvidia-h200 \(results/nvidia-h200/\): about \d+ min, at most \d+ "
                     r"min if every adaptive repeat runs$", out, re.M), out[-3000:]
    clash = snakemake(wd, "-n", "--cores", "1", "--config", "run=smoke", check=False)
    out = clash.stdout + clash.stderr
    assert clash.returncode != 0 and "InputFunctionException" not in out
    assert re.search(r"^results/smoke/ holds \d+ record\(s\) of another study under this "
                     r"study's experiment names \(amp_recipe/", out, re.M), out[-3000:]
