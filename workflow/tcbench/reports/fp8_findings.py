"""The verdict's answer to "when does FP8 pay on this GPU?": where the crossover map says FP8
starts to pay (``crossover_sentences``, from tables/fp8_crossover.csv, ``analysis.crossover``),
each transformer's FP8 cells against bf16 (``transformer_sentences``) and MFU against the roof
of the mode that did the work (``mfu_sentences``). One function per finding, like
``reports.findings``; every claim is ``stats.claim``'s word for an interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..analysis import claims
from ..analysis import crossover as fp8_crossover
from ..analysis import throughput
from ..render.numbers import (MISSING, memory, missing, num, percent, times, warmup_text,
                              with_interval)
from ..render.settings import setting_text, shown_axes
from ..render.table import Table
from .findings import Section, config, judged, ratio_text
from .phrases import (claim_said, decided, judged_ratio, memory_against, n_ok, n_status,
                      throughput_text)

TITLE = "FP8 on this GPU"
# the FP8 cell's kernel time split, as the aggregate's columns name it (kernels' split of a
# profile into FP8 GEMMs, the other Tensor Core work such as the GEMMs kept in bf16, and the
# casts and scales around them); read where the tables have them, said missing where not
SPLIT = (("fp8_gemm_share", "FP8 GEMMs"),
         ("other_tensor_core_share", "other Tensor Core kernels (the GEMMs kept in bf16)"),
         ("fp8_scaling_share", "cast and scale kernels"))
COUNTING = f"How FP8 cells are counted: {V.FP8_MFU_COUNTING}."


def _shape(r) -> str:
    return f"Linear width {int(r['width'])} with {int(r['tokens']):,} tokens a step"


def _predicted(r) -> str:
    return ("" if missing(r.get("predicted")) else
            f"; the roofs predict {num(r['predicted'])}×") + _decided(r)


def _decided(r) -> str:
    """Where a shape's ratio comes from an interleaved comparison, the clause that says so, at
    its level (a table made before replicates has no ``processes``: one process, whose rounds
    are its ``ratio_n``)."""
    if str(r.get("decided_by")) != fp8_crossover.INTERLEAVED or missing(r.get("ratio")):
        return ""
    rounds = r.get("rounds") if "processes" in r else r.get("ratio_n")
    return "; " + stats.level_text(r.get("processes"), rounds)


def level_counts(table: pd.DataFrame) -> tuple[int, int]:
    """Of the interleaved measured ratios, how many span several processes and how many one."""
    il = table[(table["decided_by"].astype(str) == fp8_crossover.INTERLEAVED)
               & table["ratio"].notna()]
    k = pd.to_numeric(il["processes"], errors="coerce").fillna(1) if "processes" in il \
        else pd.Series(1, index=il.index)
    return int((k > 1).sum()), int((k <= 1).sum())


def sources(table: pd.DataFrame) -> str:
    """Which instrument decided the map's measured ratios, where an interleaved comparison
    decided any ("" where none did: every ratio is the per-process repeats'), at which level."""
    measured, il = fp8_crossover.decided(table)
    if not il:
        return ""
    many, one = level_counts(table)
    how = []
    if many:
        how.append(f"{many} across independent processes (the geometric mean of the processes' "
                   f"medians with a 95% t interval across them)")
    if one:
        how.append(f"{one} in one process (the median of its per-round ratios with a 95% "
                   f"block-bootstrap interval, which cannot see differences between processes)")
    return (f"Of the {measured} measured ratios (shape and FP8 mode), {il} come from "
            f"interleaved comparisons, {fp8_crossover.BASELINE} and the FP8 modes alternated in "
            f"rounds, "
            f"free of the host's drift between rounds: " + " and ".join(how)
            + (f"; the other {measured - il} from the per-process repeats (the ratio "
               f"of their means, 95% CI)" if measured > il else "")
            + ". Peak memory is always the per-process records' (a comparison measures none).")


@dataclass(frozen=True)
class Crossover:
    """What the map says of one FP8 mode: ``kind`` is "pays" (``row``: the smallest shape whose
    interval clears 1.10), "none" (``row``: the strongest claim, none pays), "unjudged" (``row``:
    the largest ratio; too few repeats everywhere), "unmeasured" (no FP8 run finished) or
    "absent" (no shape has both modes)."""

    mode: str
    kind: str
    row: pd.Series | None = None
    shapes: int = 0
    measured: int = 0
    paying: int = 0
    why: str = ""


def assess(table: pd.DataFrame, mode: str) -> Crossover:
    t = table[table["mode"] == mode] if len(table) else table
    if t.empty:
        return Crossover(mode, "absent")
    measured = t[t["ratio"].notna()]
    if measured.empty:
        why = t["unmeasured"].dropna().astype(str) if "unmeasured" in t else []
        return Crossover(mode, "unmeasured", shapes=len(t), why=why.iloc[0] if len(why) else "")
    n = {"shapes": len(t), "measured": len(measured)}
    paying = measured[measured["pays"].astype(str) == "True"]
    if len(paying):
        r = paying.assign(work=paying["tokens"] * paying["width"] ** 2).sort_values(
            ["work", "tokens"]).iloc[0]
        return Crossover(mode, "pays", r, paying=len(paying), **n)
    best = max((r for _, r in measured.iterrows()), key=lambda r: stats.strength(
        r["claim"], stats.from_row(r, "ratio")))
    return Crossover(mode, "unjudged" if best["claim"] == stats.UNJUDGED else "none", best, **n)


def starts_to_pay(table: pd.DataFrame, mode: str) -> str:
    """Where ``mode`` starts to pay: the smallest shape (fewest FLOPs a step, tokens x
    width^2) whose 95% interval of the throughput ratio over amp-bf16 lies wholly above 1.10;
    else that none does, with the strongest claim the shapes support; else that it cannot be
    judged (too few repeats, or no FP8 measurement at all)."""
    c = assess(table, mode)
    if c.kind == "absent":
        return (f"{mode}: no shape of the crossover study has both {mode} and "
                f"{fp8_crossover.BASELINE} records.")
    if c.kind == "unmeasured":
        return (f"{mode}: no FP8 measurement at any of the {c.shapes} shapes of the crossover "
                f"study, so where {mode} starts to pay on this device cannot be judged and no "
                f"ratio is reported" + (f": {c.why}." if c.why else "."))
    r, gaps = c.row, c.shapes - c.measured
    gap = f" ({gaps} of {c.shapes} shapes without a measurement)" if gaps else ""
    if c.kind == "pays":
        return (f"{mode} starts to pay at {_shape(r)}: {ratio_text(r, 'ratio')} the throughput "
                f"of {fp8_crossover.BASELINE}, so it "
                f"{stats.CLAIM_WORDS[stats.PAYS_OFF]}{_predicted(r)}; "
                f"the smallest (fewest FLOPs a step) of {c.paying} of {c.measured} shapes "
                f"whose interval clears {times(fp8_crossover.PAYS)}{gap}.")
    if c.kind == "unjudged":
        return (f"{mode}: where it starts to pay cannot be judged: at every one of the "
                f"{c.measured} shapes measured it {stats.CLAIM_WORDS[stats.UNJUDGED]}; the "
                f"largest ratio over {fp8_crossover.BASELINE} is {ratio_text(r, 'ratio')} at "
                f"{_shape(r)}{_decided(r)}{gap}.")
    return (f"{mode} pays off (95% CI of the throughput ratio over {fp8_crossover.BASELINE} "
            f"wholly above {times(fp8_crossover.PAYS)}) at none of the {c.measured} shapes "
            f"measured{gap}; its strongest "
            f"claim is at {_shape(r)}, where it {stats.CLAIM_WORDS[r['claim']]}: "
            f"{ratio_text(r, 'ratio')}{_predicted(r)}.")


def starts_to_pay_short(table: pd.DataFrame, mode: str) -> str:
    """The bottom line's clause of ``starts_to_pay``."""
    c = assess(table, mode)
    head = f"FP8 crossover, {mode} against {fp8_crossover.BASELINE}"
    if c.kind == "absent":
        return f"{head}: not in the crossover study."
    if c.kind == "unmeasured":
        return f"{head}: cannot be judged (no FP8 measurement)."
    r = c.row
    _, slower = _measured(table, mode)
    slow = (f"; slower at {len(slower)} of {c.measured} shapes ({_span(slower['ratio'])})"
            if len(slower) else "")
    if c.kind == "pays":
        return (f"{head}: pays off from {_shape(r)}, {ratio_text(r, 'ratio')} (the smallest of "
                f"{c.paying} of {c.measured} shapes whose interval clears "
                f"{times(fp8_crossover.PAYS)}){slow}.")
    return (f"{head}: pays off at none of {c.measured} shapes; the strongest claim, "
            f"{stats.CLAIM_SHORT[r['claim']]}: {_shape(r)}, {ratio_text(r, 'ratio')}{slow}.")


def _measured(table: pd.DataFrame, mode: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The map's rows of ``mode`` with a measured ratio, and those of them that are slower than
    amp-bf16 (95% interval wholly below 1)."""
    t = table[(table["mode"] == mode) & table["ratio"].notna()] if len(table) else table
    return t, t[t["claim"].astype(str) == stats.SLOWER] if len(t) else t


def _shapes(rows: pd.DataFrame) -> str:
    """Shapes named compactly, by width: "width 1024 at 2,048 and 16,384 tokens"."""
    parts = []
    for width, g in rows.sort_values(["width", "tokens"]).groupby("width", sort=True):
        tokens = [f"{int(t):,}" for t in g["tokens"]]
        listed = tokens[0] if len(tokens) == 1 else ", ".join(tokens[:-1]) + f" and {tokens[-1]}"
        parts.append(f"width {int(width)} at {listed} tokens")
    return "; ".join(parts)


def _span(values: pd.Series, unit: str = "×") -> str:
    lo, hi = float(values.min()), float(values.max())
    return f"{num(lo)}{unit}" if num(lo) == num(hi) else f"{num(lo)}–{num(hi)}{unit}"


def where_it_loses(table: pd.DataFrame, mode: str) -> str:
    """Where ``mode`` is slower than amp-bf16 (95% interval wholly below 1), and where it gains
    too little to pay; "" where the map has no measured ratio of the mode."""
    t, slower = _measured(table, mode)
    if t.empty:
        return ""
    short = t[(t["pays"].astype(str) != "True") & (t["claim"].astype(str) != stats.SLOWER)]
    parts = []
    if len(slower):
        parts.append(f"{mode} is slower than {fp8_crossover.BASELINE} (95% CI wholly below "
                     f"1.0×) at {len(slower)} of {len(t)} shapes, {_span(slower['ratio'])}: "
                     f"{_shapes(slower)}")
    else:
        parts.append(f"{mode} is slower than {fp8_crossover.BASELINE} at none of the "
                     f"{len(t)} shapes measured")
    if len(short):
        parts.append(f"it neither pays nor loses at {_shapes(short)} "
                     f"({', '.join(stats.CLAIM_SHORT.get(str(c), str(c)) for c in short['claim'])})")
    return "; ".join(parts) + "."


def prediction(table: pd.DataFrame) -> str:
    """What the calibration's roofs predict beside the measurement, and how far off they were
    (measured ÷ predicted per FP8 mode, and at how many shapes the prediction's "pays" agreed
    with the measured claim); or why there is no prediction."""
    if len(table) and table["predicted"].notna().any():
        both = table[table["predicted"].notna() & table["ratio"].notna()]
        off = []
        for mode, g in both.groupby("mode", sort=False):
            q = g["ratio"] / g["predicted"]
            worst = g.loc[q.idxmin()]
            agree = int(((g["predicted"] >= fp8_crossover.PAYS)
                         == (g["pays"].astype(str) == "True")).sum())
            off.append(f"{mode}: measured ÷ predicted {num(float(q.median()))} at the median of "
                       f"{len(g)} shapes (range {_span(q, '')}), furthest below at "
                       f"{_shape(worst)} ({num(worst['ratio'])}× measured, "
                       f"{num(worst['predicted'])}× predicted); the prediction's pays-or-not "
                       f"(≥ {times(fp8_crossover.PAYS)}) agrees with the measured claim at "
                       f"{agree} of {len(g)}")
        return ("Beside each measured ratio, tables/fp8_crossover.csv and the map give the ratio "
                "predicted from this GPU's calibration (GEMMs at its bf16 and FP8 matmul roofs, "
                "the casts' and scales' bytes at its copy bandwidth; launch and framework time "
                "left out, so the measurement falls short of it where those matter)"
                + (". How far off it was: " + "; ".join(off) if off else "") + ".")
    why = table["no_prediction"].dropna().astype(str) if "no_prediction" in table \
        else pd.Series([], dtype=str)
    return ("No prediction from the calibration" + (f": {why.iloc[0]}" if len(why) else "")
            + ".")


def crossover_sentences(table: pd.DataFrame | None) -> list[str]:
    """Where FP8 starts to pay on this GPU, per recipe, and the prediction beside it."""
    if table is None:
        return []
    out = []
    for mode in fp8_crossover.FP8_MODES:
        out.append(f"**Where FP8 starts to pay:** {starts_to_pay(table, mode)}")
        loses = where_it_loses(table, mode)
        if loses:
            out.append(f"**Where it does not:** {loses}")
    return out + [f"**The prediction:** {prediction(table)}"] + [s for s in [sources(table)] if s]


def _split(r) -> str:
    shares = [(r.get(col), what) for col, what in SPLIT]
    if any(missing(v) for v, _ in shares):
        return (" The split of its step into FP8 GEMMs, bf16 GEMMs and cast/scale kernels is "
                "missing from these tables.")
    # a record made before the split was recorded is split from the top kernels it lists
    # (tcbench.kernels.kernel_split): lower bounds, said as such
    older = str(r.get("kernel_classes_from")) == "top kernels"
    cover = r.get("kernel_classes_coverage")
    return " Its GPU kernel time: " + ", ".join(f"{percent(v)} {what}" for v, what in shares) \
        + (f" (at least: split from the top kernels its record lists, "
           f"{percent(cover)} of its kernel time)" if older and not missing(cover) else "") + "."


def _transformer_cell(r, axes) -> str:
    what = config(r, axes)
    j = claims.against(r, V.FP8_BASELINE)
    if j is not None:
        return f"**{r['model']}, FP8 against bf16:** {judged(j, what)}.{_split(r)}"
    if str(r["status"]) != V.OK:
        reason = "" if missing(r.get("status_reason")) else \
            f": {str(r['status_reason']).split(';')[0][:160]}"
        return f"**{r['model']}, FP8 against bf16:** {what}: {r['status']}{reason}."
    return (f"**{r['model']}, FP8 against bf16:** no {V.FP8_BASELINE} run of {what}'s setting "
            f"finished, so it is not judged against bf16.")


def transformer_sentences(df: pd.DataFrame) -> list[str]:
    """For each transformer (workload ``transformers``), each FP8 cell against amp-bf16 at
    the same setting, with its kernel time split where the tables have it."""
    lm = df[df["workload"].astype(str) == "transformers"]
    out = []
    for _, g in lm.groupby(["experiment", "model"], sort=False):
        axes = [a for a in ("compile",) if g[a].nunique() > 1]
        out += [_transformer_cell(r, axes) for _, r in g.iterrows()
                if str(r["precision"]) in claims.FP8]
    return out


def mfu_sentences(df: pd.DataFrame) -> list[str]:
    """Each transformer's MFU per mode against that mode's roof, and how FP8 cells count."""
    lm = df[(df["workload"].astype(str) == "transformers") & (df["repeats_ok"] > 0)]
    lm = lm[lm["precision"].astype(str).isin([V.FP8_BASELINE, *claims.FP8])]
    if lm.empty:
        return []
    if not lm["compute_capability"].notna().any():
        return ["**MFU:** not stated: this device is not a CUDA GPU, so its calibration's "
                "roofs are no Tensor Core ceiling to measure utilisation against."]
    parts = []
    for model, g in lm.groupby("model", sort=False):
        what = _cell_names(g)
        cells = [f"{what[i]} {percent(r.get('mfu'), 1)} of the {r['precision']} roof "
                 f"({num(r.get('ceiling_tflops'))} TFLOP/s)" if not missing(r.get("mfu"))
                 else f"{what[i]} not stated (no calibrated roof for the mode)"
                 for i, r in g.iterrows()]
        parts.append(f"{model}: " + "; ".join(cells))
    return [f"**MFU against the roof of the mode that did the work:** {'. '.join(parts)}. "
            f"{COUNTING}"]


def _cell_names(g: pd.DataFrame, long: bool = True) -> dict:
    """Each row of one model's cells by its precision, and where the model has several cells
    of one precision, by their setting too (and their experiment, where they differ)."""
    axes = [a for a in shown_axes(g) if a != "model"]
    several = g["experiment"].nunique() > 1
    twice = g.duplicated(["precision"], keep=False)

    def name(r):
        if long:
            return config(r, axes) + (f" ({r['experiment']})" if several else "")
        return (f"{r['precision']} ({setting_text(r, axes)}"
                + (f", {r['experiment']})" if several else ")"))

    return {i: name(r) if twice[i] else str(r["precision"]) for i, r in g.iterrows()}


def _mfu(r) -> str:
    if missing(r.get("mfu")):
        return MISSING
    return f"{percent(r['mfu'], 1)} of {num(r.get('ceiling_tflops'))}"


def transformer_table(df: pd.DataFrame) -> Table | None:
    """Each transformer in each mode on one row: tokens/s, FP8 against amp-bf16 (ratio,
    claim, how it was decided), MFU against its mode's roof, peak memory, the FP8 cells' kernel
    split and the warm-up (compilation) that no ratio contains. None without a transformer."""
    lm = df[(df["workload"].astype(str) == "transformers")
            & df["precision"].astype(str).isin([V.FP8_BASELINE, *claims.FP8])]
    if lm.empty:
        return None
    names = {i: n for _, g in lm.groupby("model", sort=False)
             for i, n in _cell_names(g, long=False).items()}
    rows = []
    for i, r in lm.iterrows():       # in the tables' order: experiment, setting, precision
        fp8 = str(r["precision"]) in claims.FP8
        j = claims.against(r, V.FP8_BASELINE) if fp8 else None
        rows.append([str(r["model"]), names[i], n_status(r),
                     throughput_text(r, throughput.TOKENS) if n_ok(r) else str(r["status"]),
                     judged_ratio(j) if j else "", claim_said(j) if j else "",
                     decided(j, df) if j else "", _mfu(r),
                     memory(r.get("max_memory_allocated_bytes")),
                     memory_against(j, df) if j else "",
                     *(percent(r.get(col)) if fp8 else "" for col, _ in SPLIT),
                     _warmup(r)])
    return Table("Transformers: FP8 against bf16", [
        "model", "precision", "n", "tokens/s", f"× {V.FP8_BASELINE}", "claim",
        "how it was decided", "MFU (of its mode's roof, TFLOP/s)", "peak memory",
        f"memory × {V.FP8_BASELINE}", "FP8 GEMMs", "other Tensor Core", "cast and scale",
        "warm-up (s)"], rows, align="lllrrll" + "r" * 7, notes=[
        "tokens/s: steady-state throughput (CUDA events, after warm-up), mean of the finished "
        "repeats with its 95% interval (n ≥ 3); × amp-bf16: FP8's throughput over amp-bf16's at "
        "the same setting, and the claim its interval allows. MFU: the training step's FLOPs "
        "(torch.utils.flop_counter) per second over the calibrated matmul roof of the mode "
        f"that did the work; {V.FP8_MFU_COUNTING}. The kernel split: shares of the FP8 cell's "
        "GPU kernel time (profiled in its first repeat): FP8 GEMMs, the other Tensor Core "
        "kernels (the GEMMs kept in bf16), and the casts and scales around them. Warm-up: "
        "compilation and autotuning until the step is steady, the median of the repeats and "
        "their range, of those whose compile cache missed (they compiled afresh) apart, after "
        "'cache miss'; it is in no ratio."])


def _warmup(r) -> str:
    """A cell's warm-up, the runs whose compile cache missed apart and never left out."""
    miss = stats.finite(r.get(f"{V.WARMUP_MISS}_n")) or 0
    return warmup_text(r) + (f"; cache miss {warmup_text(r, V.WARMUP_MISS)}" if miss else "")


def section(df: pd.DataFrame, crossover: pd.DataFrame | None) -> Section | None:
    """The verdict's FP8 section; None where the set has neither a crossover map nor a
    transformer in FP8."""
    sentences = [*crossover_sentences(crossover), *transformer_sentences(df),
                 *mfu_sentences(df)]
    return Section(TITLE, sentences, transformer_table(df)) if sentences else None


def bottom_line(crossover: pd.DataFrame | None) -> list[str]:
    """The crossover's one sentence per recipe in the bottom line."""
    if crossover is None:
        return []
    return [starts_to_pay_short(crossover, m) for m in fp8_crossover.FP8_MODES]
