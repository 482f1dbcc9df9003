# One job per experiment, so each figure lands in the report under its experiment, with a caption
# that names it; and one job for the figures of the whole set (vocabulary.SET_FIGURES). PNGs go
# into the report; PDF (fonts embedded) and SVG are for papers and slides. File names:
# tcbench.vocabulary.figure_name and set_figure_name; the module writes exactly the paths it is
# given. A figure with nothing to show is written as a note saying why (over the experiment's
# cells and how many of their runs finished), marked in its metadata; the report's "drawn"
# column reads the mark (tcbench.render.placeholder).
include: "figures_helpers.smk"


rule figures:
    message:
        "figures of {wildcards.experiment}"
    input:
        metrics=rules.aggregate.output.metrics,
        summary=rules.aggregate.output.summary,
        speedup=rules.aggregate.output.speedup,
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        png=[
            report(
                SET_FIGURES + V.figure_name("{experiment}", kind, "png"),
                caption=f"../report/figure_{kind}.rst",
                category="{experiment}",
                subcategory="figures",
                labels=drawn_label(
                    kind, lambda wc, k=kind: V.figure_name(wc.experiment, k, "png")
                ),
            )
            for kind in FIGURE_KINDS
        ],
        other=[
            SET_FIGURES + V.figure_name("{experiment}", kind, ext)
            for kind in FIGURE_KINDS
            for ext in FIGURE_FORMATS
            if ext != "png"
        ],
    log:
        "logs/{run}/figures/{experiment}.log",
    wildcard_constraints:
        experiment=alternatives(SET_EXPERIMENTS),
    params:
        planned=lambda wc: planned_cells(wc.run, wc.experiment),
    shell:
        "python -m tcbench.reports.figures "
        "--metrics {input.metrics:q} --summary {input.summary:q} --speedup {input.speedup:q} "
        "--experiment {wildcards.experiment:q} --outputs {output.png:q} {output.other:q} "
        "{params.planned:q} > {log:q} 2>&1"


# the interleaved comparisons' tables, where the aggregate writes them (vocabulary.SET_TABLES
# names them): the set's figures read them, and say "not drawn" without them
SET_FIGURE_TABLES = {
    name: getattr(rules.aggregate.output, name)
    for name in ("interleaved", "interleaved_rounds")
    if name in V.SET_TABLES
}


rule set_figures:
    message:
        "figures of the whole set {wildcards.run}"
    input:
        metrics=rules.aggregate.output.metrics,
        **SET_FIGURE_TABLES,
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        png=[
            report(
                SET_FIGURES + V.set_figure_name(kind, "png"),
                caption=f"../report/figure_{kind}.rst",
                category="Host",
                labels=drawn_label(kind, lambda wc, k=kind: V.set_figure_name(k, "png")),
            )
            for kind in SET_FIGURE_KINDS
        ],
        other=[
            SET_FIGURES + V.set_figure_name(kind, ext)
            for kind in SET_FIGURE_KINDS
            for ext in FIGURE_FORMATS
            if ext != "png"
        ],
    log:
        "logs/{run}/figures/set.log",
    params:
        # lists, so that :q quotes each word: the option and the path
        tables=lambda wc, input: [
            word
            for name in SET_FIGURE_TABLES
            for word in (f"--{name.replace('_', '-')}", input[name])
        ],
    shell:
        "python -m tcbench.reports.figures "
        "--metrics {input.metrics:q} {params.tables:q} "
        "--outputs {output.png:q} {output.other:q} > {log:q} 2>&1"
