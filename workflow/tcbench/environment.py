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
    """GPU names in nvidia-smi's order (NVML, else nvidia-smi); empty when there is no usable
    NVIDIA GPU."""
    from . import gpus as G

    lib = G.nvml()
    if lib is not None:
        try:
            return [G._text(lib.nvmlDeviceGetName(lib.nvmlDeviceGetHandleByIndex(i)))
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


# What counts as the code: the tree minus the result sets a study writes into it (committed
# results/ are rewritten by every aggregation; that is data, not a change to what ran).
NOT_CODE = ("results/",)
# untracked files that can change what runs (a new module the package imports)
UNTRACKED_CODE = ("workflow/",)
MANIFEST = ".tcbench-tree.json"  # see tree_manifest()
MAX_DIRTY_FILES = 50


def _is_code(path: str) -> bool:
    return not path.startswith(NOT_CODE) and path != MANIFEST


def _git_status(repo: Path) -> tuple[str, list[str]] | None:
    """HEAD's commit and the code files that differ from it (modified, staged, deleted, or new
    under workflow/), from one ``git status`` call; None without git or a repository."""
    out = _run(["git", "-C", str(repo), "status", "--porcelain=v2", "--branch", "-z",
                "--untracked-files=all", "--", ".", ":(exclude)results"])
    if out is None:
        return None
    commit, files, entries = None, [], iter(out.split("\0"))
    for entry in entries:
        if entry.startswith("# branch.oid "):
            commit = entry.split()[-1]
        elif entry.startswith(("1 ", "u ")):
            files.append(entry.split(" ", 8 if entry[0] == "1" else 10)[-1])
        elif entry.startswith("2 "):
            files.append(entry.split(" ", 9)[-1])
            next(entries, None)  # the rename's original path
        elif entry.startswith("? ") and entry[2:].startswith(UNTRACKED_CODE):
            files.append(entry[2:])
    if commit is None or not re.fullmatch(r"[0-9a-f]{40,64}", commit):
        return None  # no commit yet ("(initial)"), or output not understood
    return commit, sorted(f for f in files if _is_code(f))


def _blob_sha(path: Path) -> str | None:
    """git's object name of a file's content (``git hash-object``), without git."""
    try:
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    except OSError:
        return None
    header = f"blob {len(data)}\0".encode()
    return hashlib.sha1(header + data).hexdigest()


def tree_manifest(repo: Path = REPO) -> dict:
    """HEAD's commit and the object name of every code file in it: shipped with a copy of the
    tree that has no usable .git (``python -m tcbench.environment manifest``), it lets a job
    there prove its files are the commit's (``git_info``)."""
    head = _git_status(repo)
    listing = _run(["git", "-C", str(repo), "ls-tree", "-r", "-z", "--full-tree", "HEAD"])
    if head is None or listing is None:
        raise RuntimeError(f"{repo}: not a git checkout with a commit")
    files = {}
    for entry in filter(None, listing.split("\0")):
        meta, _, path = entry.partition("\t")
        mode, kind, sha = meta.split()
        if kind == "blob" and _is_code(path):
            files[path] = sha
    return {"commit": head[0], "dirty_when_written": head[1], "files": files}


def _compare_with_manifest(repo: Path, manifest: dict) -> list[str]:
    """Code files of this tree that differ from the manifest's commit (changed, missing, or new
    under workflow/)."""
    known = manifest["files"]
    differ = [p for p, sha in known.items() if _blob_sha(repo / p) != sha]
    for top in UNTRACKED_CODE:
        for path in (repo / top).rglob("*"):
            rel = path.relative_to(repo).as_posix()
            if path.is_file() and rel not in known and "__pycache__" not in path.parts:
                differ.append(rel)
    return sorted(differ)


def _read_manifest(repo: Path) -> dict | None:
    path = Path(os.environ.get("TCBENCH_TREE_MANIFEST") or repo / MANIFEST)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("files"), dict) and doc.get("commit")
    return doc if ok else None


def git_info(repo: Path = REPO) -> dict:
    """The commit of the code that runs, and whether the code differs from it.

    ``git_dirty`` is True or False only with evidence, None when it cannot be told:

    - a git checkout: ``git status`` says (one call; results/ is data, not code; new files
      under workflow/ count, other untracked files do not);
    - a copy without a usable .git (a container, a remote machine whose copy carries a stale
      .git) names what was shipped in ``TCBENCH_GIT_COMMIT``, which wins over such a .git. Its
      files are checked against a manifest of that commit (``.tcbench-tree.json`` at the root
      or ``$TCBENCH_TREE_MANIFEST``, written by ``python -m tcbench.environment manifest``);
      without one, ``TCBENCH_GIT_DIRTY=1`` is taken at its word (dirty), anything else is
      unknown (None): the shipper's "clean" is a claim, not evidence.
    - no git at all: HEAD's commit is read from the .git files; cleanliness is unknown.
    """
    shipped = os.environ.get("TCBENCH_GIT_COMMIT") or None
    status = _git_status(repo)
    if status is not None and shipped in (None, status[0]):
        commit, files = status
        return _git_fields(commit, bool(files), files, "git")
    if shipped:
        manifest = _read_manifest(repo)
        if manifest is not None and manifest["commit"] == shipped:
            files = _compare_with_manifest(repo, manifest)
            return _git_fields(shipped, bool(files), files, "manifest")
        claimed = (os.environ.get("TCBENCH_GIT_DIRTY") or "").lower() in ("1", "true", "yes")
        return _git_fields(shipped, True if claimed else None, None, "TCBENCH_GIT_COMMIT")
    head = _head_commit(repo / ".git")
    return _git_fields(head, None, None, "git-files" if head else None)


def _git_fields(commit, dirty, files, source) -> dict:
    return {"git_commit": commit, "git_dirty": dirty,
            "git_dirty_files": None if files is None else files[:MAX_DIRTY_FILES],
            "git_source": source}


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


def check_clean(allow_dirty: bool, repo: Path = REPO) -> str | None:
    """Why a measuring run must not start on this tree, or None when it may: the code differs
    from its commit (naming the files), or whether it does cannot be told; ``allow_dirty``
    lets either through (the records then say so)."""
    if allow_dirty:
        return None
    info = git_info(repo)
    if info["git_dirty"] is False:
        return None
    if info["git_dirty"]:
        files = info["git_dirty_files"] or []
        shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10
                                         else "")
        what = f"the code differs from commit {str(info['git_commit'])[:12]}" + \
            (f": {shown}" if shown else " (TCBENCH_GIT_DIRTY)")
    else:
        what = ("whether the code is that of a commit cannot be told (no git checkout, and no "
                f"{MANIFEST} for TCBENCH_GIT_COMMIT; python -m tcbench.environment manifest "
                "writes one)")
    return (f"{what}. A GPU study records the commit it ran; commit the changes, or set "
            "allow_dirty: true (--config allow_dirty=True) and the records will say so.")


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
    ``host_containerised`` says whether the host happens to be a container itself (the lent
    H200 is one), so "no image" and "a container anyway" are told apart.

    Apptainer/Singularity export the path of the image file they run (a cache file, under
    Snakemake); the workflow adds the reference it was configured with (``TCBENCH_IMAGE``, see
    tcbench.container), which is only believed inside Apptainer/Singularity. An image built
    from containers/ names its base (``TCBENCH_BASE_IMAGE``)."""
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

    from . import __version__

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


def gpu_identity(uuid: str, local_index: int, gpus=None) -> dict:
    """The physical index (nvidia-smi's, the same whatever CUDA_VISIBLE_DEVICES says) of the
    device with this UUID, and who chose the device: ``tcbench`` (a lock claimed by
    tcbench.gpus), ``environment`` (CUDA_VISIBLE_DEVICES set beforehand, e.g. by SLURM), or
    None (every GPU was visible)."""
    from . import gpus as G

    claim = G.held()
    if claim and claim.gpu.uuid == uuid:  # tcbench.gpus listed the devices already
        return {"gpu_index": claim.gpu.index, "gpu_pinned_by": "tcbench"}
    by = "environment" if "CUDA_VISIBLE_DEVICES" in os.environ else None
    try:
        known = {g.uuid: g.index for g in (G.discover() if gpus is None else gpus)}
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
    from . import gpus as G

    lib = G.nvml()
    try:
        return G._text(lib.nvmlSystemGetDriverVersion()) if lib else None
    except Exception:  # noqa: BLE001 - an NVML error leaves the field empty, not the record
        return None


def main(argv=None) -> int:
    """``python -m tcbench.environment manifest [--out PATH]``: write the tree manifest that
    lets a copy of this checkout without .git prove it is HEAD (see git_info)."""
    import argparse
    import sys

    from . import atomic

    ap = argparse.ArgumentParser(prog="python -m tcbench.environment", description=main.__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("manifest", help=f"write {MANIFEST} for HEAD")
    m.add_argument("--out", type=Path, default=REPO / MANIFEST)
    args = ap.parse_args(argv)
    try:
        doc = tree_manifest(REPO)
    except RuntimeError as exc:
        print(f"tcbench.environment: error: {exc}", file=sys.stderr)
        return 2
    atomic.write_json(args.out, doc)
    dirty = doc["dirty_when_written"]
    print(f"{args.out}: {len(doc['files'])} files of {doc['commit']}"
          + (f"; the tree differs from it in {len(dirty)} file(s): {', '.join(dirty[:5])}"
             if dirty else ""))
    print(f"export TCBENCH_GIT_COMMIT={doc['commit']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
