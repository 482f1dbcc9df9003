# The measuring rules: one job per cell of the study's matrix (train), one per interleaved
# comparison process (interleave), and the device's matmul ceilings (calibrate). Their helpers
# (how a job's process begins, which cell or comparison it is) are in train_helpers.smk.
include: "train_helpers.smk"


# One job per cell of this study's matrix. The constraints keep the rule to those cells: a
# record of another study in the same result set (see others_in_set) is an input, never a job.
rule train:
    message:
        "train {wildcards.experiment}/{wildcards.cell} (log: {log})"
    input:
        job_inputs,
        ancient(IMAGE_PYTHON_READY),
        added_repeat_input,  # an added repeat (repeats.smk) follows the look that asked for it
    output:
        "results/{run}/records/{experiment}/{cell}.json",
    log:
        "logs/{run}/train/{experiment}/{cell}.log",
    benchmark:
        "results/{run}/benchmarks/train/{experiment}/{cell}.tsv"
    params:
        spec=job_spec,
        launcher=job_launcher,
        compile_cache=lambda wc: COMPILE_CACHE.format(run=wc.run),  # shared by the set's jobs
    wildcard_constraints:
        experiment=alternatives(EXPERIMENTS),
        cell=alternatives(job.cell for job in [*JOBS.values(), *EXTRA_JOBS.values()]),
    resources:
        gpu=1,
    # round-robin: every cell's first repeat, then every second one, ... (added repeats last)
    priority: lambda wc: wave_priority(job_of(wc).repeat)
    # --checked: the spec was checked when the jobs were made (tcbench.launch.matrix), the
    # model's trial step on the meta device included, so the job does not repeat it
    shell:
        "python -m {params.launcher:q} --spec {params.spec:q} --checked "
        "--compile-cache {params.compile_cache:q} --out {output:q} > {log:q} 2>&1"


# Interleaved comparisons for each setting of an experiment that asks for it (interleave in the
# config): every precision of the setting in one process, alternated in rounds; replicate k of
# a setting runs in wave k, beside the cells' repeat k. The constraints keep the rule to this
# study's comparisons: one another study left in the set is an input.
rule interleave:
    message:
        "interleave the precisions of {wildcards.experiment}/{wildcards.comparison} (log: {log})"
    input:
        comparison_inputs,
        ancient(IMAGE_PYTHON_READY),
    output:
        f"results/{{run}}/{V.INTERLEAVED_DIR}/{{experiment}}/{{comparison}}.json",
    log:
        "logs/{run}/interleave/{experiment}/{comparison}.log",
    benchmark:
        "results/{run}/benchmarks/interleave/{experiment}/{comparison}.tsv"
    params:
        spec=comparison_spec,
        launcher=interleave_launcher,
        compile_cache=lambda wc: COMPILE_CACHE.format(run=wc.run),
    wildcard_constraints:
        experiment=alternatives(c.experiment for c in COMPARISONS.values()) or "(?!)",
        comparison=alternatives(c.name for c in COMPARISONS.values()) or "(?!)",
    resources:
        gpu=1,
    priority: lambda wc: wave_priority(comparison_of(wc).replicate)
    shell:
        "python -m {params.launcher:q} --spec {params.spec:q} --checked "
        "--compile-cache {params.compile_cache:q} --out {output:q} > {log:q} 2>&1"


rule calibrate:
    message:
        "calibrate: this device's matmul ceilings (log: {log})"
    input:
        ancient(IMAGE_PYTHON_READY),
    output:
        "results/{run}/calibration.json",
    log:
        "logs/{run}/calibrate.log",
    params:
        size=config["calibrate"]["size"],
        iterations=config["calibrate"]["iterations"],
        launcher=calibrate_launcher,
    resources:
        gpu=1,
    shell:
        "python -m {params.launcher:q} --out {output:q} "
        "--size {params.size:q} --iterations {params.iterations:q} > {log:q} 2>&1"
