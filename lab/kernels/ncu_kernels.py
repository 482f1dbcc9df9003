# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""A handful of GEMMs and convolutions per precision mode, for Nsight Compute to count
tensor-pipe activity on: run under `ncu --clock-control none --metrics ...` (as
ncu_crosscheck.sh runs ncu_step.py).
Each op is launched once after a warm-up that ncu skips via NVTX-free launch counting."""

import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, "workflow")
from tcbench.job import precision  # noqa: E402
from tcbench.job.calibrate import product  # noqa: E402

device = torch.device("cuda")
a = torch.randn(2048, 2048, device=device)
b = torch.randn(2048, 2048, device=device)
x = torch.randn(32, 64, 56, 56, device=device)
w = torch.randn(64, 64, 3, 3, device=device)
for name, mode in precision.MODES.items():
    if not mode.device_supported(device)[0]:
        continue
    mode.apply()
    torch.backends.cudnn.benchmark = False  # autotuning would launch dozens of candidates
    if mode.fp8_recipe:  # FP8 is torch._scaled_mm (what torchao's Float8Linear calls), no conv
        matmul, _ = product(mode.spec, 2048, device, torch.Generator(device=device))
        torch.cuda.nvtx.range_push(f"{name}:matmul")
        matmul()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        continue
    with mode.autocast(device):
        torch.cuda.nvtx.range_push(f"{name}:matmul")
        (a @ b)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push(f"{name}:conv")
        F.conv2d(x, w, padding=1)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
print("done")
