"""The first screen of a verdict: the overview figure (a forest plot of the answer table's own
ratios and intervals, coloured by claim), a bottom line of at most 80 words and an answer table
whose cells are at most 80 characters, with every cut cell's whole text following it."""

from __future__ import annotations

import re

import matplotlib.colors
import pytest

from figure_text import problems
from test_verdict import MIB, build, repeats
from tcbench import closing
from tcbench import vocabulary as V
from tcbench.render.plot import NotDrawn, style
from tcbench.reports import overview_figure
from tcbench.reports import screen
from tcbench.reports import verdict
from tcbench.reports.answer import COLUMNS

from conftest import REPO

H200 = REPO / "results" / "nvidia-h200"
RATIO = COLUMNS[3]


@pytest.fixture(scope="module")
def planted():
    """One experiment per claim, each with a ratio and an interval known from its runs."""
    return build([
        *repeats("pays", "fp32", [1000, 1010, 990]),
        *repeats("pays", "amp-fp16", [2500, 2480, 2520], mem=600 * MIB),
        *repeats("faster", "fp32", [1000, 1002, 998]),
        *repeats("faster", "tf32", [1050, 1052, 1048]),
        *repeats("equiv", "fp32", [1000, 1005, 995]),
        *repeats("equiv", "amp-bf16", [1001, 996, 1004]),
        *repeats("wide", "fp32", [1000, 1005, 995]),
        *repeats("wide", "tf32", [900, 1000, 1400]),
        *repeats("slow", "fp32", [1000, 1002, 998]),
        *repeats("slow", "amp-fp16", [800, 802, 798]),
        *repeats("few", "fp32", [1000, 1010]),
        *repeats("few", "amp-fp16", [1500, 1520]),
        *repeats("only", "fp32", [1000, 1005, 995]),
    ])


WANT = {"pays": "pays off", "faster": "faster", "equiv": "equivalent", "wide": "inconclusive",
        "slow": "slower", "few": "not judged", "only": overview_figure.NOTHING}


def test_each_row_is_the_answer_tables_ratio_coloured_by_its_claim(planted):
    rows = {r.label.split(" · ")[0]: r for r in overview_figure.rows(planted.answers)}
    assert {k: r.group for k, r in rows.items()} == WANT
    table = {c[0]: dict(zip(planted.answer.columns, c)) for c in planted.answer.rows}
    for exp, r in rows.items():
        # the same text as the answer table's ratio cell, so the same numbers
        assert r.text == table[exp][RATIO], exp
    pays = next(a for a in planted.answers if a.experiment == "pays").judgement.estimate
    assert (rows["pays"].value, rows["pays"].low, rows["pays"].high) == \
        (pays.value, pays.low, pays.high)
    assert rows["pays"].label == "pays · amp-fp16 ÷ fp32"
    assert rows["only"].value is None and rows["only"].text.startswith("–")


def _rgb(c) -> tuple:
    return tuple(round(float(x), 3) for x in matplotlib.colors.to_rgb(c))


def test_the_figure_draws_each_mark_in_its_claims_colour_on_a_log_axis(planted):
    style()
    fig = overview_figure.figure(planted.answers)
    ax, side = fig.axes[:2]
    assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert [lab.split(" · ")[0] for lab in labels] == [a.experiment for a in planted.answers]
    # one dot per row with a ratio, at its row, in its claim's colour
    dots = {}
    for c in ax.collections:
        if hasattr(c, "get_offsets") and len(c.get_offsets()) == 1 and \
                type(c).__name__ == "PathCollection":
            x, y = c.get_offsets()[0]
            dots[labels[int(round(y))].split(" · ")[0]] = (x, _rgb(c.get_facecolor()[0]))
    want = {e: _rgb(overview_figure.COLOURS[g]) for e, g in WANT.items()
            if g != overview_figure.NOTHING}
    assert {e: col for e, (_, col) in dots.items()} == want
    assert dots["pays"][0] == pytest.approx(2.5, rel=1e-3)
    # the same speed and the pays-off threshold as vertical lines; the legend names each claim
    verticals = {round(line.get_xdata()[0], 3) for line in ax.get_lines()}
    assert {1.0, 1.1} <= verticals
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [t for t in legend if not t[0].isdigit()] == [overview_figure.LEGEND[g]
                                                         for g in overview_figure.GROUPS]
    # the ratio beside each row, as the answer table writes it
    assert [t.get_text() for t in side.texts] == [overview_figure.rows([a])[0].text
                                                  for a in planted.answers]
    assert problems(fig) == []


def test_nothing_to_draw_is_said_and_an_unknown_claim_is_refused(planted):
    only = [a for a in planted.answers if a.judgement is None]
    assert isinstance(overview_figure.figure(only), NotDrawn)
    with pytest.raises(ValueError, match="no group of the overview figure"):
        overview_figure.group_of("faster than light")


def test_the_command_writes_the_named_files_and_refuses_others(tmp_path):
    import gpu_like

    out = gpu_like.write(tmp_path / "set")
    args = ["--metrics", str(out / "metrics.csv"), "--summary", str(out / "summary.csv"),
            "--speedup", str(out / "speedup.csv")]
    files = [tmp_path / V.set_figure_name(V.OVERVIEW_FIGURE, ext) for ext in ("png", "svg")]
    assert overview_figure.main([*args, "--outputs", *map(str, files)]) == 0
    assert all(f.stat().st_size > 1000 for f in files)
    assert overview_figure.main([*args, "--outputs", str(tmp_path / "answer.png")]) != 0


# ------------------------------------------------------------------------------ summary.md
def test_cut_keeps_whole_clauses_and_never_breaks_inside_brackets():
    text = "2.76× [2.73, 2.79] plain fp32 (also changed: bs 512 → 8192, contiguous → cl)"
    assert screen.cut(text, 40) == "2.76× [2.73, 2.79] plain fp32 …"
    long = "n = 3 vs 3, per process; amp-fp16: 3 of 3 windows unsteady; fp32: 3 of 3 windows"
    assert screen.cut(long, 70) == "n = 3 vs 3, per process; amp-fp16: 3 of 3 windows unsteady …"
    assert screen.cut("short", 10) == "short"
    for limit in (20, 40, 60):
        assert len(screen.cut(long, limit)) <= limit


def test_compact_cuts_long_cells_and_keeps_their_whole_text(planted):
    wide = planted.answer
    table, details = screen.compact(wide, 30)
    assert table.columns == wide.columns
    for full, short in zip(wide.rows, table.rows):
        for column, a, b in zip(wide.columns, full, short):
            assert len(b) <= 30
            if a != b:
                assert b.endswith(screen.MORE) and f"**{full[0]}**, {column}: {a}" in details
    narrow, _ = screen.compact(wide, 60, ["experiment", RATIO, "claim"])
    assert narrow.columns == ["experiment", RATIO, "claim"] and len(narrow.align) == 3


def words_of_bottom_line(md) -> int:
    return len(closing.bottom_line(md).split())


def test_the_bottom_line_counts_claims_and_names_the_rare_ones(planted):
    said = planted.headline
    assert said.startswith("Reduced precision pays off in 1 of the 7 answers below (pays; 2.50×), "
                           "is faster, though not shown to reach 1.10×, in 1 (faster)"), said
    assert "slower in 1 (slow)" in said and "inconclusive in 1 (wide)" in said
    assert "not judged in 1 (few)" in said and "1 has nothing to judge (only)" in said
    assert len(said.split()) <= screen.HEADLINE_WORDS


def test_a_long_bottom_line_drops_names_before_it_passes_its_words():
    rows = []
    for i in range(12):
        rows += [*repeats(f"experiment_number_{i}", "fp32", [1000, 1002, 998]),
                 *repeats(f"experiment_number_{i}", "tf32", [1050 + i, 1052 + i, 1048 + i])]
    v = build(rows)
    assert len(screen.headline(v.answers, limit=20).split()) <= 20
    assert "experiment_number" not in screen.headline(v.answers)          # 12 are too many to name
    assert screen.headline(v.answers) == (
        "Reduced precision is faster, though not shown to reach 1.10×, in 12 of the 12 "
        "answers below.")


@pytest.fixture(scope="module")
def h200_verdict(tmp_path_factory):
    if not (H200 / "summary.csv").exists():
        pytest.skip("no committed H200 result set")
    out = tmp_path_factory.mktemp("h200")
    style()
    figure = out / "figures" / V.set_figure_name(V.OVERVIEW_FIGURE, "png")
    csv = {k: H200 / V.SET_TABLES[k] for k in ("metrics", "summary", "speedup", "interleaved")}
    crossover = H200 / V.CROSSOVER_FILES["csv"]
    overview_figure.write(csv["metrics"], csv["summary"], csv["speedup"], [figure], crossover,
                          csv["interleaved"])
    md, page = verdict.write(csv["metrics"], csv["summary"], csv["speedup"], out / "summary.md",
                             out / "summary.html", crossover, csv["interleaved"], figure)
    return md, page


def test_the_h200_summary_opens_on_the_figure_a_short_bottom_line_and_narrow_cells(h200_verdict):
    md, page = h200_verdict
    lines = md.read_text().splitlines()
    assert lines[2].startswith("![") and lines[2].endswith("](figures/overview.png)")
    assert words_of_bottom_line(md) <= screen.HEADLINE_WORDS
    head = next(i for i, x in enumerate(lines) if x.startswith("| experiment |"))
    rows = [x for x in lines[head:] if x.startswith("|")][:1 + 1 + 22]
    cells = [c for x in rows for c in re.split(r"(?<!\\) \| ", x.strip("| "))]
    assert max(len(c) for c in cells) <= screen.CELL_CHARS
    # what the cells cut is said in full below the table, before the methods
    text = md.read_text()
    assert text.index(f"## {screen.FULL}") < text.index(f"## {verdict.METHODS}")
    assert "(also changed: bs 512 → 8192, contiguous → channels_last" in text
    html = page.read_text()
    assert '<img src="data:image/png;base64,' in html
    assert html.index("<img") < html.index("Bottom line.") < html.index(verdict.METHODS)


def test_the_h200_overview_figure_keeps_every_text_clear(h200_verdict):
    csv = {k: H200 / V.SET_TABLES[k] for k in ("metrics", "summary", "speedup", "interleaved")}
    v = verdict.read(csv["metrics"], csv["summary"], csv["speedup"],
                     H200 / V.CROSSOVER_FILES["csv"],
                     csv["interleaved"])
    style()
    fig = overview_figure.figure(v.answers, f"{v.title}: the answer per experiment")
    assert len(fig.axes[0].get_yticklabels()) == len(v.answer.rows)
    assert problems(fig) == []
