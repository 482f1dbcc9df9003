"""A synthetic, GPU-shaped result set (metrics/summary/speedup/best CSVs) for testing what the
smoke study on a CPU cannot show: repeats with intervals (3 and 2 and 1 runs), memory, Tensor
Core and matmul shares, an input-bound workload, a host-bound one, an oom cell, a diverged cell,
accuracy over five seeds, a knobs experiment without its own fp32 cells, and a model axis. The
numbers are made up; their shape follows config/config.yaml and config/fastest.yaml."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tcbench import resultset
from tcbench.analysis.best import best
from tcbench.analysis.speedup import speedup
from tcbench.analysis.summarise import summarise

MB = 10**6


def _cell(exp, workload, precision, bs, *, time, mem, tc, busy, wait=0.02, loader="synthetic",
          data="synthetic", repeats=3, status="ok", reason=None, acc=None, samples=76800,
          warm=2.0, matmul=None, model=None, rng=None, **axes):
    rows = []
    for rep in range(1, repeats + 1):
        ok = status == "ok"
        t = time * (1 + 0.02 * rng.standard_normal()) if ok else None
        steps = max(samples // bs, 2)
        thr = samples / t / 0.97 if ok else None
        mm = matmul if matmul is not None else (max(tc, 0.6) if tc is not None else None)
        rows.append({
            "run": "gpu-like", "experiment": exp,
            "cell": "_".join([precision, f"bs{bs}", *map(str, axes.values()), f"r{rep}"]),
            "workload": workload, "precision": precision, "batch_size": bs, "repeat": rep,
            "seed": rep - 1, "status": status, "status_reason": reason,
            "model": model or workload, "loader": loader, "memory_format": "contiguous",
            "compile": "off", "cuda_graphs": "off", "cudnn_benchmark": "off",
            "fused_optimizer": "off", "data": data,
            **axes,
            "total_time_s": t + warm if ok else None,
            "time_to_steady_s": warm * (1 + 0.1 * rng.standard_normal()) if ok else None,
            "steady_time_s": t if ok else None,
            "max_memory_allocated_bytes": mem if ok else None,
            "throughput_samples_per_s": thr,
            "samples": samples if ok else None, "steps": steps if ok else None,
            "warmup_steps": 5 if ok else None,
            "data_wait_s": t * wait if ok else None, "compute_s": t * (1 - wait) if ok else None,
            "data_wait_share": wait if ok else None, "input_bound": bool(ok and wait >= 0.2),
            "achieved_tflops": 50.0 if ok else None, "mfu": 0.1 if ok else None,
            "steady_energy_per_sample_j": 0.5 * t / samples * 700 if ok else None,
            "energy_per_sample_j": 0.6 * t / samples * 700 if ok else None,
            "tensor_core_share": tc if ok and rep == 1 else None,
            "matmul_share": mm if ok and rep == 1 else None,
            "gpu_busy_share": busy if ok and rep == 1 else None,
            "top_kernel": ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize" if tc and tc > 0.5
                           else "void at::native::vectorized_elementwise_kernel")
            if ok and rep == 1 else None,
            "test_accuracy": acc + 0.004 * rng.standard_normal() if ok and acc else None,
            "final_loss": 0.1 if ok else None,
            "device_name": "NVIDIA H200", "compute_capability": "9.0",
            "torch_version": "2.11.0+cu130", "driver_version": "580.00",
            "cuda_runtime_version": "13.0",
        })
    return rows


def metrics(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    add = lambda *a, **k: rows.extend(_cell(*a, rng=rng, **k))  # noqa: E731
    for p, t, mem, tc in (("fp32", 1.20, 1350 * MB, 0.0), ("tf32", 0.45, 1350 * MB, 0.60),
                          ("amp-fp16", 0.40, 1577 * MB, 0.35), ("amp-bf16", 0.41, 1577 * MB,
                                                                 0.35)):
        add("amp_recipe", "amp_recipe", p, 512, time=t, mem=mem, tc=tc,
            busy=0.97 if p == "fp32" else 0.3, samples=76800, matmul=max(tc, 0.9))
    for p, bs, t, mem, tc in (("fp32", 512, 91.0, 417 * MB, 0.0),
                              ("tf32", 512, 90.5, 417 * MB, 0.5),
                              ("amp-fp16", 512, 89.9, 175 * MB, 0.6),
                              ("amp-bf16", 512, 90.1, 175 * MB, 0.6),
                              ("fp32", 1024, 88.0, 800 * MB, 0.0),
                              ("amp-fp16", 1024, 87.5, 320 * MB, 0.6)):
        add("mnist_seed", "mnist_cnn", p, bs, time=t, mem=mem, tc=tc, busy=0.08, wait=0.78,
            loader="dataloader", data="mnist-format-random", repeats=1, samples=1_200_000)
    for loader in ("gpu-resident", "synthetic"):
        for p, t, tc in (("fp32", 4.0, 0.0), ("tf32", 3.6, 0.45), ("amp-fp16", 3.4, 0.5),
                         ("amp-bf16", 3.5, 0.5)):
            add("mnist_loaders", "mnist_cnn", p, 512, time=t * (0.9 if loader == "synthetic"
                                                               else 1), mem=300 * MB, tc=tc,
                busy=0.35, wait=0.01, loader=loader, data="mnist-format-random",
                samples=1_200_000, repeats=2)
    for p, acc in (("fp32", 0.981), ("tf32", 0.980), ("amp-fp16", None), ("amp-bf16", 0.979)):
        if acc is None:
            add("digits", "digits", p, 64, time=0, mem=0, tc=0, busy=0, status="diverged",
                reason="loss became NaN/inf at step 12", loader="gpu-resident",
                data="sklearn-digits", repeats=5)
        else:
            add("digits", "digits", p, 64, time=6.0, mem=20 * MB, tc=0.3 if p != "fp32" else 0,
                busy=0.2, loader="gpu-resident", data="sklearn-digits", acc=acc, samples=28750,
                repeats=5)
    for p, bs, t, mem, tc, st in (("fp32", 64, 10.0, 9000 * MB, 0.0, "ok"),
                                  ("tf32", 64, 4.8, 9000 * MB, 0.36, "ok"),
                                  ("amp-fp16", 64, 3.3, 5200 * MB, 0.25, "ok"),
                                  ("amp-bf16", 64, 3.4, 5200 * MB, 0.21, "ok"),
                                  ("fp32", 256, 0, 0, 0, "oom"),
                                  ("tf32", 256, 18.0, 36000 * MB, 0.30, "ok"),
                                  ("amp-fp16", 256, 11.5, 20000 * MB, 0.18, "ok"),
                                  ("amp-bf16", 256, 11.9, 20000 * MB, 0.21, "ok")):
        add("resnet50", "resnet50", p, bs, time=t, mem=mem, tc=tc, busy=0.95, status=st,
            reason="CUDA out of memory. Tried to allocate 2.00 GiB" if st == "oom" else None,
            samples=bs * 200, warm=15.0, matmul=0.45 if p == "fp32" else tc + 0.05)
    for fmt, comp, t in (("contiguous", "off", 11.9), ("channels_last", "off", 6.2),
                         ("channels_last", "default", 4.4)):
        add("resnet50_fast", "resnet50", "amp-bf16", 256, time=t, mem=12000 * MB, tc=0.4,
            busy=0.98, samples=256 * 200, memory_format=fmt, compile=comp,
            warm=40.0 if comp != "off" else 15.0)
    for model, speed in (("resnet18", 3.0), ("vit_b_16", 1.1)):
        for p in ("fp32", "amp-bf16"):
            add("zoo", "torchvision", p, 128, time=speed * (2.5 if p == "fp32" else 1),
                mem=4000 * MB, tc=0.0 if p == "fp32" else 0.5, busy=0.9, model=model,
                samples=128 * 40)
    df = pd.DataFrame(rows)
    return resultset.order(df)


def write(out: Path, seed: int = 0) -> Path:
    """metrics.csv, summary.csv, speedup.csv and best.csv of the synthetic set under ``out``."""
    df = metrics(seed)
    summary = summarise(df)
    out.mkdir(parents=True, exist_ok=True)
    resultset.write_csv(df, out / "metrics.csv")
    resultset.write_csv(summary, out / "summary.csv")
    table = speedup(df, summary)
    resultset.write_csv(table, out / "speedup.csv")
    resultset.write_csv(best(summary, table), out / "best.csv")
    return out
