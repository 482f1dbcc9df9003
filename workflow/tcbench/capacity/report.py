"""The capacity report: ``capacity.csv`` (one row per search), ``capacity.md`` and
``figures/capacity.{pdf,png}``.

Precision order and colours are the vocabulary's; the figure takes the study's figure style
and writer, and the table the study's Markdown writer. Those are its only calls into the
rest of the package: ``figures.style``, ``figures.save``, ``figures.ONE_COLUMN_IN`` /
``TWO_COLUMN_IN`` and ``tables`` (one table, rendered by the study's Markdown writer)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import atomic, vocabulary as V
from .probe import RESULT_SCHEMA


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
            "probes_oom": sum(p["status"] == V.OOM for p in d["probes"]),
            "memory_limit_bytes": d["memory_limit_bytes"],
            "gpu_memory_total_bytes": d.get("gpu_memory_total_bytes"),
            "device_name": d.get("device_name"), "status_reason": d["status_reason"]})
    df = pd.DataFrame(rows)
    df["precision"] = pd.Categorical(df["precision"], V.PRECISIONS, ordered=True)
    df = df.sort_values(["workload", "precision"]).reset_index(drop=True)
    base = df[df["precision"] == V.BASELINE].set_index("workload")["largest_batch_size"]
    df.insert(5, f"capacity_vs_{V.BASELINE}", [
        r.largest_batch_size / base[r.workload]
        if r.workload in base and pd.notna(base[r.workload]) and base[r.workload]
        and pd.notna(r.largest_batch_size) else None for r in df.itertuples()])
    for col in ("largest_batch_size", "smallest_oom_batch_size", "peak_memory_bytes",
                "memory_limit_bytes", "gpu_memory_total_bytes"):
        df[col] = df[col].astype("Int64")
    return df


def capacity_table(df):
    """The capacity study as a reader's table (tcbench.render: one number format, captions)."""
    import pandas as pd

    from ..render import numbers
    from ..render.table import Table

    def known(v):
        return v is not None and not pd.isna(v)

    rows = [[r.workload, str(r.precision), r.status,
             (f"≥ {r.largest_batch_size}" if r.status == "capped" else
              str(r.largest_batch_size)) if known(r.largest_batch_size) else numbers.MISSING,
             str(r.smallest_oom_batch_size) if known(r.smallest_oom_batch_size)
             else numbers.MISSING,
             numbers.times(getattr(r, f"capacity_vs_{V.BASELINE}")),
             numbers.memory(r.peak_memory_bytes, "GiB") if known(r.peak_memory_bytes)
             else numbers.MISSING,
             f"{r.probes} ({r.probes_oom} oom)"] for r in df.itertuples()]
    device = ", ".join(sorted({str(v) for v in df["device_name"].dropna()})) or "unknown device"
    limits = sorted({int(v) for v in df["memory_limit_bytes"].dropna()})
    notes = [f"Searched to within {', '.join(sorted({str(v) for v in df['resolution']}))} "
             f"samples, each probe a fresh process; first out of memory is the smallest batch "
             f"size tried that ran out of memory; peak memory is that of the largest batch that "
             f"fit (torch.cuda.max_memory_allocated)."]
    notes += [f"{r.workload} {r.precision}: {r.status_reason}" for r in df.itertuples()
              if isinstance(r.status_reason, str) and r.status_reason]
    return Table(f"Largest batch size that trains without running out of memory on {device}"
                   + (f" (memory_limit_bytes={', '.join(map(str, limits))})" if limits else ""),
                   ["workload", "precision", "status", "largest batch", "first out of memory",
                    f"× {V.BASELINE}", "peak memory", "probes"], rows, align="lllrrrrr",
                   notes=notes)


def markdown(df) -> str:
    from ..render.table import to_markdown

    return to_markdown(capacity_table(df), "##")


def figure(df, out_dir: Path) -> list[Path]:
    """Largest batch per precision, one panel per workload. A dotted line marks the smallest
    size that ran out of memory; a search that stopped early (capped, error) shows its number
    as a lower bound, and one without a number (unsupported, none) is labelled with its status."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from ..render import plot

    plot.style()
    workloads = list(dict.fromkeys(df["workload"]))
    precisions = [p for p in V.PRECISIONS if p in set(df["precision"].astype(str))]
    width = plot.ONE_COLUMN_IN if len(workloads) == 1 else plot.TWO_COLUMN_IN
    fig, axes = plt.subplots(1, len(workloads), squeeze=False, figsize=(width, 2.6))
    for ax, workload in zip(axes[0], workloads):
        g = df[df["workload"] == workload]
        g = g.set_index(g["precision"].astype(str))
        for i, prec in enumerate(precisions):
            if prec not in g.index:
                continue
            r = g.loc[prec]
            value, status, first_oom = (r["largest_batch_size"], r["status"],
                                        r["smallest_oom_batch_size"])
            if pd.notna(value):
                ax.bar(i, value, color=V.PALETTE[prec], width=0.7)
                if pd.notna(first_oom):
                    ax.hlines(first_oom, i - 0.35, i + 0.35, colors="0.2", lw=0.8,
                              linestyles=":")
                top = max(value, first_oom) if pd.notna(first_oom) else value
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
    return plot.save(fig, Path(out_dir), "capacity")


def report(paths, out_dir: Path, figures_dir: Path) -> dict:
    docs = load_results(paths)
    if not docs:
        raise ValueError("no capacity results to report")
    df = table(docs)
    out_dir = Path(out_dir)
    atomic.write_text(out_dir / "capacity.csv", df.to_csv(index=False))
    atomic.write_text(out_dir / "capacity.md", markdown(df))
    figure(df, figures_dir)
    return {"table": df}
