# The capacity study (optional: capacity.enabled): per workload and precision, the largest batch
# that trains without running out of memory. `snakemake capacity` runs only this study.
from tcbench import capacity as capacity_study  # noqa: E402
from tcbench import vocabulary  # noqa: E402

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
    wildcard_constraints:
        workload=alternatives(capacity_study.WORKLOADS),
        precision=alternatives(vocabulary.PRECISIONS),
    params:
        plan=lambda wc: capacity_study.search_json(
            CAPACITY, wc.workload, wc.precision, wc.run
        ),
    resources:
        gpu=1,
    shell:
        "python -m tcbench.capacity search --plan {params.plan:q} "
        "--out {output:q} > {log:q} 2>&1"


rule capacity_report:
    message:
        "capacity report: {output.table}"
    input:
        lambda wc: [
            expand(rules.capacity_search.output[0], run=wc.run, workload=w, precision=p)[0]
            for w, p in (key.split("/") for key in CAPACITY)
        ],
    output:
        csv="results/{run}/capacity.csv",
        table="results/{run}/capacity.md",
        figures=expand("results/{{run}}/figures/capacity.{ext}", ext=["pdf", "png"]),
    log:
        "logs/{run}/capacity_report.log",
    params:
        out=lambda wc, output: str(Path(output.csv).parent),
        figures=lambda wc, output: str(Path(output.figures[0]).parent),
    shell:
        "python -m tcbench.capacity report {input:q} "
        "--out {params.out:q} --figures {params.figures:q} > {log:q} 2>&1"


CAPACITY_TARGETS = expand(rules.capacity_report.output, run=RUN) if CAPACITY else []


rule capacity:
    message:
        "the capacity study is complete"
    input:
        CAPACITY_TARGETS,
