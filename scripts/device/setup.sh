# Sourced by study.sh and plan.sh on the lent GPU machine: Snakemake from the carried wheels, and
# a `python` for the rules (that machine has only python3, a venv's: a symlink would lose the venv).
timeout 60 python3 -m pip install -q --no-index --find-links .whl snakemake==9.27.1 || exit 1
mkdir -p /tmp/bin && printf '#!/bin/sh\nexec python3 "$@"\n' > /tmp/bin/python && chmod +x /tmp/bin/python
export PATH=/tmp/bin:$PATH PYTHONUNBUFFERED=1
