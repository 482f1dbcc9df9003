# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Summarise the kernel evidence collected on a GPU (collect_kernels.py + ncu_kernels.py).

    python3 lab/kernels/summarise_kernel_evidence.py results/nvidia-h200/kernel-evidence

Prints a Markdown report: Tensor Core share of kernel time per (mode, workload) for one
training step, by tcbench's kernel-name classifier; and, for every kernel Nsight Compute
measured, the classifier's verdict beside the hardware counters.
"""

import csv
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, "workflow")
from tcbench.kernels import classify  # noqa: E402

MMA = "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum"
ANY = "sm__pipe_tensor_cycles_active.sum"

folder = Path(sys.argv[1])
shares = defaultdict(lambda: [0.0, 0.0])
for r in csv.DictReader((folder / "kernel_names.csv").open()):
    t = float(r["time_us"])
    shares[(r["mode"], r["workload"])][0] += t
    shares[(r["mode"], r["workload"])][1] += t if classify(r["kernel"])[0] else 0.0
print("## Tensor Core share of GPU kernel time, one training step (torch.profiler + classifier)\n")
print("| mode | workload | kernel time (ms) | on Tensor Cores |")
print("|---|---|---|---|")
for (mode, wl), (tot, tc) in shares.items():
    print(f"| {mode} | {wl} | {tot / 1e3:.2f} | {tc / tot:.1%} |")

rows = list(csv.reader((folder / "ncu.csv").open()))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
h = rows[head]
kern = defaultdict(dict)
for r in rows[head + 1:]:
    d = dict(zip(h, r))
    kern[(int(d["ID"]), d["Kernel Name"])][d["Metric Name"]] = int(d["Metric Value"].replace(",", ""))
agree = 0
print("\n## Classifier vs Nsight Compute (`ncu --clock-control none`), every kernel of "
      "lab/kernels/ncu_kernels.py\n")
print("| # | kernel | classifier | matrix-MMA pipe cycles | all tensor-pipe cycles |")
print("|---|---|---|---|---|")
for (i, name), m in sorted(kern.items()):
    tc = classify(name)[0]
    hw = m.get(MMA, 0) > 0
    agree += tc == hw
    short = name if len(name) < 90 else name[:87] + "..."
    print(f"| {i} | `{short}` | {'Tensor Core' if tc else 'not TC'} | {m.get(MMA, 0):,} | "
          f"{m.get(ANY, 0):,} |")
print(f"\nAgreement: {agree} of {len(kern)} kernels. The generic tensor-pipe counter is non-zero "
      f"for some non-GEMM kernels (HFMA2 half-precision FMAs issue on that pipe); the "
      f"matrix-MMA counter ({MMA}) is the one that means Tensor Core math.")
