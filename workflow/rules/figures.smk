rule figures:
    input:
        metrics="results/{run}/metrics.csv",
        speedup="results/{run}/speedup.csv",
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
        tables=lambda wc: f"results/{wc.run}",
        out=lambda wc: f"results/{wc.run}/figures",
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.figures --tables {params.tables:q} "
        "--out {params.out:q} --experiments {params.experiments:q} > {log:q} 2>&1"
