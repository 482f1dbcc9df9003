"""Figures from the tables (CSV in, PDF + PNG out); never from records.

One function per figure, one shared style: seaborn paper context, TrueType fonts embedded in
PDFs, a colour-blind-safe palette with one fixed colour per precision in every figure.
Cells that produced no number (unsupported, oom, diverged) are drawn as labelled gaps, never
left out silently.

    python -m tcbench.figures --tables results/nvidia-h200 --out results/nvidia-h200/figures
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

PRECISIONS = ["fp32", "tf32", "amp-fp16", "amp-bf16"]
# Okabe-Ito colours: distinguishable with every common colour-vision deficiency.
PALETTE = {"fp32": "#0072B2", "tf32": "#009E73", "amp-fp16": "#D55E00", "amp-bf16": "#CC79A7"}
KINDS = ("throughput", "time", "memory", "speedup", "attribution", "tensor_cores")
ONE_COLUMN_IN, TWO_COLUMN_IN = 3.5, 7.0
FORMATS = ("pdf", "png")


def style() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
                         "savefig.dpi": 200, "savefig.bbox": "tight", "figure.dpi": 100,
                         "legend.frameon": False})


def setting_label(df: pd.DataFrame) -> pd.Series:
    """The x-axis: batch size, plus whichever other axes vary inside the experiment."""
    parts = [("bs " + df["batch_size"].astype(str))]
    for col in ("loader", "memory_format", "compile"):
        if col in df and df[col].nunique() > 1:
            parts.append(df[col].astype(str))
    label = parts[0]
    for p in parts[1:]:
        label = label + "\n" + p
    return label


def _prepare(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["setting"] = setting_label(df)
    df["precision"] = pd.Categorical(df["precision"].astype(str), PRECISIONS, ordered=True)
    return df


def _order(df):
    return list(dict.fromkeys(df.sort_values(["batch_size"])["setting"]))


def _mark_missing(ax, df_all: pd.DataFrame, value_col: str, order: list[str], horizontal=False):
    """Write the status where a (setting, precision) has no ok value."""
    present = [p for p in PRECISIONS if p in set(df_all["precision"].astype(str))]
    n = max(len(present), 1)
    width = 0.8 / n
    for i, setting in enumerate(order):
        for j, prec in enumerate(present):
            g = df_all[(df_all["setting"] == setting) & (df_all["precision"].astype(str) == prec)]
            if g.empty:
                continue
            ok = g[(g["status"] == "ok") & g[value_col].notna()]
            if ok.empty:
                x = i - 0.4 + width * (j + 0.5)
                status = g["status"].iloc[0]
                ax.text(x, 0, f" {status}", rotation=90, ha="center", va="bottom", fontsize=6,
                        color=PALETTE.get(prec, "black"))


def _bar(df_all, value_col, ylabel, title, ax, scale=1.0, errorbar=("ci", 95)):
    df = df_all[(df_all["status"] == "ok") & df_all[value_col].notna()].copy()
    order = _order(df_all)
    if df.empty:
        ax.text(0.5, 0.5, "no ok measurements", ha="center", va="center", transform=ax.transAxes)
    else:
        df[value_col] = df[value_col].astype(float) * scale
        sns.barplot(data=df, x="setting", y=value_col, hue="precision", order=order,
                    hue_order=[p for p in PRECISIONS if p in set(df_all["precision"].astype(str))],
                    palette=PALETTE, errorbar=errorbar, capsize=0.1, err_kws={"linewidth": 0.8},
                    ax=ax)
    _mark_missing(ax, df_all, value_col, order)
    ax.set_xlabel("")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ax.get_legend():
        ax.legend(title=None, ncols=min(4, len(PRECISIONS)), loc="upper center",
                  bbox_to_anchor=(0.5, -0.18), fontsize=7)


def _figure(n_settings: int):
    width = ONE_COLUMN_IN if n_settings <= 2 else TWO_COLUMN_IN
    return plt.subplots(figsize=(width, 2.6))


def fig_throughput(df, exp):
    fig, ax = _figure(df["setting"].nunique())
    _bar(df, "throughput_samples_per_s", "throughput (samples/s)",
         f"{exp}: steady-state throughput", ax)
    return fig


def fig_time(df, exp):
    fig, ax = _figure(df["setting"].nunique())
    _bar(df, "total_time_s", "total training time (s)", f"{exp}: wall time (seed's metric)", ax)
    return fig


def fig_memory(df, exp):
    fig, ax = _figure(df["setting"].nunique())
    _bar(df, "max_memory_allocated_bytes", "peak allocated (MiB)",
         f"{exp}: torch.cuda.max_memory_allocated", ax, scale=1 / 2**20)
    return fig


def fig_speedup(sp, exp):
    fig, ax = _figure(sp["setting"].nunique())
    _bar(sp, "speedup_total_time", "speedup vs fp32 (×)", f"{exp}: time speedup over fp32", ax,
         errorbar=None)
    ax.axhline(1.0, color="0.3", lw=0.8, ls="--")
    return fig


def fig_attribution(df, exp):
    """Median data wait and compute per step, stacked: the seed's missing explanation."""
    ok = df[df["status"] == "ok"].copy()
    fig, ax = _figure(df["setting"].nunique())
    if ok.empty or ok["steps"].isna().all():
        ax.text(0.5, 0.5, "no ok measurements", ha="center", va="center", transform=ax.transAxes)
        return fig
    steady = (ok["steps"] - ok["warmup_steps"]).clip(lower=1)
    ok["data wait"] = ok["data_wait_s"] / steady * 1e3
    ok["compute"] = ok["compute_s"] / steady * 1e3
    g = ok.groupby(["setting", "precision"], observed=True)[["data wait", "compute"]].median()
    g = g.reset_index()
    g["label"] = g["setting"].str.replace("\n", " ") + " · " + g["precision"].astype(str)
    y = np.arange(len(g))
    ax.barh(y, g["compute"], color=[PALETTE[p] for p in g["precision"].astype(str)],
            label="compute")
    ax.barh(y, g["data wait"], left=g["compute"], color="0.75", hatch="///", edgecolor="0.4",
            lw=0, label="waiting for data")
    ax.set_yticks(y, g["label"], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("time per step (ms, median over repeats)")
    ax.set_title(f"{exp}: where a step's time goes")
    ax.legend(loc="lower right", fontsize=6)
    fig.set_size_inches(TWO_COLUMN_IN if len(g) > 6 else ONE_COLUMN_IN, 0.9 + 0.18 * len(g))
    return fig


def fig_tensor_cores(df, exp):
    fig, ax = _figure(df["setting"].nunique())
    ok = df[(df["status"] == "ok")].copy()
    if ok["tensor_core_share"].notna().any():
        _bar(df, "tensor_core_share", "GPU kernel time on Tensor Cores (%)",
             f"{exp}: Tensor Core share of kernel time", ax, scale=100)
        ax.set_ylim(0, 105)
    else:
        ax.text(0.5, 0.5, "no kernel profile (kernel profiling needs a CUDA device)",
                ha="center", va="center", transform=ax.transAxes, fontsize=7)
        ax.set_title(f"{exp}: Tensor Core share of kernel time")
        ax.set_axis_off()
    return fig


def save(fig, out_dir: Path, stem: str, formats=FORMATS) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in formats:
        path = out_dir / f"{stem}.{ext}"
        tmp = out_dir / f".{stem}.tmp.{ext}"
        fig.savefig(tmp, format=ext, metadata={"CreationDate": None} if ext == "pdf" else None)
        tmp.replace(path)
        paths.append(path)
    plt.close(fig)
    return paths


def render(tables: Path, out_dir: Path, experiments: list[str] | None = None) -> list[Path]:
    style()
    metrics = _prepare(pd.read_csv(tables / "metrics.csv"))
    speed = _prepare(pd.read_csv(tables / "speedup.csv"))
    written = []
    for exp in experiments or list(dict.fromkeys(metrics["experiment"])):
        m, s = metrics[metrics["experiment"] == exp], speed[speed["experiment"] == exp]
        if m.empty:
            raise ValueError(f"experiment {exp!r} has no rows in {tables / 'metrics.csv'}")
        for kind, fn, data in (("throughput", fig_throughput, m), ("time", fig_time, m),
                               ("memory", fig_memory, m), ("speedup", fig_speedup, s),
                               ("attribution", fig_attribution, m),
                               ("tensor_cores", fig_tensor_cores, m)):
            written += save(fn(data, exp), out_dir, f"{exp}_{kind}")
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.figures", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=Path, required=True, help="folder with metrics.csv etc.")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--experiments", nargs="*")
    args = ap.parse_args(argv)
    render(args.tables, args.out, args.experiments)
    return 0


if __name__ == "__main__":
    sys.exit(main())
