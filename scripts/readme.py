"""The README's measured numbers, generated from the committed result sets, so they cannot drift.

README.md marks each generated part with an opening comment ``<!-- generated: NAME -->`` and a
closing ``<!-- end: NAME -->``; this script rewrites what lies between from the tables under
``results/`` (never from memory or by hand):

    python scripts/readme.py            # rewrite the generated parts of README.md
    python scripts/readme.py --check    # exit 1, naming the parts, if README.md has drifted

tests/test_readme.py runs the check, and also fails where the README's results section quotes a
measured number outside a generated part.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))

from tcbench import resultset as RS  # noqa: E402
from tcbench import stats  # noqa: E402
from tcbench import vocabulary as V  # noqa: E402
from tcbench.render import numbers as N  # noqa: E402
from tcbench.render.table import Table, to_markdown  # noqa: E402
from tcbench.reports import tables as T  # noqa: E402
from tcbench.reports.verdict import build as build_verdict, code_line, conditions  # noqa: E402

# the seed's own experiment, whose finding the README holds the set to (Blocks.seed_finding)
SEED_EXPERIMENT = "mnist_seed"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w+-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)",
                   re.S)


def _read(path: Path) -> pd.DataFrame:
    return RS.read(path)


def _table(t: Table) -> str:
    """A table for the README: no heading (the README's prose introduces it), its notes."""
    return to_markdown(t, heading=None)


class Blocks:
    """Every generated part, from one result set (``run``) and the comparison."""

    def __init__(self, results: Path, run: str = "nvidia-h200", compare: str = "compare"):
        self.dir = Path(results) / run
        self.compare = Path(results) / compare
        self.host_bound_dir = Path(results) / "bench" / run / "host-bound" / "workflow"
        self.summary = _read(self.dir / V.SET_TABLES["summary"])
        self.speedup = _read(self.dir / V.SET_TABLES["speedup"])
        self.metrics = pd.read_csv(self.dir / V.SET_TABLES["metrics"])

    # -- the set as a whole ----------------------------------------------------------------
    def provenance(self) -> str:
        m = self.metrics
        first = m.dropna(subset=["device_name"]).iloc[0]
        days = sorted({str(t)[:10] for t in m["timestamp_utc"].dropna()})
        dirty = m["git_dirty"].astype(str).str.lower().eq("true").sum() if "git_dirty" in m \
            else None
        cuda = first.get("torch_cuda_version", first.get("cuda_runtime_version"))
        text = (f"Measured on {', '.join(days)} on {first['device_name']} (PyTorch "
                f"{first['torch_version']}, built with CUDA {cuda}, cuDNN "
                f"{first.get('cudnn_version')}, driver {first['driver_version']}): "
                f"{len(m)} training jobs, each its own process")
        text += (", every record from a clean tree." if dirty == 0 else
                 f"; {dirty} records from a tree with uncommitted changes.")
        # which experiments each commit made (a set partly rerun under a newer protocol)
        interleaved = self.dir / V.SET_TABLES["interleaved"]
        text += " " + code_line(m, RS.read(interleaved) if interleaved.exists() else None)
        said = conditions(m)  # where the set mixes GPUs, hosts, placements, process starts
        return text + (f" {said}" if said else "") + "\n"

    def bottom_line(self) -> str:
        for line in (self.dir / V.VERDICT_FILES["md"]).read_text().splitlines():
            if line.startswith("**Bottom line.**"):
                return line + "\n"
        raise ValueError(f"{self.dir / 'summary.md'} has no bottom line")

    def seed(self) -> str:
        text = (self.compare / V.COMPARE_FILES["seed"]).read_text()
        return text.split("\n", 2)[2] if text.startswith("## ") else text

    def seed_finding(self) -> str:
        """What the set says of the seed's MNIST finding (AMP did not speed it up): the
        verdict's answer for the seed's experiment, its claim read against that finding, and
        how many of its records were input-bound."""
        a = next((a for a in self.verdict().answers if a.experiment == SEED_EXPERIMENT), None)
        if a is None or a.judgement is None:
            return (f"The set has no judged `{SEED_EXPERIMENT}` cell to hold the seed's "
                    "finding to.\n")
        j = a.judgement
        verb = ("contradicts" if j.claim in (stats.PAYS_OFF, stats.FASTER) else
                "agrees with" if j.claim in (stats.SLOWER, stats.ALL_SLOWER, stats.EQUIVALENT)
                else "neither confirms nor contradicts")
        m = self.metrics[(self.metrics["experiment"] == SEED_EXPERIMENT)
                         & (self.metrics["status"] == V.OK)]
        bound = int(m["input_bound"].astype(str).str.lower().eq("true").sum())
        said = (f"This set {verb} the seed's MNIST finding that AMP did not speed it up: "
                f"{j.row['precision']} at bs {int(j.row['batch_size'])} is "
                f"{a.cells[3]}, {a.cells[4]} ({a.cells[7]}). {bound} of the {len(m)} "
                f"`{SEED_EXPERIMENT}` records are input-bound (the GPU waits for the "
                f"DataLoader's two workers for most of each step), where no precision mode can "
                f"speed it up; with the data on the GPU (`mnist_loaders`) the input no longer "
                f"limits it (the verdict names what does, per precision).")
        return textwrap.fill(said, width=96, break_long_words=False,
                             break_on_hyphens=False) + "\n"

    def answer(self) -> str:
        """The verdict's one-screen table (``reports.answer``): per experiment (per model in a
        zoo) its best mode against its one baseline, the claim, memory, what limits it and how
        it was decided, built from the set's tables as summary.md's is."""
        return _table(self.verdict().answer)

    def verdict(self, folder: Path | None = None):
        folder = self.dir if folder is None else folder
        optional = {k: folder / f for k, f in (("crossover", V.CROSSOVER_FILES["csv"]),
                                               ("interleaved", V.SET_TABLES["interleaved"]))}
        read = {k: RS.read_raw(f) if f.exists() else None for k, f in optional.items()}
        metrics = self.metrics if folder == self.dir else \
            pd.read_csv(folder / V.SET_TABLES["metrics"])
        return build_verdict(RS.read_raw(folder / V.SET_TABLES["summary"]),
                             RS.read_raw(folder / V.SET_TABLES["speedup"]), metrics,
                             read["crossover"], read["interleaved"])

    def host_bound(self) -> str:
        """The host-bound study's one-screen table (config/host_bound.yaml on the same GPU,
        results/bench/<gpu>/host-bound/workflow/): the recipe eager and graphed, decided by
        their interleaved comparisons."""
        return _table(self.verdict(self.host_bound_dir).answer)

    # -- per experiment ----------------------------------------------------------------------
    def experiment(self, experiment: str, which: int = 0) -> str:
        return _table(T.experiment_tables(self.summary, self.speedup, experiment)[which])

    def best(self) -> str:
        return _table(T.best_table(_read(self.dir / V.SET_TABLES["best"])))

    def crossover(self) -> str:
        """Where FP8 starts to pay (config/fp8_crossover.yaml in the set): the map as a table
        and, per recipe, the verdict's sentence."""
        from tcbench.reports import crossover as X, fp8_findings as F

        table = RS.read_raw(self.dir / V.CROSSOVER_FILES["csv"])
        said = [F.starts_to_pay(table, m) for m in X.crossover.FP8_MODES]
        return _table(X.map_table(table)) + "\n" + "\n\n".join(said) + "\n"

    def transformers(self) -> str:
        """Each transformer in each mode (config/transformers.yaml in the set): the verdict's
        FP8 table, tokens/s, FP8 against amp-bf16, MFU, memory, kernel split, warm-up."""
        from tcbench.reports import fp8_findings as F

        sec = next(s for s in self.verdict().sections if s.title == F.TITLE)
        return _table(sec.table)

    def zoo(self) -> str:
        """Each model family of the set's model zoo (config/zoo.yaml): the verdict's family
        table and its sentences."""
        from tcbench.reports import families as Z

        sec = next((s for s in self.verdict().sections if s.title == Z.TITLE), None)
        if sec is None:
            raise ValueError(f"{self.dir / 'summary.md'} has no model zoo section")
        return _table(sec.table) + "\n" + "\n\n".join(sec.sentences) + "\n"

    def capacity(self) -> str:
        from tcbench.capacity.report import capacity_table

        df = pd.read_csv(self.dir / "capacity.csv")
        return _table(capacity_table(df))

    def reproduce(self) -> str:
        """What the committed rerun of this set reproduced (``snakemake reproduce``, its
        reproduce.md beside it in ``<run>-rerun``): its summary line, the between-run
        tolerance and the two hosts' speed, as that file gives them."""
        text = (self.dir.parent / f"{self.dir.name}-rerun" / V.REPRODUCE_FILES["md"]).read_text()
        head = text.split("\n## ", 1)[0].splitlines()[2:]
        return "\n".join(line.replace("**", "") for line in head if line.strip()
                         ).replace("\n", "\n\n") + "\n"

    def job_cost(self) -> str:
        ov = pd.read_csv(self.dir / V.SET_TABLES["overhead"])
        jobs = ov[ov["cell"] != "(all jobs)"].dropna(subset=["job_wall_s"])
        rows = []
        for (exp,), g in jobs.groupby(["experiment"], sort=False):
            rows.append([exp, str(len(g)), N.num(g["job_wall_s"].median()),
                         N.num(g["fixed_cost_s"].median()),
                         N.num(pd.to_numeric(g["time_to_steady_s"]).median()),
                         N.num(pd.to_numeric(g["steady_time_s"]).median())])
        total = jobs["job_wall_s"].sum()
        steady = pd.to_numeric(jobs["steady_time_s"]).sum()
        rows.append(["(all)", str(len(jobs)), N.num(total), N.num(jobs["fixed_cost_s"].sum()),
                     N.num(pd.to_numeric(jobs["time_to_steady_s"]).sum()), N.num(steady)])
        t = Table("", ["experiment", "jobs", "job wall (s)", "fixed cost (s)", "warm-up (s)",
                         "timed steps (s)"], rows, align="lrrrrr",
                    notes=["Medians per job (the last row: sums over every job). Job wall is "
                           "Snakemake's benchmark of the job's process; fixed cost is that less "
                           "the warm-up and the timed steady steps (process start, imports, "
                           "CUDA context, building, profiling, writing the record)."])
        return _table(t)

    def render(self, name: str) -> str:
        kind, _, arg = name.partition("-")
        if kind == "table":
            exp, _, which = arg.rpartition("-")
            return self.experiment(exp, int(which))
        return {"provenance": self.provenance, "bottom": self.bottom_line, "seed": self.seed,
                "seedfinding": self.seed_finding,
                "answer": self.answer, "hostbound": self.host_bound,
                "best": self.best, "capacity": self.capacity, "crossover": self.crossover,
                "transformers": self.transformers, "zoo": self.zoo,
                "jobcost": self.job_cost, "reproduce": self.reproduce}[kind]()


def regenerate(readme: str, blocks: Blocks) -> tuple[str, list[str]]:
    """The README with every generated part rewritten, and the names of those that changed."""
    changed = []

    def sub(m):
        body = blocks.render(m.group("name"))
        if body != m.group("body"):
            changed.append(m.group("name"))
        return m.group(1) + body + m.group(4)
    return BLOCK.sub(sub, readme), changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--readme", type=Path, default=REPO / "README.md")
    ap.add_argument("--results", type=Path, default=REPO / "results")
    args = ap.parse_args(argv)
    text = args.readme.read_text()
    new, changed = regenerate(text, Blocks(args.results))
    if args.check:
        if changed:
            print(f"README.md has drifted from the committed results in: {', '.join(changed)}; "
                  f"run python scripts/readme.py", file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(new)
    print(f"rewrote {len(changed)} part(s): {', '.join(changed) or 'none changed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
