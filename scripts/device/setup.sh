# Sourced by study.sh and plan.sh on the lent GPU machine: Snakemake from the carried wheels, and
# a `python` for the rules (that machine has only python3, a venv's: a symlink would lose the venv).
timeout 60 python3 -m pip install -q --no-index --find-links .whl snakemake==9.27.1 || exit 1
# the FP8 modes' torchao, when carried (../shared/device/wheels.sh torchao==0.18.0); without it
# the FP8 records say `unsupported` and why
if ls .whl/torchao-*.whl >/dev/null 2>&1; then
  timeout 60 python3 -m pip install -q --no-index --find-links .whl torchao || exit 1
fi
mkdir -p /tmp/bin && printf '#!/bin/sh\nexec python3 "$@"\n' > /tmp/bin/python && chmod +x /tmp/bin/python
export PATH=/tmp/bin:$PATH PYTHONUNBUFFERED=1
