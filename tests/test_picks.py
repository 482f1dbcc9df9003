"""One rule for a pick that is a tie (``stats.tied``: overlapping confidence intervals), used by
the answer's best mode and best.md's fastest configuration, and a higher ratio the rules
cannot claim said beside the answer. Planted where the old answer picked a cell by a hair of
its lower bound while best.md picked another, and kept a higher unjudged ratio silent."""

from __future__ import annotations

import pandas as pd

from tcbench import resultset
from tcbench import stats
from tcbench.analysis import claims
from tcbench.analysis.best import best
from tcbench.analysis.speedup import speedup
from tcbench.analysis.summarise import summarise
from tcbench.reports.best_table import best_table

from test_tables import rows_of
from test_verdict import answers, build, repeats

KW = dict(tc=0.6, mm=0.7, busy=0.95)


def _tie_rows():
    # bs 512: 2.2x with a wide interval; bs 1024: 2.05x, tight, so its lower bound is higher
    return [*repeats("tie", "fp32", [1000, 1010, 990], **KW),
            *repeats("tie", "amp-bf16", [2200, 2400, 2000], **KW),
            *repeats("tie", "fp32", [1000, 1010, 990], bs=1024, **KW),
            *repeats("tie", "amp-bf16", [2050, 2060, 2040], bs=1024, **KW)]


def test_tied_needs_two_confidence_intervals_that_overlap():
    a = stats.Estimate(2.0, 1.9, 2.1, 3, stats.CI)
    assert stats.tied(a, stats.Estimate(2.05, 2.0, 2.1, 3, stats.CI))
    assert not stats.tied(a, stats.Estimate(2.3, 2.2, 2.4, 3, stats.CI))
    assert not stats.tied(a, stats.Estimate(2.05, 2.0, 2.1, 2, stats.CI))   # a range of two


def test_a_tie_is_picked_by_the_higher_mean_and_said_in_both_tables():
    m = resultset.order(pd.DataFrame(_tie_rows()))
    s = summarise(m)
    sp = speedup(m, s)
    j = claims.strongest(sp)
    assert j.claim == stats.PAYS_OFF and int(j.row["batch_size"]) == 512   # old: 1024
    assert [int(t.row["batch_size"]) for t in j.tied] == [1024]
    row = answers(build(_tie_rows()))["tie"]
    assert row["best mode and setting"] == "amp-bf16, bs 512"
    assert row["× its baseline [95% CI]"].endswith(
        " fp32 (tied with bs 1024 within their intervals; the higher mean)")
    top = rows_of(best_table(best(s, sp)))[0]["fastest configuration"]
    assert top == "amp-bf16, bs 512 (tied with amp-bf16, bs 1024 within their intervals)"


def test_a_higher_ratio_the_rules_cannot_claim_is_said_beside_the_answer():
    rows = [*repeats("zoo", "fp32", [1000, 1010, 990], **KW),
            *repeats("zoo", "amp-bf16", [2000, 2010, 1990], **KW),
            *repeats("zoo", "amp-fp16", [3000, 3010], **KW)]
    row = answers(build(rows))["zoo"]
    assert row["best mode and setting"] == "amp-bf16, bs 512"
    assert row["× its baseline [95% CI]"].endswith(" fp32 (amp-fp16 3.00× not judged: n < 3)")


def test_the_methods_count_the_host_bound_cells_and_name_each_none_decided():
    """The README said every host-bound setting was decided by an interleaved comparison;
    five of the H200 set's were not."""
    rows = [*repeats("host", "fp32", [1000, 1002, 998], tc=0.0, busy=0.3),
            *repeats("host", "tf32", [1050, 1052, 1048], tc=0.6, mm=0.7, busy=0.3),
            *repeats("fast", "fp32", [1000, 1010, 990], **KW),
            *repeats("fast", "amp-bf16", [2000, 2010, 1990], **KW)]
    intro = " ".join(build(rows).intro)
    assert ("Of the 1 host-bound reduced-precision cells, 0 were decided by an interleaved "
            "comparison; 1 were not: host tf32 at bs 512 (no interleaved comparison ran: not "
            "judged: host-bound, no interleaved comparison).") in intro
