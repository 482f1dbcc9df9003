# tcbench: do Tensor Cores speed up CNN training on this GPU, and if not, why not?
# Thin on purpose: the matrix lives in workflow/rules/common.smk, the work in the tcbench package.
import sys

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
from tcbench import config as tcconfig  # noqa: E402

# Ours first: every violation named key=value, before anything reads the config. Snakemake's
# validate then fills in the schema's defaults.
try:
    tcconfig.check(config)
except tcconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None
validate(config, "workflow/schemas/config.schema.yaml")


container: config["container"]


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/container.smk"
include: "workflow/rules/publication.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/capacity.smk"


# On a cluster (--profile profiles/slurm) only the GPU jobs are worth a batch job; these are
# seconds of CPU work each and run where Snakemake runs.
localrules:
    mnist_format_random,
    aggregate,
    figures,
    table,
    tables_combined,
    verdict,
    compare,


rule all:
    input:
        all_targets(),
        CAPACITY_TARGETS,
    default_target: True
