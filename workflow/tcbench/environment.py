"""Where a record was measured: device, driver, libraries, host, container, code version.

``device_slug()`` names a result set after the hardware (``nvidia-h200``, ``cpu-amd-epyc-...``)
without importing torch, so the workflow can resolve it cheaply at parse time.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from . import container

REPO = Path(__file__).resolve().parents[2]


def slugify(text: str) -> str:
    text = re.sub(r"\((r|tm)\)|\bcpu\b|@.*$", " ", text.lower())
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:60] or "unknown"


def _run(cmd: list[str], timeout: float = 20) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return out.stdout.strip() or None


def nvidia_gpus() -> list[str]:
    """GPU names as nvidia-smi lists them; empty when there is no usable NVIDIA GPU."""
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


def git_info() -> dict:
    """The code version. A copy of the tree without .git (a container build, a remote
    machine) passes it in TCBENCH_GIT_COMMIT / TCBENCH_GIT_DIRTY instead. When set, those win:
    a copy can carry a stale .git (the lent GPU machine's copy had the session's first commit
    while newer code ran), and whoever sets them knows what was shipped."""
    if os.environ.get("TCBENCH_GIT_COMMIT"):
        dirty = os.environ.get("TCBENCH_GIT_DIRTY")
        return {"git_commit": os.environ["TCBENCH_GIT_COMMIT"],
                "git_dirty": None if dirty is None else dirty.lower() in ("1", "true", "yes")}
    commit = _run(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    if commit:
        status = _run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])
        return {"git_commit": commit, "git_dirty": bool(status)}
    if not shutil.which("git"):
        # no git in the container image: the commit can still be read, cleanliness cannot
        head = _head_commit(REPO / ".git")
        if head:
            return {"git_commit": head, "git_dirty": None}
    return {"git_commit": None, "git_dirty": None}


def _head_commit(git: Path) -> str | None:
    """HEAD's commit read from the repository files, following a worktree's ``gitdir:`` link,
    a symbolic ref and packed refs; None when any part is unreadable."""
    try:
        if git.is_file():
            git = (git.parent / git.read_text().split("gitdir:", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head if re.fullmatch(r"[0-9a-f]{40,64}", head) else None
        ref = head[4:].strip()
        common = git
        if (git / "commondir").is_file():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        for base in (git, common):
            if (base / ref).is_file():
                return (base / ref).read_text().strip()
        for line in (common / "packed-refs").read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref:
                return sha
    except (OSError, IndexError):
        pass
    return None


def container_info() -> dict:
    """Which container, if any, the job runs in. Apptainer/Singularity export the path of the
    image file they run (a cache file, under Snakemake); the workflow adds the reference it was
    configured with (TCBENCH_IMAGE, see tcbench.container), whose digest, when pinned, names
    the image exactly. An image built from containers/ names its base (TCBENCH_BASE_IMAGE)."""
    env = os.environ
    image_file = env.get("APPTAINER_CONTAINER") or env.get("SINGULARITY_CONTAINER")
    name = env.get("APPTAINER_NAME") or env.get("SINGULARITY_NAME")
    apptainer = "APPTAINER_CONTAINER" in env or "APPTAINER_NAME" in env
    singularity = "SINGULARITY_CONTAINER" in env or "SINGULARITY_NAME" in env
    inside = bool(apptainer or singularity or Path("/.singularity.d").exists()
                  or Path("/.dockerenv").exists())
    runtime = ("apptainer" if apptainer else "singularity" if singularity else
               "docker" if Path("/.dockerenv").exists() else None)
    ours = apptainer or singularity  # the variables below are only ever set for these
    ref = env.get("TCBENCH_IMAGE") if ours else None
    return {"in_container": inside, "container_runtime": runtime,
            "container_image": ref or image_file, "container_image_file": image_file,
            "container_name": name, "container_image_ref": ref,
            "container_image_digest": (env.get("TCBENCH_IMAGE_DIGEST")
                                       or container.image_digest(ref)) if ours else None,
            "container_base_image": env.get("TCBENCH_BASE_IMAGE") if inside else None,
            "container_python_overlay": container.overlay_packages(env.get("PYTHONUSERBASE"))
            if ref else None}


def config_hash(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def collect(device) -> dict:
    """Everything about the machine and software a record should carry."""
    from importlib.metadata import PackageNotFoundError, version

    import torch

    from . import __version__

    try:  # importing torchvision just for its version costs seconds per job
        torchvision_version = version("torchvision")
    except PackageNotFoundError:
        torchvision_version = None

    env = {
        "hostname": socket.gethostname(),
        "timestamp_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_version": torch.__version__,
        "torchvision_version": torchvision_version,
        "cuda_runtime_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version() if torch.backends.cudnn.is_available()
        else None,
        "tcbench_version": __version__,
        "device_type": device.type,
        "device_name": cpu_model() if device.type == "cpu" else torch.cuda.get_device_name(device),
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
    return env | git_info() | container_info()


def gpu_identity(uuid: str, local_index: int, gpus=None) -> dict:
    """The physical index (nvidia-smi's, the same whatever CUDA_VISIBLE_DEVICES says) of the
    device with this UUID, and who chose the device: ``tcbench`` (a lock claimed by
    tcbench.gpus), ``environment`` (CUDA_VISIBLE_DEVICES set beforehand, e.g. by SLURM), or
    None (every GPU was visible)."""
    from . import gpus as G

    claim = G.held()
    by = ("tcbench" if claim and claim.gpu.uuid == uuid else
          "environment" if "CUDA_VISIBLE_DEVICES" in os.environ else None)
    try:
        known = {g.uuid: g.index for g in (G.discover() if gpus is None else gpus)}
    except ValueError:  # nvidia-smi output not understood: a record is still worth writing
        known = {}
    # without nvidia-smi, the index CUDA uses is the best there is (physical when all are visible)
    return {"gpu_index": known.get(uuid, local_index), "gpu_pinned_by": by}


def scheduler_info() -> dict:
    """The batch job this ran in, if any: proof a job went through SLURM, and where to look."""
    env = os.environ
    return {"slurm_job_id": env.get("SLURM_JOB_ID"),
            "slurm_job_partition": env.get("SLURM_JOB_PARTITION"),
            "slurm_job_nodelist": env.get("SLURM_JOB_NODELIST")}


def _driver_version() -> str | None:
    try:
        import pynvml
        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else v
    except Exception:  # noqa: BLE001 - fall back to the command line tool
        out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        return out.splitlines()[0].strip() if out else None
