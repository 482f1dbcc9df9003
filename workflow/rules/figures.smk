# One job per experiment, so each figure lands in the report under its experiment, with a caption
# that names it. PNGs go into the report; PDF (fonts embedded) and SVG are for papers and slides.
# File names: tcbench.vocabulary.figure_name; the module writes exactly the paths it is given.
SET_FIGURES = "results/{run}/figures/"


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
                labels={"figure": kind.replace("_", " ")},
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
        src=TCBENCH_SRC,
        planned=lambda wc: planned_cells(wc.run, wc.experiment),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.reports.figures "
        "--metrics {input.metrics:q} --summary {input.summary:q} --speedup {input.speedup:q} "
        "--experiment {wildcards.experiment:q} --outputs {output.png:q} {output.other:q} "
        "{params.planned:q} > {log:q} 2>&1"
