"""Figures from the tables (CSV in; PDF, SVG and PNG out); never from records.

One function per figure, one shared style: seaborn paper context, TrueType (Type 42) fonts
embedded in PDFs, text as paths in SVGs, one fixed colour per precision in every figure (the
vocabulary's, colour-vision safe), the number format of ``tcbench.tables``. Wherever a cell has
repeats its bar carries its interval (``tcbench.stats``): a 95% confidence interval where n >= 3
(black, capped), the range where n = 2 (grey, uncapped); a single run is marked with a dagger.
Every (setting, precision) slot is either a bar or a label saying why there is none: the
cell's status (unsupported, oom, diverged, error), "n/a" (the device does not measure this) or
"not run" (not in the matrix). Axes whose values span more than ``LOG_SPAN``× are logarithmic.
No text overlaps other text or leaves the canvas (tests/test_figures.py checks every figure).

Widths follow the two usual paper layouts: one column (3.5 in) for up to ``ONE_COLUMN_SLOTS``
bars, two columns (7 in) beyond; ``--width one|two`` forces either.

    python -m tcbench.figures --tables results/nvidia-h200 --out results/nvidia-h200/figures
"""

from __future__ import annotations

import argparse
import math
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
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from . import diagnosis as D  # noqa: E402
from . import stats  # noqa: E402
from . import tables as T  # noqa: E402
from . import vocabulary as V  # noqa: E402

PALETTE = V.PALETTE
KINDS = V.FIGURES
FORMATS = ("pdf", "svg", "png")
ONE_COLUMN_IN, TWO_COLUMN_IN = 3.5, 7.0
HEIGHT_IN = 2.6
ONE_COLUMN_SLOTS = 10          # more bars than this do not fit 3.5 in legibly
VALUE_FONT = 5.5               # pt, values printed on bars
WIDTHS = ("auto", "one", "two")
REFERENCE_HATCH = "//////"
LOG_SPAN = 10.0                # values spanning more than this factor get a log axis
SINGLE = "†"


def style() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update({
        "pdf.fonttype": 42, "ps.fonttype": 42,      # TrueType, embedded: journals reject Type 3
        "svg.fonttype": "path", "svg.hashsalt": "tcbench",  # SVG looks the same everywhere
        "savefig.dpi": 300, "savefig.bbox": "tight", "savefig.pad_inches": 0.03,
        "figure.dpi": 100, "legend.frameon": False, "axes.titlesize": 8,
        "axes.labelsize": 7.5, "xtick.labelsize": 6.5, "ytick.labelsize": 6.5,
        "legend.fontsize": 6.5, "hatch.linewidth": 0.6, "axes.axisbelow": True,
    })


# ----------------------------------------------------------------------------- number format
class Ticks(matplotlib.ticker.Formatter):
    """One format for every tick of an axis: thousands as k (millions as M) once the largest
    tick reaches 10,000, and as many decimals as the tick step needs, the same for all."""

    def set_locs(self, locs):
        super().set_locs(locs)
        finite = sorted(float(v) for v in locs if np.isfinite(v))
        top = max((abs(v) for v in finite), default=0.0)
        self.div, self.suffix = (1e6, "M") if top >= 1e7 else (1e3, "k") if top >= 1e4 \
            else (1.0, "")
        steps = [b - a for a, b in zip(finite, finite[1:]) if b > a]
        step = min(steps, default=1.0) / self.div
        self.decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if 0 < step < 1 else 0

    def __call__(self, x, pos=None):
        if not hasattr(self, "div"):
            self.set_locs(self.axis.get_majorticklocs() if self.axis else [x])
        return f"{x / self.div:,.{self.decimals}f}{self.suffix}"


@matplotlib.ticker.FuncFormatter
def log_ticks(v, _pos=None) -> str:
    """Decades on a log axis: 0.1, 1, 10, 100, 1k, 10k, 1M."""
    if v <= 0:
        return ""
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def value_axis(ax, values, *, floor_one: bool = False) -> bool:
    """Linear axis with ``Ticks``, or a log axis where the values span more than ``LOG_SPAN``×.
    Returns whether the axis is logarithmic."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    v = v[v > 0]
    log = bool(len(v) > 1 and v.max() / v.min() > LOG_SPAN)
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10))
        ax.yaxis.set_major_formatter(log_ticks)
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    else:
        ax.yaxis.set_major_formatter(Ticks())
    return log


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
    """Approximate drawing width of ``ax`` in inches (its share of the figure's columns, less
    room for the y axis labels)."""
    spec = ax.get_subplotspec()
    share = len(spec.colspan) / spec.get_gridspec().ncols if spec else 1.0
    return ax.figure.get_size_inches()[0] * share - 0.45


def slot_width(n: int) -> float:
    """Data-unit width of one of ``n`` bars in a group (groups are 1 apart); a lone bar is not
    drawn as a slab."""
    return min(0.8 / max(n, 1), 0.4)


def slot_x(i: int, j: int, n: int) -> float:
    """Centre of bar ``j`` of ``n`` in group ``i``."""
    width = slot_width(n)
    return i - width * n / 2 + width * (j + 0.5)


def labels_fit(ax, texts, groups: int, n: int, font: float = VALUE_FONT) -> bool:
    """Whether the widest of ``texts`` fits the distance between two bars' centres
    (DejaVu Sans digits are ~0.64 em wide)."""
    if not len(texts):
        return True
    widest = max(len(t) for t in texts) * font * 0.64 / 72
    slot = axes_width_in(ax) / (groups + 0.1) * slot_width(n)
    return widest <= slot * 0.95


def present_precisions(df: pd.DataFrame) -> list[str]:
    have = set(df["precision"].astype(str))
    return [p for p in V.PRECISIONS if p in have]


def setting_label(df: pd.DataFrame) -> pd.Series:
    """The x-axis: batch size where it varies, plus whichever axes ``tables.shown_axes`` names
    inside ``df`` (one experiment), one per line."""
    axes = T.shown_axes(df)
    parts = []
    if df["batch_size"].nunique() > 1 or not axes:
        parts.append("bs " + df["batch_size"].astype(int).astype(str))
    for a in axes:
        parts.append(df[a].map(lambda v, c=a: T.axis_value(c, v)))
    label = parts[0]
    for p in parts[1:]:
        label = label + "\n" + p
    return label


def _missing_text(row) -> str:
    if row is None:
        return "not run"
    why = row.get("why_missing") if hasattr(row, "get") else None
    if isinstance(why, str) and why:
        return why
    status = str(row.get("status", "ok"))
    return "n/a" if status == "ok" or row.get("repeats_ok", 0) else status


def _label_slot(ax, x: float, text: str, colour: str) -> None:
    """A vertical label standing on the x axis, in axes coordinates so it works on log axes."""
    trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    ax.text(x, 0.02, text, transform=trans, rotation=90, ha="center", va="bottom",
            fontsize=5.5, color=colour, clip_on=False)


def grouped_bars(ax, data: pd.DataFrame, value: str, *, groups: list[str] | None = None,
                 interval: str | None = None, hatched=(), annotate=None,
                 precisions: list[str] | None = None) -> dict:
    """Bars of ``value`` per (group, precision), in fixed precision colours and slots.

    ``data`` has one row per (group, precision) with ``status`` and ``repeats_ok``;
    ``interval`` names the stem of ``{interval}_low``/``_high``/``_n`` columns (drawn as
    ``tcbench.stats`` says what they are); groups in ``hatched`` (published references) are
    hatched; ``annotate`` formats the value printed above each bar (all or none, so that a
    partial set does not mislead). A slot without a value gets a label saying why. Returns
    what was drawn, for the legend: ``{"precisions": [...], "intervals": {methods}}``."""
    groups = groups if groups is not None else list(dict.fromkeys(data["group"]))
    precisions = precisions or present_precisions(data)
    n = len(precisions)
    if annotate and not labels_fit(ax, data[value].dropna().map(annotate), len(groups), n):
        annotate = None
    rows = {(str(r["group"]), str(r["precision"])): r for _, r in data.iterrows()}
    drawn = {"precisions": precisions, "intervals": set()}
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
            top, single = v, False
            if interval:
                k = r.get(f"{interval}_n")
                kind = stats.method(0 if pd.isna(k) else int(k))
                lo, hi = r.get(f"{interval}_low"), r.get(f"{interval}_high")
                if kind in (stats.CI, stats.RANGE) and pd.notna(lo) and pd.notna(hi):
                    ci = kind == stats.CI
                    ax.errorbar(x, v, yerr=[[max(v - lo, 0)], [max(hi - v, 0)]], fmt="none",
                                ecolor="0.1" if ci else "0.55", elinewidth=0.8,
                                capsize=1.6 if ci else 0, capthick=0.8)
                    drawn["intervals"].add(kind)
                    top = max(v, hi)
                elif kind == stats.SINGLE:
                    drawn["intervals"].add(kind)
                    if not annotate:
                        ax.annotate(SINGLE, (x, v), xytext=(0, 0.5), textcoords="offset points",
                                    ha="center", va="bottom", fontsize=5.5, color="0.2")
                        single = False
                    else:
                        single = True
            status = str(r.get("status", "ok"))
            if status != "ok":   # some repeats failed: say so on the bar
                ax.annotate(status, (x, top), xytext=(0, 6), textcoords="offset points",
                            ha="center", va="bottom", fontsize=5, rotation=90, color="0.2")
            elif annotate:
                text = annotate(v) + (SINGLE if interval and single else "")
                ax.annotate(text, (x, top), xytext=(0, 1.5), textcoords="offset points",
                            ha="center", va="bottom", fontsize=VALUE_FONT, color="0.15")
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlim(-0.55, len(groups) - 0.45)
    ax.grid(axis="x", visible=False)
    if len(groups) > 1 and axes_width_in(ax) / len(groups) < 0.55:
        ax.tick_params(axis="x", labelrotation=90)
    ax.margins(y=0.18 if annotate or drawn["intervals"] else 0.08)
    return drawn


INTERVAL_HANDLES = {
    stats.CI: Line2D([], [], color="0.1", marker="_", markersize=4, lw=0.8,
                     label="95% CI (n ≥ 3)"),
    stats.RANGE: Line2D([], [], color="0.55", lw=0.8, label="range (n = 2)"),
    stats.SINGLE: Line2D([], [], ls="none", marker="$†$", color="0.2", markersize=4,
                         label="single run"),
}


def legend(fig, precisions: list[str], extra: list | None = None, intervals=()):
    handles = [Patch(facecolor=PALETTE[p], label=p) for p in precisions]
    handles += [INTERVAL_HANDLES[k] for k in (stats.CI, stats.RANGE, stats.SINGLE)
                if k in intervals]
    handles += list(extra or [])
    width_in = fig.get_size_inches()[0]
    per_row = max(2, int(width_in / 1.15))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), per_row),
               handlelength=1.2, columnspacing=0.9, borderaxespad=0.2)


def note_figure(text: str, title: str, width: str = "auto"):
    """A figure that says why there is nothing to draw: the whole canvas is the note (a
    figure still exists, so every result set has the same files), no empty axes."""
    fig = plt.figure(figsize=(figure_width(1, width), 1.0), layout="constrained")
    fig.suptitle(title, fontsize=8)
    fig.text(0.5, 0.4, text, ha="center", va="center", fontsize=7, color="0.25", wrap=True)
    return fig


# ------------------------------------------------------------------------------ the figures
def _cells(df: pd.DataFrame) -> pd.DataFrame:
    df = T._keys(df)
    df = df.sort_values(["batch_size", *V.AXIS_NAMES, "precision"])
    df["group"] = setting_label(df)
    return df


def _groups(df):
    return list(dict.fromkeys(df["group"]))


def _bar_figure(df, value, ylabel, title, width, *, interval=None, annotate=None,
                scale=1.0, empty=None, extra=None, log=None):
    df = df.copy()
    cols = [value] + ([f"{interval}_low", f"{interval}_high"] if interval else [])
    for col in cols:
        df[col] = pd.to_numeric(df[col], errors="coerce") * scale
    if not df[value].notna().any():
        return note_figure(empty or "no measurement", title, width), None
    groups = _groups(df)
    fig, ax = new_figure(len(groups) * len(present_precisions(df)), width)
    if log is None:
        value_axis(ax, pd.concat([df[c] for c in cols]))
    drawn = grouped_bars(ax, df, value, groups=groups, interval=f"{interval}" if interval
                         else None, annotate=annotate)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend(fig, drawn["precisions"], extra, drawn["intervals"])
    return fig, ax


def fig_throughput(s, exp, width="auto"):
    fig, _ = _bar_figure(s, V.HEADLINE, "samples/s (steady state)",
                         f"{exp}: training throughput", width, interval=V.HEADLINE)
    return fig


def fig_warmup(s, exp, width="auto"):
    fig, _ = _bar_figure(s, "time_to_steady_s", "time to first fast step (s)",
                         f"{exp}: warm-up (autotuning, compile)", width,
                         interval="time_to_steady_s",
                         empty="no warm-up time in these records")
    return fig


def fig_memory(s, exp, width="auto"):
    unit, div = T.memory_unit(pd.to_numeric(s["max_memory_allocated_bytes"]).max())
    fig, _ = _bar_figure(s, "max_memory_allocated_bytes", f"peak allocated ({unit})",
                         f"{exp}: peak memory", width, scale=1 / div, annotate=T.num,
                         empty="not measured: torch.cuda memory statistics exist only on "
                               "CUDA devices")
    return fig


def fig_speedup(sp, exp, width="auto"):
    """Throughput over strict fp32 at the same setting; for an experiment without fp32 cells
    (a knobs study), over the plain fp32 baseline instead (``aggregate.plain_baselines``),
    which the axis label names."""
    sp = sp.copy()
    same = sp["speedup"].notna() & (sp["precision"].astype(str) != V.BASELINE)
    if same.any() or not sp["gain"].notna().any():
        col, ylabel, what = "speedup", "× fp32, same setting", "speedup over fp32"
        sp["why_missing"] = np.where(sp["repeats_ok"].fillna(0) > 0, "no fp32", "")
    else:
        col, what = "gain", "gain over plain fp32"
        base = sp.dropna(subset=["plain_experiment"]).iloc[0]
        ylabel = f"× plain fp32 ({base['plain_experiment']}, bs {int(base['plain_batch_size'])})"
    sp = sp.rename(columns={col: "ratio", f"{col}_low": "ratio_low", f"{col}_high": "ratio_high",
                            f"{col}_n": "ratio_n"})
    fig, ax = _bar_figure(sp, "ratio", ylabel, f"{exp}: {what} (throughput)", width,
                          interval="ratio", annotate=lambda v: f"{T.num(v)}",
                          empty="no fp32 run to compare with")
    if ax is not None:
        ax.axhline(1.0, color="0.3", lw=0.8, ls="--", zorder=0.5)
    return fig


def fig_tensor_cores(s, exp, width="auto"):
    """Two quantities, two panels: the share of GPU kernel time in Tensor Core kernels (bars;
    a black tick marks the share of all matrix kernels, on any unit), and the share of wall
    time the GPU had a kernel running (a low share means the host sets the pace)."""
    s = s.copy()
    for c in ("tensor_core_share", "matmul_share", "gpu_busy_share"):
        s[c] = pd.to_numeric(s.get(c), errors="coerce") * 100
    title = f"{exp}: Tensor Cores and GPU busy"
    if not s["tensor_core_share"].notna().any():
        gpu = pd.to_numeric(s.get("compute_capability"), errors="coerce").notna().any()
        return note_figure(f"not measured: {D.why_unprofiled(gpu)}", title, width)
    groups, precisions = _groups(s), present_precisions(s)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(figure_width(len(groups) * len(precisions), width), HEIGHT_IN + 1.0),
        layout="constrained", sharex=True)
    grouped_bars(top, s, "tensor_core_share", groups=groups, precisions=precisions)
    n = len(precisions)
    for _, r in s.iterrows():
        if pd.notna(r["matmul_share"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            top.hlines(r["matmul_share"], x - slot_width(n) * 0.46, x + slot_width(n) * 0.46,
                       colors="0.1", lw=1.0)
    top.set_ylim(0, 105)
    top.set_ylabel("Tensor Core\n% of kernel time")
    top.set_title(title)
    grouped_bars(bottom, s, "gpu_busy_share", groups=groups, precisions=precisions)
    bottom.set_ylim(0, 105)
    bottom.set_ylabel("GPU busy\n% of wall time")
    bottom.axhline(50, color="0.3", lw=0.7, ls=":", zorder=0.5)
    for ax in (top, bottom):
        ax.yaxis.set_major_formatter(Ticks())
        ax.set_yticks([0, 25, 50, 75, 100])
    legend(fig, precisions, [Line2D([], [], color="0.1", lw=1.0,
                                    label="all matrix kernels (any unit)")])
    return fig


def fig_attribution(m, exp, width="auto"):
    """Per step: compute (precision colour) with the wait for data stacked on top (grey,
    hatched); means over the finished repeats. The seed's missing explanation of its MNIST
    numbers: a step that waits for data cannot get faster with faster arithmetic."""
    m = T._keys(m)
    m = m.sort_values(["batch_size", *V.AXIS_NAMES, "precision"])
    m["group"] = setting_label(m)
    ok = m[m["status"] == "ok"].copy()
    steady = (pd.to_numeric(ok["steps"]) - pd.to_numeric(ok["warmup_steps"])).clip(lower=1)
    ok["wait_ms"] = pd.to_numeric(ok["data_wait_s"]) / steady * 1e3
    ok["compute_ms"] = pd.to_numeric(ok["compute_s"]) / steady * 1e3
    means = ok.groupby(["group", "precision"], observed=True, sort=False)[
        ["wait_ms", "compute_ms"]].mean().reset_index()
    cells = (m.groupby(["group", "precision"], observed=True, sort=False)
             .agg(status=("status", lambda st: "ok" if (st == "ok").any() else st.iloc[0]),
                  repeats_ok=("status", lambda st: int((st == "ok").sum())))
             .reset_index().merge(means, on=["group", "precision"], how="left"))
    title = f"{exp}: compute and data wait per step"
    if not cells["compute_ms"].notna().any():
        return note_figure("no finished run", title, width)
    groups, precisions = list(dict.fromkeys(m["group"])), present_precisions(m)
    fig, ax = new_figure(len(groups) * len(precisions), width)
    grouped_bars(ax, cells, "compute_ms", groups=groups, precisions=precisions)
    n = len(precisions)
    for _, r in cells.iterrows():
        if pd.notna(r["wait_ms"]) and pd.notna(r["compute_ms"]):
            x = slot_x(groups.index(r["group"]), precisions.index(str(r["precision"])), n)
            ax.bar(x, r["wait_ms"], bottom=r["compute_ms"], width=slot_width(n) * 0.92,
                   color="0.8", hatch="....", edgecolor="0.45", linewidth=0)
    ax.yaxis.set_major_formatter(Ticks())
    ax.set_ylabel("time per step (ms)")
    ax.set_title(title)
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


def build(tables: Path, exp: str, width: str = "auto") -> dict:
    """Every figure of one experiment, by kind (not yet saved)."""
    tables = Path(tables)
    metrics = pd.read_csv(tables / "metrics.csv")
    summary = pd.read_csv(tables / "summary.csv")
    speed = pd.read_csv(tables / "speedup.csv")
    m = metrics[metrics["experiment"] == exp]
    s, sp = summary[summary["experiment"] == exp], speed[speed["experiment"] == exp]
    if s.empty or m.empty:
        raise ValueError(f"experiment {exp!r} has no rows in {tables}/summary.csv")
    s, sp = _cells(s), _cells(sp)
    return {"throughput": fig_throughput(s, exp, width), "speedup": fig_speedup(sp, exp, width),
            "warmup": fig_warmup(s, exp, width), "memory": fig_memory(s, exp, width),
            "attribution": fig_attribution(m, exp, width),
            "tensor_cores": fig_tensor_cores(s, exp, width)}


def render(tables: Path, out_dir: Path, experiments: list[str] | None = None,
           width: str = "auto", formats=FORMATS) -> list[Path]:
    style()
    tables = Path(tables)
    if not experiments:
        experiments = list(dict.fromkeys(pd.read_csv(tables / "summary.csv")["experiment"]))
    written = []
    for exp in experiments:
        for kind, fig in build(tables, exp, width).items():
            written += save(fig, Path(out_dir), f"{exp}_{kind}", formats)
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
