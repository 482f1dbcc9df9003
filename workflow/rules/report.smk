# What a reader gets from one result set besides the figures: per-experiment tables (Markdown,
# LaTeX booktabs, HTML for the report) and the plain-language verdict. All from the tables only.


rule table:
    message:
        "table of {wildcards.experiment}"
    input:
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
    output:
        md="results/{run}/tables/{experiment}.md",
        tex="results/{run}/tables/{experiment}.tex",
        html=report(
            "results/{run}/tables/{experiment}.html",
            caption="../report/table.rst",
            category="{experiment}",
            subcategory="tables",
            labels={"table": "summary"},
        ),
    log:
        "logs/{run}/tables/{experiment}.log",
    wildcard_constraints:
        experiment=alternatives(SET_EXPERIMENTS),
    params:
        src=TCBENCH_SRC,
        tables=lambda wc, input: str(Path(input.summary).parent),
        out=lambda wc, output: str(Path(output.md).parent),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.tables --tables {params.tables:q} "
        "--out {params.out:q} --experiments {wildcards.experiment:q} > {log:q} 2>&1"


rule tables_combined:
    message:
        "tables of every experiment"
    input:
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
    output:
        md="results/{run}/tables.md",
        tex="results/{run}/tables.tex",
    log:
        "logs/{run}/tables_combined.log",
    params:
        src=TCBENCH_SRC,
        experiments=SET_EXPERIMENTS,
        tables=lambda wc, input: str(Path(input.summary).parent),
        stem=lambda wc, output: str(Path(output.md).with_suffix("")),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.tables --tables {params.tables:q} "
        "--combined {params.stem:q} --experiments {params.experiments:q} > {log:q} 2>&1"


rule verdict:
    message:
        "verdict: {output.md}"
    input:
        metrics=rules.aggregate.output.metrics,
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
    output:
        md="results/{run}/summary.md",
        html=report(
            "results/{run}/summary.html",
            caption="../report/verdict.rst",
            category="Verdict",
            labels={"result set": "{run}"},
        ),
    log:
        "logs/{run}/verdict.log",
    params:
        src=TCBENCH_SRC,
        tables=lambda wc, input: str(Path(input.metrics).parent),
        out=lambda wc, output: str(Path(output.md).parent),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.verdict --tables {params.tables:q} "
        "--out {params.out:q} > {log:q} 2>&1"
