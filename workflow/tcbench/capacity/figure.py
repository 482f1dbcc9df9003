"""The capacity study's figures, in the study's figure style and the precisions' colours
(tcbench.render):

- ``capacity``: the largest batch per precision, one panel per workload, with the smallest size
  that ran out of memory and the predicted size;
- ``capacity_memory``: per workload and precision the largest batch as a multiple of fp32's,
  the memory each sample adds (the fitted slope), and the predicted limit's miss in % of the
  found one."""

from __future__ import annotations

from pathlib import Path

from .. import vocabulary as V

# the stems of the study's figures (figures/<stem>.<format>, in every figure format)
FIGURES: tuple[str, ...] = ("capacity", "capacity_memory")


def figure(df, out_dir: Path) -> list[Path]:
    """Largest batch per precision, one panel per workload. A dotted line marks the smallest
    size that ran out of memory; a search that stopped early (capped, error) shows its number
    as a lower bound, and one without a number (unsupported, none) is labelled with its status."""
    import matplotlib.pyplot as plt
    import pandas as pd
    from matplotlib.ticker import StrMethodFormatter

    from ..render import plot

    plot.style()
    workloads = list(dict.fromkeys(df["workload"]))
    precisions = [p for p in V.PRECISIONS if p in set(df["precision"].astype(str))]
    width = plot.ONE_COLUMN_IN if len(workloads) == 1 else plot.TWO_COLUMN_IN
    fig, axes = plt.subplots(1, len(workloads), squeeze=False, figsize=(width, 2.8))
    for ax, workload in zip(axes[0], workloads):
        g = df[(df["workload"] == workload) & df.get("setting", pd.Series(index=df.index))
               .isna()]
        g = g.set_index(g["precision"].astype(str))
        tall = False
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
                predicted = r.get("predicted_batch_size")
                top = max(v for v in (value, first_oom, predicted) if pd.notna(v))
                label = (f"{int(value):,}" if status == "found"
                         else f"≥{int(value):,}\n({status})")
                # above the dotted out-of-memory line and the diamond, not on them; upright
                # where a wide number would run into its neighbour's
                upright = len(label) > 5 and len(precisions) > 3
                tall = tall or upright
                ax.annotate(label, (i, top), xytext=(0, 3), textcoords="offset points",
                            ha="center", va="bottom", fontsize=6, rotation=90 * upright)
                if pd.notna(predicted):
                    ax.plot(i, predicted, marker="D", ms=3, color="0.1", ls="none", zorder=3)
            else:
                said = f"as {V.BASELINE}" if status == "not_probed" else status
                ax.text(i, 0, f" {said}", rotation=90, ha="center", va="bottom", fontsize=6,
                        color="0.2")
        ax.set_xticks(range(len(precisions)), precisions, fontsize=6, rotation=30, ha="right")
        shown = g["shown_as"].iloc[0] if "shown_as" in g and len(g) else workload
        ax.set_title(shown if len(workloads) > 1 else
                     f"{shown}: largest batch that trains", fontsize=8)
        unit = g["batch_unit"].dropna().iloc[0] if "batch_unit" in g and \
            g["batch_unit"].notna().any() else "samples"
        ax.set_ylabel(f"largest batch ({unit})", fontsize=7)
        ax.tick_params(axis="y", labelsize=6)
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.margins(y=0.3 if tall else 0.15)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.text(0.5, 0.0, "dotted: smallest batch size tried that ran out of memory; "
             "diamond: the batch size predicted from two small probes",
             ha="center", va="bottom", fontsize=6, color="0.3")
    return plot.save(fig, Path(out_dir), FIGURES[0])


def memory_figure(df, out_dir: Path) -> list[Path]:
    """Three panels over the same workloads and precisions: the largest batch × fp32, the
    memory each sample adds (log scale: the workloads differ by orders of magnitude), and how
    far the predicted largest batch was from the one found, in % of it (0 is a perfect
    prediction; above it, the line through two small probes promised more than fit); one
    legend of the precisions' colours above."""
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    from ..render import plot

    plot.style()
    d = df[df["setting"].isna()].copy()
    d["precision"] = d["precision"].astype(str)
    d["ratio"] = pd.to_numeric(d[f"capacity_vs_{V.BASELINE}"], errors="coerce")
    d["mib"] = pd.to_numeric(d["fit_bytes_per_sample"], errors="coerce") / 2**20
    d["miss"] = 100 * (pd.to_numeric(d["predicted_batch_size"], errors="coerce")
                       / pd.to_numeric(d["largest_batch_size"], errors="coerce") - 1)
    d["tick"] = d["shown_as"].str.replace(" (", "\n(", regex=False)   # the model below
    measured = d[d["largest_batch_size"].notna()]
    order = [p for p in V.PRECISIONS if p in set(measured["precision"])]
    palette = {p: V.PALETTE[p] for p in order}
    ticks = list(dict.fromkeys(d["tick"]))
    fig, axes = plt.subplots(1, 3, figsize=(plot.TWO_COLUMN_IN, 2.6))
    for ax, col, label, empty in (
            (axes[0], "ratio", f"largest batch (× {V.BASELINE})", "not measured"),
            (axes[1], "mib", "memory per sample (MiB)", "not measured"),
            (axes[2], "miss", "predicted over found (%)", "no prediction")):
        shown = d.dropna(subset=[col])
        if shown.empty:
            ax.text(0.5, 0.5, empty, ha="center", va="center",
                    transform=ax.transAxes, fontsize=7, color="0.3")
        else:
            sns.barplot(shown, x="tick", y=col, hue="precision", hue_order=order,
                        order=ticks, palette=palette, ax=ax, legend=False, width=0.75,
                        saturation=1)
        ax.set_xlabel("")
        ax.set_ylabel(label, fontsize=7)
        ax.tick_params(labelsize=6)
    if d["mib"].notna().any():
        axes[1].set_yscale("log")
    axes[0].axhline(1, color="0.3", lw=0.6, ls="--")
    axes[2].axhline(0, color="0.3", lw=0.6)
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[p]) for p in order]
    fig.legend(handles, order, loc="upper center", ncol=len(order), fontsize=6,
               frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return plot.save(fig, Path(out_dir), FIGURES[1])
