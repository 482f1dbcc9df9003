# Sourced by study.sh, checks.sh and plan.sh on the GPU host, from the repository root:
# - Snakemake (and torchao, when its wheel is there) from .whl/ (scripts/remote/wheels.sh) when
#   that folder came with the tree, for a host that reaches no package index;
# - a `python` for the rules: a host whose python3 is a virtual environment's may have no
#   `python`, and a symlink would lose the environment, so a two-line wrapper instead;
# - TCBENCH_GIT_COMMIT from the tree manifest (.tcbench-tree.json, scripts/remote/bundle.sh),
#   when git cannot name that commit here (no .git, or a stale one): every job then checks its
#   files against the manifest and its record says git_dirty: false with evidence.
if [ -d .whl ]; then
  timeout 120 python3 -m pip install -q --no-index --find-links .whl snakemake jsonschema \
    || exit 1
  if ls .whl/torchao-*.whl >/dev/null 2>&1; then  # without it the FP8 records say `unsupported`
    timeout 60 python3 -m pip install -q --no-index --find-links .whl torchao || exit 1
  fi
fi
python3 -c "import snakemake, jsonschema" || {
  echo "setup.sh: no Snakemake here; pip install -e . or bring .whl/ (scripts/remote/wheels.sh)" >&2
  exit 1; }
TCBENCH_BIN=${TMPDIR:-/tmp}/tcbench-bin-$(id -u)
mkdir -p "$TCBENCH_BIN"
printf '#!/bin/sh\nexec python3 "$@"\n' > "$TCBENCH_BIN/python" && chmod +x "$TCBENCH_BIN/python"
export PATH=$TCBENCH_BIN:$PATH PYTHONUNBUFFERED=1
if [ -z "${TCBENCH_GIT_COMMIT:-}" ] && [ -f .tcbench-tree.json ]; then
  manifest_commit=$(python3 -c "import json; print(json.load(open('.tcbench-tree.json'))['commit'])")
  if [ "$(git rev-parse HEAD 2>/dev/null)" != "$manifest_commit" ]; then
    export TCBENCH_GIT_COMMIT=$manifest_commit
  fi
fi
