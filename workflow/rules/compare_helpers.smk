# The cross-GPU comparison's helpers (compare.smk): which sets and experiments it covers.
import csv

COMPARE = config["compare"]
COMPARE_DIR = f"results/{COMPARE['name']}"
# "auto" is this study's own result set, as in run: auto
COMPARE_RUNS = list(dict.fromkeys(RUN if r == "auto" else r for r in COMPARE["runs"]))


def compare_experiments():
    """The experiments the comparison covers: the config's list, else this study's
    experiments that some compared set or reference has (every one where this study's own set
    is built here; only those its records have where it is another device's set)."""
    if COMPARE.get("experiments"):
        return COMPARE["experiments"]
    if RUN in COMPARE_RUNS and not FOREIGN_SET:
        return EXPERIMENTS
    have = set()
    for path in [*(f"results/{r}/{V.SET_TABLES['metrics']}" for r in COMPARE_RUNS),
                 *COMPARE.get("references", [])]:
        if Path(path).exists():
            with open(path, newline="") as f:
                have |= {row.get("experiment") for row in csv.DictReader(f)}
    return [e for e in EXPERIMENTS if e in have]


COMPARE_EXPERIMENTS = compare_experiments()
COMPARE_KINDS = list(V.COMPARE_FIGURES)

if COMPARE["name"] in {RUN, *COMPARE_RUNS}:
    raise WorkflowError(
        f"compare.name={COMPARE['name']!r} is also a result set's name; "
        "choose another, the comparison would overwrite that set"
    )


def compare_metrics(wildcards):
    """This study's own set is built if needed; any other set must already be there."""
    paths = []
    for run in COMPARE_RUNS:
        path = expand(rules.aggregate.output.metrics, run=run)[0]
        if run != RUN and not Path(path).exists():
            raise WorkflowError(
                f"compare.runs: {path} does not exist. Run that study on its machine and "
                f"commit results/{run}/, or drop {run!r} from compare.runs."
            )
        paths.append(path)
    return paths
