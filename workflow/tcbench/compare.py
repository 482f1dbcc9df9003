"""Cross-GPU comparison: result sets (``results/<run>/metrics.csv``) and published reference
sets (``config/reference/*.csv``) combined into one long table, per-experiment tables
(Markdown, LaTeX, HTML), the seed-reproduction table, and figures (speed, speedup over fp32,
peak memory per precision per set, and one overview figure).

    python -m tcbench.compare --metrics results/nvidia-h200/metrics.csv \\
        --references config/reference/seed_t4.csv --out results/compare

Only the tables of a result set are read, never its records, so a comparison builds from
committed results alone. Every set is pooled by the same statistics core as a single result
set (``aggregate.summarise`` and ``aggregate.speedup``, with ``run`` naming the set), so a cell
means the same thing here as in the set's own tables.

Which number is compared: the steady-state throughput (the headline) where every set of an
experiment has it; the seed's total time (warm-up included, labelled as the seed's metric)
where a published reference has only that. A mode a set's device cannot run (a T4 has no TF32
or bf16) is "unsupported", not "not run"; where sets trained on different data, the table and
figures say so. Reference rows are marked everywhere: a dagger after the set's name, hatched
bars in the figures.

A reference CSV has one row per run (or per repeat) with the columns ``REQUIRED`` (and any of
``OPTIONAL``): what was run, in tcbench's terms, what it measured, and where it was published.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import aggregate as A
from . import atomic
from . import figures as F
from . import tables as T
from . import vocabulary as V

REQUIRED = ["run", "experiment", "workload", "precision", "batch_size", "loader", "status",
            "total_time_s", "max_memory_allocated_bytes", "device_name", "source"]
OPTIONAL = ["repeat", "seed", *(a for a in V.AXIS_NAMES if a != "loader"), "data",
            "status_reason", "label", V.HEADLINE, "compute_capability", "torch_version",
            "driver_version", "cuda_runtime_version", "source_url", "source_file", "notes"]
SET_COLUMNS = ["kind", "label", "source", "source_url", "notes", "compute_capability"]
DAGGER = "†"
KINDS = V.COMPARE_FIGURES


class CompareError(ValueError):
    """An input that cannot be compared; the message names the file, and the row or column."""


# ------------------------------------------------------------------------------------ inputs
def short_name(device: str) -> str:
    return str(device).removeprefix("NVIDIA ").strip() or str(device)


def load_run(path: Path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise CompareError(f"{path}: no such result set table (run the study, or commit "
                           f"results/<run>/metrics.csv)")
    df = pd.read_csv(path)
    missing = [c for c in REQUIRED if c not in df and c != "source"]
    if missing:
        raise CompareError(f"{path}: not a tcbench metrics.csv, missing {', '.join(missing)}")
    df = A.fill_axes(df)
    device = df["device_name"].dropna().astype(str)
    df["kind"] = "measured"
    df["source"] = f"measured by tcbench, {path.parent.as_posix()}"
    df["label"] = short_name(device.iloc[0]) if len(device) else str(df["run"].iloc[0])
    df["notes"] = None
    return df


def load_reference(path: Path) -> pd.DataFrame:
    """A published set, checked column by column and row by row before anything is drawn."""
    path = Path(path)
    if not path.exists():
        raise CompareError(f"{path}: reference file not found")
    df = pd.read_csv(path, comment="#", skipinitialspace=True)
    missing = [c for c in REQUIRED if c not in df]
    if missing:
        raise CompareError(f"{path}: missing column(s) {', '.join(missing)}; a reference "
                           f"needs {', '.join(REQUIRED)}")
    unknown = sorted(set(df) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise CompareError(f"{path}: unknown column(s) {', '.join(unknown)}; optional columns "
                           f"are {', '.join(OPTIONAL)}")
    if df.empty:
        raise CompareError(f"{path}: no rows")
    for i, r in df.iterrows():
        where = (f"{path}, data row {i + 1} ({r['experiment']}, {r['precision']}, "
                 f"batch {r['batch_size']})")
        if r["precision"] not in V.PRECISIONS:
            raise CompareError(f"{where}: precision={r['precision']!r}; choose one of "
                               f"{', '.join(V.PRECISIONS)}")
        if r["status"] not in V.STATUS_RANK:
            raise CompareError(f"{where}: status={r['status']!r}; choose one of "
                               f"{', '.join(V.STATUSES)}")
        bs = pd.to_numeric(r["batch_size"], errors="coerce")
        if pd.isna(bs) or bs < 1 or bs != int(bs):
            raise CompareError(f"{where}: batch_size={r['batch_size']!r} is not a positive "
                               f"integer")
        for col in ("total_time_s", "max_memory_allocated_bytes"):
            v = pd.to_numeric(r[col], errors="coerce")
            if not pd.isna(r[col]) and (pd.isna(v) or v <= 0):
                raise CompareError(f"{where}: {col}={r[col]!r} is not a positive number")
        if r["status"] == "ok" and pd.isna(r["total_time_s"]):
            raise CompareError(f"{where}: status ok but no total_time_s")
    df["batch_size"] = df["batch_size"].astype(int)
    df["repeat"] = df["repeat"].fillna(1) if "repeat" in df else 1
    df = A.fill_axes(df)
    df["kind"] = "reference"
    if "label" not in df:
        df["label"] = df["device_name"].map(short_name)
    df["label"] = df["label"].fillna(df["device_name"].map(short_name)).astype(str) + " " + DAGGER
    return df


def combine(runs: list[pd.DataFrame], references: list[pd.DataFrame]) -> pd.DataFrame:
    """All rows, references first (they came first in time); labels made unique."""
    df = pd.concat([*references, *runs], ignore_index=True)
    sets = df.drop_duplicates(["kind", "label", "run"])["run"]
    if sets.duplicated().any():
        raise CompareError(f"two compared sets share the run name {sets[sets.duplicated()].iloc[0]!r}"
                           "; a set's run name must be its own")
    labels = df.drop_duplicates("run")[["run", "label"]]
    dup = labels["label"].duplicated(keep=False)
    fixed = {r: f"{lab} ({r})" if d else lab for (r, lab), d in
             zip(labels.itertuples(index=False), dup)}
    df["label"] = df["run"].map(fixed)
    df["set_order"] = df["run"].map({r: i for i, r in enumerate(dict.fromkeys(df["run"]))})
    return df


# -------------------------------------------------------------------------------- statistics
def _capability(g: pd.DataFrame) -> tuple[int, int] | None:
    cc = pd.to_numeric(g.get("compute_capability"), errors="coerce").dropna() \
        if "compute_capability" in g else pd.Series(dtype=float)
    if not len(cc):
        return None
    major, minor = divmod(round(float(cc.iloc[0]) * 10), 10)
    return int(major), int(minor)


def unsupported_rows(df: pd.DataFrame) -> pd.DataFrame:
    """For every set whose device is known: a row ``unsupported`` (with the reason) for each
    cell another set has, in a mode this device cannot run. A T4 has no TF32 or bf16, and that
    is a property of the GPU, not a gap in the study."""
    keys = ["experiment", *V.SETTING_KEYS, "precision"]
    cells_ = df.drop_duplicates(keys)
    rows = []
    for run, g in df.groupby("run", sort=False):
        cc = _capability(g)
        if cc is None:
            continue
        have = set(map(tuple, g[keys].astype(str).to_numpy()))
        first = g.iloc[0]
        for _, s in cells_[cells_["experiment"].isin(set(g["experiment"]))].iterrows():
            m = V.mode(str(s["precision"]))
            if tuple(str(s[k]) for k in keys) in have or not m.min_capability \
                    or cc >= m.min_capability:
                continue
            rows.append({**{c: first.get(c) for c in ("run", "kind", "label", "source",
                                                       "device_name", "set_order")},
                         **{k: s[k] for k in ("experiment", "workload", "data",
                                              *V.SETTING_KEYS)},
                         "precision": m.name, "repeat": 1, "status": "unsupported",
                         "status_reason": f"{m.name} needs compute capability "
                                          f">= {m.min_capability[0]}.{m.min_capability[1]}; "
                                          f"{first['device_name']} is {cc[0]}.{cc[1]}"})
    return pd.DataFrame(rows)


def cells(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (set, cell), pooled exactly as a result set's own summary and speedup
    tables are (``run`` names the set), with the set's label, kind and source attached."""
    extra = unsupported_rows(df)
    if len(extra):
        df = pd.concat([df, extra], ignore_index=True)
    df = A.order(df)
    summary = A.summarise(df)
    ratios = A.speedup(df, summary)
    keys = list(V.CELL_KEYS)
    out = summary.merge(ratios[[c for c in ratios if c not in summary or c in keys]],
                        on=keys, how="left")
    sets = df.drop_duplicates("run").set_index("run")
    for col in (*SET_COLUMNS, "set_order"):
        out[col] = out["run"].map(sets[col]) if col in sets else None
    out = A.order(out)
    return out.sort_values(["experiment", *V.SETTING_KEYS, "set_order", "precision"]
                           ).reset_index(drop=True)


def metric_of(c: pd.DataFrame) -> str:
    """The number an experiment's sets are compared on: the headline where every set has
    it, else the seed's total time (a published reference with no step timing)."""
    have = c.groupby("run")[V.HEADLINE].apply(lambda v: v.notna().any())
    return V.HEADLINE if have.all() else V.SEED_METRIC


def ratio_columns(metric: str) -> str:
    """The ratio to fp32 that goes with a compared metric (speedup.csv's column stem)."""
    return "speedup" if metric == V.HEADLINE else "seed_speedup"


def data_note(c: pd.DataFrame) -> str | None:
    data = c.dropna(subset=["data"]).drop_duplicates("label")
    if data["data"].nunique() <= 1:
        return None
    return ("The sets trained on different data: " + ", ".join(
        f"{r['label']} on {r['data']}" for _, r in data.iterrows())
        + " (the same shapes and input pipeline; accuracy is not compared).")


# ------------------------------------------------------------------------------------ tables
def experiment_table(c: pd.DataFrame, experiment: str) -> T.Table:
    c = c[c["experiment"] == experiment]
    metric = metric_of(c)
    stem = ratio_columns(metric)
    m = V.metric(metric)
    axes = T.shown_axes(c)
    unit, div = T.memory_unit(pd.to_numeric(c["max_memory_allocated_bytes"]).max())
    cols = ["set", "setting", "precision", "n", f"{m.short} ({m.unit})", "× fp32",
            f"peak memory ({unit})", "memory × fp32", "status"]
    rows = []
    for _, r in c.iterrows():
        miss = "n/a" if r["repeats_ok"] else T.MISSING

        def v(text):
            return miss if text == T.MISSING else text
        mem = r.get("max_memory_allocated_bytes")
        rows.append([r["label"], T.setting_text(r, axes), str(r["precision"]),
                     f"{int(r['repeats_ok'])}/{int(r['repeats'])}",
                     v(T.with_interval(r.get(metric), r.get(f"{metric}_low"),
                                       r.get(f"{metric}_high"), r.get(f"{metric}_n"))),
                     "1×" if str(r["precision"]) == V.BASELINE and r["repeats_ok"] else
                     v(T.with_interval(r.get(stem), r.get(f"{stem}_low"), r.get(f"{stem}_high"),
                                       r.get(f"{stem}_n"), fmt=T.times)),
                     v(T.num(float(mem) / div) if not T.missing(mem) else T.MISSING),
                     v(T.times(r.get("memory_ratio"))), str(r["status"])])
    notes = [f"Compared on {m.label}: {m.definition}. × fp32 is its ratio to strict fp32 in the "
             f"same set at the same setting; memory is torch.cuda.max_memory_allocated.",
             T.INTERVAL_NOTE]
    for _, r in c[c["kind"] == "reference"].drop_duplicates("label").iterrows():
        src = f"{DAGGER} {r['label'].removesuffix(' ' + DAGGER)}: published numbers, {r['source']}"
        if isinstance(r.get("source_url"), str):
            src += f" <{r['source_url']}>"
        if isinstance(r.get("notes"), str):
            src += f"; {r['notes']}"
        notes.append(src)
    if (note := data_note(c)) is not None:
        notes.append(note)
    for _, r in c[c["status"] == "unsupported"].drop_duplicates(["label", "status_reason"]
                                                                ).iterrows():
        notes.append(f"{r['label']}: {r['status_reason']}")
    return T.Table(f"{experiment}: across GPUs", cols, rows,
                   align="llll" + "r" * (len(cols) - 5) + "l", notes=notes,
                   label=f"tab:compare:{experiment}")


def seed_table(c: pd.DataFrame) -> T.Table | None:
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
        axes = [a for a in T.shown_axes(c[c["experiment"] == exp]) if a != "model"]
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
                exp, f"{row['precision']}, {T.setting_text(row, axes)}",
                f"{T.num(t4[V.SEED_METRIC])} s, {T.memory(t4['max_memory_allocated_bytes'], 'MiB')}"
                if t4 is not None else "not run by the seed",
                *([T.with_interval(h.get(V.SEED_METRIC), h.get(f"{V.SEED_METRIC}_low"),
                                   h.get(f"{V.SEED_METRIC}_high"), h.get(f"{V.SEED_METRIC}_n")),
                   T.memory(h.get("max_memory_allocated_bytes"), "MiB"),
                   T.with_interval(h.get(V.HEADLINE), h.get(f"{V.HEADLINE}_low"),
                                   h.get(f"{V.HEADLINE}_high"), h.get(f"{V.HEADLINE}_n"))]
                  if h is not None and h["repeats_ok"] else [T.MISSING] * 3)])
    here_label = measured["label"].iloc[0] if len(measured) else "measured"
    seed, head = V.metric(V.SEED_METRIC), V.metric(V.HEADLINE)
    notes = [f"Time is the {seed.label}: {seed.definition}; memory is "
             f"torch.cuda.max_memory_allocated. The {head.label} (samples/s) is what every "
             f"other tcbench table compares.", T.INTERVAL_NOTE]
    if (note := data_note(c[c["experiment"].isin(set(ref["experiment"]))])) is not None:
        notes.append(note)
    return T.Table("The seed's runs, row by row",
                   ["experiment", "run", f"{label}: time, memory", f"{here_label}: time (s)",
                    "memory", "samples/s"], rows, align="lllrrr", notes=notes,
                   label="tab:compare:seed")


# ----------------------------------------------------------------------------------- figures
def _groups(c: pd.DataFrame) -> pd.DataFrame:
    c = c.copy()
    axes = T.shown_axes(c)
    c["group"] = c["label"] + "\n" + c.apply(lambda r: T.setting_text(r, axes, "\n"), axis=1)
    return c


def _panel(ax, c, kind: str):
    """One comparison panel; returns (hatched groups, intervals drawn)."""
    c = c.copy()
    metric = metric_of(c)
    groups = list(dict.fromkeys(c["group"]))
    hatched = set(c.loc[c["kind"] == "reference", "group"])
    if kind == "speed":
        value = interval = metric
        ylabel = f"{V.metric(metric).label} ({V.metric(metric).unit})"
    elif kind == "speedup":
        value = interval = ratio_columns(metric)
        ylabel = "× fp32" + ("" if metric == V.HEADLINE else " (total time)")
        c["why_missing"] = np.where((c["repeats_ok"] > 0) & c[value].isna(), "no fp32", "")
    else:
        unit, div = T.memory_unit(pd.to_numeric(c["max_memory_allocated_bytes"]).max())
        value, interval, ylabel = "max_memory_allocated_bytes", None, f"peak allocated ({unit})"
        c[value] = pd.to_numeric(c[value], errors="coerce") / div
    cols = [value] + ([f"{interval}_low", f"{interval}_high"] if interval else [])
    for col in cols:
        c[col] = pd.to_numeric(c.get(col), errors="coerce")
    if not c[value].notna().any():
        ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes,
                fontsize=7, color="0.25")
        ax.set_axis_off()
        return hatched, set()
    F.value_axis(ax, pd.concat([c[col] for col in cols]))
    drawn = F.grouped_bars(ax, c, value, groups=groups, interval=interval, hatched=hatched,
                           annotate=T.num if kind != "speed" else None,
                           precisions=F.present_precisions(c))
    if kind == "speedup":
        ax.axhline(1.0, color="0.3", lw=0.8, ls="--", zorder=0.5)
    ax.set_ylabel(ylabel)
    return hatched, drawn["intervals"]


def _legend(fig, c, hatched, intervals):
    extra = [F.Patch(facecolor="0.85", hatch=F.REFERENCE_HATCH, edgecolor="white",
                     label=f"published ({DAGGER})")] if hatched else []
    F.legend(fig, F.present_precisions(c), extra, intervals)


def _footnote(fig, c) -> None:
    note = data_note(c)
    if note:
        fig.suptitle(note.split(" (")[0], fontsize=6, color="0.3", y=0.0, va="bottom",
                     wrap=True)


def fig_metric(c, experiment, kind, width="auto"):
    c = _groups(c[c["experiment"] == experiment])
    slots = c["group"].nunique() * len(F.present_precisions(c))
    fig, ax = F.new_figure(slots, width, height=F.HEIGHT_IN + 0.3)
    hatched, intervals = _panel(ax, c, kind)
    sets = c["label"].nunique()
    across = "across GPUs" if sets > 1 else f"on {c['label'].iloc[0]}"
    what = {"speed": V.metric(metric_of(c)).label, "speedup": "speedup over fp32",
            "memory": "peak memory"}[kind]
    ax.set_title(f"{experiment}: {what}, {across}")
    _legend(fig, c, hatched, intervals)
    return fig


def overview_experiments(c: pd.DataFrame) -> list[str]:
    """The experiments more than one set has (the comparison proper); all where none does."""
    n = c.groupby("experiment", sort=False)["label"].nunique()
    shared = [e for e in dict.fromkeys(c["experiment"]) if n[e] > 1]
    return shared or list(dict.fromkeys(c["experiment"]))


def fig_overview(c: pd.DataFrame, width: str = "two"):
    """Speedup over fp32 (left) and peak memory (right) per precision per set, one row per
    experiment: the cross-GPU answer on one page width."""
    exps = overview_experiments(c)
    w = F.TWO_COLUMN_IN if width in ("auto", "two") else F.ONE_COLUMN_IN
    fig, axes = F.plt.subplots(len(exps), 2, figsize=(w, 0.6 + 2.0 * len(exps)),
                               layout="constrained", squeeze=False)
    c = c[c["experiment"].isin(exps)]
    hatched, intervals = set(), set()
    for i, exp in enumerate(exps):
        e = _groups(c[c["experiment"] == exp])
        h, k = _panel(axes[i, 0], e, "speedup")
        hatched |= h
        intervals |= k
        axes[i, 0].set_title(f"{exp}: speedup over fp32")
        h, _ = _panel(axes[i, 1], e, "memory")
        hatched |= h
        axes[i, 1].set_title(f"{exp}: peak memory")
    _legend(fig, c, hatched, intervals)
    return fig


# ------------------------------------------------------------------------------------ driver
def compare(metrics: list[Path], references: list[Path], out_dir: Path,
            experiments: list[str] | None = None, width: str = "auto",
            formats=F.FORMATS) -> list[Path]:
    if not metrics and not references:
        raise CompareError("nothing to compare: give result sets and/or references")
    runs = [load_run(p) for p in metrics]
    refs = [load_reference(p) for p in references]
    c = cells(combine(runs, refs))
    have = list(dict.fromkeys(c["experiment"]))
    experiments = experiments or have
    absent = [e for e in experiments if e not in have]
    if absent:
        raise CompareError(f"experiment(s) {', '.join(absent)} in no compared set; the sets "
                           f"have {', '.join(have)}")
    skipped = [e for e in have if e not in experiments]
    if skipped:
        print(f"tcbench.compare: not compared (not asked for): {', '.join(skipped)}",
              file=sys.stderr)
    c = c[c["experiment"].isin(experiments)]
    out_dir = Path(out_dir)
    written = [atomic.write_text(out_dir / "comparison.csv",
                                 c.drop(columns=["set_order"]).to_csv(index=False))]
    built = []
    for exp in experiments:
        t = experiment_table(c, exp)
        built.append(t)
        stem = out_dir / "tables" / exp
        for ext, text in (("md", T.to_markdown(t)), ("tex", T.to_latex(t)), ("html", T.to_html(t))):
            written.append(atomic.write_text(stem.with_name(f"{exp}.{ext}"), text))
    seed = seed_table(c)
    written.append(atomic.write_text(out_dir / "seed.md", T.to_markdown(seed, "##") if seed
                                     else "No published reference was compared.\n"))
    written.append(atomic.write_text(out_dir / "comparison.md",
                                     "".join(T.to_markdown(t, "##") + "\n" for t in built)))
    written.append(atomic.write_text(out_dir / "comparison.tex",
                                     "\n".join(T.to_latex(t) for t in built)))
    F.style()
    for exp in experiments:
        for kind in KINDS:
            written += F.save(fig_metric(c, exp, kind, width), out_dir / "figures",
                              f"{exp}_{kind}", formats)
    written += F.save(fig_overview(c), out_dir / "figures", "overview", formats)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.compare", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=Path, nargs="*", default=[],
                    help="metrics.csv of each result set")
    ap.add_argument("--references", type=Path, nargs="*", default=[],
                    help="published reference sets (CSV, see module doc)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--experiments", nargs="*")
    ap.add_argument("--width", choices=F.WIDTHS, default="auto")
    args = ap.parse_args(argv)
    try:
        compare(args.metrics, args.references, args.out, args.experiments, args.width)
    except CompareError as exc:
        print(f"tcbench.compare: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
