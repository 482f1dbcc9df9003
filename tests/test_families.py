"""The verdict's model-family table (``reports.families``): one row per model of a model zoo,
fp32's throughput in the unit its workload counts, each reduced mode against its one baseline
(amp-bf16 for an FP8 mode, else fp32) with its claim, the judged mode's memory and what limits
it with the kernel shares and busy share it rests on; absent from a set without a zoo."""

from __future__ import annotations

import pandas as pd

from tcbench import resultset
from tcbench.analysis.speedup import speedup
from tcbench.analysis.summarise import summarise
from tcbench.analysis.throughput import add_tokens
from tcbench.reports import families
from tcbench.reports import verdict as verdict_report
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


def transformer(model, precision, thrs, **kw):
    """A GPT-2-like family of a second zoo: 16 sequences of 1024 tokens a step."""
    rows = repeats("lm", precision, thrs, bs=16, **kw)
    for r in rows:
        r.update(model=model, workload="transformers", tokens_per_sample=1024)
    return rows


def test_an_fp8_ratio_is_labelled_and_ranked_over_amp_bf16_and_a_transformer_in_tokens():
    """An FP8 mode's ratio is over amp-bf16 (``claims.baseline_of``): its column says so and
    it is not ranked among the ratios over fp32; a transformer's fp32 throughput is in
    tokens/s, as its own section gives it."""
    rows = [*zoo_set(),
            *transformer("gpt", "fp32", [40.0, 40.2, 39.8], tc=0.0, mm=0.7, busy=0.98),
            *transformer("gpt", "amp-bf16", [120.0, 121.0, 119.0], tc=0.45, mm=0.45, busy=0.98),
            *transformer("gptv", "amp-bf16", [100.0, 101.0, 99.0], tc=0.5, mm=0.5, busy=0.99),
            *transformer("gptv", "fp8-tensorwise", [92.0, 92.5, 91.5], tc=0.41, mm=0.41,
                         busy=0.99)]
    m = add_tokens(resultset.order(pd.DataFrame(rows)))
    s = summarise(m)
    sec = next(x for x in verdict_report.build(s, speedup(m, s), m).sections
               if x.title == families.TITLE)
    t = sec.table
    assert t.columns[2:4] == ["fp32 samples/s", "fp32 tokens/s"]
    assert "fp8-tensorwise × amp-bf16" in t.columns and "fp8-tensorwise × fp32" not in t.columns
    table = {r[0]: dict(zip(t.columns, r)) for r in t.rows}
    gpt, gptv, dense = table["gpt"], table["gptv"], table["densenet"]
    assert gpt["fp32 tokens/s"].startswith("41,000 ") and gpt["fp32 samples/s"] == "–"
    assert dense["fp32 samples/s"].startswith("1,000 ") and dense["fp32 tokens/s"] == "–"
    assert gptv["fp8-tensorwise × amp-bf16"].startswith("0.920× [")
    assert gptv["fp8-tensorwise × amp-bf16"].endswith(": slower")
    over_fp32, over_bf16 = sec.sentences[:2]
    assert over_fp32.startswith("The judged mode against fp32,") and "gptv" not in over_fp32
    assert "gpt 3.00× (amp-bf16, pays off; 45%)" in over_fp32
    assert over_bf16.startswith("The judged mode against amp-bf16 (an FP8 mode's baseline),")
    assert "gptv 0.920× (fp8-tensorwise, slower; 41%)" in over_bf16
