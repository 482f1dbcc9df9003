# The cross-GPU comparison, `snakemake compare`; what it reads and writes: publication.smk.
rule compare:
    input:
        metrics=compare_metrics,
        references=COMPARE_REFERENCES,
    output:
        **compare_paths(),
    log:
        f"logs/{COMPARE_DIR.removeprefix('results/')}.log",
    params:
        src=TCBENCH_SRC,
        out=lambda wildcards, output: str(Path(output.csv).parent),
        experiments=COMPARE_EXPERIMENTS,
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.compare --metrics {input.metrics:q} "
        "--references {input.references:q} --out {params.out:q} "
        "--experiments {params.experiments:q} > {log:q} 2>&1"
