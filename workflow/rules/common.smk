# The study matrix, resolved once at parse time (every bad value stops here, before any job),
# and the helpers the rules share: which cells are this study's, which files of the result set
# are someone else's, what a rule's outputs are for this study's run.
import json
import os
import re
import sys

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from tcbench import closing, environment, matrix  # noqa: E402
from tcbench import vocabulary as V  # noqa: E402
from tcbench.vocabulary import ConfigError  # noqa: E402

try:
    JOBS = matrix.expand(config)
    RUN = matrix.resolve_run(config)
except ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

RESULTS = f"results/{RUN}"
if config["require_gpu"] and not environment.nvidia_gpus():
    # not an error here: a report, a dry run or a comparison needs no GPU (see measuring_checks)
    logger.warning(
        "Note: this config is a GPU study (require_gpu: true) and this machine has no NVIDIA "
        "GPU, so its training jobs will not start. The CPU smoke study is "
        "--configfile config/smoke.yaml (its report: snakemake --report report.html "
        "--configfile config/smoke.yaml)."
    )
EXPERIMENTS = list(dict.fromkeys(job.experiment for job in JOBS.values()))
FIGURE_KINDS = list(V.FIGURES)
FIGURE_FORMATS = list(V.FIGURE_FORMATS)
TABLE_FORMATS = list(V.TABLE_FORMATS)
TCBENCH_SRC = str(Path(workflow.basedir) / "workflow")
# exported in every job's shell (see the Snakefile); container.smk adds the image's
JOB_ENV = {environment.ALLOW_DIRTY_ENV: "1"} if config["allow_dirty"] else {}


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


def job_of(wildcards):
    key = f"{wildcards.experiment}/{wildcards.cell}"
    if key not in JOBS:
        raise WorkflowError(f"{key} is not a cell of this study's matrix")
    return JOBS[key]


def job_spec(wildcards):
    return json.dumps(job_of(wildcards).spec(wildcards.run), sort_keys=True)


def job_inputs(wildcards):
    return [ancient(p) for p in job_of(wildcards).inputs()]


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
    mine = set(for_each_job(pattern, run))
    found = glob_wildcards(pattern.replace("{run}", run))
    return sorted(p for p in expand(pattern, zip, run=[run] * len(found.experiment),
                                    experiment=found.experiment, cell=found.cell)
                  if p not in mine and not Path(p).name.startswith("."))


def experiments_in_set(run):
    """This study's experiments, then those other studies left in the result set (records
    found when the DAG is built): every experiment of the set gets its figures and tables."""
    found = glob_wildcards(f"results/{run}/records/{{experiment}}/{{cell}}.json").experiment
    return list(dict.fromkeys([*EXPERIMENTS, *sorted(found)]))


SET_EXPERIMENTS = experiments_in_set(RUN)


def study_benchmarks(run):
    """Snakemake's benchmark of each train job, where there is or will be one: a record made
    elsewhere (copied in, or written before benchmarks existed) keeps its record without one,
    rather than being trained again for the sake of a timing file."""
    return [bench for record, bench in zip(for_each_job(rules.train.output[0], run),
                                           for_each_job(rules.train.benchmark, run))
            if Path(bench).exists() or not Path(record).exists()]


def calibration_paths():
    return [rules.calibrate.output[0]] if config["calibrate"]["enabled"] else []


def all_targets():
    """Everything one run of this study makes: records, tables, figures, tables, verdict."""
    figures = [*rules.figures.output.png, *rules.figures.output.other]
    tables = [*rules.table.output]
    return [
        *for_each_job(rules.train.output[0], RUN),
        *expand(rules.aggregate.output, run=RUN),
        *expand(rules.set_tables.output, run=RUN),
        *expand(figures, run=RUN, experiment=SET_EXPERIMENTS),
        *expand(tables, run=RUN, experiment=SET_EXPERIMENTS),
        *expand(rules.tables_combined.output, run=RUN),
        *expand(rules.verdict.output, run=RUN),
    ]


def measuring_checks(jobs):
    """Why the jobs about to run must not start, or None. Only jobs that measure (those that
    claim a GPU) are held to it: the GPU study needs an NVIDIA GPU where they run, and the code
    its records will name."""
    measuring = [job for job in jobs if "gpu" in job.rule.resources]
    if not measuring or not config["require_gpu"] or workflow.touch:
        return None
    if any(job.is_local for job in measuring) and not environment.nvidia_gpus():
        return (
            "config requires an NVIDIA GPU (require_gpu: true) and none is visible. "
            "On a machine without a GPU run the CPU smoke study instead: "
            "snakemake --cores 2 --configfile config/smoke.yaml; to compare committed result "
            "sets only: snakemake compare --cores 1"
        )
    why = environment.check_clean(config["allow_dirty"])
    return f"not starting {len(measuring)} measuring job(s): {why}" if why else None


def closing_message():
    """The run's last words (onsuccess): where the results are and what they say, and the
    command that builds the HTML report of what this run made."""
    files = [os.path.relpath(f) for f in workflow.overwrite_configfiles]
    targets = workflow.dag_settings.targets
    ran = {job.rule.name for job in workflow.dag.needrun_jobs(exclude_finished=False)}
    return closing.message(
        RESULTS,
        report_command=closing.report_command(files, dict(workflow.config_settings.config),
                                              targets),
        comparison=COMPARE_DIR if "compare" in ran else None,
    )


# The cross-GPU comparison (compare.smk): result sets named in config (results/<run>/metrics.csv)
# and published references side by side in results/<compare.name>/.
COMPARE = config["compare"]
COMPARE_DIR = f"results/{COMPARE['name']}"
# "auto" is this study's own result set, as in run: auto
COMPARE_RUNS = list(dict.fromkeys(RUN if r == "auto" else r for r in COMPARE["runs"]))
COMPARE_EXPERIMENTS = COMPARE.get("experiments") or EXPERIMENTS
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
