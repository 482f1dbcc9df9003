"""The set's best table (``best.md``): per experiment and model, the fastest configuration
against its baseline at the same setting (the fair figure, ``analysis.best``) and against the
plain fp32 one, with what else changed on the way."""

from __future__ import annotations

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..analysis import claims
from ..analysis import throughput
from ..analysis.speedup import EAGER_STEM
from ..render.numbers import (INTERVAL_NOTE, MISSING, WARMUP_HEAD, WARMUP_NOTE, missing, times,
                              warmup_text, with_interval)
from ..render.settings import changes, setting_text
from ..render.table import Table
from . import ratio_cells
from .phrases import PREDATE_NOTE, predating


EAGER_HEAD = "× plain amp-bf16 eager"
EAGER_NOTE = (f"{EAGER_HEAD}: against the experiment's own amp-bf16 cell with every execution "
              "knob at plain PyTorch's value (eager, contiguous, no CUDA graphs, the default "
              "optimiser), where it ran one: what the knobs add to the plain mixed-precision "
              "script.")


def _changed(r) -> str:
    """What differs from the plain fp32 baseline besides precision, from its value to ours."""
    if missing(r.get("baseline_experiment")):
        return MISSING
    return ", ".join(changes(r, "baseline_")) or "nothing"


def _fair(r) -> tuple[str, str]:
    """The fastest against its one baseline at the same setting, and the claim."""
    if not missing(r.get("fair_baseline")):
        e = stats.Estimate(stats.finite(r.get("fair_ratio")), stats.finite(r.get("fair_low")),
                           stats.finite(r.get("fair_high")),
                           int(stats.finite(r.get("fair_n")) or 0), str(r.get("fair_interval")))
        if e.value is None:
            return (f"{MISSING} (no {r['fair_baseline']} cell at this setting)",
                    stats.CLAIM_SHORT[str(r["fair_claim"])])
        text = with_interval(e.value, e.low, e.high, e.n, fmt=times,
                             kind=e.method if e.method in stats.METHOD_TEXT else None) \
            + f" {r['fair_baseline']}"
        f = stats.from_row(r, "fair_fp32")
        if str(r["fair_baseline"]) != V.BASELINE and f.value is not None:
            kind = str(r.get("fair_fp32_interval"))
            text += "; " + with_interval(f.value, f.low, f.high, f.n, fmt=times,
                                         kind=kind if kind in stats.METHOD_TEXT else None) \
                + f" {V.BASELINE}"
        return text, stats.claim_text(str(r["fair_claim"]), e)
    if str(r["precision"]) != V.BASELINE:
        return f"{MISSING} (no {V.BASELINE} cell at this setting)", ""
    return (f"{MISSING} (no reduced precision was faster)" if stats.flag(r.get("reduced_ran"))
            else f"{MISSING} (only {V.BASELINE} ran)"), ""


def _overall(r) -> str:
    if missing(r.get("baseline_experiment")):
        other = r.get("baseline_other_shape")
        return f"{MISSING} (no plain {V.BASELINE} cell" + \
            (f" of this workload shape: {other})" if not missing(other) else ")")
    if str(r["precision"]) == V.BASELINE and _changed(r) == "nothing":
        return f"{MISSING} (it is the baseline)"
    kind = r.get("gain_interval")
    text = with_interval(r.get("gain"), r.get("gain_low"), r.get("gain_high"),
                         r.get("gain_n"), fmt=times,
                         kind=kind if kind in stats.METHOD_TEXT else None)
    # where other knobs changed too, the overall ratio gets its own claim
    return text if _changed(r) == "nothing" or missing(r.get("gain_claim")) else \
        f"{text}, {stats.claim_text(str(r['gain_claim']), stats.from_row(r, 'gain'))}"


def _over_eager(r) -> str:
    """A knobs study's fastest (``analysis.best``'s ``knobs_study``) against its experiment's
    plain amp-bf16 eager cell, where it has one."""
    stem = EAGER_STEM
    if missing(r.get(stem)) or not stats.flag(r.get("knobs_study")):
        return MISSING
    kind = r.get(f"{stem}_interval")
    return with_interval(r.get(stem), r.get(f"{stem}_low"), r.get(f"{stem}_high"),
                         r.get(f"{stem}_n"), fmt=times,
                         kind=kind if kind in stats.METHOD_TEXT else None) \
        + f" (bs {int(r[f'{stem}_batch_size'])})"


def _best_row(r, speeds=(V.HEADLINE,)) -> list[str]:
    axes = [] if missing(r.get("setting_axes")) else \
        [a for a in str(r["setting_axes"]).split(",") if a]
    name = str(r.get("experiment", r["workload"]))
    name += "" if str(r["model"]) == str(r["workload"]) else f": {r['model']}"
    fair, said = _fair(r)
    gate = r.get("fastest_gate")
    why = []
    if not missing(gate) and gate:
        why.append(f"the highest mean, not judged fastest: "
                   f"{str(gate).removeprefix('not judged: ')}")
    elif str(r.get("fastest_by")) == claims.INTERLEAVED:
        why.append("faster than every other mode in its interleaved comparison")
    if not missing(r.get("fastest_tied")):
        why.append(f"tied with {r['fastest_tied']} within their intervals")
    why += [before] if (before := predating(r)) else []
    top = f"{r['precision']}, {setting_text(r, axes)}" + (f" ({'; '.join(why)})" if why else "")
    return [name, top,
            *(with_interval(r.get(c), r.get(f"{c}_low"), r.get(f"{c}_high"),
                            r.get("repeats_ok")) for c in speeds),
            fair, said, _overall(r), _over_eager(r),
            MISSING if missing(r.get("baseline_batch_size")) else
            f"{r['baseline_experiment']}, bs {int(r['baseline_batch_size'])}", _changed(r),
            times(r.get("memory_ratio")), warmup_text(r)]


def best_table(b: pd.DataFrame) -> Table:
    """Per experiment and model: the fastest configuration, against its baseline at the same
    setting (the fair figure, ``analysis.best``) and against the plain fp32 one (and the
    plain amp-bf16 eager one where an experiment ran it), with what else changed on the way."""
    speeds = throughput.columns(b)
    eager = any(_over_eager(r) != MISSING for _, r in b.iterrows())
    cols = ["experiment", "fastest configuration", *map(throughput.unit, speeds),
            "× at the same setting", "claim", "× plain fp32", *([EAGER_HEAD] if eager else []),
            "plain fp32 baseline", "changed besides precision", "memory × baseline",
            WARMUP_HEAD]
    notes = [INTERVAL_NOTE, stats.CLAIM_NOTE, WARMUP_NOTE, *([EAGER_NOTE] if eager else []),
             *ratio_cells.mark_notes(b)]
    notes += [PREDATE_NOTE] if any(predating(r) for _, r in b.iterrows()) else []
    rows = []
    for _, r in b.iterrows():
        row = _best_row(r, speeds)
        rows.append(row if eager else row[:len(speeds) + 5] + row[len(speeds) + 6:])
    return Table("Fastest configuration per experiment: against its baseline at the same "
                 "setting (fp32; amp-bf16 for FP8), which isolates precision, and against the "
                 "plain fp32 baseline (strict fp32, eager, contiguous, no CUDA graphs; its own "
                 "experiment's where it has one), which also credits every other change",
                 cols, rows, align="ll" + "r" * len(speeds) + "rlr" + "r" * eager + "llrr",
                 notes=notes)
