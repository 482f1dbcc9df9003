"""The FP8 crossover map: measured FP8/bf16 throughput ratio per (width, tokens per step) of the
crossover study (config/fp8_crossover.yaml), beside the prediction from the device's ceilings
and the peak-memory ratio (``analysis.crossover``), and the sentences that say where FP8 starts
to pay (``reports.fp8_findings``). Reads records (their parameters hold the width, which
metrics.csv has no column for). A shape without a finished FP8 run (``unsupported`` on a CPU)
is drawn empty with its status and has no ratio; a calibration without an FP8 roof gives no
prediction, and the files say why. With ``--comparisons`` (the crossover experiments'
interleaved comparisons, tcbench.job.interleave; a folder: every one in it), a shape whose
comparison ran the FP8 mode and amp-bf16 takes its ratio from that comparison (at its level),
and the table (``decided_by``), the sentences and the figure's note say so.

    python -m tcbench.reports.crossover results/nvidia-h200/records \\
        --calibration results/nvidia-h200/calibration.json --out results/nvidia-h200
    python -m tcbench.reports.crossover --records R1.json R2.json ... --calibration C.json \\
        --csv tables/fp8_crossover.csv --md fp8_crossover.md --figures figures/fp8_crossover.png \\
        --comparisons results/nvidia-h200/interleaved
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.collections import LineCollection
from matplotlib.patches import Rectangle

from .. import atomic, cli, resultset
from .. import vocabulary as V
from ..analysis import crossover
from ..analysis import interleaved
from .. import stats
from ..render import plot
from ..render.numbers import missing, num, one_process_note, times, with_interval
from ..render.table import Table
from . import fp8_findings

PAYS = crossover.PAYS
PREFIX = V.CROSSOVER_PREFIX


def _grid(t: pd.DataFrame, column: str) -> pd.DataFrame:
    return t.pivot(index="width", columns="tokens", values=column).sort_index(ascending=False)


def _scale(table: pd.DataFrame) -> dict:
    """One colour scale for measured and predicted ratios, centred on 1 (log-symmetric)."""
    values = table[["ratio", "predicted"]].to_numpy(dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    spread = max(np.abs(np.log2(values)).max() if values.size else 0.0, 0.1)
    return {"cmap": "vlag_r", "vmin": 2 ** -spread, "vmax": 2 ** spread, "center": 1.0}


def _empty_cells(ax, grid: pd.DataFrame, text: pd.DataFrame) -> None:
    """A cell without a number says why (its FP8 status, or no prediction)."""
    for i, width in enumerate(grid.index):
        for j, tokens in enumerate(grid.columns):
            if pd.isna(grid.loc[width, tokens]):
                ax.text(j + 0.5, i + 0.5, str(text.loc[width, tokens]), ha="center",
                        va="center", fontsize=5, color="0.35")


def _why_empty(t: pd.DataFrame, column: str) -> pd.DataFrame:
    """What an empty cell of ``column``'s panel says: no prediction; the FP8 runs' status where
    none finished; for peak memory, that no per-process record has it (a ratio from an
    interleaved comparison alone measures no memory)."""
    if column == "predicted":
        why = np.full(len(t), "no prediction", dtype=object)
    else:
        why = t["statuses"].str.replace(",", "/").to_numpy(dtype=object)
        if column == "memory_ratio":
            why = np.where(t["statuses"].astype(str) == V.OK, "no per-process\nrecord", why)
    return _grid(t.assign(why=why), "why").fillna("not run")   # a shape not run in this mode


def _ratio_text(r, sep: str = " ", fmt=times) -> str:
    """A shape's measured ratio with its interval, as every table prints one."""
    return with_interval(r["ratio"], r.get("ratio_low"), r.get("ratio_high"), r.get("ratio_n"),
                         fmt=fmt, kind=r.get("ratio_interval"), sep=sep)


def _labels(t: pd.DataFrame, grid: pd.DataFrame, column: str) -> pd.DataFrame:
    """The cells' text: the measured ratio with its 95% interval below it; other panels, the
    value."""
    if column != "ratio":
        return grid.apply(lambda c: c.map(lambda v: "" if pd.isna(v) else num(v)))
    cells = {(r["width"], r["tokens"]): r for _, r in t.iterrows()}
    return pd.DataFrame([["" if pd.isna(v) else _ratio_text(cells[(w, k)], "\n", num)
                          for k, v in row.items()] for w, row in grid.iterrows()],
                        index=grid.index, columns=grid.columns)


NOTE_CHARS = 150           # characters of the 6 pt note a line of the 7 in figure holds
BREAK_EVEN = "#E69F00"     # the break-even edges' colour: apart from the boxes' black


def _break_even(ax, grid: pd.DataFrame, style: str) -> None:
    """The break-even as the cell edges between neighbouring shapes on either side of 1.0: the
    axes are categories (the shapes measured), so a line interpolated between them would
    claim a crossover where no shape was run."""
    v = grid.to_numpy(dtype=float)
    ok, above = np.isfinite(v), v >= 1.0
    edges = []
    for i in range(v.shape[0]):
        for j in range(v.shape[1]):
            if j + 1 < v.shape[1] and ok[i, j] and ok[i, j + 1] and above[i, j] != above[i, j + 1]:
                edges.append([(j + 1, i), (j + 1, i + 1)])
            if i + 1 < v.shape[0] and ok[i, j] and ok[i + 1, j] and above[i, j] != above[i + 1, j]:
                edges.append([(j, i + 1), (j + 1, i + 1)])
    if edges:
        # over the boxes of the shapes that pay off, which often share these edges
        ax.add_collection(LineCollection(edges, colors=BREAK_EVEN, linestyles=style, zorder=4,
                                         linewidths=1.8 if style == "--" else 1.3))


def _panel(ax, t: pd.DataFrame, column: str, title: str, kw: dict) -> pd.DataFrame:
    grid = _grid(t, column).astype(float)
    labels = _labels(t, grid, column)
    # the scale once a row: beside the prediction (measured and predicted share it), and
    # beside peak memory
    bar = column != "ratio" and grid.notna().any().any()
    sns.heatmap(grid, ax=ax, annot=labels, fmt="", cbar=bar,
                cbar_kws={"label": "× bf16", "shrink": 0.85} if bar else None,
                linewidths=0.5, annot_kws={"fontsize": 6 if column != "ratio" else 5},
                mask=grid.isna(), **kw)
    _empty_cells(ax, grid, _why_empty(t, column))
    ax.set_title(title + (" (× bf16 throughput)" if column == "ratio" else " (× bf16)"),
                 fontsize=7)
    ax.grid(False)
    ax.set_xlabel("tokens per step")
    if column in ("ratio", "predicted"):
        _break_even(ax, grid, "--")
    return grid


def _mark_paying(ax, t: pd.DataFrame, measured: pd.DataFrame) -> None:
    pays = _grid(t, "pays").reindex_like(measured)
    for i, width in enumerate(measured.index):
        for j, tokens in enumerate(measured.columns):
            if str(pays.loc[width, tokens]) == "True":   # True, not None (undecided)
                ax.add_patch(Rectangle((j, i), 1, 1, fill=False, lw=1.6, ec="k"))


def figure(table: pd.DataFrame):
    """Per FP8 mode a row of three heatmaps over width x tokens: the measured ratio (its
    break-even contour at 1.0, cells whose interval clears 1.10 boxed), the predicted ratio on
    the same colour scale, and the peak-memory ratio. Cells without a number say why."""
    plot.style()
    modes = [m for m in crossover.FP8_MODES if (table["mode"] == m).any()]
    fig, axes = plt.subplots(len(modes), 3, figsize=(7.0, 2.4 * len(modes)), squeeze=False)
    scale = _scale(table)
    for row, mode in zip(axes, modes):
        t = table[table["mode"] == mode]
        measured = _panel(row[0], t, "ratio", f"{mode}: measured", scale)
        predicted = _panel(row[1], t, "predicted", "predicted from the roofs", scale)
        _break_even(row[0], predicted, ":")   # the prediction's break-even over the measurement
        _panel(row[2], t, "memory_ratio", "peak memory", {"cmap": "Greys", "vmin": 0.5,
                                                           "vmax": 1.5})
        row[0].set_ylabel("Linear width")
        for ax in row[1:]:
            ax.set_ylabel("")
        _mark_paying(row[0], t, measured)
    source = _source_note(table)
    note = (f"Orange dashed: break-even (1.0×) between neighbouring shapes; orange dotted, "
            f"over the measured map: the predicted one. One colour scale for measured and "
            f"predicted. Measured cells: the ratio and its 95% CI. Boxed: 95% CI of the "
            f"measured ratio wholly above {times(PAYS)}. Prediction: GEMMs at the calibration's "
            f"roofs plus the bytes the casts and scales move at its copy bandwidth "
            f"(tcbench.analysis.crossover). An empty cell names the FP8 runs' status: no ratio "
            f"without them." + (f" {source}" if source else ""))
    fig.text(0.01, 0.005, note, fontsize=6, wrap=True, va="bottom")
    lines = -(-len(note) // NOTE_CHARS) + 0.5   # the note's lines below the panels, and a gap
    fig.tight_layout(rect=(0, 0.15 * lines / fig.get_figheight(), 1, 1))
    return fig


def _source_note(table: pd.DataFrame) -> str:
    """The figure's word on where the measured ratios come from, where any is interleaved."""
    measured, il = crossover.decided(table)
    if not il:
        return ""
    every = il == measured
    which = "Every measured ratio" if every else f"{il} of {measured} ratios"
    many, one = fp8_findings.level_counts(table)
    how = [*([f"{many} across processes (95% t CI)"] if many else []),
           *([f"{one} in one process ({V.ONE_PROCESS_MARK} block-bootstrap 95% CI over its "
                f"rounds, which cannot see what differs between processes)"] if one else [])]
    return (f"{which}: interleaved, {' and '.join(how)}"
            f"{'' if every else '; the rest: per-process repeats'}.")


def table_of(records: list[dict], calibration: dict | None, where: str = "calibration.json",
             comparisons: list[dict] | None = None) -> pd.DataFrame:
    """The map's table from the crossover experiments' records (``PREFIX*``), with the
    prediction where the calibration has the roofs and, where not, why (``no_prediction``).
    ``comparisons``: interleaved records (``analysis.interleaved.load``); those of the
    crossover's experiments decide the ratios of their shapes (``crossover.ratios``)."""
    records = [r for r in records if r["experiment"].startswith(PREFIX)]
    compared = None if comparisons is None else crossover.compared(
        [c for c in comparisons if c["experiment"].startswith(PREFIX)])
    roofs, why = crossover.roofs_or_reason(calibration, where)
    table = crossover.ratios(crossover.cells(records), roofs, compared)
    if table.empty:
        raise ValueError(f"no pair of {crossover.BASELINE} and FP8 records of the square recipe "
                         f"MLP among the {len(records)} records of experiments {PREFIX}*"
                         + (f", and no interleaved comparison of both among the "
                            f"{len(compared)} of their shapes" if compared is not None else ""))
    return table.assign(no_prediction=why)


def map_table(table: pd.DataFrame) -> Table:
    """The map as a table for readers: per FP8 mode and Linear width, each tokens-a-step
    column's measured ratio over amp-bf16 with its interval and claim, and the prediction."""
    tokens = sorted(int(t) for t in table["tokens"].unique())
    rows = []
    for mode in [m for m in crossover.FP8_MODES if (table["mode"] == m).any()]:
        t = table[table["mode"] == mode]
        for width in sorted(int(w) for w in t["width"].unique()):
            cells = []
            for k in tokens:
                r = t[(t["width"] == width) & (t["tokens"] == k)]
                if r.empty:
                    cells.append("not run")
                    continue
                r = r.iloc[0]
                if missing(r.get("ratio")):
                    measured = str(r["statuses"])
                else:
                    how = "" if str(r.get("decided_by")) == crossover.INTERLEAVED else \
                        ", per process"
                    measured = (f"{_ratio_text(r)}{how}, "
                                f"{stats.CLAIM_SHORT.get(str(r['claim']), r['claim'])}")
                cells.append(measured + ("" if missing(r.get("predicted")) else
                                         f" (predicted {num(r['predicted'])}×)"))
            rows.append([mode, str(width), *cells])
    return Table(f"FP8 against {crossover.BASELINE}, per Linear width and tokens a step",
                 ["FP8 mode", "Linear width", *(f"{k:,} tokens" for k in tokens)], rows,
                 align="lr" + "r" * len(tokens),
                 notes=["Each cell: FP8's throughput ÷ amp-bf16's at that shape, with its 95% "
                        "interval and the claim it allows (pays off: wholly above "
                        f"{times(PAYS)}), and in brackets the ratio predicted from the device's "
                        "calibration (GEMMs at its bf16 and FP8 matmul roofs, casts and scales "
                        "at its copy bandwidth; launch and framework time left out). The ratio: "
                        "from the shape's interleaved comparison (over its independent "
                        "processes: the geometric mean of their medians, t interval across "
                        "them; one process: the median of its per-round ratios, block-bootstrap "
                        "interval), or, marked 'per process', the ratio of the per-process "
                        "repeats' means.",
                        *([one_process_note()] if (table.get("ratio_interval") == stats.PAIRED)
                          .any() else [])])


def sentences(table: pd.DataFrame) -> str:
    source = fp8_findings.sources(table)
    per_mode = [s for m in crossover.FP8_MODES for s in (
        fp8_findings.starts_to_pay(table, m), fp8_findings.where_it_loses(table, m)) if s]
    one = (table.get("ratio_interval") == stats.PAIRED).any()
    return "\n\n".join([*per_mode, fp8_findings.prediction(table), *([source] if source else []),
                        *([one_process_note()] if one else [])]) + "\n"


def write(records, calibration: Path | None, out: Path | None = None, *,
          csv: Path | None = None, md: Path | None = None, figures=None,
          comparisons=None) -> list[Path]:
    """The map's table, sentences and figure. ``records``: a records folder or record files;
    ``out``: a result set's folder (the vocabulary's names in it), or the paths one by one;
    ``comparisons``: interleaved records' files or folders (None: none read)."""
    paths = resultset.find_records(records) if isinstance(records, (str, Path)) \
        else sorted(map(Path, records))
    cal = json.loads(Path(calibration).read_text()) if calibration else None
    compared = None if comparisons is None else interleaved.load(
        sorted(resultset.given_records(comparisons)))
    table = table_of(resultset.load(paths), cal, str(calibration), compared)
    if out is not None:
        csv = csv or Path(out) / V.CROSSOVER_FILES["csv"]
        md = md or Path(out) / V.CROSSOVER_FILES["md"]
        figures = figures or [Path(out) / "figures" / f"{V.CROSSOVER_FIGURE}.{ext}"
                              for ext in V.FIGURE_FORMATS]
    written = []
    if csv is not None:
        written.append(atomic.write_text(csv, table.to_csv(index=False)))
    if md is not None:
        written.append(atomic.write_text(md, sentences(table)))
    if figures:
        written += plot.save_as(figure(table), list(map(Path, figures)))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.crossover", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records_dir", type=Path, nargs="?", help="a result set's records folder")
    ap.add_argument("--records", type=Path, nargs="+", help="record files (instead of a folder)")
    ap.add_argument("--calibration", type=Path)
    ap.add_argument("--out", type=Path, help="the result set's folder: every file, by its name")
    ap.add_argument("--csv", type=Path)
    ap.add_argument("--md", type=Path)
    ap.add_argument("--figures", type=Path, nargs="+", help="the figure's files, one per format")
    ap.add_argument("--comparisons", type=Path, nargs="*",
                    help="the interleaved comparisons' records (tcbench.job.interleave), which "
                         "decide the ratios of their shapes; a folder: every one in it")
    args = ap.parse_args(argv)
    if (args.records_dir is None) == (args.records is None):
        ap.error("give the records folder or --records FILE..., one of the two")
    if args.out is None and not (args.csv or args.md or args.figures):
        ap.error("give --out DIR, or --csv/--md/--figures")

    def written():
        for p in write(args.records_dir or args.records, args.calibration, args.out,
                       csv=args.csv, md=args.md, figures=args.figures,
                       comparisons=args.comparisons):
            print(p)

    return cli.main("tcbench.reports.crossover", written, (ValueError,))


if __name__ == "__main__":
    sys.exit(main())
