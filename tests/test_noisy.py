"""Cells too noisy to be precise: each ok cell wider than +-3% is named, with the
reason its own repeats give; tight cells, failed cells and single-run ones are told apart."""

from __future__ import annotations

import pandas as pd

from tcbench import resultset
from tcbench import stats
from tcbench import vocabulary as V
from tcbench.analysis.noisy import noisy_cells
from tcbench.analysis.summarise import summarise

from test_verdict import repeats, row


def summary_of(rows):
    return summarise(resultset.order(pd.DataFrame(rows)))


def test_wide_cells_are_named_with_why_and_tight_ones_are_not():
    added = repeats("e", "amp-bf16", [1000, 1300, 900, 1250, 950])
    for r in added[3:]:
        r["repeat_reason"] = "added at look 1: half-width 40% > target 2% after 3 repeats"
    rows = [*repeats("e", "fp32", [1000, 1001, 999]),          # +-0.25%: precise
            *repeats("e", "tf32", [1000, 1200, 800]),          # configured repeats only
            *added,
            *repeats("e", "amp-fp16", [1000, 1100]),           # a range, no interval
            row("e", "fp8-rowwise", status="unsupported", reason="no FP8 here")]
    s = summary_of(rows)
    found = noisy_cells(s)
    by = dict(zip(found["precision"], found["reason"]))
    assert set(by) == {"tf32", "amp-bf16", "amp-fp16"}
    assert by["tf32"].startswith("±") and "(n = 3, none added, CV" in by["tf32"]
    assert "(n = 5, 2 added because it was wide" in by["amp-bf16"]
    assert by["amp-fp16"] == "n = 2: no 95% interval (it needs 3)"
    h = found.set_index("precision").loc["tf32", "halfwidth"]
    e = stats.estimate([1000, 1200, 800])
    assert abs(h - (e.high - e.low) / 2 / e.value) < 1e-12 and h > stats.PRECISE_HALFWIDTH


def test_the_limit_is_the_stats_cores_and_a_precise_set_has_none():
    s = summary_of([*repeats("e", "fp32", [1000, 1010, 990]),
                    *repeats("e", "tf32", [2000, 2010, 1990])])
    assert noisy_cells(s).empty
    # +-1.7% is precise at the default limit, not at a limit of 1%
    assert len(noisy_cells(s, limit=0.01)) == 2
    assert s["repeats_added"].tolist() == [0, 0]


def test_old_records_without_a_repeat_reason_count_as_initial():
    rows = repeats("e", "fp32", [1000, 1200, 800, 1100])
    rows[0]["repeat_reason"] = None                     # a record made before the field
    rows[1]["repeat_reason"] = rows[2]["repeat_reason"] = V.REPEAT_INITIAL
    rows[3]["repeat_reason"] = "added at look 1: half-width 30% > target 2% after 3 repeats"
    assert summary_of(rows)["repeats_added"].tolist() == [1]


def test_the_verdict_names_the_noisy_cells_and_counts_the_precise_ones():
    from test_verdict import build

    v = build([*repeats("e", "fp32", [1000, 1001, 999]), *repeats("e", "tf32", [1000, 1200, 800])])
    sec = next(s for s in v.sections if s.title == "How precise the numbers are")
    assert sec.sentences[0].startswith("1 of the 2 finished configurations have their "
                                       "throughput within ±3% (95% CI)")
    assert sec.sentences[1].startswith("e: tf32 at batch size 512, ±") and "n = 3" in sec.sentences[1]
    tight = build([*repeats("e", "fp32", [1000, 1001, 999])])
    assert [s.sentences for s in tight.sections if s.title == "How precise the numbers are"] == \
        [["Every one of the 1 finished configurations has its throughput within ±3% (95% CI)."]]
