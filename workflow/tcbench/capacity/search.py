"""The search alone: doubling, then bisection, on any probe function. No processes, no files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Outcome:
    """What one probe says: ``fits`` True/False, or None when the search cannot go on."""
    fits: bool | None
    status: str
    reason: str | None = None


def search(probe: Callable[[int], Outcome], start: int, maximum: int, resolution: int) -> dict:
    """Doubling from ``start`` until a probe does not fit (or ``maximum`` fits), then bisection
    on the multiples of ``resolution``. Assumes what fits at a batch size fits at any smaller
    one. Returns the status and the bounds: ``largest_ok`` fits, ``smallest_oom`` does not."""
    if start % resolution or maximum % resolution or not 0 < start <= maximum:
        raise ValueError(f"start={start}, max={maximum}, resolution={resolution}: need "
                         f"0 < start <= max, both multiples of resolution")
    lo, hi, tried = 0, None, []

    def ask(bs):
        out = probe(bs)
        tried.append(bs)
        return out

    def stop(out, bs):
        return {"status": out.status, "status_reason": f"batch size {bs}: {out.reason}",
                "largest_ok": lo or None, "smallest_oom": hi, "order": tried}

    bs = start
    while True:
        out = ask(bs)
        if out.fits is None:
            return stop(out, bs)
        if not out.fits:
            hi = bs
            break
        lo = bs
        if bs >= maximum:
            return {"status": "capped", "status_reason": f"the largest batch size tried "
                    f"(capacity.max={maximum}) fits; the capacity is at least that",
                    "largest_ok": lo, "smallest_oom": None, "order": tried}
        bs = min(bs * 2, maximum)
    while hi - lo > resolution:
        mid = (lo + hi) // 2 // resolution * resolution  # strictly between: both are multiples
        out = ask(mid)
        if out.fits is None:
            return stop(out, mid)
        lo, hi = (mid, hi) if out.fits else (lo, mid)
    if not lo:
        return {"status": "none", "status_reason": f"batch size {hi} (the resolution) already "
                f"runs out of memory", "largest_ok": None, "smallest_oom": hi, "order": tried}
    return {"status": "found", "status_reason": None, "largest_ok": lo, "smallest_oom": hi,
            "order": tried}
