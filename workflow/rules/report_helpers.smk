# The reporting rules' helpers (report.smk).


def capacity_table(wc):
    """The set's capacity.csv where this config runs the capacity study (Snakemake makes it)
    or an earlier run of it left one (taken as it is: this config cannot remake it); nothing
    otherwise, and the verdict has no such section."""
    path = f"results/{wc.run}/{capacity_study.FILES['csv']}"
    return [path] if CAPACITY else [ancient(path)] if Path(path).exists() else []
