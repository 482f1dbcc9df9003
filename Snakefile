# tcbench: do Tensor Cores speed up CNN training on this GPU, and if not, why not?
# Thin on purpose: the matrix lives in workflow/rules/common.smk, the work in the tcbench package.
import sys

from snakemake.logging import logger
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
from tcbench.launch import config as tcconfig  # noqa: E402
from tcbench.host import environment  # noqa: E402



# The one validation: the schema's types, enums and ranges, every violation named key=value,
# before anything reads the config; then the schema's defaults are filled in. A config given
# over config/config.yaml keeps its own adaptive repeats, not config.yaml's (tcconfig.OWN_KEYS).
try:
    tcconfig.own_settings(config, tcconfig.read_files(workflow.overwrite_configfiles),
                          dict(workflow.config_settings.config or {}))
    tcconfig.check(config)
except tcconfig.ConfigError as exc:  # each mistake a line of its own, then the stop
    raise WorkflowError(tcconfig.stop(exc, logger.error)) from None


# the image jobs run in with --sdm apptainer is set in container.smk (`container:`)


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/container.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/repeats.smk"
include: "workflow/rules/estimate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/crossover.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/reproduce.smk"
include: "workflow/rules/capacity.smk"


# What every job's shell is told (exported inside the job, in its container or not): where the
# package is (PYTHONPATH, the one for every rule), the image it runs in, and whether the config
# allowed a dirty tree (JOB_ENV, common.smk). Snakemake's own environment is not touched; a
# run: block would run in this process, which finds the package through the sys.path above.
shell.prefix(environment.shell_prefix(JOB_ENV))


# On a cluster (--profile profiles/slurm) only the GPU jobs are worth a batch job; these are
# seconds of CPU work each and run where Snakemake runs.
localrules:
    mnist_format_random,
    repeats_look,
    repeats_decision,
    repeats_summary,
    aggregate,
    figures,
    set_figures,
    table,
    tables_combined,
    set_tables,
    verdict,
    overview_figure,
    crossover,
    compare,
    reproduce,
    capacity_report,


rule all:
    message:
        "every result of the study is made"
    input:
        all_targets(),
        CROSSOVER_TARGETS,
        CAPACITY_TARGETS,
    default_target: True


# Checked when jobs are about to run, not while the workflow is read: a report, a dry run, the
# comparison of committed result sets or the reproduction check needs neither a GPU nor a clean
# tree.
onstart:
    stop = measuring_checks(list(workflow.dag.needrun_jobs()))
    if stop:
        raise WorkflowError(stop)


# The run's last words: where the results are and what they say.
onsuccess:
    logger.info(closing_message())
