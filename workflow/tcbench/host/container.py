"""Which container image a job runs in, and what the workflow tells the job about it.

Apptainer/Singularity only tell a job the path of the image file it runs from (a cache file
named after a hash of the URL); the workflow therefore exports the image reference it was
configured with (``TCBENCH_IMAGE``) at the start of every containerised job's shell command,
which runs inside the container. A record believes it only inside Apptainer/Singularity
(``environment.container_info``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

DIGEST = re.compile(r"@(sha256:[0-9a-f]{64})$")
OVERLAY_MANIFEST = "overlay.json"
RUNTIMES = ("apptainer", "singularity")
LOCAL_PREFIXES = ("", "file://")


def image_digest(ref: str | None) -> str | None:
    """``sha256:...`` when the reference pins one (``docker://repo@sha256:...``), else None."""
    match = DIGEST.search(ref or "")
    return match.group(1) if match else None


def image_key(ref: str) -> str:
    """A short, stable folder name for things that belong to one image."""
    return hashlib.sha256(ref.encode()).hexdigest()[:16]


def job_env(image: str, python_user_base: Path | str | None = None) -> dict[str, str]:
    """What every containerised job should see: the image it was configured with and, when the
    image's Python is completed at run time, where the extra packages are. The workflow exports
    these inside the job's shell (``environment.shell_prefix``)."""
    env = {"TCBENCH_IMAGE": image}
    if python_user_base is not None:
        env["PYTHONUSERBASE"] = str(python_user_base)
    return env


def overlay_packages(user_base: str | None) -> dict | None:
    """The packages that were installed on top of the image for this job ({name: version}),
    from the manifest that ``tcbench.host.imagedeps`` leaves in the user base; None without one."""
    if not user_base:
        return None
    try:
        manifest = json.loads((Path(user_base) / OVERLAY_MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    installed = manifest.get("installed") if isinstance(manifest, dict) else None
    return dict(installed) if isinstance(installed, dict) else None


def local_image(ref: str) -> Path | None:
    """The image file or sandbox folder a reference names on this host (a path, ``file://``
    or a path ending in ``.sif``/``.simg``), else None (``docker://``, ``oras://``, ...)."""
    if "://" in ref and not ref.startswith("file://"):
        return None
    path = Path(ref.removeprefix("file://"))
    return path if path.exists() else None


def file_digest(path: Path, cache_dir: Path | None = None) -> str:
    """``sha256:...`` of an image file, kept beside the workflow's other per-image state and
    keyed by the file's size and mtime: a SIF is ~1 GB, and hashing it for every Snakemake
    invocation would cost seconds each time."""
    st = path.stat()
    stamp = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    memo = cache_dir / f"{image_key(stamp)}.sha256" if cache_dir else None
    if memo is not None and memo.exists():
        return memo.read_text().strip()
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    digest = f"sha256:{h.hexdigest()}"
    if memo is not None:
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(digest + "\n")
    return digest


def image_identity(ref: str, cache_dir: Path | None = None) -> dict[str, str]:
    """What a record can say about the image beyond its reference: the digest of a local SIF
    (the reference pins none itself), or that the image is a sandbox folder (no single file
    to digest: its contents can change under the same path)."""
    path = local_image(ref)
    if path is None:
        return {}
    if path.is_dir():
        return {"TCBENCH_IMAGE_KIND": "sandbox"}
    return {"TCBENCH_IMAGE_KIND": "file", "TCBENCH_IMAGE_DIGEST": file_digest(path, cache_dir)}


def runtime(which=shutil.which) -> str | None:
    """The container runtime Snakemake will start the jobs with (it tries apptainer first)."""
    return next((exe for exe in map(which, RUNTIMES) if exe is not None), None)


def runtime_version(which=shutil.which) -> str | None:
    """``apptainer version 1.4.5`` (or singularity's), as the host's runtime reports it."""
    exe = runtime(which)
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or out.stderr).strip() or None


def squashfs_offset(sif: Path, runtime: str) -> int:
    """Where a SIF's root file system (its squashfs partition) starts, from ``apptainer sif
    list``."""
    listed = subprocess.run([runtime, "sif", "list", str(sif)], capture_output=True, text=True)
    for line in listed.stdout.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) >= 5 and cells[4].startswith("FS (Squashfs"):
            return int(cells[3].split("-")[0])
    raise RuntimeError(f"{runtime} sif list {sif}: no squashfs partition\n"
                       f"{(listed.stderr or listed.stdout)[-2000:]}")


def unsquashfs(runtime: str, which=shutil.which) -> str:
    """The unsquashfs beside the runtime (Apptainer's own) or on PATH."""
    beside = Path(which(runtime) or runtime).resolve().parent / "unsquashfs"
    found = str(beside) if beside.exists() else which("unsquashfs")
    if found is None:
        raise RuntimeError("no unsquashfs beside apptainer or on PATH: install squashfs-tools "
                           "(or give --config fresh_interpreter=true)")
    return found


def sandbox_of(sif: Path, digest: str, root: Path, runtime: str) -> Path:
    """``sif`` unpacked once into a sandbox folder under ``root``, named by its digest, so that
    its jobs can be forked from one server: unprivileged, Apptainer mounts a SIF with a
    squashfuse that ends with the container that made it, which a server outliving the first
    job's container cannot survive; a folder needs no mount. The SIF's root file system is
    unsquashed from its offset (``apptainer build --sandbox`` would start a container, which
    root without every capability may not). Made under a temporary name and renamed, so a
    folder that is there is whole."""
    dest = root / digest.removeprefix("sha256:")[:16]
    if (dest / ".tcbench-unpacked").exists():
        return dest
    partial = root / f".{dest.name}.partial"
    for stale in (partial, dest):
        shutil.rmtree(stale, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([unsquashfs(runtime), "-q", "-n", "-o",
                           str(squashfs_offset(sif, runtime)), "-d", str(partial), str(sif)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise RuntimeError(f"unsquashfs {sif} into {partial} failed:\n"
                           f"{(done.stderr or done.stdout)[-2000:]}")
    (partial / ".tcbench-unpacked").write_text(digest + "\n")
    partial.rename(dest)
    return dest
