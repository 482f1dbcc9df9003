"""The verdict's model-family table (``reports.families``): one row per model of a model zoo,
each reduced mode against fp32 with its claim, the judged mode's memory and what limits it with
the kernel shares and busy share it rests on; absent from a set without a zoo."""

from __future__ import annotations

from tcbench.reports import families
from test_verdict import build, repeats   # the synthetic rows every verdict test builds on

MIB = 2**20


def family(model, precision, thrs, **kw):
    rows = repeats("zoo", precision, thrs, bs=256, **kw)
    for r in rows:
        r.update(model=model, workload="torchvision")
    return rows


def zoo_set():
    return [
        # a dense net: bf16 3x, its matrix work on Tensor Cores
        *family("densenet", "fp32", [1000, 1010, 990], mem=1000 * MIB, tc=0.0, mm=0.8,
                busy=0.99),
        *family("densenet", "tf32", [2000, 2010, 1990], mem=1000 * MIB, tc=0.6, mm=0.6,
                busy=0.99),
        *family("densenet", "amp-bf16", [3000, 3020, 2980], mem=500 * MIB, tc=0.55,
                mm=0.6, busy=0.98),
        # a depthwise net: bf16 1.5x, most kernel time in kernels that do no matrix work; its
        # fp16 cell host-bound, so the repeats cannot judge it
        *family("depthnet", "fp32", [4000, 4040, 3960], mem=800 * MIB, tc=0.0, mm=0.4,
                busy=0.99),
        *family("depthnet", "amp-fp16", [6500, 6560, 6440], mem=400 * MIB, tc=0.1, mm=0.3,
                busy=0.6),
        *family("depthnet", "amp-bf16", [6000, 6060, 5940], mem=400 * MIB, tc=0.1, mm=0.3,
                busy=0.97),
    ]


def section(rows):
    return next((s for s in build(rows).sections if s.title == families.TITLE), None)


def test_each_family_is_one_row_with_every_mode_against_fp32():
    s = section(zoo_set())
    assert s is not None
    t = s.table
    assert t.columns[3:6] == ["tf32 × fp32", "amp-fp16 × fp32", "amp-bf16 × fp32"]
    rows = {r[0]: dict(zip(t.columns, r)) for r in t.rows}
    assert set(rows) == {"densenet", "depthnet"}
    dense, depth = rows["densenet"], rows["depthnet"]
    assert dense["amp-bf16 × fp32"].startswith("3.00×") and "pays off" in dense["amp-bf16 × fp32"]
    assert dense["amp-fp16 × fp32"] == "–"          # not run for this family
    assert dense["judged mode"] == "amp-bf16: pays off"
    assert dense["peak memory ×"] == "0.500×"
    assert dense["kernel time: Tensor Cores / other matrix / non-matrix"] == "55% / 5% / 40%"
    assert depth["kernel time: Tensor Cores / other matrix / non-matrix"] == "10% / 20% / 70%"
    assert depth["limited by"] == "non-matrix 70%, other matrix 20%"
    assert "not judged" in depth["amp-fp16 × fp32"]


def test_the_sentences_rank_the_families_and_name_what_holds_them_back():
    s = section(zoo_set())
    ranked, held, gated = s.sentences
    assert ranked.index("densenet 3.00×") < ranked.index("depthnet 1.50×")
    assert "(amp-bf16, pays off; 55%)" in ranked
    assert held.startswith("In 1 of 2 families") and "depthnet 70%" in held
    assert "densenet" not in held
    assert "depthnet amp-fp16 (host-bound, no interleaved comparison)" in gated


def test_a_set_without_a_model_zoo_has_no_family_section():
    rows = [*repeats("one", "fp32", [1000, 1010, 990], tc=0.0, mm=0.8, busy=0.99),
            *repeats("one", "amp-bf16", [2000, 2010, 1990], tc=0.6, mm=0.7, busy=0.99)]
    assert section(rows) is None
