"""Four tiny jobs on the GPU before a study spends its time there: stop early if the harness
itself fails on that host (CUDA graphs, NVML telemetry, FLOP counting, kernel classification,
pinning, FP8 through torchao, a torchvision model by name).

    python3 scripts/remote/preflight.py OUTDIR      # exit 1 when a job is not status ok
"""

import json
import subprocess
import sys
from pathlib import Path

SPECS = {
    "mnist-graphs": {"workload": "mnist_cnn", "precision": "amp-bf16", "batch_size": 512,
                     "params": {"loader": "synthetic", "data": "synthetic", "epochs": 1,
                                "cuda_graphs": "on"}},
    "resnet50": {"workload": "resnet50", "precision": "amp-bf16", "batch_size": 64,
                 "params": {"steps": 6, "warmup_steps": 2, "image_size": 64}},
    # torchao's Float8Linear and the FP8 kernel classification (eager: no compile to wait for)
    "fp8": {"workload": "amp_recipe", "precision": "fp8-rowwise", "batch_size": 1024,
            "params": {"in_size": 1024, "out_size": 1024, "num_layers": 3, "num_batches": 10,
                       "epochs": 1}},
    # a model by name, channels_last (the zoo's path)
    "torchvision": {"workload": "torchvision", "precision": "amp-bf16", "batch_size": 32,
                    "params": {"model": "resnet18", "steps": 6, "warmup_steps": 2,
                               "image_size": 64, "memory_format": "channels_last"}},
}

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
bad = 0
for name, spec in SPECS.items():
    path = out / f"preflight-{name}.json"
    proc = subprocess.run([sys.executable, "-m", "tcbench.job.run", "--spec", json.dumps(spec),
                           "--out", str(path)], capture_output=True, text=True, timeout=240)
    rec = json.loads(path.read_text()) if path.exists() else {}
    m, t, tc = rec.get("metrics") or {}, rec.get("telemetry") or {}, rec.get("tensor_cores") or {}
    print(f"{name}: exit {proc.returncode} status {rec.get('status')} {rec.get('status_reason')}")
    print("  metrics:", {k: m[k] for k in list(m)[:40] if not isinstance(m[k], (list, dict))})
    print("  telemetry:", {k: t[k] for k in list(t)[:30] if not isinstance(t[k], (list, dict))})
    print("  tensor_cores:", {k: tc[k] for k in list(tc)[:12] if not isinstance(tc[k], (list, dict))})
    if rec.get("status") != "ok":
        bad += 1
        print(proc.stdout[-3000:], proc.stderr[-3000:])
sys.exit(1 if bad else 0)
