"""Print the targets of some experiments of a config, to split a study into runs bounded in time:
each cell's records, for a cell whose repeats adapt (adaptive_repeats) its decision, which
makes Snakemake run the looks and the repeats they add in the same run, the experiments'
interleaved comparisons (interleave: {enabled: true}), and the device's calibration, which the
reports of every part need (Snakemake makes it once).

    python3 scripts/remote/targets.py config/config.yaml [--only a,b] [--skip c] [--run NAME]

The config is read as the Snakefile reads it: config/config.yaml, then the given file over it.
"""

import argparse
import sys
from pathlib import Path

import yaml
from snakemake.utils import update_config

sys.path.insert(0, "workflow")
from tcbench.launch import config, matrix, repeats  # noqa: E402
from tcbench import vocabulary as V  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("config")
ap.add_argument("--only", default="")
ap.add_argument("--skip", default="")
ap.add_argument("--run")
args = ap.parse_args()
cfg = yaml.safe_load(open("config/config.yaml"))
if Path(args.config).resolve() != Path("config/config.yaml").resolve():
    update_config(cfg, yaml.safe_load(open(args.config)))
cfg = config.check(cfg)
run = args.run or matrix.resolve_run(cfg)
only, skip = set(filter(None, args.only.split(","))), set(filter(None, args.skip.split(",")))


def chosen(experiment: str) -> bool:
    return (not only or experiment in only) and experiment not in skip


jobs = matrix.expand(cfg)
paths = [f"results/{run}/records/{k}.json" for k, j in jobs.items() if chosen(j.experiment)]
paths += [f"results/{run}/repeats/{key}.json" for key, c in repeats.cells(cfg, jobs).items()
          if chosen(c.experiment)]
paths += [c.path(run) for c in matrix.comparisons(cfg, jobs).values() if chosen(c.experiment)]
if cfg["calibrate"]["enabled"]:
    paths.append(f"results/{run}/calibration.json")
print(" ".join(paths))
