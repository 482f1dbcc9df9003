rule aggregate:
    input:
        records=lambda wc: record_paths(wc.run),
        calibration=calibration_path(),
    output:
        metrics="results/{run}/metrics.csv",
        summary="results/{run}/summary.csv",
        speedup="results/{run}/speedup.csv",
        table="results/{run}/speedup.md",
    log:
        "logs/{run}/aggregate.log",
    params:
        src=TCBENCH_SRC,
        records=lambda wc: f"results/{wc.run}/records",
        out=lambda wc: f"results/{wc.run}",
        # a list, so that :q quotes each word: the option and the path
        calibration=lambda wc, input: (
            ["--calibration", input.calibration] if input.calibration else []
        ),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.aggregate {params.records:q} "
        "--out {params.out:q} {params.calibration:q} --expect {input.records:q} "
        "> {log:q} 2>&1"
