#!/usr/bin/env bash
# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
# Nsight Compute cross-check of the kernel classifier: one training step per (workload, mode),
# every kernel's duration and matrix-MMA tensor-pipe cycles, into the CSV file named:
#   lab/kernels/ncu_crosscheck.sh CSV
set -uo pipefail
csv=$1; : > "$csv"
m=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum
for run in "mnist_cnn fp32 512" "mnist_cnn tf32 512" "mnist_cnn amp-bf16 512" "mnist_cnn amp-fp16 512" \
           "resnet50 fp32 32" "resnet50 tf32 32" "resnet50 amp-bf16 32"; do
  set -- $run
  echo "# $run" >> "$csv"
  timeout 150 ncu --profile-from-start off --clock-control none --csv --metrics "$m" \
    python3 lab/kernels/ncu_step.py $run >> "$csv" 2>/dev/null || echo "# failed: $run" >> "$csv"
done
