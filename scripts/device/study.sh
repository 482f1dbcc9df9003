#!/usr/bin/env bash
# Runs part of a study on the lent GPU machine and packs what it produced into $OUT.
#   scripts/device/study.sh CONFIGFILE SECONDS [snakemake targets or options...]
# Snakemake reruns only what is missing, so a study too long for one call is finished by the
# next call with the records of the previous ones copied back into results/ first.
# Extra steps, each optional, by environment variable: KERNELS=1 (collect kernel names),
# NCU=1 (Nsight Compute tensor-pipe cross-check).
set -uo pipefail
cfg=$1; budget=$2; shift 2
python3 -m pip install -q --no-index --find-links .whl snakemake==9.27.1 || exit 1
# the rules call `python`; that machine has only python3 (a venv's: a symlink would lose the venv)
mkdir -p /tmp/bin && printf '#!/bin/sh\nexec python3 "$@"\n' > /tmp/bin/python && chmod +x /tmp/bin/python
export PATH=/tmp/bin:$PATH; python -c "import numpy, torch" || exit 1
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/extra"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv | tee "$OUT/extra/nvidia-smi.csv"
start=$(date +%s)
if [ "${KERNELS:-0}" = 1 ]; then
  python3 scripts/device/collect_kernels.py "$OUT/extra/kernel_names.csv" 2>&1 | tail -20
fi
if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  bash scripts/device/ncu_crosscheck.sh "$OUT/extra/ncu_steps.csv"
  echo "ncu cross-check: $(grep -c '^"' "$OUT/extra/ncu_steps.csv") metric rows"
fi
left=$(( budget - ($(date +%s) - start) ))
# targets first: --rerun-triggers takes several values and would swallow them
timeout --signal=TERM --kill-after=20 "$left" snakemake "$@" --cores 16 --resources gpu=1 \
  --configfile "$cfg" --keep-going --rerun-triggers mtime > "$OUT/extra/snakemake.log" 2>&1
echo "snakemake exit $? after $(( $(date +%s) - start )) s"
grep -E "^(Error|Finished|[0-9]+ of [0-9]+ steps)" "$OUT/extra/snakemake.log" | tail -5
tar czf "$OUT/results.tgz" results logs benchmarks .snakemake/log 2>/dev/null
ls -la "$OUT"
