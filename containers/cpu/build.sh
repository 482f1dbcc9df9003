#!/usr/bin/env bash
# Builds the tcbench CPU image (containers/cpu/tcbench-cpu.def) into OUT.sif, from Debian's and
# PyPI's packages alone, with the apptainer on PATH (or $APPTAINER). Needs root (debootstrap)
# and the host's debootstrap, installed here from Debian's packages when missing.
#   bash containers/cpu/build.sh tcbench-cpu.sif
# Prints the image's size and sha256 (the digest its records carry).
set -euo pipefail
die() { echo "build.sh: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bash containers/cpu/build.sh OUT.sif"
SIF=$(realpath -m "$1")
cd "$(dirname "$0")/../.."
APPTAINER=${APPTAINER:-$(command -v apptainer || true)}
[ -n "$APPTAINER" ] || die "no apptainer on PATH: install one (bash containers/apptainer/install.sh /opt/apptainer) and put its bin/ on PATH, or set APPTAINER"
[ "$(id -u)" = 0 ] || die "debootstrap needs root: run as root (or build on a machine where you are)"
if ! command -v debootstrap >/dev/null; then
  apt-get install -y -q --no-install-recommends debootstrap >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends debootstrap >/dev/null; }
fi
# Root without every capability (a container or a restricted VM) cannot start a container in
# Apptainer's privileged mode; a user namespace works wherever root is
export APPTAINER_USERNS=${APPTAINER_USERNS:-1}
# pip in %post trusts what the host trusts (a site's TLS-inspecting proxy, say): the host's CA
# bundle is bound over the image's for the build only; the image keeps Debian's own
binds=()
HOST_CA=/etc/ssl/certs/ca-certificates.crt
[ -f "$HOST_CA" ] && binds=(--bind "$HOST_CA:$HOST_CA")
# zstd, not mksquashfs's default gzip -9: measured on 2 cores, the image's 1.9 GB squashed in
# 15 s instead of 384 s, 3% larger. squashfuse and Linux >= 4.14 read it.
start=$(date +%s)
"$APPTAINER" build --force "${binds[@]}" --mksquashfs-args "-comp zstd -Xcompression-level 3" \
  "$SIF" containers/cpu/tcbench-cpu.def
echo "build.sh: $SIF built in $(( $(date +%s) - start )) s, $(du -h "$SIF" | cut -f1)," \
     "sha256:$(sha256sum "$SIF" | cut -d' ' -f1)"
