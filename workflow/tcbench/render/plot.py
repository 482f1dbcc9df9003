"""The plotting toolkit every figure shares: seaborn paper context, TrueType (Type 42) fonts
embedded in PDFs, text as paths in SVGs, one fixed colour per precision in every figure (the
vocabulary's, colour-vision safe), the number format of ``render.numbers``. Wherever a cell has
repeats its bar carries its interval (``tcbench.stats``): a 95% confidence interval where n >= 3
(black, capped), the range where n = 2 (grey, uncapped); a single run is marked with a dagger;
and each finished run is a dot on its bar (``runs``), so that a spread of two modes shows.
Every (setting, precision) slot is either a bar (or a point) or a label saying why there is
none: the cell's status (unsupported, oom, diverged, error), the reason its finished runs have
no such value (``why_missing``: "no fp32", "not measured"), or why there is no record of it at
all (``absent``: "not in design", "planned, no record", "no record"). Axes whose values span
more than ``LOG_SPAN``x are logarithmic, labelled ticks at 1, 2 and 5 of each decade where they
span few decades, and their label says "log scale". A ratio's panel has a line at 1 and at
``stats.GAIN`` (``ratio_lines``).

A figure with nothing to show is not drawn (``NotDrawn``): ``save_as`` writes a one-line note
in its place, marked as such (``render.placeholder``).

Widths follow the two usual paper layouts: one column (3.5 in) for up to ``ONE_COLUMN_SLOTS``
bars, two columns (7 in) beyond.
"""

from __future__ import annotations

import math
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

from .. import stats  # noqa: E402
from .. import vocabulary as V  # noqa: E402
from . import placeholder  # noqa: E402
from .settings import axis_value, shown_axes  # noqa: E402

PALETTE = V.PALETTE
FORMATS = V.FIGURE_FORMATS
ONE_COLUMN_IN, TWO_COLUMN_IN = 3.5, 7.0

HEIGHT_IN = 2.6

ONE_COLUMN_SLOTS = 10          # more bars than this do not fit 3.5 in legibly

VALUE_FONT = 5.5               # pt, values printed on bars
# behind a printed value: a reference line or a grid line does not strike through it
VALUE_BOX = dict(boxstyle="square,pad=0.08", fc="white", ec="none", alpha=0.85)

WIDTHS = ("auto", "one", "two")

REFERENCE_HATCH = "//////"

LOG_SPAN = 10.0                # values spanning more than this factor get a log axis

SINGLE = V.SINGLE_RUN_MARK


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


class Ticks(matplotlib.ticker.Formatter):
    """One format for every tick of an axis: thousands as k (millions as M) once the largest
    tick reaches 10,000, and as many decimals as the tick step needs, the same for all."""

    def set_locs(self, locs):
        super().set_locs(locs)
        finite = sorted(float(v) for v in locs if np.isfinite(v))
        top = max((abs(v) for v in finite), default=0.0)
        self.div, self.suffix = (1e6, "M") if top >= 1e7 else (1e3, "k") if top >= 1e4 \
            else (1.0, "")
        # the fewest decimals that print every tick exactly (2.5 is "2.5", never "2")
        scaled = [v / self.div for v in finite]
        self.decimals = next((d for d in range(7) if all(
            abs(round(v, d) - v) <= 1e-9 * max(1.0, abs(v)) for v in scaled)), 6)

    def __call__(self, x, pos=None):
        if not hasattr(self, "div"):
            self.set_locs(self.axis.get_majorticklocs() if self.axis else [x])
        return f"{x / self.div:,.{self.decimals}f}{self.suffix}"


@matplotlib.ticker.FuncFormatter
def log_ticks(v, _pos=None) -> str:
    """Ticks on a log axis: 0.1, 0.2, 0.5, 1, 2, 5, 10, 100, 1k, 10k, 1M."""
    if v <= 0:
        return ""
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


# a log axis spanning fewer decades than this gets labelled ticks at 1, 2 and 5 of each decade
# (decades alone would leave one or two labels on the axis)
FEW_DECADES = 3.0


LOG_NOTE = " (log scale)"


def value_axis(ax, values, *, label: str | None = None) -> bool:
    """Linear axis with ``Ticks``, or a log axis where the values span more than ``LOG_SPAN``×;
    ``label`` becomes the y label, which says "log scale" on a log axis. Returns whether the
    axis is logarithmic."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    v = v[v > 0]
    log = bool(len(v) > 1 and v.max() / v.min() > LOG_SPAN)
    if log:
        ax.set_yscale("log")
        few = math.log10(v.max() / v.min()) < FEW_DECADES
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(
            base=10, subs=(1.0, 2.0, 5.0) if few else (1.0,)))
        ax.yaxis.set_major_formatter(log_ticks)
        ax.yaxis.set_minor_locator(matplotlib.ticker.LogLocator(base=10, subs="auto"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        # the axis spans the data (bars stand on its floor), not whole empty decades
        ax.set_ylim(v.min() / 1.6, v.max() * 1.6)
    else:
        ax.yaxis.set_major_formatter(Ticks())
    if label is not None:
        # a long label takes the note on a line of its own rather than outrun its axes
        note = LOG_NOTE if len(label) + len(LOG_NOTE) <= 26 else "\n" + LOG_NOTE.strip()
        ax.set_ylabel(label + (note if log else ""))
    return log


# each finished run, on its bar or beside its point: hollow, so that it shows on every colour
RUN_MARK = dict(marker="o", markersize=2.6, mfc="white", mec="0.1", mew=0.6, ls="none")
RUN_HANDLE = Line2D([], [], label="one run", **RUN_MARK)


def run_dots(ax, x: float, values, n: int) -> bool:
    """Each run's value as a dot at ``x``, spread across the middle of the slot (in their
    order) so that equal values stay countable. Returns whether any dot was drawn."""
    v = [float(y) for y in values if y is not None and np.isfinite(float(y))]
    if not v:
        return False
    half = slot_width(n) * 0.22 if len(v) > 1 else 0.0
    xs = np.linspace(x - half, x + half, len(v))
    ax.plot(xs, v, zorder=4, clip_on=False, **RUN_MARK)
    return True


def ratio_lines(ax) -> list:
    """A ratio's two references: 1× (the same speed) and ``stats.GAIN`` (the threshold a
    95% interval must clear for "pays off"); the legend's handles for them."""
    same = dict(color="0.2", lw=0.8, ls="--")
    gain = dict(color="#7a1f1f", lw=0.9, ls=":")
    # over the bars and the grid (a grid line often sits at 1 too), under runs and whiskers
    ax.axhline(1.0, zorder=1.5, **same)
    ax.axhline(stats.GAIN, zorder=1.6, **gain)
    return [Line2D([], [], label="1× (same speed)", **same),
            Line2D([], [], label=f"{stats.GAIN:.2f}× (pays-off threshold)", **gain)]


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
    """The x-axis: batch size where it varies, plus whichever axes ``settings.shown_axes`` names
    inside ``df`` (one experiment), one per line."""
    axes = shown_axes(df)
    parts = []
    if df["batch_size"].nunique() > 1 or not axes:
        parts.append("bs " + df["batch_size"].astype(int).astype(str))
    for a in axes:
        parts.append(df[a].map(lambda v, c=a: axis_value(c, v)))
    label = parts[0]
    for p in parts[1:]:
        label = label + "\n" + p
    return label


NO_RECORD = "no record"          # a slot with no record, where the study's plan is not known


def missing_text(row, absent: str = NO_RECORD) -> str:
    """Why a slot has no bar: ``absent`` where the set has no record of the cell at all."""
    if row is None:
        return absent
    why = row.get("why_missing") if hasattr(row, "get") else None
    if isinstance(why, str) and why:
        return why
    status = str(row.get("status", V.OK))
    return "not measured" if status == V.OK or row.get("repeats_ok", 0) else status


def label_slot(ax, x: float, text: str, colour: str) -> None:
    """A vertical label standing on the x axis, in axes coordinates so it works on log axes."""
    trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    ax.text(x, 0.02, text, transform=trans, rotation=90, ha="center", va="bottom",
            fontsize=5.5, color=colour, clip_on=False)


def interval_kind(r, interval: str) -> str:
    """What the interval of ``{interval}_low``/``_high`` is (``tcbench.stats``): the one a
    table wrote in ``{interval}_interval``, else the one its ``{interval}_n`` implies."""
    declared = r.get(f"{interval}_interval")
    if isinstance(declared, str) and declared in stats.METHOD_TEXT:
        return declared
    k = r.get(f"{interval}_n")
    return stats.method(0 if k is None or pd.isna(k) else int(k))


# how each kind of interval is drawn: colour, cap size
WHISKERS = {stats.CI: ("0.1", 1.6), stats.RANGE: ("0.55", 0), stats.SPREAD: ("0.35", 1.6)}


def _interval_bar(ax, x: float, v: float, r, interval: str, annotate, drawn: dict):
    """The interval of one bar as ``tcbench.stats`` says what it is; returns the bar's top
    and whether a single run's dagger is still to be printed after its value."""
    kind = interval_kind(r, interval)
    lo, hi = r.get(f"{interval}_low"), r.get(f"{interval}_high")
    if kind in WHISKERS and pd.notna(lo) and pd.notna(hi):
        colour, cap = WHISKERS[kind]
        ax.errorbar(x, v, yerr=[[max(v - lo, 0)], [max(hi - v, 0)]], fmt="none",
                    ecolor=colour, elinewidth=0.8, capsize=cap, capthick=0.8)
        drawn["intervals"].add(kind)
        return max(v, hi), False
    if kind == stats.SINGLE:
        drawn["intervals"].add(kind)
        if not annotate:
            ax.annotate(SINGLE, (x, v), xytext=(0, 0.5), textcoords="offset points",
                        ha="center", va="bottom", fontsize=5.5, color="0.2")
            return v, False
        return v, True
    return v, False


def _bar(ax, x: float, r, value: str, p: str, n: int, *, hatch: bool, interval, annotate,
         drawn: dict, point: bool = False, above: float = -np.inf) -> None:
    """One bar (or, with ``point``, one marker) with its interval, and its status (some
    repeats failed) or its value on top, above ``above`` too (its highest run's dot)."""
    v = r[value]
    if point:
        ax.plot([x], [v], marker="o", markersize=4.2, mfc=PALETTE[p], mec="0.1", mew=0.6,
                ls="none", zorder=3.5)
    else:
        ax.bar(x, v, width=slot_width(n) * 0.92, color=PALETTE[p], edgecolor="white",
               linewidth=0, hatch=REFERENCE_HATCH if hatch else None)
    top, single = _interval_bar(ax, x, v, r, interval, annotate, drawn) if interval \
        else (v, False)
    lift = 3.0 if np.isfinite(above) else 1.5      # clear of the dots
    top = max(top, above)
    status = str(r.get("status", V.OK))
    if status != V.OK:   # some repeats failed: say so on the bar
        ax.annotate(status, (x, top), xytext=(0, 6), textcoords="offset points",
                    ha="center", va="bottom", fontsize=5, rotation=90, color="0.2")
    elif annotate:
        text = annotate(v) + (SINGLE if interval and single else "")
        ax.annotate(text, (x, top), xytext=(0, lift), textcoords="offset points",
                    ha="center", va="bottom", fontsize=VALUE_FONT, color="0.15",
                    bbox=VALUE_BOX, zorder=5)


def grouped_bars(ax, data: pd.DataFrame, value: str, *, groups: list[str] | None = None,
                 interval: str | None = None, hatched=(), annotate=None,
                 precisions: list[str] | None = None, absent=None, runs=None,
                 point: bool = False) -> dict:
    """Bars of ``value`` per (group, precision), in fixed precision colours and slots.

    ``data`` has one row per (group, precision) with ``status`` and ``repeats_ok``;
    ``interval`` names the stem of ``{interval}_low``/``_high``/``_n`` columns (drawn as
    ``tcbench.stats`` says what they are); groups in ``hatched`` (published references) are
    hatched; ``annotate`` formats the value printed above each bar (all or none, so that a
    partial set does not mislead); ``runs`` maps (group, precision) to the values of the
    cell's finished runs, each drawn as a dot on its bar; ``point`` draws a marker instead
    of a bar (a median, which a bar from zero would misstate). A slot without a value gets a
    label saying why (``absent(group, precision)`` for a cell with no row at all). Returns
    what was drawn, for the legend:
    ``{"precisions": [...], "intervals": {methods}, "runs": bool}``."""
    groups = groups if groups is not None else list(dict.fromkeys(data["group"]))
    precisions = precisions or present_precisions(data)
    n = len(precisions)
    if annotate and not labels_fit(ax, data[value].dropna().map(annotate), len(groups), n):
        annotate = None
    rows = {(str(r["group"]), str(r["precision"])): r for _, r in data.iterrows()}
    drawn = {"precisions": precisions, "intervals": set(), "runs": False}
    for i, g in enumerate(groups):
        for j, p in enumerate(precisions):
            x = slot_x(i, j, n)
            r = rows.get((g, p))
            if r is None or pd.isna(r[value]):
                label_slot(ax, x, missing_text(r, absent(g, p) if absent and r is None
                                               else NO_RECORD), PALETTE[p])
                continue
            dots = runs.get((g, p), ()) if runs is not None else ()
            _bar(ax, x, r, value, p, n, hatch=g in hatched, interval=interval,
                 annotate=annotate, drawn=drawn, point=point,
                 above=max((float(v) for v in dots), default=-np.inf))
            if run_dots(ax, x, dots, n):
                drawn["runs"] = True
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlim(-0.55, len(groups) - 0.45)
    ax.grid(axis="x", visible=False)
    if len(groups) > 1 and axes_width_in(ax) / len(groups) < 0.55:
        ax.tick_params(axis="x", labelrotation=90)
    ax.margins(y=0.18 if annotate or drawn["intervals"] else 0.08)
    return drawn


INTERVAL_HANDLES = {
    stats.CI: Line2D([], [], color="0.1", marker="_", markersize=4, lw=0.8,
                     label=f"95% CI ({stats.ENOUGH})"),
    stats.RANGE: Line2D([], [], color="0.55", lw=0.8, label=f"range ({stats.RANGE_N})"),
    stats.SPREAD: Line2D([], [], color="0.35", marker="_", markersize=4, lw=0.8,
                         label="median, range"),
    stats.SINGLE: Line2D([], [], ls="none", marker=f"${SINGLE}$", color="0.2", markersize=4,
                         label="single run"),
}


def legend(fig, precisions: list[str], extra: list | None = None, intervals=(),
           runs: bool = False):
    handles = [Patch(facecolor=PALETTE[p], label=p) for p in precisions]
    handles += [INTERVAL_HANDLES[k] for k in (stats.CI, stats.RANGE, stats.SPREAD, stats.SINGLE)
                if k in intervals]
    handles += [RUN_HANDLE] if runs else []
    handles += list(extra or [])
    fitted_legend(fig, handles, borderaxespad=0.2)


def fitted_legend(fig, handles, **kw):
    """A legend under the panels in as many columns as fit the figure's width (measured:
    matplotlib sizes each column by its widest entry)."""
    renderer = fig.canvas.get_renderer()
    for k in range(len(handles), 0, -1):
        leg = fig.legend(handles=handles, loc="outside lower center", ncols=k,
                         handlelength=1.2, columnspacing=0.9, **kw)
        if k == 1 or leg.get_window_extent(renderer).width <= fig.bbox.width - 4:
            return leg
        leg.remove()


class NotDrawn:
    """A figure with nothing to show: not drawn. ``save_as`` writes, in its place, one line
    that says what the figure would have shown and why it has nothing, marked in the file's
    metadata (``render.placeholder``), so that every result set has the same files and the
    report says which are notes."""

    def __init__(self, title: str, reason: str):
        self.title, self.reason = title, reason.rstrip(".")

    def __repr__(self) -> str:
        return f"NotDrawn({self.title!r}: {self.reason!r})"

    def figure(self):
        """The note as a figure: no axes, no frame, only the words."""
        lines = wrapped(f"{self.title} — {placeholder.NOT_DRAWN}: {self.reason}.",
                        ONE_COLUMN_IN - 0.1, 6.5)
        fig = plt.figure(figsize=(ONE_COLUMN_IN, 0.12 + 0.13 * len(lines)))
        fig.text(0.02, 0.5, "\n".join(lines), ha="left", va="center", fontsize=6.5,
                 color="0.25")
        return fig


def figure_of(fig):
    """A figure to look at: ``fig`` itself, or a ``NotDrawn``'s note."""
    return fig.figure() if isinstance(fig, NotDrawn) else fig


def wrapped(text: str, width_in: float, font: float = 6.5) -> list[str]:
    """``text`` broken into lines that fit ``width_in`` at ``font`` pt (~0.55 em a character)."""
    per_line = max(12, int(width_in * 72 / (font * 0.55)))
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= per_line:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def save_as(fig, paths) -> list[Path]:
    """``fig`` written to each of ``paths``, in the format its suffix names, each to a
    temporary name and renamed; reproducible metadata. A ``NotDrawn`` is written as its note,
    marked as not drawn. Closes the figure."""
    meta = {"pdf": {"CreationDate": None, "Creator": "tcbench"},
            "svg": {"Date": None, "Creator": "tcbench"}, "png": {"Software": "tcbench"}}
    if isinstance(fig, NotDrawn):
        for ext, key in placeholder.KEY.items():
            meta[ext] = meta[ext] | {key: placeholder.mark(fig.reason)}
        fig = fig.figure()
    written = []
    for path in map(Path, paths):
        ext = path.suffix.removeprefix(".")
        if ext not in FORMATS:
            raise ValueError(f"{path}: a figure is one of {', '.join(FORMATS)}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.tmp.{ext}")
        fig.savefig(tmp, format=ext, metadata=meta.get(ext))
        tmp.replace(path)
        written.append(path)
    plt.close(fig)
    return written


def save(fig, out_dir: Path, stem: str, formats=FORMATS) -> list[Path]:
    """``fig`` as ``out_dir/stem.<format>``, every format."""
    return save_as(fig, [Path(out_dir) / f"{stem}.{ext}" for ext in formats])
