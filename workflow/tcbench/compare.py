"""Cross-GPU comparison: result sets (``results/<run>/metrics.csv``) and published reference
sets (``config/reference/*.csv``) combined into one long table, per-experiment tables
(Markdown, LaTeX, HTML) and figures (time, speedup over fp32, peak memory per precision per
GPU, and one overview figure).

    python -m tcbench.compare --metrics results/nvidia-h200/metrics.csv \
        --references config/reference/seed_t4.csv --out results/compare

Only the tables of a result set are read, never its records, so a comparison builds from
committed results alone. Cells are matched on experiment, batch size, loader, memory format
and compile mode; a cell one set has and another lacks is drawn as "not run", never dropped.
Rows from references are marked everywhere: "reference" in the tables' source column, a
dagger after the GPU's name, hatched bars in the figures.

A reference CSV has one row per run (or per repeat) with the columns ``REQUIRED`` (and any of
``OPTIONAL``): what was run, in tcbench's terms, what it measured, and where it was published.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import atomic
from . import figures as F
from . import tables as T
from . import vocabulary as V
from .aggregate import bootstrap_ci, fill_axes
from .vocabulary import STATUS_RANK

REQUIRED = ["run", "experiment", "workload", "precision", "batch_size", "loader", "status",
            "total_time_s", "max_memory_allocated_bytes", "device_name", "source"]
OPTIONAL = ["repeat", "memory_format", "compile", "cuda_graphs", "data", "status_reason", "label",
            "throughput_samples_per_s", "torch_version", "driver_version",
            "cuda_runtime_version", "source_url", "source_file", "notes"]
KEEP = ["run", "experiment", "workload", "precision", *V.SETTING_KEYS, "data", "repeat", "status",
        "status_reason", "total_time_s",
        "max_memory_allocated_bytes", "throughput_samples_per_s", "device_name",
        "torch_version", "driver_version", "cuda_runtime_version"]
SET_KEYS = ["kind", "run", "label"]
SETTING = list(V.SETTING_KEYS)
CELL = ["experiment", *SETTING, "precision"]
DAGGER = "†"
TWO_COLUMN = F.TWO_COLUMN_IN


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
    df = df[[c for c in KEEP if c in df]].copy()
    df = fill_axes(df)  # result sets from before an axis existed
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
    df["repeat"] = df["repeat"].fillna(1) if "repeat" in df else 1
    df = fill_axes(df)
    for i, r in df.iterrows():
        where = (f"{path}, data row {i + 1} ({r['experiment']}, {r['precision']}, "
                 f"batch {r['batch_size']})")
        if r["precision"] not in F.PRECISIONS:
            raise CompareError(f"{where}: precision={r['precision']!r}; choose one of "
                               f"{', '.join(F.PRECISIONS)}")
        if r["status"] not in STATUS_RANK:
            raise CompareError(f"{where}: status={r['status']!r}; choose one of "
                               f"{', '.join(STATUS_RANK)}")
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
    df["kind"] = "reference"
    if "label" not in df:
        df["label"] = df["device_name"].map(short_name)
    df["label"] = df["label"].fillna(df["device_name"].map(short_name)).astype(str) + " " + DAGGER
    return df


def combine(runs: list[pd.DataFrame], references: list[pd.DataFrame]) -> pd.DataFrame:
    """All rows, references first (they came first in time), labels made unique."""
    df = pd.concat([*references, *runs], ignore_index=True)
    for col in V.AXIS_NAMES:
        df[col] = df[col].astype(str)
    labels = df.drop_duplicates(["kind", "run"])[["kind", "run", "label"]]
    dup = labels["label"].duplicated(keep=False)
    fixed = {(k, r): f"{lab} ({r})" if d else lab
             for (k, r, lab), d in zip(labels.itertuples(index=False), dup)}
    df["label"] = [fixed[(k, r)] for k, r in zip(df["kind"], df["run"])]
    df["set_order"] = df["label"].map({lab: i for i, lab in enumerate(dict.fromkeys(df["label"]))})
    return df


# -------------------------------------------------------------------------------- statistics
def cells(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (set, cell): medians over repeats with status ok, a 95% bootstrap interval of
    the median time where there are repeats, and speedup and memory against fp32 of the same
    set at the same setting."""
    rows = []
    for key, g in df.groupby(["set_order", *SET_KEYS, *CELL], sort=True, dropna=False):
        row = dict(zip(["set_order", *SET_KEYS, *CELL], key))
        ok = g[g["status"] == "ok"]
        t = pd.to_numeric(ok["total_time_s"], errors="coerce").dropna()
        mem = pd.to_numeric(ok["max_memory_allocated_bytes"], errors="coerce").dropna()
        lo, hi = bootstrap_ci(t.to_numpy())
        row |= {"repeats": len(g), "repeats_ok": len(ok),
                "status": "ok" if len(ok) == len(g) else max(g["status"], key=STATUS_RANK.get),
                "status_reason": "; ".join(sorted(set(g["status_reason"].dropna().astype(str))))
                or None,
                "total_time_s": t.median() if len(t) else np.nan,
                "total_time_s_ci_low": lo, "total_time_s_ci_high": hi,
                "max_memory_allocated_bytes": mem.median() if len(mem) else np.nan,
                "device_name": g["device_name"].iloc[0], "workload": g["workload"].iloc[0],
                "data": g["data"].iloc[0] if "data" in g else None,
                "source": g["source"].iloc[0],
                "source_url": g["source_url"].iloc[0] if "source_url" in g else None,
                "notes": g["notes"].iloc[0] if "notes" in g else None,
                "torch_version": g["torch_version"].iloc[0] if "torch_version" in g else None}
        rows.append(row)
    out = pd.DataFrame(rows)
    base = out[out["precision"] == "fp32"].set_index(["label", "experiment", *SETTING])
    fp32_t, fp32_m = [], []
    for _, r in out.iterrows():
        k = (r["label"], r["experiment"], *(r[s] for s in SETTING))
        b = base.loc[k] if k in base.index else None
        fp32_t.append(b["total_time_s"] if b is not None else np.nan)
        fp32_m.append(b["max_memory_allocated_bytes"] if b is not None else np.nan)
    out["fp32_total_time_s"] = fp32_t
    out["fp32_max_memory_allocated_bytes"] = fp32_m
    out["speedup_total_time"] = out["fp32_total_time_s"] / out["total_time_s"]
    out["memory_ratio"] = out["max_memory_allocated_bytes"] / out["fp32_max_memory_allocated_bytes"]
    out["precision_order"] = out["precision"].map({p: i for i, p in enumerate(F.PRECISIONS)})
    return out.sort_values(["experiment", "batch_size", "loader", "memory_format", "compile",
                            "set_order", "precision_order"]).reset_index(drop=True)


# ------------------------------------------------------------------------------------ tables
def experiment_table(c: pd.DataFrame, experiment: str) -> T.Table:
    c = c[c["experiment"] == experiment]
    axes = T.varying_axes(c)
    repeats = c["repeats"].max() > 1
    cols = ["GPU", "setting", "precision", "time (s)"] + (["95% CI"] if repeats else []) + [
        "speedup vs fp32", "peak memory (MiB)", "memory vs fp32", "repeats", "status", "source"]
    rows = []
    for _, r in c.iterrows():
        miss = "n/a" if r["repeats_ok"] else T.MISSING

        def v(text):
            return miss if text == T.MISSING else text
        rows.append([r["label"], T.setting_text(r, axes), r["precision"],
                     v(T.num(r["total_time_s"]))]
                    + ([v(T.interval(r["total_time_s_ci_low"], r["total_time_s_ci_high"]))]
                       if repeats else [])
                    + [v(T.times(r["speedup_total_time"])), v(T.mib(r["max_memory_allocated_bytes"])),
                       v(T.times(r["memory_ratio"])), f"{int(r['repeats_ok'])}/{int(r['repeats'])}",
                       T.status_text(r), r["kind"]])
    notes = ["Medians over the repeats that finished; speedup is fp32 time / this time within "
             "the same GPU's set at the same setting; memory is torch.cuda.max_memory_allocated."]
    for _, r in c[c["kind"] == "reference"].drop_duplicates("label").iterrows():
        src = f"{DAGGER} {r['label'].removesuffix(' ' + DAGGER)}: published numbers, {r['source']}"
        if isinstance(r.get("source_url"), str):
            src += f" <{r['source_url']}>"
        if isinstance(r.get("notes"), str):
            src += f"; {r['notes']}"
        notes.append(src)
    data = c.dropna(subset=["data"]).drop_duplicates("label")
    if data["data"].nunique() > 1:
        notes.append("The sets trained on different data: " + ", ".join(
            f"{r['label']} {r['data']}" for _, r in data.iterrows()) + ".")
    return T.Table(f"{experiment}: cross-GPU comparison", cols, rows,
                   align="lll" + "r" * (len(cols) - 6) + "lll", notes=notes,
                   label=f"tab:compare:{experiment}")


# ----------------------------------------------------------------------------------- figures
def _groups(c: pd.DataFrame) -> pd.DataFrame:
    c = c.copy()
    axes = T.varying_axes(c)
    c["group"] = c["label"] + "\n" + c.apply(lambda r: T.setting_text(r, axes), axis=1)
    return c


def _panel(ax, c, value, *, lo=None, hi=None, annotate=None, scale=1.0, log=False,
           empty_note="no measurement"):
    c = c.copy()
    for col in (value, lo, hi):
        if col:
            c[col] = pd.to_numeric(c[col], errors="coerce") * scale
    groups = list(dict.fromkeys(c["group"]))
    hatched = set(c.loc[c["kind"] == "reference", "group"])
    if value == "speedup_total_time":
        c["why_missing"] = np.where((c["repeats_ok"] > 0) & c["fp32_total_time_s"].isna(),
                                    "no fp32 baseline", "")
    empty = F.note_if_empty(ax, c, value, empty_note)
    v = c[value].dropna()
    if log and not empty and len(v) and v.min() > 0 and v.max() / v.min() > 30:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(F.matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    else:
        ax.yaxis.set_major_formatter(F.compact_ticks)
    F.grouped_bars(ax, c, value, groups=groups, lo=lo, hi=hi, hatched=hatched,
                   annotate=None if empty else annotate, precisions=F.present_precisions(c))
    if F.axes_width_in(ax) / max(len(groups), 1) < 0.6:
        ax.tick_params(axis="x", labelsize=5.5)
    return hatched


def _legend(fig, c, hatched):
    extra = [F.Patch(facecolor="0.85", hatch=F.REFERENCE_HATCH, edgecolor="white",
                     label=f"published reference ({DAGGER})")] if hatched else []
    F.legend(fig, F.present_precisions(c), extra)


def fig_metric(c, experiment, kind, width="auto"):
    c = _groups(c[c["experiment"] == experiment])
    slots = c["group"].nunique() * len(F.present_precisions(c))
    fig, ax = F.new_figure(slots, width, height=F.HEIGHT_IN + 0.2)
    if kind == "time":
        hatched = _panel(ax, c, "total_time_s", lo="total_time_s_ci_low",
                         hi="total_time_s_ci_high", log=True)
        ax.set_ylabel("total training time (s)")
        ax.set_title(f"{experiment}: wall time per GPU")
    elif kind == "speedup":
        hatched = _panel(ax, c, "speedup_total_time", annotate=lambda v: f"{v:.2f}")
        ax.axhline(1.0, color="0.3", lw=0.8, ls="--", zorder=0.5)
        ax.set_ylabel("fp32 time / time (×)")
        ax.set_title(f"{experiment}: speedup over fp32 on each GPU")
    elif kind == "memory":
        unit, div = F.memory_unit(c["max_memory_allocated_bytes"].max())
        hatched = _panel(ax, c, "max_memory_allocated_bytes", scale=1 / div,
                         annotate=lambda v: f"{v:.3g}" if unit == "GiB" else f"{v:.0f}",
                         empty_note="not measured (no CUDA device)")
        ax.set_ylabel(f"peak allocated ({unit})")
        ax.set_title(f"{experiment}: peak memory per GPU")
    else:
        raise ValueError(f"unknown comparison figure {kind!r}")
    _legend(fig, c, hatched)
    return fig


def overview_experiments(c: pd.DataFrame) -> list[str]:
    """The experiments more than one set has (the comparison proper); all where none does."""
    n = c.groupby("experiment", sort=False)["label"].nunique()
    shared = [e for e in dict.fromkeys(c["experiment"]) if n[e] > 1]
    return shared or list(dict.fromkeys(c["experiment"]))


def fig_overview(c: pd.DataFrame, width: str = "two"):
    """Speedup over fp32 (left) and peak memory (right) per precision per GPU, one row per
    experiment: the cross-GPU answer on one page width."""
    exps = overview_experiments(c)
    w = TWO_COLUMN if width in ("auto", "two") else F.ONE_COLUMN_IN
    fig, axes = F.plt.subplots(len(exps), 2, figsize=(w, 0.5 + 1.85 * len(exps)),
                               layout="constrained", squeeze=False)
    c = c[c["experiment"].isin(exps)]
    hatched = set()
    for i, exp in enumerate(exps):
        e = _groups(c[c["experiment"] == exp])
        hatched |= _panel(axes[i, 0], e, "speedup_total_time", annotate=lambda v: f"{v:.2f}")
        axes[i, 0].axhline(1.0, color="0.3", lw=0.8, ls="--", zorder=0.5)
        axes[i, 0].set_title(f"{exp}: speedup over fp32")
        axes[i, 0].set_ylabel("fp32 time / time (×)")
        unit, div = F.memory_unit(e["max_memory_allocated_bytes"].max())
        hatched |= _panel(axes[i, 1], e, "max_memory_allocated_bytes", scale=1 / div,
                          annotate=lambda v, u=unit: f"{v:.3g}" if u == "GiB" else f"{v:.0f}",
                          empty_note="not measured (no CUDA device)")
        axes[i, 1].set_title(f"{exp}: peak memory")
        axes[i, 1].set_ylabel(f"peak allocated ({unit})")
    _legend(fig, c, hatched)
    return fig


# ------------------------------------------------------------------------------------ driver
KINDS = ("time", "speedup", "memory")


def compare(metrics: list[Path], references: list[Path], out_dir: Path,
            experiments: list[str] | None = None, width: str = "auto",
            formats=F.FORMATS) -> list[Path]:
    if not metrics and not references:
        raise CompareError("nothing to compare: give result sets and/or references")
    runs = [load_run(p) for p in metrics]
    refs = [load_reference(p) for p in references]
    df = combine(runs, refs)
    c = cells(df)
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
    written = []
    atomic.write_text(out_dir / "comparison.csv",
                      c.drop(columns=["set_order", "precision_order"]).to_csv(index=False))
    written.append(out_dir / "comparison.csv")
    built = []
    for exp in experiments:
        t = experiment_table(c, exp)
        built.append(t)
        written += T.write_table(t, out_dir / "tables" / exp)
    atomic.write_text(out_dir / "comparison.md",
                      "".join(T.to_markdown(t, "##") + "\n" for t in built))
    atomic.write_text(out_dir / "comparison.tex", "\n".join(T.to_latex(t) for t in built))
    written += [out_dir / "comparison.md", out_dir / "comparison.tex"]
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
