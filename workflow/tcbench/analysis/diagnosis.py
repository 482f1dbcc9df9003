"""What limits a cell's training step, named from its measurements: the one rule set that the
verdict, the tables and the figures share.

In this order (the first that applies):

``input``      the run is input-bound: the GPU waited for the next batch at least the run's
               ``input_bound_share`` of each step (data-wait share, CUDA events);
``host``       the GPU had a kernel running less than ``BUSY_LOW`` of the profiled wall time:
               Python, kernel launches and synchronisation set the pace, not the arithmetic;
``tensor``     at least ``CARRIED`` of GPU kernel time ran in Tensor Core kernels: the step is
               bound by Tensor Core arithmetic (the best case);
``simt``       at least ``CARRIED`` of kernel time ran in matrix kernels on the ordinary fp32
               units (strict fp32 GEMMs and convolutions, Tensor Cores off);
``memory``     otherwise: most kernel time is elementwise, normalisation, pooling, layout and
               optimiser kernels, which are bound by memory bandwidth;
None           not measurable (no kernel profile: a CPU, or profiling failed).

"The matrix work ran on Tensor Cores" is a separate fact (``matmuls_on_tensor_cores``): a cell
can run every GEMM and convolution on Tensor Cores and still be limited by memory-bound work
around them, which is what happens once those get fast.
"""

from __future__ import annotations

from ..stats import finite as _num

BUSY_LOW = 0.5       # GPU-busy share below which the host sets the pace
CARRIED = 0.5        # share of kernel time that makes a kind of kernel the step's main cost

NAMES = {"input": "the input pipeline", "host": "the host (launch overhead)",
         "tensor": "Tensor Core arithmetic", "simt": "fp32 arithmetic on the ordinary units",
         "memory": "memory-bound kernels", None: "not measurable without a kernel profile"}
SHORT = {"input": "input", "host": "host/launch", "tensor": "Tensor Cores",
         "simt": "fp32 units", "memory": "memory-bound", None: "not profiled"}


def _true(v) -> bool:
    return v is True or str(v) == "True"


def bottleneck(row) -> str | None:
    if _true(row.get("input_bound")):
        return "input"
    busy, tc = _num(row.get("gpu_busy_share")), _num(row.get("tensor_core_share"))
    if busy is None or tc is None:
        return None
    if busy < BUSY_LOW:
        return "host"
    if tc >= CARRIED:
        return "tensor"
    mm = _num(row.get("matmul_share"))
    if mm is not None and mm - tc >= CARRIED:
        return "simt"
    return "memory"


def matmuls_on_tensor_cores(row) -> bool | None:
    """Whether the cell's matrix kernels (GEMMs, convolutions) ran on Tensor Cores: most of
    the matrix kernel time is Tensor Core time. None without a profile."""
    tc, mm = _num(row.get("tensor_core_share")), _num(row.get("matmul_share"))
    if tc is None:
        return None
    if mm is None or mm == 0:
        return tc > 0
    return tc >= 0.5 * mm


def why_unprofiled(on_cuda: bool) -> str:
    """Why a cell has no kernel profile: a CPU cannot be profiled; on a CUDA device the profile
    is taken once per cell, in repeat 1, and that repeat's record is missing."""
    return ("its kernels are profiled once per cell, in repeat 1, which has no record" if on_cuda
            else "kernel profiling needs a CUDA device")
