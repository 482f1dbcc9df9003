"""Tables for readers: per experiment, for the whole set (speedup, best), written as Markdown,
LaTeX (booktabs) and HTML (for the Snakemake report), from ``summary.csv``, ``speedup.csv`` and
``best.csv`` only.

    python -m tcbench.tables --tables results/nvidia-h200 --out results/nvidia-h200/tables \\
        --combined results/nvidia-h200/tables

A table is built once as text cells (numbers rounded one way, units in the header, a caption)
and then rendered three ways, so the three files always say the same thing. Every number that
rests on repeats carries its interval and says what the interval is (``tcbench.stats``); n is a
column. A cell without a number says why. No templating dependency: each writer is a few lines.
"""

from __future__ import annotations

import argparse
import html
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import atomic, diagnosis, stats
from . import vocabulary as V

MISSING = "–"
MIB, GIB = 2**20, 2**30


# ------------------------------------------------------------------------------- number format
def missing(v) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def num(v, digits: int = 3) -> str:
    """``digits`` significant digits, thousands grouped, never scientific notation: the one
    number format of every table, figure label and verdict sentence."""
    if missing(v):
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
    return MISSING if missing(v) else f"{num(v, digits)}×"


def percent(v, decimals: int = 0) -> str:
    return MISSING if missing(v) else f"{100 * float(v):.{decimals}f}%"


def memory_unit(max_bytes) -> tuple[str, float]:
    """MiB up to 4 GiB, GiB beyond: one unit per column or axis, chosen from its largest value."""
    return ("GiB", GIB) if not missing(max_bytes) and float(max_bytes) >= 4 * GIB else ("MiB", MIB)


def memory(v, unit: str | None = None) -> str:
    """Bytes in MiB or GiB (chosen from the value unless given), with the unit."""
    if missing(v):
        return MISSING
    unit = unit or memory_unit(v)[0]
    return f"{num(float(v) / (GIB if unit == 'GiB' else MIB))} {unit}"


def interval(lo, hi, digits: int = 3) -> str:
    return MISSING if missing(lo) or missing(hi) else f"[{num(lo, digits)}, {num(hi, digits)}]"


def with_interval(value, low, high, n, fmt=num, bound=None) -> str:
    """A value and its interval, saying what the interval is: ``5,730 [5,700, 5,760]`` (95% CI,
    n >= 3), ``5,730 (range 5,700–5,760)`` (n = 2), ``5,730 (1 run)``. A ratio's unit sign
    stays on the value: ``2.79× [2.75, 2.83]``."""
    if missing(value):
        return MISSING
    n = 0 if missing(n) else int(n)
    kind = stats.method(n)
    text = fmt(value)
    bound = bound or (num if fmt is times else fmt)
    if kind == stats.CI and not missing(low):
        return f"{text} [{bound(low)}, {bound(high)}]"
    if kind == stats.RANGE and not missing(low):
        return f"{text} (range {bound(low)}–{bound(high)})"
    if kind == stats.SINGLE:
        return f"{text} (1 run)"
    return text


INTERVAL_NOTE = ("Values are means over the repeats that finished; [a, b] is the 95% confidence "
                 "interval (Student's t for a mean; Welch's t on the log scale for a ratio), "
                 "given only where n >= 3; with n = 2 the range is shown and marked as such; "
                 "(1 run) marks a single run.")


# ------------------------------------------------------------------------------------ the table
@dataclass
class Table:
    """Text cells plus what a reader needs around them: a title, a caption (``notes``)."""

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
          "≥": r"$\geq$", "≤": r"$\leq$", "·": r"$\cdot$", "±": r"$\pm$", "µ": r"\textmu{}",
          "Δ": r"$\Delta$", "→": r"$\rightarrow$", "<": r"\textless{}", ">": r"\textgreater{}"}


def latex_escape(s) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in str(s).replace("\n", " "))


_INTERVAL_TAIL = re.compile(r"^(.+?) (\[.+\]|\(range .+\)|\(1 run\))$")


def _stack(lines: list[str], align: str, small_from: int | None = None) -> str:
    """Several lines in one table cell (a nested tabular); lines from ``small_from`` on are set
    smaller (an interval under its value)."""
    if len(lines) == 1:
        return latex_escape(lines[0])
    body = r" \\ ".join((r"{\scriptsize " + latex_escape(x) + "}") if small_from is not None
                         and i >= small_from else latex_escape(x) for i, x in enumerate(lines))
    return rf"\begin{{tabular}}[t]{{@{{}}{align}@{{}}}}{body}\end{{tabular}}"


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in str(text).split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _latex_cell(text: str, align: str) -> str:
    """A body cell, narrowed for print: an interval goes under its value, a long setting is
    broken at its commas."""
    text = str(text)
    m = _INTERVAL_TAIL.match(text)
    if m:
        return _stack([m.group(1), m.group(2)], align, small_from=1)
    if len(text) > 18 and ", " in text:
        return _stack(text.split(", "), align)
    return latex_escape(text)


def to_latex(t: Table, float_env: bool = True) -> str:
    """A booktabs table (needs ``\\usepackage{booktabs}``) that fits a page's text width:
    headers wrapped, intervals set under their values, long settings broken at their commas
    (tests/test_latex.py compiles every generated table and fails on an overfull box);
    ``float_env=False`` gives the bare tabular for ``\\input`` in a float."""
    head = " & ".join(_stack(_wrap(c, 11), "c") for c in t.columns) + r" \\"
    body = [r"\begin{tabular}{" + t.align + "}", r"\toprule", head, r"\midrule"]
    body += [" & ".join(_latex_cell(c, a) for c, a in zip(row, t.align)) + r" \\"
             for row in t.rows]
    body += [r"\bottomrule", r"\end{tabular}"]
    if not float_env:
        return "\n".join(body) + "\n"
    caption = ". ".join(latex_escape(s.rstrip(".")) for s in [t.title, *t.notes]) + "."
    top = [r"\begin{table}[tbp]", r"\centering", r"\footnotesize",
           r"\setlength{\tabcolsep}{3pt}", rf"\caption{{{caption}}}"]
    if t.label:
        top.append(rf"\label{{{t.label}}}")
    return "\n".join(top + body + [r"\end{table}"]) + "\n"


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


def write_markdown(tables: Table | list[Table], path: Path) -> Path:
    tables = [tables] if isinstance(tables, Table) else tables
    return atomic.write_text(path, "\n".join(to_markdown(t, "##") for t in tables))


# ------------------------------------------------------------------------------------ settings
def varying_axes(df: pd.DataFrame) -> list[str]:
    """The axes that take more than one value inside ``df``."""
    return [a for a in V.AXIS_NAMES if a in df and df[a].astype(str).nunique() > 1]


def shown_axes(df: pd.DataFrame) -> list[str]:
    """The axes a row label must name within ``df`` (one experiment): those that vary, and
    those held at a value other than the vocabulary's default (so a row says channels_last
    even where every row of the experiment is channels_last)."""
    out = []
    for a in V.AXES:
        if a.name not in df:
            continue
        values = df[a.name].astype(str)
        if values.nunique() > 1 or (a.default is not None and (values != a.default).any()):
            out.append(a.name)
    return out


def axis_value(axis: str, value) -> str:
    """Values that mean nothing without their axis ("on", "off", "default") carry its name."""
    return V.axis(axis).display(value)


def setting_text(row, axes: list[str], sep: str = ", ") -> str:
    return sep.join([f"bs {int(row['batch_size'])}", *(axis_value(a, row[a]) for a in axes)])


def _keys(df: pd.DataFrame) -> pd.DataFrame:
    from .aggregate import order
    return order(df)


def _cell_key(row) -> tuple:
    return tuple(str(row[k]) for k in V.CELL_KEYS)


def _no_value(row, text: str) -> str:
    """A cell with no number: "n/a" where the run finished but has no such measurement; a
    dash where the run did not finish (the status column says why)."""
    if text != MISSING:
        return text
    return "n/a" if row.get("repeats_ok", 0) else MISSING


# ------------------------------------------------------------------- one experiment, two tables
def experiment_tables(summary: pd.DataFrame, speedup: pd.DataFrame, experiment: str
                      ) -> list[Table]:
    """Speed and memory (always); where the time goes (where there is a kernel profile)."""
    s = _keys(summary[summary["experiment"] == experiment])
    if s.empty:
        raise ValueError(f"experiment {experiment!r} has no rows in summary.csv")
    sp = _keys(speedup[speedup["experiment"] == experiment])
    sp = {_cell_key(r): r for _, r in sp.iterrows()}
    s = s.sort_values(["batch_size", *V.AXIS_NAMES, "precision"])
    axes = shown_axes(s)
    run = str(s["run"].iloc[0])
    device = s["device_name"].dropna().astype(str)
    where = device.iloc[0] if len(device) else run
    mem_unit, _ = memory_unit(pd.to_numeric(s["max_memory_allocated_bytes"]).max())
    has_acc = "test_accuracy" in s and s["test_accuracy"].notna().any()
    has_mem = s["max_memory_allocated_bytes"].notna().any()

    cols = ["setting", "precision", "n", "samples/s", "× fp32"]
    cols += ["first fast step (s)"]
    cols += [f"peak memory ({mem_unit})", "memory × fp32"] if has_mem else []
    rows = []
    for _, r in s.iterrows():
        q = sp.get(_cell_key(r), {})
        n = int(r["repeats_ok"])
        cells = [setting_text(r, axes), str(r["precision"]), n_status(r),
                 with_interval(r.get(V.HEADLINE), r.get(f"{V.HEADLINE}_low"),
                               r.get(f"{V.HEADLINE}_high"), r.get(f"{V.HEADLINE}_n")),
                 _speedup_text(q, r), num(r.get("time_to_steady_s"))]
        if has_mem:
            unit_div = GIB if mem_unit == "GiB" else MIB
            mem = r.get("max_memory_allocated_bytes")
            cells += [num(float(mem) / unit_div) if not missing(mem) else MISSING,
                      times(q.get("memory_ratio")) if str(r["precision"]) != V.BASELINE
                      else "1×" if not missing(mem) else MISSING]
        rows.append([_no_value(r, c) if i > 2 else c for i, c in enumerate(cells)])
    notes = [f"Result set {run}. Throughput is the steady-state training throughput (the steps "
             f"after warm-up, CUDA-event timed); × fp32 is its ratio to strict fp32 at the same "
             f"setting; first fast step is the time to the end of warm-up (autotuning, "
             f"compilation), reported on its own and in no ratio.",
             INTERVAL_NOTE]
    if has_mem:
        notes.append("Peak memory is torch.cuda.max_memory_allocated.")
    for _, r in s[s["status"] != "ok"].drop_duplicates("status_reason").iterrows():
        if not missing(r.get("status_reason")):
            notes.append(f"{r['precision']} ({setting_text(r, axes)}): {r['status']}: "
                         f"{str(r['status_reason'])[:200]}")
    out = [Table(f"{experiment} on {where}: speed and memory", cols, rows,
                 align="lll" + "r" * (len(cols) - 3), notes=notes,
                 label=f"tab:{run}:{experiment}")]
    if has_acc:
        out.append(_accuracy_table(s, sp, axes, run, where, experiment))
    if s["tensor_core_share"].notna().any() or s["data_wait_share"].notna().any():
        out.append(_evidence_table(s, axes, run, where, experiment))
    return out


def _accuracy_table(s, sp, axes, run, where, experiment) -> Table:
    pct = lambda v: f"{100 * float(v):.2f}%"  # noqa: E731
    points = lambda v: f"{100 * float(v):+.2f}"  # noqa: E731
    rows = []
    for _, r in s.iterrows():
        q = sp.get(_cell_key(r), {})
        cells = [setting_text(r, axes), str(r["precision"]), n_status(r),
                 with_interval(r.get("test_accuracy"), r.get("test_accuracy_low"),
                               r.get("test_accuracy_high"), r.get("test_accuracy_n"), fmt=pct,
                               bound=lambda v: f"{100 * float(v):.2f}"),
                 "" if str(r["precision"]) == V.BASELINE else with_interval(
                     q.get("accuracy_diff"), q.get("accuracy_diff_low"),
                     q.get("accuracy_diff_high"), q.get("accuracy_diff_n"), fmt=points),
                 num(r.get("final_loss"))]
        rows.append([_no_value(r, c) if i > 2 and c else c for i, c in enumerate(cells)])
    notes = [f"Result set {run}. Accuracy on the held-out set after training, evaluated in fp32, "
             f"mean over the repeats (each its own seed); Δ is the mean difference to fp32 in "
             f"percentage points, each repeat paired with the fp32 repeat of the same seed.",
             INTERVAL_NOTE]
    return Table(f"{experiment} on {where}: accuracy against fp32",
                 ["setting", "precision", "n", "test accuracy", "Δ vs fp32 (points)",
                  "final training loss"], rows, align="lllrrr", notes=notes,
                 label=f"tab:{run}:{experiment}:accuracy")


def n_status(r) -> str:
    """Finished repeats of all, with the cell's status where it is not ok ("0/3 oom")."""
    text = f"{int(r['repeats_ok'])}/{int(r['repeats'])}"
    return text if str(r["status"]) == "ok" else f"{text} {r['status']}"


def _speedup_text(q, r) -> str:
    if str(r["precision"]) == V.BASELINE:
        return "1×" if r.get("repeats_ok") else MISSING
    if not len(q) or missing(q.get("speedup")):
        return "no fp32" if r.get("repeats_ok") else MISSING
    return with_interval(q["speedup"], q.get("speedup_low"), q.get("speedup_high"),
                         q.get("speedup_n"), fmt=times)


def _evidence_table(s, axes, run, where, experiment) -> Table:
    cols = ["setting", "precision", "Tensor Core share", "matmul share", "GPU busy",
            "data wait", "MFU", "energy/sample (mJ)", "limited by"]
    rows = []
    for _, r in s.iterrows():
        e = r.get("steady_energy_per_sample_j")
        cells = [setting_text(r, axes), str(r["precision"]), percent(r.get("tensor_core_share")),
                 percent(r.get("matmul_share")), percent(r.get("gpu_busy_share")),
                 percent(r.get("data_wait_share")), percent(r.get("mfu"), 1),
                 num(float(e) * 1e3) if not missing(e) else MISSING,
                 diagnosis.SHORT[diagnosis.bottleneck(r)] if r.get("repeats_ok") else MISSING]
        rows.append([_no_value(r, c) if i > 1 else c for i, c in enumerate(cells)])
    notes = [f"Result set {run}, means over the finished repeats; shares are of GPU kernel time "
             f"(Tensor Core, matmul) or of wall time (GPU busy, data wait), from one profiled "
             f"repeat per cell (torch.profiler, after the timed steps). MFU is achieved "
             f"TFLOP/s over this device's measured matmul ceiling in the same mode; energy is "
             f"NVML's counter over the steady steps.",
             "Limited by: " + "; ".join(f"{diagnosis.SHORT[k]} = {v}" for k, v in
                                        diagnosis.NAMES.items() if k) + " (tcbench.diagnosis)."]
    return Table(f"{experiment} on {where}: where the time goes", cols, rows,
                 align="ll" + "r" * (len(cols) - 3) + "l", notes=notes,
                 label=f"tab:{run}:{experiment}:evidence")


# ----------------------------------------------------------------------- whole-set tables
def speedup_table(sp: pd.DataFrame) -> Table:
    """Every cell against fp32 at the same setting, with the claim its interval allows."""
    sp = _keys(sp)
    rows = []
    for exp, g in sp.groupby("experiment", sort=False):
        axes = shown_axes(g)
        for _, r in g.sort_values(["batch_size", *V.AXIS_NAMES, "precision"]).iterrows():
            rows.append([str(exp), setting_text(r, axes), str(r["precision"]),
                         f"{int(r['repeats_ok'])}/{int(r.get('baseline_repeats_ok') or 0)}"
                         + ("" if str(r["status"]) == "ok" else f" {r['status']}"),
                         num(r.get(V.HEADLINE)) if r.get("repeats_ok") else MISSING,
                         _speedup_text(r, r), claim(r), times(r.get("memory_ratio"))
                         if str(r["precision"]) != V.BASELINE else ""])
    cols = ["experiment", "setting", "precision", "n (cell/fp32)", "samples/s", "× fp32",
            "claim", "memory × fp32"]
    return Table("Speedup over strict fp32 at the same setting", cols, rows,
                 align="lllrrrlr", notes=[INTERVAL_NOTE, CLAIM_NOTE])


CLAIM_NOTE = (f"Claim: 'faster' or 'slower' only where the 95% interval of the ratio excludes 1; "
              f"'pays off' where it lies wholly above {diagnosis.GAIN:.2f}; 'n < 3' where either "
              f"side has fewer than three finished repeats, so no claim is made.")


def claim(r) -> str:
    return diagnosis.claim(r.get("speedup"), r.get("speedup_low"), r.get("speedup_high"),
                           r.get("speedup_interval")) \
        if str(r["precision"]) != V.BASELINE else ""


def best_table(b: pd.DataFrame) -> Table:
    """Per workload and model: the fastest configuration against the fastest plain fp32 one."""
    rows = []
    for _, r in b.iterrows():
        axes = [] if missing(r.get("setting_axes")) else \
            [a for a in str(r["setting_axes"]).split(",") if a]
        model = "" if str(r["model"]) == str(r["workload"]) else f" ({r['model']})"
        rows.append([f"{r['workload']}{model}", f"{r['precision']}, {setting_text(r, axes)}",
                     with_interval(r.get(V.HEADLINE), r.get(f"{V.HEADLINE}_low"),
                                   r.get(f"{V.HEADLINE}_high"), r.get("repeats_ok")),
                     with_interval(r.get("gain"), r.get("gain_low"), r.get("gain_high"),
                                   r.get("gain_n"), fmt=times) if not missing(r.get("gain")) else "no fp32 run",
                     MISSING if missing(r.get("baseline_batch_size")) else
                     f"{r['baseline_experiment']}, bs {int(r['baseline_batch_size'])}",
                     times(r.get("memory_ratio")), num(r.get("time_to_steady_s"))])
    cols = ["workload", "fastest configuration", "samples/s", "× plain fp32",
            "plain fp32 baseline", "memory × baseline", "first fast step (s)"]
    return Table("Fastest configuration per workload, against the fastest plain fp32 one "
                 "(strict fp32, eager, contiguous, no CUDA graphs; same workload, data and "
                 "input pipeline, any batch size)", cols, rows,
                 align="llrrlrr", notes=[INTERVAL_NOTE])


# ----------------------------------------------------------------------------------- driver
def render(tables: Path, out_dir: Path | None = None, combined: Path | None = None,
           experiments: list[str] | None = None) -> list[Path]:
    """Per experiment ``out_dir/<experiment>.{md,tex,html}``; every experiment of the set in
    ``combined.md`` / ``combined.tex``."""
    summary = pd.read_csv(Path(tables) / "summary.csv")
    speedup = pd.read_csv(Path(tables) / "speedup.csv")
    everything = list(dict.fromkeys(summary["experiment"]))
    written = []
    if out_dir is not None:
        for exp in experiments or everything:
            built = experiment_tables(summary, speedup, exp)
            stem = Path(out_dir) / exp
            for ext, text in (("md", "\n".join(to_markdown(t) for t in built)),
                              ("tex", "\n".join(to_latex(t) for t in built)),
                              ("html", page(exp, "".join(to_html(t, False) for t in built)))):
                written.append(atomic.write_text(stem.with_name(f"{stem.name}.{ext}"), text))
    if combined is not None:
        built = [t for exp in everything for t in experiment_tables(summary, speedup, exp)]
        combined = Path(combined)
        md = combined.with_name(combined.name + ".md")
        tex = combined.with_name(combined.name + ".tex")
        written.append(atomic.write_text(md, "".join(to_markdown(t, "##") + "\n" for t in built)))
        written.append(atomic.write_text(tex, "\n".join(to_latex(t) for t in built)))
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
