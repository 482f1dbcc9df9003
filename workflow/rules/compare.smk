# The cross-GPU comparison, `snakemake compare`: result sets named in config
# (results/<run>/metrics.csv) and published references (config/reference/*.csv) side by side in
# results/<compare.name>/. A set other than this study's own is read as committed data, never
# rebuilt (see the run wildcard constraint and compare_metrics in common.smk).


rule compare:
    message:
        "cross-GPU comparison: {params.out}/"
    input:
        metrics=compare_metrics,
        references=COMPARE["references"],
    output:
        csv=f"{COMPARE_DIR}/comparison.csv",
        tables=[
            *expand(f"{COMPARE_DIR}/tables/{{e}}.{{ext}}", e=COMPARE_EXPERIMENTS,
                    ext=["md", "tex"]),
            f"{COMPARE_DIR}/comparison.md",
            f"{COMPARE_DIR}/comparison.tex",
        ],
        html=[
            report(
                f"{COMPARE_DIR}/tables/{e}.html",
                caption="../report/compare_table.rst",
                category="Cross-GPU comparison",
                subcategory=e,
                labels={"experiment": e, "result": "table"},
            )
            for e in COMPARE_EXPERIMENTS
        ],
        png=[
            report(
                f"{COMPARE_DIR}/figures/{e}_{k}.png",
                caption=f"../report/compare_{k}.rst",
                category="Cross-GPU comparison",
                subcategory=e,
                labels={"experiment": e, "result": f"{k} figure"},
            )
            for e in COMPARE_EXPERIMENTS
            for k in COMPARE_KINDS
        ],
        overview=report(
            f"{COMPARE_DIR}/figures/overview.png",
            caption="../report/compare_overview.rst",
            category="Cross-GPU comparison",
            subcategory="overview",
            labels={"experiment": "all", "result": "overview figure"},
        ),
        other=expand(
            f"{COMPARE_DIR}/figures/{{stem}}.{{ext}}",
            stem=[*(f"{e}_{k}" for e in COMPARE_EXPERIMENTS for k in COMPARE_KINDS), "overview"],
            ext=["pdf", "svg"],
        ),
    log:
        f"logs/{COMPARE['name']}.log",
    params:
        src=TCBENCH_SRC,
        out=lambda wildcards, output: str(Path(output.csv).parent),
        experiments=COMPARE_EXPERIMENTS,
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.compare --metrics {input.metrics:q} "
        "--references {input.references:q} --out {params.out:q} "
        "--experiments {params.experiments:q} > {log:q} 2>&1"
