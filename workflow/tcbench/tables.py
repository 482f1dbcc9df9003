"""Summary tables for readers: one table per experiment, written as Markdown, LaTeX (booktabs)
and HTML (for the Snakemake report), from ``summary.csv`` and ``speedup.csv`` only.

    python -m tcbench.tables --tables results/nvidia-h200 --out results/nvidia-h200/tables \
        --combined results/nvidia-h200/tables

A table is built once as text cells (numbers already rounded, units in the header) and then
rendered three ways, so the three files always say the same thing. A cell without a number
shows why (the cell's status, or "n/a" where the device does not measure it), and a column
that no cell of the experiment has is dropped with a note under the table saying so.
No templating dependency: the three writers are a few lines each.
"""

from __future__ import annotations

import argparse
import html
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import atomic
from . import vocabulary as V

PRECISION_ORDER = list(V.PRECISIONS)
SETTING_AXES = V.AXIS_NAMES
MISSING = "–"
MIB = 2**20
NA_NOTE = ("n/a: the run finished but has no such number (not measured on this device, or no "
           "fp32 run at that setting to compare with); –: the run did not finish.")


# ------------------------------------------------------------------------------- number format
def _missing(v) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def num(v, digits: int = 3) -> str:
    """``digits`` significant digits, thousands grouped, never scientific notation."""
    if _missing(v):
        return MISSING
    v = float(v)
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    magnitude = math.floor(math.log10(abs(v)))
    decimals = digits - 1 - magnitude          # negative: round to tens, hundreds, ...
    rounded = round(v, decimals)
    if rounded and math.floor(math.log10(abs(rounded))) > magnitude:   # 0.9996 -> 1.00
        decimals -= 1
        rounded = round(v, decimals)
    return f"{rounded:,.{max(decimals, 0)}f}"


def times(v, digits: int = 3) -> str:
    return MISSING if _missing(v) else f"{num(v, digits)}×"


def percent(v) -> str:
    return MISSING if _missing(v) else f"{100 * float(v):.0f}%"


def mib(v) -> str:
    return MISSING if _missing(v) else f"{float(v) / MIB:,.0f}"


def interval(lo, hi, digits: int = 3) -> str:
    return MISSING if _missing(lo) or _missing(hi) else f"[{num(lo, digits)}, {num(hi, digits)}]"


# ------------------------------------------------------------------------------------ the table
@dataclass
class Table:
    """Text cells plus what a reader needs around them. ``groups`` (one label per row, or
    empty) start a new block where the label changes: a rule in LaTeX, a bold row in HTML."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    align: str = ""                       # one of l/r/c per column; default: first l, rest r
    notes: list[str] = field(default_factory=list)
    label: str = ""

    def __post_init__(self):
        if not self.align:
            self.align = "l" * min(1, len(self.columns)) + "r" * (len(self.columns) - 1)
        if len(self.align) != len(self.columns):
            raise ValueError(f"table {self.title!r}: {len(self.align)} alignments for "
                             f"{len(self.columns)} columns")
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.title!r}: row {row} has {len(row)} cells, "
                                 f"expected {len(self.columns)}")


def to_markdown(t: Table, heading: str | None = "###") -> str:
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = [f"{heading} {t.title}", ""] if heading else []
    lines += ["| " + " | ".join(map(esc, t.columns)) + " |",
              "|" + "|".join(marks[a] for a in t.align) + "|"]
    lines += ["| " + " | ".join(map(esc, row)) + " |" for row in t.rows]
    if t.notes:
        lines += [""] + [f"{n}  " for n in t.notes]
    return "\n".join(lines) + "\n"


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}",
          "×": r"$\times$", "–": "--", "—": "---", "†": r"\textsuperscript{\dag}",
          "≥": r"$\geq$", "≤": r"$\leq$", "·": r"$\cdot$", "±": r"$\pm$", "µ": r"\textmu{}"}


def latex_escape(s) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in str(s).replace("\n", " "))


def to_latex(t: Table, float_env: bool = True) -> str:
    """A booktabs table (needs ``\\usepackage{booktabs}``); ``float_env=False`` gives the bare
    tabular for ``\\input`` inside your own float."""
    body = [r"\begin{tabular}{" + t.align + "}", r"\toprule",
            " & ".join(latex_escape(c) for c in t.columns) + r" \\", r"\midrule"]
    body += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in t.rows]
    body += [r"\bottomrule", r"\end{tabular}"]
    if not float_env:
        return "\n".join(body) + "\n"
    caption = ". ".join(latex_escape(s.rstrip(".")) for s in [t.title, *t.notes]) + "."
    head = [r"\begin{table}[tbp]", r"\centering", r"\small", rf"\caption{{{caption}}}"]
    if t.label:
        head.append(rf"\label{{{t.label}}}")
    return "\n".join(head + body + [r"\end{table}"]) + "\n"


def to_html(t: Table, standalone: bool = True) -> str:
    """A plain HTML table; ``standalone`` wraps it in a page (the Snakemake report shows HTML
    results in a frame)."""
    e = html.escape
    align = {"l": "left", "r": "right", "c": "center"}
    head = "".join(f'<th style="text-align:{align[a]}">{e(c)}</th>'
                   for c, a in zip(t.columns, t.align))
    rows = "".join("<tr>" + "".join(f'<td style="text-align:{align[a]}">{e(c)}</td>'
                                    for c, a in zip(row, t.align)) + "</tr>\n"
                   for row in t.rows)
    notes = "".join(f"<p class='note'>{e(n)}</p>" for n in t.notes)
    table = (f"<h3>{e(t.title)}</h3>\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
             f"{rows}</tbody>\n</table>\n{notes}\n")
    return page(t.title, table) if standalone else table


HTML_STYLE = """body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:14px;
margin:1em;color:#222;max-width:60em}table{border-collapse:collapse;margin:.5em 0}
th,td{padding:.25em .6em;white-space:nowrap}thead th{border-top:2px solid #222;
border-bottom:1px solid #222}tbody tr:last-child td{border-bottom:2px solid #222}
p.note{font-size:12px;color:#555;margin:.2em 0}h2{font-size:18px}h3{font-size:15px}
li{margin:.3em 0}code{font-size:13px}"""


def page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{HTML_STYLE}</style></head>\n"
            f"<body>\n{body}</body></html>\n")


# ------------------------------------------------------------------- one experiment, one table
def varying_axes(df: pd.DataFrame) -> list[str]:
    """The setting axes that take more than one value inside ``df``."""
    return [a for a in SETTING_AXES if a in df and df[a].astype(str).nunique() > 1]


def axis_value(axis: str, value) -> str:
    """Values that mean nothing without their axis ("on", "off", "default") carry its name."""
    return V.axis(axis).display(value)


def setting_text(row, axes: list[str]) -> str:
    return " ".join([f"bs {int(row['batch_size'])}", *(axis_value(a, row[a]) for a in axes)])


def status_text(row) -> str:
    """The cell's status; the repeats column says how many of its runs finished."""
    return str(row.get("status"))


def _value_or_status(row, text: str) -> str:
    """A cell with no number: "n/a" where the run finished but this device has no such
    measurement; a dash where the run did not finish (the status column says why)."""
    if text != MISSING:
        return text
    return "n/a" if row.get("repeats_ok", 0) else MISSING


def experiment_table(summary: pd.DataFrame, speedup: pd.DataFrame, experiment: str) -> Table:
    from .aggregate import AXIS_DEFAULTS  # tables from before an axis existed hold its default
    summary = summary.assign(**{k: v for k, v in AXIS_DEFAULTS.items() if k not in summary})
    speedup = speedup.assign(**{k: v for k, v in AXIS_DEFAULTS.items() if k not in speedup})
    s = summary[summary["experiment"] == experiment].copy()
    if s.empty:
        raise ValueError(f"experiment {experiment!r} has no rows in summary.csv")
    keys = ["batch_size", *SETTING_AXES, "precision"]
    sp = speedup[speedup["experiment"] == experiment][
        keys + ["speedup_total_time", "speedup_throughput", "memory_ratio"]]
    for df in (s, sp):
        df["precision"] = pd.Categorical(df["precision"].astype(str), PRECISION_ORDER,
                                         ordered=True)
        for a in SETTING_AXES:
            df[a] = df[a].astype(str)
    s = s.merge(sp, on=keys, how="left").sort_values(["batch_size", *SETTING_AXES, "precision"])
    axes = varying_axes(s)
    repeats = s["repeats"].max() > 1

    # (header, formatter, measured-on-this-device column); optional columns are dropped when
    # no row has a value, and a note names them.
    spec = [
        ("time (s)", lambda r: num(r["total_time_s_median"]), "total_time_s_median"),
        ("95% CI", lambda r: interval(r["total_time_s_ci_low"], r["total_time_s_ci_high"]),
         None if repeats else "__never__"),
        ("speedup vs fp32", lambda r: times(r["speedup_total_time"]), "speedup_total_time"),
        ("samples/s", lambda r: num(r["throughput_samples_per_s_median"]),
         "throughput_samples_per_s_median"),
        ("peak memory (MiB)", lambda r: mib(r["max_memory_allocated_bytes"]),
         "max_memory_allocated_bytes"),
        ("memory vs fp32", lambda r: times(r["memory_ratio"]), "memory_ratio"),
        ("Tensor Core share", lambda r: percent(r.get("tensor_core_share")),
         "tensor_core_share"),
        ("GPU busy", lambda r: percent(r.get("gpu_busy_share")), "gpu_busy_share"),
        ("data wait", lambda r: percent(r.get("data_wait_share")), "data_wait_share"),
        ("MFU", lambda r: percent(r.get("mfu")), "mfu"),
        ("test accuracy", lambda r: percent(r.get("test_accuracy")) if _missing(
            r.get("test_accuracy")) else f"{100 * r['test_accuracy']:.2f}%", "test_accuracy"),
    ]
    kept, dropped = [], []
    for head, fn, col in spec:
        if col == "__never__":
            continue
        if col is not None and (col not in s or s[col].isna().all()):
            dropped.append(head)
            continue
        kept.append((head, fn))
    columns = ["setting", "precision", *(h for h, _ in kept), "repeats", "status"]
    rows = []
    for _, r in s.iterrows():
        rows.append([setting_text(r, axes), str(r["precision"]),
                     *(_value_or_status(r, fn(r)) for _, fn in kept),
                     f"{int(r['repeats_ok'])}/{int(r['repeats'])}", status_text(r)])
    device = s["device_name"].dropna().astype(str)
    run = str(s["run"].iloc[0])
    notes = ["Medians over the repeats that finished (status ok)"
             + (", 95% bootstrap interval of the median time" if repeats else "")
             + "; speedup is fp32 time / this time, memory is torch.cuda.max_memory_allocated "
               "against fp32 at the same setting."]
    notes.append(NA_NOTE)
    if dropped:
        notes.append("Not measured on this device, hence not shown: " + ", ".join(dropped) + ".")
    reasons = s.loc[s["status"] != "ok", ["precision", "status_reason"]].dropna()
    for _, r in reasons.drop_duplicates("status_reason").iterrows():
        notes.append(f"{r['precision']}: {r['status_reason']}")
    title = f"{experiment} on {device.iloc[0] if len(device) else run} (result set {run})"
    return Table(title, columns, rows, align="ll" + "r" * (len(columns) - 3) + "l",
                 notes=notes, label=f"tab:{run}:{experiment}")


def write_table(t: Table, stem: Path) -> list[Path]:
    """``stem``.md / .tex / .html."""
    out = []
    for ext, text in (("md", to_markdown(t)), ("tex", to_latex(t)), ("html", to_html(t))):
        path = stem.with_name(f"{stem.name}.{ext}")
        atomic.write_text(path, text)
        out.append(path)
    return out


def render(tables: Path, out_dir: Path | None = None, combined: Path | None = None,
           experiments: list[str] | None = None) -> list[Path]:
    """Per experiment ``out_dir/<experiment>.{md,tex,html}``; all experiments in one
    ``combined.md`` / ``combined.tex``."""
    summary = pd.read_csv(Path(tables) / "summary.csv")
    speedup = pd.read_csv(Path(tables) / "speedup.csv")
    experiments = experiments or list(dict.fromkeys(summary["experiment"]))
    built = [experiment_table(summary, speedup, e) for e in experiments]
    written = []
    if out_dir is not None:
        for exp, t in zip(experiments, built):
            written += write_table(t, Path(out_dir) / exp)
    if combined is not None:
        combined = Path(combined)
        md, tex = combined.with_name(combined.name + ".md"), combined.with_name(combined.name + ".tex")
        atomic.write_text(md, "".join(to_markdown(t, "##") + "\n" for t in built))
        atomic.write_text(tex, "\n".join(to_latex(t) for t in built))
        written += [md, tex]
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.tables", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=Path, required=True, help="folder with summary.csv etc.")
    ap.add_argument("--out", type=Path, help="folder for one table per experiment")
    ap.add_argument("--combined", type=Path, help="STEM: every experiment in STEM.md, STEM.tex")
    ap.add_argument("--experiments", nargs="*")
    args = ap.parse_args(argv)
    if args.out is None and args.combined is None:
        ap.error("give --out, --combined or both")
    try:
        render(args.tables, args.out, args.combined, args.experiments)
    except (ValueError, FileNotFoundError) as exc:
        print(f"tcbench.tables: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
