"""The phrases of one judgement (``analysis.claims``), shared by the verdict's one-screen table
(``reports.answer``) and its sections (``reports.findings``): the ratio with its interval and
baseline, the claim, how it was decided, peak memory against the same baseline, what limits
the cell (the host and the cure's measured effect for a host-bound one), and the rows they
rest on."""

from __future__ import annotations

import pandas as pd

from .. import resultset
from .. import stats
from .. import vocabulary as V
from ..analysis import claims, diagnosis, throughput
from ..render.numbers import (MISSING, missing, modes_text, num, percent, points, times,
                              with_interval)
from ..render.settings import changes

PLAIN = "plain fp32"      # the baseline of a gain (``analysis.speedup.plain_for``)
# what a report says of a compiled cell's runs recorded before compilations inside the timed
# window were counted whose own fields show one there all the same (summary.csv
# ``uncounted_compile_repeats``, ``resultset.compile_check``), wherever the cell is shown
PREDATE = "predate the compile-in-window check"
CHECK = ("metrics.timed_window.graphs_compiled: the graphs torch.compile compiled, or loaded "
         "from its cache, inside the timed window; any makes the window unsteady")
PREDATE_NOTE = (f"'r1–r3 {PREDATE}': those runs were recorded before that check ({CHECK}), so "
                "their windows read steady; yet their epoch ends in a smaller batch first met "
                "after the warm-up, which compiles inside the window, so their cell is not "
                "judged.")


def ratio_text(row, stem: str = "speedup") -> str:
    kind = row.get(f"{stem}_interval")
    text = with_interval(row.get(stem), row.get(f"{stem}_low"), row.get(f"{stem}_high"),
                         row.get(f"{stem}_n"), fmt=times,
                         kind=kind if kind in stats.METHOD_TEXT else None)
    label = {stats.CI: "95% CI", stats.PAIRED: "interleaved, 95% CI",
             stats.REPLICATED: "interleaved, 95% CI", stats.RANGE: "range"}.get(kind)
    return text + (f" ({label})" if label and "(" not in text else "")


def interleaved_level(row, stem: str | None = None) -> str:
    """How a cell's interleaved ratio was decided, at its level (the interleaved columns of
    ``claims.attach_interleaved``); where the ratio of ``stem`` is judged across runs on other
    machines, over how many, with this machine's own ratio and its level beside it."""
    level = stats.level_text(row.get("interleaved_processes"), row.get("interleaved_rounds"))
    e = stats.from_row(row, stem) if stem else stats.EMPTY
    if e.method != stats.RUNS:
        return level
    own = stats.from_row(row, claims.OWN + stem)
    mine = with_interval(own.value, own.low, own.high, own.n, fmt=times, kind=own.method)
    return f"across {e.n} runs on different machines{V.RUNS_MARK}; this machine: {mine}, {level}"


def interleaved_decisions(il: list) -> list[str]:
    """How many of the judgements ``il`` (each decided by an interleaved comparison) were
    decided at each level: across runs on other machines, across independent processes, or in
    one process (whose interval cannot see differences between processes); the verdict's
    count of decisions."""
    runs = sum(j.estimate.method == stats.RUNS for j in il)
    rest = [j for j in il if j.estimate.method != stats.RUNS]
    many = sum((stats.finite(j.row.get("interleaved_processes")) or 1) > 1 for j in rest)
    parts = []
    if runs:
        parts.append(f"{runs} by interleaved comparisons judged across runs of the study on "
                     f"different machines ({V.RUNS_MARK}: each machine's own ratio pooled; the "
                     f"interval spans the machines)")
    if many:
        parts.append(f"{many} by interleaved comparisons across independent processes (every "
                     f"precision arm of the setting alternated in rounds in each; the interval "
                     f"spans the processes)")
    if len(rest) - many:
        parts.append(f"{len(rest) - many} by an interleaved comparison in one process (every "
                     f"precision arm of the setting alternated in rounds; its interval covers "
                     f"that process's rounds and cannot see differences between processes)")
    few = sum(j.claim == stats.UNJUDGED for j in il)
    if few:
        parts[-1] += f", {few} of them with too few for an interval ({stats.FEW})"
    if parts:
        parts[-1] += "; the per-process repeats still give their absolute throughput"
    return parts


def besides_precision(row) -> str:
    """What changed from the plain fp32 baseline besides precision ("bs 512 → 8192, ...")."""
    said = changes(row, "plain_")
    return ", ".join(said) if said else "nothing else"


# --------------------------------------------------------------- the rows a judgement needs
def same_cell(a, b) -> bool:
    """Whether two rows (of any of the set's tables) are the same cell."""
    return tuple(str(a[k]) for k in V.CELL_KEYS) == tuple(str(b[k]) for k in V.CELL_KEYS)


def same_setting(df: pd.DataFrame, row, precision: str):
    """The row of ``precision`` at ``row``'s setting in ``df``; None where there is none."""
    key = tuple(str(row[k]) for k in V.BASELINE_KEYS)
    for _, r in df[df["precision"].astype(str) == precision].iterrows():
        if tuple(str(r[k]) for k in V.BASELINE_KEYS) == key:
            return r
    return None


def plain_row(df: pd.DataFrame, row):
    """The plain fp32 cell a gain is against (speedup.csv's ``plain_*`` columns)."""
    if missing(row.get("plain_experiment")):
        return None
    want = {"experiment": row["plain_experiment"], "batch_size": int(row["plain_batch_size"]),
            **{a: row.get(f"plain_{a}") for a in V.AXIS_NAMES}, "precision": V.BASELINE}
    if missing(want["model"]):  # a table made before the plain cell's model was a column
        want["model"] = row["model"]
    for _, r in df.iterrows():
        if all(str(r[k]) == str(v) for k, v in want.items() if not missing(v)):
            return r
    return None


def gain_judgement(row, everything: pd.DataFrame) -> claims.Judgement | None:
    """A cell against the plain fp32 baseline (another setting: the ratio credits every knob
    that changed), where it has no fp32 cell at its own setting; gated like any other ratio."""
    e = stats.from_row(row, "gain")
    if e.value is None:
        return None
    g = claims.gate(row, plain_row(everything, row))
    return claims.Judgement(row, PLAIN, e, stats.gated(stats.claim(e), g), "gain",
                            claims.REPEATS, g)


def baseline_row(j: claims.Judgement, everything: pd.DataFrame):
    return plain_row(everything, j.row) if j.stem == "gain" else \
        same_setting(everything, j.row, j.baseline)


# ---------------------------------------------------------------------- shared phrases
def judged_ratio(j: claims.Judgement | None) -> str:
    """A judgement's ratio with its interval, the baseline named: "2.55× [1.93, 3.38] fp32",
    "1.30× (range 1.29–1.30) amp-bf16"; a cell in two
    modes as its two modes' ratios; an FP8 cell without its baseline as that (how it was
    decided, interleaved or not, is ``decided``'s to say)."""
    if j is None:
        return MISSING
    e = j.estimate
    if e.value is None:
        return f"{MISSING} (no {j.baseline} run at this setting)"
    if e.method == stats.BIMODAL:
        shown = modes_text(j.row, times, j.stem)
        return (f"{shown} {j.baseline}" if shown != MISSING else
                f"{times(e.value)} of the means {j.baseline}, two modes: no interval")
    return f"{with_interval(e.value, e.low, e.high, e.n, fmt=times, kind=e.method)} {j.baseline}"


def claim_said(j: claims.Judgement | None) -> str:
    """The claim as a table names it: an equivalence with its direction, every run slower
    with the range of the ratios of its runs."""
    if j is None:
        return ""
    if j.claim == stats.ALL_SLOWER and j.pairs:
        return f"{stats.ALL_SLOWER}: {num(j.pairs[0])}–{num(j.pairs[1])}×"
    return stats.claim_text(j.claim, j.estimate)


def accuracy_against(row) -> tuple[str, str] | None:
    """A reduced mode's test accuracy against fp32's, paired by seed: the difference in points
    with its interval, and the claim it allows; None for fp32 itself or where none was
    measured."""
    if str(row["precision"]) == V.BASELINE or missing(row.get("accuracy_diff")):
        return None
    d = with_interval(row["accuracy_diff"], row.get("accuracy_diff_low"),
                      row.get("accuracy_diff_high"), row.get("accuracy_diff_n"), fmt=points)
    return d, stats.difference_claim(stats.from_row(row, "accuracy_diff"))


def n_ok(row) -> int:
    return int(stats.finite(row.get("repeats_ok")) or 0) if row is not None else 0


def n_status(row) -> str:
    """Finished repeats of all, with the cell's status where it is not ok ("0/3 oom")."""
    text = f"{n_ok(row)}/{int(row['repeats'])}"
    return text if str(row["status"]) == V.OK else f"{text} {row['status']}"


def _modes_of(row) -> str:
    return f"{row['precision']} in two modes ({int(row['slow_mode_n'])} + " \
           f"{int(row['fast_mode_n'])} runs)"


def decided(j: claims.Judgement | None, everything: pd.DataFrame) -> str:
    """How a judgement was decided: interleaved (at its level: processes and rounds, or one
    process's rounds, ``stats.level_text``), or n against n per process, with what stopped
    the repeats from deciding it and which side is noisy."""
    if j is None:
        return MISSING
    row = j.row
    if j.estimate.value is None:
        return f"n = {n_ok(row)}, no {j.baseline} run"
    if j.decided_by == claims.INTERLEAVED:
        return interleaved_level(row, j.stem)
    base = baseline_row(j, everything)
    sides = [r for r in (row, base) if r is not None]
    parts = [f"n = {n_ok(row)} vs {n_ok(base) if base is not None else j.estimate.n}, "
             "per process"]
    if j.gate == stats.TWO_MODES:
        parts += [_modes_of(r) for r in sides if stats.flag(r.get("bimodal"))]
    elif j.gate == stats.UNSTEADY:
        parts += [f"{r['precision']}: {int(r['unsteady_n'])} of {n_ok(r)} windows unsteady"
                  for r in sides if (stats.finite(r.get("unsteady_n")) or 0) > 0]
    elif j.gate == stats.UNCOUNTED:
        parts += [f"{r['precision']}: {predating(r)}" for r in sides if predating(r)]
    elif j.gate == stats.HOST_BOUND:
        busy = [stats.finite(r.get("gpu_busy_share")) for r in sides if diagnosis.host_bound(r)]
        parts.append(f"host-bound (GPU busy {percent(min(busy))}), no interleaved comparison")
    parts += [f"{r['precision']} {noisy_text(r)}" for r in sides if noisy_text(r)]
    return "; ".join(parts)


NOISY_NOTE = (f"Noisy (±x%): the throughput's 95% interval is wider than "
              f"±{stats.PRECISE_HALFWIDTH:.0%} of its mean; the verdict's precision section "
              f"says why.")


def noisy_text(row) -> str:
    """"noisy (±8.4%)" where a cell's throughput interval is wider than
    ``stats.PRECISE_HALFWIDTH`` of its mean (``analysis.noisy``); "" where it is not."""
    h = stats.relative_halfwidth(stats.from_row(row, V.HEADLINE))
    if h is None or h <= stats.PRECISE_HALFWIDTH:
        return ""
    return f"noisy (±{percent(h, 1 if h < 0.1 else 0)})"


def _storage(precision: str) -> tuple:
    m = V.mode(precision)
    return (m.autocast is not None, m.fp8_recipe is not None)


def memory_ratio(j: claims.Judgement | None, everything: pd.DataFrame) -> float | None:
    """Peak memory of the judged cell over its baseline's at the same batch size."""
    if j is None:
        return None
    base = baseline_row(j, everything)
    if base is None or int(base["batch_size"]) != int(j.row["batch_size"]):
        return None
    a = stats.finite(j.row.get("max_memory_allocated_bytes"))
    b = stats.finite(base.get("max_memory_allocated_bytes"))
    return a / b if a is not None and b else None


def not_precisions(j: claims.Judgement | None, everything: pd.DataFrame) -> bool:
    """Whether a memory change of at least 5% is one precision cannot cause: the two modes
    store tensors alike (tf32 and fp32 both keep every tensor in fp32)."""
    r = memory_ratio(j, everything)
    return r is not None and abs(r - 1) >= 0.05 and j.stem != "gain" and \
        _storage(str(j.row["precision"])) == _storage(j.baseline)


def memory_against(j: claims.Judgement | None, everything: pd.DataFrame) -> str:
    r = memory_ratio(j, everything)
    if r is None:
        return MISSING
    if not_precisions(j, everything):
        # the ratio is measured; what caused it the record does not say, so it is shown as a
        # change and not counted as a saving
        return f"{times(r)} (no storage saving: {j.row['precision']} stores tensors as " \
               f"{j.baseline} does)"
    return times(r)


def cure(row, everything: pd.DataFrame) -> str | None:
    """For a host-bound cell, what CUDA graphs (the host out of the loop) measured at the same
    setting: the graphs cell's ratio to fp32 and to tf32 with graphs on, and to its own eager
    throughput; None where no CUDA-graphs cell ran there."""
    if str(row.get("cuda_graphs")) == "on":
        return None
    keys = [k for k in V.BASELINE_KEYS if k not in ("run", "experiment", "cuda_graphs")]
    on = everything[(everything["cuda_graphs"].astype(str) == "on")
                    & (everything["repeats_ok"] > 0)]
    for k in keys:
        on = on[on[k].astype(str) == str(row[k])]
    if on.empty:
        return None
    own = on[on["experiment"] == row["experiment"]]
    mine = own if len(own) else on
    g = mine[mine["precision"].astype(str) == str(row["precision"])]
    if g.empty:
        return None
    g = g.iloc[0]
    parts = []
    if not missing(g.get("speedup")):
        parts.append(f"{ratio_text(g)} {V.BASELINE}")
    tf32 = mine[mine["precision"].astype(str) == "tf32"]
    if str(row["precision"]) != "tf32" and len(tf32) and \
            not missing(tf32.iloc[0].get(V.HEADLINE)):
        parts.append(f"{times(float(g[V.HEADLINE]) / float(tf32.iloc[0][V.HEADLINE]))} tf32 "
                     f"(ratio of means)")
    said = f"with CUDA graphs {row['precision']} reaches " + " and ".join(parts) \
        if parts else f"with CUDA graphs {row['precision']} runs"
    if not missing(row.get(V.HEADLINE)):
        said += f" ({times(float(g[V.HEADLINE]) / float(row[V.HEADLINE]))} its eager " \
                f"throughput)"
    return said


def limits(row, everything: pd.DataFrame) -> str:
    """What limits a cell's step, short; for a host-bound cell, the host and the cure's
    measured effect where a CUDA-graphs cell exists at the same setting."""
    if row is None or not n_ok(row):
        return MISSING
    if diagnosis.host_bound(row):
        said = f"the host (GPU busy {percent(row.get('gpu_busy_share'))})"
        c = cure(row, everything)
        return f"{said}; {c}" if c else f"{said}; CUDA graphs not measured here"
    return diagnosis.short(row)


MAX_NAMED_LAYERS = 4   # a slow FP8 cell's converted layers are named up to this many


def slow_reason(row) -> str | None:
    """What a slow cell's record gives as the reason: the layers an FP8 mode converted and
    kept, eager casts, no FP8 GEMM among its kernels; the host setting its pace."""
    out = []
    if str(row["precision"]) in claims.FP8:
        conv, kept = row.get("fp8_converted"), row.get("fp8_kept")
        if not missing(conv):
            # the record lists module names, space-separated ("0 2 4" for a Sequential's); a
            # transformer's dozens of names would bury the sentence, so past a few, their count
            names = str(conv).split()
            few = len(names) <= MAX_NAMED_LAYERS
            layers = ", ".join(names) if few else f"{len(names)} Linear layers"
            if missing(kept):
                out.append(f"Linear layers {layers} converted to FP8" if few
                           else f"{layers} converted to FP8")
            else:
                only = "only " if few else ""
                out.append(f"{only}{layers} converted to FP8 ({kept} kept in bf16)")
        if str(row.get("compile")) == "off":
            out.append("compile off, so its casts and scales run as separate kernels")
        fp8 = stats.finite(row.get("fp8_gemm_share"))
        if fp8 is not None and fp8 < 0.005:
            out.append("no FP8 GEMM among the kernels its record lists"
                       if str(row.get("kernel_classes_from")) == "top kernels"
                       else "no FP8 GEMM in its kernel profile")
    if diagnosis.host_bound(row):
        out.append(f"the host set its pace (GPU busy {percent(row.get('gpu_busy_share'))})")
    return "; ".join(out) or None


def predating(row) -> str | None:
    """Which of a cell's finished runs predate the compile-in-window check although their
    window compiled ("r1–r10 predate the compile-in-window check", ``PREDATE_NOTE``); None
    where none does."""
    said = row.get("uncounted_compile_repeats") if row is not None else None
    if missing(said):
        return None
    runs = [f"r{a}–r{b}" if b > a + 1 else ", ".join(f"r{i}" for i in range(a, b + 1))
            for a, b in resultset.spans(int(float(v)) for v in str(said).split())]
    return f"{', '.join(runs)} {PREDATE}" if runs else None


def compile_check_note(metrics: pd.DataFrame | None) -> str | None:
    """The verdict's note on the set's compiled records that predate the compile-in-window
    check (metrics.csv ``window_checked`` false): how many, and in which experiments some
    compiled inside the window all the same (``uncounted_compile``); None where none does."""
    if metrics is None or "window_checked" not in metrics:
        return None
    said = metrics["window_checked"].dropna()
    before = [v for v in said if not stats.flag(v)]
    if not before:
        return None
    known = metrics[[stats.flag(v) for v in metrics.get("uncounted_compile", [])]] \
        if "uncounted_compile" in metrics else metrics.iloc[:0]
    n = f"All {len(said)}" if len(before) == len(said) else f"{len(before)} of the {len(said)}"
    out = (f"{n} compiled records of the set {PREDATE} ({CHECK}), so their windows read steady "
           "whatever compiled in them")
    if len(known):
        exps = ", ".join(dict.fromkeys(known["experiment"].astype(str)))
        out += (f"; {len(known)} of them ({exps}) met their epoch's last, smaller batch first "
                "after the warm-up, which compiles inside the window, so their cells are not "
                "judged, and the tables name those runs")
    return out + "."


def throughput_text(row, column: str = V.HEADLINE) -> str:
    """A cell's throughput (``column``: samples/s, or tokens/s for a token workload) with its
    interval, or its two modes; unsteady windows marked, and runs that predate the
    compile-in-window check although their window compiled (``predating``)."""
    if not n_ok(row):
        return MISSING
    if stats.flag(row.get("bimodal")):
        # the modes are found in samples/s; a sequence's tokens are the same in every repeat
        per = 1.0 if column == V.HEADLINE else stats.finite(row.get(throughput.PER_SAMPLE))
        text = modes_text(row) if per is None else modes_text(row, fmt=lambda v: num(v * per))
    else:
        text = with_interval(row.get(column), row.get(f"{column}_low"),
                             row.get(f"{column}_high"), row.get(f"{V.HEADLINE}_n"))
    u = stats.finite(row.get("unsteady_n"))
    text += f", {int(u)} of {n_ok(row)} windows unsteady" if u else ""
    before = predating(row)
    return text + (f", {before}" if before else "")
