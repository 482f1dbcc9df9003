# The FP8 crossover map (config/fp8_crossover.yaml): where FP8 starts to pay on this GPU, per
# Linear width x tokens a step, beside the prediction from the set's calibration. Made for a
# result set that holds experiments named V.CROSSOVER_PREFIX* (this study's or another's in the
# same set), from their records and their interleaved comparisons (crossover_helpers.smk:
# CROSSOVER_EXPERIMENTS, crossover_records, crossover_comparisons: one comparison per shape
# where the config asks for `interleave: {enabled: true}`), whose paired ratios decide the
# ratios of their shapes; the module writes exactly the paths it is given.
include: "crossover_helpers.smk"


rule crossover:
    message:
        "FP8 crossover map of {wildcards.run}"
    input:
        records=crossover_records,
        comparisons=crossover_comparisons,
        calibration=calibration_paths(),
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        csv=f"{SET_DIR}/{V.CROSSOVER_FILES['csv']}",
        md=f"{SET_DIR}/{V.CROSSOVER_FILES['md']}",
        png=report(
            f"{SET_FIGURES}{V.CROSSOVER_FIGURE}.png",
            caption="../report/fp8_crossover.rst",
            category="FP8 crossover",
            labels={"figure": "FP8 / bf16 map"},
        ),
        other=[f"{SET_FIGURES}{V.CROSSOVER_FIGURE}.{ext}" for ext in FIGURE_FORMATS
               if ext != "png"],
    log:
        "logs/{run}/crossover.log",
    params:
        # lists, so that :q quotes each word: the option and the path
        calibration=lambda wc, input: (
            ["--calibration", input.calibration] if input.calibration else []
        ),
    shell:
        "python -m tcbench.reports.crossover "
        "--records {input.records:q} {params.calibration:q} --csv {output.csv:q} "
        "--md {output.md:q} --figures {output.png:q} {output.other:q} "
        "--comparisons {input.comparisons:q} > {log:q} 2>&1"


# rule all's share, and the verdict's input: nothing where the set has no crossover experiment
CROSSOVER_TARGETS = expand(rules.crossover.output, run=RUN) if CROSSOVER_EXPERIMENTS else []
CROSSOVER_TABLE = rules.crossover.output.csv if CROSSOVER_EXPERIMENTS else None
