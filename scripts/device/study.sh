#!/usr/bin/env bash
# Runs part of a study on the lent GPU machine and packs what it produced into $OUT.
#   scripts/device/study.sh CONFIGFILE SECONDS [snakemake targets...]
# SECONDS bounds the whole script, install included; give the device call at least 60 s more
# (see scripts/device/README.md: a call that hits the tool's own limit returns nothing at all).
# Snakemake reruns only what is missing, so a study too long for one call is finished by the
# next call once the records of the previous ones are copied back into results/.
# Optional extra steps: KERNELS=1 (collect kernel names), NCU=1 (Nsight Compute cross-check).
set -uo pipefail
t0=$(date +%s)
cfg=$1; budget=$2; shift 2
left() { echo $(( budget - ($(date +%s) - t0) )); }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/extra"
pack() {  # small on purpose: only results (records, job timings) and logs travel back
  tar czf "$OUT/results.tgz" results logs 2>/dev/null
  ls -la "$OUT" "$OUT/extra"
}
trap pack EXIT
source "$(dirname "$0")/setup.sh"
python -c "import numpy, torch" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv | tee "$OUT/extra/nvidia-smi.csv"
# PREFLIGHT=1: two tiny jobs first; if the harness fails on this GPU, stop before the study
if [ "${PREFLIGHT:-0}" = 1 ]; then
  PYTHONPATH=workflow timeout 300 python3 scripts/device/preflight.py /tmp/preflight || exit 1
fi
if [ "${KERNELS:-0}" = 1 ]; then
  timeout "$(left)" python3 scripts/device/collect_kernels.py "$OUT/extra/kernel_names.csv" 2>&1 | tail -20
fi
if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  timeout "$(left)" bash scripts/device/ncu_crosscheck.sh "$OUT/extra/ncu_steps.csv"
fi
# targets first: --rerun-triggers takes several values and would swallow them. The job in
# flight when time runs out is stopped; its record is never half-written (atomic writes).
# every GPU of the machine, one job each (tcbench.gpus pins them)
gpus=${GPUS:-$(nvidia-smi -L | grep -c '^GPU')}
log="$OUT/extra/snakemake-$(basename "$cfg" .yaml).log"
timeout -k 10 "$(( $(left) - 15 ))" snakemake "$@" --cores "$(nproc)" --resources gpu="$gpus" \
  --configfile "$cfg" --keep-going --rerun-triggers mtime > "$log" 2>&1
echo "snakemake exit $? after $(( $(date +%s) - t0 )) s"
grep -E "^(Error|Finished|[0-9]+ of [0-9]+ steps)" "$log" | tail -5
