"""Figures of one experiment from its tables (CSV in; PDF, SVG and PNG out), never from
records: one function per figure kind, all in the style of ``render.plot``, each in the
module of its family; this module names them by kind (``KINDS``, ``SET_KINDS``) and is the
command that draws them. No text overlaps other text, leaves the canvas or outruns its axes
(tests/test_figures.py checks every figure).
A figure with nothing to show is not drawn: its files are a note saying why over the
experiment's cells and how many of their runs finished (``render.plot.NotDrawn``,
``render.status``), which the report labels as such.

    python -m tcbench.reports.figures --metrics M.csv --summary S.csv --speedup P.csv \\
        --experiment E --outputs figures/E_throughput.png figures/E_throughput.pdf ...
    python -m tcbench.reports.figures --metrics M.csv [--interleaved I.csv \\
        --interleaved-rounds R.csv] --outputs figures/host_bound.png ...

Each output is named ``vocabulary.figure_name(experiment, kind, format)`` (a figure of one
experiment) or ``vocabulary.set_figure_name(kind, format)`` (a figure of the whole set,
``tcbench.reports.host_figures``); the workflow's rules list them and pass them here. Adding a
figure kind: a function in the module of its family (``speed_figures``: throughput,
speedup; ``cost_figures``: warm-up, memory; ``evidence_figures``: Tensor Cores, attribution),
its entry in ``KINDS`` here and in ``vocabulary.FIGURES`` (which the rule's outputs come
from), and its caption.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from .. import cli
from .. import resultset
from .. import vocabulary as V
from ..render.plot import WIDTHS, NotDrawn, save_as, style
from . import host_figures
# the figure kinds' functions and the rows they are drawn from, named here too for the
# callers that import this module alone
from .cost_figures import fig_memory, fig_warmup
from .evidence_figures import (fig_attribution, fig_tensor_cores, per_run_wait,  # noqa: F401
                               step_parts)
from .figure_cells import (NO_RUNS, NOT_IN_DESIGN, PLANNED, Plan, Runs,  # noqa: F401
                           experiment_rows, groups_of)
from .speed_figures import fig_speedup, fig_throughput, ratio_runs  # noqa: F401

# the figures of one experiment, by kind: which of its tables each is drawn from
KINDS = {"throughput": ("summary", fig_throughput), "speedup": ("speedup", fig_speedup),
         "warmup": ("summary", fig_warmup), "memory": ("summary", fig_memory),
         "attribution": ("metrics", fig_attribution),
         "tensor_cores": ("summary", fig_tensor_cores)}
# the figures of a whole result set, by kind
SET_KINDS = {"host_bound": host_figures.fig_host_bound, "interleaved": host_figures.fig_interleaved}


def frames(metrics: pd.DataFrame, summary: pd.DataFrame, speedup: pd.DataFrame,
           exp: str) -> dict[str, pd.DataFrame]:
    """One experiment's rows of each table, as the figure functions take them."""
    m = metrics[metrics["experiment"] == exp]
    s, sp = summary[summary["experiment"] == exp], speedup[speedup["experiment"] == exp]
    if s.empty or m.empty:
        raise ValueError(f"experiment {exp!r} has no rows in summary.csv")
    return {"metrics": m, "summary": experiment_rows(s), "speedup": experiment_rows(sp)}


def build(metrics, summary, speedup, exp: str, width: str = "auto", kinds=None,
          planned=None, runs: Runs | None = None) -> dict:
    """The figures of one experiment, by kind (not yet saved; a ``NotDrawn`` where there is
    nothing to show); ``planned``: the cells its study planned (``Plan``), where known;
    ``runs``: the set's finished runs (``Runs`` of metrics.csv), made here if not given."""
    f = frames(metrics, summary, speedup, exp)
    plan = Plan(f["metrics"], planned)
    runs = runs or Runs(metrics)
    out = {kind: KINDS[kind][1](f[KINDS[kind][0]], exp, width, plan, runs)
           for kind in kinds or KINDS}
    # a figure with nothing of its kind still shows what the experiment ran
    return {k: fig.with_cells(f["summary"]) if isinstance(fig, NotDrawn) else fig
            for k, fig in out.items()}


def build_set(metrics, interleaved=None, rounds=None, kinds=None) -> dict:
    """The figures of the whole set, by kind (``SET_KINDS``)."""
    tables = {"host_bound": (metrics,), "interleaved": (interleaved, rounds, metrics)}
    return {kind: SET_KINDS[kind](*tables[kind]) for kind in kinds or SET_KINDS}


def outputs_by_kind(exp: str | None, outputs) -> dict[str, list[Path]]:
    """The files to write, by figure kind, from their names (``vocabulary.figure_name`` for
    an experiment's, ``vocabulary.set_figure_name`` for the set's, ``exp`` None)."""
    if exp is None:
        names = {V.set_figure_name(k, ext): k for k in SET_KINDS for ext in V.FIGURE_FORMATS}
        pattern = f"{V.set_figure_name('<kind>', '<format>')}, kinds {', '.join(SET_KINDS)}"
    else:
        names = {V.figure_name(exp, k, ext): k for k in KINDS for ext in V.FIGURE_FORMATS}
        pattern = (f"{V.figure_name(exp, '<kind>', '<format>')}, kinds {', '.join(KINDS)}")
    out: dict[str, list[Path]] = {}
    for path in map(Path, outputs):
        if path.name not in names:
            whose = "the set" if exp is None else repr(exp)
            raise ValueError(f"{path}: not a figure of {whose}; a figure is named {pattern}, "
                             f"formats {', '.join(V.FIGURE_FORMATS)}")
        out.setdefault(names[path.name], []).append(path)
    return out


# the interleaved comparison's tables beside metrics.csv (the aggregate's, where it writes
# them: vocabulary.SET_TABLES names them once it does)
INTERLEAVED_TABLES = {k: V.SET_TABLES.get(k, f"{k}.csv")
                      for k in ("interleaved", "interleaved_rounds")}


def read_set(tables: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """metrics, summary and speedup of a result set's folder (``vocabulary.SET_TABLES``)."""
    return tuple(resultset.read_raw(Path(tables) / V.SET_TABLES[k])
                 for k in ("metrics", "summary", "speedup"))


def read_optional(path: Path | None) -> pd.DataFrame | None:
    return resultset.read_raw(path) if path is not None and Path(path).exists() else None


def render(tables: Path, out_dir: Path, experiments: list[str] | None = None,
           width: str = "auto", formats=V.FIGURE_FORMATS, set_figures: bool = True
           ) -> list[Path]:
    """Every figure of each experiment of a result set's folder into ``out_dir``, named by
    ``vocabulary.figure_name``, and (``set_figures``) the set's own figures."""
    style()
    frames_ = read_set(tables)
    runs = Runs(frames_[0])
    written = []
    for exp in experiments or list(dict.fromkeys(frames_[1]["experiment"])):
        for kind, fig in build(*frames_, exp, width, runs=runs).items():
            written += save_as(fig, [Path(out_dir) / V.figure_name(exp, kind, ext)
                                     for ext in formats])
    if set_figures:
        extra = [read_optional(Path(tables) / INTERLEAVED_TABLES[k])
                 for k in ("interleaved", "interleaved_rounds")]
        for kind, fig in build_set(frames_[0], *extra).items():
            written += save_as(fig, [Path(out_dir) / V.set_figure_name(kind, ext)
                                     for ext in formats])
    return written


def write(metrics: Path, summary: Path, speedup: Path, exp: str, outputs,
          width: str = "auto", planned=None) -> list[Path]:
    wanted = outputs_by_kind(exp, outputs)
    style()
    figs = build(resultset.read_raw(metrics), resultset.read_raw(summary),
                 resultset.read_raw(speedup), exp, width, [k for k in KINDS if k in wanted],
                 planned)
    return [p for kind, fig in figs.items() for p in save_as(fig, wanted[kind])]


def write_set(metrics: Path, outputs, interleaved: Path | None = None,
              rounds: Path | None = None) -> list[Path]:
    wanted = outputs_by_kind(None, outputs)
    style()
    for name, path in (("--interleaved", interleaved), ("--interleaved-rounds", rounds)):
        if path is not None and not Path(path).exists():
            raise FileNotFoundError(f"{name} {path}: no such file")
    figs = build_set(resultset.read_raw(metrics), read_optional(interleaved), read_optional(rounds),
                     [k for k in SET_KINDS if k in wanted])
    return [p for kind, fig in figs.items() for p in save_as(fig, wanted[kind])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.figures", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=Path, required=True, help="metrics.csv")
    for name in ("summary", "speedup"):
        ap.add_argument(f"--{name}", type=Path, help=f"{name}.csv (an experiment's figures)")
    ap.add_argument("--interleaved", type=Path,
                    help="the interleaved comparisons' ratios (the set's figures)")
    ap.add_argument("--interleaved-rounds", type=Path,
                    help="the interleaved comparisons' rounds (the set's figures)")
    ap.add_argument("--experiment",
                    help="the experiment whose figures --outputs are; without it, the set's")
    ap.add_argument("--outputs", type=Path, nargs="+", required=True,
                    help="the figure files to write")
    ap.add_argument("--width", choices=WIDTHS, default="auto",
                    help="one column (3.5 in), two columns (7 in), or by number of bars")
    ap.add_argument("--planned", nargs="*", metavar="CELL",
                    help="the cells the study planned for this experiment (cell names without "
                         "the repeat): a slot with no record then says whether it was planned")
    args = ap.parse_args(argv)

    def written():
        if args.experiment is None:
            write_set(args.metrics, args.outputs, args.interleaved, args.interleaved_rounds)
        elif args.summary is None or args.speedup is None:
            raise ValueError("an experiment's figures need --summary and --speedup")
        else:
            write(args.metrics, args.summary, args.speedup, args.experiment, args.outputs,
                  args.width, args.planned)

    return cli.main("tcbench.reports.figures", written, (ValueError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
