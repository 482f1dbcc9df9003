# Repeats until the interval is tight (adaptive_repeats in the config; the rule itself is
# tcbench.repeats, docs/repeats.md). A cell that adapts (ADAPTIVE, common.smk) starts with its
# `repeats` records; look 1, a checkpoint, reads them and plans how many the cell needs in all;
# the train rule then makes the added repeats (EXTRA_JOBS), each its own process and seed; look 2
# reads them all and may add more, up to adaptive_repeats.max. The decision names the cell tight,
# noisy or not-ok; repeats.csv lists every cell's. Without adaptive cells (adaptation off, or one
# repeat, as in the smoke study) none of these rules is part of the DAG.
LOOKS = ADAPT.looks if ADAPT else 0
ADAPTIVE_GROUPS = [c.group for c in ADAPTIVE.values()]
REPEATS_DIR = "results/{run}/repeats/{experiment}"


def record_files(pattern, run, cell, n):
    """``pattern`` (train's output or benchmark) for repeats 1..n of an adaptive cell."""
    return [expand(pattern, run=run, experiment=cell.experiment, cell=cell.job(r).cell)[0]
            for r in range(1, n + 1)]


def plan(run, key, upto=None):
    """How many repeats the looks 1..upto (all by default) ask the cell ``key`` for, for each
    added repeat the look file that asked and its reason, and the look files read. A look not
    yet made is made first: Snakemake re-evaluates whatever asked once the checkpoint is done."""
    cell = ADAPTIVE[key]
    n, added, paths = cell.initial, {}, []
    for look in range(1, (LOOKS if upto is None else upto) + 1):
        path = checkpoints.repeats_look.get(run=run, experiment=cell.experiment,
                                            group=cell.group, look=look).output[0]
        said = json.loads(Path(path).read_text())
        paths.append(path)
        added |= {r: (path, said["reason"]) for r in range(n + 1, said["n_planned"] + 1)}
        n = said["n_planned"]
        if not said["more"] or n >= ADAPT.max:
            break
    return n, added, paths


def added_repeat(run, job):
    """(look file, reason) of an added repeat; an error if no look asked for it."""
    cell = ADAPTIVE[f"{job.experiment}/{job.group}"]
    n, added, _ = plan(run, cell.key)
    if job.repeat not in added:
        raise WorkflowError(f"{job.id}: an adaptive repeat that {cell.key}'s looks did not ask "
                            f"for (they planned {n} repeats); see {decision_file(run, cell)}")
    return added[job.repeat]


def added_repeat_input(wildcards):
    """An added repeat's train job follows the look that asked for it."""
    job = job_of(wildcards)
    return [added_repeat(wildcards.run, job)[0]] if job.id in EXTRA_JOBS else []


def study_files(pattern, run):
    """``pattern`` for every job of this study that is or will be run, in matrix order: the
    initial repeats, and after an adaptive cell's last initial repeat those its looks added."""
    out = []
    for job in JOBS.values():
        out += expand(pattern, run=run, experiment=job.experiment, cell=job.cell)
        cell = ADAPTIVE.get(f"{job.experiment}/{job.group}")
        if cell is not None and job.repeat == cell.initial:
            out += record_files(pattern, run, cell, plan(run, cell.key)[0])[cell.initial:]
    return out


def extra_files(pattern, run):
    """``pattern`` for every repeat an adaptive cell could be given (this study's files)."""
    return [expand(pattern, run=run, experiment=j.experiment, cell=j.cell)[0]
            for j in EXTRA_JOBS.values()]


def decision_file(run, cell):
    return expand(rules.repeats_decision.output[0], run=run, experiment=cell.experiment,
                  group=cell.group)[0]


def repeats_targets(run):
    """Every adaptive cell's decision and the summary (nothing without adaptive cells)."""
    if not ADAPTIVE:
        return []
    return [*(decision_file(run, c) for c in ADAPTIVE.values()),
            *expand(rules.repeats_summary.output, run=run)]


def adaptive_cell(wildcards):
    return ADAPTIVE[f"{wildcards.experiment}/{wildcards.group}"]


def repeats_args(wildcards):
    """The rule's settings and the cell's name, as words for :q."""
    cell = adaptive_cell(wildcards)
    return ["--target", ADAPT.target, "--max", ADAPT.max, "--looks", ADAPT.looks,
            "--experiment", cell.experiment, "--cell", cell.group, "--n-initial", cell.initial]


def look_records(wildcards):
    """Look k reads the records that looks 1..k-1 asked for (look 1: the initial ones)."""
    cell = adaptive_cell(wildcards)
    n = plan(wildcards.run, cell.key, upto=int(wildcards.look) - 1)[0]
    return record_files(rules.train.output[0], wildcards.run, cell, n)


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
        src=TCBENCH_SRC,
        args=repeats_args,
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.repeats look --records {input.records:q} "
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
        src=TCBENCH_SRC,
        args=repeats_args,
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.repeats decide --records {input.records:q} "
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
    params:
        src=TCBENCH_SRC,
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.repeats summary --decisions {input:q} "
        "--out {output:q} > {log:q} 2>&1"
