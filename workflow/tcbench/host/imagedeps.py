"""Complete a container image's Python with what tcbench needs, without rebuilding the image.

The workflow's default image is the official PyTorch one: torch, torchvision and numpy, but
no pandas, seaborn, scikit-learn, ... . Under ``--sdm apptainer`` one job runs this module in
the image before any other job::

    python -m tcbench.host.imagedeps --requirements containers/requirements.txt \\
        --constraints containers/constraints.txt --user-base resources/container-python/KEY \\
        --image docker://... --out resources/container-python/KEY/overlay.json

It checks every requirement against what the image has, and installs only the missing ones
(``pip install --user``, at the versions pinned in the constraints file, into the given user
base, which every later job of the run puts on its ``sys.path`` through ``PYTHONUSERBASE``).
torch and torchvision are never installed: an image with an unfit torch is the wrong image,
and the job says so. An image built from ``containers/`` already has everything: nothing is
installed, nothing is downloaded. The manifest it writes says what came from where, and every
record carries the installed part.

Exit status: 0 when every requirement is met (manifest written), 2 when not (nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .. import atomic, cli

# Never installed on top of an image: they are what the image is chosen for.
IMAGE_PROVIDED = ("torch", "torchvision")
# Distribution name -> module to import, where they differ.
MODULES = {"scikit-learn": "sklearn", "pyyaml": "yaml", "nvidia-ml-py": "pynvml",
           "pillow": "PIL"}
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*([^;#]*?)\s*(?:[;#].*)?$")

PROBE = r"""
import importlib, importlib.metadata as md, json, site, sys
user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
overlay = {d.metadata["Name"]: d.version for d in md.distributions(path=[user_site])} \
    if user_site else {}
out = {}
for name, module in json.loads(sys.argv[1]).items():
    try:
        version = md.version(name)
    except md.PackageNotFoundError:
        out[name] = {"version": None, "error": "not installed"}
        continue
    try:
        importlib.import_module(module)
        out[name] = {"version": version, "error": None}
    except Exception as exc:  # a broken install is as bad as a missing one
        out[name] = {"version": version, "error": f"import {module}: {type(exc).__name__}: {exc}"}
print(json.dumps({"python": sys.version.split()[0], "executable": sys.executable,
                  "user_site": user_site, "overlay": overlay, "packages": out}))
"""


class ImageDepsError(RuntimeError):
    """The image cannot run tcbench; the message says what is missing and what to do."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_requirements(path: Path) -> list[tuple[str, str]]:
    """``[(name, specifier)]`` from a requirements file of plain ``name>=x`` lines."""
    reqs = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = REQUIREMENT.match(line)
        if not m or line.lstrip().startswith("-"):
            raise ImageDepsError(f"{path}:{n}: not a plain requirement: {line.strip()!r}")
        reqs.append((canonical(m.group(1)), m.group(2).replace(" ", "")))
    return reqs


def _specifier_set(spec: str):
    try:
        from packaging.specifiers import SpecifierSet
    except ImportError:  # every pip carries a copy
        from pip._vendor.packaging.specifiers import SpecifierSet
    return SpecifierSet(spec)


def satisfied(version: str | None, spec: str) -> bool:
    return version is not None and (not spec or _specifier_set(spec).contains(
        version, prereleases=True))


def probe(reqs: list[tuple[str, str]], user_base: Path, python: str = sys.executable) -> dict:
    """What the image's Python (seeing ``user_base``) has of each requirement: a fresh
    interpreter, because a user site that did not exist at start-up is not on ``sys.path``."""
    env = dict(os.environ, PYTHONUSERBASE=str(user_base))
    modules = {name: MODULES.get(name, name.replace("-", "_")) for name, _ in reqs}
    proc = subprocess.run([python, "-c", PROBE, json.dumps(modules)], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ImageDepsError(f"could not inspect the image's Python ({python}):\n{proc.stderr}")
    return json.loads(proc.stdout)


def unmet(reqs: list[tuple[str, str]], packages: dict) -> list[tuple[str, str]]:
    return [(name, spec) for name, spec in reqs
            if packages.get(name, {}).get("error") is not None
            or not satisfied(packages.get(name, {}).get("version"), spec)]


def describe(name: str, spec: str, packages: dict) -> str:
    found = packages.get(name, {})
    why = found.get("error") or f"found {found.get('version')}"
    return f"{name}{spec} ({why})"


def pip_command(reqs: list[tuple[str, str]], constraints: Path,
                python: str = sys.executable) -> list[str]:
    return [python, "-m", "pip", "install", "--user", "--no-cache-dir",
            "--disable-pip-version-check", "--no-warn-script-location", "--progress-bar", "off",
            "--constraint", str(constraints), *(f"{name}{spec}" for name, spec in reqs)]


def ensure(requirements: Path, constraints: Path, user_base: Path, image: str | None = None,
           python: str = sys.executable) -> dict:
    """Check, install what is missing, check again; returns the manifest."""
    reqs = read_requirements(requirements)
    first = probe(reqs, user_base, python)
    missing = unmet(reqs, first["packages"])
    wrong_image = [r for r in missing if r[0] in IMAGE_PROVIDED]
    if wrong_image:
        raise ImageDepsError(
            f"the image {image or ''} cannot run tcbench: it lacks "
            + ", ".join(describe(*r, first["packages"]) for r in wrong_image)
            + ". Point the workflow at an image with a fitting PyTorch "
            "(--config container=docker://...), see docs/containers.md.")
    if missing and first["user_site"] is None:
        raise ImageDepsError(
            f"the image {image or ''} lacks "
            + ", ".join(describe(*r, first["packages"]) for r in missing)
            + ", and its Python reads no user site (a virtualenv, or PYTHONNOUSERSITE is set), "
            "so they cannot be added at run time. Build the tcbench image instead: see "
            "docs/containers.md.")
    if missing:
        user_base.mkdir(parents=True, exist_ok=True)
        cmd = pip_command(missing, constraints, python)
        print("installing on top of the image:", " ".join(f"{n}{s}" for n, s in missing),
              "\n$ PYTHONUSERBASE=" + str(user_base), " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, env=dict(os.environ, PYTHONUSERBASE=str(user_base)),
                              check=False)
        if proc.returncode != 0:
            raise ImageDepsError(
                f"the image {image or ''} lacks "
                + ", ".join(describe(*r, first["packages"]) for r in missing)
                + f" and pip could not install them (exit {proc.returncode}; no network in "
                "the job?). Build the tcbench image instead, which has them, and point the "
                "workflow at it: see docs/containers.md.")
    final = probe(reqs, user_base, python)
    still = unmet(reqs, final["packages"])
    if still:
        raise ImageDepsError(
            "after installing, these requirements are still not met: "
            + ", ".join(describe(*r, final["packages"]) for r in still))
    overlay = {canonical(n): v for n, v in final["overlay"].items()}
    return {
        "image": image,
        "python": final["python"],
        "python_executable": final["executable"],
        "user_site": final["user_site"],
        # everything in the user site, dependencies included: what the jobs get on top
        "installed": dict(sorted(overlay.items())),
        "from_image": {n: final["packages"][n]["version"] for n, _ in reqs if n not in overlay},
    }




def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.host.imagedeps", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requirements", type=Path, required=True)
    ap.add_argument("--constraints", type=Path, required=True)
    ap.add_argument("--user-base", type=Path, required=True,
                    help="where missing packages go (the jobs' PYTHONUSERBASE)")
    ap.add_argument("--image", help="the image reference, for the messages and the manifest")
    ap.add_argument("--out", type=Path, required=True, help="the manifest (JSON)")
    args = ap.parse_args(argv)

    def install():
        manifest = ensure(args.requirements, args.constraints, args.user_base.resolve(),
                          args.image)
        atomic.write_json(args.out, manifest)
        print(f"python {manifest['python']}: "
              + (f"installed {manifest['installed']}" if manifest["installed"]
                 else "the image has every requirement, nothing installed"))

    return cli.main("tcbench.host.imagedeps", install, (ImageDepsError,))


if __name__ == "__main__":
    sys.exit(main())
