# The capacity study (optional: capacity.enabled): per workload and precision, the largest batch
# that trains without running out of memory. `snakemake capacity` runs only this study.
from tcbench import capacity as capacity_study  # noqa: E402
from tcbench import vocabulary  # noqa: E402

include: "capacity_helpers.smk"

try:
    CAPACITY = capacity_study.plan(config, RUN)
except ConfigError as exc:
    raise WorkflowError(tcconfig.stop(exc, logger.error)) from None


rule capacity_search:
    message:
        "capacity search {wildcards.workload} {wildcards.precision} (log: {log})"
    output:
        "results/{run}/capacity/{workload}/{precision}.json",
    log:
        "logs/{run}/capacity/{workload}/{precision}.log",
    # the whole job's wall time, the wait for the device's lock included (the result file's
    # search_wall_s is the search's own)
    benchmark:
        "results/{run}/benchmarks/capacity/{workload}/{precision}.tsv"
    wildcard_constraints:
        workload=alternatives(capacity_study.WORKLOADS),
        precision=alternatives(vocabulary.PRECISIONS),
    params:
        plan=capacity_plan,
        reference=[],   # the variant's: --reference and the plain search's result
    resources:
        gpu=1,
    priority: 1
    shell:
        "python -m tcbench.capacity search --plan {params.plan:q} {params.reference:q} "
        "--out {output:q} > {log:q} 2>&1"


# the same search with cuDNN autotuning on in every probe (capacity.cudnn_on): does it change
# the answer? It starts from the plain search's limit (two probes where nothing changes: each
# autotunes its batch size, the slow part).
use rule capacity_search as capacity_search_variant with:
    input:
        reference="results/{run}/capacity/{workload}/{precision}.json",
    params:
        plan=capacity_plan,
        reference=lambda wc, input: ["--reference", input.reference],
    priority: 0
    message:
        "capacity search {wildcards.workload} {wildcards.precision} {wildcards.variant} "
        "(log: {log})"
    output:
        "results/{run}/capacity/{workload}/{precision}.{variant}.json",
    log:
        "logs/{run}/capacity/{workload}/{precision}.{variant}.log",
    benchmark:
        "results/{run}/benchmarks/capacity/{workload}/{precision}.{variant}.tsv"
    wildcard_constraints:
        workload=alternatives(capacity_study.WORKLOADS),
        precision=alternatives(vocabulary.PRECISIONS),
        variant=alternatives([capacity_study.CUDNN_ON]),


# capacity_memory.{ext} reads as an experiment "capacity"'s memory figure to the figures rule
ruleorder: capacity_report > figures


rule capacity_report:
    message:
        "capacity report: {output.table}"
    input:
        capacity_results,
    output:
        csv=report(
            f"results/{{run}}/{capacity_study.FILES['csv']}",
            caption="../report/capacity_table.rst",
            category="Capacity",
            labels={"result": "the searches, one row each"},
        ),
        table=f"results/{{run}}/{capacity_study.FILES['md']}",
        png=[
            report(
                f"results/{{run}}/figures/{name}.png",
                caption=f"../report/{name}.rst",
                category="Capacity",
                labels={"result": name.replace("_", " ")},
            )
            for name in capacity_study.FIGURES
        ],
        other=[
            f"results/{{run}}/figures/{name}.{ext}"
            for name in capacity_study.FIGURES
            for ext in vocabulary.FIGURE_FORMATS
            if ext != "png"
        ],
    log:
        "logs/{run}/capacity_report.log",
    params:
        out=lambda wc, output: str(Path(output.csv).parent),
        figures=lambda wc, output: str(Path(output.png[0]).parent),
    shell:
        "python -m tcbench.capacity report {input:q} "
        "--out {params.out:q} --figures {params.figures:q} > {log:q} 2>&1"


# another device's set without a search result has no capacity study to report
CAPACITY_TARGETS = expand(rules.capacity_report.output, run=RUN) \
    if CAPACITY and capacity_files(RUN) else []


rule capacity:
    message:
        "the capacity study is complete"
    input:
        CAPACITY_TARGETS,
