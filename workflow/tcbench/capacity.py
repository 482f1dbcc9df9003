"""The capacity study: per workload and precision, the largest batch size that trains without
running out of memory. The seed's point that lower precision needs less memory, turned into
the number that matters in practice: how much larger a batch fits.

The search doubles the batch size from ``start`` until a probe runs out of memory (or ``max``
fits), then bisects between the largest size that fitted and the smallest that did not, on the
grid of multiples of ``resolution``, until the two are ``resolution`` apart.

Each probe is one ordinary training job (``python -m tcbench.run``: the study's own loop,
precision flags and cuDNN settings) with a few steps, run in a fresh process. A fresh process is
what makes the answer trustworthy: after an out-of-memory error the CUDA caching allocator keeps
its (fragmented) segments, cuDNN keeps its workspace and the failed step's tensors can stay
referenced from the traceback, so an in-process probe would be judged against a GPU that is
partly full of the previous probe, and the answer would depend on the order of the probes.
Every probe leaves its record (a real ``oom`` record with the memory in use, on a GPU) under
``results/{run}/capacity/{workload}/{precision}/bs{N}.json``.

    python -m tcbench.capacity search --plan JSON --out results/R/capacity/resnet50/fp32.json
    python -m tcbench.capacity report results/R/capacity/*/*.json --out results/R \
        --figures results/R/figures
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import atomic
from . import vocabulary as V
from .vocabulary import ConfigError

WORKLOADS = ("amp_recipe", "mnist_cnn", "resnet50")
DEFAULTS = {"enabled": False, "workloads": ["resnet50"],
            "precisions": list(V.PRECISIONS), "start": 64, "max": 65536,
            "resolution": 8, "steps": 2, "memory_limit_bytes": None, "probe_timeout_s": 1800,
            "params": {}}
# Parameters the study sets itself so that a probe is a few steps long.
BOUNDED = {"amp_recipe": ("num_batches", "epochs"),
           "mnist_cnn": ("epochs", "train_samples"),
           "resnet50": ("steps", "distinct_batches")}
PROBE_COMMON = {"warmup_steps": 1, "profile_steps": 0}
RESULT_SCHEMA = "tcbench-capacity/1"


# ------------------------------------------------------------------------------------ the plan
def settings(config: dict) -> dict:
    return DEFAULTS | dict(config.get("capacity") or {})


def probe_params(workload: str, steps: int, batch_size: int, user: dict | None) -> dict:
    """Workload parameters of one probe: ``user``'s, then a warm-up step plus ``steps`` steps
    and no profiling. ResNet-50 keeps one batch of data on the device (a loader would hold about
    as much); amp_recipe and synthetic mnist_cnn keep their ``steps + 1`` batches there, as
    those workloads always do."""
    bounded = {"amp_recipe": {"num_batches": steps + 1, "epochs": 1},
               "mnist_cnn": {"epochs": 1, "train_samples": batch_size * (steps + 1)},
               "resnet50": {"steps": steps, "distinct_batches": 1}}[workload]
    base = {"data": "synthetic", "loader": "synthetic"} if workload == "mnist_cnn" else {}
    return base | dict(user or {}) | PROBE_COMMON | bounded


def plan(config: dict, run: str) -> dict[str, dict]:
    """Every search of the capacity study, keyed ``workload/precision``; empty when disabled.
    Raises ConfigError naming the key and the value, before any job runs."""
    from . import workloads as W

    c = settings(config)
    if not c["enabled"]:
        return {}
    for key in ("start", "max", "resolution", "steps", "probe_timeout_s"):
        v = c[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"capacity.{key}={v!r}: must be a positive integer")
    if c["start"] > c["max"]:
        raise ConfigError(f"capacity.start={c['start']!r}: larger than capacity.max={c['max']!r}")
    for key in ("start", "max"):
        if c[key] % c["resolution"]:
            raise ConfigError(f"capacity.{key}={c[key]!r}: not a multiple of capacity.resolution="
                              f"{c['resolution']!r} (the search works on that grid)")
    limit = c["memory_limit_bytes"]
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ConfigError(f"capacity.memory_limit_bytes={limit!r}: a positive integer or null")
    for key, known in (("workloads", WORKLOADS), ("precisions", V.PRECISIONS)):
        values = c[key]
        if not isinstance(values, list) or not values:
            raise ConfigError(f"capacity.{key}={values!r}: list at least one of {', '.join(known)}")
        for v in values:
            if v not in known:
                raise ConfigError(f"capacity.{key}: {v!r} is not one of {', '.join(known)}")
        if len(set(values)) != len(values):
            raise ConfigError(f"capacity.{key}={values!r}: duplicate entries")
    params = c["params"] or {}
    if not isinstance(params, dict):
        raise ConfigError(f"capacity.params={params!r}: a mapping of workload -> parameters")
    for workload, user in params.items():
        if workload not in c["workloads"]:
            raise ConfigError(f"capacity.params.{workload}: not one of capacity.workloads "
                              f"({', '.join(c['workloads'])})")
        if not isinstance(user, dict):
            raise ConfigError(f"capacity.params.{workload}={user!r}: a mapping of parameters")
        for key in (*BOUNDED[workload], *PROBE_COMMON):
            if key in user:
                raise ConfigError(f"capacity.params.{workload}.{key}={user[key]!r}: set by the "
                                  f"capacity study itself (capacity.steps)")
    searches = {}
    for workload in c["workloads"]:
        user = params.get(workload) or {}
        try:
            W.resolve_params(workload, probe_params(workload, c["steps"], c["start"], user))
        except ValueError as exc:
            raise ConfigError(f"capacity.params.{workload}: {exc}") from None
        for precision in c["precisions"]:
            searches[f"{workload}/{precision}"] = {
                "run": run, "workload": workload, "precision": precision,
                **{k: c[k] for k in ("start", "max", "resolution", "steps",
                                     "memory_limit_bytes", "probe_timeout_s")},
                "params": user}
    return searches


def search_json(searches: dict[str, dict], workload: str, precision: str, run: str) -> str:
    """The plan of one search, as the JSON the ``search`` command takes."""
    key = f"{workload}/{precision}"
    if key not in searches:
        raise ValueError(f"{key} is not a search of this capacity study "
                         f"({', '.join(searches) or 'capacity.enabled is false'})")
    return json.dumps(searches[key] | {"run": run}, sort_keys=True)


# ------------------------------------------------------------------------------------ the search
@dataclass(frozen=True)
class Outcome:
    """What one probe says: ``fits`` True/False, or None when the search cannot go on."""
    fits: bool | None
    status: str
    reason: str | None = None


def search(probe: Callable[[int], Outcome], start: int, maximum: int, resolution: int) -> dict:
    """Doubling from ``start`` until a probe does not fit (or ``maximum`` fits), then bisection
    on the multiples of ``resolution``. Assumes what fits at a batch size fits at any smaller
    one. Returns the status and the bounds: ``largest_ok`` fits, ``smallest_oom`` does not."""
    if start % resolution or maximum % resolution or not 0 < start <= maximum:
        raise ValueError(f"start={start}, max={maximum}, resolution={resolution}: need "
                         f"0 < start <= max, both multiples of resolution")
    lo, hi, tried = 0, None, []

    def ask(bs):
        out = probe(bs)
        tried.append(bs)
        return out

    def stop(out, bs):
        return {"status": out.status, "status_reason": f"batch size {bs}: {out.reason}",
                "largest_ok": lo or None, "smallest_oom": hi, "order": tried}

    bs = start
    while True:
        out = ask(bs)
        if out.fits is None:
            return stop(out, bs)
        if not out.fits:
            hi = bs
            break
        lo = bs
        if bs >= maximum:
            return {"status": "capped", "status_reason": f"the largest batch size tried "
                    f"(capacity.max={maximum}) fits; the capacity is at least that",
                    "largest_ok": lo, "smallest_oom": None, "order": tried}
        bs = min(bs * 2, maximum)
    while hi - lo > resolution:
        mid = (lo + hi) // 2 // resolution * resolution  # strictly between: both are multiples
        out = ask(mid)
        if out.fits is None:
            return stop(out, mid)
        lo, hi = (mid, hi) if out.fits else (lo, mid)
    if not lo:
        return {"status": "none", "status_reason": f"batch size {hi} (the resolution) already "
                f"runs out of memory", "largest_ok": None, "smallest_oom": hi, "order": tried}
    return {"status": "found", "status_reason": None, "largest_ok": lo, "smallest_oom": hi,
            "order": tried}


def outcome_of(record: dict | None, returncode: int, tail: str) -> Outcome:
    """A probe's record (or its absence) as an Outcome. Only an out-of-memory record counts as
    "does not fit"; a crash is never taken for one."""
    if record is None:
        how = (f"killed by signal {-returncode}" if returncode < 0
               else f"exited with status {returncode}")
        return Outcome(None, "error", f"the probe {how} without a record: {tail[-600:].strip()}")
    status = record["status"]
    if status in ("ok", "diverged"):  # a NaN loss in a few steps on random data still fitted
        return Outcome(True, status, record.get("status_reason"))
    if status == "oom":
        return Outcome(False, "oom", record.get("status_reason"))
    return Outcome(None, status, record.get("status_reason"))


def peak_memory(record: dict) -> tuple[int | None, str | None]:
    m = record.get("metrics") or {}
    if m.get("max_memory_allocated_bytes") is not None:
        return m["max_memory_allocated_bytes"], "torch.cuda.max_memory_allocated"
    if m.get("simulated_peak_bytes") is not None:
        return m["simulated_peak_bytes"], "simulated"
    return None, None


def probe_spec(s: dict, bs: int) -> dict:
    """The job spec (``python -m tcbench.run``) of the probe of search ``s`` at batch size ``bs``."""
    spec = {"run": s["run"], "experiment": "capacity",
            "cell": f"{s['workload']}_{s['precision']}_bs{bs}", "workload": s["workload"],
            "precision": s["precision"], "batch_size": bs,
            "params": probe_params(s["workload"], s["steps"], bs, s["params"])}
    if s.get("memory_limit_bytes") is not None:
        spec["memory_limit_bytes"] = s["memory_limit_bytes"]
    return spec


class ProcessProbe:
    """Runs each probe as ``python -m tcbench.run`` in a fresh process (see the module doc)."""

    def __init__(self, s: dict, probe_dir: Path):
        self.s, self.dir = s, Path(probe_dir)
        self.records: dict[int, dict] = {}
        self.log: list[dict] = []

    def __call__(self, bs: int) -> Outcome:
        from . import record as R

        path = self.dir / f"bs{bs}.json"
        path.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "tcbench.run", "--spec", json.dumps(probe_spec(self.s, bs)),
               "--out", str(path)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=self.s.get("probe_timeout_s"))
            returncode, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            returncode = -9
            output = f"timed out after {exc.timeout} s (capacity.probe_timeout_s)"
        wall = time.perf_counter() - t0
        print(f"--- probe batch size {bs} ({wall:.1f} s, exit {returncode})\n{output.strip()}",
              flush=True)
        record = None
        if path.exists():
            record = R.read(path)  # written by tcbench.run, so schema-valid; checked anyway
            self.records[bs] = record
        out = outcome_of(record, returncode, output)
        peak, source = peak_memory(record) if record else (None, None)
        self.log.append({"batch_size": bs, "fits": out.fits, "status": out.status,
                         "status_reason": out.reason, "peak_memory_bytes": peak,
                         "peak_memory_source": source, "wall_s": round(wall, 3),
                         "record": path.name if record else None})
        return out


def lock_path() -> Path:
    devices = os.environ.get("CUDA_VISIBLE_DEVICES", "all").replace(",", "-").replace("/", "_")
    return Path(tempfile.gettempdir()) / f"tcbench-capacity-{os.getuid()}-{devices}.lock"


def run_search(s: dict, out: Path, probe=None) -> dict:
    """One search, written atomically to ``out``; its probes' records go next to it."""
    out = Path(out)
    probe_dir = out.with_suffix("")
    probe_dir.mkdir(parents=True, exist_ok=True)
    # A rerun starts clean: the folder is this search's alone (temporaries of a killed probe too).
    for stale in [*probe_dir.glob("bs*.json"), *probe_dir.glob(".bs*.json.*.tmp")]:
        stale.unlink()
    probe = probe or ProcessProbe(s, probe_dir)
    t0 = time.perf_counter()
    # Concurrent probes would share the device's memory and each find less than there is, so
    # searches on one machine (and set of visible GPUs) take turns, whatever --cores and
    # --resources say. flock is released by the kernel when the holder dies, even by SIGKILL.
    with open(lock_path(), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = search(probe, s["start"], s["max"], s["resolution"])
    best = probe.records.get(result["largest_ok"]) if result["largest_ok"] else None
    any_record = next(iter(probe.records.values()), None)
    peak, source = peak_memory(best) if best else (None, None)
    env = (any_record or {}).get("environment") or {}
    doc = {"schema": RESULT_SCHEMA, **{k: s[k] for k in ("run", "workload", "precision", "start",
                                                          "max", "resolution", "steps",
                                                          "memory_limit_bytes", "params")},
           "status": result["status"], "status_reason": result["status_reason"],
           "largest_ok": result["largest_ok"], "smallest_oom": result["smallest_oom"],
           "peak_memory_bytes": peak, "peak_memory_source": source,
           "throughput_samples_per_s": ((best or {}).get("metrics") or {})
           .get("throughput_samples_per_s"),
           "probes": probe.log, "search_wall_s": round(time.perf_counter() - t0, 3),
           "device_name": env.get("device_name"),
           "gpu_memory_total_bytes": env.get("gpu_memory_total_bytes"),
           "torch_version": env.get("torch_version"),
           "timestamp_utc": env.get("timestamp_utc")}
    atomic.write_json(out, doc)
    return doc




# ------------------------------------------------------------------------------------ the report
def load_results(paths) -> list[dict]:
    docs = []
    for p in paths:
        try:
            doc = json.loads(Path(p).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{p}: not a readable capacity result ({exc})") from None
        if not isinstance(doc, dict) or doc.get("schema") != RESULT_SCHEMA:
            raise ValueError(f"{p}: not a capacity result (schema is not {RESULT_SCHEMA!r})")
        docs.append(doc)
    return docs


def table(docs: list[dict]):
    import pandas as pd

    rows = []
    for d in docs:
        largest = d["largest_ok"]
        rows.append({
            "workload": d["workload"], "precision": d["precision"], "status": d["status"],
            "largest_batch_size": largest, "smallest_oom_batch_size": d["smallest_oom"],
            "resolution": d["resolution"], "peak_memory_bytes": d["peak_memory_bytes"],
            "peak_memory_source": d["peak_memory_source"],
            "bytes_per_sample": d["peak_memory_bytes"] / largest
            if largest and d["peak_memory_bytes"] else None,
            "throughput_samples_per_s": d.get("throughput_samples_per_s"),
            "probes": len(d["probes"]),
            "probes_oom": sum(p["status"] == "oom" for p in d["probes"]),
            "memory_limit_bytes": d["memory_limit_bytes"],
            "gpu_memory_total_bytes": d.get("gpu_memory_total_bytes"),
            "device_name": d.get("device_name"), "status_reason": d["status_reason"]})
    df = pd.DataFrame(rows)
    df["precision"] = pd.Categorical(df["precision"], V.PRECISIONS, ordered=True)
    df = df.sort_values(["workload", "precision"]).reset_index(drop=True)
    base = df[df["precision"] == "fp32"].set_index("workload")["largest_batch_size"]
    df.insert(5, "capacity_vs_fp32", [
        r.largest_batch_size / base[r.workload]
        if r.workload in base and pd.notna(base[r.workload]) and base[r.workload]
        and pd.notna(r.largest_batch_size) else None for r in df.itertuples()])
    for col in ("largest_batch_size", "smallest_oom_batch_size", "peak_memory_bytes",
                "memory_limit_bytes", "gpu_memory_total_bytes"):
        df[col] = df[col].astype("Int64")
    return df


def capacity_table(df):
    """The capacity study as a reader's table (tcbench.tables: one number format, captions)."""
    import pandas as pd

    from . import tables as T

    def known(v):
        return v is not None and not pd.isna(v)

    rows = [[r.workload, str(r.precision), r.status,
             (f"≥ {r.largest_batch_size}" if r.status == "capped" else
              str(r.largest_batch_size)) if known(r.largest_batch_size) else T.MISSING,
             str(r.smallest_oom_batch_size) if known(r.smallest_oom_batch_size) else T.MISSING,
             T.times(r.capacity_vs_fp32), T.memory(r.peak_memory_bytes, "GiB")
             if known(r.peak_memory_bytes) else T.MISSING,
             f"{r.probes} ({r.probes_oom} oom)"] for r in df.itertuples()]
    device = ", ".join(sorted({str(v) for v in df["device_name"].dropna()})) or "unknown device"
    limits = sorted({int(v) for v in df["memory_limit_bytes"].dropna()})
    notes = [f"Searched to within {', '.join(sorted({str(v) for v in df['resolution']}))} "
             f"samples, each probe a fresh process; first out of memory is the smallest batch "
             f"size tried that ran out of memory; peak memory is that of the largest batch that "
             f"fit (torch.cuda.max_memory_allocated)."]
    notes += [f"{r.workload} {r.precision}: {r.status_reason}" for r in df.itertuples()
              if isinstance(r.status_reason, str) and r.status_reason]
    return T.Table(f"Largest batch size that trains without running out of memory on {device}"
                   + (f" (memory_limit_bytes={', '.join(map(str, limits))})" if limits else ""),
                   ["workload", "precision", "status", "largest batch", "first out of memory",
                    "× fp32", "peak memory", "probes"], rows, align="lllrrrrr", notes=notes)


def markdown(df) -> str:
    from . import tables as T

    return T.to_markdown(capacity_table(df), "##")


def figure(df, out_dir: Path) -> list[Path]:
    """Largest batch per precision, one panel per workload. A dotted line marks the smallest
    size that ran out of memory; a search that stopped early (capped, error) shows its number
    as a lower bound, and one without a number (unsupported, none) is labelled with its status."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from . import figures as F

    F.style()
    workloads = list(dict.fromkeys(df["workload"]))
    precisions = [p for p in V.PRECISIONS if p in set(df["precision"].astype(str))]
    fig, axes = plt.subplots(1, len(workloads), squeeze=False,
                             figsize=(F.ONE_COLUMN_IN if len(workloads) == 1 else F.TWO_COLUMN_IN,
                                      2.6))
    for ax, workload in zip(axes[0], workloads):
        g = df[df["workload"] == workload]
        g = g.set_index(g["precision"].astype(str))
        for i, prec in enumerate(precisions):
            if prec not in g.index:
                continue
            r = g.loc[prec]
            value, status = r["largest_batch_size"], r["status"]
            if pd.notna(value):
                ax.bar(i, value, color=F.PALETTE.get(prec, "0.5"), width=0.7)
                if pd.notna(r["smallest_oom_batch_size"]):
                    ax.hlines(r["smallest_oom_batch_size"], i - 0.35, i + 0.35, colors="0.2",
                              lw=0.8, linestyles=":")
                top = max(value, r["smallest_oom_batch_size"]) if pd.notna(
                    r["smallest_oom_batch_size"]) else value
                label = f"{value}" if status == "found" else f"≥{value}\n({status})"
                # a little above the dotted out-of-memory line, not on it
                ax.annotate(label, (i, top), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=6)
            else:
                ax.text(i, 0, f" {status}", rotation=90, ha="center", va="bottom", fontsize=6,
                        color="0.2")
        ax.set_xticks(range(len(precisions)), precisions, fontsize=7)
        ax.set_title(f"{workload}: largest batch that trains")
        ax.set_ylabel("batch size (samples)")
        ax.margins(y=0.15)
    fig.text(0.5, -0.02, "dotted: smallest batch size tried that ran out of memory",
             ha="center", va="top", fontsize=6, color="0.3")
    return F.save(fig, Path(out_dir), "capacity")


def report(paths, out_dir: Path, figures_dir: Path) -> dict:
    from .aggregate import write_csv

    docs = load_results(paths)
    if not docs:
        raise ValueError("no capacity results to report")
    df = table(docs)
    out_dir = Path(out_dir)
    write_csv(df, out_dir / "capacity.csv")
    atomic.write_text(out_dir / "capacity.md", markdown(df))
    figure(df, figures_dir)
    return {"table": df}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.capacity", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("search", help="one search (workload x precision)")
    s.add_argument("--plan", required=True, help="the search as a JSON object (see plan())")
    s.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("report", help="capacity.csv, capacity.md and figures/capacity.{pdf,png}")
    r.add_argument("results", type=Path, nargs="+")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--figures", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        if args.command == "search":
            from . import gpus

            # The search claims one GPU for all its probes (they inherit CUDA_VISIBLE_DEVICES),
            # so searches on a multi-GPU host run side by side, one per device.
            gpus.pin()
            doc = run_search(json.loads(args.plan), args.out)
            print(f"{doc['workload']} {doc['precision']}: {doc['status']}, largest batch "
                  f"{doc['largest_ok']}, first out of memory {doc['smallest_oom']}")
        else:
            report(args.results, args.out, args.figures)
    except (ValueError, json.JSONDecodeError) as exc:
        print(f"tcbench.capacity: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
