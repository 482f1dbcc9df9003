"""The README's measured numbers, and those of docs/results.md (the H200 results in full),
generated from the committed result sets, so they cannot drift.

Each file marks its generated parts with an opening comment ``<!-- generated: NAME -->`` and a
closing ``<!-- end: NAME -->``; this script rewrites what lies between from the tables under
``results/`` (never from memory or by hand):

    python scripts/readme.py            # rewrite the generated parts of both files
    python scripts/readme.py --check    # exit 1, naming the parts, if either has drifted

tests/test_readme.py runs the check, holds the README's first screen to its limits (what
tcbench is, the two commands, the overview figure, a short bottom line, a narrow answer table),
and fails where docs/results.md quotes a measured number outside a generated part.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))

from tcbench import resultset  # noqa: E402
from tcbench import capacity as capacity_study  # noqa: E402
from tcbench.capacity.report import capacity_table, read as read_capacity  # noqa: E402
from tcbench.analysis import runs  # noqa: E402
from tcbench.launch import config as tcconfig  # noqa: E402
from tcbench import stats  # noqa: E402
from tcbench import vocabulary as V  # noqa: E402
from tcbench.render import numbers  # noqa: E402
from tcbench.render.table import Table, to_markdown  # noqa: E402
from tcbench.reports import capacity_findings, holdback, tables  # noqa: E402
from tcbench.reports import screen  # noqa: E402
from tcbench.reports.verdict import code_line, conditions, read as read_verdict  # noqa: E402

# the generated files, and the README's first screen: its answer table's columns and width,
# and its bottom line's words
FILES = (REPO / "README.md", REPO / "docs" / "results.md")
README_COLUMNS = ("experiment", "best mode and setting", "× its baseline [95% CI]", "claim",
                  "peak memory ×", "what limits it")
README_CELL_CHARS = 60
# a footnote under the answer table is one paragraph in lines of at most this many characters
README_NOTE_CHARS = 197
README_WORDS = 60
# the seed's own experiment, whose finding the README holds the set to (Blocks.seed_finding)
SEED_EXPERIMENT = "mnist_seed"

BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w+-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)",
                   re.S)


def _read(path: Path) -> pd.DataFrame:
    return resultset.read(path)


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
        self.verdicts: dict = {}

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
        text += " " + code_line(m, resultset.read(interleaved) if interleaved.exists() else None)
        said = conditions(m)  # where the set mixes GPUs, hosts, placements, process starts
        return text + (f" {said}" if said else "") + "\n"

    def headline(self) -> str:
        """The README's bottom line: the verdict's, counted per claim, in ``README_WORDS``."""
        crossover = self.dir / V.CROSSOVER_FILES["csv"]
        x = resultset.read_raw(crossover) if crossover.exists() else None
        said = f"**Bottom line.** {screen.headline(self.verdict().answers, x, README_WORDS)}"
        return textwrap.fill(said, 100, break_long_words=False, break_on_hyphens=False) + "\n"

    def claims(self) -> str:
        """Every experiment's claim with its mode and ratio: the verdict's bottom line in full."""
        return f"{screen.EVERY_CLAIM} {' '.join(self.verdict().bottom_line)}\n"

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
        """The README's answer table: the verdict's (``reports.answer``), in its
        ``README_COLUMNS``, each cell at most ``README_CELL_CHARS`` long, without its notes (the
        full table, ``answer_full``, has them)."""
        table, _ = screen.compact(self.verdict().answer, README_CELL_CHARS, README_COLUMNS)
        # a ratio judged across runs, or in one process, keeps the footnote that says what its
        # interval is
        table.notes = [textwrap.fill(n, width=README_NOTE_CHARS, break_long_words=False)
                       for n in table.notes if n[:1] in (V.RUNS_MARK, V.ONE_PROCESS_MARK)]
        return _table(table)

    def answer_full(self) -> str:
        """The verdict's one-screen table in full: per experiment (per model in a zoo) its best
        mode against its one baseline, the claim, memory, what limits it and how it was
        decided, built from the set's tables as summary.md's is."""
        return _table(self.verdict().answer)

    def verdict(self, folder: Path | None = None):
        """The verdict of the set in ``folder`` (this one's by default), built once."""
        folder = self.dir if folder is None else folder
        if folder not in self.verdicts:
            self.verdicts[folder] = self._verdict(folder)
        return self.verdicts[folder]

    def _verdict(self, folder: Path):
        """Made as the set's summary.md is (``verdict.read``): judged across the study's other
        runs, with its crossover map and capacity study where it has them."""
        def have(name: str) -> Path | None:
            return folder / name if (folder / name).exists() else None
        return read_verdict(have(V.SET_TABLES["metrics"]), folder / V.SET_TABLES["summary"],
                            folder / V.SET_TABLES["speedup"], have(V.CROSSOVER_FILES["csv"]),
                            have(V.SET_TABLES["interleaved"]), runs.sibling_tables(folder),
                            have(capacity_study.FILES["csv"]))

    def host_bound(self) -> str:
        """The host-bound study's one-screen table (config/host_bound.yaml on the same GPU,
        results/bench/<gpu>/host-bound/workflow/): the recipe eager and graphed, decided by
        their interleaved comparisons."""
        return _table(self.verdict(self.host_bound_dir).answer)

    # -- per experiment ----------------------------------------------------------------------
    def experiment(self, experiment: str, which: int = 0) -> str:
        return _table(tables.experiment_tables(self.summary, self.speedup, experiment)[which])

    def best(self) -> str:
        """best.md as the set's rule writes it: the fastest configuration per experiment, then
        what holds each fastest configuration back (its MFU, its config's ``target`` met or
        short, the kernel profile's reason), against the targets of the study files under
        config/ (the set holds several studies' records)."""
        best = _read(self.dir / V.SET_TABLES["best"])
        targets = tcconfig.targets({}, (REPO / "config").glob("*.yaml"))
        held = holdback.holdback_table(best, targets)
        return _table(tables.best_table(best)) + ("" if held is None else (
            f"\n**{held.title}** (best.md's second table):\n\n" + _table(held)))

    def crossover(self) -> str:
        """Where FP8 starts to pay (config/fp8_crossover.yaml in the set): the map as a table
        and, per recipe, the verdict's sentence."""
        from tcbench.reports import crossover as crossover_report, fp8_findings

        table = resultset.read_raw(self.dir / V.CROSSOVER_FILES["csv"])
        said = [fp8_findings.starts_to_pay(table, m) for m in crossover_report.crossover.FP8_MODES]
        return _table(crossover_report.map_table(table)) + "\n" + "\n\n".join(said) + "\n"

    def transformers(self) -> str:
        """Each transformer in each mode (config/transformers.yaml in the set): the verdict's
        FP8 table, tokens/s, FP8 against amp-bf16, MFU, memory, kernel split, warm-up."""
        from tcbench.reports import fp8_findings

        sec = next(s for s in self.verdict().sections if s.title == fp8_findings.TITLE)
        return _table(sec.table)

    def zoo(self) -> str:
        """Each model family of the set's model zoo (config/zoo.yaml): the verdict's family
        table and its sentences."""
        from tcbench.reports import families

        sec = next((s for s in self.verdict().sections if s.title == families.TITLE), None)
        if sec is None:
            raise ValueError(f"{self.dir / 'summary.md'} has no model zoo section")
        return _table(sec.table) + "\n" + "\n\n".join(sec.sentences) + "\n"

    def capacity(self) -> str:
        """How much larger a batch fits (the capacity study, capacity.csv): the verdict's
        sentences, then capacity.md's table (per workload and precision the largest batch, × fp32,
        memory per sample, the prediction and its outcome, search time; its notes say why a
        precision has no limit of its own)."""
        sec = next((s for s in self.verdict().sections if s.title == capacity_findings.TITLE),
                   None)
        if sec is None:
            raise ValueError(f"{self.dir / capacity_study.FILES['csv']}: no capacity study to "
                             f"render; run `snakemake capacity --configfile "
                             f"config/capacity.yaml` or remove the capacity block")
        table = capacity_table(read_capacity(self.dir / capacity_study.FILES["csv"]))
        return " ".join(sec.sentences) + "\n\n" + _table(table)

    def runs_with(self, name: str) -> list[Path]:
        """This set and its committed reruns (``<run>-rerun*``) that hold the file ``name``."""
        return [f for f in (self.dir, *sorted(self.dir.parent.glob(f"{self.dir.name}-rerun*")))
                if (f / name).exists()]

    def reproduce(self) -> str:
        """Each committed run of this set's study checked against the others pooled
        (``snakemake reproduce`` with ``reference=a,b,c``: each run's reproduce.md and .csv
        beside it, this set's and those of ``<run>-rerun*``): per run its host's speed and
        what landed inside, then the checks summed."""
        from tcbench.analysis import reproduce

        folders = self.runs_with(V.REPRODUCE_FILES["csv"])
        rows, inside, claimed = [], {k: [0, 0] for k in reproduce.ESTIMATED}, [0, 0, 0]
        for f in folders:
            frame = pd.read_csv(f / V.REPRODUCE_FILES["csv"])
            t = reproduce.tally(frame)
            both = frame.loc[(frame["kind"] == reproduce.THROUGHPUT) &
                             frame["outcome"].isin([reproduce.INSIDE, reproduce.OUTSIDE]),
                             "experiment"].unique()
            speed = reproduce.host_speed(reproduce.load(f), both)
            cells = {k: (t[k][reproduce.INSIDE], t[k][reproduce.INSIDE] + t[k][reproduce.OUTSIDE])
                     for k in reproduce.ESTIMATED}
            claims = [sum(t[k][o] for k in reproduce.CLAIMED)
                      for o in (reproduce.SAME, reproduce.COMPATIBLE, reproduce.CHANGED)]
            for k, (n, m) in cells.items():
                inside[k][0] += n
                inside[k][1] += m
            claimed = [a + b for a, b in zip(claimed, claims)]
            rows.append([f"`{f.name}`", numbers.num(speed) if speed else "–",
                         *(f"{n} of {m}" for n, m in (cells[reproduce.INTERLEAVED],
                                                      cells[reproduce.THROUGHPUT],
                                                      cells[reproduce.PER_PROCESS])),
                         " / ".join(map(str, claims))])
        head = ["run, against the others", "host probe, ops/s", "interleaved ratios inside",
                "throughputs inside", "per-process ratios inside",
                "claims same / compatible / changed"]
        table = "\n".join(["| " + " | ".join(head) + " |",
                           "|" + "|".join([":---", "---:", "---:", "---:", "---:", ":---"]) + "|",
                           *("| " + " | ".join(r) + " |" for r in rows)])
        pct = lambda k: f"{inside[k][0]} of {inside[k][1]} ({inside[k][0] / inside[k][1]:.0%})"  # noqa: E731
        return (table + "\n\n" + f"Summed over the {len(folders)} checks, each run against the "
                f"other {len(folders) - 1} pooled (their 95% prediction interval for one more "
                f"run): interleaved ratios {pct(reproduce.INTERLEAVED)} inside, throughputs "
                f"{pct(reproduce.THROUGHPUT)}, per-process ratios "
                f"{pct(reproduce.PER_PROCESS)}; claims "
                f"{claimed[0]} the same, {claimed[1]} compatible (both can hold: one "
                f"interval clears a threshold the other's does not), "
                + (f"{claimed[2]} changed (contradicting).\n" if claimed[2] else
                   "none changed: no claim contradicts another.\n"))

    def runs(self) -> str:
        """The judged ratios of the experiments every committed run of this set's study has
        (this set and ``<run>-rerun*``), across those runs: each run's ratio, their geometric
        mean with the 95% t interval across runs (``stats.RUNS``) and the claim it allows."""
        from tcbench.analysis import reproduce, runs

        folders = self.runs_with(V.SET_TABLES["summary"])
        pooled = runs.pool(folders)
        each = [s.quantities().claims for s in pooled.sets]
        at = {k: i for i, k in enumerate(reproduce.KEYS)}
        rows = []
        for key, c in pooled.quantities().claims.items():
            e = c["estimate"]
            if e is None or e.n < len(folders) or e.method != stats.RUNS:
                continue
            ratio = f"{key[at['precision']]} ÷ {key[-2]}"
            rows.append([key[at["experiment"]], ratio,
                         ", ".join(numbers.times(q[key]["estimate"].value) for q in each),
                         numbers.with_interval(e.value, e.low, e.high, e.n, fmt=numbers.times,
                                               kind=e.method),
                         stats.CLAIM_SHORT.get(c["claim"], c["claim"])])
        head = ["experiment", "ratio", "each run (" + ", ".join(f"`{f.name}`" for f in folders)
                + ")", f"across the {len(folders)} runs [95% CI]", "claim"]
        return _table(Table("", head, rows, align="llrrl",
                            notes=[numbers.runs_note([len(folders)])] if rows else []))

    def container(self) -> str:
        """The study inside a real container against natively on the same GPU
        (results/bench/<run>/container: scripts/remote/container_check.sh and
        lab/bench/container_roofs.py): the job wall times, the matmul roofs and the
        reproduce check between the two sets."""
        bench = json.loads((self.dir.parent / "bench" / self.dir.name / "container" /
                            "roofs.json").read_text())
        walls = {Path(k).name: v["train"] for k, v in bench["job_walls"].items()}
        inside, native = (walls[f"{self.dir.name}-container"],
                          walls[f"{self.dir.name}-container-native"])
        ratios = [r["ratio"] for r in bench["roofs"]]
        covered = sum(r["low"] is not None and r["low"] <= 1 <= r["high"] for r in bench["roofs"])
        text = (self.dir.parent / f"{self.dir.name}-container" / V.REPRODUCE_FILES["md"]
                ).read_text()
        summary = text.split("\n## ", 1)[0].splitlines()[2].replace("**", "").split(". ")[1]
        said = (f"On the H200 (Apptainer, `--nv`, an image of the host's own userland) a "
                f"training job took {numbers.num(inside['median_s'])} s inside and "
                f"{numbers.num(native['median_s'])} s natively (medians of {inside['n']} jobs "
                f"each, "
                f"forked from one preloaded interpreter in both); matmul roofs inside ÷ outside "
                f"{min(ratios):.2f}–{max(ratios):.2f}× ({covered} of {len(ratios)} 95% "
                f"intervals contain 1); the same study inside against natively: {summary}.")
        return textwrap.fill(said, 100, break_long_words=False, break_on_hyphens=False) + "\n"

    def job_cost(self) -> str:
        ov = pd.read_csv(self.dir / V.SET_TABLES["overhead"])
        jobs = ov[ov["cell"] != "(all jobs)"].dropna(subset=["job_wall_s"])
        rows = []
        for (exp,), g in jobs.groupby(["experiment"], sort=False):
            rows.append([exp, str(len(g)), numbers.num(g["job_wall_s"].median()),
                         numbers.num(g["fixed_cost_s"].median()),
                         numbers.num(pd.to_numeric(g["time_to_steady_s"]).median()),
                         numbers.num(pd.to_numeric(g["steady_time_s"]).median())])
        total = jobs["job_wall_s"].sum()
        steady = pd.to_numeric(jobs["steady_time_s"]).sum()
        rows.append(["(all)", str(len(jobs)), numbers.num(total),
                     numbers.num(jobs["fixed_cost_s"].sum()),
                     numbers.num(pd.to_numeric(jobs["time_to_steady_s"]).sum()),
                     numbers.num(steady)])
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
        return {"provenance": self.provenance, "headline": self.headline, "claims": self.claims,
                "seed": self.seed, "seedfinding": self.seed_finding,
                "answer": self.answer, "answer-full": self.answer_full,
                "hostbound": self.host_bound,
                "best": self.best, "capacity": self.capacity, "crossover": self.crossover,
                "transformers": self.transformers, "zoo": self.zoo,
                "jobcost": self.job_cost, "reproduce": self.reproduce, "runs": self.runs,
                "container": self.container}[kind]()


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
    ap.add_argument("--files", type=Path, nargs="+", default=list(FILES),
                    help="the files whose generated parts to rewrite or check")
    ap.add_argument("--results", type=Path, default=REPO / "results")
    args = ap.parse_args(argv)
    blocks, drifted = Blocks(args.results), []
    for path in args.files:
        new, changed = regenerate(path.read_text(), blocks)
        if args.check:
            drifted += [f"{path.name}: {name}" for name in changed]
            continue
        path.write_text(new)
        print(f"{path.name}: rewrote {len(changed)} part(s): "
              f"{', '.join(changed) or 'none changed'}")
    if drifted:
        print(f"drifted from the committed results: {'; '.join(drifted)}; run python "
              f"scripts/readme.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
