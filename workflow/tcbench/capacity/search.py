"""The searches alone, on any probe function; no processes, no files.

- ``search``: doubling from ``start`` until a probe does not fit (or ``max`` fits), then
  bisection;
- ``confirm``: from a predicted limit, the prediction and one step up or down, then bisection on
  that bracket; a prediction that misses (no bracket) goes on in steps twice as long each time,
  up (too low) or down (too high), as the doubling search does, then bisects.

Both assume that what fits at a batch size fits at any smaller one, work on the multiples of
``resolution`` and return the status and the bounds: ``largest_ok`` fits, ``smallest_oom`` does
not, and ``order`` the batch sizes probed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Outcome:
    """What one probe says: ``fits`` True/False, or None when the search cannot go on."""
    fits: bool | None
    status: str
    reason: str | None = None


class _Stopped(Exception):
    """A probe that neither fitted nor ran out of memory (a crash, an unsupported mode)."""

    def __init__(self, out: Outcome, bs: int):
        super().__init__(out.status)
        self.out, self.bs = out, bs


class _Bounds:
    """What the probes have shown so far: the largest size that fitted, the smallest that did
    not, and every size asked, in order."""

    def __init__(self, probe: Callable[[int], Outcome], known: dict[int, Outcome] | None = None):
        self.probe, self.lo, self.hi, self.order = probe, 0, None, []
        self.missed = False   # a prediction's first step did not bracket the limit
        for bs, out in (known or {}).items():
            self.note(bs, out)

    def note(self, bs: int, out: Outcome) -> bool:
        if out.fits is None:
            raise _Stopped(out, bs)
        if out.fits:
            self.lo = max(self.lo, bs)
        else:
            self.hi = bs if self.hi is None else min(self.hi, bs)
        return out.fits

    def ask(self, bs: int) -> bool:
        self.order.append(bs)
        return self.note(bs, self.probe(bs))

    def result(self, status: str, reason: str | None = None) -> dict:
        return {"status": status, "status_reason": reason, "largest_ok": self.lo or None,
                "smallest_oom": self.hi, "order": self.order}


def _grid(bs: float, resolution: int) -> int:
    return int(bs) // resolution * resolution


def _bisect(b: _Bounds, resolution: int) -> dict:
    while b.hi - b.lo > resolution:
        b.ask(_grid((b.lo + b.hi) // 2, resolution))  # strictly between: both on the grid
    if not b.lo:
        return b.result("none", f"batch size {b.hi} (the resolution) already runs out of memory")
    return b.result("found")


def _double(b: _Bounds, bs: int, maximum: int) -> dict | None:
    """Doubling from ``bs`` until a size does not fit; a result when ``maximum`` fits."""
    while b.ask(bs):
        if bs >= maximum:
            return b.result("capped", f"the largest batch size tried (capacity.max={maximum}) "
                            f"fits; the capacity is at least that")
        bs = min(bs * 2, maximum)
    return None


def _stopped(b: _Bounds, stop: _Stopped) -> dict:
    return b.result(stop.out.status, f"batch size {stop.bs}: {stop.out.reason}")


def _check_grid(resolution: int, **sizes: int) -> None:
    if resolution < 1 or any(v % resolution or v <= 0 for v in sizes.values()):
        shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
        raise ValueError(f"{shown}, resolution={resolution}: need positive multiples of the "
                         f"resolution")


def search(probe: Callable[[int], Outcome], start: int, maximum: int, resolution: int) -> dict:
    """Doubling from ``start`` until a probe does not fit (or ``maximum`` fits), then bisection
    on the multiples of ``resolution``."""
    if start % resolution or maximum % resolution or not 0 < start <= maximum:
        raise ValueError(f"start={start}, max={maximum}, resolution={resolution}: need "
                         f"0 < start <= max, both multiples of resolution")
    b = _Bounds(probe)
    try:
        return _double(b, start, maximum) or _bisect(b, resolution)
    except _Stopped as stop:
        return _stopped(b, stop)


def _gallop_up(b: _Bounds, bs: int, step: int, maximum: int) -> dict | None:
    """Steps of ``step``, 2·``step``, 4·``step``... up from ``bs`` until a size does not fit;
    a result when ``maximum`` fits. ``b.missed`` once a step fits: the limit is beyond it."""
    while True:
        bs = min(bs + step, maximum)
        if not b.ask(bs):
            return None
        b.missed = True
        if bs >= maximum:
            return b.result("capped", f"capacity.max={maximum} fits; the capacity is at least "
                            f"that")
        step *= 2


def _gallop_down(b: _Bounds, bs: int, step: int, resolution: int) -> None:
    """Steps of ``step``, 2·``step``, 4·``step``... down from ``bs`` until a size fits, or a
    size known to fit (or nothing) is reached: the bisection takes it from there. ``b.missed``
    once a step does not fit."""
    while True:
        bs = _grid(bs - step, resolution)
        if bs <= b.lo or b.ask(bs):
            return
        b.missed = True
        step *= 2


def confirm(probe: Callable[[int], Outcome], predicted: int, step: int, resolution: int,
            maximum: int, known: dict[int, Outcome] | None = None) -> dict:
    """The limit around ``predicted`` (on the grid, at most ``maximum``): probe it, then one
    ``step`` up (it fitted) or down (it did not); a bracket is then bisected. A prediction
    that misses (the step's size agrees with the prediction's) goes on in steps twice as long
    each time, as the doubling search does, until a size brackets the limit. ``known`` are
    outcomes already measured (the fit's small batches): they bound the search too. The result
    says ``prediction``: "bracketed" (within one step), "too low" or "too high"."""
    _check_grid(resolution, predicted=predicted, step=step, max=maximum)
    b = _Bounds(probe, known)
    first, miss = min(predicted, maximum), "too low"
    try:
        if b.ask(first):
            capped = b.result("capped", f"the prediction {predicted} reaches capacity.max="
                              f"{maximum}, which fits; the capacity is at least that") \
                if first >= maximum else _gallop_up(b, first, step, maximum)
            if capped:
                return capped | {"prediction": miss if b.missed else "bracketed"}
        else:
            miss = "too high"
            _gallop_down(b, first, step, resolution)
        result = _bisect(b, resolution)
    except _Stopped as stop:
        result = _stopped(b, stop)
    return result | {"prediction": miss if b.missed else "bracketed"}
