"""Every generated LaTeX table compiles with pdflatex and fits the text width of an ordinary
article page: an overfull box is a failure, not a warning. CI installs pdflatex from Debian's
packages (.ci/run); without it these tests are skipped locally, and say so."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import gpu_like
from tcbench.reports import compare
from tcbench.render.table import to_latex
from tcbench.reports import tables

REPO = Path(__file__).resolve().parents[1]
PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage[T1]{fontenc}
\usepackage[utf8]{inputenc}
\usepackage{booktabs}
\usepackage[letterpaper,margin=1in]{geometry}
\begin{document}
"""

# CI sets TCBENCH_REQUIRE_LATEX=1 after installing texlive: there a missing pdflatex fails
needs_latex = pytest.mark.skipif(shutil.which("pdflatex") is None
                                 and os.environ.get("TCBENCH_REQUIRE_LATEX") != "1",
                                 reason="pdflatex not installed (CI installs texlive)")


def compile_tex(body: str, where: Path) -> str:
    """Compile ``body`` in a minimal article; returns the log. Fails on errors and on any
    overfull box (a table wider than the text)."""
    doc = where / "doc.tex"
    doc.write_text(PREAMBLE + body + "\n\\end{document}\n")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
                          cwd=where, capture_output=True, text=True, timeout=120)
    log = (where / "doc.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-3000:]
    overfull = re.findall(r"Overfull \\hbox \((\d+\.\d+)pt too wide\)", log)
    assert not overfull, f"tables wider than the page by {overfull} pt"
    tall = re.findall(r"Float too large for page by (\d+\.\d+)pt", log) + \
        re.findall(r"Overfull \\vbox \((\d+\.\d+)pt too high\)", log)
    assert not tall, f"tables taller than the page by {tall} pt"
    return log


@needs_latex
def test_every_table_of_a_gpu_set_compiles_and_fits(tmp_path):
    out = gpu_like.write(tmp_path / "set")
    s, sp = (pd.read_csv(out / f"{k}.csv") for k in ("summary", "speedup"))
    tables.write_combined(s, sp, None, tmp_path / "tables.tex")
    tex = (tmp_path / "tables.tex").read_text()
    n = sum(len(tables.experiment_tables(s, sp, e)) for e in s["experiment"].unique())
    # a table taller or wider than the page is set in parts: its caption once
    parts = tex.count("continued, part")
    assert n >= 2 * s["experiment"].nunique() and tex.count(r"\begin{table}") - parts == n
    # floats: clear them now and then, LaTeX allows only so many unprocessed ones
    log = compile_tex(tex.replace(r"\end{table}", r"\end{table}\clearpage"), tmp_path)
    assert "Output written on doc.pdf" in log


@needs_latex
def test_comparison_tables_compile_and_fit(tmp_path):
    out = gpu_like.write(tmp_path / "set")
    compare.compare([out / "metrics.csv"], [REPO / "config" / "reference" / "seed_t4.csv"],
                    tmp_path / "cmp", formats=("png",))
    tex = (tmp_path / "cmp" / "comparison.tex").read_text()
    compile_tex(tex.replace(r"\end{table}", r"\end{table}\clearpage"), tmp_path)


def _float(tabular: str) -> str:
    return "\\begin{table}[tbp]\n\\centering\n" + tabular + "\\end{table}\n"


WIDE = tables.Table("too wide", [f"column {i}" for i in range(30)],
                    [[f"{i}{j}" for i in range(30)] for j in range(3)])
TALL = tables.Table("too tall", ["setting", "precision", "value"],
                    [[f"bs {j}", "amp-bf16", f"{j},000 [{j - 1},900, {j},100]"]
                     for j in range(120)],
                    notes=["A note long enough to take several lines of the caption. " * 8])


@needs_latex
def test_an_overfull_or_too_tall_table_is_caught(tmp_path):
    """The check itself: one tabular wider than the page, one taller (the zoo's speed table
    ran off the page by 339 pt, "Float too large", and the width check let it pass)."""
    with pytest.raises(AssertionError, match="wider than the page"):
        compile_tex(_float(to_latex(WIDE, float_env=False)), tmp_path)
    with pytest.raises(AssertionError, match="taller than the page"):
        compile_tex(_float(to_latex(TALL, float_env=False)), tmp_path)


@needs_latex
def test_a_table_wider_or_taller_than_a_page_is_set_in_parts_that_fit(tmp_path):
    """Its columns in parts led by the first two, its rows in parts under the header; the
    caption and label once, on the first part; every cell still there."""
    for t in (WIDE, TALL):
        tex = to_latex(tables.Table(t.title, t.columns, t.rows, notes=t.notes, label="tab:x"))
        assert tex.count(r"\begin{table}") > 1 and tex.count(r"\label{tab:x}") == 1
        assert tex.count("continued, part") == tex.count(r"\begin{table}") - 1
        for row in t.rows:
            for cell in row[2:]:
                assert tex.count(cell.split(" ")[0]) >= 1, cell
        compile_tex(tex.replace(r"\end{table}", r"\end{table}\clearpage"), tmp_path)
    assert to_latex(WIDE).count(r"\begin{tabular}{") == to_latex(WIDE).count("column 0 ")


@needs_latex
def test_the_committed_h200_sets_tables_compile_and_fit(tmp_path):
    """tables.tex and tables/fp8_digits.tex of the H200 set overflowed the page: a zero-width
    range's note, a range of seven-digit throughputs, "not profiled" in five columns."""
    h200 = REPO / "results" / "nvidia-h200"
    if not (h200 / "summary.csv").exists():
        pytest.skip("no committed H200 set")
    s, sp = (pd.read_csv(h200 / f"{k}.csv") for k in ("summary", "speedup"))
    tables.write_combined(s, sp, None, tmp_path / "tables.tex")
    tex = (tmp_path / "tables.tex").read_text()
    assert "fp8\\_digits" in tex
    compile_tex(tex.replace(r"\end{table}", r"\end{table}\clearpage"), tmp_path)


def _lines(cell: str) -> list[str]:
    """The lines of a LaTeX body cell as set (a nested tabular's rows, size commands off)."""
    inner = re.sub(r"\\begin\{tabular\}\[t\]\{@\{\}\w@\{\}\}|\\end\{tabular\}", "", cell)
    return [re.sub(r"\{\\scriptsize (.*)\}", r"\1", x).strip() for x in inner.split(r" \\ ")]


@pytest.mark.parametrize("text", [
    "96.94% (range of zero width: the 2 runs agree exactly)",
    "2,300,000 (range 2,300,000–2,310,000)",
    "2,150,000 [2,110,000, 2,200,000]",
    "2,706,000 (range 2,706,000–2,707,000), 2 of 2 windows unsteady",
    "2,440,000 [2,270,000, 2,600,000], 1 of 6 windows unsteady",
    "497,000 [409,000, 584,000], r1–r10 predate the compile-in-window check",
    "12,700,000 (1 run), 1 of 1 windows unsteady, r1 predate the compile-in-window check",
    "fp8-tensorwise",
    "not profiled",
])
def test_a_cell_is_set_on_short_lines(text):
    """An interval under its value breaks at its spaces and after a range's dash; words break
    into short lines: no line of a cell is wider than the widest of its words needs."""
    from tcbench.render.table import INTERVAL_WIDTH, WORDS_WIDTH, _latex_cell

    lines = _lines(_latex_cell(text, "r"))
    assert len(lines) > 1
    words = text.replace("–", "– ").split()
    for line in lines:
        plain = line.replace(r"\%", "%").replace("--", "–")
        assert len(plain) <= max(INTERVAL_WIDTH, WORDS_WIDTH, *map(len, words)) + 1, line
    assert "".join(lines).replace(" ", "").replace(r"\%", "%").replace("--", "–") == \
        text.replace(" ", "")


def test_a_long_setting_breaks_at_its_commas_and_a_long_part_at_its_spaces():
    """resnet50_fastest's "compile reduce-overhead" widened its tables past the page."""
    from tcbench.render.table import _latex_cell
    assert _lines(_latex_cell("bs 256, channels_last, compile reduce-overhead", "l")) == \
        ["bs 256", r"channels\_last", "compile", "reduce-overhead"]
    assert _lines(_latex_cell("bs 256, channels_last, compile default", "l")) == \
        ["bs 256", r"channels\_last", "compile default"]
