# The capacity study's helpers (capacity.smk): each search's plan, and every search's result.


def capacity_plan(wc):
    """One search's plan; its probes forked like the training jobs where those are."""
    return capacity_study.search_json(
        CAPACITY, wc.workload, wc.precision, wc.run,
        variant=getattr(wc, "variant", None), launcher=job_launcher())


def capacity_files(run):
    """Every search's result file, the variants' too; of another device's set, those it has:
    a search the config has gained since can only be run there."""
    out = []
    for key in CAPACITY:
        workload, precision, *variant = key.split("/")
        name = ".".join([precision, *variant])
        out.append(f"results/{run}/capacity/{workload}/{name}.json")
    return [p for p in out if Path(p).exists()] if FOREIGN_SET else out


def capacity_results(wc):
    return capacity_files(wc.run)
