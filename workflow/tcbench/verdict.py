"""The plain-language verdict of one result set (``summary.md``, and ``summary.html`` for the
Snakemake report), generated from its tables (``summary.csv``, ``speedup.csv``,
``metrics.csv``), never from records and never by hand.

Per workload: the fastest configuration, its speedup and memory saving against fp32 at the
same setting, whether Tensor Cores carried the work, and, where reduced precision did not pay
off, the bottleneck. Every sentence carries the numbers it rests on. The rules of thumb:

* Tensor Cores *carried the work* when at least ``TC_CARRIED`` of GPU kernel time ran in
  Tensor Core kernels (kernel-name evidence, tcbench.tensorcores).
* Reduced precision *paid off* when it was at least ``GAIN`` times faster than fp32.
* Where it did not, the bottleneck is, in this order: the **input pipeline** when the run is
  input-bound (its data-wait share of step time reached the run's ``input_bound_share``);
  the **host** (kernel launches, Python, synchronisation) when the GPU had a kernel running
  less than ``BUSY_LOW`` of the wall time; **memory-bound kernels** when the GPU was busy but
  less than ``TC_CARRIED`` of kernel time was on Tensor Cores.

    python -m tcbench.verdict --tables results/nvidia-h200 --out results/nvidia-h200
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .aggregate import AXIS_DEFAULTS
from . import atomic
from . import vocabulary as V
from .tables import MIB, SETTING_AXES, num, page, percent, times, varying_axes

TC_CARRIED = 0.5
GAIN = 1.10
BUSY_LOW = 0.5
REDUCED = V.REDUCED
ORDER = list(V.PRECISIONS)


def _na(v) -> bool:
    return v is None or (not isinstance(v, str) and pd.isna(v))


def _mem(v) -> str:
    return f"{float(v) / 2**30:.3g} GiB" if float(v) >= 4 * 2**30 else f"{float(v) / MIB:,.0f} MiB"


@dataclass
class Section:
    title: str
    sentences: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    title: str
    intro: list[str]
    bottom_line: list[str]
    sections: list[Section]

    def markdown(self) -> str:
        out = [f"# {self.title}", "", " ".join(self.intro), "", "**Bottom line.** "
               + " ".join(self.bottom_line), ""]
        for s in self.sections:
            out += [f"## {s.title}", "", " ".join(s.sentences), ""]
        return "\n".join(out)

    def html(self) -> str:
        def inline(text):
            text = html.escape(text)
            text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
            return re.sub(r"`(.+?)`", r"<code>\1</code>", text)
        body = [f"<h2>{inline(self.title)}</h2>", f"<p>{inline(' '.join(self.intro))}</p>",
                f"<p><strong>Bottom line.</strong> {inline(' '.join(self.bottom_line))}</p>"]
        for s in self.sections:
            body += [f"<h3>{inline(s.title)}</h3>", f"<p>{inline(' '.join(s.sentences))}</p>"]
        return page(self.title, "\n".join(body) + "\n")


# ---------------------------------------------------------------------------------- the data
def cells(summary: pd.DataFrame, speedup: pd.DataFrame, metrics: pd.DataFrame | None = None
          ) -> pd.DataFrame:
    """One row per cell: the summary's medians joined with its speedup and memory ratio
    against fp32, and the most frequent top kernel of its records."""
    keys = ["experiment", "batch_size", *SETTING_AXES, "precision"]
    s, sp = summary.copy(), speedup.copy()
    for df in (s, sp):
        for a in SETTING_AXES:
            df[a] = df[a].astype(str) if a in df else AXIS_DEFAULTS.get(a, "n/a")
        df["precision"] = df["precision"].astype(str)
    cols = ["speedup_total_time", "speedup_throughput", "memory_ratio", "fp32_total_time_s"]
    out = s.merge(sp[keys + cols], on=keys, how="left")
    if metrics is not None and "top_kernel" in metrics:
        m = metrics.copy()
        for a in SETTING_AXES:
            m[a] = m[a].astype(str) if a in m else AXIS_DEFAULTS.get(a, "n/a")
        m["precision"] = m["precision"].astype(str)
        top = (m.dropna(subset=["top_kernel"]).groupby(keys)["top_kernel"]
               .agg(lambda k: k.value_counts().index[0]).rename("top_kernel").reset_index())
        out = out.merge(top, on=keys, how="left")
    out["order"] = out["precision"].map({p: i for i, p in enumerate(ORDER)})
    return out.sort_values(["experiment", "batch_size", *SETTING_AXES, "order"])


def setting(row, axes) -> str:
    return ", ".join([f"batch size {int(row['batch_size'])}",
                      *(f"{a.replace('_', ' ')} {row[a]}" for a in axes)])


def config(row, axes) -> str:
    return f"{row['precision']} at {setting(row, axes)}"


# ---------------------------------------------------------------------------------- the rules
def tensor_cores_carried(row) -> bool | None:
    share = row.get("tensor_core_share")
    return None if _na(share) else float(share) >= TC_CARRIED


def bottleneck(row) -> str | None:
    """'input', 'host', 'memory' or None (no single bottleneck, or not measurable)."""
    if row.get("input_bound") is True or str(row.get("input_bound")) == "True":
        return "input"
    busy, tc = row.get("gpu_busy_share"), row.get("tensor_core_share")
    if not _na(busy) and float(busy) < BUSY_LOW:
        return "host"
    if not _na(busy) and not _na(tc) and float(tc) < TC_CARRIED:
        return "memory"
    return None


def bottleneck_sentence(row, axes) -> str:
    kind = bottleneck(row)
    what = config(row, axes)
    wait, busy = row.get("data_wait_share"), row.get("gpu_busy_share")
    tc = row.get("tensor_core_share")
    if kind == "input":
        return (f"**Bottleneck: the input pipeline.** In {what} the GPU waited for the next "
                f"batch {percent(wait)} of each step (data-wait share; the run counts as "
                f"input-bound), so faster arithmetic cannot shorten the run.")
    if kind == "host":
        return (f"**Bottleneck: launch overhead on the host.** In {what} the GPU had a kernel "
                f"running only {percent(busy)} of the wall time (GPU-busy share), with "
                f"{percent(wait)} spent waiting for data: Python, kernel launches and "
                f"synchronisation set the pace, not the arithmetic.")
    if kind == "memory":
        top = row.get("top_kernel")
        return (f"**Bottleneck: memory-bound kernels.** In {what} the GPU was busy "
                f"{percent(busy)} of the wall time but only {percent(tc)} of kernel time ran "
                f"on Tensor Cores; the rest is elementwise, normalisation and optimiser work "
                f"limited by memory bandwidth" + (f" (top kernel: `{str(top)[:60]}`)."
                                                  if not _na(top) else "."))
    if _na(busy):
        return (f"No single bottleneck can be named for {what}: it waited for data "
                f"{percent(wait)} of each step (not input-bound), and without a kernel profile "
                f"(a CUDA device) host overhead and memory-bound kernels cannot be told apart.")
    return (f"No single bottleneck stands out for {what}: data wait {percent(wait)}, GPU busy "
            f"{percent(busy)}, Tensor Core share {percent(tc)}.")


# ---------------------------------------------------------------------------- one experiment
def _speed(row) -> float:
    v = row.get("throughput_samples_per_s_median")
    return -1.0 if _na(v) else float(v)


def experiment_section(df: pd.DataFrame, experiment: str) -> tuple[Section, dict]:
    """The paragraph of one experiment, and the facts the bottom line is built from."""
    axes = varying_axes(df)
    workload = df["workload"].iloc[0]
    data = df["data"].dropna().astype(str)
    title = f"{experiment} ({workload}" + (f", {data.iloc[0]} data)" if len(data) else ")")
    sec = Section(title)
    ok = df[df["repeats_ok"] > 0]
    facts = {"experiment": experiment, "best_speedup": None, "bottleneck": None,
             "best_config": None, "tc": None}
    if ok.empty:
        sec.sentences.append("No configuration finished, so there is nothing to compare.")
        _not_measured(df, axes, sec)
        return sec, facts

    fastest = ok.loc[ok.apply(_speed, axis=1).idxmax()]
    fp32 = ok[ok["precision"] == "fp32"]
    reduced = ok[ok["precision"].isin(REDUCED)]
    # the runs behind the fastest cell's median, not the experiment's largest repeat count: a
    # cell whose second repeat is missing or failed must not read as a median of two
    done, tried = int(fastest["repeats_ok"]), int(fastest["repeats"])
    basis = "median of " + (f"{done} repeats" if done > 1 else "1 run")
    if done < tried:
        basis += f"; {tried - done} of its {tried} repeats did not finish"

    # 1. the fastest configuration, against fp32 at its setting
    s = (f"**Fastest:** {config(fastest, axes)}, "
         f"{num(fastest['throughput_samples_per_s_median'])} samples/s and "
         f"{num(fastest['total_time_s_median'])} s in total ({basis}).")
    if fastest["precision"] == "fp32":
        s += " No reduced precision beat strict fp32 here."
    elif not _na(fastest.get("speedup_total_time")):
        s += (f" Against fp32 at the same setting "
              f"({num(fastest['fp32_total_time_s'])} s) that is "
              f"{times(fastest['speedup_total_time'])} the speed in total time and "
              f"{times(fastest['speedup_throughput'])} in steady-state throughput.")
    else:
        base = df[(df["precision"] == "fp32") & (df["batch_size"] == fastest["batch_size"])]
        why = base["status"].iloc[0] if len(base) else "not run"
        s += f" fp32 has no result at this setting ({why}), so there is no speedup to quote"
        if len(fp32):
            best32 = fp32.loc[fp32.apply(_speed, axis=1).idxmax()]
            s += (f"; against the fastest fp32 configuration ({setting(best32, axes)}, "
                  f"{num(best32['throughput_samples_per_s_median'])} samples/s) it delivers "
                  f"{times(_speed(fastest) / _speed(best32))} the throughput")
        s += "."
    sec.sentences.append(s)

    # 2. memory against fp32 at the same setting
    ratio = fastest.get("memory_ratio")
    if fastest["precision"] != "fp32" and not _na(ratio):
        mem = fastest["max_memory_allocated_bytes"]
        base_mem = mem / ratio
        if abs(ratio - 1) < 0.005:
            sec.sentences.append(f"**Memory:** the same peak memory as fp32 ({_mem(mem)}, "
                                 f"torch.cuda.max_memory_allocated).")
        else:
            change = (f"{percent(1 - ratio)} less peak memory" if ratio < 1
                      else f"{percent(ratio - 1)} more peak memory")
            sec.sentences.append(f"**Memory:** {change} than fp32 ({_mem(mem)} vs "
                                 f"{_mem(base_mem)}, torch.cuda.max_memory_allocated).")
    elif ok["max_memory_allocated_bytes"].isna().all():
        sec.sentences.append("**Memory:** not measured (torch.cuda memory statistics need a "
                             "CUDA device).")
    for _, r in df[(df["precision"] == "fp32") & (df["status"] == "oom")].iterrows():
        fits = reduced[(reduced["batch_size"] == r["batch_size"])
                       & reduced["max_memory_allocated_bytes"].notna()]
        fits = fits[(fits[list(axes)] == r[list(axes)]).all(axis=1)] if axes else fits
        if len(fits):
            f = fits.loc[fits["max_memory_allocated_bytes"].idxmin()]
            sec.sentences.append(f"**Memory made the difference:** fp32 ran out of memory at "
                                 f"{setting(r, axes)}, where {f['precision']} fit in "
                                 f"{_mem(f['max_memory_allocated_bytes'])}.")
    savers = reduced[(reduced["memory_ratio"] < 1)]
    if fastest["precision"] == "fp32" or _na(ratio):
        if len(savers):
            best = savers.loc[savers["memory_ratio"].idxmin()]
            sec.sentences.append(
                f"**Memory:** the largest saving is {config(best, axes)}, "
                f"{percent(1 - best['memory_ratio'])} less peak memory than fp32 "
                f"({_mem(best['max_memory_allocated_bytes'])}).")

    # 3. did Tensor Cores carry the work? Asked of the reduced-precision configuration with
    # the best speedup over fp32 (the fastest one where none has an fp32 baseline).
    with_base = reduced.dropna(subset=["speedup_total_time"])
    if len(with_base):
        focus = with_base.loc[with_base["speedup_total_time"].astype(float).idxmax()]
    elif len(reduced):
        focus = reduced.loc[reduced.apply(_speed, axis=1).idxmax()]
    else:
        focus = None
    if focus is None:
        sec.sentences.append("**Tensor Cores:** no reduced precision finished, so the Tensor "
                             "Cores were not tried.")
    else:
        facts["best_config"] = config(focus, axes)
        sp = focus.get("speedup_total_time")
        facts["best_speedup"] = None if _na(sp) else float(sp)
        carried = tensor_cores_carried(focus)
        facts["tc"] = carried
        tc = focus.get("tensor_core_share")
        fp32_tc = fp32["tensor_core_share"].dropna()
        if carried is None:
            sec.sentences.append(f"**Tensor Cores:** not measured for {config(focus, axes)} "
                                 f"(kernel profiling needs a CUDA device).")
        elif carried:
            s = (f"**Tensor Cores carried the work:** {percent(tc)} of GPU kernel time in "
                 f"{config(focus, axes)} ran in Tensor Core kernels")
            s += (f" (strict fp32: {percent(fp32_tc.median())})." if len(fp32_tc) else ".")
            sec.sentences.append(s)
        else:
            sec.sentences.append(f"**Tensor Cores did not carry the work:** only {percent(tc)} "
                                 f"of GPU kernel time in {config(focus, axes)} ran in Tensor "
                                 f"Core kernels.")
        mfu = focus.get("mfu")
        if not _na(mfu):
            sec.sentences.append(f"Its model FLOP utilisation is {percent(mfu)} of this "
                                 f"device's measured {focus['precision']} matmul ceiling.")
        # 4. where reduced precision did not pay off (or Tensor Cores were idle): why
        paid_off = not _na(sp) and float(sp) >= GAIN
        if not paid_off and not _na(sp):
            sec.sentences.append(f"**Reduced precision did not pay off:** its best speedup "
                                 f"over fp32 is {times(sp)} ({config(focus, axes)}), below "
                                 f"the {GAIN:.2f}× that counts as a gain.")
        if not paid_off or carried is False:
            facts["bottleneck"] = bottleneck(focus)
            sec.sentences.append(bottleneck_sentence(focus, axes))

    # 5. accuracy parity, where there is held-out data
    acc = ok.dropna(subset=["test_accuracy"]) if "test_accuracy" in ok else ok.iloc[:0]
    if len(acc):
        parts = ", ".join(f"{r['precision']} {100 * r['test_accuracy']:.2f}%"
                          for _, r in acc.iterrows())
        s = f"**Test accuracy:** {parts}"
        base = acc[acc["precision"] == "fp32"]["test_accuracy"]
        if len(base) and len(acc) > 1:
            drop = (base.max() - acc["test_accuracy"].min()) * 100
            s += f"; the largest drop against fp32 is {max(drop, 0):.2f} points"
        sec.sentences.append(s + ".")
    _not_measured(df, axes, sec)
    return sec, facts


def _not_measured(df, axes, sec: Section) -> None:
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return
    parts = []
    for _, r in bad.iterrows():
        reason = r.get("status_reason")
        reason = "" if _na(reason) else f": {str(reason).split(';')[0][:120]}"
        n = f" ({int(r['repeats_ok'])} of {int(r['repeats'])} repeats ok)" \
            if r["repeats_ok"] else ""
        parts.append(f"{config(r, axes)} — {r['status']}{n}{reason}")
    sec.sentences.append("**Without a result:** " + "; ".join(parts) + ".")


# ------------------------------------------------------------------------------ the verdict
def build(summary: pd.DataFrame, speedup: pd.DataFrame, metrics: pd.DataFrame | None = None
          ) -> Verdict:
    df = cells(summary, speedup, metrics)
    run = str(df["run"].iloc[0])
    device = df["device_name"].dropna().astype(str)
    device = device.iloc[0] if len(device) else "an unnamed device"
    env = metrics.iloc[0].to_dict() if metrics is not None and len(metrics) else {}
    cuda = metrics is not None and "compute_capability" in metrics and \
        metrics["compute_capability"].notna().any()
    intro = [f"Result set `{run}`: {len(df)} configurations of "
             f"{df['experiment'].nunique()} experiments on {device}"]
    versions = [f"{k} {env.get(c)}" for k, c in (("PyTorch", "torch_version"),
                                                  ("CUDA runtime", "cuda_runtime_version"),
                                                  ("driver", "driver_version"))
                if not _na(env.get(c))]
    intro[0] += (f" ({', '.join(versions)})." if versions else ".")
    intro.append("Numbers are medians over the repeats that finished; speedup is fp32 total "
                 "time divided by this total time, at the same batch size and settings, with "
                 "fp32 strict (TF32 off); peak memory is torch.cuda.max_memory_allocated.")
    if not cuda:
        intro.append("This device is not a CUDA GPU: it has no Tensor Cores, so these numbers "
                     "test the harness and say nothing about Tensor Cores.")
    sections, facts = [], []
    for exp in dict.fromkeys(df["experiment"]):
        sec, f = experiment_section(df[df["experiment"] == exp], exp)
        sections.append(sec)
        facts.append(f)
    return Verdict(f"Verdict: {run} on {device}", intro, bottom_line(facts), sections)


def bottom_line(facts: list[dict]) -> list[str]:
    tried = [f for f in facts if f["best_speedup"] is not None]
    if not tried:
        return ["No experiment has a reduced-precision result with an fp32 baseline, so "
                "there is no speedup to report."]
    gains = [f for f in tried if f["best_speedup"] >= GAIN]
    out = [f"Reduced precision paid off (at least {GAIN:.2f}× faster than fp32) in "
           f"{len(gains)} of {len(tried)} experiments"]
    if gains:
        best = max(gains, key=lambda f: f["best_speedup"])
        out[0] += (f", most in {best['experiment']} ({times(best['best_speedup'])} with "
                   f"{best['best_config']})")
    out[0] += "."
    names = {"input": "the input pipeline", "host": "launch overhead on the host",
             "memory": "memory-bound kernels", None: "no single bottleneck"}
    for f in tried:
        if f["best_speedup"] < GAIN:
            out.append(f"{f['experiment']}: {times(f['best_speedup'])} at best "
                       f"({f['best_config']}); bottleneck: {names[f['bottleneck']]}"
                       + (" (Tensor Cores carried the work)" if f["tc"] else "") + ".")
    return out


def write(tables: Path, out_dir: Path) -> list[Path]:
    tables = Path(tables)
    metrics = pd.read_csv(tables / "metrics.csv") if (tables / "metrics.csv").exists() else None
    v = build(pd.read_csv(tables / "summary.csv"), pd.read_csv(tables / "speedup.csv"), metrics)
    md, page_ = Path(out_dir) / "summary.md", Path(out_dir) / "summary.html"
    atomic.write_text(md, v.markdown())
    atomic.write_text(page_, v.html())
    return [md, page_]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.verdict", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=Path, required=True, help="folder with summary.csv etc.")
    ap.add_argument("--out", type=Path, required=True, help="folder for summary.md/.html")
    args = ap.parse_args(argv)
    try:
        write(args.tables, args.out)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"tcbench.verdict: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
