#!/usr/bin/env bash
# Apptainer, installed into PREFIX on a Debian machine that has none (Debian 12 packages no
# Apptainer). Debian unstable's apptainer needs a newer glibc than Debian 12's, so it comes with
# its own: the .debs of apptainer, libc6 and the libraries it and squashfs-tools link against
# are fetched from the unstable suite with apt-get, against package lists kept in a private
# folder (the system's apt sources and package state are not touched), unpacked with dpkg -x,
# and their ELF files pointed at the prefix's own loader and libraries (PREFIX/relocate).
# The only change to the system: Debian 12's squashfuse, with which Apptainer mounts a SIF
# (without it, every run unpacks the image to a temporary sandbox first).
#
#   bash containers/apptainer/install.sh /opt/apptainer     (as root; ~20 s, ~80 MB)
#   /opt/apptainer/bin/apptainer exec --userns IMAGE CMD...
#
# Run again with PREFIX present, it installs nothing: it checks that PREFIX/bin/apptainer runs
# and prints its version. containers/apptainer/pack.sh packs a prefix into a tarball that
# runs wherever it is unpacked (docs/containers.md).
set -euo pipefail

SUITE=${APPTAINER_SUITE:-unstable}
MIRROR=${APPTAINER_MIRROR:-http://deb.debian.org/debian}
# apptainer and everything it runs that the host lacks or has too old: its libraries, those of
# mksquashfs/unsquashfs (squashfs-tools), and patchelf with its C++ runtime for relocation
PACKAGES=(apptainer squashfs-tools libc6 libgcc-s1 libseccomp2 libsqlite3-0
          liblz4-1 liblzma5 liblzo2-2 libzstd1 zlib1g patchelf libstdc++6)
HOST_PACKAGES=(squashfuse)

die() { echo "install.sh: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bash containers/apptainer/install.sh PREFIX (an absolute path, e.g. /opt/apptainer)"
case $1 in /*) ;; *) die "PREFIX must be an absolute path, not '$1' (try: \$PWD/$1)" ;; esac
PREFIX=${1%/}
HERE=$(cd "$(dirname "$0")" && pwd)

check() {
  local version
  version=$("$PREFIX/bin/apptainer" --version) \
    || die "$PREFIX/bin/apptainer does not run; if $PREFIX was moved here, run $PREFIX/relocate; otherwise remove $PREFIX and run this script again"
  echo "$version ($PREFIX/bin/apptainer)"
}

if [ -e "$PREFIX" ]; then
  [ -x "$PREFIX/bin/apptainer" ] \
    || die "$PREFIX exists but holds no bin/apptainer: choose another PREFIX or remove it"
  check
  exit 0
fi
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] \
  || die "this recipe fetches Debian's amd64 packages; this machine is $(uname -m)"

missing=()
for p in "${HOST_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" \
  > "$work/sources.list"
# apt against the unstable suite alone: its own lists, cache and an empty package state, so
# that every named package is fetched whatever the system has installed
apt_opts=(-q -o "Dir::State::Lists=$work/lists" -o "Dir::Etc::SourceList=$work/sources.list"
          -o Dir::Etc::SourceParts=/dev/null -o "Dir::Cache=$work/cache"
          -o Dir::State::status=/dev/null -o APT::Architectures=amd64
          -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update >/dev/null
(cd "$work/debs" && apt-get "${apt_opts[@]}" download "${PACKAGES[@]}" >/dev/null)

stage=$PREFIX.partial
rm -rf "$stage"
mkdir -p "$stage"
for deb in "$work"/debs/*.deb; do
  dpkg -x "$deb" "$stage"
  dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb" >> "$stage/PACKAGES"
done
# Relocated, apptainer takes PREFIX/usr as its install prefix (configuration in usr/etc,
# its mount folder mnt/session under usr/var), and its starter takes PREFIX/usr/lib: both must
# find the same files
mkdir -p "$stage/usr/etc" "$stage/usr/lib/etc" "$stage/usr/lib/var/lib" "$stage/bin"
mv "$stage/etc/apptainer" "$stage/usr/etc/apptainer"
mv "$stage/var" "$stage/usr/var"
mkdir -p "$stage/usr/var/lib/apptainer/mnt/session"
ln -s ../../etc/apptainer "$stage/usr/lib/etc/apptainer"
ln -s ../../../var/lib/apptainer "$stage/usr/lib/var/lib/apptainer"
# apptainer looks for mksquashfs/unsquashfs in its internal bin folder before $PATH
for tool in mksquashfs unsquashfs; do
  ln -s "../../../../bin/$tool" "$stage/usr/lib/x86_64-linux-gnu/apptainer/bin/$tool"
done
ln -s ../usr/bin/apptainer "$stage/bin/apptainer"
install -m 0755 "$HERE/relocate.sh" "$stage/relocate"
mv "$stage" "$PREFIX"
"$PREFIX/relocate" >/dev/null
check
