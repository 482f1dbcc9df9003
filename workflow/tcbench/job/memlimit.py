"""A memory budget for one job (``memory_limit_bytes`` in the job spec): how the capacity study
finds the largest batch that fits, and how the tests provoke out-of-memory on purpose.

On a CUDA device the budget is real: ``torch.cuda.set_per_process_memory_fraction`` caps the
caching allocator, which then raises ``torch.OutOfMemoryError`` exactly as a smaller GPU would.
The CUDA context and anything allocated outside PyTorch's allocator are not counted.

On a CPU there is no allocator to cap, so the budget is *simulated*: while a step runs, the
bytes of the distinct tensors autograd saves for the backward pass (the activations) are added
to the bytes of the parameters and their gradients, and ``torch.OutOfMemoryError`` is raised
when the sum passes the limit. It is a model that grows with the batch size and shrinks under
autocast the way activation memory does; its numbers are not measurements, and the record says
which of the two a limit was.
"""

from __future__ import annotations

import contextlib

import torch

CUDA_KIND = "cuda-per-process-memory-fraction"
SIMULATED_KIND = "simulated-saved-tensors"


def check(limit) -> int | None:
    if limit is None:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"memory_limit_bytes={limit!r} must be a positive integer")
    return limit


class Budget:
    """Context manager around the part of a job that allocates; ``info()`` goes into the record.

    Enter it before anything is allocated (the CUDA cap must be in place first) and call
    ``watch(model)`` once the model exists (the simulated CPU budget needs its parameters)."""

    def __init__(self, limit: int | None, device: torch.device):
        self.limit, self.device = limit, device
        self.kind = None if limit is None else CUDA_KIND if device.type == "cuda" else SIMULATED_KIND
        self.peak_bytes = 0
        self._stack = contextlib.ExitStack()
        self._fraction = None

    # -- CUDA: the allocator enforces it ------------------------------------------------------
    def _enter_cuda(self):
        # The allocator wants an index: a bare torch.device("cuda") is refused.
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        total = torch.cuda.get_device_properties(index).total_memory
        self._fraction = float(min(self.limit / total, 1.0))
        torch.cuda.set_per_process_memory_fraction(self._fraction, index)
        self._stack.callback(torch.cuda.set_per_process_memory_fraction, 1.0, index)

    # -- CPU: a simulated budget over what autograd keeps for backward -------------------------
    def watch(self, model: torch.nn.Module) -> None:
        if self.limit is None or self.device.type == "cuda":
            return
        params = list(model.parameters())
        param_ptrs = {p.untyped_storage().data_ptr() for p in params}
        base = sum(p.numel() * p.element_size() for p in params) * 2  # weights + gradients
        seen: set[int] = set()
        used = [base]

        def new_step(*_):
            seen.clear()
            used[0] = base

        def pack(t):
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
            if ptr not in seen and ptr not in param_ptrs:
                seen.add(ptr)
                used[0] += storage.nbytes()
                self.peak_bytes = max(self.peak_bytes, used[0])
                if used[0] > self.limit:
                    raise torch.cuda.OutOfMemoryError(
                        f"simulated memory budget exceeded: {used[0]} bytes of parameters, "
                        f"gradients and saved activations > memory_limit_bytes={self.limit}")
            return t

        handle = model.register_forward_pre_hook(new_step)
        self._stack.callback(handle.remove)
        self.peak_bytes = base
        self._stack.enter_context(torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))

    def __enter__(self):
        if self.limit is not None and self.device.type == "cuda":
            self._enter_cuda()
        return self

    def __exit__(self, *exc):
        self._stack.close()
        return False

    def info(self) -> dict:
        """What the record says about the limit (empty when there is none)."""
        if self.limit is None:
            return {}
        out = {"memory_limit_bytes": self.limit, "memory_limit_kind": self.kind}
        if self.kind == CUDA_KIND:
            out["memory_limit_fraction"] = self._fraction
        else:
            out["simulated_peak_bytes"] = self.peak_bytes
        return out
