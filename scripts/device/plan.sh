#!/usr/bin/env bash
# One call of the H200 plan (scripts/device/README.md): scripts/device/plan.sh N
# Each part is sized to end well inside one 10-minute device call (give the call 60 s more
# than the budget below). Parts can run in any order; Snakemake skips records already made.
set -uo pipefail
cd "$(dirname "$0")/../.."
t() { python3 scripts/device/targets.py "$@"; }
case "${1:?part number}" in
  # The two-GPU plan (nvidia-h200-x2, both GPUs busy, one job each): 3 calls for the whole set.
  a) PREFLIGHT=1 bash scripts/device/study.sh config/config.yaml 290 results/nvidia-h200/calibration.json \
       $(t config/config.yaml --skip mnist_seed)
     bash scripts/device/study.sh config/fastest.yaml 230 $(t config/fastest.yaml) ;;
  b) bash scripts/device/study.sh config/config.yaml 320 $(t config/config.yaml --only mnist_seed)
     bash scripts/device/study.sh config/config.yaml 180 $(t config/config.yaml) ;;
  b2) bash scripts/device/study.sh config/config.yaml "${BUDGET:-200}" $(t config/config.yaml)
     bash scripts/device/study.sh config/fastest.yaml "${FAST_BUDGET:-120}" $(t config/fastest.yaml)
     bash scripts/device/study.sh config/capacity.yaml "${CAPACITY_BUDGET:-220}" capacity ;;
  c) # issue 4, the 1-vs-2-GPU check, ~6 min (give the call timeout_s 500)
     OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
     trap 'tar czf "$OUT/results.tgz" results logs 2>/dev/null' EXIT
     source scripts/device/setup.sh
     timeout -k 10 430 bash scripts/multigpu_check.sh ;;
  d) # what the first study session left: the fastest study's missing repeats, then the fp32
     # and amp-bf16 capacity searches (~8 min on two GPUs; timeout_s 560)
     bash scripts/device/study.sh config/fastest.yaml 150 $(t config/fastest.yaml)
     bash scripts/device/study.sh config/capacity.yaml 330 capacity ;;
  e) # the two capacity searches d did not reach, named: a capacity.{csv,md} made by hand from
     # fewer searches is up to date for Snakemake, so the `capacity` target alone does nothing
     # (~4 min: searches on one host take turns; timeout_s 360)
     bash scripts/device/study.sh config/capacity.yaml 290 \
       results/nvidia-h200/capacity/resnet50/{fp32,amp-bf16}.json ;;
  # The one-GPU plan (nvidia-h200), one call each:
  1) bash scripts/device/study.sh config/config.yaml 420 results/nvidia-h200/calibration.json \
       $(t config/config.yaml --only amp_recipe,digits,mnist_loaders) ;;
  2) bash scripts/device/study.sh config/config.yaml 420 $(t config/config.yaml --only resnet50) ;;
  3) bash scripts/device/study.sh config/config.yaml 480 \
       $(t config/config.yaml --only mnist_seed | tr ' ' '\n' | grep -E '(fp32|amp-fp16)_bs(512|1024)_') ;;
  4) bash scripts/device/study.sh config/config.yaml 240 $(t config/config.yaml --only mnist_seed) ;;
  5) bash scripts/device/study.sh config/fastest.yaml 480 $(t config/fastest.yaml) ;;
  6) bash scripts/device/study.sh config/capacity.yaml 480 capacity ;;
  *) echo "parts: a-e (two GPUs), 1-6 (one GPU)" >&2; exit 2 ;;
esac
