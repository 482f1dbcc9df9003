# Adaptive repeats' helpers (repeats.smk): which repeats a cell's looks asked for. Every helper
# that reads a look goes through plan(), whose checkpoints.get makes a look not yet made.
import json

LOOKS = max((c.settings.looks for c in ADAPTIVE.values()), default=0)
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
    for look in range(1, (cell.settings.looks if upto is None else upto) + 1):
        path = checkpoints.repeats_look.get(run=run, experiment=cell.experiment,
                                            group=cell.group, look=look).output[0]
        said = json.loads(Path(path).read_text())
        paths.append(path)
        planned, settled = tcrepeats.after_look(said, cell.settings)
        added |= {r: (path, said["reason"]) for r in range(n + 1, planned + 1)}
        n = planned
        if settled:
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
    s = cell.settings
    interleaved = any(c.experiment == cell.experiment for c in COMPARISONS.values())
    return ["--target", s.target, "--max", s.max, "--looks", s.looks,
            "--experiment", cell.experiment, "--cell", cell.group, "--n-initial", cell.initial,
            *(["--interleaved"] if interleaved else [])]


def look_records(wildcards):
    """Look k reads the records that looks 1..k-1 asked for (look 1: the initial ones)."""
    cell = adaptive_cell(wildcards)
    n = plan(wildcards.run, cell.key, upto=int(wildcards.look) - 1)[0]
    return record_files(rules.train.output[0], wildcards.run, cell, n)
