"""The first screen's figure: the answer of a result set at a glance, as a forest plot. One row
per row of the verdict's answer table (per experiment; per model in a model zoo): its best mode's
ratio to its one baseline with the interval the verdict judges, on a log axis with the same
speed (1×) and the pays-off threshold (``stats.GAIN``) marked, coloured by the claim that
interval allows. The numbers are the answer's own (``reports.answer``, through
``reports.verdict.build``), never recomputed here; beside each row, the same ratio as the
answer table writes it. A row without a ratio (no baseline run, or nothing to judge) says why
in place of its mark. It heads ``summary.md``, ``summary.html`` and so the HTML report.

    python -m tcbench.reports.overview_figure --metrics M.csv --summary S.csv --speedup P.csv \\
        [--interleaved I.csv] [--crossover C.csv] --outputs figures/overview.png ...
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib.ticker

from .. import cli, stats
from .. import vocabulary as V
from ..analysis import claims, runs
from ..render.numbers import ONE_PROCESS_WHAT, runs_note
from ..render.plot import (TWO_COLUMN_IN, Line2D, NotDrawn, fitted_legend, log_ticks, plt,
                           save_as, style, wrapped)
from . import answer
from . import verdict
from .phrases import judged_ratio

TITLE = "the answer per experiment"
# the claims a row can carry, by the group whose colour it is drawn in (Okabe–Ito, safe for
# colour-vision deficiencies; grey for a ratio the rules do not judge)
GROUPS = {"pays off": (stats.PAYS_OFF,), "faster": (stats.FASTER,),
          "equivalent": (stats.EQUIVALENT,), "inconclusive": (stats.INCONCLUSIVE,),
          "slower": (stats.SLOWER, stats.ALL_SLOWER),
          "not judged": (stats.UNJUDGED, *stats.GATES, stats.NO_BASELINE)}
COLOURS = {"pays off": "#009E73", "faster": "#56B4E9", "equivalent": "#0072B2",
           "inconclusive": "#CC79A7", "slower": "#D55E00", "not judged": "#8C8C8C"}
LEGEND = {"pays off": f"pays off (95% CI above {stats.GAIN:.2f}×)",
          "faster": f"faster, not shown to reach {stats.GAIN:.2f}×",
          "equivalent": f"equivalent within ±{stats.MARGIN:.0%}",
          "inconclusive": "inconclusive", "slower": "slower",
          "not judged": "not judged"}
NOTHING = "nothing to judge"
NOTHING_COLOUR = "0.45"
ROW_IN, FRAME_IN = 0.17, 1.05
LABEL_PT = 6.5


def group_of(claim: str) -> str:
    for group, claims in GROUPS.items():
        if claim in claims:
            return group
    raise ValueError(f"claim {claim!r} is in no group of the overview figure; add it to "
                     f"GROUPS ({', '.join(GROUPS)})")


@dataclass(frozen=True)
class Row:
    """One row of the figure: its label, the judged ratio and interval (None where there is
    none), the claim's group, and the ratio as the answer table writes it."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    group: str
    text: str
    # judged across this many runs on different machines (``V.RUNS_MARK``), with this
    # machine's own ratio, drawn hollow beside it; None where the ratio is this machine's
    runs: int | None = None
    own: float | None = None


def _mode(j) -> str:
    return j.row["precision"] + (" + knobs" if j.stem == "gain" else "")


def rows(answers: list[answer.Answer]) -> list[Row]:
    """The figure's rows, in the answer table's order."""
    out = []
    for a in answers:
        j = a.judgement
        if j is None:
            out.append(Row(a.experiment, None, None, None, NOTHING, a.cells[3]))
            continue
        e = j.estimate
        base = "plain fp32" if j.stem == "gain" else j.baseline
        across = e.method == stats.RUNS
        out.append(Row(f"{a.experiment} · {_mode(j)} ÷ {base}", stats.finite(e.value),
                       stats.finite(e.low), stats.finite(e.high), group_of(j.claim),
                       # the table's words for a missing ratio, shorter: the side is narrow
                       judged_ratio(j) if stats.finite(e.value) is not None
                       else f"– (no {j.baseline} run)", e.n if across else None,
                       stats.finite(j.row.get(claims.OWN + j.stem)) if across else None))
    return out


def _limits(rs: list[Row]) -> tuple[float, float]:
    xs = [x for r in rs for x in (r.value, r.low, r.high, r.own) if x is not None and x > 0]
    lo, hi = min([*xs, 1.0]), max([*xs, stats.GAIN])
    return lo / 1.2, hi * 1.2


def _ticks(ax, lo: float, hi: float) -> None:
    """Labelled ticks at 1, 2 and 5 of each decade, more between where the axis spans less
    than about two decades (a span of 0.8–7× would otherwise carry three labels)."""
    decades = math.log10(hi / lo)
    subs = (1.0,) if decades > 4 else (1.0, 2.0, 5.0) if decades > 1.8 else \
        (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(log_ticks)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


def _draw(ax, rs: list[Row]) -> None:
    for y, r in enumerate(rs):
        if r.value is None:
            continue
        colour = COLOURS[r.group]
        if r.low is not None and r.high is not None:
            ax.hlines(y, r.low, r.high, color=colour, lw=1.3, zorder=3)
        ax.scatter([r.value], [y], s=20, color=colour, edgecolor="white", linewidth=0.4,
                   zorder=4)
        if r.own is not None:
            ax.scatter([r.own], [y], s=16, facecolor="none", edgecolor=colour, linewidth=0.8,
                       zorder=5)


LONG_LABEL = 48   # characters of a one-line row label


def figure(answers: list[answer.Answer], title: str | None = None):
    """The figure, or a ``NotDrawn`` where the set has no answer with a ratio."""
    rs = rows(answers)
    if not any(r.value is not None for r in rs):
        return NotDrawn(TITLE, "no experiment has a ratio to its baseline")
    n = len(rs)
    fig, (ax, side) = plt.subplots(
        1, 2, sharey=True, layout="constrained", figsize=(TWO_COLUMN_IN, FRAME_IN + ROW_IN * n),
        gridspec_kw={"width_ratios": [2.2, 1.0], "wspace": 0.0})
    same = dict(color="0.2", lw=0.8, ls="--")
    gain = dict(color="#7a1f1f", lw=0.9, ls=":")
    ax.axvline(1.0, zorder=1.5, **same)
    ax.axvline(stats.GAIN, zorder=1.6, **gain)
    _draw(ax, rs)
    ax.set_xscale("log")
    lo, hi = _limits(rs)
    ax.set_xlim(lo, hi)
    _ticks(ax, lo, hi)
    # a long label (a model named after its experiment) on two smaller lines, so that the plot
    # and the ratios beside it keep their width
    ax.set_yticks(range(n), [r.label if len(r.label) <= LONG_LABEL else
                             r.label.replace(" · ", "\n", 1) for r in rs], fontsize=LABEL_PT)
    for tick in ax.get_yticklabels():
        if "\n" in tick.get_text():
            tick.set(fontsize=LABEL_PT - 1, linespacing=0.95)
    ax.set_ylim(n - 0.5, -0.5)
    ax.grid(axis="y", color="0.93", lw=0.5)
    ax.set_xlabel("throughput ÷ its baseline's (log scale)")
    side.axis("off")
    for y, r in enumerate(rs):
        colour = NOTHING_COLOUR if r.value is None else "0.15"
        side.text(0.03, y, r.text, ha="left", va="center", fontsize=LABEL_PT - 0.5,
                  color=colour, transform=side.get_yaxis_transform())
    head = title or "The answer per experiment: its best mode ÷ its baseline, with the " \
                    "95% interval the verdict judges"
    fig.suptitle("\n".join(wrapped(head, TWO_COLUMN_IN - 0.2, 8)), fontsize=8)
    groups = [g for g in GROUPS if any(r.group == g for r in rs)]
    handles = [Line2D([], [], marker="o", markersize=3.5, color=COLOURS[g], lw=1.3,
                      label=LEGEND[g]) for g in groups]
    across = [r.runs for r in rs if r.runs is not None]
    if across:
        handles.append(Line2D([], [], marker="o", markersize=3.5, color="0.3", lw=0,
                              markerfacecolor="none", label="this machine's own ratio"))
        handles.append(Line2D([], [], lw=0, label=runs_note(across).split(":")[0]))
    if any(V.ONE_PROCESS_MARK in r.text for r in rs):
        handles.append(Line2D([], [], lw=0, label=f"{V.ONE_PROCESS_MARK} {ONE_PROCESS_WHAT}"))
    handles += [Line2D([], [], label="1× (same speed)", **same),
                Line2D([], [], label=f"{stats.GAIN:.2f}× (pays-off threshold)", **gain)]
    fitted_legend(fig, handles, borderaxespad=0.2)
    return fig


def write(metrics: Path | None, summary: Path, speedup: Path, outputs,
          crossover: Path | None = None, interleaved: Path | None = None,
          siblings=()) -> list[Path]:
    for path in map(Path, outputs):
        if path.stem != V.OVERVIEW_FIGURE or path.suffix.removeprefix(".") not in \
                V.FIGURE_FORMATS:
            raise ValueError(f"{path}: the overview figure is named "
                             f"{V.set_figure_name(V.OVERVIEW_FIGURE, '<format>')}, formats "
                             f"{', '.join(V.FIGURE_FORMATS)}")
    v = verdict.read(metrics, summary, speedup, crossover, interleaved, siblings)
    style()
    where = v.title.removeprefix(verdict.TITLE_HEAD)
    return save_as(figure(v.answers, f"{where}: each experiment's best mode ÷ its baseline, "
                                     f"with the 95% interval the verdict judges"), outputs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.overview_figure",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=Path, help="metrics.csv")
    ap.add_argument("--summary", type=Path, required=True)
    ap.add_argument("--speedup", type=Path, required=True)
    ap.add_argument("--crossover", type=Path, help="tables/fp8_crossover.csv, where the set "
                    "has the FP8 crossover study")
    ap.add_argument("--interleaved", type=Path, help="interleaved.csv, where the set has "
                    "interleaved comparisons (a missing file is a set without them)")
    ap.add_argument("--runs", type=Path, nargs="*", default=[], help=runs.SIBLINGS_HELP)
    ap.add_argument("--outputs", type=Path, nargs="+", required=True,
                    help="the figure's files (overview.png, .pdf, .svg)")
    args = ap.parse_args(argv)

    def written():
        write(args.metrics, args.summary, args.speedup, args.outputs, args.crossover,
              args.interleaved, args.runs)

    return cli.main("tcbench.reports.overview_figure", written,
                    (ValueError, KeyError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
