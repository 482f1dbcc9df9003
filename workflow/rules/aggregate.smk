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
        best="results/{run}/best.csv",
        best_md="results/{run}/best.md",
        overhead="results/{run}/overhead.csv",
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
        "--benchmarks benchmarks/{wildcards.run}/train "
        "> {log:q} 2>&1"
