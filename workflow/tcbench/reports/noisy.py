"""The verdict's section on precision: every ok cell whose throughput is not known to
``stats.PRECISE_HALFWIDTH`` (its 95% interval's half-width over its mean), with why
(``analysis.noisy``), so a wide interval is never silently read as "no difference"."""

from __future__ import annotations

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..analysis.noisy import noisy_cells
from ..render.settings import shown_axes
from .findings import Section, config
from .phrases import predating

TITLE = "How precise the numbers are"


def section(summary: pd.DataFrame) -> Section | None:
    """None where there is no ok cell at all; else the count of precise cells and one sentence
    per experiment naming its noisy cells."""
    ok = summary[summary["status"] == V.OK]
    if ok.empty:
        return None
    found = noisy_cells(summary)
    limit = f"±{stats.PRECISE_HALFWIDTH:.0%}"
    if found.empty:
        return Section(TITLE, [f"Every one of the {len(ok)} finished configurations has its "
                               f"throughput within {limit} (95% CI)."])
    out = [f"{len(ok) - len(found)} of the {len(ok)} finished configurations have their "
           f"throughput within {limit} (95% CI); the other {len(found)} have no interval "
           f"({stats.FEW}) or a wider one, so a claim about them holds only where its own "
           "interval clears it:"]
    for exp in dict.fromkeys(found["experiment"]):
        cells = found[found["experiment"] == exp]
        axes = shown_axes(summary[summary["experiment"] == exp])
        out.append(f"{exp}: " + "; ".join(f"{config(r, axes)}, {r['reason']}" + (
            f", and {before}" if (before := predating(r)) else "")
            for _, r in cells.iterrows()) + ".")
    return Section(TITLE, out)
