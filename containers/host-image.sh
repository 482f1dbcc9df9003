#!/usr/bin/env bash
# An Apptainer sandbox image of this host's own userland, for a GPU host that reaches no
# registry (so the pinned PyTorch image cannot be fetched) and has no image built for it:
#
#   containers/host-image.sh DEST            # then: snakemake --use-singularity --config container=DEST
#
# The image is /usr, /etc and /opt of this host, hard-linked where DEST is on the same file system
# (seconds, no space), copied otherwise, plus the mount points Apptainer needs. Its software is
# the host's, not the pinned image's: the records say so (container_base_image names this host
# and the Python the image runs), and docs/containers.md says when that is what you want (it
# tests the container layer, --nv and the records, not a portable software stack).
# The image's PATH (an image's own environment files set it: without one it is empty) puts the Python that runs this script first (the first python3 on PATH,
# which may be a virtual environment's), so that the jobs' `python` is the host's usual one.
set -euo pipefail
dest=${1:?usage: containers/host-image.sh DEST}
[ -e "$dest" ] && { echo "host-image.sh: $dest exists: remove it or choose another" >&2; exit 2; }
py=$(command -v python3) || { echo "host-image.sh: no python3 on PATH" >&2; exit 2; }
bin=$(dirname "$py")
prefix=$("$py" -c 'import sys; print(sys.prefix)')
mkdir -p "$dest"
for d in usr etc opt; do
  [ -d "/$d" ] || continue
  # hard links where the file system allows: the image then costs no space and a few seconds
  cp -al "/$d" "$dest/$d" 2>/dev/null || { rm -rf "${dest:?}/$d"; cp -a "/$d" "$dest/$d"; }
done
# merged /usr (bin, lib, sbin, lib64 are links into usr) or not: keep what the host has
for d in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$dest/$d"
  elif [ -d "/$d" ]; then cp -al "/$d" "$dest/$d" 2>/dev/null || cp -a "/$d" "$dest/$d"; fi
done
# the Python itself where it lives outside those (a virtual environment elsewhere, pyenv's
# interpreter under a home folder, which Snakemake's --home hides): at the same path
for p in "$prefix" "$("$py" -c 'import sys; print(sys.base_prefix)')"; do
  case $p in /usr|/usr/*|/etc/*|/opt|/opt/*) continue ;; esac
  [ -e "$dest$p" ] && continue
  mkdir -p "$dest$(dirname "$p")"
  cp -al "$p" "$dest$p" 2>/dev/null || { rm -rf "${dest:?}$p"; cp -a "$p" "$dest$p"; }
done
mkdir -p "$dest"/{proc,sys,dev,tmp,run,var/tmp,home,root,mnt,srv} "$dest/.singularity.d/env"
chmod 1777 "$dest/tmp" "$dest/var/tmp"
# a `python` beside python3 when the host has none (a symlink would leave a virtual
# environment, so a two-line wrapper)
if [ ! -x "$bin/python" ]; then
  mkdir -p "$dest/usr/local/tcbench-bin"
  printf '#!/bin/sh\nexec %s "$@"\n' "$py" > "$dest/usr/local/tcbench-bin/python"
  chmod +x "$dest/usr/local/tcbench-bin/python"
  bin="/usr/local/tcbench-bin:$bin"
fi
cat > "$dest/.singularity.d/env/90-tcbench.sh" <<EOF
# written by containers/host-image.sh on $(hostname) at $(date -u +%FT%TZ)
export PATH="$bin:\${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"
export TCBENCH_BASE_IMAGE="host userland of $(hostname) (python3: $prefix)"
EOF
echo "host-image.sh: $dest: the userland of $(hostname), python3 from $prefix ($(du -sh --apparent-size "$dest" 2>/dev/null | cut -f1) apparent)"
