# The study matrix, resolved once at parse time (every bad value stops here, before any job),
# and the helpers the rules share: which cells are this study's, which files of the result set
# are someone else's, what a rule's outputs are for this study's run.
import csv
import functools
import json
import os
import re
import sys

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from tcbench import closing  # noqa: E402
from tcbench.host import environment, sourcetree  # noqa: E402
from tcbench.launch import forkclient, matrix  # noqa: E402
from tcbench.render import placeholder  # noqa: E402
from tcbench.launch import config as tcconfig  # noqa: E402
from tcbench.launch import repeats as tcrepeats  # noqa: E402
from tcbench import vocabulary as V  # noqa: E402
from tcbench.vocabulary import ConfigError  # noqa: E402

try:
    JOBS = matrix.expand(config)
    RUN = matrix.resolve_run(config)
    # cells whose repeats adapt (adaptive_repeats; repeats.smk), and every repeat they may get
    # beyond their initial ones: jobs the train rule can make once a look asks for them
    ADAPTIVE = tcrepeats.cells(config, JOBS)
    # the interleaved comparisons (interleave: {enabled: true}): one per setting, all its modes
    COMPARISONS = matrix.comparisons(config, JOBS)
except ConfigError as exc:
    raise WorkflowError(tcconfig.stop(exc, logger.error)) from None
EXTRA_JOBS = {job.id: job for c in ADAPTIVE.values()
              for job in (c.job(r) for r in range(c.initial + 1, c.settings.max + 1))}
# A result set named after another device (results/nvidia-h200/ read on a CPU) holds that
# device's data: nothing made here may train into it, and its cells take the repeats it has
# rather than asking looks for more (which would train them here).
FOREIGN_SET = environment.foreign_device_set(RUN)
if FOREIGN_SET:
    ADAPTIVE = {}

RESULTS = f"results/{RUN}"


def stray_files(run):
    """Another study's records and comparisons in this study's set that its rules would take
    for their own (matrix.strays): ids, e.g. amp_recipe/fp32_bs64_r1."""
    ids = lambda found: [f"{e}/{n}" for e, n in zip(*found)]  # noqa: E731
    records = glob_wildcards(f"results/{run}/records/{{experiment}}/{{name}}.json")
    compared = glob_wildcards(f"results/{run}/{V.INTERLEAVED_DIR}/{{experiment}}/{{name}}.json")
    return [*matrix.strays(ids(records), [*JOBS, *EXTRA_JOBS]),
            *matrix.strays(ids(compared), COMPARISONS)]


STRAYS = stray_files(RUN)
if STRAYS:
    logger.error(
        f"results/{RUN}/ holds {len(STRAYS)} record(s) of another study under this study's "
        f"experiment names ({', '.join(STRAYS[:3])}{', ...' if len(STRAYS) > 3 else ''}), which "
        f"this study would take for its own: move them out of results/{RUN}/, or give this "
        f"study a set of its own (--config run=NAME)")
    raise WorkflowError(f"another study's records in results/{RUN}/ (the line above)")
if config["require_gpu"] and not environment.nvidia_gpus():
    # not an error here: a report, a dry run or a comparison needs no GPU (see measuring_checks)
    logger.warning(
        "Note: this config is a GPU study (require_gpu: true) and this machine has no NVIDIA "
        "GPU, so its training jobs will not start. The CPU smoke study is "
        "--configfile config/smoke.yaml (its report: snakemake --report report.html "
        "--configfile config/smoke.yaml)."
    )
EXPERIMENTS = list(dict.fromkeys(job.experiment for job in JOBS.values()))
# A set measured on a CPU (named after one, or this machine's own without an NVIDIA GPU) has
# no memory statistics and no kernel profile: it draws none of their figures (its verdict says
# what a CPU cannot measure, once).
CPU_SET = (environment.device_of(RUN) or "").startswith("cpu-") or \
    (not FOREIGN_SET and environment.device_of(RUN) is None and not environment.nvidia_gpus())
FIGURE_KINDS = [k for k in V.FIGURES if not (CPU_SET and k in V.GPU_ONLY_FIGURES)]
SET_FIGURE_KINDS = [k for k in V.SET_FIGURES if not (CPU_SET and k in V.GPU_ONLY_SET_FIGURES)]
FIGURE_FORMATS = list(V.FIGURE_FORMATS)
TABLE_FORMATS = list(V.TABLE_FORMATS)
TCBENCH_SRC = str(Path(workflow.basedir) / "workflow")
# exported in every job's shell (see the Snakefile); container.smk adds the image's
JOB_ENV = {environment.ALLOW_DIRTY_ENV: "1"} if config["allow_dirty"] else {}


def while_missing(paths):
    """The output of a rule whose files jobs take as ancient() (the random MNIST files, the
    image's completed Python): ``paths`` while any of them is missing, none once all exist.
    Made once, never remade: a rule that could remake them would be rerun when its provenance
    changes (a run in a container after a native one, a moved checkout, an edited rule), and
    Snakemake 9 then skips every job downstream of it whose only reason is missing output,
    since ancient() stops the rerun there: a new result set's jobs were never planned. Files
    no rule makes are plain inputs; the jobs that read them list the same inputs either way."""
    paths = list(paths)
    return paths if not all(Path(p).exists() for p in paths) else []


def alternatives(values):
    """A wildcard constraint that matches exactly these values."""
    return "|".join(map(re.escape, dict.fromkeys(values)))


def wave_priority(wave):
    """A measuring job's scheduling priority: repeat (or comparison replicate) k runs in wave
    k, every cell's first before any second, so that a cell's repeats straddle the study's
    drift instead of running back to back; repeats added later join the end."""
    return tcrepeats.wave_priority(wave)


# Only this study's result set is built; another set under results/ (say, committed from another
# machine) is input data, never re-made from records this machine does not have.
wildcard_constraints:
    run=re.escape(RUN),
    experiment=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    cell=r"[A-Za-z0-9][A-Za-z0-9._+-]*",
    kind="|".join(FIGURE_KINDS),
    ext="|".join(FIGURE_FORMATS),


def job_of(wildcards):
    key = f"{wildcards.experiment}/{wildcards.cell}"
    if key not in JOBS and key not in EXTRA_JOBS:
        raise WorkflowError(f"{key} is not a cell of this study's matrix")
    return JOBS.get(key) or EXTRA_JOBS[key]


def job_spec(wildcards):
    job = job_of(wildcards)
    spec = job.spec(wildcards.run)
    # an initial repeat's spec is as it was: its record says "initial"; an added repeat of
    # another device's set was made there, and its record says why (no look here to ask)
    if job.id in EXTRA_JOBS and ADAPTIVE:
        spec["repeat_reason"] = added_repeat(wildcards.run, job)[1]
    return json.dumps(spec, sort_keys=True)


def job_inputs(wildcards):
    return [ancient(p) for p in job_of(wildcards).inputs()]


def comparison_of(wildcards):
    key = f"{wildcards.experiment}/{wildcards.comparison}"
    if key not in COMPARISONS:
        raise WorkflowError(f"{key} is not an interleaved comparison of this study")
    return COMPARISONS[key]


def comparison_spec(wildcards):
    return json.dumps(comparison_of(wildcards).spec(wildcards.run), sort_keys=True)


def comparison_inputs(wildcards):
    return [ancient(p) for p in comparison_of(wildcards).inputs()]


def comparison_files(pattern, run):
    """``pattern`` (the interleave rule's output) for every comparison process of this study,
    and those other studies left in the result set (found when the DAG is built)."""
    mine = [expand(pattern, run=run, experiment=c.experiment, comparison=c.name)[0]
            for c in COMPARISONS.values()]
    if FOREIGN_SET:
        mine = [p for p in mine if Path(p).exists()]
    found = glob_wildcards(pattern.replace("{run}", run))
    others = expand(pattern, zip, run=[run] * len(found.experiment),
                    experiment=found.experiment, comparison=found.comparison)
    return [*mine, *sorted(p for p in others if p not in mine and not Path(p).name.startswith("."))]


def for_each_job(pattern, run):
    """``pattern`` (a rule's output, log or benchmark with {run}, {experiment} and {cell})
    for every job of this study, in matrix order."""
    return expand(pattern, zip, run=[run] * len(JOBS),
                  experiment=[j.experiment for j in JOBS.values()],
                  cell=[j.cell for j in JOBS.values()])


def others_in_set(pattern, run):
    """Files of the result set that other studies made (another config run on the same
    device: config/fastest.yaml's records beside config/config.yaml's), found as they are when
    the DAG is built. Taken as given: no rule of this study makes or remakes them."""
    mine = set(for_each_job(pattern, run)) | set(extra_files(pattern, run))
    found = glob_wildcards(pattern.replace("{run}", run))
    return sorted(p for p in expand(pattern, zip, run=[run] * len(found.experiment),
                                    experiment=found.experiment, cell=found.cell)
                  if p not in mine and not Path(p).name.startswith("."))


STUDY_CONFIGS = Path(workflow.basedir) / "config"


def planned_cells(run, experiment):
    """The figures' --planned option: the cells (without the repeat) this study's matrix has
    for ``experiment`` of its own set; for an experiment another study left in the set, the
    plan of the one committed study config that has it and every cell it recorded
    (``matrix.plan_of``); none where that is not known (its figures then say only that a cell
    has no record)."""
    if run != RUN:
        return []
    cells = list(dict.fromkeys(j.group for j in JOBS.values() if j.experiment == experiment))
    if not cells:
        found = glob_wildcards(f"results/{run}/records/{experiment}/{{cell}}.json").cell
        recorded = {re.sub(r"_r\d+$", "", c) for c in found}
        cells = matrix.plan_of(experiment, recorded, study_configs()) or []
    return ["--planned", *cells] if cells else []


@functools.lru_cache(maxsize=1)
def study_configs():
    return matrix.studies(STUDY_CONFIGS)


def experiments_in_set(run):
    """This study's experiments, then those other studies left in the result set (records
    found when the DAG is built): every experiment of the set gets its figures and tables."""
    found = glob_wildcards(f"results/{run}/records/{{experiment}}/{{cell}}.json").experiment
    # another device's set has only what ran there: an experiment the config has gained since
    # has no records in it, so nothing to tabulate or draw
    mine = [e for e in EXPERIMENTS if e in set(found)] if FOREIGN_SET else EXPERIMENTS
    return list(dict.fromkeys([*mine, *sorted(found)]))


SET_EXPERIMENTS = experiments_in_set(RUN)
# the FP8 crossover study's experiments in the set (crossover.smk makes their map)
CROSSOVER_EXPERIMENTS = [e for e in SET_EXPERIMENTS if e.startswith(V.CROSSOVER_PREFIX)]


def crossover_records(wildcards):
    """The crossover experiments' records: this study's (train makes them) and those that
    other studies left in the set."""
    pattern = rules.train.output[0]
    return [p for p in [*study_files(pattern, wildcards.run),
                        *others_in_set(pattern, wildcards.run)]
            if Path(p).parent.name in CROSSOVER_EXPERIMENTS]


def crossover_comparisons(wildcards):
    """The crossover experiments' interleaved comparisons: this study's (rule interleave makes
    them) and those other studies left in the set (comparison_files, as aggregate takes them)."""
    return [p for p in comparison_files(rules.interleave.output[0], wildcards.run)
            if Path(p).parent.name in CROSSOVER_EXPERIMENTS]


def study_benchmarks(run):
    """Snakemake's benchmark of each train job, where there is or will be one: a record made
    elsewhere (copied in, or written before benchmarks existed) keeps its record without one,
    rather than being trained again for the sake of a timing file."""
    return [bench for record, bench in zip(study_files(rules.train.output[0], run),
                                           study_files(rules.train.benchmark, run))
            if Path(bench).exists() or not Path(record).exists()]


def calibration_paths():
    """The set's calibration where this study makes one; another device's set has the one it
    was given there, or none (it can only be measured on that device)."""
    if not config["calibrate"]["enabled"]:
        return []
    path = expand(rules.calibrate.output[0], run=RUN)[0]
    return [] if FOREIGN_SET and not Path(path).exists() else [path]


def all_targets():
    """Everything one run of this study makes: records, tables, figures, tables, verdict."""
    figures = [*rules.figures.output.png, *rules.figures.output.other]
    set_figures = [*rules.set_figures.output.png, *rules.set_figures.output.other]
    tables = [*rules.table.output]
    return [
        # the records: this study's initial ones (looks add the rest through repeats_targets);
        # of another device's set, those it has
        *(study_files(rules.train.output[0], RUN) if FOREIGN_SET
          else for_each_job(rules.train.output[0], RUN)),
        *comparison_files(rules.interleave.output[0], RUN),
        *expand(rules.aggregate.output, run=RUN),
        *expand(rules.set_tables.output, run=RUN),
        *expand(figures, run=RUN, experiment=SET_EXPERIMENTS),
        *expand(set_figures, run=RUN),
        *expand(tables, run=RUN, experiment=SET_EXPERIMENTS),
        *expand(rules.tables_combined.output, run=RUN),
        *expand(rules.verdict.output, run=RUN),
        *repeats_targets(RUN),
    ]


def measuring_checks(jobs):
    """Why the jobs about to run must not start, or None. Only jobs that measure (those that
    claim a GPU) are held to it: the GPU study needs an NVIDIA GPU where they run, and the code
    its records will name."""
    measuring = [job for job in jobs if "gpu" in job.rule.resources]
    if measuring and FOREIGN_SET and not workflow.touch:
        return (f"not starting {len(measuring)} measuring job(s): results/{RUN}/ is the result "
                f"set of another device ({FOREIGN_SET}), whose missing records can only be "
                f"measured there; to read it here, name only its reports (e.g. snakemake "
                f"aggregate figures verdict) or point run: at this machine's own set")
    if not measuring or not config["require_gpu"] or workflow.touch:
        return None
    if any(job.is_local for job in measuring) and not environment.nvidia_gpus():
        return (
            "config requires an NVIDIA GPU (require_gpu: true) and none is visible. "
            "On a machine without a GPU run the CPU smoke study instead: "
            "snakemake --cores 2 --configfile config/smoke.yaml; to compare committed result "
            "sets only: snakemake compare --cores 1"
        )
    why = sourcetree.check_clean(config["allow_dirty"])
    return f"not starting {len(measuring)} measuring job(s): {why}" if why else None


def closing_message():
    """The run's last words (onsuccess): where the results are and what they say, and the
    command that builds the HTML report of what this run made."""
    files = [os.path.relpath(f) for f in workflow.overwrite_configfiles]
    targets = workflow.dag_settings.targets
    ran = {job.rule.name for job in workflow.dag.needrun_jobs(exclude_finished=False)}
    # `snakemake compare` (or reproduce) on a study made earlier is about that alone
    study = not targets or bool(set(targets) - {"compare", "reproduce"}) or "verdict" in ran
    return closing.message(
        RESULTS,
        report_command=closing.report_command(files, dict(workflow.config_settings.config),
                                              targets),
        comparison=COMPARE_DIR if "compare" in ran else None,
        study=study,
        reproduction=f"{RESULTS}/{V.REPRODUCE_FILES['md']}" if "reproduce" in ran else None,
    )


# The cross-GPU comparison (compare.smk): result sets named in config (results/<run>/metrics.csv)
# and published references side by side in results/<compare.name>/.
COMPARE = config["compare"]
COMPARE_DIR = f"results/{COMPARE['name']}"
# "auto" is this study's own result set, as in run: auto
COMPARE_RUNS = list(dict.fromkeys(RUN if r == "auto" else r for r in COMPARE["runs"]))
def compare_experiments():
    """The experiments the comparison covers: the config's list, else this study's
    experiments that some compared set or reference has (every one where this study's own set
    is built here; only those its records have where it is another device's set)."""
    if COMPARE.get("experiments"):
        return COMPARE["experiments"]
    if RUN in COMPARE_RUNS and not FOREIGN_SET:
        return EXPERIMENTS
    have = set()
    for path in [*(f"results/{r}/{V.SET_TABLES['metrics']}" for r in COMPARE_RUNS),
                 *COMPARE.get("references", [])]:
        if Path(path).exists():
            with open(path, newline="") as f:
                have |= {row.get("experiment") for row in csv.DictReader(f)}
    return [e for e in EXPERIMENTS if e in have]


COMPARE_EXPERIMENTS = compare_experiments()
COMPARE_KINDS = list(V.COMPARE_FIGURES)

if COMPARE["name"] in {RUN, *COMPARE_RUNS}:
    raise WorkflowError(
        f"compare.name={COMPARE['name']!r} is also a result set's name; "
        "choose another, the comparison would overwrite that set"
    )


def compare_metrics(wildcards):
    """This study's own set is built if needed; any other set must already be there."""
    paths = []
    for run in COMPARE_RUNS:
        path = expand(rules.aggregate.output.metrics, run=run)[0]
        if run != RUN and not Path(path).exists():
            raise WorkflowError(
                f"compare.runs: {path} does not exist. Run that study on its machine and "
                f"commit results/{run}/, or drop {run!r} from compare.runs."
            )
        paths.append(path)
    return paths


# Adaptive repeats (repeats.smk): which repeats a cell's looks asked for. Every helper that
# reads a look goes through plan(), whose checkpoints.get makes a look that is not yet made.
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


def added_repeat_input(wildcards):
    """An added repeat's train job follows the look that asked for it."""
    job = job_of(wildcards)
    return [added_repeat(wildcards.run, job)[0]] if job.id in EXTRA_JOBS and ADAPTIVE else []


def study_files(pattern, run):
    """``pattern`` for every job of this study that is or will be run, in matrix order: the
    initial repeats, and after an adaptive cell's last initial repeat those its looks added."""
    if FOREIGN_SET:  # another device's records: the repeats it has, initial and added
        return [f for job in [*JOBS.values(), *EXTRA_JOBS.values()]
                if Path(expand(rules.train.output[0], run=run, experiment=job.experiment,
                               cell=job.cell)[0]).exists()
                for f in expand(pattern, run=run, experiment=job.experiment, cell=job.cell)]
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


# How a training job's process begins (docs/job-cost.md): forked from an interpreter that has
# imported torch already and that this workflow's jobs share (tcbench.launch.forkclient), where one can
# serve them: jobs run by this Snakemake process on this host. Under --use-singularity too,
# with a sandbox-folder image: the first job's container starts the server, which outlives that
# job (Apptainer gives a container no PID namespace of its own unless asked), and every later
# job, in a container from the same image with the same binds, reaches it through the socket
# under the shared /tmp; its child runs in that first container (docs/job-cost.md). A SIF's
# mount ends with the first container (CONTAINER_FORKS, container.smk), and a batch job
# (--profile profiles/slurm) would start a server for one job alone: those, and
# fresh_interpreter: true, get python -m tcbench.job.run. Asked when the jobs are made, once
# Snakemake knows its executor (it does not while parsing).
JOB_ENV[forkclient.OWNER_ENV] = str(os.getpid())  # the server ends with this process


def job_launcher(wildcards=None):
    forked = (not config["fresh_interpreter"] and workflow.local_exec
              and not workflow.remote_exec and (CONTAINER_FORKS or not CONTAINERIZED))
    return "tcbench.launch.forkclient" if forked else "tcbench.job.run"


# one torch.compile cache per result set: its jobs compile the same graphs
COMPILE_CACHE = "resources/compile-cache/{run}"


def interleave_launcher(wildcards):
    """``python -m`` words for an interleaved comparison: forked like a training job where
    those are, else fresh."""
    if job_launcher() == "tcbench.launch.forkclient":
        return ["tcbench.launch.forkclient", "--module", "tcbench.job.interleave"]
    return ["tcbench.job.interleave"]


def calibrate_launcher(wildcards):
    """``python -m`` words for the calibration: forked like a training job where those are
    (it would otherwise import torch for a measurement of a few seconds), by the same server
    (the compile cache is in the environment the server is keyed by), else fresh."""
    if job_launcher() == "tcbench.launch.forkclient":
        return ["tcbench.launch.forkclient", "--module", "tcbench.job.calibrate",
                "--compile-cache", COMPILE_CACHE.format(run=wildcards.run)]
    return ["tcbench.job.calibrate"]


# The figures (figures.smk): where a set's figures go, and the report's labels of one figure:
# its kind, and whether it was drawn (read from the file when the report is made; a figure with
# nothing to show is a one-line note, tcbench.render.placeholder).
SET_FIGURES = "results/{run}/figures/"


def drawn_label(kind, name):
    return lambda wc: {
        "figure": kind.replace("_", " "),
        "drawn": placeholder.label(Path(SET_FIGURES.format(run=wc.run)) / name(wc)),
    }
