#!/usr/bin/env bash
# CI step: the smoke study in a real Apptainer (tests/test_apptainer.py). Installs Apptainer
# into a prefix (containers/apptainer/install.sh; seconds when it is there already), builds the
# CPU image (containers/cpu/build.sh), and runs `snakemake --use-singularity` with that image:
# every job inside it. Run from anywhere, as root, with the project's Python environment
# active:   bash .ci/container.sh
# Exit status: pytest's.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
DIR=${TCBENCH_CONTAINER_DIR:-/tmp/tcbench-container}
SIF=$DIR/tcbench-cpu.sif
mkdir -p "$DIR"
start=$SECONDS

bash containers/apptainer/install.sh "$DIR/apptainer"
export PATH="$DIR/apptainer/bin:$PATH"
# Root here lacks one capability that Apptainer's privileged mode asks for: every container
# starts in a user namespace instead. The variable is --userns for every apptainer call,
# Snakemake's included, and leaves the profile's apptainer-args (--nv) as they are.
export APPTAINER_USERNS=1
# built afresh: the image holds this checkout's containers/ pins and workflow/
bash containers/cpu/build.sh "$SIF"
echo "container.sh: Apptainer and the image ready after $((SECONDS - start)) s"

TCBENCH_APPTAINER_SIF=$SIF timeout 1800 "$PY" -m pytest -q -p no:cacheprovider -m slow \
  tests/test_apptainer.py && rc=0 || rc=$?
echo "container.sh: $((SECONDS - start)) s in all"
exit $rc
