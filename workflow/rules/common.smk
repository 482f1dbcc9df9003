# The study matrix, resolved once at parse time (every bad value stops here, before any job),
# and the helpers shared across the rules: which cells are this study's, which files of the
# result set are someone else's, what a rule's outputs are for this study's run. A helper that
# serves one stage lives beside its rules, in <stage>_helpers.smk (launchers in train's, repeat
# planning in repeats', the compared sets in compare's, figure labels in figures'): a file of
# its own, since snakemake --lint wants a file's functions apart from its rules.
import os
import re

from tcbench import closing  # noqa: E402
from tcbench.host import environment  # noqa: E402
from tcbench.launch import forkclient, matrix  # noqa: E402
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
# Exported in every job's shell (the Snakefile's shell prefix), inside its container or not:
# where the package is (one PYTHONPATH for every rule), whether the config allowed a dirty tree,
# and the process a fork server ends with (train.smk's launchers); container.smk adds the image's.
JOB_ENV = {"PYTHONPATH": TCBENCH_SRC}
if config["allow_dirty"]:
    JOB_ENV[environment.ALLOW_DIRTY_ENV] = "1"
JOB_ENV[forkclient.OWNER_ENV] = str(os.getpid())  # the server ends with this process
JOB_ENV[forkclient.PRELOAD_ENV] = ",".join(sorted({job.workload for job in JOBS.values()}))


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


# Only this study's result set is built; another set under results/ (say, committed from another
# machine) is input data, never re-made from records this machine does not have.
wildcard_constraints:
    run=re.escape(RUN),
    experiment=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    cell=r"[A-Za-z0-9][A-Za-z0-9._+-]*",
    kind="|".join(FIGURE_KINDS),
    ext="|".join(FIGURE_FORMATS),


def study_files(pattern, run):
    """``pattern`` for every job of this study that is or will be run, in matrix order: the
    initial repeats, and after an adaptive cell's last initial repeat those its looks added
    (repeats.smk's plan)."""
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


def experiments_in_set(run):
    """This study's experiments, then those other studies left in the result set (records
    found when the DAG is built): every experiment of the set gets its figures and tables."""
    found = glob_wildcards(f"results/{run}/records/{{experiment}}/{{cell}}.json").experiment
    # another device's set has only what ran there: an experiment the config has gained since
    # has no records in it, so nothing to tabulate or draw
    mine = [e for e in EXPERIMENTS if e in set(found)] if FOREIGN_SET else EXPERIMENTS
    return list(dict.fromkeys([*mine, *sorted(found)]))


SET_EXPERIMENTS = experiments_in_set(RUN)


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
