"""The matmul ceilings per mode (tcbench.job.calibrate): every mode of the vocabulary, each measured
in its own precision, FP8 with torch._scaled_mm."""

import pytest
import torch

from tcbench.job import calibrate
from tcbench import vocabulary as V

CPU = torch.device("cpu")


def test_one_row_per_mode_in_vocabulary_order_on_the_cpu():
    rows = calibrate.measure(64, 2, CPU)
    assert list(rows) == list(V.PRECISIONS)
    for spec in V.MODES:
        row = rows[spec.name]
        if spec.tf32 or spec.fp8_recipe:  # Tensor Core formats: not on a CPU, and says why
            assert row["status"] == "unsupported" and "CPU" in row["status_reason"]
            assert row["tflops"] is None
        else:
            assert row["status"] == "ok" and row["tflops"] > 0 and row["size"] == 64
            assert row["dtype"] == (spec.autocast or "float32")


def test_a_new_mode_is_calibrated_without_touching_calibrate(monkeypatch):
    extra = V.Mode("amp-bf16-again", "the same as amp-bf16", "#000000", autocast="bfloat16")
    monkeypatch.setattr(V, "MODES", (*V.MODES, extra))
    from tcbench.job import precision
    monkeypatch.setitem(precision.MODES, extra.name, precision.Precision(extra))
    monkeypatch.setattr(V, "mode", lambda name: next(m for m in V.MODES if m.name == name))
    rows = calibrate.measure(32, 1, CPU)
    assert rows["amp-bf16-again"]["status"] == "ok"
    assert rows["amp-bf16-again"]["dtype"] == "bfloat16"


@pytest.mark.parametrize("name,scale_shapes", [("fp8-tensorwise", ((), ())),
                                               ("fp8-rowwise", ((16, 1), (1, 16)))])
def test_fp8_product_is_a_scaled_e4m3_matmul(name, scale_shapes):
    """The FP8 roof's product, run on the CPU (torch._scaled_mm has a CPU kernel there): e4m3
    operands, unit scales of the recipe's shape, bfloat16 out, the same numbers as a plain
    matmul of the rounded operands."""
    seen = {}
    real = torch._scaled_mm

    def spy(a, b, **kw):
        seen.update(a=a, b=b, **kw)
        return real(a, b, **kw)
    spec = V.mode(name)
    g = torch.Generator().manual_seed(0)
    matmul, what = calibrate.product(spec, 16, CPU, g)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch, "_scaled_mm", spy)
        out = matmul()
    assert what == {"dtype": "float8_e4m3fn", "allow_tf32": False, "out_dtype": "bfloat16",
                    "scaling": name.removeprefix("fp8-"), "use_fast_accum": True}
    assert seen["a"].dtype == seen["b"].dtype == torch.float8_e4m3fn
    assert seen["b"].stride() == (1, 16)  # column-major, as _scaled_mm requires
    assert (tuple(seen["scale_a"].shape), tuple(seen["scale_b"].shape)) == scale_shapes
    assert out.dtype == torch.bfloat16 and out.shape == (16, 16)
    want = seen["a"].float() @ seen["b"].float()
    assert torch.allclose(out.float(), want, rtol=1e-2, atol=1e-1)
