# The cross-GPU comparison, `snakemake compare`: result sets named in config
# (results/<run>/metrics.csv) and published references (config/reference/*.csv) side by side in
# results/<compare.name>/. A set other than this study's own is read as committed data, never
# rebuilt (see the run wildcard constraint and compare_metrics). The module writes
# the file names of tcbench.vocabulary (COMPARE_FILES, table_name, figure_name) inside --out.
include: "compare_helpers.smk"


rule compare:
    message:
        "cross-GPU comparison: {params.out}/"
    input:
        metrics=compare_metrics,
        references=COMPARE["references"],
    output:
        csv=f"{COMPARE_DIR}/{V.COMPARE_FILES['csv']}",
        tables=[
            *(f"{COMPARE_DIR}/tables/{V.table_name(e, ext)}" for e in COMPARE_EXPERIMENTS
              for ext in V.TABLE_FORMATS if ext != "html"),
            *(f"{COMPARE_DIR}/{V.COMPARE_FILES[k]}" for k in ("md", "tex", "seed")),
        ],
        html=[
            report(
                f"{COMPARE_DIR}/tables/{V.table_name(e, 'html')}",
                caption="../report/compare_table.rst",
                category="Cross-GPU comparison",
                subcategory=e,
                labels={"experiment": e, "result": "table"},
            )
            for e in COMPARE_EXPERIMENTS
        ],
        png=[
            report(
                f"{COMPARE_DIR}/figures/{V.figure_name(e, k, 'png')}",
                caption=f"../report/compare_{k}.rst",
                category="Cross-GPU comparison",
                subcategory=e,
                labels={"experiment": e, "result": f"{k} figure"},
            )
            for e in COMPARE_EXPERIMENTS
            for k in COMPARE_KINDS
        ],
        overview=report(
            f"{COMPARE_DIR}/figures/{V.COMPARE_OVERVIEW}.png",
            caption="../report/compare_overview.rst",
            category="Cross-GPU comparison",
            subcategory="overview",
            labels={"experiment": "all", "result": "overview figure"},
        ),
        other=[
            *(f"{COMPARE_DIR}/figures/{V.figure_name(e, k, ext)}" for e in COMPARE_EXPERIMENTS
              for k in COMPARE_KINDS for ext in FIGURE_FORMATS if ext != "png"),
            *(f"{COMPARE_DIR}/figures/{V.COMPARE_OVERVIEW}.{ext}" for ext in FIGURE_FORMATS
              if ext != "png"),
        ],
    log:
        f"logs/{COMPARE['name']}.log",
    params:
        out=lambda wildcards, output: str(Path(output.csv).parent),
        experiments=COMPARE_EXPERIMENTS,
    shell:
        "python -m tcbench.reports.compare --metrics {input.metrics:q} "
        "--references {input.references:q} --out {params.out:q} "
        "--experiments {params.experiments:q} > {log:q} 2>&1"
