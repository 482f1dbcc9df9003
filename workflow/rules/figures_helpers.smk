# The figures' helpers (figures.smk, also used by crossover.smk and report.smk): where a set's
# figures go, their report labels, the cells a figure plans for.
import functools

from tcbench.render import placeholder  # noqa: E402

# Where a set's figures go, and the report's labels of one figure: its kind, and whether it was
# drawn (read from the file's mark when the report is made).
SET_FIGURES = "results/{run}/figures/"


def drawn_label(kind, name):
    return lambda wc: {
        "figure": kind.replace("_", " "),
        "drawn": placeholder.label(Path(SET_FIGURES.format(run=wc.run)) / name(wc)),
    }


STUDY_CONFIGS = Path(workflow.basedir) / "config"


def planned_cells(run, experiment):
    """The figures' --planned option: the cells (without the repeat) this study's matrix has
    for ``experiment`` of its own set; for an experiment another study left in the set, the
    plan of the one committed study config that has it and every cell it recorded
    (``matrix.plan_of``); none where that is not known (its figures then say only that a cell
    has no record)."""
    if run != RUN:
        return []
    cells = list(dict.fromkeys(j.group for j in JOBS.values() if j.experiment == experiment))
    if not cells:
        found = glob_wildcards(f"results/{run}/records/{experiment}/{{cell}}.json").cell
        recorded = {re.sub(r"_r\d+$", "", c) for c in found}
        cells = matrix.plan_of(experiment, recorded, study_configs()) or []
    return ["--planned", *cells] if cells else []


@functools.lru_cache(maxsize=1)
def study_configs():
    return matrix.studies(STUDY_CONFIGS)
