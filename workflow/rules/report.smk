# What a reader gets from one result set besides the figures: per-experiment tables (Markdown,
# LaTeX booktabs, HTML for the report) and the plain-language verdict. All from the tables only.


rule table:
    input:
        summary="results/{run}/summary.csv",
        speedup="results/{run}/speedup.csv",
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
        experiment="|".join(map(re.escape, EXPERIMENTS)),
    params:
        src=TCBENCH_SRC,
        tables=lambda wc: f"results/{wc.run}",
        out=lambda wc: f"results/{wc.run}/tables",
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.tables --tables {params.tables:q} "
        "--out {params.out:q} --experiments {wildcards.experiment:q} > {log:q} 2>&1"


rule tables_combined:
    input:
        summary="results/{run}/summary.csv",
        speedup="results/{run}/speedup.csv",
    output:
        md="results/{run}/tables.md",
        tex="results/{run}/tables.tex",
    log:
        "logs/{run}/tables_combined.log",
    params:
        src=TCBENCH_SRC,
        experiments=EXPERIMENTS,
        tables=lambda wc: f"results/{wc.run}",
        out=lambda wc: f"results/{wc.run}/tables",
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.tables --tables {params.tables:q} "
        "--combined {params.out:q} --experiments {params.experiments:q} > {log:q} 2>&1"


rule verdict:
    input:
        metrics="results/{run}/metrics.csv",
        summary="results/{run}/summary.csv",
        speedup="results/{run}/speedup.csv",
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
        tables=lambda wc: f"results/{wc.run}",
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.verdict --tables {params.tables:q} "
        "--out {params.tables:q} > {log:q} 2>&1"
