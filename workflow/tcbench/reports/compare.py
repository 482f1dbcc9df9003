"""Cross-GPU comparison: result sets (``results/<run>/metrics.csv``) and published reference
sets (``config/reference/*.csv``, read by ``tcbench.references``) pooled as one
(``analysis.crossgpu``), per-experiment tables (Markdown, LaTeX, HTML), the seed-reproduction
table, and figures (``reports.compare_figures``).

    python -m tcbench.reports.compare --metrics results/nvidia-h200/metrics.csv \\
        --references config/reference/seed_t4.csv --out results/compare

Only the tables of a result set are read, never its records, so a comparison builds from
committed results alone. Every set is pooled by the same statistics core as a single result
set, so a cell means the same thing here as in the set's own tables.

Which number is compared: the steady-state throughput (the headline) where every set of an
experiment has it; the seed's total time (warm-up included, labelled as the seed's metric)
where a published reference has only that. A mode a set's device cannot run (a T4 has no TF32
or bf16) is "unsupported", not "not run"; where sets trained on different data, the table and
figures say so. Reference rows are marked everywhere: a double dagger after the set's name, hatched
bars in the figures. The files inside ``--out`` are named by ``vocabulary.COMPARE_FILES``,
``table_name`` and ``figure_name``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from .. import atomic, cli
from .. import vocabulary as V
from ..analysis.crossgpu import metric_of, pool, ratio_columns
from ..references import DAGGER, CompareError, combine, load_reference, load_run
from ..render import plot
from ..render.numbers import INTERVAL_NOTE, MISSING, memory, memory_unit, missing, num, times, \
    with_interval
from ..render.settings import setting_text, shown_axes
from ..render.table import Table, to_html, to_latex, to_latex_all, to_markdown
from .compare_figures import KINDS, fig_metric, fig_overview
from .phrases import NOISY_NOTE, noisy_text, throughput_text

def data_note(c: pd.DataFrame) -> str | None:
    data = c.dropna(subset=["data"]).drop_duplicates("label")
    if data["data"].nunique() <= 1:
        return None
    return ("The sets trained on different data: " + ", ".join(
        f"{r['label']} on {r['data']}" for _, r in data.iterrows())
        + " (the same shapes and input pipeline; accuracy is not compared).")


def experiment_table(c: pd.DataFrame, experiment: str) -> Table:
    c = c[c["experiment"] == experiment]
    metric = metric_of(c)
    stem = ratio_columns(metric)
    m = V.metric(metric)
    axes = shown_axes(c)
    unit, div = memory_unit(pd.to_numeric(c["max_memory_allocated_bytes"]).max())
    cols = ["set", "setting", "precision", "n", f"{m.short} ({m.unit})", "× fp32",
            f"peak memory ({unit})", "memory × fp32", "status"]
    rows = []
    for _, r in c.iterrows():
        # a finished cell's missing ratio: no fp32 cell of its set at its setting
        miss = "no fp32" if r["repeats_ok"] else MISSING
        mem = r.get("max_memory_allocated_bytes")
        unmeasured = (V.CPU_UNMEASURED if r.get("kind") == "measured"
                      and missing(r.get("compute_capability")) else "not measured")

        def v(text, why=miss):
            return why if text == MISSING else text
        rows.append([r["label"], setting_text(r, axes), str(r["precision"]),
                     f"{int(r['repeats_ok'])}/{int(r['repeats'])}",
                     v(with_interval(r.get(metric), r.get(f"{metric}_low"),
                                       r.get(f"{metric}_high"), r.get(f"{metric}_n"))),
                     "1×" if str(r["precision"]) == V.BASELINE and r["repeats_ok"] else
                     v(with_interval(r.get(stem), r.get(f"{stem}_low"), r.get(f"{stem}_high"),
                                       r.get(f"{stem}_n"), fmt=times)),
                     (num(float(mem) / div) if not missing(mem) else
                      unmeasured if r["repeats_ok"] else MISSING),
                     v(times(r.get("memory_ratio")),
                       unmeasured if missing(mem) and r["repeats_ok"] else miss),
                     str(r["status"])])
    notes = [f"Compared on {m.label}: {m.definition}. × fp32 is its ratio to strict fp32 in the "
             f"same set at the same setting; memory is torch.cuda.max_memory_allocated.",
             INTERVAL_NOTE]
    for _, r in c[c["kind"] == "reference"].drop_duplicates("label").iterrows():
        src = f"{DAGGER} {r['label'].removesuffix(' ' + DAGGER)}: published numbers, {r['source']}"
        if isinstance(r.get("source_url"), str):
            src += f" <{r['source_url']}>"
        if isinstance(r.get("notes"), str):
            src += f"; {r['notes']}"
        notes.append(src)
    if (note := data_note(c)) is not None:
        notes.append(note)
    for _, r in c[c["status"] == V.UNSUPPORTED].drop_duplicates(["label", "status_reason"]
                                                                ).iterrows():
        notes.append(f"{r['label']}: {r['status_reason']}")
    sets = list(dict.fromkeys(c["label"]))
    where = "across GPUs" if len(sets) > 1 else f"on {sets[0]}"
    return Table(f"{experiment}: {where}", cols, rows,
                   align="llll" + "r" * (len(cols) - 5) + "l", notes=notes,
                   label=f"tab:compare:{experiment}")


def _speed(row) -> str:
    """A measured cell's throughput, its unsteady windows and its noise said with it, as the
    verdict says them (a finding on an unsteady, ±25% cell is no finding)."""
    noisy = noisy_text(row)
    return throughput_text(row) + (f", {noisy}" if noisy else "")


def seed_table(c: pd.DataFrame) -> Table | None:
    """The seed's runs, row by row: each published cell beside the same cell measured here,
    in the seed's own metric (total time, warm-up included) and memory, with the steady-state
    throughput that every other tcbench table compares beside it; then the cells measured here
    that the seed did not run."""
    ref = c[(c["kind"] == "reference") & (c["repeats_ok"] > 0)]
    if ref.empty:
        return None
    label = ref["label"].iloc[0]
    measured = c[c["kind"] == "measured"]
    rows = []
    for exp in dict.fromkeys(ref["experiment"]):
        e = measured[measured["experiment"] == exp]
        axes = [a for a in shown_axes(c[c["experiment"] == exp]) if a != "model"]
        r_exp = ref[ref["experiment"] == exp]
        keys = lambda r: tuple(str(r[k]) for k in (*V.SETTING_KEYS, "precision"))  # noqa: E731
        published = {keys(r): r for _, r in r_exp.iterrows()}
        order = [*published, *(k for k in map(keys, (r for _, r in e.iterrows()))
                                if k not in published)]
        here = {keys(r): r for _, r in e.iterrows()}
        for k in dict.fromkeys(order):
            t4, h = published.get(k), here.get(k)
            row = h if h is not None else t4
            rows.append([
                exp, f"{row['precision']}, {setting_text(row, axes)}",
                f"{num(t4[V.SEED_METRIC])} s, {memory(t4['max_memory_allocated_bytes'], 'MiB')}"
                if t4 is not None else "not run by the seed",
                *([with_interval(h.get(V.SEED_METRIC), h.get(f"{V.SEED_METRIC}_low"),
                                   h.get(f"{V.SEED_METRIC}_high"), h.get(f"{V.SEED_METRIC}_n")),
                   memory(h.get("max_memory_allocated_bytes"), "MiB"), _speed(h)]
                  if h is not None and h["repeats_ok"] else [MISSING] * 3)])
    here_label = measured["label"].iloc[0] if len(measured) else "measured"
    seed, head = V.metric(V.SEED_METRIC), V.metric(V.HEADLINE)
    notes = [f"Time is the {seed.label}: {seed.definition}; memory is "
             f"torch.cuda.max_memory_allocated. The {head.label} (samples/s) is what every "
             f"other tcbench table compares.", INTERVAL_NOTE]
    notes += [NOISY_NOTE] if any("noisy (" in r[-1] for r in rows) else []
    if (note := data_note(c[c["experiment"].isin(set(ref["experiment"]))])) is not None:
        notes.append(note)
    return Table("The seed's runs, row by row",
                   ["experiment", "run", f"{label}: time, memory", f"{here_label}: time (s)",
                    "memory", "samples/s"], rows, align="lllrrr", notes=notes,
                   label="tab:compare:seed")


def pooled(metrics: list[Path], references: list[Path],
           experiments: list[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Every set read, checked and pooled; the experiments asked for (all by default)."""
    if not metrics and not references:
        raise CompareError("nothing to compare: give result sets and/or references")
    runs = [load_run(p) for p in metrics]
    refs = [load_reference(p) for p in references]
    c = pool(combine(runs, refs))
    have = list(dict.fromkeys(c["experiment"]))
    experiments = experiments or have
    absent = [e for e in experiments if e not in have]
    if absent:
        raise CompareError(f"experiment(s) {', '.join(absent)} in no compared set; the sets "
                           f"have {', '.join(have)}")
    skipped = [e for e in have if e not in experiments]
    if skipped:
        print(f"tcbench.reports.compare: not compared (not asked for): {', '.join(skipped)}",
              file=sys.stderr)
    return c[c["experiment"].isin(experiments)], experiments


def write_tables(c: pd.DataFrame, experiments: list[str], out_dir: Path) -> list[Path]:
    files = {k: out_dir / name for k, name in V.COMPARE_FILES.items()}
    written = [atomic.write_text(files["csv"], c.drop(columns=["set_order"]).to_csv(index=False))]
    built = []
    render = {"md": to_markdown, "tex": to_latex, "html": to_html}
    for exp in experiments:
        t = experiment_table(c, exp)
        built.append(t)
        for ext in V.TABLE_FORMATS:
            written.append(atomic.write_text(out_dir / "tables" / V.table_name(exp, ext),
                                             render[ext](t)))
    seed = seed_table(c)
    written.append(atomic.write_text(files["seed"], to_markdown(seed, "##") if seed
                                     else "No published reference was compared.\n"))
    written.append(atomic.write_text(files["md"],
                                     "".join(to_markdown(t, "##") + "\n" for t in built)))
    written.append(atomic.write_text(files["tex"], to_latex_all(built)))
    return written


def write_figures(c: pd.DataFrame, experiments: list[str], out_dir: Path, width: str = "auto",
                  formats=plot.FORMATS) -> list[Path]:
    plot.style()
    figures = out_dir / "figures"
    written = []
    for exp in experiments:
        for kind in KINDS:
            written += plot.save_as(fig_metric(c, exp, kind, width),
                                    [figures / V.figure_name(exp, kind, ext) for ext in formats])
    overview = [figures / f"{V.COMPARE_OVERVIEW}.{ext}" for ext in formats]
    return written + plot.save_as(fig_overview(c), overview)


def compare(metrics: list[Path], references: list[Path], out_dir: Path,
            experiments: list[str] | None = None, width: str = "auto",
            formats=plot.FORMATS) -> list[Path]:
    c, experiments = pooled(metrics, references, experiments)
    out_dir = Path(out_dir)
    return write_tables(c, experiments, out_dir) + write_figures(c, experiments, out_dir,
                                                                 width, formats)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.compare", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=Path, nargs="*", default=[],
                    help="metrics.csv of each result set")
    ap.add_argument("--references", type=Path, nargs="*", default=[],
                    help="published reference sets (CSV, see module doc)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--experiments", nargs="*")
    ap.add_argument("--width", choices=plot.WIDTHS, default="auto")
    args = ap.parse_args(argv)

    def write():
        compare(args.metrics, args.references, args.out, args.experiments, args.width)

    return cli.main("tcbench.reports.compare", write, (CompareError,))


if __name__ == "__main__":
    sys.exit(main())
