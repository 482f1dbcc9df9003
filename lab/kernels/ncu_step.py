# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""One training step of a workload under one precision mode, bracketed by
cudaProfilerStart/Stop so that `ncu --profile-from-start off` measures exactly that step.

    ncu --profile-from-start off --clock-control none --csv \
        --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum \
        python3 lab/kernels/ncu_step.py resnet50 amp-bf16 32
"""

import sys

import torch

sys.path.insert(0, "workflow")
from tcbench.job import precision  # noqa: E402
from tcbench.job import train  # noqa: E402
from tcbench import workloads  # noqa: E402

name, mode_name, bs = sys.argv[1], sys.argv[2], int(sys.argv[3])
device = torch.device("cuda")
mode = precision.get(mode_name)
mode.apply()
params = workloads.resolve_params(name, {"data": "synthetic", "loader": "synthetic"} if name == "mnist_cnn" else {})
w = workloads.build(name, params, bs, device)
w.model, _ = mode.prepare(w.model)  # FP8 modes: torchao Float8Linear layers (eager)
scaler = mode.scaler(device)
x, y = w.example_batch
for _ in range(5):
    train.train_step(w.model, w.loss_fn, w.optimizer, scaler, mode, device, x, y)
torch.cuda.synchronize()
torch.cuda.profiler.start()
train.train_step(w.model, w.loss_fn, w.optimizer, scaler, mode, device, x, y)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("done", name, mode_name, bs)
