rule aggregate:
    input:
        records=lambda wc: record_paths(wc.run),
        calibration=calibration_path(),
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        metrics="results/{run}/metrics.csv",
        summary="results/{run}/summary.csv",
        speedup="results/{run}/speedup.csv",
        table="results/{run}/speedup.md",
    log:
        "logs/{run}/aggregate.log",
    params:
        src=TCBENCH_SRC,
        calibration=lambda wc, input: (
            f"--calibration {input.calibration}" if input.calibration else ""
        ),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.aggregate results/{wildcards.run}/records "
        "--out results/{wildcards.run} {params.calibration} --expect {input.records:q} "
        "> {log:q} 2>&1"
