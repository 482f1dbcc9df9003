# How long the study takes (tcbench.launch.estimate, docs/job-cost.md): the dry run and the start of a
# run print an estimate under Snakemake's job counts, and each finished job a progress line
# whose total never grows. Carried by Snakemake's own logger: a filter on its records (the job
# counts' message gains the estimate; the step count's total becomes an upper bound that only
# shrinks) and a handler that writes the progress line after Snakemake's.
import json
import logging
import sys
import time

from tcbench.launch import estimate as tcestimate


def measuring_of(job):
    """The matrix's Cell or Comparison that a job of the DAG runs; None for any other job."""
    w = job.wildcards
    if job.rule.name == "train":
        key = f"{w.experiment}/{w.cell}"
        return JOBS.get(key) or EXTRA_JOBS.get(key)
    if job.rule.name == "interleave":
        return COMPARISONS.get(f"{w.experiment}/{w.comparison}")
    return None


def task_of(job):
    """The estimate's Task of a measuring job of the DAG (a training job, an interleaved
    comparison, a capacity search); None for any other job."""
    m = measuring_of(job)
    if m is not None:
        return tcestimate.task(m)
    if job.rule.name in ("capacity_search", "capacity_search_variant"):
        w = job.wildcards
        return tcestimate.capacity_task(w.workload, w.precision, w.get("variant"))
    return None


def look_path(cell, look):
    return expand(rules.repeats_look.output[0], run=RUN, experiment=cell.experiment,
                  group=cell.group, look=look)[0]


def possible(in_dag):
    """The adaptive repeats (matrix jobs) and looks (a count) that the looks made so far leave
    possible and that are neither jobs of the DAG yet nor made already."""
    jobs, looks = [], 0
    for cell in ADAPTIVE.values():
        saids = []
        for k in range(1, cell.settings.looks + 1):
            try:
                saids.append(json.loads(Path(look_path(cell, k)).read_text()))
            except (OSError, ValueError):
                break
        n, k_max = tcrepeats.bound(saids, cell)
        for job in (cell.job(r) for r in range(cell.initial + 1, n + 1)):
            path = expand(rules.train.output[0], run=RUN, experiment=job.experiment,
                          cell=job.cell)[0]
            if path not in in_dag and not Path(path).exists():
                jobs.append(job)
        looks += sum(1 for k in range(1, k_max + 1) if look_path(cell, k) not in in_dag
                     and not Path(look_path(cell, k)).exists())
    return jobs, looks


class StudyClock(logging.Filter):
    """The estimate and the progress line, on Snakemake's log records (its events by name)."""

    def __init__(self):
        super().__init__()
        self.said = None
        self.clock = None
        self.start = time.time()
        self.done = {}  # measuring jobs of this run done: id -> (task, measured seconds)

    def filter(self, record):
        event = str(getattr(record, "event", "") or "")
        try:
            if event == "run_info":
                self.said = self.said or self.estimate()
                if self.said:
                    record.msg = f"{record.msg}\n" + "\n".join(self.said)
            elif event == "progress" and self.clock is not None and not workflow.dryrun:
                record.total, record.tcbench_progress = self.progress(record.total)
        except Exception as exc:  # noqa: BLE001 - an estimate never stops the study it times
            record.tcbench_progress = f"(no time estimate: {type(exc).__name__}: {exc})"
        return True

    def dag(self):
        jobs = list(workflow.dag.needrun_jobs(exclude_finished=False))
        return jobs, {str(f) for j in jobs for f in j.output}

    def estimate(self):
        jobs, outputs = self.dag()
        extra, _ = possible(outputs)
        tasks = [t for t in map(task_of, jobs) if t is not None]
        # repeats join only through a look, which follows a cell's repeats: a DAG with neither
        # (a report, a comparison) adds none
        if not tasks and not any(j.rule.name == "repeats_look" for j in jobs):
            extra = []
        optional = [tcestimate.task(m) for m in extra]
        shelf = tcestimate.books("results", RUN, environment.device_slug())
        here, there = tcestimate.choose([*tasks, *optional], shelf)
        priced = any(here.price(t) is not None for t in [*tasks, *optional])
        self.clock = tcestimate.Clock(here if priced or there is None else there)
        cells = [c for c in ADAPTIVE.values() if any(j.id.startswith(c.key + "_r")
                                                     for j in extra)]
        others = sum(1 for j in jobs if task_of(j) is None and j.rule.name != "all")
        return tcestimate.estimate(tasks, optional, shelf, tcestimate.adaptive_words(cells),
                                   others)

    def progress(self, total):
        """A job has just finished: this run's measuring jobs done (their outputs written since
        the start: the DAG marks a job finished only after this event, and a look's checkpoint
        rebuilds it without the jobs done before), those still to run, those that may join."""
        jobs, outputs = self.dag()
        pending = []
        for job in jobs:
            t = task_of(job)
            if t is None or t.id in self.done:
                continue
            made = [Path(f) for f in job.output]
            if all(f.exists() and f.stat().st_mtime >= self.start for f in made):
                bench = tcestimate.seconds(job.benchmark) if job.benchmark else None
                self.done[t.id] = (t, bench)
            else:
                pending.append(t)
        extra, looks = possible(outputs)
        line = self.clock.line(list(self.done.values()), pending,
                               [tcestimate.task(j) for j in extra])
        return self.clock.steps(total, len(extra) + looks), line


class StudyClockLine(logging.Handler):
    """Writes the progress line, after Snakemake's own."""

    def emit(self, record):
        line = getattr(record, "tcbench_progress", None)
        if line:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()


# Not in a job's own Snakemake (a cluster job parses the workflow again) nor where nothing runs.
if not workflow.remote_exec and not workflow.touch:
    STUDY_CLOCK = StudyClock()
    logger.addFilter(STUDY_CLOCK)
    logger.addHandler(StudyClockLine())
