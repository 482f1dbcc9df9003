"""When should FP8 pay? A prediction of the FP8/bf16 step-time ratio of a stack of square
``Linear(width, width)`` layers trained on ``tokens`` rows a step (the recipe MLP of
config/fp8_crossover.yaml), from the device's own measured ceilings: the calibration's bf16 and
FP8 matmul roofs and its copy bandwidth (tcbench.job.calibrate). Pure arithmetic, no torch.

The model, per Linear and training step (T = tokens, w = width):

* GEMMs: forward, input gradient and weight gradient, 3 x 2 T w^2 FLOPs, at the mode's roof
  (bf16 for amp-bf16; the recipe's FP8 roof for fp8-*).
* Memory traffic at the copy bandwidth, what the GEMMs do not hide: in both modes the
  activations each GEMM reads and writes in bf16 (``COMMON_ACTIVATION_BYTES`` x T w), the fp32
  master weight, its gradient and SGD's update (``COMMON_WEIGHT_BYTES`` x w^2); bf16 autocast
  also casts the weight to bf16 once (``BF16_WEIGHT_CAST_BYTES`` x w^2). FP8 instead moves
  ``FP8_BYTES[recipe]``: for the input, the weight and the output gradient an amax pass (read)
  and a cast pass (read, write one byte an element), plus the transposed copies the weight
  gradient's GEMM needs (rowwise: scaled along the other axis, so amax and cast again).

What it leaves out, on purpose: kernel launch and framework time (they make small shapes slower
than any roofline says; where the measured map falls short of the prediction at small shapes,
that is the gap), wave quantisation and the roofs' dependence on shape (the calibration's roofs
are of one large square product). torch.compile fuses amax and cast where it can, so the byte
counts are of the fused kernels torchao's float8 emits under compile, an estimate, named here.

Beside the prediction, the measured map (``cells``, ``ratios``): per shape and FP8 mode the
throughput ratio over amp-bf16 with its interval and claim (``tcbench.stats``), from the
records of the crossover's experiments. A shape whose FP8 runs did not finish (``unsupported``
on a CPU or before compute capability 8.9) has no ratio and says why: no measurement is
invented for it.

Where a shape has an interleaved comparison (tcbench.job.interleave: amp-bf16 and the FP8 modes
built in one process and alternated in rounds, in each of the setting's independent processes;
``compared`` reads each process's per-round throughputs) in which both the FP8 mode and
amp-bf16 ran, the shape's ratio, interval, claim and ``pays`` are that comparison's, as
interleaved.csv has them (``stats.replicated_paired``: over its processes, the geometric mean
of their medians with a t interval from three on; one process: the median of its per-round
ratios with a block-bootstrap interval; the host's drift between rounds cancels in either),
``processes`` and ``rounds`` (each process's) say the level, and ``decided_by`` says so
(``claims.INTERLEAVED``; else ``claims.REPEATS``, the per-process repeats' ratio of means).
The peak-memory ratio is still the records' (a comparison measures no memory), none without
them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import stats
from .. import vocabulary as V
from .claims import INTERLEAVED, REPEATS

FP8_MODES = {m.name: m.fp8_recipe for m in V.MODES if m.fp8_recipe}
BASELINE = V.FP8_BASELINE
PAYS = stats.GAIN    # the study's "pays off" threshold, as everywhere in tcbench
WORKLOAD = "amp_recipe"
GEMMS_PER_LINEAR = 3               # forward, grad input, grad weight
COMMON_ACTIVATION_BYTES = 3 * 2 * 2   # 3 GEMMs, each reads one T x w operand and writes one, bf16
COMMON_WEIGHT_BYTES = 4 * 4        # fp32 weight read, gradient write + read, weight write (SGD)
BF16_WEIGHT_CAST_BYTES = 4 + 2     # fp32 read, bf16 write
# (bytes per T x w element, bytes per w x w element) the FP8 casts and scales move
FP8_BYTES = {
    # input, grad output: amax read (2) + cast read (2) + write (1), and a transposed fp8 copy
    # for the weight gradient (read 1 + write 1): 7 each; weight: amax (4) + cast (4 + 1) +
    # transposed copy (1 + 1) = 11
    "tensorwise": (2 * 7, 11),
    # rowwise: input and grad output scaled along rows for one GEMM and along columns for the
    # other, so amax and cast twice from bf16: 2 x 5 each; weight likewise from fp32: 2 x 9
    "rowwise": (2 * 10, 18),
}


@dataclass(frozen=True)
class Roofs:
    """A device's measured ceilings, in FLOP/s and bytes/s."""

    bf16_flops: float
    fp8_flops: dict            # recipe -> FLOP/s
    bandwidth: float           # copy bandwidth, bytes read + written per second

    @classmethod
    def from_calibration(cls, calibration: dict, where: str = "calibration.json") -> "Roofs":
        """From a calibration.json (tcbench.job.calibrate); one without the copy bandwidth (made
        before it was measured) or without an FP8 roof is an error that says what to redo."""
        modes = calibration.get("modes") or {}
        memory = calibration.get("memory") or {}
        missing = [m for m in (BASELINE, *FP8_MODES) if not (modes.get(m) or {}).get("tflops")]
        if missing:
            raise ValueError(f"{where} has no matmul roof for {', '.join(missing)} (status: "
                             + ", ".join(f"{m}: {(modes.get(m) or {}).get('status', 'absent')}"
                                         for m in missing)
                             + "); the FP8 prediction needs a GPU of compute capability >= 8.9")
        if not memory.get("copy_bandwidth_bytes_per_s"):
            raise ValueError(f"{where} has no copy bandwidth (made before tcbench measured "
                             f"it): delete it, or snakemake --forcerun calibrate, to remake it")
        return cls(modes[BASELINE]["tflops"] * 1e12,
                   {r: modes[m]["tflops"] * 1e12 for m, r in FP8_MODES.items()},
                   memory["copy_bandwidth_bytes_per_s"])


def step_time(mode: str, tokens: int, width: int, layers: int, roofs: Roofs) -> float:
    """Predicted seconds of one training step of ``layers`` Linear(width, width) on ``tokens``
    rows in ``mode`` (amp-bf16 or an FP8 mode)."""
    tw, ww = tokens * width, width * width
    flops = GEMMS_PER_LINEAR * 2 * tokens * ww
    common = COMMON_ACTIVATION_BYTES * tw + COMMON_WEIGHT_BYTES * ww
    if mode == BASELINE:
        return layers * (flops / roofs.bf16_flops
                         + (common + BF16_WEIGHT_CAST_BYTES * ww) / roofs.bandwidth)
    if mode not in FP8_MODES:
        raise ValueError(f"no prediction for mode {mode!r}; choose {BASELINE} or "
                         f"{', '.join(FP8_MODES)}")
    recipe = FP8_MODES[mode]
    per_tw, per_ww = FP8_BYTES[recipe]
    return layers * (flops / roofs.fp8_flops[recipe]
                     + (common + per_tw * tw + per_ww * ww) / roofs.bandwidth)


def speedup(mode: str, tokens: int, width: int, layers: int, roofs: Roofs) -> float:
    """Predicted FP8 throughput over bf16 throughput (bf16 step time over FP8 step time)."""
    return (step_time(BASELINE, tokens, width, layers, roofs)
            / step_time(mode, tokens, width, layers, roofs))


def break_even_tokens(mode: str, width: int, roofs: Roofs, ratio: float = 1.0,
                      highest: int = 2 ** 24) -> int | None:
    """The fewest tokens per step at which the predicted speedup reaches ``ratio`` at this
    width (None: not below ``highest``). The speedup grows with tokens (the casts of the
    weight are paid once per step, the GEMMs' advantage grows with T), so a bisection finds it."""
    if speedup(mode, highest, width, 1, roofs) < ratio:
        return None
    low, high = 1, highest
    while low < high:
        mid = (low + high) // 2
        if speedup(mode, mid, width, 1, roofs) >= ratio:
            high = mid
        else:
            low = mid + 1
    return low


def roofs_or_reason(calibration: dict | None, where: str = "calibration.json"
                    ) -> tuple[Roofs | None, str | None]:
    """The roofs, or None and why there is no prediction (no calibration, or one without an
    FP8 roof or the copy bandwidth)."""
    if calibration is None:
        return None, "no calibration.json in this result set (calibrate: {enabled: false})"
    try:
        return Roofs.from_calibration(calibration, where), None
    except ValueError as exc:
        return None, str(exc)


# ------------------------------------------------------------------------ the measured map
def cells(records: list[dict]) -> pd.DataFrame:
    """One row per record of the square recipe MLP: width, tokens (= batch size: one row is one
    token), layers, precision, status and its reason, throughput, peak memory (the last two
    only for a finished run)."""
    rows = []
    for r in records:
        p, m = r["params"], r.get("metrics") or {}
        if r["workload"] != WORKLOAD or p.get("in_size") != p.get("out_size"):
            continue
        ok = r["status"] == V.OK
        rows.append({"width": p["in_size"], "tokens": r["batch_size"],
                     "layers": p.get("num_layers"), "precision": r["precision"],
                     "repeat": r["repeat"], "status": r["status"],
                     "status_reason": r.get("status_reason"),
                     "throughput": m.get(V.HEADLINE) if ok else None,
                     "memory": m.get("max_memory_allocated_bytes") if ok else None})
    return pd.DataFrame(rows)


def _why_unmeasured(fp8: pd.DataFrame, base: pd.DataFrame, mode: str) -> str | None:
    """Why a shape has no measured ratio (None where it has one)."""
    if fp8["throughput"].notna().any() and base["throughput"].notna().any():
        return None
    side, runs = (mode, fp8) if not fp8["throughput"].notna().any() else (BASELINE, base)
    reasons = sorted(set(runs["status_reason"].dropna().astype(str)))
    return (f"no {side} run finished, {'/'.join(sorted(set(runs['status'])))}"
            + (f": {reasons[0][:160]}" if reasons else ""))


@dataclass(frozen=True)
class Compared:
    """One interleaved comparison of a shape of the square recipe MLP, over its processes:
    each process's per-round throughput of every arm that ran in it (NaN where it has no
    segment, ``interleaved.per_round``), replicate order; each arm's status and reason over
    them (ok where any process ran it; else the first process's)."""

    width: int
    tokens: int
    layers: int
    processes: tuple        # per process: precision -> np.ndarray of per-round samples/s
    arms: dict              # precision -> (status, status_reason)
    record: str | None = None
    rounds: int = 0         # each process's rounds (the fewest, where they differ)


def _newest_first(group: list[dict]) -> tuple:
    ran = sum(r["status"] == V.OK for r in group)
    return (ran, min(len(r.get("rounds") or []) for r in group),
            max((r.get("environment") or {}).get("timestamp_utc") or "" for r in group))


def _arms(group: list[dict]) -> dict:
    out: dict = {}
    for r in group:
        for a in r["arms"]:
            p = a["precision"]
            if p not in out or (a["status"] == V.OK and out[p][0] != V.OK):
                out[p] = (a["status"], a["status_reason"])
    return out


def compared(records: list[dict]) -> dict[tuple[int, int], Compared]:
    """Per (width, tokens) of the square recipe MLP, its interleaved comparison's processes'
    per-round throughputs and arms' statuses, from interleaved records
    (``analysis.interleaved.load``; a setting's replicates are one comparison). Where two
    comparisons hold the same shape, the one with more processes that ran (status ok), then
    more rounds, then the newest, is taken."""
    from .interleaved import per_round, replicates

    out: dict[tuple[int, int], Compared] = {}
    groups = [g for g in replicates(records).values() if g[0]["workload"] == WORKLOAD
              and g[0]["params"].get("in_size") == g[0]["params"].get("out_size")]
    for group in sorted(groups, key=_newest_first, reverse=True):
        p = group[0]["params"]
        key = (p["in_size"], group[0]["batch_size"])
        if key not in out:
            out[key] = Compared(*key, int(p.get("num_layers") or 1),
                                tuple(per_round(r) for r in group), _arms(group),
                                ";".join(str(r.get("_path")) for r in group),
                                min(len(r["rounds"]) for r in group))
    return out


def _why_not_compared(c: Compared, mode: str) -> str | None:
    """Why an interleaved comparison gives no ratio of ``mode`` over amp-bf16 (None: it
    gives one)."""
    for side in (mode, BASELINE):
        status, why = c.arms[side]
        if status != V.OK:
            return (f"no {side} run finished, {status} (interleaved comparison)"
                    + (f": {str(why)[:160]}" if why else ""))
    return None


def _shape_row(width, tokens, shape, mode, roofs, c: Compared | None = None) -> dict | None:
    if shape.empty:                       # a shape with an interleaved comparison only
        shape = pd.DataFrame(columns=["precision", "throughput", "memory", "status",
                                      "status_reason", "layers"])
    base = shape[shape["precision"] == BASELINE]
    fp8 = shape[shape["precision"] == mode]
    by_records = not (fp8.empty or base.empty)
    in_comparison = c is not None and mode in c.arms and BASELINE in c.arms
    interleaved = in_comparison and _why_not_compared(c, mode) is None
    if not (by_records or in_comparison):
        return None
    level = {"processes": None, "rounds": None}
    if interleaved or not by_records:     # the comparison decides, or is all there is
        rep, _ = stats.replicated_paired([(p[mode], p[BASELINE]) for p in c.processes
                                          if mode in p and BASELINE in p])
        e = rep.estimate if interleaved else stats.EMPTY
        statuses, unmeasured = c.arms[mode][0], _why_not_compared(c, mode)
        if interleaved and e.value is None:
            unmeasured = "the interleaved comparison holds no round of both arms"
        decided_by = INTERLEAVED
        level = {"processes": rep.processes, "rounds": c.rounds} if interleaved else level
    else:
        e = stats.ratio(fp8["throughput"], base["throughput"])
        statuses = ",".join(sorted(set(fp8["status"])))
        unmeasured, decided_by = _why_unmeasured(fp8, base, mode), REPEATS
    if shape["layers"].notna().any():
        layers = int(shape["layers"].dropna().iloc[0])
    else:
        layers = c.layers if c is not None else 1
    return {"width": width, "tokens": tokens, "mode": mode,
            **e.as_dict("ratio"), "ratio_interval": e.method, "ratio_method": e.label,
            "claim": stats.claim(e), "pays": stats.clears(e, PAYS),
            "memory_ratio": stats.ratio(fp8["memory"], base["memory"]).value
            if by_records else None,
            "statuses": statuses, "unmeasured": unmeasured,
            "predicted": speedup(mode, tokens, width, layers, roofs) if roofs else None,
            "decided_by": decided_by, **level}


def decided(table: pd.DataFrame) -> tuple[int, int]:
    """How many of the map's measured ratios there are, and how many of them an interleaved
    comparison decided (0 without ``decided_by``: the records' alone)."""
    if "decided_by" not in table or not len(table):
        return 0, 0
    measured = table[table["ratio"].notna()]
    return len(measured), int((measured["decided_by"].astype(str) == INTERLEAVED).sum())


def ratios(df: pd.DataFrame, roofs: Roofs | None = None,
           comparisons: dict[tuple[int, int], Compared] | None = None) -> pd.DataFrame:
    """Per shape and FP8 mode: the measured throughput ratio over amp-bf16 with its interval
    (``stats.ratio``), its claim (``stats.claim``), whether that interval clears 1.10 (None:
    fewer than three finished repeats a side), the peak-memory ratio (means), why there is no
    ratio where there is none, and the predicted speedup where ``roofs`` are given.

    With ``comparisons`` (``compared``), a shape whose interleaved comparison ran both the
    mode and amp-bf16 takes its ratio, interval, claim and ``pays`` from that comparison's
    paired ratio, a shape with only a comparison gets its row (no memory ratio), and the
    column ``decided_by`` says which instrument decided each row (``processes`` and ``rounds``
    the level of an interleaved one); without them the table is the records' alone, as it
    always was (no ``decided_by``)."""
    shapes = {} if df.empty else {k: g for k, g in df.groupby(["width", "tokens"])}
    keys = sorted(set(shapes) | set(comparisons or {}))
    out = [row for width, tokens in keys for mode in FP8_MODES
           if (row := _shape_row(width, tokens, shapes.get((width, tokens), pd.DataFrame()),
                                 mode, roofs, (comparisons or {}).get((width, tokens))))
           is not None]
    table = pd.DataFrame(out)
    if comparisons is None and len(table):
        table = table.drop(columns=["decided_by", "processes", "rounds"])
    return table
