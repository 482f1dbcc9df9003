"""What limits a cell, from evidence a fused kernel's name cannot fool: Inductor's generated
kernels are matrix work only where they are its templates; an older record's listed kernels
are classified again and its matrix share said as the bound it is; the label names the
largest shares with their numbers; a busy share over 100% says why from the profile itself.
Planted where the old output was wrong."""

from __future__ import annotations

import numpy as np
import pytest

from tcbench import kernels
from tcbench.analysis import diagnosis

FUSED = "triton_red_fused__native_batch_norm_legit_functional_convolution_15"


@pytest.mark.parametrize("name,matrix", [
    (FUSED, False),                                              # old: matrix work
    ("triton_poi_fused__to_copy_convolution_relu_6", False),     # old: matrix work
    ("triton_poi_fused_add_mul_884", False),                     # old: a Tensor Core tile
    ("triton_tem_fused_mm_0", True),                             # Inductor's own GEMM
    ("triton_tem_fused_convolution_relu_3", True),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", True),
])
def test_an_inductor_kernel_is_matrix_work_only_as_a_template(name, matrix):
    assert kernels.is_matmul(name) is matrix
    assert kernels.classify(name)[0] is (matrix and not name.startswith("triton_"))


def test_a_profile_records_its_rules_and_an_older_one_is_reclassified_as_a_bound():
    assert kernels.summarise_kernels({FUSED: (1.0, 5)})["kernel_rules"] == kernels.RULES
    top = [{"name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn", "time_s": 4.0, "tensor_core": True,
            "class": "other_tensor_core"},
           {"name": FUSED, "time_s": 3.0, "tensor_core": False, "class": "simt_matmul"},
           {"name": "void at::native::vectorized_elementwise_kernel", "time_s": 2.0,
            "tensor_core": False, "class": "other"}]
    old = {"profiled": True, "kernel_time_s": 10.0, "tensor_core_time_s": 4.0,
           "tensor_core_share": 0.4, "matmul_time_s": 7.5, "matmul_share": 0.75,
           "kernels_distinct": 12, "top_kernels": top}
    new = kernels.reclassified(old)
    assert new["matmul_share"] == pytest.approx(0.45) and new["tensor_core_share"] == 0.4
    assert new["matmul_share_bound"] == "at most"       # nine more kernels the list omits
    assert kernels.reclassified(old | {"kernels_distinct": 3})["matmul_share_bound"] is None
    rules = {"kernel_rules": kernels.RULES}
    assert kernels.reclassified(old | rules) == old | rules


def test_the_label_names_the_largest_shares_with_their_numbers():
    """tf_llama's FP8 cell read "Tensor Cores" with FP8 GEMMs 21% of its kernel time."""
    llama = {"precision": "fp8-tensorwise", "gpu_busy_share": 0.97, "tensor_core_share": 0.55,
             "matmul_share": 0.55, "fp8_gemm_share": 0.21, "other_tensor_core_share": 0.34,
             "fp8_scaling_share": 0.23, "kernel_classes_from": "all kernels"}
    assert diagnosis.bottleneck(llama) == "tensor"
    assert diagnosis.short(llama) == "other GEMMs 34%, casts and scales 23%"
    fused = {"precision": "amp-bf16", "gpu_busy_share": 0.98, "tensor_core_share": 0.42,
             "matmul_share": 0.68, "matmul_share_bound": "at most"}
    assert diagnosis.short(fused) == "Tensor Core 42%, non-matrix ≥32%"
    assert diagnosis.short({"input_bound": True}) == "input"


def test_a_busy_share_over_one_says_why_from_the_profile():
    """The old note asserted overlapping kernels whatever the profile showed."""
    overlap = kernels.busy_note(1.50, 1.48)
    assert overlap.startswith("the kernels' times add up to 150% of the step's wall time")
    assert "148% of its own wall time: kernels ran at the same time" in overlap
    slower = kernels.busy_note(1.01, 0.99)
    assert "99% of its own wall time: the profiled steps ran longer than the timed" in slower
    assert "does not say" in kernels.busy_note(1.2)
    assert kernels.busy_note(0.9, 0.9) is None


def _old_row(bound: bool) -> dict:
    """An amp-bf16 cell from a record summarised before the rules (``OLD``, reclassified):
    Tensor Core 40%, matrix kernels 45% at most, so other matrix kernels 5% at most and the
    kernels of no matrix work 55% at least; ``bound`` False: the same shares, exact."""
    ev = kernels.reclassified(OLD | ({} if bound else {"kernels_distinct": 3}))
    return {"precision": "amp-bf16", "gpu_busy_share": 0.98, "compute_capability": 9.0,
            **{k: ev.get(k) for k in ("tensor_core_share", "matmul_share",
                                      "matmul_share_bound")}}


OLD = {"profiled": True, "kernel_time_s": 10.0, "tensor_core_time_s": 4.0,
       "tensor_core_share": 0.4, "matmul_time_s": 7.5, "matmul_share": 0.75,
       "kernels_distinct": 12, "top_kernels": [
           {"name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn", "time_s": 4.0,
            "tensor_core": True, "class": "other_tensor_core"},
           {"name": FUSED, "time_s": 3.0, "tensor_core": False, "class": "simt_matmul"},
           {"name": "void at::native::vectorized_elementwise_kernel", "time_s": 2.0,
            "tensor_core": False, "class": "other"}]}


def test_an_older_records_shares_are_said_as_bounds_in_every_sentence():
    """resnet50_fastest's limits read "of 68% in matrix kernels" and "61% of its matrix kernel
    time ran on Tensor Cores" from a record whose matrix share is an upper bound: the matrix
    share is at most, the Tensor Core part of it at least, the other matrix kernels at most
    and the rest at least what they say; a record made under the rules says them plain."""
    from tcbench.reports import evidence
    from tcbench.reports import families

    old, new = _old_row(True), _old_row(False)
    assert old["matmul_share_bound"] == "at most" and new["matmul_share_bound"] is None
    text = evidence.brief(old, "amp-bf16")
    assert "and at least 55% of its kernel time went to kernels that do no matrix work" in text
    assert "at least 89% of its matrix kernel time ran on Tensor Cores" in text
    assert "of at most 45% in matrix kernels" in text
    assert "of at most 45% in matrix kernels" in evidence.evidence(old, "amp-bf16")
    assert families._kernels(old) == "40% / ≤5% / ≥55%"
    plain = evidence.brief(new, "amp-bf16") + evidence.evidence(new,
                                                                "amp-bf16") + families._kernels(new)
    assert not any(w in plain for w in ("at most", "at least", "≤", "≥"))
    assert "of 45% in matrix kernels" in plain


def test_an_older_records_matrix_share_is_a_bound_in_its_table_and_figure(tmp_path):
    """The evidence table's matmul share column and the Tensor Core figure's outline showed an
    older record's matrix share as measured: ≤ in the table with a note saying why, a dashed
    outline in the figure with its legend entry; neither where no record is older."""
    import matplotlib

    import gpu_like
    from tcbench import resultset
    from tcbench.render import plot
    from tcbench.reports import figures
    from tcbench.reports import tables

    s = resultset.read_raw(gpu_like.write(tmp_path) / "summary.csv")
    sp = resultset.read_raw(tmp_path / "speedup.csv")
    mine = (s["experiment"] == "amp_recipe") & (s["precision"] == "amp-bf16")
    old = s.assign(matmul_share_bound=np.where(mine, "at most", None))
    for table, bounded in ((old, True), (s.assign(matmul_share_bound=None), False)):
        t = tables.evidence_table(tables.Experiment(table, sp, "amp_recipe"))
        col = t.columns.index("matmul share")
        marked = [r[1] for r in t.rows if r[col].startswith("≤")]
        assert marked == (["amp-bf16"] if bounded else [])
        assert (diagnosis.BOUND_NOTE in t.notes) is bounded
    plot.style()
    fig = figures.fig_tensor_cores(figures.experiment_rows(old[old["experiment"] == "amp_recipe"]),
                                   "amp_recipe")
    dashed = {matplotlib.colors.to_hex(p.get_edgecolor()) for p in fig.axes[0].patches
              if not p.get_fill() and p.get_linestyle() not in ("-", "solid")}
    assert dashed == {plot.PALETTE["amp-bf16"].lower()}
    assert any("at most" in t.get_text() for t in fig.legends[0].get_texts())
    plot.plt.close("all")


def test_an_fp8_cells_non_matrix_share_says_its_casts_as_its_one_line_limit_does():
    """tf_gpt2's fp8-tensorwise cell: its limit reads "non-matrix 35%, ... casts and scales
    24%", its sentence "59% ... no matrix work": the same time, the casts inside the second;
    the sentence says so with the same number."""
    from tcbench.reports import evidence

    row = {"precision": "fp8-tensorwise", "gpu_busy_share": 0.98, "compute_capability": 9.0,
           "tensor_core_share": 0.35, "matmul_share": 0.41, "fp8_gemm_share": 0.05,
           "fp8_scaling_share": 0.24, "kernel_classes_from": "all kernels"}
    shares = dict(diagnosis.kernel_shares(row))
    assert shares["non_matrix"] == pytest.approx(0.35) and shares["fp8_scaling"] == 0.24
    text = evidence.limit(row, "non_matrix")
    assert "and 59% of its kernel time went to kernels that do no matrix work" in text
    assert "the FP8 casts and scales among them 24% of kernel time" in text
    bf16 = row | {"precision": "amp-bf16", "fp8_gemm_share": None, "fp8_scaling_share": None}
    assert "FP8 casts and scales" not in evidence.limit(bf16, "non_matrix")
