"""What holds each fastest configuration back (best.md's second table): per knobs study (an
experiment whose fastest cell is measured against a plain baseline with other knobs changed,
or that the config gives a ``target``), its fastest cell's MFU against the measured matmul roof
of its mode (calibration.json), whether it meets its target, and its kernel profile's reason:
the kernel time by class, the longest kernels by their share of the timed step, and what
would remove them. Every number is read from best.csv, which carries the cell's evidence
repeat's profile (``analysis.best``); the targets come from the config."""

from __future__ import annotations

import json

import pandas as pd

from .. import stats
from .. import vocabulary as V
from ..analysis import claims, diagnosis
from ..analysis.throughput import TOKENS
from ..render.numbers import MISSING, missing, num, pct, percent, with_interval
from ..render.settings import setting_text
from ..render.table import Table
from ..cli import suggestion

# a target's keys: the column (best.csv) each one is read against, and its words
TARGETS = {"samples_per_s": (V.HEADLINE, "samples/s"), "tokens_per_s": (TOKENS, "tokens/s"),
           "mfu": ("mfu", "MFU")}
TITLE = "What holds the fastest configuration back"
# a listed kernel's class (kernels.kernel_class), in words
CLASS_WORDS = {"fp8_gemm": "FP8 GEMM", "other_tensor_core": "Tensor Core",
               "simt_matmul": "other matrix", "fp8_scaling": "cast/scale",
               "other": "non-matrix"}
# what would take the time of each kind of kernel (diagnosis.kernel_shares' keys) off the step
REMEDY = {"non_matrix": "fusing the kernels that do no matrix work (elementwise, "
                        "normalisation, pooling, softmax, optimiser) into their neighbours: "
                        "fewer passes over memory",
          "simt": "Tensor Core kernels for the GEMMs and convolutions whose kernels do not "
                  "show Tensor Core use (the ordinary units, or Inductor templates whose names "
                  "carry no operand type)",
          "fp8_scaling": "fewer or fused casts and scales around the FP8 GEMMs",
          "other_tensor_core": "converting the GEMMs left in bf16 to FP8",
          "tensor": "only faster matrix arithmetic (FP8, larger GEMMs): Tensor Core kernels "
                    "already carry the step",
          "fp8_gemm": "only faster matrix arithmetic: FP8 GEMMs already carry the step"}
NAME_CHARS = 56
NOTABLE = 0.1     # a share of kernel time worth removing


def check_targets(targets: dict | None) -> dict[str, dict]:
    """``{experiment: {key: value}}`` with every key one of ``TARGETS`` and a positive number;
    a ValueError naming the culprit otherwise."""
    for exp, t in (targets or {}).items():
        if not isinstance(t, dict) or not t:
            raise ValueError(f"target of {exp}: {t!r} is no mapping; give e.g. "
                             f"{{samples_per_s: 8000}} or {{mfu: 0.45}}")
        for k, v in t.items():
            if k not in TARGETS:
                raise ValueError(f"target of {exp}: unknown key {k!r}{suggestion(k, TARGETS)};"
                                 f" known: {', '.join(TARGETS)}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise ValueError(f"target of {exp}: {k}={v!r} is not a positive number")
    return dict(targets or {})


def _knobs_study(r) -> bool:
    """Whether a best row is a fastest-configuration study (``analysis.best``'s
    ``knobs_study``: no reduced cell at an fp32 cell's setting) measured against its own
    experiment's plain baseline."""
    return stats.flag(r.get("knobs_study")) and not missing(r.get("gain")) \
        and str(r.get("baseline_experiment")) == str(r["experiment"])


def fastest_rows(best: pd.DataFrame, targets: dict) -> list:
    """Per experiment that is a knobs study or has a target, its fastest best row (the
    highest mean throughput over its models' rows)."""
    out = []
    for exp, g in best.groupby("experiment", sort=False):
        if exp in targets or any(_knobs_study(r) for _, r in g.iterrows()):
            out.append(g.loc[g[V.HEADLINE].astype(float).idxmax()])
    return out


def against_target(r, target: dict | None) -> str:
    """Each target's value against the cell's mean and interval: met (the interval wholly
    at or above it), short (wholly below: by how much the mean is), or not told apart."""
    if not target:
        return f"{MISSING} (no target in the config)"
    out = []
    for key, goal in target.items():
        col, words = TARGETS[key]
        e = stats.from_row(r, col)
        fmt = (lambda v: percent(v, 1)) if key == "mfu" else num
        if e.value is None:
            out.append(f"{words} {fmt(goal)}: not measured")
        elif e.low is not None and e.low >= goal:
            out.append(f"{words} {fmt(goal)}: met")
        elif (e.high if e.high is not None else e.value) < goal:
            out.append(f"{words} {fmt(goal)}: short by {percent(1 - e.value / goal, 1)}")
        else:
            out.append(f"{words} {fmt(goal)}: not told apart (its interval spans it)")
    return "; ".join(out)


def mfu_text(r) -> str:
    """MFU with its interval, against which measured roof."""
    if missing(r.get("mfu")):
        return f"{MISSING} (no measured roof for {r['precision']}, or no FLOP count)"
    return (with_interval(r["mfu"], r.get("mfu_low"), r.get("mfu_high"), r.get("mfu_n"),
                          fmt=pct)
            + f" of the measured {r['precision']} roof ({num(r.get('ceiling_tflops'))} "
              f"TFLOP/s); {num(r.get('achieved_tflops'))} TFLOP/s achieved")


def shares_text(r) -> str:
    """The kernel time by class, largest first, with the GPU's busy share of the step."""
    shares = diagnosis.kernel_shares(r)
    if not shares:
        return f"{MISSING} (no kernel profile)"
    text = ", ".join(f"{diagnosis.KERNEL_WORDS[k]} {diagnosis.bound(r, k)}{percent(v)}"
                     for k, v in shares)
    busy = stats.finite(r.get("gpu_busy_share"))
    return text + ("" if busy is None else f"; GPU busy {percent(busy)} of the step")


def short_name(name: str) -> str:
    """A kernel's name without its return type and arguments, cut to ``NAME_CHARS``."""
    name = name.removeprefix("void ").replace("(anonymous namespace)::", "").split("(")[0]
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


def top_text(r, most: int = 3) -> str:
    """The longest listed kernels: name, share of the timed median step, class."""
    listed = json.loads(r["top_kernels"]) if isinstance(r.get("top_kernels"), str) else []
    step = stats.finite(r.get("step_time_median_s"))
    out = []
    for k in listed[:most]:
        share = k["step_s"] / step if step and k.get("step_s") is not None else None
        out.append(f"`{short_name(k['name'])}` {percent(share, 1)} of the step "
                   f"({CLASS_WORDS.get(k['class'], k['class'])})")
    return "; ".join(out) or MISSING


def remedy(r, most: int = 2) -> str:
    """What would take time off the step: the host's launches where it sets the pace, else
    for the ``most`` largest shares of kernel time that are not Tensor Core matrix work
    (of at least ``NOTABLE``), what would remove them; where Tensor Cores carry the rest, that
    only faster matrix arithmetic would."""
    if diagnosis.bottleneck(r) == "host":
        return "fewer kernel launches (CUDA graphs, fusion): the host sets the pace"
    shares = diagnosis.kernel_shares(r)
    if not shares:
        return MISSING
    rest = [(k, v) for k, v in shares if k not in ("tensor", "fp8_gemm") and v >= NOTABLE]
    if not rest:
        return REMEDY[shares[0][0]]
    return "; ".join(f"{REMEDY[k]} ({diagnosis.KERNEL_WORDS[k]} {diagnosis.bound(r, k)}"
                     f"{percent(v)} of kernel time)" for k, v in rest[:most])


def holdback_table(best: pd.DataFrame, targets: dict | None = None) -> Table | None:
    """Per fastest-configuration experiment, its MFU, target and profile's reason; None where
    the set has no such experiment."""
    targets = check_targets(targets)
    rows = fastest_rows(best, targets) if len(best) else []
    if not rows:
        return None
    body = []
    for r in rows:
        axes = [] if missing(r.get("setting_axes")) else \
            [a for a in str(r["setting_axes"]).split(",") if a]
        # the model where the experiment names one (a preset such as a padded vocabulary)
        name = str(r["experiment"]) + ("" if str(r["model"]) == str(r["workload"])
                                       else f": {r['model']}")
        body.append([name, f"{r['precision']}, {setting_text(r, axes)}",
                     against_target(r, targets.get(str(r["experiment"]))), mfu_text(r),
                     shares_text(r), top_text(r), remedy(r)])
    fp8 = any(str(r["precision"]) in claims.FP8 for r in rows)
    notes = ["MFU: the training step's FLOPs (torch.utils.flop_counter) per second over the "
             "calibrated matmul roof of the cell's mode (calibration.json, a square GEMM "
             "measured on this GPU)" + (f"; {V.FP8_MFU_COUNTING}." if fp8 else "."),
             "Target: from the experiment's `target` in its config; met where the 95% "
             "interval lies at or above it, short where it lies below (by how much the mean "
             "is), else not told apart.",
             "Kernel time: the cell's profiled steps (its evidence repeat), by class; the "
             "longest kernels by their time per profiled step over the timed median step."]
    if any(diagnosis.matmul_bounded(r) for r in rows):
        notes.append(diagnosis.BOUND_NOTE)
    return Table(TITLE, ["experiment", "fastest configuration", "target", "MFU",
                         "kernel time by class", "longest kernels", "what would remove them"],
                 body, align="lllrlll", notes=notes)
