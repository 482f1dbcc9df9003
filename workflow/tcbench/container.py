"""Which container image a job runs in, and what the workflow tells the job about it.

Apptainer/Singularity only tell a job the path of the image file it runs from (a cache file
named after a hash of the URL); the workflow therefore passes the image reference it was
configured with into every job, through ``APPTAINERENV_*`` variables, which Apptainer turns
into the job's own environment (``APPTAINERENV_TCBENCH_IMAGE`` becomes ``TCBENCH_IMAGE``). They
mean nothing outside a container, so a job that runs natively is not affected.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

DIGEST = re.compile(r"@(sha256:[0-9a-f]{64})$")
OVERLAY_MANIFEST = "overlay.json"


def image_digest(ref: str | None) -> str | None:
    """``sha256:...`` when the reference pins one (``docker://repo@sha256:...``), else None."""
    match = DIGEST.search(ref or "")
    return match.group(1) if match else None


def image_key(ref: str) -> str:
    """A short, stable folder name for things that belong to one image."""
    return hashlib.sha256(ref.encode()).hexdigest()[:16]


def env_prefix() -> str:
    """The variable prefix that the installed runtime forwards into the container; Snakemake
    prefers ``apptainer`` over ``singularity`` in the same way."""
    return "APPTAINERENV_" if shutil.which("apptainer") or not shutil.which("singularity") \
        else "SINGULARITYENV_"


def job_env(image: str, python_user_base: Path | str | None = None) -> dict[str, str]:
    """What every containerised job should see: the image it was configured with and, when the
    image's Python is completed at run time, where the extra packages are."""
    env = {"TCBENCH_IMAGE": image}
    if python_user_base is not None:
        env["PYTHONUSERBASE"] = str(python_user_base)
    return {env_prefix() + k: v for k, v in env.items()}


def overlay_packages(user_base: str | None) -> dict | None:
    """The packages that were installed on top of the image for this job ({name: version}),
    from the manifest that ``tcbench.imagedeps`` leaves in the user base; None without one."""
    if not user_base:
        return None
    try:
        manifest = json.loads((Path(user_base) / OVERLAY_MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    installed = manifest.get("installed") if isinstance(manifest, dict) else None
    return dict(installed) if isinstance(installed, dict) else None
