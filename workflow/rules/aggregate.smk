# Records -> tidy tables. A result set is every record in it: this study's (made by `train`)
# and those other studies left there (config/fastest.yaml's beside config/config.yaml's), found
# when the DAG is built. Every file aggregate reads is an input, passed to it by name.


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
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        metrics="results/{run}/metrics.csv",
        summary="results/{run}/summary.csv",
        speedup="results/{run}/speedup.csv",
        table="results/{run}/speedup.md",
        best="results/{run}/best.csv",
        best_md="results/{run}/best.md",
        overhead="results/{run}/overhead.csv",
    log:
        "logs/{run}/aggregate.log",
    params:
        src=TCBENCH_SRC,
        out=lambda wc, output: str(Path(output.metrics).parent),
        # lists, so that :q quotes each word: the option and the path
        calibration=lambda wc, input: (
            ["--calibration", input.calibration] if input.calibration else []
        ),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.aggregate "
        "--records {input.records:q} {input.other_records:q} "
        "--benchmarks {input.benchmarks:q} {input.other_benchmarks:q} "
        "--out {params.out:q} {params.calibration:q} > {log:q} 2>&1"
