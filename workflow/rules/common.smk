# The study matrix, resolved once at parse time; every bad value stops here, before any job.
import json
import re
import sys

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from tcbench import environment, matrix  # noqa: E402
from tcbench import vocabulary as V  # noqa: E402
from tcbench.vocabulary import ConfigError  # noqa: E402

if config.get("require_gpu") and not environment.nvidia_gpus():
    raise WorkflowError(
        "config requires an NVIDIA GPU (require_gpu: true) and nvidia-smi finds none. "
        "On a machine without a GPU run the CPU smoke study instead: "
        "snakemake --cores 2 --configfile config/smoke.yaml; to compare committed result sets "
        "only: snakemake compare --cores 1 --config require_gpu=False"
    )

try:
    JOBS = matrix.expand(config)
    RUN = matrix.resolve_run(config)
except ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

RESULTS = f"results/{RUN}"
EXPERIMENTS = list(dict.fromkeys(job.experiment for job in JOBS.values()))
FIGURE_KINDS = list(V.FIGURES)
FIGURE_FORMATS = ["pdf", "svg", "png"]
TCBENCH_SRC = str(Path(workflow.basedir) / "workflow")


# Only this study's result set is built; another set under results/ (say, committed from another
# machine) is input data, never re-made from records this machine does not have.
wildcard_constraints:
    run=re.escape(RUN),
    experiment=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    cell=r"[A-Za-z0-9][A-Za-z0-9._+-]*",
    kind="|".join(FIGURE_KINDS),
    ext="|".join(FIGURE_FORMATS),


def job_of(wildcards):
    key = f"{wildcards.experiment}/{wildcards.cell}"
    if key not in JOBS:
        raise WorkflowError(f"{key} is not a cell of this study's matrix")
    return JOBS[key]


def job_spec(wildcards):
    return json.dumps(job_of(wildcards).spec(wildcards.run), sort_keys=True)


def job_inputs(wildcards):
    return [ancient(p) for p in job_of(wildcards).inputs()]


def record_paths(run=None):
    return [f"results/{run or RUN}/records/{key}.json" for key in JOBS]


def calibration_path():
    return f"{RESULTS}/calibration.json" if config.get("calibrate", {}).get("enabled", True) else []


def figure_paths():
    return expand(
        f"{RESULTS}/figures/{{experiment}}_{{kind}}.{{ext}}",
        experiment=EXPERIMENTS,
        kind=FIGURE_KINDS,
        ext=FIGURE_FORMATS,
    )


def all_targets():
    return [
        *record_paths(),
        f"{RESULTS}/metrics.csv",
        f"{RESULTS}/summary.csv",
        f"{RESULTS}/speedup.csv",
        f"{RESULTS}/speedup.md",
        *figure_paths(),
        *publication_paths(),
    ]
