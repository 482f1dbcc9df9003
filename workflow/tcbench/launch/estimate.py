"""How long a study takes: before it runs (the dry run and the start print it) and while it runs
(a progress line after each job), from measured job costs.

Every measuring job leaves Snakemake's benchmark of itself beside its record
(``results/<set>/benchmarks/{train,interleave}/<experiment>/<name>.tsv``, its wall seconds in
``s``; a capacity search ``benchmarks/capacity/<workload>/<precision>.tsv``, priced by the
searches of the same workload, precision and variant). A job to come is priced by the median of the jobs measured like it in one result set:
the same workload, precision(s), batch size and parameters (the seed aside, and any parameter
only one of the two has: one added since), else the same workload, precision(s) and model at
another setting (a zoo's contiguous cell from its channels_last one). An interleaved
comparison's rounds are scaled to the rounds and segment length it asks for (the committed H200
set's processes ran 60 rounds of 0.1 s, the default is now 20): the process's
``measurement_steps`` phase by that ratio, the rest of it as measured.

The jobs are priced on this device where it has measured any of them (the study's own set, or
a set named after the device); the rest, or all of them on a device that has measured none, on
the other device whose sets price the most of them, which the estimate then names: a GPU study
dry-run on a laptop is priced on the H200, and a GPU with no set of its own has no estimate of
its own until its first jobs have run. Jobs nothing prices are counted and named, never
guessed. The adaptive repeats' worst case (every cell to its cap) is priced apart: the
estimate says how many jobs they may add, why, and the line that turns them off.

During the run the total is an upper bound that only shrinks: the jobs in Snakemake's DAG plus
the adaptive repeats the looks so far leave possible; a look that settles its cell drops the
rest. The time left is the estimate of what remains, scaled by how the jobs done so far
compared with their estimates. Snakemake's own step count gets the same bound
(``Clock.steps``): the steps it adds when a look asks for repeats were counted from the start.

Knows nothing of Snakemake: the workflow (workflow/rules/estimate.smk) hands in the jobs.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .. import vocabulary as V
from ..host.environment import device_of

KINDS = ("train", "interleave", "capacity")
IGNORED = frozenset({"seed"})   # a repeat's seed changes what is trained, not what it costs
OFF = "adaptive_repeats: {enabled: false}"


@dataclass(frozen=True)
class Task:
    """One measuring job to price: a training job or an interleaved comparison process."""

    kind: str
    id: str
    workload: str
    precisions: tuple
    batch_size: int
    params: tuple            # sorted (key, value) pairs
    rounds: int = 0          # an interleaved process's rounds
    segment_s: float = 0.0   # and each arm's segment in one


def capacity_task(workload: str, precision: str, variant: str | None = None) -> Task:
    """One search of the capacity study (every probe of it): priced by the searches of the same
    workload, precision and variant (cuDNN autotuning on) measured before."""
    name = f"{precision}.{variant}" if variant else precision
    return Task("capacity", f"capacity/{workload}/{name}", workload, (precision,), 0,
                (("variant", variant or ""),))


def task(job) -> Task:
    """The Task of a ``tcbench.launch.matrix`` Cell or Comparison."""
    if hasattr(job, "precisions"):
        chosen = dict(job.interleave)
        return Task("interleave", job.id, job.workload, tuple(job.precisions), job.batch_size,
                    job.params, chosen["rounds"], chosen["segment_s"])
    return Task("train", job.id, job.workload, (job.precision,), job.batch_size, job.params)


@dataclass(frozen=True)
class Measured:
    """One job measured in a result set, as its benchmark and record say."""

    kind: str
    id: str
    workload: str
    precisions: tuple
    batch_size: int
    params: dict
    seconds: float
    rounds: int = 0          # the rounds it ran (interleaved)
    segment_s: float = 0.0
    rounds_s: float = 0.0    # of its seconds, those of its rounds


def seconds(tsv: Path) -> float | None:
    """A Snakemake benchmark file's wall seconds (its first row's ``s``), None if unreadable."""
    try:
        head, row = Path(tsv).read_text().splitlines()[:2]
        return float(row.split("\t")[head.split("\t").index("s")])
    except (OSError, ValueError):
        return None


def measured(folder: Path) -> list[Measured]:
    """Every job of the result set ``folder`` with both a benchmark and a record."""
    folder = Path(folder)
    out = []
    for kind, records in (("train", "records"), ("interleave", V.INTERLEAVED_DIR)):
        for tsv in sorted((folder / "benchmarks" / kind).glob("*/*.tsv")):
            s = seconds(tsv)
            record = folder / records / tsv.parent.name / f"{tsv.stem}.json"
            try:
                r = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            if s is None or not isinstance(r.get("params"), dict):
                continue
            key = f"{tsv.parent.name}/{tsv.stem}"
            if kind == "train":
                out.append(Measured(kind, key, r.get("workload"), (r.get("precision"),),
                                    r.get("batch_size"), r["params"], s))
                continue
            protocol = r.get("protocol") or {}
            phases = (r.get("harness") or {}).get("phases_s") or {}
            out.append(Measured(kind, key, r.get("workload"), tuple(r.get("precisions") or ()),
                                r.get("batch_size"), r["params"], s, protocol.get("rounds") or 0,
                                protocol.get("segment_s") or 0.0,
                                min(phases.get("measurement_steps") or 0.0, s)))
    return out + _searches(folder)


def _searches(folder: Path) -> list[Measured]:
    """The capacity searches of a result set with both a benchmark and a result (a search
    stopped by a time bound has neither, and prices nothing)."""
    out = []
    for tsv in sorted((folder / "benchmarks" / "capacity").glob("*/*.tsv")):
        s = seconds(tsv)
        try:
            r = json.loads((folder / "capacity" / tsv.parent.name / f"{tsv.stem}.json")
                           .read_text())
        except (OSError, ValueError):
            continue
        if s is not None:
            t = capacity_task(r.get("workload"), r.get("precision"), r.get("variant"))
            out.append(Measured("capacity", t.id, t.workload, t.precisions, 0,
                                dict(t.params), s))
    return out


def alike(a: dict, b: dict) -> bool:
    return all(a[k] == b[k] for k in (a.keys() & b.keys()) - IGNORED)


@dataclass
class Book:
    """The measured jobs of one device's result sets, and where they came from."""

    device: str
    here: bool
    folders: list[Path]
    jobs: list[Measured] = field(default_factory=list)
    memo: dict = field(default_factory=dict)

    def price(self, t: Task) -> float | None:
        """``t``'s estimated seconds: the median of the jobs measured like it; None if none."""
        if repr(t) not in self.memo:
            self.memo[repr(t)] = self._price(t)
        return self.memo[repr(t)]

    def _price(self, t: Task) -> float | None:
        same = [m for m in self.jobs if m.kind == t.kind and m.workload == t.workload
                and set(m.precisions) == set(t.precisions)]
        params = dict(t.params)
        like = [m for m in same if m.batch_size == t.batch_size and alike(params, m.params)]
        if not like and params.get("model") is not None:
            like = [m for m in same if m.params.get("model") == params["model"]]
        if not like:
            return None
        return statistics.median(scaled(m, t) for m in like)

    def scales(self, t: Task) -> set:
        """The rounds of the processes measured like ``t`` where they differ from its own (an
        interleaved estimate scaled)."""
        return {m.rounds for m in self.jobs if m.kind == t.kind == "interleave"
                and m.workload == t.workload and set(m.precisions) == set(t.precisions)
                and m.rounds and (m.rounds, m.segment_s) != (t.rounds, t.segment_s)}


def scaled(m: Measured, t: Task) -> float:
    """``m``'s seconds for ``t``: an interleaved process's rounds scaled to ``t``'s rounds
    and segment length, the rest of it as measured."""
    if t.kind != "interleave" or not (m.rounds and m.segment_s and t.rounds and t.segment_s):
        return m.seconds
    ratio = t.rounds * t.segment_s / (m.rounds * m.segment_s)
    return m.seconds - m.rounds_s + m.rounds_s * ratio


def books(results: Path, own: str, device: str) -> list[Book]:
    """This device's book (the study's set ``own`` and every set named after ``device``),
    then one per other device with a measured set under ``results`` (results/<set>/ and
    results/bench/<device>/<study>/)."""
    results = Path(results)
    by: dict[str, list[Path]] = {device: [results / own]}
    found = [(device_of(f.name), f) for f in sorted(results.glob("*/"))]
    found += [(f.parent.name, f) for f in sorted(results.glob("bench/*/*/"))]
    for dev, folder in found:
        if dev and folder != results / own and (folder / "benchmarks").is_dir():
            by.setdefault(dev, []).append(folder)
    return [Book(dev, dev == device, folders, [m for f in folders for m in measured(f)])
            for dev, folders in by.items()]


def choose(tasks: list[Task], shelf: list[Book]) -> tuple[Book, Book | None]:
    """This device's book, and the other device's that prices most of ``tasks`` where this
    one leaves some unpriced and it prices more (None otherwise)."""
    here, others = shelf[0], shelf[1:]
    n_here = sum(here.price(t) is not None for t in tasks)
    if n_here == len(tasks) or not others:
        return here, None
    best = max(others, key=lambda b: sum(b.price(t) is not None for t in tasks))
    n_best = sum(best.price(t) is not None for t in tasks)
    return here, best if n_best > n_here else None


def duration(s: float) -> str:
    """Seconds in words a progress line can carry: 45 s, 12 min, 2 h 05 min."""
    s = max(float(s), 0.0)
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def where(book: Book) -> str:
    own = "this device" if book.here else book.device
    return f"{own} ({', '.join(f'{f}/' for f in book.folders if f.is_dir())})"


def summary(tasks: list[Task], optional: list[Task], book: Book) -> list[str]:
    """What ``tasks`` (and the adaptive repeats that may join them, ``optional``) take as
    priced by ``book``: its line, the jobs it cannot price, how interleaved ones were scaled."""
    prices = [book.price(t) for t in tasks]
    firm = sum(p for p in prices if p is not None)
    line = f"on {where(book)}: about {duration(firm)}"
    if optional:
        extra = sum(p for p in map(book.price, optional) if p is not None)
        line += f", at most {duration(firm + extra)} if every adaptive repeat runs"
    lines = [line]
    missing = [t.id for t in [*tasks, *optional] if book.price(t) is None]
    if missing:
        lines.append(f"  not priced there: {len(missing)} job(s) like none measured "
                     f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")
    rounds = set().union(*(book.scales(t) for t in tasks)) if tasks else set()
    if rounds:
        asked = sorted({t.rounds for t in tasks if t.kind == "interleave"})
        lines.append("  its interleaved comparisons measured in processes of "
                     f"{', '.join(map(str, sorted(rounds)))} rounds, their rounds' time scaled "
                     f"to {', '.join(map(str, asked))} rounds")
    return lines


def estimate(tasks: list[Task], optional: list[Task], shelf: list[Book], adaptive: str,
             others: int) -> list[str]:
    """The lines the dry run and the start print: ``tasks`` (the measuring jobs to run),
    ``optional`` (adaptive repeats that may join them, for the reason ``adaptive``),
    ``others`` (the jobs that are not timed: calibration, tables, figures, reports)."""
    if not tasks and not optional:
        return []
    out = ["Time estimate, from measured job costs (tcbench.launch.estimate):",
           f"  {len(tasks)} measuring job(s) to run"]
    if optional:
        out[-1] += (f"; the adaptive repeats may add up to {len(optional)} more ({adaptive}); "
                    f"`{OFF}` in the config runs exactly its repeats")
    here, there = choose([*tasks, *optional], shelf)
    if any(here.price(t) is not None for t in [*tasks, *optional]):
        out += [f"  {x}" for x in summary(tasks, optional, here)]
    else:
        out.append(f"  this device ({here.device}) has measured none of them: its time is "
                   "unknown until they run (the progress line then prices the rest)")
    if there is not None:
        out += [f"  {x}" for x in summary(tasks, optional, there)]
    if others:
        out.append(f"  plus {others} job(s) not timed (calibration, tables, figures, "
                   "reports)")
    return out


def adaptive_words(cells) -> str:
    """Why adaptive repeats may add jobs, from the adaptive cells (tcbench.launch.repeats.Cell)."""
    caps: dict[tuple, set] = {}
    for c in cells:
        caps.setdefault((c.initial, c.settings.target), set()).add(c.settings.max)
    return "; ".join(f"{sum(1 for c in cells if (c.initial, c.settings.target) == k)} cell(s) "
                     f"still wider than ±{k[1] * 100:g}% after {k[0]} repeats get more, up to "
                     f"{' or '.join(map(str, sorted(m)))} a cell" for k, m in sorted(caps.items()))


class Clock:
    """The progress line's arithmetic: totals that never grow; a job to come priced by the
    jobs of this run done like it (another repeat of its cell), else by the book, scaled by
    how the jobs done so far (three or more) compared with the book's estimates of them."""

    def __init__(self, book: Book):
        self.book = book
        self.ran = Book(book.device, True, [])
        self.shown: int | None = None
        self.steps_shown: int | None = None
        self.last: str | None = None

    def steps(self, total: int, possible: int) -> int:
        """Snakemake's step count's bound: its ``total`` now and the ``possible`` steps not yet
        in it (adaptive repeats and looks the looks so far allow); never above what it was."""
        bound = total + possible
        self.steps_shown = bound if self.steps_shown is None else min(self.steps_shown, bound)
        self.steps_shown = max(self.steps_shown, total)
        return self.steps_shown

    def prices(self, done: list[tuple[Task, float | None]], tasks: list[Task]) -> list:
        """Each of ``tasks``'s seconds to come, None where nothing prices it."""
        self.ran = Book(self.book.device, True, [], [
            Measured(t.kind, t.id, t.workload, t.precisions, t.batch_size, dict(t.params), s,
                     t.rounds, t.segment_s) for t, s in done if s is not None])
        pairs = [(s, self.book.price(t)) for t, s in done]
        pairs = [(s, p) for s, p in pairs if s is not None and p]
        # one job is no trend (the first pays for the fork server's start): three are
        factor = sum(s for s, _ in pairs) / sum(p for _, p in pairs) if len(pairs) >= 3 else 1.0
        out = []
        for t in tasks:
            own, booked = self.ran.price(t), self.book.price(t)
            out.append(own if own is not None else None if booked is None else factor * booked)
        return out

    def line(self, done: list[tuple[Task, float | None]], pending: list[Task],
             optional: list[Task]) -> str | None:
        """``done``: tasks finished in this run with their measured seconds; ``pending``: in
        the DAG still to run; ``optional``: adaptive repeats that may still join. None where
        the line would say what the last one said."""
        total = len(done) + len(pending) + len(optional)
        self.shown = total if self.shown is None else max(min(self.shown, total), len(done))
        firm = self.prices(done, pending)
        maybe = self.prices(done, optional)
        left = sum(p for p in firm if p is not None)
        most = left + sum(p for p in maybe if p is not None)
        unknown = sum(p is None for p in [*firm, *maybe])
        pct = f"{100 * len(done) / self.shown:.0f}%" if self.shown else "100%"
        text = f"Progress: {len(done)} of at most {self.shown} measuring jobs done ({pct})"
        if unknown < len(firm) + len(maybe) or not unknown:
            text += f"; about {duration(left)} left"
            if maybe:
                text += f", at most {duration(most)} if every adaptive repeat runs"
        if unknown:
            text += f"; {unknown} job(s) to come like none measured yet"
        if text == self.last:   # a step that measured nothing says nothing new
            return None
        self.last = text
        return text
