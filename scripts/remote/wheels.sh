#!/usr/bin/env bash
# Wheels for a GPU host that reaches no package index: fills .whl/ (git-ignored) with Snakemake,
# jsonschema and what they need, for the host's Python (3.12 on x86-64 Linux by default) that
# already has torch, torchvision, numpy and pandas, as PyTorch's and NVIDIA's GPU images do.
# Run it here, where pip reaches an index, from the repository root:
#
#   scripts/remote/wheels.sh [REQUIREMENT ...]      e.g. torchao==0.18.0 for the FP8 modes
#
# PYTHON_VERSION overrides 3.12, SNAKEMAKE_VERSION 9.27.1. scripts/remote/bundle.sh packs .whl/
# with the tree; scripts/remote/setup.sh installs from it on the host.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mkdir -p .whl
reqs=("snakemake==${SNAKEMAKE_VERSION:-9.27.1}" jsonschema "$@")
# what the host already has: a second version of it would break the install there
skip='^(numpy|pandas|torch|torchvision|triton)-|^nvidia_'
plat=(--python-version "${PYTHON_VERSION:-3.12}" --implementation cp
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64
      --platform manylinux1_x86_64 --platform any)
for _ in 1 2 3 4 5 6 7 8; do
  # a requirement published only as a source archive is built here as a pure-Python wheel,
  # then resolution resumes
  if log=$(python3 -m pip download -q --only-binary=:all: "${plat[@]}" --find-links .whl \
             -d .whl "${reqs[@]}" 2>&1); then
    break
  fi
  missing=$(printf '%s\n' "$log" | sed -nE \
    's/^ERROR: Could not find a version that satisfies the requirement ([A-Za-z0-9_.-]+).*/\1/p' | head -1)
  [ -n "$missing" ] || { printf '%s\n' "$log" >&2; exit 1; }
  python3 -m pip wheel -q --no-deps -w .whl "$missing" 2>&1 | grep -v "^WARNING" || true
done
find .whl -maxdepth 1 -name '*.whl' -printf '%f\n' | { grep -E "$skip" || true; } \
  | sed 's|^|.whl/|' | xargs -r rm -f
# PuLP's wheel carries a CBC solver binary for every platform (16 MB of the bundle's ~32): keep
# only x86-64 Linux's, which Snakemake's scheduler runs there
for w in .whl/pulp-*.whl; do
  [ -f "$w" ] && python3 - "$w" <<'PY'
import sys, zipfile, os
src = sys.argv[1]; tmp = src + ".tmp"
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
    for item in zin.infolist():
        name = item.filename
        if "/solverdir/cbc/" in name and "/solverdir/cbc/linux/i64/" not in name:
            continue
        zout.writestr(item, zin.read(name))
os.replace(tmp, src)
PY
done
echo "$(ls .whl | wc -l) wheels, $(du -sh .whl | cut -f1) in .whl/"
