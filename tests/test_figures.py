"""Figures: every format written, fonts embedded in PDFs, one colour per precision, every slot
either a bar or a label saying why not, widths of the two paper layouts."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import matplotlib
import pandas as pd
import pytest

import gpu_like
from tcbench import figures as F

matplotlib.use("Agg")


def pdf_font_problems(path) -> list[str]:
    """Why the fonts of a PDF would be rejected by a journal (empty: all embedded, none Type 3).
    Pure Python: matplotlib writes object dictionaries uncompressed."""
    data = path.read_bytes()
    objects = dict(re.findall(rb"(\d+) 0 obj\s*(.*?)endobj", data, re.S))
    problems, fonts = [], 0
    for num, body in objects.items():
        if not re.search(rb"/Type\s*/Font\b", body):
            continue
        fonts += 1
        subtype = re.search(rb"/Subtype\s*/(\w+)", body).group(1).decode()
        name = (re.search(rb"/BaseFont\s*/([^\s/<>\[]+)", body) or [b"", b"?"])[1]
        if subtype == "Type3":
            problems.append(f"{name!r}: Type 3 font")
        elif subtype != "Type0":     # composite fonts embed through their descendant
            desc = re.search(rb"/FontDescriptor\s+(\d+) 0 R", body)
            if not desc:
                problems.append(f"{name!r}: {subtype} font without a descriptor (not embedded)")
            elif not re.search(rb"/FontFile[23]?\s", objects.get(desc.group(1), b"")):
                problems.append(f"{name!r}: {subtype} font not embedded")
    if fonts == 0:
        problems.append("no fonts at all (text missing?)")
    return problems


@pytest.fixture(scope="module")
def gpu_tables(tmp_path_factory):
    return gpu_like.write(tmp_path_factory.mktemp("gpu-like"))


@pytest.fixture(scope="module")
def rendered(gpu_tables, tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    return out, F.render(gpu_tables, out, ["amp_recipe", "resnet50", "mnist_seed"])


def test_every_kind_in_every_format(rendered):
    out, written = rendered
    expected = {out / f"{e}_{k}.{x}" for e in ("amp_recipe", "resnet50", "mnist_seed")
                for k in F.KINDS for x in F.FORMATS}
    assert set(written) == expected
    assert all(p.stat().st_size > 1000 for p in expected)
    for svg in out.glob("*.svg"):
        ET.parse(svg)             # well-formed


def test_pdfs_embed_truetype_fonts(rendered):
    out, _ = rendered
    pdfs = sorted(out.glob("*.pdf"))
    assert pdfs
    for pdf in pdfs:
        assert pdf_font_problems(pdf) == [], pdf.name


@pytest.mark.skipif(shutil.which("pdffonts") is None, reason="poppler-utils not installed")
def test_pdffonts_agrees(rendered):
    out, _ = rendered
    for pdf in sorted(out.glob("*.pdf"))[:6]:
        lines = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True,
                               check=True).stdout.splitlines()[2:]
        assert lines, pdf.name
        for line in lines:
            assert "Type 3" not in line and line.split()[-5] == "yes", line


@pytest.mark.parametrize("rc", [{"pdf.fonttype": 3}, {"pdf.use14corefonts": True}])
def test_font_check_catches_what_journals_reject(tmp_path, rc):
    """The check above is not vacuous: Type 3 and non-embedded core fonts fail it."""
    with matplotlib.rc_context(rc):
        fig, ax = F.plt.subplots()
        ax.set_title("x")
        fig.savefig(tmp_path / "bad.pdf")
        F.plt.close(fig)
    assert pdf_font_problems(tmp_path / "bad.pdf")


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_missing_cells_are_labelled_not_dropped(gpu_tables):
    F.style()
    s = F._cells(pd.read_csv(gpu_tables / "summary.csv").query("experiment == 'resnet50'"))
    sp = F._cells(pd.read_csv(gpu_tables / "speedup.csv").query("experiment == 'resnet50'"))
    assert "oom" in _texts(F.fig_time(s, "resnet50"))
    texts = _texts(F.fig_speedup(sp, "resnet50"))
    assert "oom" in texts and texts.count("no fp32 baseline") == 3
    s = F._cells(pd.read_csv(gpu_tables / "summary.csv").query("experiment == 'mnist_seed'"))
    assert _texts(F.fig_memory(s, "mnist_seed")).count("not run") == 2   # excluded cells
    s = F._cells(pd.read_csv(gpu_tables / "summary.csv").query("experiment == 'digits'"))
    assert "diverged" in _texts(F.fig_throughput(s, "digits"))
    F.plt.close("all")


def test_cpu_memory_says_not_measured(gpu_tables):
    F.style()
    s = pd.read_csv(gpu_tables / "summary.csv").query("experiment == 'amp_recipe'").copy()
    s["max_memory_allocated_bytes"] = float("nan")
    texts = _texts(F.fig_memory(F._cells(s), "amp_recipe"))
    assert any(t.startswith("not measured") for t in texts)
    assert texts.count("n/a") == 4
    F.plt.close("all")


def test_fixed_colour_per_precision(gpu_tables):
    F.style()
    s = F._cells(pd.read_csv(gpu_tables / "summary.csv").query("experiment == 'mnist_seed'"))
    fig = F.fig_time(s, "mnist_seed")
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches}
    assert colours <= {c.lower() for c in F.PALETTE.values()}
    handles = fig.legends[0].get_patches()
    shown = [p for p in F.PRECISIONS if p in set(s["precision"])]  # vocabulary order
    assert len(shown) == 4 and [h.get_label() for h in handles] == shown
    assert [matplotlib.colors.to_hex(h.get_facecolor()) for h in handles] == \
        [F.PALETTE[p].lower() for p in shown]
    F.plt.close("all")


def test_intervals_drawn_where_there_are_repeats(gpu_tables):
    F.style()
    s = F._cells(pd.read_csv(gpu_tables / "summary.csv").query("experiment == 'amp_recipe'"))
    fig = F.fig_time(s, "amp_recipe")
    bars = [c for c in fig.axes[0].containers
            if isinstance(c, matplotlib.container.ErrorbarContainer)]
    assert len(bars) == 4                         # one interval per precision
    s = F._cells(pd.read_csv(gpu_tables / "summary.csv").query("experiment == 'mnist_seed'"))
    fig = F.fig_time(s, "mnist_seed")             # one repeat: nothing to draw
    assert not any(isinstance(c, matplotlib.container.ErrorbarContainer)
                   for c in fig.axes[0].containers)
    F.plt.close("all")


def test_widths_follow_the_paper_layouts():
    assert F.figure_width(8) == F.ONE_COLUMN_IN == 3.5
    assert F.figure_width(16) == F.TWO_COLUMN_IN == 7.0
    assert F.figure_width(16, "one") == 3.5 and F.figure_width(2, "two") == 7.0
    with pytest.raises(ValueError, match="width"):
        F.figure_width(2, "three")


def test_cli_width_and_formats(gpu_tables, tmp_path):
    assert F.main(["--tables", str(gpu_tables), "--out", str(tmp_path), "--experiments",
                   "digits", "--width", "two", "--formats", "png"]) == 0
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".png"] * len(F.KINDS)
    assert F.main(["--tables", str(gpu_tables), "--out", str(tmp_path), "--experiments",
                   "nope"]) == 2
