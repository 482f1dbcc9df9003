#!/usr/bin/env bash
# One part of a study twice on this GPU host, one run after the other: inside an Apptainer
# container (`snakemake --use-singularity`, `--nv`) into result set RUN, then natively into
# RUN-native, each through scripts/remote/study.sh (bounded, packed into DIR/container and
# DIR/native). Back home, `snakemake reproduce --config run=RUN reference=RUN-native` sets
# the two side by side (docs/containers.md):
#
#   scripts/remote/container_check.sh --out DIR CONFIGFILE SECONDS RUN EXPERIMENT[,EXPERIMENT...]
#
# Apptainer: the host's own, else a prefix packed by containers/apptainer/pack.sh, named by
# APPTAINER_PACK=FILE (unpacked under $TMPDIR). The image: IMAGE=... (any reference Apptainer
# takes), else a sandbox of this host's userland (containers/host-image.sh): the host's
# software, said so in every record. --userns: as root on a host that withholds a capability,
# Apptainer refuses to start a container without it; unprivileged, it is what it does anyway.
set -uo pipefail
usage="usage: scripts/remote/container_check.sh --out DIR CONFIGFILE SECONDS RUN EXPERIMENT[,...]"
if [ "${1:-}" != --out ] || [ $# -ne 6 ]; then echo "$usage" >&2; exit 2; fi
dest=$(realpath -m "$2"); cfg=$3; budget=$4; run=$5; only=$6
cd "$(dirname "$0")/../.."
case $budget in ''|*[!0-9]*) echo "container_check.sh: SECONDS=$budget is not a whole number" >&2; exit 2 ;; esac
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
source scripts/remote/setup.sh
if ! command -v apptainer >/dev/null; then
  [ -n "${APPTAINER_PACK:-}" ] || {
    echo "container_check.sh: no apptainer here: set APPTAINER_PACK (containers/apptainer/pack.sh)" >&2; exit 1; }
  prefix=${TMPDIR:-/tmp}/tcbench-apptainer
  rm -rf "$prefix" && mkdir -p "$prefix" && tar -xJf "$APPTAINER_PACK" -C "$prefix" && "$prefix/relocate" \
    || { echo "container_check.sh: $APPTAINER_PACK did not unpack into a working prefix" >&2; exit 1; }
  export PATH=$prefix/bin:$PATH
fi
apptainer --version || exit 1
image=${IMAGE:-}
if [ -z "$image" ]; then
  image=${TMPDIR:-/tmp}/tcbench-host-image
  rm -rf "$image" && bash containers/host-image.sh "$image" || exit 1
fi
apptainer exec --userns --nv "$image" nvidia-smi -L || exit 1
# the container first (the new thing), the native run in what is left
inside=$(( ($(left) - 30) * 11 / 20 ))
ONLY=$only scripts/remote/study.sh --out "$dest/container" "$cfg" "$inside" \
  --config run="$run" container="$image" --use-singularity --singularity-args="--nv --userns"
ONLY=$only scripts/remote/study.sh --out "$dest/native" "$cfg" "$(( $(left) - 10 ))" \
  --config run="$run-native"
