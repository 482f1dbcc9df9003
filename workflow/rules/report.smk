# What a reader gets from one result set besides the figures: the set's speedup and best tables
# as Markdown, per-experiment tables (Markdown, LaTeX booktabs, HTML for the report) and the
# plain-language verdict, headed by the overview figure. All from the tables only; every output
# path is passed to the module.
import json


include: "report_helpers.smk"

SET_TABLE_DIR = "results/{run}/tables/"


rule set_tables:
    message:
        "speedup and best tables of {wildcards.run}"
    input:
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
        best=rules.aggregate.output.best,
    output:
        **{f"{name}_md": f"{SET_DIR}/{file}" for name, file in V.SET_VIEWS.items()},
    log:
        "logs/{run}/set_tables.log",
    params:
        # what the set's experiments should reach (their study's target): best.md says whether
        # their fastest cells do, and what holds them back
        targets=json.dumps(
            tcconfig.targets(config, Path(workflow.basedir, "config").glob("*.yaml")),
            sort_keys=True,
        ),
    shell:
        "python -m tcbench.reports.tables "
        "--summary {input.summary:q} --speedup {input.speedup:q} --best {input.best:q} "
        "--targets {params.targets:q} --speedup-md {output.speedup_md:q} --best-md {output.best_md:q} > {log:q} 2>&1"


rule table:
    message:
        "table of {wildcards.experiment}"
    input:
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
    output:
        md=SET_TABLE_DIR + V.table_name("{experiment}", "md"),
        tex=SET_TABLE_DIR + V.table_name("{experiment}", "tex"),
        html=report(
            SET_TABLE_DIR + V.table_name("{experiment}", "html"),
            caption="../report/table.rst",
            category="{experiment}",
            subcategory="tables",
            labels={"table": "summary"},
        ),
    log:
        "logs/{run}/tables/{experiment}.log",
    wildcard_constraints:
        experiment=alternatives(SET_EXPERIMENTS),
    shell:
        "python -m tcbench.reports.tables "
        "--summary {input.summary:q} --speedup {input.speedup:q} "
        "--experiment {wildcards.experiment:q} "
        "--md {output.md:q} --tex {output.tex:q} --html {output.html:q} > {log:q} 2>&1"


rule tables_combined:
    message:
        "tables of every experiment"
    input:
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
    output:
        md=f"{SET_DIR}/{V.COMBINED_STEM}.md",
        tex=f"{SET_DIR}/{V.COMBINED_STEM}.tex",
    log:
        "logs/{run}/tables_combined.log",
    shell:
        "python -m tcbench.reports.tables "
        "--summary {input.summary:q} --speedup {input.speedup:q} "
        "--combined-md {output.md:q} --combined-tex {output.tex:q} > {log:q} 2>&1"


# the answer at a glance, heading the verdict: the same inputs, the same answer table's numbers
rule overview_figure:
    message:
        "overview figure of {wildcards.run}"
    input:
        metrics=rules.aggregate.output.metrics,
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
        interleaved=rules.aggregate.output.interleaved,
        crossover=CROSSOVER_TABLE or [],
        runs=sibling_runs,
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        png=report(
            f"{SET_FIGURES}{V.set_figure_name(V.OVERVIEW_FIGURE, 'png')}",
            caption="../report/figure_overview.rst",
            category="Verdict",
            labels=drawn_label(
                V.OVERVIEW_FIGURE,
                lambda wc: V.set_figure_name(V.OVERVIEW_FIGURE, "png"),
            ),
        ),
        other=[
            f"{SET_FIGURES}{V.set_figure_name(V.OVERVIEW_FIGURE, ext)}"
            for ext in FIGURE_FORMATS
            if ext != "png"
        ],
    log:
        "logs/{run}/figures/overview.log",
    params:
        crossover=lambda wc, input: ["--crossover", input.crossover] if input.crossover else [],
    shell:
        "python -m tcbench.reports.overview_figure "
        "--metrics {input.metrics:q} --summary {input.summary:q} --speedup {input.speedup:q} "
        "--interleaved {input.interleaved:q} {params.crossover:q} --runs {input.runs:q} "
        "--outputs {output.png:q} {output.other:q} > {log:q} 2>&1"


rule verdict:
    message:
        "verdict: {output.md}"
    input:
        metrics=rules.aggregate.output.metrics,
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
        # the interleaved comparisons' ratios (host-bound cells are decided by them)
        interleaved=rules.aggregate.output.interleaved,
        # where FP8 starts to pay (crossover.smk), where the set has the crossover study
        crossover=CROSSOVER_TABLE or [],
        runs=sibling_runs,
        # each process's own interval, here and in the other runs: how often one held the mean
        processes=rules.aggregate.output.interleaved_processes,
        runs_processes=sibling_processes,
        # the overview figure heads it: linked beside summary.md, embedded in summary.html
        overview=rules.overview_figure.output.png,
        # how much larger a batch fits, where the set has the capacity study
        capacity=capacity_table,
    output:
        md=f"{SET_DIR}/{V.VERDICT_FILES['md']}",
        html=report(
            f"{SET_DIR}/{V.VERDICT_FILES['html']}",
            caption="../report/verdict.rst",
            category="Verdict",
            labels={"result set": "{run}"},
        ),
    log:
        "logs/{run}/verdict.log",
    params:
        crossover=lambda wc, input: ["--crossover", input.crossover] if input.crossover else [],
        capacity=lambda wc, input: ["--capacity", input.capacity] if input.capacity else [],
    shell:
        "python -m tcbench.reports.verdict "
        "--metrics {input.metrics:q} --summary {input.summary:q} --speedup {input.speedup:q} "
        "--interleaved {input.interleaved:q} {params.crossover:q} {params.capacity:q} "
        "--runs {input.runs:q} "
        "--overview {input.overview:q} --md {output.md:q} --html {output.html:q} > {log:q} 2>&1"
