import pytest
import torch

from tcbench import precision as P

CPU = torch.device("cpu")


@pytest.mark.parametrize("name,tf32,dtype,scaler", [
    ("fp32", False, None, False),
    ("tf32", True, None, False),
    ("amp-fp16", False, torch.float16, True),
    ("amp-bf16", False, torch.bfloat16, False),
])
def test_each_mode_sets_and_reports_its_flags(name, tf32, dtype, scaler):
    mode = P.get(name)
    flags = mode.apply()
    assert flags["cuda_matmul_allow_tf32"] is tf32
    assert flags["cudnn_allow_tf32"] is tf32
    assert torch.backends.cuda.matmul.allow_tf32 is tf32
    assert torch.backends.cudnn.allow_tf32 is tf32
    assert mode.autocast_dtype == dtype
    assert mode.scaler(CPU).is_enabled() is scaler


def test_strict_fp32_after_tf32_turns_tf32_back_off():
    P.get("tf32").apply()
    assert P.get("fp32").apply()["cuda_matmul_allow_tf32"] is False
    assert torch.get_float32_matmul_precision() == "highest"


def test_cpu_support_and_reason():
    assert P.get("fp32").supported(CPU) == (True, None)
    assert P.get("amp-bf16").supported(CPU) == (True, None)
    ok, reason = P.get("tf32").supported(CPU)
    assert not ok and "TF32" in reason and "CPU" in reason


def test_autocast_really_changes_matmul_dtype_on_cpu():
    a = torch.randn(8, 8)
    with P.get("amp-bf16").autocast(CPU):
        assert (a @ a).dtype == torch.bfloat16
    with P.get("fp32").autocast(CPU):
        assert (a @ a).dtype == torch.float32


def test_unknown_mode_is_named():
    with pytest.raises(ValueError, match="'fp8'"):
        P.get("fp8")
