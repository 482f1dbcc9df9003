# The capacity study (optional: capacity.enabled): per workload and precision, the largest batch
# that trains without running out of memory. `snakemake capacity` runs only this study.
from tcbench import capacity as capacity_study  # noqa: E402

try:
    CAPACITY = capacity_study.plan(config, RUN)
except ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None


CAPACITY_TARGETS = (
    [
        f"{RESULTS}/capacity.csv",
        f"{RESULTS}/capacity.md",
        *expand(f"{RESULTS}/figures/capacity.{{ext}}", ext=["pdf", "png"]),
    ]
    if CAPACITY
    else []
)


rule capacity:
    input:
        CAPACITY_TARGETS,


rule capacity_search:
    output:
        "results/{run}/capacity/{workload}/{precision}.json",
    log:
        "logs/{run}/capacity/{workload}/{precision}.log",
    wildcard_constraints:
        workload="|".join(capacity_study.WORKLOADS),
        precision="|".join(capacity_study.DEFAULTS["precisions"]),
    params:
        plan=lambda wc: capacity_study.search_json(
            CAPACITY, wc.workload, wc.precision, wc.run
        ),
        src=TCBENCH_SRC,
    resources:
        gpu=1,
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.capacity search --plan {params.plan:q} "
        "--out {output:q} > {log:q} 2>&1"


rule capacity_report:
    input:
        lambda wc: [f"results/{wc.run}/capacity/{key}.json" for key in CAPACITY],
    output:
        csv="results/{run}/capacity.csv",
        table="results/{run}/capacity.md",
        figures=expand("results/{{run}}/figures/capacity.{ext}", ext=["pdf", "png"]),
    log:
        "logs/{run}/capacity_report.log",
    params:
        src=TCBENCH_SRC,
        out=lambda wc: f"results/{wc.run}",
        figures=lambda wc: f"results/{wc.run}/figures",
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.capacity report {input:q} "
        "--out {params.out:q} --figures {params.figures:q} > {log:q} 2>&1"
