# One job per experiment, so each figure lands in the report under its experiment, with a caption
# that names it. PNGs go into the report; PDF (fonts embedded) and SVG are for papers and slides.
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
                f"results/{{run}}/figures/{{experiment}}_{kind}.png",
                caption=f"../report/figure_{kind}.rst",
                category="{experiment}",
                subcategory="figures",
                labels={"figure": kind.replace("_", " ")},
            )
            for kind in FIGURE_KINDS
        ],
        other=expand(
            "results/{{run}}/figures/{{experiment}}_{kind}.{ext}",
            kind=FIGURE_KINDS,
            ext=[e for e in FIGURE_FORMATS if e != "png"],
        ),
    log:
        "logs/{run}/figures/{experiment}.log",
    wildcard_constraints:
        experiment=alternatives(SET_EXPERIMENTS),
    params:
        src=TCBENCH_SRC,
        tables=lambda wc, input: str(Path(input.metrics).parent),
        out=lambda wc, output: str(Path(output.png[0]).parent),
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.figures --tables {params.tables:q} "
        "--out {params.out:q} --experiments {wildcards.experiment:q} > {log:q} 2>&1"
