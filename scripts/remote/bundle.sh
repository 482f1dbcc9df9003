#!/usr/bin/env bash
# A tarball of this checkout for a GPU host, to unpack there into an empty folder: HEAD's
# tracked files (no .git), the tree manifest that lets that copy prove its files are HEAD's
# (python -m tcbench.host.sourcetree manifest), .whl/ when scripts/remote/wheels.sh made it, and any
# result folders named, so that Snakemake there skips the records already made:
#
#   scripts/remote/bundle.sh TARBALL [RESULTS_FOLDER ...]
#   e.g. scripts/remote/bundle.sh /tmp/tcbench.tgz results/nvidia-h200
#
# The code packed is HEAD's, whatever the working tree holds: commit first.
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: scripts/remote/bundle.sh TARBALL [RESULTS_FOLDER ...]" >&2; exit 2
fi
tarball=$(realpath -m "$1"); shift
cd "$(git rev-parse --show-toplevel)"
for extra in "$@"; do
  [ -e "$extra" ] || { echo "bundle.sh: $extra: no such file or folder" >&2; exit 2; }
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
git archive --format=tar -o "$work/tree.tar" HEAD
note=$(PYTHONPATH=workflow python3 -m tcbench.host.sourcetree manifest --out "$work/.tcbench-tree.json")
note=${note%%$'\n'*}
case $note in
  *"differs from it in"*) echo "bundle.sh: the working tree differs from HEAD (${note#*differs from it in }); the tarball holds HEAD's files: commit to send the changes" >&2 ;;
esac
tar -rf "$work/tree.tar" -C "$work" .tcbench-tree.json
added=("$@")
[ -d .whl ] && added=(.whl "${added[@]}")
if [ ${#added[@]} -gt 0 ]; then
  tar -rf "$work/tree.tar" --exclude=__pycache__ "${added[@]}"
fi
gzip -c "$work/tree.tar" > "$tarball.part" && mv "$tarball.part" "$tarball"
echo "$tarball: HEAD $(git rev-parse --short HEAD)${added[*]:+ and ${added[*]}}"
