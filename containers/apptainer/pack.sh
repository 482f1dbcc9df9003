#!/usr/bin/env bash
# Packs a prefix made by containers/apptainer/install.sh into a tarball that runs wherever it is
# unpacked, at the same path or any other, on an x86_64 Linux host (the prefix brings its own
# glibc; the host needs only a kernel with user namespaces, and squashfuse to mount a SIF):
#   bash containers/apptainer/pack.sh /opt/apptainer apptainer-prefix.tar.xz
#   mkdir -p /some/path && tar -xJf apptainer-prefix.tar.xz -C /some/path && /some/path/relocate
#   /some/path/bin/apptainer --version
# The tarball holds the prefix's contents (no top folder); relocate points the programs at the
# loader in their new place (ELF cannot name it relative to the program).
set -euo pipefail
die() { echo "pack.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: bash containers/apptainer/pack.sh PREFIX OUT.tar.xz"
PREFIX=${1%/}
[ -x "$PREFIX/relocate" ] && [ -e "$PREFIX/bin/apptainer" ] \
  || die "$PREFIX is not a prefix made by containers/apptainer/install.sh (no relocate, bin/apptainer)"
"$PREFIX/bin/apptainer" --version >/dev/null \
  || die "$PREFIX/bin/apptainer does not run here: run $PREFIX/relocate first"
TARBALL=$(realpath -m "$2")
# apptainer mounts a running container under mnt/session: packed empty
XZ_OPT=${XZ_OPT:--6 -T0} tar -C "$PREFIX" --exclude='./usr/var/lib/apptainer/mnt/session/*' \
  -cJf "$TARBALL.partial" .
mv "$TARBALL.partial" "$TARBALL"
echo "$TARBALL: $(du -h "$TARBALL" | cut -f1), unpack with: tar -xJf $TARBALL -C DIR && DIR/relocate"
