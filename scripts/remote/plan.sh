#!/usr/bin/env bash
# The GPU studies in parts of at most ~8 minutes each, for a host whose runs have a time limit:
#
#   scripts/remote/plan.sh --out DIR PART        PART: a b c d, in this order
#
# Sized for a host with two H200s (one job on each) from measured job times (README.md here);
# give each part's batch job or remote command its budget below + 60 s. Snakemake skips the
# records already made: unpack each part's DIR/results.tgz here before bundling the next.
set -uo pipefail
usage="usage: scripts/remote/plan.sh --out DIR a|b|c|d"
if [ "${1:-}" != --out ] || [ $# -ne 3 ]; then echo "$usage" >&2; exit 2; fi
dest=$(realpath -m "$2"); part=$3
case $part in a|b|c|d) ;; *) echo "plan.sh: unknown part $part; $usage" >&2; exit 2 ;; esac
cd "$(dirname "$0")/../.."
study() { bash scripts/remote/study.sh --out "$dest" "$@"; }
case $part in
  a) # preflight (4 tiny jobs), the harness against a plain loop on the second GPU meanwhile,
     # then the calibration and every config.yaml cell but the seed's slow DataLoader runs
     # (budget 440 s)
     mkdir -p results/bench/nvidia-h200 logs
     CUDA_VISIBLE_DEVICES=1 PYTHONPATH=workflow timeout 200 python3 lab/bench/host_fidelity.py \
       --max-seconds 160 --out results/bench/nvidia-h200/host_fidelity > logs/host-fidelity.txt 2>&1 &
     PREFLIGHT=1 SKIP=mnist_seed study config/config.yaml 440
     wait ;;
  b) # the seed's DataLoader runs (9 x ~70 s) and anything part a left (budget 480 s)
     ONLY=all study config/config.yaml 480 ;;
  c) # the fastest configurations, then FP8 (budget 500 s)
     ONLY=all study config/fastest.yaml 260
     ONLY=all study config/fp8.yaml 240 ;;
  d) # the model zoo (budget 360 s)
     ONLY=all study config/zoo.yaml 360 ;;
esac
