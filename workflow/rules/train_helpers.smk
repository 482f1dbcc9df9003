# The measuring rules' helpers (train.smk): how their processes begin, which cell or
# comparison a job is, and what must hold before one starts.
import json

from tcbench.host import sourcetree  # noqa: E402


# How a training job's process begins (docs/job-cost.md): forked from an interpreter that has
# imported torch already and that this workflow's jobs share (tcbench.launch.forkclient), where one can
# serve them: jobs run by this Snakemake process on this host. Under --use-singularity too,
# with a sandbox-folder image: the first job's container starts the server, which outlives that
# job (Apptainer gives a container no PID namespace of its own unless asked), and every later
# job, in a container from the same image with the same binds, reaches it through the socket
# under the shared /tmp; its child runs in that first container (docs/job-cost.md). A SIF's
# mount ends with the first container (CONTAINER_FORKS, container.smk), and a batch job
# (--profile profiles/slurm) would start a server for one job alone: those, and
# fresh_interpreter: true, get python -m tcbench.job.run. Asked when the jobs are made, once
# Snakemake knows its executor (it does not while parsing). The server ends with this Snakemake
# process (forkclient.OWNER_ENV in common.smk's JOB_ENV).


def job_launcher(wildcards=None):
    forked = (not config["fresh_interpreter"] and workflow.local_exec
              and not workflow.remote_exec and (CONTAINER_FORKS or not CONTAINERIZED))
    return "tcbench.launch.forkclient" if forked else "tcbench.job.run"


# one torch.compile cache per result set: its jobs compile the same graphs
COMPILE_CACHE = "resources/compile-cache/{run}"


def interleave_launcher(wildcards):
    """``python -m`` words for an interleaved comparison: forked like a training job where
    those are, else fresh."""
    if job_launcher() == "tcbench.launch.forkclient":
        return ["tcbench.launch.forkclient", "--module", "tcbench.job.interleave"]
    return ["tcbench.job.interleave"]


def calibrate_launcher(wildcards):
    """``python -m`` words for the calibration: forked like a training job where those are
    (it would otherwise import torch for a measurement of a few seconds), by the same server
    (the compile cache is in the environment the server is keyed by), else fresh."""
    if job_launcher() == "tcbench.launch.forkclient":
        return ["tcbench.launch.forkclient", "--module", "tcbench.job.calibrate",
                "--compile-cache", COMPILE_CACHE.format(run=wildcards.run)]
    return ["tcbench.job.calibrate"]


def wave_priority(wave):
    """A measuring job's scheduling priority: repeat (or comparison replicate) k runs in wave
    k, every cell's first before any second, so that a cell's repeats straddle the study's
    drift instead of running back to back; repeats added later join the end."""
    return tcrepeats.wave_priority(wave)


def job_of(wildcards):
    key = f"{wildcards.experiment}/{wildcards.cell}"
    if key not in JOBS and key not in EXTRA_JOBS:
        raise WorkflowError(f"{key} is not a cell of this study's matrix")
    return JOBS.get(key) or EXTRA_JOBS[key]


def job_spec(wildcards):
    job = job_of(wildcards)
    spec = job.spec(wildcards.run)
    # an initial repeat's spec is as it was: its record says "initial"; an added repeat of
    # another device's set was made there, and its record says why (no look here to ask)
    if job.id in EXTRA_JOBS and ADAPTIVE:
        spec["repeat_reason"] = added_repeat(wildcards.run, job)[1]
    return json.dumps(spec, sort_keys=True)


def job_inputs(wildcards):
    return [ancient(p) for p in job_of(wildcards).inputs()]


def added_repeat_input(wildcards):
    """An added repeat's train job follows the look that asked for it."""
    job = job_of(wildcards)
    return [added_repeat(wildcards.run, job)[0]] if job.id in EXTRA_JOBS and ADAPTIVE else []


def comparison_of(wildcards):
    key = f"{wildcards.experiment}/{wildcards.comparison}"
    if key not in COMPARISONS:
        raise WorkflowError(f"{key} is not an interleaved comparison of this study")
    return COMPARISONS[key]


def comparison_spec(wildcards):
    return json.dumps(comparison_of(wildcards).spec(wildcards.run), sort_keys=True)


def comparison_inputs(wildcards):
    return [ancient(p) for p in comparison_of(wildcards).inputs()]


def measuring_checks(jobs):
    """Why the jobs about to run must not start, or None. Only jobs that measure (those that
    claim a GPU) are held to it: the GPU study needs an NVIDIA GPU where they run, and the code
    its records will name."""
    measuring = [job for job in jobs if "gpu" in job.rule.resources]
    if measuring and FOREIGN_SET and not workflow.touch:
        return (f"not starting {len(measuring)} measuring job(s): results/{RUN}/ is the result "
                f"set of another device ({FOREIGN_SET}), whose missing records can only be "
                f"measured there; to read it here, name only its reports (e.g. snakemake "
                f"aggregate figures verdict) or point run: at this machine's own set")
    if not measuring or not config["require_gpu"] or workflow.touch:
        return None
    if any(job.is_local for job in measuring) and not environment.nvidia_gpus():
        return (
            "config requires an NVIDIA GPU (require_gpu: true) and none is visible. "
            "On a machine without a GPU run the CPU smoke study instead: "
            "snakemake --cores 2 --configfile config/smoke.yaml; to compare committed result "
            "sets only: snakemake compare --cores 1"
        )
    why = sourcetree.check_clean(config["allow_dirty"])
    return f"not starting {len(measuring)} measuring job(s): {why}" if why else None
