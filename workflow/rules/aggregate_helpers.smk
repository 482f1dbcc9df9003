# The aggregate's helper (aggregate.smk): which job timings the set has.


def study_benchmarks(run):
    """Snakemake's benchmark of each train job, where there is or will be one: a record made
    elsewhere (copied in, or written before benchmarks existed) keeps its record without one,
    rather than being trained again for the sake of a timing file."""
    return [bench for record, bench in zip(study_files(rules.train.output[0], run),
                                           study_files(rules.train.benchmark, run))
            if Path(bench).exists() or not Path(record).exists()]
