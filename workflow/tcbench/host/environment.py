"""Where a record was measured: device, driver, libraries, host, container (the code that ran
is tcbench.host.sourcetree's).

``device_slug()`` names a result set after the hardware (``nvidia-h200``, ``cpu-amd-epyc-...``)
without importing torch, so the workflow can resolve it cheaply at parse time.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
from datetime import datetime, timezone
from pathlib import Path

from . import container
from .sourcetree import git_info, run_quiet as _run



def slugify(text: str) -> str:
    text = re.sub(r"\((r|tm)\)|\bcpu\b|@.*$", " ", text.lower())
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:60] or "unknown"


def nvidia_gpus() -> list[str]:
    """GPU names in nvidia-smi's order (NVML, else nvidia-smi); empty when there is no usable
    NVIDIA GPU."""
    from . import gpus

    lib = gpus.nvml()
    if lib is not None:
        try:
            return [gpus._text(lib.nvmlDeviceGetName(lib.nvmlDeviceGetHandleByIndex(i)))
                    for i in range(lib.nvmlDeviceGetCount())]
        except Exception:  # noqa: BLE001 - NVML errors: ask nvidia-smi instead
            pass
    out = _run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    return [line.strip() for line in out.splitlines() if line.strip()] if out else []


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def device_slug() -> str:
    gpus = nvidia_gpus()
    if gpus:
        return slugify(gpus[0])
    return "cpu-" + slugify(cpu_model())


def device_of(name: str) -> str | None:
    """The device slug a result set's name carries (``nvidia-h200``; ``smoke-cpu-amd-epyc``:
    cpu-amd-epyc), None for a name that carries none (``run: my-models``)."""
    found = re.search(r"(?:^|-)((?:nvidia|cpu|amd|intel)-.+)$", name)
    return found.group(1) if found else None


def foreign_device_set(run: str) -> str | None:
    """The device a result set is named after, when that is not this machine: a name shaped
    like a device slug (``nvidia-...``, ``cpu-...``) other than this machine's own. None for
    this machine's set and for sets named freely (``run: my-models``)."""
    if not re.match(r"^(nvidia|cpu|amd|intel)-", run):
        return None
    here = device_slug()
    return None if run == here or run.startswith(here + "-") else run


# ---------------------------------------------------------------------------- where it runs
ALLOW_DIRTY_ENV = "TCBENCH_ALLOW_DIRTY"
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv", "/.singularity.d")
CGROUP = Path("/proc/1/cgroup")


def host_containerised() -> bool:
    """Whether this process's host is itself a container (Docker, Podman, Apptainer,
    Kubernetes, LXC), by the usual markers."""
    if any(Path(p).exists() for p in CONTAINER_MARKERS) or os.environ.get("container"):
        return True
    if any(k in os.environ for k in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER",
                                     "KUBERNETES_SERVICE_HOST")):
        return True
    try:
        cgroup = CGROUP.read_text()
    except OSError:
        return False
    return any(m in cgroup for m in ("docker", "kubepods", "containerd", "lxc", "libpod"))


def container_info() -> dict:
    """How the job ran: ``execution`` is ``workflow-image`` when the workflow ran it in its
    configured image (``--use-singularity``; then ``container_image`` names that image and
    ``container_image_digest`` its digest when pinned), ``native`` otherwise; natively,
    ``host_containerised`` says whether the host happens to be a container itself (the H200
    host of the committed set is one), so "no image" and "a container anyway" are told apart.

    Apptainer/Singularity export the path of the image file they run (a cache file, under
    Snakemake); the workflow adds the reference it was configured with (``TCBENCH_IMAGE``, see
    tcbench.host.container), which is only believed inside Apptainer/Singularity. An image built
    from containers/ names its base (``TCBENCH_BASE_IMAGE``); the workflow also tells the
    digest of a local SIF, whether the image is a sandbox folder, and the runtime's version
    as the host reported it (``TCBENCH_IMAGE_DIGEST``, ``_KIND``,
    ``TCBENCH_CONTAINER_RUNTIME_VERSION``)."""
    env = os.environ
    image_file = env.get("APPTAINER_CONTAINER") or env.get("SINGULARITY_CONTAINER")
    apptainer = "APPTAINER_CONTAINER" in env or "APPTAINER_NAME" in env
    singularity = "SINGULARITY_CONTAINER" in env or "SINGULARITY_NAME" in env
    ref = env.get("TCBENCH_IMAGE") if apptainer or singularity else None
    docker = Path("/.dockerenv").exists()
    runtime = ("apptainer" if apptainer else "singularity" if singularity else
               "docker" if docker else None)
    return {"execution": "workflow-image" if ref else "native",
            "host_containerised": None if ref else host_containerised(),
            "container_runtime": runtime,
            "container_image": ref,
            "container_image_digest": env.get("TCBENCH_IMAGE_DIGEST") or container.image_digest(ref)
            if ref else None,
            "container_image_file": image_file,
            "container_image_kind": env.get("TCBENCH_IMAGE_KIND") if ref else None,
            "container_runtime_version": env.get("TCBENCH_CONTAINER_RUNTIME_VERSION")
            if ref else None,
            "container_name": env.get("APPTAINER_NAME") or env.get("SINGULARITY_NAME"),
            "container_base_image": env.get("TCBENCH_BASE_IMAGE"),
            "container_python_overlay": container.overlay_packages(env.get("PYTHONUSERBASE"))
            if ref else None}


def shell_prefix(exports: dict[str, str]) -> str:
    """A shell prefix for every job's command (Snakemake's ``shell.prefix``) that exports
    ``exports`` inside the job, container or not, and keeps Snakemake's strict bash mode."""
    import shlex

    parts = ["set -euo pipefail;"]
    if exports:
        parts.append("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in exports.items())
                     + ";")
    # Snakemake formats the prefix like a shell command: braces must be doubled
    return (" ".join(parts) + " ").replace("{", "{{").replace("}", "}}")


def config_hash(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def collect(device) -> dict:
    """Everything about the machine and software a record should carry. On every job's path:
    no subprocess but one ``git status`` (NVML answers the GPU questions), each fact read once."""
    from importlib.metadata import PackageNotFoundError, version

    import torch

    from .. import __version__

    try:  # importing torchvision just for its version costs seconds per job
        torchvision_version = version("torchvision")
    except PackageNotFoundError:
        torchvision_version = None

    cpu = cpu_model()
    env = {
        "hostname": socket.gethostname(),
        "timestamp_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "torch_version": torch.__version__,
        "torchvision_version": torchvision_version,
        # what torch was built against, whatever the device; the runtime only where one ran
        "torch_cuda_version": torch.version.cuda,
        "cuda_runtime_version": torch.version.cuda if device.type == "cuda" else None,
        "cudnn_version": torch.backends.cudnn.version() if torch.backends.cudnn.is_available()
        else None,
        "tcbench_version": __version__,
        "device_type": device.type,
        "device_name": cpu if device.type == "cpu" else torch.cuda.get_device_name(device),
        "gpu_index": None, "gpu_uuid": None, "compute_capability": None, "sm_count": None,
        "gpu_memory_total_bytes": None, "driver_version": None,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpu_pinned_by": None,
        **scheduler_info(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        uuid = str(props.uuid)
        uuid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        local = device.index if device.index is not None else torch.cuda.current_device()
        env |= {
            **gpu_identity(uuid, local),
            "gpu_uuid": uuid,
            "compute_capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count,
            "gpu_memory_total_bytes": int(props.total_memory),
            "driver_version": _driver_version(),
        }
    allowed = os.environ.get(ALLOW_DIRTY_ENV, "").lower() in ("1", "true", "yes")
    return env | git_info() | {"allow_dirty": allowed} | container_info()


def gpu_identity(uuid: str, local_index: int, devices=None) -> dict:
    """The physical index (nvidia-smi's, the same whatever CUDA_VISIBLE_DEVICES says) of the
    device with this UUID, and who chose the device: ``tcbench`` (a lock claimed by
    tcbench.host.gpus), ``environment`` (CUDA_VISIBLE_DEVICES set beforehand, e.g. by SLURM), or
    None (every GPU was visible)."""
    from . import gpus

    claim = gpus.held()
    if claim and claim.gpu.uuid == uuid:  # tcbench.host.gpus listed the devices already
        return {"gpu_index": claim.gpu.index, "gpu_pinned_by": "tcbench"}
    by = "environment" if "CUDA_VISIBLE_DEVICES" in os.environ else None
    try:
        known = {g.uuid: g.index for g in (gpus.discover() if devices is None else devices)}
    except ValueError:  # nvidia-smi output not understood: a record is still worth writing
        known = {}
    # without NVML or nvidia-smi, CUDA's index is the best there is (physical when all visible)
    return {"gpu_index": known.get(uuid, local_index), "gpu_pinned_by": by}


def scheduler_info() -> dict:
    """The batch job this ran in, if any: proof a job went through SLURM, and where to look."""
    env = os.environ
    return {"slurm_job_id": env.get("SLURM_JOB_ID"),
            "slurm_job_partition": env.get("SLURM_JOB_PARTITION"),
            "slurm_job_nodelist": env.get("SLURM_JOB_NODELIST")}


def _driver_version() -> str | None:
    from . import gpus

    lib = gpus.nvml()
    try:
        return gpus._text(lib.nvmlSystemGetDriverVersion()) if lib else None
    except Exception:  # noqa: BLE001 - an NVML error leaves the field empty, not the record
        return None
