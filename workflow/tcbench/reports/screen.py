"""The first screen of a verdict: the overview figure, a bottom line short enough to read at
once (``headline``: the experiments counted per claim, the rare claims named), and the answer
table with every cell at most ``CELL_CHARS`` long (``compact``). Nothing is dropped: a cell cut
short ends in "…" and its whole text follows the table, under the bottom line that names every
experiment with its mode and ratio (``answer.bottom_line``)."""

from __future__ import annotations

import base64
import html as html_lib
import re
from dataclasses import replace

import pandas as pd

from .. import stats
from ..analysis import crossover as fp8_crossover
from ..render.numbers import num
from ..render.table import Table, listed, to_html, to_markdown
from . import answer
from . import fp8_findings

CELL_CHARS = 80            # summary.md's answer table
HEADLINE_WORDS = 80        # summary.md's bottom line
MORE = " …"
# the headline's groups of claims, in its order, each with the words that introduce its count
HEADLINE = (("pays off in", (stats.PAYS_OFF,)),
            (f"faster, though not shown to reach {stats.GAIN:.2f}×, in", (stats.FASTER,)),
            (f"equivalent within ±{stats.MARGIN:.0%} in", (stats.EQUIVALENT,)),
            ("slower in", (stats.SLOWER, stats.ALL_SLOWER)),
            ("inconclusive in", (stats.INCONCLUSIVE,)),
            ("not judged in", (stats.UNJUDGED, *stats.GATES, stats.NO_BASELINE)))
NAMED = 3                  # a group of at most this many experiments names them


def words(text: str) -> int:
    return len(text.split())


# ------------------------------------------------------------------------------ the table
def cut(text: str, limit: int) -> str:
    """``text`` cut, with ``MORE``, within ``limit`` characters: after its last whole clause
    that fits (before a "; " or a " ("), else before its last ": ", else its last ", ", never
    inside a parenthesis or bracket; else at the last space."""
    if len(text) <= limit:
        return text
    room = limit - len(MORE)
    depth, level = 0, []
    for c in text:
        depth += c in "(["
        depth -= c in ")]"
        level.append(depth)
    for breaks in (("; ", " ("), (": ",), (", ",)):
        at = [i for i in range(1, room + 1) if text.startswith(breaks, i) and level[i - 1] == 0]
        if at:
            return text[:at[-1]] + MORE
    at = [i for i in range(1, room + 1) if text[i] == " "]
    return text[:at[-1] if at else room].rstrip(" ,;:") + MORE


def compact(table: Table, limit: int = CELL_CHARS, columns=None) -> tuple[Table, list[str]]:
    """The answer table with each cell at most ``limit`` characters (``columns``: only these,
    in this order), and what its cut cells said in full, one line each: "experiment, column:
    text"."""
    keep = list(columns or table.columns)
    idx = [table.columns.index(c) for c in keep]
    rows, details = [], []
    for row in table.rows:
        cells = [str(row[i]) for i in idx]
        short = [cut(c, limit) for c in cells]
        details += [f"**{cells[0]}**, {keep[k]}: {c}" for k, (c, s) in enumerate(zip(cells, short))
                    if s != c]
        rows.append(short)
    align = "".join(table.align[i] for i in idx) if table.align else table.align
    return replace(table, columns=keep, rows=rows, align=align), details


# ------------------------------------------------------------------------ the bottom line
def _group(rows: list[answer.Answer], claims: tuple, named: int, of: str = "") -> str:
    """How many rows reach one of ``claims`` (``of``: "of N"), in brackets the experiments
    (where there are at most ``named``) and, for "pays off", the span of their ratios."""
    hit = [a for a in rows if a.claim in claims]
    said = [", ".join(a.experiment for a in hit)] if len(hit) <= named else []
    values = [a.judgement.estimate.value for a in hit if a.judgement.estimate.value is not None]
    if claims[0] == stats.PAYS_OFF and values:
        lo, hi = num(min(values)), num(max(values))
        said.append(f"{lo}×" if lo == hi else f"{lo}–{hi}×")
    return f"{len(hit)}{of}" + (f" ({'; '.join(said)})" if said else "")


def _fp8(crossover: pd.DataFrame | None) -> str:
    """Where each FP8 recipe starts to pay on the crossover map (the smallest shape whose
    interval clears the threshold, ``fp8_findings.assess``), in one sentence."""
    if crossover is None or not len(crossover):
        return ""
    pays, none = [], []
    for mode in fp8_crossover.FP8_MODES:
        c = fp8_findings.assess(crossover, mode)
        if c.kind == "pays":
            pays.append(f"{int(c.row['width'])}×{int(c.row['tokens']):,} ({mode})")
        elif c.kind in ("none", "unjudged"):
            none.append(mode)
    said = ([f"from Linear width × tokens {listed(pays)}"] if pays else []) + \
        ([f"at none of the shapes measured ({listed(none)})"] if none else [])
    return f" FP8 pays off against {fp8_crossover.BASELINE} {', and '.join(said)}." if said else ""


def headline(rows: list[answer.Answer], crossover: pd.DataFrame | None = None,
             limit: int = HEADLINE_WORDS) -> str:
    """The bottom line in at most ``limit`` words: of the answer table's rows, how many reach
    each claim (the experiments named where few do), those with nothing to judge, and where FP8
    starts to pay on the crossover map (its Linear width × tokens a step); fewer names, then no
    FP8 sentence, where it runs longer (the shortest, counts alone, is returned even so)."""
    judged = [a for a in rows if a.judgement is not None]
    nothing = [a.experiment for a in rows if a.judgement is None]
    present = [(w, kinds) for w, kinds in HEADLINE if any(a.claim in kinds for a in judged)]
    of = f" of the {len(rows)} answers below"
    for named, fp8 in (*((n, True) for n in range(NAMED, -1, -1)), (0, False)):
        parts = [f"{w} {_group(judged, kinds, named, '' if i else of)}"
                 for i, (w, kinds) in enumerate(present)]
        # "pays off in 3, is faster … in 1, slower in 2": the first state after a verb of its own
        k = 1 if parts and parts[0].startswith(HEADLINE[0][0]) else 0
        parts[k:k + 1] = [f"is {p}" for p in parts[k:k + 1]]
        text = ("Reduced precision " + listed(parts)
                if parts else "No experiment has a reduced-precision cell to judge")
        if nothing and parts:
            text += f"; {len(nothing)} ha{'s' if len(nothing) == 1 else 've'} nothing to judge"
            text += f" ({', '.join(nothing)})" if len(nothing) <= named else ""
        text += "." + (_fp8(crossover) if fp8 else "")
        if words(text) <= limit:
            return text
    return text


# ------------------------------------------------------------------------------ the page
FULL = "The answer in full"
EVERY_CLAIM = "**Every claim.**"
OVERVIEW_ALT = "The answer per experiment: each best mode's ratio to its baseline with its " \
               "95% interval, log scale, coloured by claim"


def inline(text: str) -> str:
    """Markdown's bold and code as HTML."""
    text = html_lib.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def markdown(v, bottom: str) -> list[str]:
    """The verdict's first screen in Markdown, then the answer in full (``bottom``: the bottom
    line's bold head)."""
    table, details = compact(v.answer)
    out = [f"![{OVERVIEW_ALT}]({v.overview})", ""] if v.overview else []
    out += [f"{bottom} {v.headline}", "", to_markdown(table, heading=None), f"## {FULL}", "",
            f"{EVERY_CLAIM} " + " ".join(v.bottom_line), ""]
    return out + [f"- {d}" for d in details] + ([""] if details else [])


def html(v) -> list[str]:
    """The same in HTML, the figure embedded (the report shows the page in a frame of its
    own, where a link beside it would not resolve)."""
    table, details = compact(v.answer)
    out = []
    if v.overview_png:
        data = base64.b64encode(v.overview_png).decode("ascii")
        out.append(f'<p><img src="data:image/png;base64,{data}" alt="{OVERVIEW_ALT}" '
                   f'style="max-width:100%"></p>')
    out += [f"<p><strong>Bottom line.</strong> {inline(v.headline)}</p>",
            to_html(table, standalone=False), f"<h3>{FULL}</h3>",
            f"<p>{inline(EVERY_CLAIM + ' ' + ' '.join(v.bottom_line))}</p>"]
    items = "".join(f"<li>{inline(d)}</li>" for d in details)
    return out + ([f"<ul>{items}</ul>"] if items else [])
