"""Print the record paths of some experiments of a config, to split a study across calls.

    python3 scripts/device/targets.py config/config.yaml [--only a,b] [--skip c] [--run NAME]
"""

import argparse
import sys

import yaml

sys.path.insert(0, "workflow")
from tcbench import config, matrix  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("config")
ap.add_argument("--only", default="")
ap.add_argument("--skip", default="")
ap.add_argument("--run")
args = ap.parse_args()
cfg = config.check(yaml.safe_load(open(args.config)))
run = args.run or matrix.resolve_run(cfg)
only, skip = set(filter(None, args.only.split(","))), set(filter(None, args.skip.split(",")))
paths = [f"results/{run}/records/{k}.json" for k, j in matrix.expand(cfg).items()
         if (not only or j.experiment in only) and j.experiment not in skip]
print(" ".join(paths))
