# The aggregate's helpers (aggregate.smk): which job timings the set has, and which runs of the
# study on other machines the set's judged ratios pool.
import importlib


def study_benchmarks(run):
    """Snakemake's benchmark of each train job, where there is or will be one: a record made
    elsewhere (copied in, or written before benchmarks existed) keeps its record without one,
    rather than being trained again for the sake of a timing file."""
    return [bench for record, bench in zip(study_files(rules.train.output[0], run),
                                           study_files(rules.train.benchmark, run))
            if Path(bench).exists() or not Path(record).exists()]


def sibling_runs(wildcards):
    """The interleaved.csv of the study's other runs (<run>-rerun* beside it, and config's
    runs_with), read as committed, so a change in one remakes the tables and the verdict that
    pool them (tcbench.analysis.runs). The module is imported only once a job needs it: it reads
    tables with pandas, which nothing needs while the workflow is read."""
    runs = importlib.import_module("tcbench.analysis.runs")
    return runs.sibling_tables(RESULTS, config.get("runs_with") or [])


def sibling_processes(wildcards):
    """The interleaved_processes.csv beside each of ``sibling_runs``: each process's own ratio
    and interval, which the verdict holds against the runs' mean (tcbench.analysis.runs)."""
    beside = [Path(p).parent / V.SET_TABLES["interleaved_processes"] for p in sibling_runs(wildcards)]
    return [str(p) for p in beside if p.exists()]
