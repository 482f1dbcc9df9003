# The capacity study's helpers (capacity.smk): each search's plan, and every search's result.


def capacity_plan(wc):
    """One search's plan; its probes forked like the training jobs where those are."""
    return capacity_study.search_json(
        CAPACITY, wc.workload, wc.precision, wc.run,
        variant=getattr(wc, "variant", None), launcher=job_launcher())


def capacity_results(wc):
    """Every search's result file, the variants' too."""
    out = []
    for key in CAPACITY:
        workload, precision, *variant = key.split("/")
        name = ".".join([precision, *variant])
        out.append(f"results/{wc.run}/capacity/{workload}/{name}.json")
    return out
