# Repeats until the interval is tight (adaptive_repeats in the config; the rule itself is
# tcbench.launch.repeats, docs/repeats.md). A cell that adapts (ADAPTIVE, common.smk) starts with its
# `repeats` records; look 1, a checkpoint, reads them and plans how many the cell needs in all;
# the train rule then makes the added repeats (EXTRA_JOBS), each its own process and seed; look 2
# reads them all and may add more, up to adaptive_repeats.max. The decision names the cell tight,
# noisy or not-ok; repeats.csv lists every cell's. Without adaptive cells (adaptation off, or one
# repeat, as in the smoke study) none of these rules is part of the DAG.
# study_files (common.smk) lists the records the looks asked for, for the rules that read them.
include: "repeats_helpers.smk"


checkpoint repeats_look:
    message:
        "look {wildcards.look} at the repeats of {wildcards.experiment}/{wildcards.group}"
    input:
        records=look_records,
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        f"{REPEATS_DIR}/{{group}}.look{{look}}.json",
    log:
        "logs/{run}/repeats/{experiment}/{group}.look{look}.log",
    wildcard_constraints:
        group=alternatives(ADAPTIVE_GROUPS) or "(?!)",
        look="|".join(str(k) for k in range(1, LOOKS + 1)) or "(?!)",
    params:
        args=repeats_args,
    shell:
        "python -m tcbench.launch.repeats look --records {input.records:q} "
        "--look {wildcards.look:q} {params.args:q} --out {output:q} > {log:q} 2>&1"


rule repeats_decision:
    message:
        "repeats of {wildcards.experiment}/{wildcards.group}: tight, noisy or not ok"
    input:
        records=lambda wc: record_files(rules.train.output[0], wc.run, adaptive_cell(wc),
                                        plan(wc.run, adaptive_cell(wc).key)[0]),
        looks=lambda wc: plan(wc.run, adaptive_cell(wc).key)[2],
        image_python=ancient(IMAGE_PYTHON_READY),
    output:
        f"{REPEATS_DIR}/{{group}}.json",
    log:
        "logs/{run}/repeats/{experiment}/{group}.log",
    wildcard_constraints:
        group=alternatives(ADAPTIVE_GROUPS) or "(?!)",
    params:
        args=repeats_args,
    shell:
        "python -m tcbench.launch.repeats decide --records {input.records:q} "
        "{params.args:q} --out {output:q} > {log:q} 2>&1"


rule repeats_summary:
    message:
        "repeats of every adaptive cell: {output}"
    input:
        lambda wc: [decision_file(wc.run, c) for c in ADAPTIVE.values()],
    output:
        "results/{run}/repeats.csv",
    log:
        "logs/{run}/repeats_summary.log",
    shell:
        "python -m tcbench.launch.repeats summary --decisions {input:q} "
        "--out {output:q} > {log:q} 2>&1"
