"""A gain over plain fp32 sets a cell against a baseline that differs from it only in what the
row names; an FP8 row's two ratios come from one estimator. Planted sets where the old tables
were wrong: a crossover width against the recipe's plain fp32 at another width (125×), an FP8
row's interleaved bf16 ratio beside a per-process fp32 one."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tcbench import resultset
from tcbench.analysis.best import best
from tcbench.analysis.speedup import speedup
from tcbench.analysis.summarise import summarise
from tcbench.reports.best_table import best_table

from gpu_like import MB, _cell
from test_tables import rows_of


def _params(**kw) -> str:
    return resultset.workload_params({"params": {"seed": 0, "compile": "default", "lr": 0.001,
                                                 "num_layers": 3, "loader": "synthetic", **kw}})


RECIPE = _params(epochs=3, in_size=4096, num_batches=50, out_size=4096)
W1024 = _params(epochs=8, in_size=1024, num_batches=4, out_size=1024)
W4096 = _params(epochs=8, in_size=4096, num_batches=4, out_size=4096)


def _set(widths=(("w1024", W1024, 0.05), ("w4096", W4096, 0.4))):
    rng = np.random.default_rng(3)
    rows = []
    for p, t in (("fp32", 1.2), ("amp-bf16", 0.4)):
        cells = _cell("amp_recipe", "amp_recipe", p, 512, time=t, mem=1000 * MB, tc=0.6,
                      busy=0.97, rng=rng)
        rows += [r | {"workload_params": RECIPE} for r in cells]
    for name, params, t in widths:
        for p, f in (("amp-bf16", 1.0), ("fp8-tensorwise", 0.8)):
            cells = _cell(f"fp8_crossover_{name}", "amp_recipe", p, 65536, time=t * f,
                          mem=1000 * MB, tc=0.6, busy=0.97, rng=rng, compile="default")
            rows += [r | {"workload_params": params} for r in cells]
    df = resultset.order(pd.DataFrame(rows))
    s = summarise(df)
    return s, speedup(df, s)


def _best_rows(s, sp):
    return {r["experiment"]: r for r in rows_of(best_table(best(s, sp)))}


def test_workload_params_are_a_records_own_and_in_the_summary():
    r = {"workload": "amp_recipe", "params": {"seed": 2, "compile": "off", "in_size": 1024,
                                              "loader": "synthetic", "num_layers": 3}}
    assert resultset.workload_params(r) == '{"in_size":1024,"num_layers":3}'
    assert resultset.params_of(resultset.workload_params(r)) == {"in_size": "1024",
                                                                 "num_layers": "3"}
    assert resultset.shape_of(W1024) == resultset.shape_of(_params(epochs=3, in_size=1024,
                                                                   num_batches=50,
                                                                   out_size=1024, lr=0.1))
    assert resultset.shape_of(W1024) != resultset.shape_of(W4096)
    s, _ = _set()
    assert set(s.loc[s["experiment"] == "fp8_crossover_w1024", "workload_params"]) == {W1024}


def test_no_gain_over_a_plain_baseline_of_another_width():
    """The old table set width 1024 against the recipe's plain fp32 at width 4096."""
    s, sp = _set()
    rows = _best_rows(s, sp)
    w1024 = rows["fp8_crossover_w1024"]
    assert w1024["× plain fp32"] == ("– (no plain fp32 cell of this workload shape: "
                                     "amp_recipe's has in_size 4096, out_size 4096)")
    assert w1024["plain fp32 baseline"] == "–"
    assert sp.loc[sp["experiment"] == "fp8_crossover_w1024", "gain"].isna().all()


def test_a_baseline_of_the_same_width_names_every_difference():
    s, sp = _set()
    w4096 = _best_rows(s, sp)["fp8_crossover_w4096"]
    assert w4096["plain fp32 baseline"] == "amp_recipe, bs 512"
    assert w4096["changed besides precision"] == (
        "bs 512 → 65536, compile off → compile default, epochs 3 → 8, num_batches 50 → 4")
    b = best(s, sp).set_index("experiment")
    assert b.loc["fp8_crossover_w4096", "changed_axes"] == "batch_size,compile,epochs,num_batches"


def _interleaved(sp, experiment, precision, stem, ratio):
    at = (sp["experiment"] == experiment) & (sp["precision"] == precision)
    for part, v in (("", ratio), ("_low", ratio * 0.99), ("_high", ratio * 1.01), ("_n", 3)):
        sp.loc[at, f"{stem}{part}"] = v
    sp.loc[at, f"{stem}_interval"] = "replicated"


def test_an_fp8_rows_fp32_ratio_is_by_its_judged_ratios_estimator():
    """The old table put the per-process fp32 ratio beside the interleaved bf16 one."""
    s, sp = _set(widths=(("w4096", W4096, 0.4),))
    sp = sp.copy()
    _interleaved(sp, "fp8_crossover_w4096", "fp8-tensorwise", "interleaved_bf16_speedup", 1.31)
    fair = _best_rows(s, sp)["fp8_crossover_w4096"]["× at the same setting"]
    assert fair.startswith("1.31× ") and "fp32" not in fair     # no interleaved fp32 ratio
    _interleaved(sp, "fp8_crossover_w4096", "fp8-tensorwise", "interleaved_speedup", 7.77)
    fair = _best_rows(s, sp)["fp8_crossover_w4096"]["× at the same setting"]
    assert fair.startswith("1.31× ") and "; 7.77× " in fair and fair.endswith(" fp32")
