rule figures:
    input:
        metrics="results/{run}/metrics.csv",
        speedup="results/{run}/speedup.csv",
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        expand(
            "results/{{run}}/figures/{experiment}_{kind}.{ext}",
            experiment=EXPERIMENTS,
            kind=FIGURE_KINDS,
            ext=["pdf", "png"],
        ),
    log:
        "logs/{run}/figures.log",
    params:
        src=TCBENCH_SRC,
        experiments=EXPERIMENTS,
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.figures --tables results/{wildcards.run} "
        "--out results/{wildcards.run}/figures --experiments {params.experiments:q} > {log:q} 2>&1"
