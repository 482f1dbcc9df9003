#!/usr/bin/env bash
# 1 GPU vs 2 GPUs of one host: the same matrix (config/multigpu.yaml) run
# with --resources gpu=1 and with gpu=2, wall time of each, per-job throughputs compared.
#
#   scripts/multigpu_check.sh [PREFIX]      # from the repo root, project environment active
#
# Result sets results/PREFIX-1gpu and results/PREFIX-2gpu (records, metrics.csv, speedup.md),
# and the comparison in results/PREFIX-scaling/scaling.{md,json}. PREFIX defaults to the
# device slug, e.g. nvidia-h200-multigpu. Exit status: 0 when the 2-GPU wall time is
# at most 0.55 x the 1-GPU one and per-job throughputs agree within noise, 1 otherwise.
# About 6 minutes on two H200s (8 jobs of ~20-28 s: ~3.3 min on one GPU, ~1.7 min on two).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${TCBENCH_MULTIGPU_CONFIG:-config/multigpu.yaml}  # another matrix: for trying the script out
CORES=${CORES:-$(nproc)}
PY=${PYTHON:-python}
export PYTHONPATH=$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}

ngpu=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>/dev/null | wc -l || true)
if [ "${ngpu:-0}" -lt 2 ]; then
    echo "multigpu_check: needs 2 NVIDIA GPUs, nvidia-smi lists ${ngpu:-0}" >&2
    exit 2
fi
if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
    echo "multigpu_check: CUDA_VISIBLE_DEVICES is set; unset it so tcbench can pin each job" >&2
    exit 2
fi
PREFIX=${1:-$("$PY" -c 'from tcbench.host.environment import device_slug; print(device_slug())')-multigpu}
# private lock directory: no stale claim of another run can make a job wait
TCBENCH_GPU_LOCK_DIR=$(mktemp -d)
export TCBENCH_GPU_LOCK_DIR
trap 'rm -rf "$TCBENCH_GPU_LOCK_DIR"' EXIT

# warm-up, not recorded: page cache, CUDA/cuDNN libraries, GPU clocks; one job on each GPU
warm='{"workload": "resnet50", "precision": "amp-bf16", "batch_size": 64, "params": {"steps": 5, "warmup_steps": 2, "profile_steps": 0, "image_size": 64}}'
[ "${TCBENCH_MULTIGPU_WARMUP:-1}" = 0 ] ||  # 0: skip it (trying the script out without GPUs)
for i in 0 1; do
    CUDA_VISIBLE_DEVICES=$i "$PY" -m tcbench.job.run --spec "$warm" \
        --out "$TCBENCH_GPU_LOCK_DIR/warm$i.json" >/dev/null &
done
wait

declare -A WALL
for k in 1 2; do
    run=$PREFIX-${k}gpu
    rm -rf "results/$run" "logs/$run"
    echo "== $run: snakemake --cores $CORES --resources gpu=$k" >&2
    t0=$(date +%s%N)
    snakemake --cores "$CORES" --resources gpu="$k" --configfile "$CONFIG" \
        --config run="$run" --until train --quiet rules
    t1=$(date +%s%N)
    WALL[$k]=$("$PY" -c "print(($t1 - $t0) / 1e9)")
    echo "== $run: ${WALL[$k]} s" >&2
    echo "${WALL[$k]}" > "results/$run/wall_time_s.txt"
    # the tables, outside the timed part (aggregation is serial and the same for both)
    snakemake "results/$run/speedup.md" --cores "$CORES" --configfile "$CONFIG" \
        --config run="$run" --quiet rules
done

"$PY" -m tcbench.reports.scaling --one "results/$PREFIX-1gpu" --two "results/$PREFIX-2gpu" --gpus 2 \
    --wall-one "${WALL[1]}" --wall-two "${WALL[2]}" --out "results/$PREFIX-scaling"
