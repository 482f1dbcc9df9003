#!/usr/bin/env bash
# CI step: the smoke study through `snakemake --profile profiles/slurm` against a real one-node
# SLURM on this machine (tests/test_slurm.py). Run from anywhere, as root, with the project's
# Python environment active:   bash .ci/slurm.sh
# About 5 minutes on 2 cores: ~1 min to install slurm/munge from Debian on a fresh machine
# (seconds when already there), ~3-4 min of batch jobs. Exit status: pytest's.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
export TCBENCH_SLURM_DIR=${TCBENCH_SLURM_DIR:-/tmp/tcbench-slurm}

# the executor plugin, as the project's optional extra "slurm" names it
mapfile -t plugin < <("$PY" - <<'PY'
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["slurm"]))
PY
)
"$PY" -m pip install -q "${plugin[@]}"

bash .ci/slurm-up.sh "$TCBENCH_SLURM_DIR"
trap 'timeout 60 scancel --user root || true; bash .ci/slurm-down.sh "$TCBENCH_SLURM_DIR"' EXIT
# opted in: the test fails, never skips, if the cluster cannot be used
TCBENCH_SLURM_TEST=1 timeout 2700 "$PY" -m pytest -q -p no:cacheprovider -m slow tests/test_slurm.py
