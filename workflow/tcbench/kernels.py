"""Were the Tensor Cores used? Kernel names classified, and a kernel profile summarised.

What the job's profile (``tcbench.job.profiling``) records and what the reports read back from a
record (``tcbench.resultset``) rest on the same rules, here; this module runs no torch.

NVIDIA's libraries encode the math unit and operand types in kernel names. The rules, in the
order they are applied (first match wins):

1. not a kernel (``Memcpy``, ``Memset``)                                      -> not Tensor Core
   Inductor's generated kernels (``triton_<kind>_fused_<ops>_<n>``) name the ops fused into
   them, not what the kernel computes: ``triton_red_fused__native_batch_norm_legit_functional_
   convolution_15`` is a reduction fused after a convolution, and a trailing index such as
   ``_884`` is no tile shape. Only a template kernel (``triton_tem_``), Inductor's own GEMM,
   convolution or attention kernel, does matrix work; its name carries no operand type, so
   it counts as matrix work that does not show Tensor Core use; every other kind (pointwise,
   reduction, persistent reduction) is no matrix work     -> not Tensor Core (``inductor``)
2. SIMT markers: ``ffma`` / ``fma_``, ``simt``, ``sgemm`` (cuDNN's legacy
   ``implicit_convolve_sgemm`` runs without Tensor Cores even on half inputs), or
   strict fp32 operands ``f32f32_f32f32`` without ``tf32`` (cuDNN/cuBLAS "xmma"
   kernels run SIMT this way on Hopper)                                        -> not Tensor Core
3. ``nvjet`` (cuBLASLt on Hopper and later): the type code after ``nvjet_`` (and an optional
   ``sm90_``) names the operand types, three letters (``tst``: A, B, C/D) or five for FP8
   (``qqtst``: two float8 operands, then C, compute, D, as launched by ``aten::_scaled_mm``);
   a ``q`` (float8, "quarter" precision) is FP8 on the Tensor Cores, ``s``-only codes
   (``sss``) are fp32 SIMT, any ``h``/``b``/``t``/``e`` (fp16/bf16/tf32) is on the Tensor
   Cores                                                                      -> by code
4. FP8 GEMMs: GEMM/convolution engines (``xmma``, ``cutlass``, ``gemm``) whose names carry
   float8 operand types (``e4m3``, ``e5m2``, ``fp8``, ``float8``: cuBLAS's
   ``sm90_xmma_gemm_e4m3f32_e4m3f32_f32_...``, CUTLASS's ``..._gemm_e4m3_e4m3_f32_bf16_...``,
   PyTorch's rowwise ``_scaled_mm`` with ``cutlass::float_e4m3_t`` operands), unless they are
   helpers around the GEMM (reductions, layout conversions, padding); before the generic
   markers, so that the rule names the FP8 evidence                          -> Tensor Core
5. explicit Tensor Core instruction or tile markers: ``hmma``, ``wgmma``, ``gmma``
   (``qgmma`` is Hopper's FP8 warpgroup MMA), ``imma``, ``tensorop``, ``16816``, ``1688``,
   ``884``, ``tf32``, ``_tc_``, ``tensorcore``                                -> Tensor Core
6. GEMM/convolution engines whose names carry f16/bf16 operand types (``f16``, ``bf16``,
   ``fp16``, ``half``, ``h16``), unless they are helpers around the GEMM      -> Tensor Core
7. everything else (elementwise, reductions, optimiser, pooling, SIMT GEMMs, and the scaling,
   amax and casts around FP8 GEMMs, even with float8 in their names)          -> not Tensor Core

The rules are tested on kernel names collected from real profiles (tests/data/kernel_names.csv).
"""

from __future__ import annotations

import re
from collections import defaultdict

_NOT_KERNEL = re.compile(r"^(memcpy|memset)", re.I)
_SIMT = re.compile(r"ffma|(^|_)fma_|simt|sgemm|f32f32_f32f32(?!.*tf32)", re.I)
_NVJET = re.compile(r"nvjet_(?:sm\d+_)?([a-z]{3}|[a-z]{5})_", re.I)
_TC_MARKERS = re.compile(r"hmma|wgmma|gmma|imma|tensorop|(?<!\d)(16816|1688|884)|tf32|_tc_|"
                         r"tensorcore", re.I)
_GEMM_LIKE = re.compile(r"xmma|cutlass|gemm", re.I)
_HELPER = re.compile(r"reduc|helper|convert|transpose|nchwtonhwc|nhwctonchw|padding", re.I)
_HALF_TYPES = re.compile(r"bf16|f16|fp16|half|h16", re.I)
_FP8_TYPES = re.compile(r"e4m3|e5m2|fp8|float8", re.I)
_NVJET_TC_CODES = set("hbte")


# Inductor's generated kernels, and of them the templates (its matrix kernels)
_INDUCTOR = re.compile(r"^triton_", re.I)
_INDUCTOR_TEMPLATE = re.compile(r"^triton_tem_", re.I)
# the version of these rules a profile was summarised by (``summarise_kernels``); a record
# without it was summarised before Inductor's fused names were told apart (``reclassified``)
RULES = 2


def classify(name: str) -> tuple[bool, str]:
    """(uses_tensor_cores, rule) for one GPU kernel name."""
    if _NOT_KERNEL.search(name):
        return False, "not-a-kernel"
    if _INDUCTOR.search(name):
        return False, "inductor"
    if _SIMT.search(name):
        return False, "simt-fp32"
    m = _NVJET.search(name)
    if m:
        code = m.group(1).lower()
        if "q" in code:
            return True, "nvjet-fp8"
        return (True, "nvjet-tc") if set(code) & _NVJET_TC_CODES else (False, "nvjet-simt")
    gemm = _GEMM_LIKE.search(name) and not _HELPER.search(name)
    if gemm and _FP8_TYPES.search(name):  # before the generic markers: FP8 evidence by name
        return True, "fp8-gemm"
    if _TC_MARKERS.search(name):
        return True, "tc-marker"
    if gemm and _HALF_TYPES.search(name):
        return True, "half-gemm"
    return False, "other"


# GEMMs and convolutions, whatever unit runs them (cuBLAS/cuDNN/CUTLASS engines, SIMT sgemm,
# Winograd and FFT convolutions), less the helpers around them
_MATMUL = re.compile(r"gemm|conv(?!ert)|wgrad|dgrad|fprop|winograd|fft2d|nvjet|xmma", re.I)
_NOT_MATMUL = re.compile(r"reduc|helper|workspace|nchwtonhwc|nhwctonchw|padding|transpose", re.I)


# What a kernel's time is spent on, for the split of kernel time that an FP8 cell needs: its FP8
# GEMMs, the Tensor Core GEMMs in other types (bf16/fp16/tf32: the layers FP8 leaves alone), the
# scaling around the FP8 GEMMs (amax, scale, saturated cast), matrix work off the Tensor Cores,
# and the rest. The scaling kernels are known by their names only: a float8 operand type in an
# eager kernel's template, Inductor's fused names that carry the ops fused into them (``amax``,
# ``abs`` ... ``max``, the ``_scaled_mm`` the fusion feeds, a cast fused with a clamp). An eager
# amax that is a plain max reduction cannot be told from any other and stays in ``other``.
KERNEL_CLASSES = ("fp8_gemm", "other_tensor_core", "fp8_scaling", "simt_matmul", "other")
_FP8_RULES = {"nvjet-fp8", "fp8-gemm"}
_FP8_MMA = re.compile(r"qgmma", re.I)
_SPLIT_K = re.compile(r"splitk", re.I)
_FP8_SCALING = re.compile(r"amax|_scaled_mm|e4m3|e5m2|float8|fp8|(^|_)abs_\w*max|"
                          r"_to_copy_\w*clamp", re.I)


def kernel_class(name: str) -> str:
    """One of ``KERNEL_CLASSES`` for one GPU kernel name."""
    is_tc, rule = classify(name)
    if is_tc:
        return "fp8_gemm" if rule in _FP8_RULES or _FP8_MMA.search(name) \
            else "other_tensor_core"
    if is_matmul(name):
        return "simt_matmul"
    # a split-K reduction is the GEMM's own epilogue, float8 in its template or not
    if rule != "not-a-kernel" and _FP8_SCALING.search(name) and not _SPLIT_K.search(name):
        return "fp8_scaling"
    return "other"


# the classes whose time and share a kernel profile states (KERNEL_CLASSES less the two that
# tensor_core_share and matmul_share already give with the rest)
SPLIT = ("fp8_gemm", "other_tensor_core", "fp8_scaling")


def _split(times: dict[str, float], total: float, source: str, covered: float) -> dict:
    out = {"kernel_classes_from": source,
           "kernel_classes_coverage": covered / total if total else None}
    for c in SPLIT:
        out[f"{c}_time_s"] = times.get(c, 0.0)
        out[f"{c}_share"] = times.get(c, 0.0) / total if total else None
    return out


def kernel_split(evidence: dict) -> dict:
    """The profile's kernel time split by ``SPLIT`` class: as recorded, or, for records made
    before the split was recorded, from their top kernels (then a lower bound of each share:
    ``kernel_classes_from`` says "top kernels" and ``kernel_classes_coverage`` how much of the
    kernel time they hold). Annotation ranges must already be out (``without_annotations``)."""
    if not evidence.get("profiled"):
        return {}
    if evidence.get("kernel_classes_from"):
        return {k: evidence.get(k) for k in ("kernel_classes_from", "kernel_classes_coverage",
                                             *(f"{c}_{u}" for c in SPLIT
                                               for u in ("time_s", "share")))}
    top = evidence.get("top_kernels") or []
    times: dict[str, float] = defaultdict(float)
    for k in top:
        times[kernel_class(k["name"])] += k["time_s"]
    return _split(times, evidence.get("kernel_time_s") or 0.0, "top kernels",
                  sum(k["time_s"] for k in top))


def top_non_matrix_kernel(evidence: dict) -> str | None:
    """The longest listed kernel that does no matrix work (what a step bound elsewhere than
    its GEMMs spends most on), annotation ranges aside."""
    for k in evidence.get("top_kernels") or []:
        if not is_annotation(k["name"]) and kernel_class(k["name"]) in ("fp8_scaling", "other"):
            return k["name"]
    return None


def top_listed(evidence: dict, most: int = 5) -> list[dict]:
    """The profile's ``most`` longest listed kernels, annotation ranges aside: name, time per
    profiled step (s), share of kernel time and class by the current rules (``kernel_class``:
    a record's own ``class`` may predate them). Annotation ranges must already be out."""
    steps, total = evidence.get("profile_steps"), evidence.get("kernel_time_s")
    return [{"name": k["name"], "step_s": k["time_s"] / steps if steps else None,
             "share": k["time_s"] / total if total else None, "class": kernel_class(k["name"])}
            for k in (evidence.get("top_kernels") or [])[:most] if not is_annotation(k["name"])]


# Ranges the profiler also reports on the GPU's timeline (user annotations: torch.optim's
# "Optimizer.step#SGD.step", "ProfilerStep#3"): each spans kernels counted on their own, so
# counting it as a kernel counts their time twice.
_ANNOTATION = re.compile(r"^(Optimizer\.\w+#|ProfilerStep#)")


def is_annotation(name: str) -> bool:
    return bool(_ANNOTATION.match(name))


def without_annotations(evidence: dict) -> dict:
    """A kernel profile with the GPU-side annotation ranges taken out of its kernel time, and
    its shares recomputed: profiles recorded before annotations were skipped counted them as
    kernels (up to 47% of a host-bound step's kernel time). Only ranges among the recorded
    top kernels can be taken out; a smaller one stays in (it is below the last top kernel)."""
    top = evidence.get("top_kernels") or []
    extra = sum(k["time_s"] for k in top if is_annotation(k["name"]))
    if not extra or not evidence.get("kernel_time_s"):
        return evidence
    kernel = evidence["kernel_time_s"] - extra
    out = dict(evidence, kernel_time_s=kernel,
               top_kernels=[dict(k, share=k["time_s"] / kernel) for k in top
                            if not is_annotation(k["name"])])
    for share, time_s in (("tensor_core_share", "tensor_core_time_s"),
                          ("matmul_share", "matmul_time_s")):
        if evidence.get(time_s) is not None:
            out[share] = evidence[time_s] / kernel
    if evidence.get("profile_wall_s"):
        out["gpu_busy_share"] = min(kernel / evidence["profile_wall_s"], 1.0)
    return out


def _was_matmul(k: dict) -> bool:
    """Whether a recorded top kernel was counted as matrix work when its profile was
    summarised under the rules before ``RULES``: on Tensor Cores, or a matrix name."""
    return bool(k.get("tensor_core")) or k.get("class") == "simt_matmul" or \
        bool(_MATMUL.search(k["name"]) and not _NOT_MATMUL.search(k["name"]))


def reclassified(evidence: dict) -> dict:
    """A profile summarised before ``RULES`` with its recorded top Inductor kernels classified
    again: the time of each whose class changed (an Inductor kernel whose fused ops include a
    convolution is no matrix work) moved out of the Tensor Core, matrix and split totals it
    was counted in, and the shares recomputed. Kernels below the top list cannot be seen, so
    where a listed one was counted wrongly and the profile had more than it lists, the matrix
    share left is an upper bound (``matmul_share_bound``: "at most"; the Tensor Core share
    stands: no Inductor name was ever read as Tensor Core work here). Annotation ranges must
    already be out (``without_annotations``)."""
    top, total = evidence.get("top_kernels") or [], evidence.get("kernel_time_s")
    if not evidence.get("profiled") or evidence.get("kernel_rules") == RULES or not total:
        return evidence
    out = dict(evidence, kernel_rules_from="top kernels")
    split = evidence.get("kernel_classes_from") == "all kernels"
    # only what the rules changed: a recorded name is cut at 200 characters, which may cut
    # off the marker its own rule found when the whole name was there
    changed = False
    for k in (k for k in top if _INDUCTOR.search(k["name"])):
        t, name = k["time_s"], k["name"]
        if k.get("tensor_core") and not classify(name)[0]:
            out["tensor_core_time_s"] = (out.get("tensor_core_time_s") or 0.0) - t
            changed = True
        if _was_matmul(k) and not is_matmul(name):
            out["matmul_time_s"] = (out.get("matmul_time_s") or 0.0) - t
            changed = True
        old, new = k.get("class"), kernel_class(name)
        if split and old and old != new:
            for c, sign in ((old, -1), (new, 1)):
                if c in SPLIT:
                    out[f"{c}_time_s"] = (out.get(f"{c}_time_s") or 0.0) + sign * t
    for share, time_s in (("tensor_core_share", "tensor_core_time_s"),
                          ("matmul_share", "matmul_time_s"),
                          *((f"{c}_share", f"{c}_time_s") for c in SPLIT)):
        if out.get(time_s) is not None:
            out[share] = max(out[time_s], 0.0) / total
    unseen = (evidence.get("kernels_distinct") or 0) > len(top)
    out["matmul_share_bound"] = "at most" if unseen and changed else None
    return out


def is_matmul(name: str) -> bool:
    """Whether a kernel does matrix work (a GEMM or a convolution) on any unit; of Inductor's
    kernels only its templates (module doc, rule 1)."""
    if _INDUCTOR.search(name):
        return bool(_INDUCTOR_TEMPLATE.search(name))
    return classify(name)[0] or bool(_MATMUL.search(name) and not _NOT_MATMUL.search(name))


def summarise_kernels(kernels: dict[str, tuple[float, int]], top: int = 10) -> dict:
    """``kernels``: name -> (total device time in seconds, calls). Shares and the top kernels.

    ``matmul_share`` (GEMMs and convolutions on any unit) beside ``tensor_core_share`` tells
    "the matrix work ran on Tensor Cores" apart from "the matrix work is what the step spends
    its time on". Annotation ranges are no kernels and are left out, whoever passes them."""
    kernels = {n: v for n, v in kernels.items() if not is_annotation(n)}
    total = sum(t for t, _ in kernels.values())
    tc = mm = 0.0
    rows = []
    classes: dict[str, float] = defaultdict(float)
    for name, (t, calls) in kernels.items():
        is_tc, rule = classify(name)
        kind = kernel_class(name)
        tc += t if is_tc else 0.0
        mm += t if is_tc or is_matmul(name) else 0.0
        classes[kind] += t
        rows.append({"name": name[:200], "time_s": t, "calls": calls, "tensor_core": is_tc,
                     "rule": rule, "class": kind, "share": t / total if total else None})
    rows.sort(key=lambda r: r["time_s"], reverse=True)
    return {
        "kernel_time_s": total,
        "tensor_core_time_s": tc,
        "tensor_core_share": tc / total if total else None,
        "matmul_time_s": mm,
        "matmul_share": mm / total if total else None,
        **_split(classes, total, "all kernels", total),
        "kernels_distinct": len(rows),
        "top_kernels": rows[:top],
        "kernel_rules": RULES,
    }


# Kernel time per step can exceed the step. The profile itself tells why: where its kernels'
# times add up to more than its own wall time, they overlapped (several streams, each kernel
# counting its own time); where they do not, the profiled steps ran longer than the timed ones.
# The busy share is capped at 1 either way; the ratio itself is kept beside it and the cap said,
# so that a "100%" is never read as a measured ratio of 1.
CAPPED_NOTE = ("the kernels' times add up to {:.0%} of the step's wall time, so the busy "
               "share is capped at 100%")
WHY_CAPPED = {
    "overlap": "; within the profile they add up to {:.0%} of its own wall time: kernels ran "
               "at the same time, on several streams, each counting its own time",
    "slower": "; within the profile they add up to {:.0%} of its own wall time: the profiled "
              "steps ran longer than the timed ones, whose median step is the denominator",
    None: "; the record does not say whether its kernels overlapped or its profiled steps "
          "ran longer than the timed ones"}


def busy_note(uncapped, in_profile=None) -> str | None:
    """Why a busy share is 100% where its kernel time exceeds the step (None where it does
    not), from the profile's own kernel time over its wall time (``in_profile``) where known."""
    try:
        ratio = float(uncapped)
    except (TypeError, ValueError):
        return None
    if not ratio > 1:
        return None
    try:
        own = float(in_profile)
    except (TypeError, ValueError):
        own = float("nan")
    why = None if own != own else "overlap" if own > 1 else "slower"
    return CAPPED_NOTE.format(ratio) + WHY_CAPPED[why].format(own)


def capped(ratio: float | None) -> dict:
    """A busy share from kernel time over wall time: ``gpu_busy_share`` capped at 1,
    ``gpu_busy_share_uncapped`` the ratio itself, ``gpu_busy_share_note`` why where capped."""
    return {"gpu_busy_share": None if ratio is None else min(ratio, 1.0),
            "gpu_busy_share_uncapped": ratio, "gpu_busy_share_note": busy_note(ratio)}


def _ratio(numerator, denominator) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def busy_of_timed_steps(evidence: dict, step_time_median_s: float | None) -> dict:
    """The busy share the verdict names the bottleneck from, and where it comes from
    (``gpu_busy_share_source``): the record's timed-steps figure; for a record made before that
    was recorded, the same figure derived from the record's own profile and timed median step
    (kernel time per profiled step over the median step, as ``timed_busy_share``); the profiled
    figure only where neither exists. With each, the ratio before the cap and why it was capped
    (``capped``), also for records made before they were recorded. Annotation ranges must
    already be out."""
    under = evidence.get("gpu_busy_share_under_profiler")
    if evidence.get("gpu_busy_share_source") == "timed steps":
        raw = evidence.get("gpu_busy_share_uncapped",
                           _ratio(evidence.get("kernel_time_per_step_s"),
                                  evidence.get("timed_step_time_median_s")))
        return capped(raw) | {"gpu_busy_share": evidence.get("gpu_busy_share"),
                              "gpu_busy_share_source": "timed steps",
                              "gpu_busy_share_under_profiler": under}
    if not evidence.get("profiled"):
        return capped(None) | {"gpu_busy_share_source": None,
                               "gpu_busy_share_under_profiler": None}
    if "profiled_step_time_s" not in evidence:  # older: its gpu_busy_share is the profiled one
        under = evidence.get("gpu_busy_share")
    steps, kernel = evidence.get("profile_steps"), evidence.get("kernel_time_s")
    if steps and kernel is not None and step_time_median_s:
        return capped(kernel / steps / step_time_median_s) | {
            "gpu_busy_share_source": "timed steps (derived)",
            "gpu_busy_share_under_profiler": under}
    raw = _ratio(kernel, evidence.get("profile_wall_s")) if under is not None else None
    return capped(raw) | {"gpu_busy_share": under,
                          "gpu_busy_share_source": None if under is None else "profiled steps",
                          "gpu_busy_share_under_profiler": under}


def timed_busy_share(evidence: dict, step_time_median_s: float | None) -> dict:
    """How busy the GPU was in the timed steps: the profile's kernel time per step over the
    timed window's median step time (capped at 1, the ratio and the cap said: ``capped``).
    The kernels of a step take the same GPU time whether or not the host is slowed by the
    profiler; the wall time of a step does not, so the profiled wall time is no denominator."""
    if not evidence.get("profiled") or not step_time_median_s:
        return {"gpu_busy_share": None, "kernel_time_per_step_s": None,
                "profiled_to_timed_step_ratio": None}
    per_step = evidence["kernel_time_s"] / evidence["profile_steps"]
    return {"kernel_time_per_step_s": per_step,
            **capped(per_step / step_time_median_s),
            "timed_step_time_median_s": step_time_median_s,
            "profiled_to_timed_step_ratio": evidence["profiled_step_time_s"] / step_time_median_s,
            "gpu_busy_share_source": "timed steps"}
