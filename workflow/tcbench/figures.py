"""Figures from the tables (CSV in; PDF, SVG and PNG out); never from records.

One function per figure, one shared style: seaborn paper context, TrueType (Type 42) fonts
embedded in PDFs, text as paths in SVGs, a colour-blind-safe palette with one fixed colour per
precision in every figure (tcbench.compare's cross-GPU figures included), 95% bootstrap
intervals of the median wherever a cell has repeats. Every (setting, precision) slot of a figure
is either a bar or a label saying why there is none: the cell's status (unsupported, oom,
diverged, error), "n/a" (the device does not measure this), or "not run" (not in the matrix).

Widths follow the two usual paper layouts: one column (3.5 in) for up to ``ONE_COLUMN_SLOTS``
bars, two columns (7 in) beyond; ``--width one|two`` forces either.

    python -m tcbench.figures --tables results/nvidia-h200 --out results/nvidia-h200/figures
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import matplotlib.transforms as mtransforms  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from . import vocabulary as V  # noqa: E402
from .tables import SETTING_AXES, axis_value  # noqa: E402

PRECISIONS = list(V.PRECISIONS)
PALETTE = V.PALETTE
KINDS = ("throughput", "time", "memory", "speedup", "attribution", "tensor_cores")
FORMATS = ("pdf", "svg", "png")
ONE_COLUMN_IN, TWO_COLUMN_IN = 3.5, 7.0
HEIGHT_IN = 2.5
ONE_COLUMN_SLOTS = 10          # more bars than this do not fit 3.5 in legibly
VALUE_FONT = 5.5               # pt, values printed on bars
WIDTHS = ("auto", "one", "two")
REFERENCE_HATCH = "//////"
MIB = 2**20


def style() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update({
        "pdf.fonttype": 42, "ps.fonttype": 42,      # TrueType, embedded: journals reject Type 3
        "svg.fonttype": "path", "svg.hashsalt": "tcbench",  # SVG looks the same everywhere
        "savefig.dpi": 300, "savefig.bbox": "tight", "savefig.pad_inches": 0.03,
        "figure.dpi": 100, "legend.frameon": False, "axes.titlesize": 9,
        "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7, "legend.fontsize": 7,
        "hatch.linewidth": 0.6, "axes.axisbelow": True,
    })


# ----------------------------------------------------------------------------- layout helpers
def figure_width(slots: int, width: str = "auto") -> float:
    if width not in WIDTHS:
        raise ValueError(f"width={width!r}: choose one of {', '.join(WIDTHS)}")
    if width == "auto":
        width = "one" if slots <= ONE_COLUMN_SLOTS else "two"
    return ONE_COLUMN_IN if width == "one" else TWO_COLUMN_IN


def new_figure(slots: int, width: str = "auto", height: float = HEIGHT_IN, **kw):
    return plt.subplots(figsize=(figure_width(slots, width), height), layout="constrained", **kw)


def axes_width_in(ax) -> float:
    """Approximate drawing width of ``ax`` in inches once constrained layout has placed it
    (its share of the figure's columns, less room for the y axis labels)."""
    spec = ax.get_subplotspec()
    share = len(spec.colspan) / spec.get_gridspec().ncols if spec else 1.0
    return ax.figure.get_size_inches()[0] * share - 0.45


def labels_fit(ax, texts, groups: int, n: int) -> bool:
    """Whether the widest of ``texts`` fits the distance between two bars' centres
    (DejaVu Sans digits are ~0.64 em wide)."""
    if not len(texts):
        return True
    widest = max(len(t) for t in texts) * VALUE_FONT * 0.64 / 72
    slot = axes_width_in(ax) / (groups + 0.1) * slot_width(n)
    return widest <= slot * 0.95


def varying_axes(df: pd.DataFrame) -> list[str]:
    return [a for a in SETTING_AXES if a in df and df[a].astype(str).nunique() > 1]


def setting_label(df: pd.DataFrame) -> pd.Series:
    """The x-axis: batch size, plus whichever other axes vary inside ``df`` (one experiment)."""
    label = "bs " + df["batch_size"].astype(int).astype(str)
    for col in varying_axes(df):
        label = label + "\n" + df[col].map(lambda v, c=col: axis_value(c, v))
    return label


def present_precisions(df: pd.DataFrame) -> list[str]:
    have = set(df["precision"].astype(str))
    return [p for p in PRECISIONS if p in have]


def slot_width(n: int) -> float:
    """Data-unit width of one of ``n`` bars in a group (groups are 1 apart); a lone bar is not
    drawn as a slab."""
    return min(0.8 / max(n, 1), 0.4)


def slot_x(i: int, j: int, n: int) -> float:
    """Centre of bar ``j`` of ``n`` in group ``i``."""
    width = slot_width(n)
    return i - width * n / 2 + width * (j + 0.5)


def _label_slot(ax, x: float, text: str, colour: str) -> None:
    """A vertical label standing on the x axis, in axes coordinates so it works on log axes."""
    trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    ax.text(x, 0.03, text, transform=trans, rotation=90, ha="center", va="bottom",
            fontsize=6, color=colour, clip_on=False)


def _missing_text(row) -> str:
    if row is None:
        return "not run"
    if "why_missing" in row and isinstance(row["why_missing"], str) and row["why_missing"]:
        return row["why_missing"]
    status = str(row.get("status", "ok"))
    return "n/a" if status == "ok" else status


def grouped_bars(ax, data: pd.DataFrame, value: str, *, groups: list[str] | None = None,
                 lo: str | None = None, hi: str | None = None, hatched=(), annotate=None,
                 inside: float | None = None, precisions: list[str] | None = None) -> list[str]:
    """Bars of ``value`` per (group, precision), in fixed precision colours and slots.

    ``data`` has one row per (group, precision) with ``status``; ``lo``/``hi`` name interval
    columns (drawn where both are there); groups in ``hatched`` (published references) are
    hatched; ``annotate`` formats the value printed on each bar (inside its top where the bar
    reaches ``inside``, so markers above stay clear). A slot without a value gets a
    label saying why (see ``_missing_text``). Returns the precisions drawn, for the legend.
    """
    groups = groups if groups is not None else list(dict.fromkeys(data["group"]))
    precisions = precisions or present_precisions(data)
    n = len(precisions)
    if annotate and not labels_fit(ax, data[value].dropna().map(annotate), len(groups), n):
        annotate = None         # all bars labelled or none: a partial set would mislead
    rows = {(str(r["group"]), str(r["precision"])): r for _, r in data.iterrows()}
    for i, g in enumerate(groups):
        for j, p in enumerate(precisions):
            x = slot_x(i, j, n)
            r = rows.get((g, p))
            v = None if r is None else r[value]
            if r is None or pd.isna(v):
                _label_slot(ax, x, _missing_text(r), PALETTE[p])
                continue
            ax.bar(x, v, width=slot_width(n) * 0.92, color=PALETTE[p], edgecolor="white",
                   linewidth=0, hatch=REFERENCE_HATCH if g in hatched else None)
            if lo and hi and pd.notna(r.get(lo)) and pd.notna(r.get(hi)):
                ax.errorbar(x, v, yerr=[[max(v - r[lo], 0)], [max(r[hi] - v, 0)]], fmt="none",
                            ecolor="0.15", elinewidth=0.8, capsize=1.5, capthick=0.8)
            if str(r.get("status", "ok")) != "ok":   # some repeats failed: say so on the bar
                ax.annotate(str(r["status"]), (x, v), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=5, rotation=90, color="0.2")
            elif annotate and inside and v >= inside:
                ax.annotate(annotate(v), (x, v), xytext=(0, -1.5), textcoords="offset points",
                            ha="center", va="top", fontsize=VALUE_FONT, color="white")
            elif annotate:
                ax.annotate(annotate(v), (x, v), xytext=(0, 1.5), textcoords="offset points",
                            ha="center", va="bottom", fontsize=VALUE_FONT, color="0.15")
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlim(-0.55, len(groups) - 0.45)
    ax.grid(axis="x", visible=False)
    if annotate:
        ax.margins(y=0.15)
    return precisions


def legend(fig, precisions: list[str], extra: list | None = None, where="outside lower center"):
    handles = [Patch(facecolor=PALETTE[p], label=p) for p in precisions] + list(extra or [])
    width_in = fig.get_size_inches()[0]
    ncols = len(handles) if width_in > ONE_COLUMN_IN + 0.1 or len(handles) <= 4 else 3
    fig.legend(handles=handles, loc=where, ncols=ncols, handlelength=1.2, columnspacing=1.0,
               borderaxespad=0.2)


@matplotlib.ticker.FuncFormatter
def compact_ticks(v, _pos=None) -> str:
    """400000 -> 400k: short tick labels that fit a one-column figure."""
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def note_if_empty(ax, data: pd.DataFrame, value: str, text: str) -> bool:
    """Where no slot has a value, say what is missing across the plot and hide the empty
    axis; returns whether that happened."""
    if data[value].notna().any():
        return False
    ax.text(0.5, 0.55, text, ha="center", va="center", transform=ax.transAxes, fontsize=7,
            wrap=True, color="0.25")
    ax.set_yticks([])
    ax.set_ylim(0, 1)
    return True


# ------------------------------------------------------------------------------ the figures
def _cells(summary: pd.DataFrame) -> pd.DataFrame:
    df = summary.copy()
    df["group"] = setting_label(df)
    df = df.sort_values(["batch_size", *[a for a in SETTING_AXES if a in df]])
    return df


def _groups(df):
    return list(dict.fromkeys(df["group"]))


def _bar_figure(df, value, ylabel, title, width, *, lo=None, hi=None, annotate=None,
                inside=None, empty_note=None, scale=1.0):
    df = df.copy()
    for col in (value, lo, hi):
        if col:
            df[col] = pd.to_numeric(df[col], errors="coerce") * scale
    groups = _groups(df)
    fig, ax = new_figure(len(groups) * len(present_precisions(df)), width)
    empty = note_if_empty(ax, df[df["status"] == "ok"] if (df["status"] == "ok").any() else df,
                          value, empty_note or "no measurement")
    precisions = grouped_bars(ax, df, value, groups=groups, lo=lo, hi=hi, inside=inside,
                              annotate=None if empty else annotate)
    ax.yaxis.set_major_formatter(compact_ticks)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend(fig, precisions)
    return fig, ax


def fig_throughput(s, exp, width="auto"):
    fig, _ = _bar_figure(s, "throughput_samples_per_s_median", "samples/s (steady state)",
                         f"{exp}: training throughput", width,
                         lo="throughput_samples_per_s_ci_low",
                         hi="throughput_samples_per_s_ci_high")
    return fig


def fig_time(s, exp, width="auto"):
    fig, _ = _bar_figure(s, "total_time_s_median", "total training time (s)",
                         f"{exp}: wall time, start to synchronised end", width,
                         lo="total_time_s_ci_low", hi="total_time_s_ci_high")
    return fig


def memory_unit(bytes_max) -> tuple[str, float]:
    """MiB up to 4 GiB, GiB beyond, so that bar labels stay short."""
    return ("GiB", 2**30) if pd.notna(bytes_max) and bytes_max >= 4 * 2**30 else ("MiB", MIB)


def fig_memory(s, exp, width="auto"):
    unit, div = memory_unit(pd.to_numeric(s["max_memory_allocated_bytes"]).max())
    fig, _ = _bar_figure(s, "max_memory_allocated_bytes", f"peak allocated ({unit})",
                         f"{exp}: peak memory held by tensors", width, scale=1 / div,
                         annotate=lambda v: f"{v:.3g}" if unit == "GiB" else f"{v:.0f}",
                         empty_note="not measured: torch.cuda memory statistics\n"
                                    "exist only on CUDA devices")
    return fig


def fig_speedup(sp, exp, width="auto"):
    sp = sp.copy()
    sp["why_missing"] = np.where((sp["status"] == "ok") & sp["fp32_total_time_s"].isna(),
                                 "no fp32 baseline", "")
    fig, ax = _bar_figure(sp, "speedup_total_time", "fp32 time / time (×)",
                          f"{exp}: speedup over fp32 (total time)", width, annotate=lambda v: f"{v:.2f}")
    ax.axhline(1.0, color="0.3", lw=0.8, ls="--", zorder=0.5)
    return fig


def fig_tensor_cores(s, exp, width="auto"):
    """Share of GPU kernel time in Tensor Core kernels (bars), and the share of wall time the
    GPU had any kernel running (diamonds): low busy means the host, not the GPU, sets the pace."""
    s = s.copy()
    fig, ax = _bar_figure(s, "tensor_core_share", "share (%)",
                          f"{exp}: Tensor Core share of GPU kernel time", width, scale=100,
                          annotate=lambda v: f"{v:.0f}", inside=15,
                          empty_note="not measured: kernel profiling needs a CUDA device")
    busy = pd.to_numeric(s.get("gpu_busy_share"), errors="coerce") * 100
    if busy is not None and busy.notna().any():
        groups, precisions = _groups(s), present_precisions(s)
        for _, r in s.assign(busy=busy).iterrows():
            if pd.notna(r["busy"]):
                x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])),
                           len(precisions))
                ax.plot(x, r["busy"], marker="D", ms=3.5, mfc="white", mec="0.1", mew=0.8,
                        ls="none")
        fig.legends.clear()
        legend(fig, precisions, [plt.Line2D([], [], marker="D", ms=3.5, mfc="white", mec="0.1",
                                            ls="none", label="GPU busy (of wall time)")])
    if busy is not None and (s["tensor_core_share"].notna().any() or busy.notna().any()):
        ax.set_ylim(0, 110)
        ax.set_yticks([0, 25, 50, 75, 100])
    return fig


def fig_attribution(m, exp, width="auto"):
    """Per step: compute (precision colour) with the wait for data stacked on top (grey,
    hatched); medians over repeats. The seed's missing explanation of its MNIST numbers."""
    m = m.copy()
    m["group"] = setting_label(m)
    m = m.sort_values(["batch_size", *[a for a in SETTING_AXES if a in m]])
    ok = m[m["status"] == "ok"].copy()
    steady = (ok["steps"] - ok["warmup_steps"]).clip(lower=1)
    ok["wait_ms"] = ok["data_wait_s"] / steady * 1e3
    ok["compute_ms"] = ok["compute_s"] / steady * 1e3
    med = ok.groupby(["group", "precision"], observed=True, sort=False)[
        ["wait_ms", "compute_ms"]].median().reset_index()
    cells = (m.groupby(["group", "precision"], observed=True, sort=False)["status"]
             .agg(lambda st: "ok" if (st == "ok").any() else st.iloc[0]).reset_index())
    cells = cells.merge(med, on=["group", "precision"], how="left")
    groups, precisions = list(dict.fromkeys(m["group"])), present_precisions(m)
    fig, ax = new_figure(len(groups) * len(precisions), width)
    grouped_bars(ax, cells, "compute_ms", groups=groups, precisions=precisions)
    n = len(precisions)
    for _, r in cells.iterrows():
        if pd.notna(r["wait_ms"]) and pd.notna(r["compute_ms"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            ax.bar(x, r["wait_ms"], bottom=r["compute_ms"], width=slot_width(n) * 0.92,
                   color="0.8", hatch="....", edgecolor="0.45", linewidth=0)
    ax.set_ylabel("time per step (ms)")
    ax.set_title(f"{exp}: compute and waiting for data, per step")
    legend(fig, precisions, [Patch(facecolor="0.8", hatch="....", edgecolor="0.45",
                                   label="waiting for data")])
    return fig


# ----------------------------------------------------------------------------------- output
def save(fig, out_dir: Path, stem: str, formats=FORMATS) -> list[Path]:
    """Every format, each written to a temporary name and renamed; reproducible metadata."""
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"pdf": {"CreationDate": None, "Creator": "tcbench"},
            "svg": {"Date": None, "Creator": "tcbench"}, "png": {"Software": "tcbench"}}
    paths = []
    for ext in formats:
        path = out_dir / f"{stem}.{ext}"
        tmp = out_dir / f".{stem}.tmp.{ext}"
        fig.savefig(tmp, format=ext, metadata=meta.get(ext))
        tmp.replace(path)
        paths.append(path)
    plt.close(fig)
    return paths


def render(tables: Path, out_dir: Path, experiments: list[str] | None = None,
           width: str = "auto", formats=FORMATS) -> list[Path]:
    style()
    tables = Path(tables)
    metrics = pd.read_csv(tables / "metrics.csv")
    summary = pd.read_csv(tables / "summary.csv")
    speed = pd.read_csv(tables / "speedup.csv")
    written = []
    for exp in experiments or list(dict.fromkeys(summary["experiment"])):
        m = metrics[metrics["experiment"] == exp]
        s, sp = summary[summary["experiment"] == exp], speed[speed["experiment"] == exp]
        if s.empty or m.empty:
            raise ValueError(f"experiment {exp!r} has no rows in {tables}/summary.csv")
        s, sp = _cells(s), _cells(sp)
        for kind, fn, data in (("throughput", fig_throughput, s), ("time", fig_time, s),
                               ("memory", fig_memory, s), ("speedup", fig_speedup, sp),
                               ("attribution", fig_attribution, m),
                               ("tensor_cores", fig_tensor_cores, s)):
            written += save(fn(data, exp, width), Path(out_dir), f"{exp}_{kind}", formats)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.figures", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=Path, required=True, help="folder with metrics.csv etc.")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--experiments", nargs="*")
    ap.add_argument("--width", choices=WIDTHS, default="auto",
                    help="one column (3.5 in), two columns (7 in), or by number of bars")
    ap.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    args = ap.parse_args(argv)
    try:
        render(args.tables, args.out, args.experiments, args.width, args.formats)
    except (ValueError, FileNotFoundError) as exc:
        print(f"tcbench.figures: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
