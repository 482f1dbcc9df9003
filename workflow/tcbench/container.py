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
    from the manifest that ``tcbench.imagedeps`` leaves in the user base; None without one."""
    if not user_base:
        return None
    try:
        manifest = json.loads((Path(user_base) / OVERLAY_MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    installed = manifest.get("installed") if isinstance(manifest, dict) else None
    return dict(installed) if isinstance(installed, dict) else None
