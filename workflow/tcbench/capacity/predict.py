"""The prediction of a capacity search: peak memory is a + b·batch (activations grow linearly
with the batch; weights, gradients and optimiser state do not), fitted through probes at two
small batch sizes, and the largest batch whose peak fits the memory the allocator can have.

The counter is torch.cuda.max_memory_allocated (on a CPU with a memory_limit_bytes, the
simulated budget's peak). The budget is the device's total memory less what the allocator
cannot have: the CUDA context, the libraries' own memory and any other process, measured in
the probe's record at the end of its loop as total − free − reserved (torch.cuda.mem_get_info
and torch.cuda.memory_reserved at one moment); a memory_limit_bytes lowers it further. The
allocator rounds and fragments its blocks, so the peak reserved exceeds the peak allocated:
the prediction is an upper estimate, and the probes around it decide."""

from __future__ import annotations


def peak_memory(record: dict) -> tuple[int | None, str | None]:
    m = record.get("metrics") or {}
    if m.get("max_memory_allocated_bytes") is not None:
        return m["max_memory_allocated_bytes"], "torch.cuda.max_memory_allocated"
    if m.get("simulated_peak_bytes") is not None:
        return m["simulated_peak_bytes"], "simulated"
    return None, None


def fit(points: dict[int, int]) -> tuple[float, float]:
    """``(a, b)`` of peak = a + b·batch through two (or more: least squares) batch sizes."""
    if len(points) < 2:
        raise ValueError(f"a line needs two batch sizes, got {sorted(points)}")
    xs, ys = list(points), [float(points[x]) for x in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if not sxx:
        raise ValueError(f"a line needs two different batch sizes, got {xs}")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def budget(record: dict, memory_limit_bytes: int | None) -> tuple[int | None, str]:
    """The memory a probe's allocator can have, and how it was found."""
    m = record.get("metrics") or {}
    total, free, reserved = (m.get(k) for k in ("device_total_bytes", "device_free_bytes",
                                                 "memory_reserved_bytes"))
    if None not in (total, free, reserved):
        outside = total - free - reserved
        room = total - outside
        said = (f"{total} bytes of device memory less {outside} outside the allocator "
                f"(CUDA context, libraries, other processes: total − free − reserved)")
        if memory_limit_bytes is not None and memory_limit_bytes < room:
            return memory_limit_bytes, f"memory_limit_bytes={memory_limit_bytes} ({said})"
        return room, said
    if memory_limit_bytes is not None:
        return memory_limit_bytes, f"memory_limit_bytes={memory_limit_bytes} (simulated)"
    return None, "the probes measured no device memory (a CPU without memory_limit_bytes)"


def predict(records: dict[int, dict], memory_limit_bytes: int | None,
            resolution: int) -> dict:
    """The prediction from the fit probes' records (batch size -> record, all fitted): what
    goes into the search's result, with ``predicted`` (on the grid) or None and a reason."""
    points, counters = {}, set()
    for bs, r in sorted(records.items()):
        peak, counter = peak_memory(r)
        if peak is not None:
            points[bs] = peak
            counters.add(counter)
    room, how = budget(records[max(records)], memory_limit_bytes)
    out = {"fit_batch_sizes": sorted(records),
           "peak_memory_bytes": [{"batch_size": k, "bytes": v} for k, v in points.items()],
           "counter": ", ".join(sorted(counters)) or None, "budget_bytes": room,
           "budget_source": how, "intercept_bytes": None, "bytes_per_sample": None,
           "raw": None, "predicted": None, "reason": None}
    if room is None or len(points) < 2:
        return out | {"reason": how if room is None else
                      f"peak memory measured at {len(points)} of the fit's batch sizes"}
    a, b = fit(points)
    out |= {"intercept_bytes": round(a), "bytes_per_sample": round(b, 1)}
    if b <= 0:
        return out | {"reason": f"peak memory does not grow with the batch ({points})"}
    raw = (room - a) / b
    return out | {"raw": round(raw, 1),
                  "predicted": max(int(raw) // resolution * resolution, resolution)}
