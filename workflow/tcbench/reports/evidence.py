"""The verdict's evidence sentences for one configuration: whether its matrix work ran on
Tensor Cores, what limits its step (``analysis.diagnosis``) and, for an FP8 mode, where its
kernel time went (FP8 GEMMs, Tensor Core GEMMs in other types, the scaling around the FP8
GEMMs: ``kernels.kernel_split``). Each share is said as what was measured: the busy share
of the timed steps (the profiler's own figure only where a record has nothing else), the
kernels that do no matrix work as such, never "memory-bound" (bandwidth is not measured).
"""

from __future__ import annotations

from .. import kernels
from .. import vocabulary as V
from ..analysis import claims, diagnosis
from ..render.numbers import missing, percent, share
from ..stats import finite

# matrix kernels the classifier does not place on Tensor Cores: SIMT ones, and ones whose
# (mangled or truncated) names do not show the unit
OTHER_MATRIX = "on the ordinary units, or whose names do not show Tensor Core use"
SPLIT_NOTE = ("the record lists only its longest kernels ({} of kernel time), so the scaling "
              "kernels among the rest are not counted")


def busy_text(row) -> str:
    """The GPU's busy share, said as the figure it is (and why, where it is capped at 100%)."""
    busy = finite(row.get("gpu_busy_share"))
    under = finite(row.get("gpu_busy_share_under_profiler"))
    source = row.get("gpu_busy_share_source")
    capped = kernels.busy_note(row.get("gpu_busy_share_uncapped"),
                               row.get("kernel_time_over_profile_wall"))
    if not missing(source) and str(source).startswith("profiled"):
        return (f"{share(busy)} of the profiled steps' wall time (the record has no figure "
                f"for its timed steps; the profiler slows a host-bound step"
                + (f"; {capped}" if capped else "") + ")")
    out = f"{share(busy)} of the timed steps' wall time"
    if capped:
        out += f" ({capped})"
    elif under is not None and busy is not None and abs(under - busy) >= 0.05:
        out += f" ({share(under)} under the profiler, which slows the host)"
    return out


def _shares(row) -> str:
    tc, mm = row.get("tensor_core_share"), row.get("matmul_share")
    return f"{percent(tc)} of GPU kernel time ran in Tensor Core kernels" + (
        f", of {diagnosis.bound(row, 'matmul', True)}{percent(mm)} in matrix kernels (GEMMs, "
        f"convolutions) on any unit"
        if not missing(mm) else "")


def _fraction(row, frac) -> str:
    """The share of the matrix kernel time on Tensor Cores: at least that where the matrix
    share it is of is an upper bound."""
    return diagnosis.bound(row, "tensor_fraction", True) + percent(frac)


def on_tensor_cores(row, what: str) -> str:
    """Whether the matrix work ran on Tensor Cores, as the shares say."""
    frac = diagnosis.tensor_core_fraction(row)
    if row["precision"] == V.BASELINE:
        return f"**Tensor Cores:** strict fp32 keeps them off in {what}: {_shares(row)}."
    if diagnosis.matmuls_on_tensor_cores(row):
        return f"**Tensor Cores:** in {what}, the matrix work ran on Tensor Cores ({_shares(row)})."
    if frac is not None and frac >= 0.5:
        return (f"**Tensor Cores:** in {what}, {_fraction(row, frac)} of the matrix kernel "
                f"time ran on Tensor Cores, the rest in other matrix kernels ({OTHER_MATRIX}; "
                f"{_shares(row)}).")
    return f"**Tensor Cores:** in {what}, most matrix work did not run on Tensor Cores " \
           f"({_shares(row)})."


def _top(row) -> str:
    top = row.get("top_non_matrix_kernel")
    return "" if missing(top) else f"; the longest `{str(top)[:60]}`"


def _bound(row) -> str:
    """Why a matrix share is an upper bound, where it is (``kernels.reclassified``)."""
    if not diagnosis.matmul_bounded(row):
        return ""
    return (" (its record lists only its longest kernels; Inductor kernels among them whose "
            "fused ops include a convolution were counted as matrix work when it was made, "
            "and the others may be too)")


def limit(row, kind) -> str:
    """What limits the step, with the numbers the rule read."""
    kinds = diagnosis.kernel_kinds(row) or {}
    tc, simt, non = (percent(kinds.get(k)) for k in ("tensor", "simt", "non_matrix"))
    if simt != "–":
        simt, non = (diagnosis.bound(row, k, True) + v for k, v in (("simt", simt),
                                                                      ("non_matrix", non)))
    busy = busy_text(row)
    return {
        "input": f"the input pipeline: the GPU waited for the next batch "
                 f"{percent(row.get('data_wait_share'))} of each step",
        "host": f"the host: the GPU had a kernel running only {busy}, so Python, kernel "
                f"launches and synchronisation set the pace",
        "tensor": f"Tensor Core kernels: they took {tc} of kernel time, and the GPU was busy "
                  f"{busy}",
        "simt": f"matrix arithmetic off the Tensor Cores: {simt} of kernel time in other matrix "
                f"kernels ({OTHER_MATRIX}), the GPU busy {busy}",
        "non_matrix": f"non-matrix kernels: the GPU was busy {busy}, and {non} of its kernel "
                      f"time went to kernels that do no matrix work (elementwise, "
                      f"normalisation, pooling, optimiser, casts{_top(row)}){_casts(row)}; "
                      f"whether they are bound by memory bandwidth is not measured",
        "mixed": f"no one kind of kernel: the GPU was busy {busy}; of its kernel time {tc} "
                 f"went to Tensor Core kernels" + (f", {simt} to other matrix kernels and "
                                                   f"{non} to non-matrix kernels"
                                                   if simt != "–" else "") + _bound(row),
        None: "not measurable without a kernel profile"}[kind]


def _casts(row) -> str:
    """Of an FP8 cell's non-matrix time, its casts and scales, which its one-line limit
    (``diagnosis.kernel_shares``) gives apart: the same time, said both ways."""
    scaling = dict(diagnosis.kernel_shares(row)).get("fp8_scaling")
    return f", the FP8 casts and scales among them {percent(scaling)} of kernel time" if scaling \
        else ""


def fp8_split(row, what: str) -> str | None:
    """Where an FP8 configuration's kernel time went: FP8 GEMMs, Tensor Core GEMMs in other
    types, the FP8 scaling (amax, scale, cast) and the rest. From an older record's listed
    kernels the two Tensor Core shares are exact where the listed Tensor Core kernels hold all
    of its Tensor Core time; the scaling share is a lower bound, the rest an upper one."""
    fp8, other = finite(row.get("fp8_gemm_share")), finite(row.get("other_tensor_core_share"))
    scaling = finite(row.get("fp8_scaling_share"))
    if str(row["precision"]) not in claims.FP8 or fp8 is None:
        return None
    tc, mm = finite(row.get("tensor_core_share")) or 0.0, finite(row.get("matmul_share")) or 0.0
    partial = str(row.get("kernel_classes_from")) == "top kernels"
    outside = tc - fp8 - (other or 0.0) if partial else 0.0
    if partial and max(fp8, other or 0.0, scaling or 0.0) < 0.005:
        # no listed kernel is of the three kinds: lower bounds of 0% would say nothing
        return (f"**FP8 kernel time:** in {what}, not split: none of the kernels the record "
                f"lists is an FP8 GEMM, another Tensor Core GEMM or a scaling kernel "
                f"({SPLIT_NOTE.format(percent(row.get('kernel_classes_coverage')))}).")
    least, least_tc = ("at least " if partial else ""), ("at least " if outside >= 0.005 else "")
    s = (f"**FP8 kernel time:** in {what}, FP8 GEMMs took {least_tc}{percent(fp8)} of GPU "
         f"kernel time, Tensor Core GEMMs in other types (bf16, fp16, tf32) "
         f"{least_tc}{percent(other)} and the scaling around the FP8 GEMMs (amax, scale and "
         f"cast kernels) {least}{percent(scaling)}")
    if outside >= 0.005:
        s += f"; a further {percent(outside)} ran in Tensor Core kernels not listed"
    if mm - tc >= 0.005:
        s += f"; {diagnosis.bound(row, 'simt', True)}{percent(mm - tc)} in other matrix kernels"
    rest = max(1 - mm - (scaling or 0.0), 0.0)
    # the scaling share a lower bound makes the rest an upper one, a matrix share that is an
    # upper bound a lower one; both together leave it unbounded
    also = diagnosis.bound(row, "non_matrix", True)
    s += f"; the other kernels {('at most ' if not also else '') if partial else also}" \
         f"{percent(rest)}"
    if partial:
        s += f" ({SPLIT_NOTE.format(percent(row.get('kernel_classes_coverage')))})"
    return s + "."


def _unmeasured(row, what: str) -> str:
    why = diagnosis.why_unprofiled(not missing(row.get("compute_capability")))
    wait = row.get("data_wait_share")
    return (f"**Tensor Cores and bottleneck:** not measurable for {what} ({why})."
            + (f" It waited for data {percent(wait)} of each step." if not missing(wait)
               else ""))


def evidence(row, what: str) -> str:
    """Tensor Cores, what limits one configuration's step, and an FP8 mode's kernel split."""
    on_tc = diagnosis.matmuls_on_tensor_cores(row)
    kind = diagnosis.bottleneck(row)
    if on_tc is None and kind is None:
        return _unmeasured(row, what)
    parts = [] if on_tc is None else [on_tensor_cores(row, what)]
    parts.append(f"**What limits {what}:** {limit(row, kind)}.")
    split = fp8_split(row, what)
    return " ".join(parts + ([split] if split else []))


def _matrix_clause(row) -> str | None:
    """Whether the matrix work ran on Tensor Cores, as a clause."""
    on_tc = diagnosis.matmuls_on_tensor_cores(row)
    if on_tc is None:
        return None
    frac = diagnosis.tensor_core_fraction(row)
    if row["precision"] == V.BASELINE:
        return f"strict fp32 keeps Tensor Cores off ({_shares(row)})"
    if on_tc:
        return f"its matrix work ran on Tensor Cores ({_shares(row)})"
    if frac is not None and frac >= 0.5:
        return (f"{_fraction(row, frac)} of its matrix kernel time ran on Tensor Cores, the "
                f"rest in other matrix kernels ({OTHER_MATRIX}; {_shares(row)})")
    return f"most of its matrix work did not run on Tensor Cores ({_shares(row)})"


def _split_clause(row) -> str | None:
    """An FP8 cell's kernel time split, as a clause (``fp8_split`` in full)."""
    fp8 = finite(row.get("fp8_gemm_share"))
    if str(row["precision"]) not in claims.FP8 or fp8 is None:
        return None
    partial = str(row.get("kernel_classes_from")) == "top kernels"
    scaling = finite(row.get("fp8_scaling_share"))
    if partial and max(fp8, finite(row.get("other_tensor_core_share")) or 0.0,
                       scaling or 0.0) < 0.005:
        return (f"no FP8 GEMM, other Tensor Core GEMM or scaling kernel among the kernels its "
                f"record lists ({percent(row.get('kernel_classes_coverage'))} of kernel time)")
    least = "at least " if partial else ""
    return (f"FP8 GEMMs took {percent(fp8)} of kernel time and the casts and scales around "
            f"them {least}{percent(scaling)}")


def brief(row, what: str) -> str:
    """What limits one configuration's step, whether its matrix work ran on Tensor Cores and
    an FP8 mode's kernel split, in one sentence (``evidence`` says the same at length)."""
    on_tc, kind = diagnosis.matmuls_on_tensor_cores(row), diagnosis.bottleneck(row)
    if on_tc is None and kind is None:
        why = diagnosis.why_unprofiled(not missing(row.get("compute_capability")))
        return f"What limits {what} is not measurable ({why})."
    clauses = [c for c in (_matrix_clause(row), _split_clause(row)) if c]
    return f"What limits {what}: {limit(row, kind)}" + \
        "".join(f"; {c}" for c in clauses) + "."
