# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""Collect real GPU kernel names per precision mode, with their Tensor Core classification.

Run on a GPU machine; writes a CSV (mode, workload, kernel, time_us, calls, tensor_core, rule)
that becomes tests/data/kernel_names.csv, the test corpus of tcbench.kernels.classify.

    python3 lab/kernels/collect_kernels.py OUT.csv
"""

import csv
import sys

import torch
from torch.profiler import ProfilerActivity, profile
from torchvision.models import resnet50

sys.path.insert(0, "workflow")
from tcbench.job import precision  # noqa: E402
from tcbench.kernels import classify  # noqa: E402
from tcbench.workloads.mnist_cnn import Net  # noqa: E402


def workloads(device):
    lin = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                              torch.nn.Linear(4096, 4096)).to(device)
    yield "linear", lin, torch.randn(512, 4096, device=device), torch.randn(512, 4096, device=device), torch.nn.MSELoss()
    cnn = Net().to(device)
    yield "mnist_cnn", cnn, torch.randn(512, 1, 28, 28, device=device), torch.randint(0, 10, (512,), device=device), torch.nn.CrossEntropyLoss()
    rn = resnet50().to(device)
    yield "resnet50", rn, torch.randn(32, 3, 224, 224, device=device), torch.randint(0, 1000, (32,), device=device), torch.nn.CrossEntropyLoss()
    rn_cl = resnet50().to(device).to(memory_format=torch.channels_last)
    yield "resnet50_channels_last", rn_cl, torch.randn(32, 3, 224, 224, device=device).contiguous(memory_format=torch.channels_last), torch.randint(0, 1000, (32,), device=device), torch.nn.CrossEntropyLoss()


def main(out):
    device = torch.device("cuda")
    rows = []
    for mode_name, mode in precision.MODES.items():
        ok, reason = mode.supported(device)
        if not ok:
            print(f"{mode_name:14s} skipped: {reason}")
            continue
        mode.apply()
        for name, model, x, y, loss_fn in workloads(device):
            model, fp8 = mode.prepare(model)  # FP8 modes: torchao's Float8Linear layers
            if fp8 and fp8["unsupported_reason"]:
                continue
            opt = torch.optim.SGD(model.parameters(), lr=1e-3)
            scaler = mode.scaler(device)

            def step():
                with mode.autocast(device):
                    loss = loss_fn(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                opt.zero_grad()
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                step()
                torch.cuda.synchronize()
            agg = {}
            for e in prof.events():
                if e.device_type != torch.autograd.DeviceType.CUDA:
                    continue
                t, c = agg.get(e.name, (0.0, 0))
                agg[e.name] = (t + e.device_time, c + 1)
            for k, (t, c) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
                tc, rule = classify(k)
                rows.append({"mode": mode_name, "workload": name, "kernel": k, "time_us": round(t, 2),
                             "calls": c, "tensor_core": tc, "rule": rule})
            share = sum(r["time_us"] for r in rows if r["mode"] == mode_name and r["workload"] == name and r["tensor_core"]) / max(1e-9, sum(r["time_us"] for r in rows if r["mode"] == mode_name and r["workload"] == name))
            print(f"{mode_name:14s} {name:24s} tensor-core share {share:6.1%}")
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1])
