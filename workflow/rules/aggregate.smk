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
        records=lambda wc: f"results/{wc.run}/records",
        out=lambda wc: f"results/{wc.run}",
        benchmarks=lambda wc: f"results/{wc.run}/benchmarks/train",
        # a list, so that :q quotes each word: the option and the path
        calibration=lambda wc, input: (
            ["--calibration", input.calibration] if input.calibration else []
        ),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.aggregate {params.records:q} "
        "--out {params.out:q} {params.calibration:q} --expect {input.records:q} "
        "--benchmarks {params.benchmarks:q} "
        "> {log:q} 2>&1"
