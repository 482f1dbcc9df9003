"""What limits a cell's training step, named from its measurements: the one rule set that the
verdict, the tables and the figures share.

In this order (the first that applies):

``input``       the run is input-bound: the GPU waited for the next batch at least the run's
                ``input_bound_share`` of each step (data-wait share, CUDA events);
``host``        the GPU had a kernel running less than ``BUSY_LOW`` (the vocabulary's
                ``HOST_BOUND_BUSY_SHARE``: the share below which a cell is decided as
                host-bound, ``host_bound``) of the timed steps' wall
                time (``gpu_busy_share``: kernel time per step from the profile over the timed
                median step; the profiled steps' own figure only where a record has nothing
                else, ``gpu_busy_share_source``): Python, kernel launches and synchronisation
                set the pace, not the GPU;
otherwise the kernel time is split three ways: Tensor Core kernels (``tensor_core_share``),
matrix kernels on the ordinary units (``matmul_share`` less that) and everything else
(``1 - matmul_share``: elementwise, normalisation, pooling, optimiser, layout, casts). The
largest names the step when it holds at least ``CARRIED`` of kernel time and leads the next by
``MARGIN`` (so 51% against 49% is not called for either side):
``tensor``      Tensor Core kernels (GEMMs and convolutions on Tensor Cores);
``simt``        matrix kernels on the ordinary fp32 units (strict fp32, Tensor Cores off);
``non_matrix``  kernels that do no matrix work. Whether they are bound by memory bandwidth is
                not measured (no per-kernel bandwidth), so that is never said;
``mixed``       no kind of kernel carries the step;
None            not measurable (no kernel profile: a CPU, or profiling failed).

Whether "the matrix work ran on Tensor Cores" is a separate fact (``tensor_core_fraction``): a
cell can run its GEMMs on Tensor Cores and still spend most of its kernel time around them.
"""

from __future__ import annotations

from .. import vocabulary as V
from ..stats import finite as _num
from ..stats import flag

# GPU-busy share of the timed steps below which the host sets the pace: one threshold for
# naming the bottleneck and for deciding a cell as host-bound, so the two never disagree
BUSY_LOW = V.HOST_BOUND_BUSY_SHARE
CARRIED = 0.5        # share of kernel time that makes a kind of kernel the step's main cost
MARGIN = 0.1         # and its lead over the next kind, so that a near tie is called mixed
ALL_ON_TC = 0.95     # share of matrix kernel time on Tensor Cores that is "the matrix work"

NAMES = {"input": "the input pipeline", "host": "the host (launch overhead)",
         "tensor": "Tensor Core kernels carry most of the kernel time",
         "simt": "fp32 matrix arithmetic on the ordinary units",
         "non_matrix": "non-matrix kernels carry most of the kernel time (memory-boundness "
                       "not measured)",
         "mixed": "no kind of kernel carries most of the kernel time",
         None: "not measurable without a kernel profile"}
SHORT = {"input": "input", "host": "host/launch", "tensor": "Tensor Cores",
         "simt": "fp32 units", "non_matrix": "non-matrix kernels", "mixed": "mixed",
         None: "not profiled"}


def kernel_kinds(row) -> dict[str, float] | None:
    """The kernel time split three ways (``tensor``, ``simt``, ``non_matrix``); None without
    a profile. Without a matrix share, the Tensor Core share and the rest."""
    tc, mm = _num(row.get("tensor_core_share")), _num(row.get("matmul_share"))
    if tc is None:
        return None
    if mm is None:
        return {"tensor": tc, "rest": 1 - tc}
    return {"tensor": tc, "simt": max(mm - tc, 0.0), "non_matrix": max(1 - mm, 0.0)}


# what each share of kernel time is called where a label names it with its number
# (kernels: Tensor Core ones; an FP8 cell's FP8 GEMMs and its Tensor Core GEMMs in other types;
# matrix kernels off the Tensor Cores; an FP8 cell's casts and scales; those of no matrix work)
KERNEL_WORDS = {"tensor": "Tensor Core", "fp8_gemm": "FP8 GEMMs",
                "other_tensor_core": "other GEMMs", "simt": "other matrix",
                "fp8_scaling": "casts and scales", "non_matrix": "non-matrix"}


def kernel_shares(row) -> list[tuple[str, float]]:
    """The kernel time by kind, largest first: Tensor Core kernels (an FP8 cell's split into
    its FP8 GEMMs and the other Tensor Core GEMMs, ``kernels.kernel_split``), other matrix
    kernels, an FP8 cell's casts and scales, and the kernels that do no matrix work; [] without
    a profile."""
    kinds = kernel_kinds(row)
    if kinds is None or "rest" in kinds:
        return sorted(((k, v) for k, v in (kinds or {}).items() if k != "rest"),
                      key=lambda kv: kv[1], reverse=True)
    fp8 = _num(row.get("fp8_gemm_share"))
    if fp8 is not None and fp8 > 0 and str(row.get("kernel_classes_from")) == "all kernels":
        scaling = min(_num(row.get("fp8_scaling_share")) or 0.0, kinds["non_matrix"])
        kinds = {"fp8_gemm": fp8, "other_tensor_core": max(kinds.pop("tensor") - fp8, 0.0),
                 "simt": kinds["simt"], "fp8_scaling": scaling,
                 "non_matrix": kinds["non_matrix"] - scaling}
    return sorted(kinds.items(), key=lambda kv: kv[1], reverse=True)


# A record summarised before ``kernels.RULES`` may count fused Inductor kernels below its
# listed ones as matrix work (``kernels.reclassified``): its matrix share is an upper bound,
# and so are the shares read from it, each in its own direction.
BOUND_SIGNS = {"matmul": "≤", "simt": "≤", "non_matrix": "≥", "tensor_fraction": "≥"}
BOUND_WORDS = {"≤": "at most ", "≥": "at least "}
BOUND_NOTE = ("≤ and ≥: the record was made before Inductor's fused kernels were told apart by "
              "name, and counted those whose fused ops include a convolution as matrix work; "
              "only its listed longest kernels can be counted again, so its matrix share is an "
              "upper bound: the matmul and other-matrix shares are at most, the non-matrix "
              "share at least what they say.")


def matmul_bounded(row) -> bool:
    """Whether the row's matrix share is an upper bound (``matmul_share_bound``)."""
    return str(row.get("matmul_share_bound")) == "at most"


def bound(row, kind: str, words: bool = False) -> str:
    """What a share of ``kind`` (``BOUND_SIGNS``' keys) is in ``row``: "≤" or "≥" where the
    matrix share is an upper bound, with ``words`` "at most " or "at least "; "" where exact."""
    sign = BOUND_SIGNS.get(kind, "") if matmul_bounded(row) else ""
    return BOUND_WORDS.get(sign, "") if words else sign


def short(row, most: int = 2) -> str:
    """What limits a cell, short: the input or the host, or the ``most`` largest shares of its
    kernel time with their numbers ("non-matrix 71%, Tensor Core 29%", ``KERNEL_WORDS``), never
    a unit's name alone. Where the matrix share counted names that cannot all be seen again
    (``matmul_share_bound``), the other matrix kernels' share is at most what it says and the
    non-matrix one at least."""
    kind = bottleneck(row)
    if kind in (None, "input", "host"):
        return SHORT[kind]
    return ", ".join(f"{KERNEL_WORDS[k]} {bound(row, k)}{v:.0%}"
                     for k, v in kernel_shares(row)[:most])


def bottleneck(row) -> str | None:
    if flag(row.get("input_bound")):
        return "input"
    busy, kinds = _num(row.get("gpu_busy_share")), kernel_kinds(row)
    if busy is None or kinds is None:
        return None
    if busy < BUSY_LOW:
        return "host"
    ranked = sorted(kinds.items(), key=lambda kv: kv[1], reverse=True)
    (top, share), runner_up = ranked[0], ranked[1][1] if len(ranked) > 1 else 0.0
    if top == "rest" or share < CARRIED or share - runner_up < MARGIN:
        return "mixed"
    return top


def host_bound(row) -> bool:
    """Whether the host set the cell's pace: the GPU busy less than ``BUSY_LOW`` of its timed
    steps, the input pipeline not the cause (an input-bound cell waits for its loader, and is
    named so). Such a cell's precision ratios need an interleaved comparison
    (``tcbench.job.interleave``): processes run minutes apart measure the host's drift too."""
    busy = _num(row.get("gpu_busy_share"))
    return busy is not None and busy < BUSY_LOW and not flag(row.get("input_bound"))


def non_matrix_share(row) -> float | None:
    """The share of kernel time in kernels that do no matrix work."""
    mm = _num(row.get("matmul_share"))
    return None if mm is None else max(1 - mm, 0.0)


def tensor_core_fraction(row) -> float | None:
    """The share of the matrix kernel time that ran on Tensor Cores. None without a profile
    or without matrix work."""
    tc, mm = _num(row.get("tensor_core_share")), _num(row.get("matmul_share"))
    if tc is None or not mm:
        return None
    return min(tc / mm, 1.0)


def matmuls_on_tensor_cores(row) -> bool | None:
    """Whether the cell's matrix work (GEMMs, convolutions) ran on Tensor Cores: all but a
    sliver (``ALL_ON_TC``) of its matrix kernel time. None without a profile."""
    frac = tensor_core_fraction(row)
    if frac is None:
        tc = _num(row.get("tensor_core_share"))
        return None if tc is None else tc > 0
    return frac >= ALL_ON_TC


def why_unprofiled(on_cuda: bool) -> str:
    """Why a cell has no kernel profile: a CPU cannot be profiled; on a CUDA device the profile
    is taken once per cell, in repeat 1, and that repeat's record is missing."""
    return ("its kernels are profiled once per cell, in repeat 1, which has no record" if on_cuda
            else "kernel profiling needs a CUDA device")
