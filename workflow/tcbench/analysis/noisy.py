"""Which cells are too noisy to be precise, and why (every cell's throughput interval within
+-3%, or the verdict says why that cell cannot get there).

A cell is precise when its throughput's 95% interval has a half-width of at most
``stats.PRECISE_HALFWIDTH`` of its mean. Every ok cell that is not gets one reason, from its
own numbers: too few repeats for an interval at all; wide although adaptive repeats added
repeats for it (the spread between processes stays large: the host, not the count); wide
from its configured repeats alone (adaptive repeats did not run for it); or split into two
modes (``stats.modes``), which no pooled interval describes.
"""

from __future__ import annotations

import pandas as pd

from .. import stats
from .. import vocabulary as V


def _modes(row) -> str:
    return (f"two modes, {row['slow_mode']:,.0f} (n = {int(row['slow_mode_n'])}) and "
            f"{row['fast_mode']:,.0f} (n = {int(row['fast_mode_n'])}): no pooled interval")


def _reason(n: int, halfwidth: float | None, added: int, cv: float | None) -> str:
    spread = f", CV {cv:.1%}" if cv is not None else ""
    if halfwidth is None:
        return f"n = {n}: no 95% interval (it needs {stats.MIN_CI_N})"
    if added:
        return (f"±{halfwidth:.1%} (n = {n}, {added} added because it was wide{spread}: the "
                "runs differ from process to process)")
    return f"±{halfwidth:.1%} (n = {n}, none added{spread})"


def noisy_cells(summary: pd.DataFrame, limit: float = stats.PRECISE_HALFWIDTH) -> pd.DataFrame:
    """The summary's ok cells whose throughput is not precise to ``limit``, with columns
    ``halfwidth`` (None without an interval), ``n``, ``repeats_added`` and ``reason``."""
    rows = []
    for idx, row in summary.iterrows():
        if row.get("status") != V.OK:
            continue
        e = stats.from_row(row, V.HEADLINE)
        if e.value is None:
            continue
        h = stats.relative_halfwidth(e)
        if h is not None and h <= limit:
            continue
        added = int(stats.finite(row.get("repeats_added")) or 0)
        reason = _modes(row) if stats.flag(row.get("bimodal")) else \
            _reason(e.n, h, added, stats.finite(row.get(f"{V.HEADLINE}_cv")))
        rows.append({"index": idx, "halfwidth": h, "n": e.n, "repeats_added": added,
                     "reason": reason})
    cols = ["halfwidth", "n", "repeats_added", "reason"]
    base = summary.drop(columns=[c for c in cols if c in summary])
    if not rows:
        return base.iloc[0:0].assign(**{c: [] for c in cols})
    found = pd.DataFrame(rows).set_index("index")
    return base.loc[found.index].join(found[cols])
