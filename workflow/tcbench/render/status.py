"""What an experiment ran, for a figure that has nothing of its own kind to show
(``plot.NotDrawn`` with its cells): why it is not drawn, over a grid of the experiment's cells
(setting by precision), each a swatch in its precision's colour with how many of its runs
finished and, where some did not, their status. A reader who opens the file sees what there is
(zoo_timm's speedup: two fp32 runs and nothing to set them against), not a page of text.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .. import vocabulary as V
from .bars import PALETTE, washed
from .settings import setting_text, shown_axes

ROW_IN, NOTE_PT, CELL_PT = 0.27, 6.5, 6.0
COLUMN_IN = 0.95      # a column: a swatch and "12 of 12 finished" at CELL_PT


def cell_text(row) -> str:
    """A cell's runs: "2 of 2 finished", and under it the cell's status where it is not
    ok."""
    ok, planned = (pd.to_numeric(row.get(c), errors="coerce") for c in ("repeats_ok", "repeats"))
    text = "no run finished" if pd.isna(ok) or ok == 0 else (
        f"{int(ok)} of {int(planned)} finished" if pd.notna(planned) else f"{int(ok)} finished")
    status = str(row.get("status") or V.OK)
    return text if status == V.OK else f"{text}\n{status}"


def grid(cells: pd.DataFrame) -> tuple[list[str], list[str], dict[tuple[str, str], object]]:
    """The settings (rows), the precisions (columns, in the vocabulary's order) and each
    (setting, precision) cell's row."""
    axes = shown_axes(cells)
    settings, rows = [], {}
    for _, r in cells.iterrows():
        s = setting_text(r, axes)
        settings += [s] if s not in settings else []
        rows[(s, str(r["precision"]))] = r
    precisions = [p for p in V.PRECISIONS if any(k[1] == p for k in rows)]
    return settings, precisions, rows


def label_width_in(settings: list[str]) -> float:
    return 0.055 * max(len(s) for s in settings) + 0.12


def width_in(cells: pd.DataFrame, least: float, most: float) -> float:
    """The grid's width: its settings' labels and a column a precision, within bounds."""
    settings, precisions, _ = grid(cells)
    return min(max(least, label_width_in(settings) + COLUMN_IN * len(precisions)), most)


def figure(note_lines: list[str], cells: pd.DataFrame, width_in: float):
    """The note (``note_lines``, already wrapped to ``width_in``) over the grid of ``cells``
    (one experiment's summary rows)."""
    settings, precisions, rows = grid(cells)
    label_in = min(0.45 * width_in, label_width_in(settings))
    col_in = (width_in - label_in) / max(len(precisions), 1)
    note_in = 0.115 * len(note_lines) + 0.08
    height = note_in + ROW_IN * (len(settings) + 1) + 0.05
    fig = plt.figure(figsize=(width_in, height))
    fig.text(0.01, 1 - 0.05 / height, "\n".join(note_lines), ha="left", va="top",
             fontsize=NOTE_PT, color="0.25")

    def y(i: int) -> float:          # row i's centre; the header is row -1
        return 1 - (note_in + ROW_IN * (i + 1.5)) / height

    for j, p in enumerate(precisions):
        x = (label_in + col_in * j + 0.06) / width_in
        fig.text(x, y(-1), p, ha="left", va="center", fontsize=CELL_PT, weight="bold")
        for i, s in enumerate(settings):
            r = rows.get((s, p))
            if r is None:
                fig.text(x, y(i), "not run", ha="left", va="center", fontsize=CELL_PT,
                         color="0.45")
                continue
            ran = (pd.to_numeric(r.get("repeats_ok"), errors="coerce") or 0) > 0
            swatch = plt.Rectangle((x, y(i) - 0.35 * ROW_IN / height), 0.1 / width_in,
                                   0.7 * ROW_IN / height, transform=fig.transFigure,
                                   color=PALETTE[p] if ran else washed(PALETTE[p]))
            fig.add_artist(swatch)
            fig.text((label_in + col_in * j + 0.2) / width_in, y(i), cell_text(r),
                     ha="left", va="center", fontsize=CELL_PT, color="0.15")
    for i, s in enumerate(settings):
        fig.text(0.01, y(i), s, ha="left", va="center", fontsize=CELL_PT, color="0.15")
    return fig
