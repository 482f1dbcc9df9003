"""Repeats until the interval is tight: how many repeats a cell gets.

A cell starts with its ``repeats`` fresh processes. With ``adaptive_repeats.enabled`` a *look*
then reads the records it has and decides whether it needs more:

* **The interval is the reports' own**: ``tcbench.stats.estimate`` of the cell's throughput
  (samples/s of the timed steps), the 95% Student-t interval of the mean over the ok repeats;
  its relative half-width is ``(high - low) / 2 / mean``. A cell is **tight** when that is at most
  ``target_halfwidth``. Only cells that start with three or more repeats adapt: the reports give
  two repeats a range, not an interval, and Stein's rule from two (t with one degree of freedom
  is 12.7) asks for the cap almost always; one repeat has no spread at all. The smoke study's
  single repeats and the multi-GPU check's pairs stay exactly as configured.
* **How many more: Stein's two-stage rule** on the same scale. From the n repeats at hand (mean
  m, standard deviation s), ``N = ceil((t_{n-1, 0.975} * (s / m) / target)^2)``: the number of
  repeats whose interval, at this spread, is no wider than the target. Capped at
  ``adaptive_repeats.max``, and never fewer than three. With one scale and one t, "wide" and
  "Stein asks for more than n" are the same statement.
* **A second look** (``looks: 2``, the default) after the added repeats have run re-estimates
  the spread from all of them and may add more, up to the cap: the spread of three runs is
  itself uncertain, and the reports pool every repeat.
* **Cells that did not run** (any repeat unsupported, oom, diverged or error) never get extra
  repeats: more of a failing run answers nothing. They are ``not-ok``.
* **Host-bound cells** (the GPU busy less than ``vocabulary.HOST_BOUND_BUSY_SHARE`` of the
  timed steps, by the cell's evidence repeat's profile) get no extra repeats either: their
  spread is the host's drift over minutes, which clusters in time, so repeats run minutes apart
  are not independent of it and more of them do not narrow it. Their ratios are decided by the
  interleaved comparison (``tcbench.job.interleave``) where the study has one. They are
  ``host-bound``, and the decision says so with the busy share.

After the last look, the cell's decision (``decide``) says tight, noisy (still wider than the
target at the cap, or after the last look, with the numbers) or not-ok; ``summary`` puts every
cell's decision in one CSV. Every extra repeat is its own process with its own seed (the
matrix's rule: seed + r - 1), and its job spec names why it exists (``repeat_reason``).

The workflow side is workflow/rules/repeats.smk (one checkpoint per look); this module knows
nothing of Snakemake.

    python -m tcbench.launch.repeats look --records R1 R2 R3 --look 1 --target 0.02 --max 10 \\
        --looks 2 --out results/RUN/repeats/EXP/CELL.look1.json
    python -m tcbench.launch.repeats decide --records ... --target 0.02 --max 10 --looks 2 --out ...
    python -m tcbench.launch.repeats summary --decisions D1 D2 ... --out results/RUN/repeats.csv
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import atomic, stats, vocabulary as V
from ..vocabulary import ConfigError

TIGHT, NOISY, NOT_OK, WIDE, HOST_BOUND = "tight", "noisy", "not-ok", "wide", "host-bound"
METRIC = V.HEADLINE  # the interval the reports give: of the headline throughput
MIN_N = stats.MIN_CI_N  # the reports' interval needs three runs
SUMMARY_COLUMNS = ["experiment", "cell", "status", "n_initial", "n", "halfwidth",
                   "gpu_busy_share", "target", "max", "looks", "reason"]


@dataclass(frozen=True)
class Settings:
    target: float  # relative half-width of the reports' 95% interval of mean throughput
    max: int
    looks: int


@dataclass(frozen=True)
class Cell:
    """One adaptive cell: its first job (the template of every later repeat) and how many
    repeats it starts with."""

    experiment: str
    group: str  # the cell's name without its repeat, e.g. tf32_bs512
    initial: int
    first: object  # tcbench.launch.matrix.Cell of repeat 1
    settings: Settings  # the config's adaptive_repeats, the experiment's own over it

    @property
    def key(self) -> str:
        return f"{self.experiment}/{self.group}"

    def job(self, repeat: int):
        return self.first.again(repeat)


def settings(config: dict, experiment: dict | None = None) -> Settings | None:
    """The config's adaptive_repeats with an experiment's own keys over it (a slow experiment
    may want a lower max), or None where adaptation is off."""
    a = (config.get("adaptive_repeats") or {}) | ((experiment or {}).get("adaptive_repeats") or {})
    if not a.get("enabled"):
        return None
    return Settings(float(a["target_halfwidth"]), int(a["max"]), int(a["looks"]))


def cells(config: dict, jobs: dict) -> dict[str, Cell]:
    """The cells of ``jobs`` (tcbench.launch.matrix.expand's) that adapt: adaptation on, three or
    more initial repeats, room below the cap. A cap below a cell's initial repeats is a config
    error, named, before any job runs."""
    per_experiment = {e.get("name", e["workload"]): settings(config, e)
                      for e in config["experiments"]}
    groups: dict[str, list] = {}
    for job in jobs.values():
        if per_experiment[job.experiment] is not None:
            groups.setdefault(f"{job.experiment}/{job.group}", []).append(job)
    found = {}
    for key, js in groups.items():
        first = min(js, key=lambda j: j.repeat)
        s = per_experiment[first.experiment]
        if len(js) > s.max:
            raise ConfigError(f"adaptive_repeats.max={s.max}: below the {len(js)} repeats "
                              f"{key} starts with; raise max or lower repeats")
        if len(js) >= MIN_N and s.max > len(js):
            found[key] = Cell(first.experiment, first.group, len(js), first, s)
    return found


def after_look(said: dict, s: Settings) -> tuple[int, bool]:
    """What one look said of its cell: the repeats it plans in all (no more than the cap: a look
    made under a higher max plans no more than the config allows now) and whether the cell's
    repeats are settled by it (no more asked for, or the cap reached)."""
    n = min(int(said["n_planned"]), s.max)
    return n, not said["more"] or n >= s.max


def bound(saids: list[dict], cell: Cell) -> tuple[int, int]:
    """The most repeats and looks ``cell`` can come to, given what its looks made so far said
    (in order): what they settled on, else the cap and every look."""
    for k, said in enumerate(saids, 1):
        n, settled = after_look(said, cell.settings)
        if settled or k >= cell.settings.looks:
            return n, k
    return cell.settings.max, cell.settings.looks


# The order measuring jobs run in. Jobs run back to back measure the host as it is over those
# minutes, so a cell whose repeats ran together carries the study's drift as a bias that its
# interval cannot show. Repeat k of every cell (and comparison replicate k of every setting) runs
# in wave k, before any job of wave k + 1: a cell's repeats straddle the study.
WAVES = 1000   # above any repeat count the schema allows (adaptive_repeats.max)


def wave_priority(wave: int) -> int:
    """The scheduling priority of a job in wave ``wave`` (1 first): higher runs sooner; every
    wave above the default 0 of the jobs that do not measure."""
    return max(WAVES - int(wave), 1)


# ------------------------------------------------------------------------------------ the rule
def _pct(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{100 * x:.2f}%" if abs(x) >= 1e-4 else f"{100 * x:.2g}%"


def halfwidth(values) -> float | None:
    """The relative half-width of the reports' interval of the mean (None without one)."""
    return stats.relative_halfwidth(stats.estimate(values))


def stein_n(values, target: float) -> int:
    """Stein's two-stage number of repeats for a relative half-width ``target`` from the
    spread of ``values`` (at least two)."""
    from scipy.stats import t

    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 2:
        raise ValueError("Stein's rule needs at least two values")
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    if sd == 0 or mean == 0:
        return max(n, MIN_N)
    q = float(t.ppf(0.5 + stats.CONFIDENCE / 2, n - 1))
    return max(MIN_N, math.ceil((q * sd / abs(mean) / target) ** 2))


def busy_share(records: list[dict]) -> float | None:
    """The GPU's busy share of the timed steps, from the first record that has one (the cell's
    evidence repeat: its kernels are profiled once a cell)."""
    from .. import kernels

    for r in records:
        tc = kernels.without_annotations(r.get("tensor_cores") or {})
        m = r.get("metrics") or {}
        share = kernels.busy_of_timed_steps(tc, m.get("step_time_median_s"))[
            "gpu_busy_share"]
        if share is not None:
            return float(share)
    return None


def assess(records: list[dict], s: Settings, interleaved: bool = False) -> dict:
    """Where a cell stands on its records: ok values, interval half-width, status so far.
    ``interleaved``: the study compares this cell's precisions interleaved."""
    bad = sorted({r["status"] for r in records if r["status"] != V.OK})
    values = [(r.get("metrics") or {}).get(METRIC) for r in records if r["status"] == V.OK]
    values = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    h = halfwidth(values)
    out = {"n": len(records), "n_ok": len(values), "halfwidth": h, "target": s.target,
           "max": s.max, "looks": s.looks, "throughput": values}
    if bad or len(values) < len(records):
        why = ", ".join(bad) or "no throughput"
        return out | {"status": NOT_OK,
                      "reason": f"repeats {why}: extra repeats would not make it run"}
    busy = busy_share(records)
    out["gpu_busy_share"] = busy
    if h is not None and h <= s.target:
        return out | {"status": TIGHT,
                      "reason": f"half-width {_pct(h)} <= target {_pct(s.target)} "
                                f"with {len(values)} repeats"}
    shown = f"half-width {_pct(h)}" if h is not None else f"no 95% interval from {len(values)}"
    if busy is not None and busy < V.HOST_BOUND_BUSY_SHARE:
        decided = ("the interleaved comparison decides its ratios" if interleaved else
                   "no interleaved comparison in this study to decide its ratios "
                   "(interleave: {enabled: true} adds one)")
        return out | {"status": HOST_BOUND,
                      "reason": f"host-bound: the GPU was busy {busy:.0%} of the timed steps "
                                f"(< {V.HOST_BOUND_BUSY_SHARE:.0%}), so its {shown} after "
                                f"{len(values)} repeats is the host's drift, which more repeats "
                                f"do not narrow; no repeats added; {decided}"}
    return out | {"status": WIDE,
                  "reason": f"{shown} > target {_pct(s.target)} after {len(values)} repeats"}


def look(records: list[dict], s: Settings, number: int, interleaved: bool = False) -> dict:
    """Look ``number``: how many repeats the cell needs in all (``n_planned``), and why."""
    a = assess(records, s, interleaved)
    n = a["n"]
    planned = n
    if a["status"] == WIDE and n < s.max:
        planned = min(s.max, max(n + 1, stein_n(a["throughput"], s.target)))
    why = a["reason"] if planned == n else f"added at look {number}: {a['reason']}"
    if a["status"] == WIDE and n >= s.max:
        why = f"{a['reason']}; at the cap of {s.max} repeats"
    return a | {"look": number, "n_planned": planned, "more": planned > n, "reason": why}


def decide(records: list[dict], s: Settings, interleaved: bool = False) -> dict:
    """The cell's last word after its last look: tight, noisy (with the numbers), host-bound
    or not-ok."""
    a = assess(records, s, interleaved)
    if a["status"] == WIDE:
        where = f"at the cap of {s.max} repeats" if a["n"] >= s.max \
            else f"after {s.looks} look(s)"
        a |= {"status": NOISY, "reason": f"noisy: {a['reason']}, {where}"}
    return a


# ------------------------------------------------------------------------------------ files
def read_records(paths) -> list[dict]:
    from .. import record as R

    return [R.read(p) for p in paths]


def write(result: dict, path: Path, cell: dict) -> Path:
    return atomic.write_json(path, cell | result)


def summary(decisions: list[dict]) -> str:
    """One CSV row per cell's decision (columns SUMMARY_COLUMNS)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, SUMMARY_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for d in decisions:
        busy = d.get("gpu_busy_share")
        w.writerow(d | {"halfwidth": "" if d["halfwidth"] is None else f"{d['halfwidth']:.6g}",
                        "gpu_busy_share": "" if busy is None else f"{busy:.4g}"})
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.launch.repeats", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["look", "decide", "summary"])
    ap.add_argument("--records", nargs="*", default=[])
    ap.add_argument("--decisions", nargs="*", default=[])
    ap.add_argument("--look", type=int, default=1)
    ap.add_argument("--target", type=float)
    ap.add_argument("--max", type=int)
    ap.add_argument("--looks", type=int)
    ap.add_argument("--experiment", default="")
    ap.add_argument("--cell", default="")
    ap.add_argument("--n-initial", type=int)
    ap.add_argument("--interleaved", action="store_true",
                    help="the study compares this cell's precisions interleaved")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.what == "summary":
        decisions = [json.loads(Path(p).read_text()) for p in args.decisions]
        atomic.write_text(args.out, summary(decisions))
        return 0
    s = Settings(args.target, args.max, args.looks)
    records = read_records(args.records)
    result = look(records, s, args.look, args.interleaved) if args.what == "look" \
        else decide(records, s, args.interleaved)
    cell = {"experiment": args.experiment, "cell": args.cell, "n_initial": args.n_initial,
            "records": [str(p) for p in args.records]}
    write(result, args.out, cell)
    print(f"{args.experiment}/{args.cell}: {result['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
