"""A table for readers, built once as text cells (numbers rounded one way, units in the
header, a caption) and rendered three ways, Markdown, LaTeX (booktabs) and HTML, so the three
files always say the same thing. No templating dependency: each writer is a few lines."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import atomic

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


def said_once(pairs) -> dict[str, list[str]]:
    """(name, text) pairs as each text once with the names it holds for, both in first-seen
    order: a table's note that would otherwise repeat itself row by row."""
    said: dict[str, list[str]] = {}
    for name, text in pairs:
        names = said.setdefault(text, [])
        if name not in names:
            names.append(name)
    return said


def listed(items) -> str:
    """Items as prose lists them: "a", "a and b", "a, b and c"."""
    *others, last = items
    return f"{', '.join(others)} and {last}" if others else last


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
          "×": r"$\times$", "–": "--", "—": "---", "†": r"\textsuperscript{\dag}", "‡": r"\textsuperscript{\ddag}",
          "§": r"\S{}", "¶": r"\P{}",
          "≥": r"$\geq$", "≤": r"$\leq$", "·": r"$\cdot$", "±": r"$\pm$", "µ": r"\textmu{}",
          "Δ": r"$\Delta$", "→": r"$\rightarrow$", "<": r"\textless{}", ">": r"\textgreater{}",
          # the ratio interval's formula (stats.RATIO_INTERVAL) and other notes' mathematics
          "∓": r"$\mp$", "√": r"$\surd$", "²": r"\textsuperscript{2}", "₁": r"\textsubscript{1}",
          "₂": r"\textsubscript{2}", "≈": r"$\approx$", "÷": r"$\div$", "−": r"$-$"}


def latex_escape(s) -> str:
    # ">=" and "<=" are one sign each, not a "greater than" followed by "="
    text = str(s).replace("\n", " ").replace(">=", "≥").replace("<=", "≤")
    return "".join(_LATEX.get(ch, ch) for ch in text)

_INTERVAL_TAIL = re.compile(
    r"^(.+?) (\[.+\]|\(range .+\)|\([^()\s]+–[^()\s]+\)|\(95% CI .+\)|\(1 run\))$")


def _stack(lines: list[str], align: str, small_from: int | None = None) -> str:
    """Several lines in one table cell (a nested tabular); lines from ``small_from`` on are set
    smaller (an interval under its value)."""
    if len(lines) == 1:
        return latex_escape(lines[0])
    body = r" \\ ".join((r"{\scriptsize " + latex_escape(x) + "}") if small_from is not None
                         and i >= small_from else latex_escape(x) for i, x in enumerate(lines))
    return rf"\begin{{tabular}}[t]{{@{{}}{align}@{{}}}}{body}\end{{tabular}}"


def _wrap(text: str, width: int, glue=()) -> list[str]:
    """``text`` in lines of at most ``width`` characters where its words allow; a word that
    ends in one of ``glue`` joins the next without a space (a range's dash)."""
    lines: list[str] = []
    joined = False
    for word in str(text).split(" "):
        sep = "" if joined else " "
        if lines and len(lines[-1]) + len(sep) + len(word) <= width:
            lines[-1] += sep + word
        else:
            lines.append(word)
        joined = bool(word) and word[-1] in glue
    return lines


# an interval under its value is broken into lines of about this many characters, at its spaces
# and after a range's dash ("(range 2,300,000–2,310,000)", or a note such as "range of zero
# width: the 2 runs agree exactly", would otherwise widen its whole column)
INTERVAL_WIDTH = 12
# a body cell of words longer than this is set on several lines of about this many characters
WORDS_WIDTH = 10


def _interval_lines(text: str) -> list[str]:
    return _wrap(text.replace("–", "– "), INTERVAL_WIDTH, glue={"–"})


# a long name of two parts (a precision mode such as "fp8-tensorwise")
_HYPHENATED = re.compile(r"^[a-z0-9]+-[a-z]{6,}$")
# a note after a value and its interval ("2,440,000 [2,270,000, 2,600,000], 1 of 6 windows
# unsteady", one that names runs: ", r1–r3 predate ...", or ", noisy (±8.4%)"): set under the
# interval, as small, so the interval is still recognised
_NOTE_TAIL = re.compile(r"^(.+?), (\d+ of \d+ windows unsteady.*|r\d+\b.*|noisy \(.*)$")


def _latex_cell(text: str, align: str) -> str:
    """A body cell, narrowed for print: an interval goes under its value (broken into short
    lines), a long setting is broken at its commas, other words into short lines."""
    text = str(text)
    note = _NOTE_TAIL.match(text)
    if note:
        text = note.group(1)
    m = _INTERVAL_TAIL.match(text)
    if m or note:
        lines = [m.group(1), *_interval_lines(m.group(2))] if m else [text]
        if note:
            lines[-1] += ","
            lines += _wrap(note.group(2), INTERVAL_WIDTH)
        return _stack(lines, align, small_from=1)
    # a long setting at its commas, and a long part at its spaces ("compile", "reduce-overhead")
    if len(text) > 18 and ", " in text:
        return _stack([line for part in text.split(", ") for line in _wrap(part, 18)], align)
    if len(text) > WORDS_WIDTH and " " in text:   # "not profiled", "Tensor Cores"
        return _stack(_wrap(text, WORDS_WIDTH), align)
    if _HYPHENATED.match(text):                    # "fp8-tensorwise" breaks after its hyphen
        head, _, tail = text.partition("-")
        return _stack([f"{head}-", tail], align)
    return latex_escape(text)


def to_latex(t: Table, float_env: bool = True, shared: dict[str, str] | None = None) -> str:
    """A booktabs table (needs ``\\usepackage{booktabs}``) that fits a page's text width:
    headers wrapped, intervals set under their values, long settings broken at their commas
    (tests/test_latex.py compiles every generated table and fails on an overfull box); a
    table taller or wider than a page is set as several floats (``_pages``, ``_column_parts``);
    ``float_env=False`` gives the bare tabular for ``\\input`` in a float. ``shared`` maps a
    note already given in full by an earlier table to that table's label: the caption refers
    to it instead of repeating it (``to_latex_all``)."""
    # a header breaks at its spaces and after a slash ("energy/ sample")
    heads = [_stack(_wrap(c.replace("/", "/ "), 11, glue={"/"}), "c") for c in t.columns]
    cells = [[_latex_cell(c, a) for c, a in zip(row, t.align)] for row in t.rows]
    if not float_env:
        return "\n".join(_tabular(t.align, _row(heads), list(map(_row, cells)))) + "\n"
    shared = shared or {}
    own = [n for n in t.notes if n not in shared]
    refs = list(dict.fromkeys(shared[n] for n in t.notes if n in shared))
    caption = ". ".join(latex_escape(s.rstrip(".")) for s in [t.title, *own]) + "."
    if refs:
        caption += " Intervals and other notes as in " + ", ".join(
            rf"Table~\ref{{{label}}}" for label in refs) + "."
    blocks = []
    for cols in _column_parts([heads, *cells]):
        head = _row([heads[i] for i in cols])
        rows = [_row([r[i] for i in cols]) for r in cells]
        blocks += [("".join(t.align[i] for i in cols), head, part) for part in
                   _pages(rows, _lines_of(head), len(caption) if not blocks else 0)]
    out = []
    for i, (align, head, part) in enumerate(blocks):
        cap = caption if i == 0 else latex_escape(
            f"{t.title} (continued, part {i + 1} of {len(blocks)})") + "."
        top = [r"\begin{table}[p]" if len(blocks) > 1 else r"\begin{table}[tbp]", r"\centering",
               r"\footnotesize", r"\setlength{\tabcolsep}{3pt}", rf"\caption{{{cap}}}"]
        if t.label and i == 0:
            top.append(rf"\label{{{t.label}}}")
        out.append("\n".join(top + _tabular(align, head, part) + [r"\end{table}"]) + "\n")
    return "\n".join(out)


def _row(cells: list[str]) -> str:
    return " & ".join(cells) + r" \\"


# What one line of an ordinary article holds (US letter, 1 in margins: 6.5 in = 468 pt of
# text), measured in \footnotesize characters (~4.7 pt wide, a digit or a letter, with room
# to spare) and column separations (2 x 3 pt): a table wider than that runs off the page, so
# its columns are set in several parts, each with the first two (the row's setting, precision)
TEXT_PT, CHAR_PT, COLSEP_PT, KEY_COLUMNS = 468.0, 4.7, 6.0, 2


def _plain_lines(cell: str) -> list[str]:
    """The lines of a LaTeX cell as they print, each command counted as one character."""
    text = re.sub(r"\\begin\{tabular\}\[t\]\{@\{\}\w@\{\}\}|\\end\{tabular\}", "", cell)
    text = re.sub(r"\$[^$]*\$|\\text\w+\{[^{}]*\}|\\[%&$#_{}]", "x", text)
    text = re.sub(r"\{\\scriptsize |[{}]", "", text)
    return text.split(r" \\ ")


def _column_parts(table: list[list[str]]) -> list[list[int]]:
    """The columns of ``table`` (its header's and body's LaTeX cells) in parts that each fit
    the text width, every part led by the ``KEY_COLUMNS``; one part where all fit."""
    n = len(table[0])
    width = [COLSEP_PT + CHAR_PT * max(len(line) for row in table for line in
                                       _plain_lines(row[i])) for i in range(n)]
    if sum(width) <= TEXT_PT or n <= KEY_COLUMNS + 1:
        return [list(range(n))]
    keys = list(range(KEY_COLUMNS))
    parts, part = [], list(keys)
    for i in range(KEY_COLUMNS, n):
        if len(part) > KEY_COLUMNS and sum(width[j] for j in part) + width[i] > TEXT_PT:
            parts.append(part)
            part = list(keys)
        part.append(i)
    return [*parts, part]


def _tabular(align: str, head: str, rows: list[str]) -> list[str]:
    return [r"\begin{tabular}{" + align + "}", r"\toprule", head, r"\midrule", *rows,
            r"\bottomrule", r"\end{tabular}"]


# What one page of an ordinary article holds (US letter, 1 in margins: 9 in of text), in
# \footnotesize lines of the table (~10 pt each, nested lines and rules included) and in
# caption characters a line (6.5 in of \footnotesize): a table taller than that is a "Float too
# large" that runs off the page, so it is set as several floats, its caption on the first
PAGE_LINES, CAPTION_CHARS = 54, 120


def _lines_of(latex_row: str) -> int:
    """The text lines a table row takes: its tallest cell's (a nested tabular's rows)."""
    return max((cell.count(r" \\ ") + 1 for cell in latex_row.split(" & ")), default=1)


def _pages(rows: list[str], head_lines: int, caption_chars: int) -> list[list[str]]:
    """``rows`` in parts that each fit a page under the header, the first under the caption
    too (a row taller than a page stays one part: it cannot be split)."""
    caption_lines = 2 + -(-caption_chars // CAPTION_CHARS)
    parts: list[list[str]] = [[]]
    room = PAGE_LINES - head_lines - caption_lines
    for row in rows:
        need = _lines_of(row)
        if parts[-1] and need > room:
            parts.append([])
            room = PAGE_LINES - head_lines - 2
        parts[-1].append(row)
        room -= need
    return parts


def to_latex_all(tables: list[Table]) -> str:
    """Several tables in one LaTeX file: a note that more than one table carries is given in
    full in the first of them (which needs a label) and referred to by the others, so that a
    caption says what is particular to its table."""
    first: dict[str, str] = {}
    out = []
    for t in tables:
        out.append(to_latex(t, shared={n: first[n] for n in t.notes if n in first}))
        if t.label:
            for n in t.notes:
                first.setdefault(n, t.label)
    return "\n".join(out)


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
    title = f"<h3>{e(t.title)}</h3>\n" if t.title else ""
    table = (f"{title}<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
             f"{rows}</tbody>\n</table>\n{notes}\n")
    return page(t.title, table) if standalone else table


# Scoped to the page's own wrapper: the HTML report embeds the verdict's page in its landing
# page (workflow/report/workflow.rst), where a bare body{...} would restyle the whole report.
HTML_STYLE = """.tcbench{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:14px;
margin:1em;color:#222;max-width:60em}.tcbench table{border-collapse:collapse;margin:.5em 0}
.tcbench th,.tcbench td{padding:.25em .6em;white-space:nowrap}
.tcbench thead th{border-top:2px solid #222;border-bottom:1px solid #222}
.tcbench tbody tr:last-child td{border-bottom:2px solid #222}
.tcbench p.note{font-size:12px;color:#555;margin:.2em 0}.tcbench h2{font-size:18px}
.tcbench h3{font-size:15px}.tcbench li{margin:.3em 0}.tcbench code{font-size:13px}"""


def page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{HTML_STYLE}</style></head>\n"
            f"<body><div class='tcbench'>\n{body}</div></body></html>\n")


def write_markdown(tables: Table | list[Table], path: Path) -> Path:
    tables = [tables] if isinstance(tables, Table) else tables
    return atomic.write_text(path, "\n".join(to_markdown(t, "##") for t in tables))


def write_formats(tables: list[Table], paths: dict[str, Path], title: str) -> list[Path]:
    """``tables`` in each format of ``paths`` (md / tex / html, keyed by format)."""
    text = {"md": lambda: "\n".join(to_markdown(t) for t in tables),
            "tex": lambda: to_latex_all(tables),
            "html": lambda: page(title, "".join(to_html(t, False) for t in tables))}
    return [atomic.write_text(path, text[ext]()) for ext, path in paths.items()]
