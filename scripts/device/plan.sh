#!/usr/bin/env bash
# One call of the H200 plan (scripts/device/README.md): scripts/device/plan.sh PART
# Sized for nvidia-h200-x2 (two GPUs, one job each) from the 2026-12-01 measurements; give the
# call timeout_s = the part's budget + 60 and carry [".whl", ".tcbench-tree.json"]. Parts run
# in this order; Snakemake skips records already made (unpack each call's results.tgz first).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/setup.sh   # Snakemake and jsonschema, which targets.py needs
t() { python3 scripts/device/targets.py "$@"; }
case "${1:?part}" in
  a) # preflight (4 tiny jobs), the harness against a plain loop on the second GPU meanwhile,
     # then the calibration and every config.yaml cell but the seed's slow DataLoader runs
     # (budget 440 s)
     mkdir -p results/bench/nvidia-h200 logs
     CUDA_VISIBLE_DEVICES=1 PYTHONPATH=workflow timeout 200 python3 scripts/bench/host_fidelity.py \
       --max-seconds 160 --out results/bench/nvidia-h200/host_fidelity > logs/host-fidelity.txt 2>&1 &
     PREFLIGHT=1 bash scripts/device/study.sh config/config.yaml 440 \
       results/nvidia-h200/calibration.json $(t config/config.yaml --skip mnist_seed)
     wait ;;
  b) # the seed's DataLoader runs (9 x ~70 s) and anything a left (budget 480 s)
     bash scripts/device/study.sh config/config.yaml 480 $(t config/config.yaml) ;;
  c) # the fastest configurations, then FP8 (budget 500 s)
     bash scripts/device/study.sh config/fastest.yaml 260 $(t config/fastest.yaml)
     bash scripts/device/study.sh config/fp8.yaml 240 $(t config/fp8.yaml) ;;
  d) # the model zoo (budget 360 s)
     bash scripts/device/study.sh config/zoo.yaml 360 $(t config/zoo.yaml) ;;
  *) echo "parts: a b c d" >&2; exit 2 ;;
esac
