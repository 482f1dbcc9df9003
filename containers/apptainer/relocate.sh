#!/usr/bin/env bash
# Installed as PREFIX/relocate by containers/apptainer/install.sh. Points the prefix's ELF files
# at the prefix's own glibc: each program's interpreter (an absolute path, the one thing ELF
# cannot say relative to the file) at PREFIX's loader, and every run-path at $ORIGIN-relative
# folders inside the prefix. Run after moving or unpacking a prefix to another path:
#   tar -xJf apptainer-prefix.tar.xz -C /where/ever && /where/ever/relocate
# It uses the prefix's own patchelf through the prefix's loader, so the host needs none.
set -euo pipefail
PREFIX=$(cd "$(dirname "$0")" && pwd -P)
LIB=$PREFIX/usr/lib/x86_64-linux-gnu
LOADER=$LIB/ld-linux-x86-64.so.2
[ -f "$LOADER" ] || { echo "relocate: no $LOADER: $PREFIX is not an Apptainer prefix made by install.sh" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# patchelf and the libraries it runs on are copies: patchelf must never rewrite a file it has
# mapped (the prefix's libc among them)
cp "$PREFIX/usr/bin/patchelf" "$work/"
cp -L "$LOADER" "$LIB"/{libc.so.6,libm.so.6,libgcc_s.so.1,libstdc++.so.6} "$work/"
patchelf() { "$work/ld-linux-x86-64.so.2" --library-path "$work" "$work/patchelf" "$@"; }
is_elf() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(head -c4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

for exe in "$PREFIX"/usr/bin/*; do
  is_elf "$exe" || continue
  patchelf --set-interpreter "$LOADER" --set-rpath '$ORIGIN/../lib/x86_64-linux-gnu' "$exe"
done
for exe in "$LIB"/apptainer/bin/*; do
  is_elf "$exe" || continue
  patchelf --set-interpreter "$LOADER" --set-rpath '$ORIGIN/../..' "$exe"
done
# the libraries find each other beside themselves, never in the host's /lib
for lib in "$LIB"/*.so.*; do
  case $lib in */ld-linux-*) continue ;; esac
  is_elf "$lib" || continue
  patchelf --set-rpath '$ORIGIN' "$lib"
done
echo "relocate: $PREFIX/bin/apptainer uses $LOADER"
