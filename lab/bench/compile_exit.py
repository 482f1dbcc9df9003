# Lab script (lab/README.md): it reaches into tcbench's internals and may break when they change.
"""What a compiled job spends after its record is written, with tcbench.job.run's exit (its own
processes killed first) and with the exit handlers alone (as before). Fresh processes, timed
from outside; ``rest`` = wall - process start - the record's phases (writing the record and
leaving the process).

    python lab/bench/compile_exit.py --out results/bench/nvidia-h200/compile_exit.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow"))

from tcbench import atomic  # noqa: E402

SPEC = {"workload": "amp_recipe", "precision": "fp32", "batch_size": 64,
        "params": {"in_size": 256, "out_size": 256, "num_batches": 8, "epochs": 2,
                   "warmup_steps": 2, "compile": "default"}}
# the job as tcbench.job.run runs it, but ending through the exit handlers alone
HANDLERS_ONLY = ("import sys; from tcbench import process, run; "
                 "process.descendants = lambda: []; "
                 "run.exit_now(run.main(sys.argv[1:]))")


def one(how: str, work: Path, i: int) -> dict:
    out = work / f"{how}-{i}.json"
    args = ["--spec", json.dumps(SPEC), "--out", str(out), "--compile-cache",
            str(work / f"cache-{how}-{i}")]  # cold: the compile workers start in every job
    cmd = ([sys.executable, "-m", "tcbench.job.run", *args] if how == "kill_then_exit" else
           [sys.executable, "-c", HANDLERS_ONLY, *args])
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=os.environ | {"PYTHONPATH": str(REPO / "workflow")},
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"how": how, "exit": proc.returncode, "log": proc.stderr[-2000:]}
    h = json.loads(out.read_text())["harness"]
    return {"how": how, "wall_s": wall,
            "rest_s": wall - (h["process_start_to_main_s"] or 0) - sum(h["phases_s"].values())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="compile_exit-"))
    rows = [one(how, work, i) for i in range(args.repeats)
            for how in ("handlers_only", "kill_then_exit")]
    atomic.write_json(args.out, {"spec": SPEC, "jobs": rows})
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
