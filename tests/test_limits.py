"""What limits a cell, from evidence a fused kernel's name cannot fool: Inductor's generated
kernels are matrix work only where they are its templates; an older record's listed kernels
are classified again and its matrix share said as the bound it is; the label names the
largest shares with their numbers; a busy share over 100% says why from the profile itself.
Planted where the old output was wrong."""

from __future__ import annotations

import pytest

from tcbench import kernels as K
from tcbench.analysis import diagnosis as D

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
    assert K.is_matmul(name) is matrix
    assert K.classify(name)[0] is (matrix and not name.startswith("triton_"))


def test_a_profile_records_its_rules_and_an_older_one_is_reclassified_as_a_bound():
    assert K.summarise_kernels({FUSED: (1.0, 5)})["kernel_rules"] == K.RULES
    top = [{"name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn", "time_s": 4.0, "tensor_core": True,
            "class": "other_tensor_core"},
           {"name": FUSED, "time_s": 3.0, "tensor_core": False, "class": "simt_matmul"},
           {"name": "void at::native::vectorized_elementwise_kernel", "time_s": 2.0,
            "tensor_core": False, "class": "other"}]
    old = {"profiled": True, "kernel_time_s": 10.0, "tensor_core_time_s": 4.0,
           "tensor_core_share": 0.4, "matmul_time_s": 7.5, "matmul_share": 0.75,
           "kernels_distinct": 12, "top_kernels": top}
    new = K.reclassified(old)
    assert new["matmul_share"] == pytest.approx(0.45) and new["tensor_core_share"] == 0.4
    assert new["matmul_share_bound"] == "at most"       # nine more kernels the list omits
    assert K.reclassified(old | {"kernels_distinct": 3})["matmul_share_bound"] is None
    assert K.reclassified(old | {"kernel_rules": K.RULES}) == old | {"kernel_rules": K.RULES}


def test_the_label_names_the_largest_shares_with_their_numbers():
    """tf_llama's FP8 cell read "Tensor Cores" with FP8 GEMMs 21% of its kernel time."""
    llama = {"precision": "fp8-tensorwise", "gpu_busy_share": 0.97, "tensor_core_share": 0.55,
             "matmul_share": 0.55, "fp8_gemm_share": 0.21, "other_tensor_core_share": 0.34,
             "fp8_scaling_share": 0.23, "kernel_classes_from": "all kernels"}
    assert D.bottleneck(llama) == "tensor"
    assert D.short(llama) == "other GEMMs 34%, casts and scales 23%"
    fused = {"precision": "amp-bf16", "gpu_busy_share": 0.98, "tensor_core_share": 0.42,
             "matmul_share": 0.68, "matmul_share_bound": "at most"}
    assert D.short(fused) == "Tensor Core 42%, non-matrix ≥32%"
    assert D.short({"input_bound": True}) == "input"


def test_a_busy_share_over_one_says_why_from_the_profile():
    """The old note asserted overlapping kernels whatever the profile showed."""
    overlap = K.busy_note(1.50, 1.48)
    assert overlap.startswith("the kernels' times add up to 150% of the step's wall time")
    assert "148% of its own wall time: kernels ran at the same time" in overlap
    slower = K.busy_note(1.01, 0.99)
    assert "99% of its own wall time: the profiled steps ran longer than the timed" in slower
    assert "does not say" in K.busy_note(1.2)
    assert K.busy_note(0.9, 0.9) is None
