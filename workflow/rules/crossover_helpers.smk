# The FP8 crossover map's helpers (crossover.smk): its experiments, records and comparisons.

# the FP8 crossover study's experiments in the set
CROSSOVER_EXPERIMENTS = [e for e in SET_EXPERIMENTS if e.startswith(V.CROSSOVER_PREFIX)]


def crossover_records(wildcards):
    """The crossover experiments' records: this study's (train makes them) and those that
    other studies left in the set."""
    pattern = rules.train.output[0]
    return [p for p in [*study_files(pattern, wildcards.run),
                        *others_in_set(pattern, wildcards.run)]
            if Path(p).parent.name in CROSSOVER_EXPERIMENTS]


def crossover_comparisons(wildcards):
    """The crossover experiments' interleaved comparisons: this study's (rule interleave makes
    them) and those other studies left in the set (comparison_files, as aggregate takes them)."""
    return [p for p in comparison_files(rules.interleave.output[0], wildcards.run)
            if Path(p).parent.name in CROSSOVER_EXPERIMENTS]
