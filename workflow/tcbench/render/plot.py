"""The plotting toolkit every figure shares: seaborn paper context, TrueType (Type 42) fonts
embedded in PDFs, text as paths in SVGs, the number format of ``render.numbers``; figure widths,
the note written for a figure not drawn, and saving. Its parts, each named here too so that a
figure imports one module:

- ``axes``: value axes (one tick format, a log axis where the values span more than
  ``LOG_SPAN``x, its label saying so) and a ratio's lines at 1 and at ``stats.GAIN``;
- ``bars``: grouped bars per (setting, precision) in one fixed colour per precision, each with
  its interval (``tcbench.stats``) and its runs as dots, or a label saying why there is none;
- ``legend``: the legend under the panels, in as many columns as fit.

A figure with nothing to show is not drawn (``NotDrawn``): ``save_as`` writes a note in its
place, marked as such (``render.placeholder``), over the experiment's cells and what became of
their runs where it has them (``render.status``).

Widths follow the two usual paper layouts: one column (3.5 in) for up to ``ONE_COLUMN_SLOTS``
bars, two columns (7 in) beyond.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402,F401
from matplotlib.patches import Patch  # noqa: E402,F401

from .. import vocabulary as V  # noqa: E402
from . import placeholder, status  # noqa: E402
# the parts' tools, named here for the figures that import this module alone
from .axes import (FEW_DECADES, LOG_NOTE, LOG_SPAN, Ticks, axes_width_in,  # noqa: E402,F401
                   log_ticks, ratio_lines, value_axis)
from .bars import (NO_RECORD, PALETTE, REFERENCE_HATCH, RUN_HANDLE, RUN_MARK,  # noqa: E402,F401
                   SINGLE, VALUE_BOX, VALUE_FONT, WHISKERS, grouped_bars, interval_kind,
                   label_slot, labels_fit, missing_text, present_precisions, run_dots,
                   setting_label, slot_width, slot_x)
from .legend import INTERVAL_HANDLES, fitted_legend, legend  # noqa: E402,F401

FORMATS = V.FIGURE_FORMATS
ONE_COLUMN_IN, TWO_COLUMN_IN = 3.5, 7.0

HEIGHT_IN = 2.6

ONE_COLUMN_SLOTS = 10          # more bars than this do not fit 3.5 in legibly

WIDTHS = ("auto", "one", "two")


TITLE_PT = 8
Y_LABELS_IN = 0.45   # a value axis's tick labels and its label, about


def style() -> None:
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update({
        "pdf.fonttype": 42, "ps.fonttype": 42,      # TrueType, embedded: journals reject Type 3
        "svg.fonttype": "path", "svg.hashsalt": "tcbench",  # SVG looks the same everywhere
        "savefig.dpi": 300, "savefig.bbox": "tight", "savefig.pad_inches": 0.03,
        "figure.dpi": 100, "legend.frameon": False, "axes.titlesize": TITLE_PT,
        "axes.labelsize": 7.5, "xtick.labelsize": 6.5, "ytick.labelsize": 6.5,
        "legend.fontsize": 6.5, "hatch.linewidth": 0.6, "axes.axisbelow": True,
    })


def figure_width(slots: int, width: str = "auto") -> float:
    if width not in WIDTHS:
        raise ValueError(f"width={width!r}: choose one of {', '.join(WIDTHS)}")
    if width == "auto":
        width = "one" if slots <= ONE_COLUMN_SLOTS else "two"
    return ONE_COLUMN_IN if width == "one" else TWO_COLUMN_IN


def new_figure(slots: int, width: str = "auto", height: float = HEIGHT_IN, **kw):
    return plt.subplots(figsize=(figure_width(slots, width), height), layout="constrained", **kw)


class NotDrawn:
    """A figure with nothing to show: not drawn. ``save_as`` writes, in its place, a note
    that says what the figure would have shown and why it has nothing, marked in the file's
    metadata (``render.placeholder``), so that every result set has the same files and the
    report says which are notes. With ``cells`` (an experiment's summary rows) the note heads
    what there is: each cell and how many of its runs finished (``render.status``)."""

    def __init__(self, title: str, reason: str, cells=None):
        self.title, self.reason = title, reason.rstrip(".")
        self.cells = cells if cells is not None and len(cells) else None

    def __repr__(self) -> str:
        return f"NotDrawn({self.title!r}: {self.reason!r})"

    def with_cells(self, cells) -> "NotDrawn":
        return NotDrawn(self.title, self.reason, cells)

    def figure(self):
        """The note as a figure: above the cells' grid where there are cells, else alone
        (no axes, no frame, only the words)."""
        text = f"{self.title} — {placeholder.NOT_DRAWN}: {self.reason}."
        if self.cells is not None:
            width = status.width_in(self.cells, ONE_COLUMN_IN, TWO_COLUMN_IN)
            return status.figure(wrapped(text, width - 0.1, 6.5), self.cells, width)
        lines = wrapped(text, ONE_COLUMN_IN - 0.1, 6.5)
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


def set_title(ax, text: str) -> None:
    """The axes' title in lines that fit its figure: an experiment's name can be long, and a
    one-column figure is narrow."""
    # centred over the axes, which the layout later moves right of the y-axis labels: the
    # room is the figure's width less those labels' on both sides
    room = ax.figure.get_size_inches()[0] - 2 * Y_LABELS_IN
    ax.set_title("\n".join(wrapped(text, room, TITLE_PT)))


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
