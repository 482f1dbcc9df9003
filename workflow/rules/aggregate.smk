# Records -> tidy tables. A result set is every record in it: this study's (made by `train`)
# and those other studies left there (config/fastest.yaml's beside config/config.yaml's), found
# when the DAG is built. Every file aggregate reads is an input, passed to it by name, and every
# table it writes an output, named by tcbench.vocabulary.SET_TABLES and passed to it by path.
include: "aggregate_helpers.smk"

SET_DIR = "results/{run}"


rule aggregate:
    message:
        "aggregate the records of {wildcards.run}"
    input:
        # with adaptive repeats (repeats.smk), the records the cells' looks asked for
        records=lambda wc: study_files(rules.train.output[0], wc.run),
        other_records=lambda wc: others_in_set(rules.train.output[0], wc.run),
        benchmarks=lambda wc: study_benchmarks(wc.run),
        other_benchmarks=lambda wc: others_in_set(rules.train.benchmark, wc.run),
        calibration=calibration_paths(),
        # the adaptive cells' decisions (tight, noisy, not ok), for the reports to read
        repeats=lambda wc: expand(rules.repeats_summary.output, run=wc.run) if ADAPTIVE else [],
        comparisons=lambda wc: comparison_files(rules.interleave.output[0], wc.run),
        # the study's runs on other machines, whose interleaved ratios the speedup and best
        # tables pool with this one's (sibling_runs)
        runs=sibling_runs,
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        **{name: f"{SET_DIR}/{file}" for name, file in V.SET_TABLES.items()},
    log:
        "logs/{run}/aggregate.log",
    params:
        # lists, so that :q quotes each word: the option and the path
        calibration=lambda wc, input: (
            ["--calibration", input.calibration] if input.calibration else []
        ),
    shell:
        "python -m tcbench.aggregate --run {wildcards.run:q} "
        "--records {input.records:q} {input.other_records:q} "
        "--benchmarks {input.benchmarks:q} {input.other_benchmarks:q} "
        "--metrics {output.metrics:q} --summary {output.summary:q} --speedup {output.speedup:q} "
        "--best {output.best:q} --overhead {output.overhead:q} {params.calibration:q} "
        "--interleaved {output.interleaved:q} --interleaved_rounds {output.interleaved_rounds:q} "
        "--interleaved_processes {output.interleaved_processes:q} "
        "--comparisons {input.comparisons:q} --runs {input.runs:q} "
        "> {log:q} 2>&1"
