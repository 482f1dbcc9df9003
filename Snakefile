# tcbench: do Tensor Cores speed up CNN training on this GPU, and if not, why not?
# Thin on purpose: the matrix lives in workflow/rules/common.smk, the work in the tcbench package.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


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
    default_target: True
