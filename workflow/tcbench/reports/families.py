"""The verdict's answer to "which architectures do Tensor Cores help?": for a model zoo (an
experiment run over several models), one row per model family at its judged mode's setting:
fp32's throughput (in the unit the family's workload counts, tokens/s for a transformer, as its
own section gives it), each reduced mode's ratio to its one baseline (fp32, amp-bf16 for an FP8
mode: ``claims.baseline_of``) with the claim its interval allows, the
judged mode (the answer row's, ``reports.answer``) with its memory, and what limits it, with the
numbers the limit rests on: where the judged mode's kernel time went (Tensor Core kernels,
other matrix kernels, kernels that do no matrix work) and how busy the GPU was in the timed
steps. Every phrase is ``reports.phrases``'; nothing here judges anew.
"""

from __future__ import annotations

from .. import stats
from .. import vocabulary as V
from ..analysis import claims, diagnosis, throughput
from ..render.numbers import MISSING, marked_value, percent, share, times, with_interval
from ..render.table import Table
from .answer import GATE_WORDS, Answer
from .findings import Section
from ..render.settings import setting_text
from .phrases import (claim_said, decided, judged_ratio, limits, memory_against, n_ok,
                      same_setting, throughput_text)

TITLE = "Model families on this GPU"
KERNEL_NOTE = ("Kernel time: shares of the judged mode's GPU kernel time (profiled in its "
               "first repeat) in Tensor Core kernels / other matrix kernels (GEMMs and "
               "convolutions on the ordinary units, or whose names do not show Tensor Core use) "
               "/ kernels that do no matrix work (elementwise, normalisation, pooling, "
               "optimiser, casts); whether those are bound by memory bandwidth is not measured. "
               "GPU busy: the share of the timed steps' wall time in which a kernel ran.")


def _ratio(j: claims.Judgement | None, base: str) -> str:
    """A mode's ratio to its baseline and its claim, compact: the column names the baseline
    ``base``, the cell only one that differs from it."""
    if j is None or j.estimate.value is None:
        return MISSING
    e = j.estimate
    shown = judged_ratio(j).removesuffix(f" {j.baseline}") if e.method == stats.BIMODAL else \
        with_interval(e.value, e.low, e.high, e.n, fmt=times, kind=e.method)
    other = f" {j.baseline}" if j.baseline != base else ""
    return f"{shown}{other}: {claim_said(j)}"


def _kernels(row) -> str:
    kinds = diagnosis.kernel_kinds(row)
    if not kinds or "simt" not in kinds:
        return MISSING if not kinds else f"{percent(kinds['tensor'])} Tensor Cores"
    return " / ".join(diagnosis.bound(row, k) + percent(kinds[k])
                      for k in ("tensor", "simt", "non_matrix"))


def _busy(row) -> str:
    source = row.get("gpu_busy_share_source")
    profiled = isinstance(source, str) and source.startswith("profiled")
    return share(row.get("gpu_busy_share")) + (" (profiled steps)" if profiled else "")


def reduced_modes(families: list[tuple[str, Answer]]) -> list[str]:
    ran = {str(p) for _, a in families for p in a.findings.reduced["precision"]}
    return [p for p in V.REDUCED if p in ran]


def speed_columns(families: list[tuple[str, Answer]]) -> list[str]:
    """The throughput columns of fp32 the families need: each family's in the unit its own
    section gives (``throughput.main_column``: tokens/s for a transformer, else samples/s)."""
    used = {throughput.main_column(a.findings.df) for _, a in families}
    return [c for c in (V.HEADLINE, throughput.TOKENS) if c in used]


def family_table(families: list[tuple[str, Answer]]) -> Table:
    modes, speeds = reduced_modes(families), speed_columns(families)
    cols = ["family", "setting", *(f"{V.BASELINE} {throughput.unit(c)}" for c in speeds),
            *(f"{m} × {claims.baseline_of(m)}" for m in modes), "judged mode", "peak memory ×",
            "kernel time: Tensor Cores / other matrix / non-matrix", "GPU busy", "limited by",
            "how it was decided"]
    rows = []
    for model, a in families:
        x, j = a.findings, a.judgement
        r = x.focus
        fp32, own = same_setting(x.df, r, V.BASELINE), throughput.main_column(x.df)
        speed = [throughput_text(fp32, c) if fp32 is not None and c == own else MISSING
                 for c in speeds]
        cells = [_ratio(x.judgement(c), claims.baseline_of(m))
                 if (c := same_setting(x.df, r, m)) is not None and n_ok(c) else MISSING
                 for m in modes]
        judged = MISSING if j is None else f"{r['precision']}: {claim_said(j)}"
        rows.append([model, setting_text(r, x.axes), *speed, *cells, judged,
                     MISSING if j is None else memory_against(j, x.all), _kernels(r), _busy(r),
                     limits(r, x.all), MISSING if j is None else decided(j, x.all)])
    bounded = any(diagnosis.matmul_bounded(a.findings.focus) for _, a in families)
    return Table("", cols, rows, align="ll" + "r" * (len(speeds) + len(modes)) + "lrrrll",
                 notes=[KERNEL_NOTE, *([diagnosis.BOUND_NOTE] if bounded else [])])


def ranking(judged: list[tuple[str, Answer]]) -> list[tuple[str, list[tuple[str, Answer]]]]:
    """The judged families by the baseline their judged mode's ratio is over (fp32 first,
    then amp-bf16 for an FP8 mode, ...), each largest gain first: a ratio is ranked only
    against ratios over the same baseline."""
    groups: dict[str, list[tuple[str, Answer]]] = {V.BASELINE: []}
    for m, a in sorted(judged, key=lambda t: -t[1].judgement.estimate.value):
        groups.setdefault(a.judgement.baseline, []).append((m, a))
    return [(base, ranked) for base, ranked in groups.items() if ranked]


def _ranked(base: str, ranked: list[tuple[str, Answer]]) -> str:
    own = " (an FP8 mode's baseline)" if base == V.FP8_BASELINE else ""
    return (f"The judged mode against {base}{own}, largest gain first, with the share of its "
            "kernel time in Tensor Core kernels: " + ", ".join(
                f"{m} {marked_value(a.judgement.estimate, times)} "
                f"({a.judgement.row['precision']}, {claim_said(a.judgement)}; "
                f"{percent(a.judgement.row.get('tensor_core_share'))})"
                for m, a in ranked) + ".")


def sentences(families: list[tuple[str, Answer]]) -> list[str]:
    """Which families gain most and least, against each baseline apart, what the least held
    back, which cells no claim could be drawn from and why."""
    judged = [(m, a) for m, a in families
              if a.judgement is not None and a.judgement.estimate.value is not None]
    out = []
    if judged:
        groups = ranking(judged)
        out += [_ranked(base, ranked) for base, ranked in groups]
        ranked = [t for _, g in groups for t in g]
        held = [(m, a.judgement.row) for m, a in ranked
                if diagnosis.bottleneck(a.judgement.row) == "non_matrix"]
        if held:
            out.append(f"In {len(held)} of {len(families)} families, kernels that do no matrix "
                       f"work (which Tensor Cores do not run) take most of the judged mode's "
                       f"kernel time: " + ", ".join(
                           f"{m} {diagnosis.bound(r, 'non_matrix', True)}"
                           f"{percent(diagnosis.kernel_kinds(r)['non_matrix'])}"
                           for m, r in held) + ".")
    gated = []
    for m, a in families:
        x = a.findings
        for _, c in x.reduced.iterrows():
            j = x.judgement(c)
            if j is not None and j.claim in GATE_WORDS:
                gated.append(f"{m} {c['precision']} ({GATE_WORDS[j.claim]})")
    if gated:
        out.append("Not judged, their repeats cannot decide them: " + ", ".join(gated) +
                   "; an interleaved comparison would.")
    return out


def section(families: list[tuple[str, Answer]]) -> Section | None:
    """The family section; None where the set has no model zoo. ``families``: each model
    of a multi-model experiment, with its answer row."""
    families = [(m, a) for m, a in families if a.findings is not None]
    if not families:
        return None
    return Section(TITLE, sentences(families), family_table(families))
