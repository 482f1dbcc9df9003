import sys

import pytest
import torch

from tcbench.job import precision

CPU = torch.device("cpu")


@pytest.mark.parametrize("name,tf32,dtype,scaler", [
    ("fp32", False, None, False),
    ("tf32", True, None, False),
    ("amp-fp16", False, torch.float16, True),
    ("amp-bf16", False, torch.bfloat16, False),
])
def test_each_mode_sets_and_reports_its_flags(name, tf32, dtype, scaler):
    mode = precision.get(name)
    flags = mode.apply()
    assert flags["cuda_matmul_allow_tf32"] is tf32
    assert flags["cudnn_allow_tf32"] is tf32
    assert torch.backends.cuda.matmul.allow_tf32 is tf32
    assert torch.backends.cudnn.allow_tf32 is tf32
    assert mode.autocast_dtype == dtype
    assert mode.scaler(CPU).is_enabled() is scaler


def test_strict_fp32_after_tf32_turns_tf32_back_off():
    precision.get("tf32").apply()
    assert precision.get("fp32").apply()["cuda_matmul_allow_tf32"] is False
    assert torch.get_float32_matmul_precision() == "highest"


def test_cpu_support_and_reason():
    assert precision.get("fp32").supported(CPU) == (True, None)
    assert precision.get("amp-bf16").supported(CPU) == (True, None)
    ok, reason = precision.get("tf32").supported(CPU)
    assert not ok and "TF32" in reason and "CPU" in reason


def test_autocast_really_changes_matmul_dtype_on_cpu():
    a = torch.randn(8, 8)
    with precision.get("amp-bf16").autocast(CPU):
        assert (a @ a).dtype == torch.bfloat16
    with precision.get("fp32").autocast(CPU):
        assert (a @ a).dtype == torch.float32


def test_unknown_mode_is_named():
    with pytest.raises(ValueError, match="'fp8'"):
        precision.get("fp8")


# ------------------------------------------------------------------------------- FP8 (torchao)
FP8 = ["fp8-tensorwise", "fp8-rowwise"]
CUDA = torch.device("cuda")


def fake_gpu(monkeypatch, capability):
    """A CUDA device of the given compute capability, as far as supported() can tell."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)


def no_torchao(monkeypatch):
    for name in ("torchao", "torchao.float8"):
        monkeypatch.setitem(sys.modules, name, None)  # `import torchao` raises ImportError


@pytest.mark.parametrize("name", FP8)
def test_fp8_modes_are_bf16_autocast_without_scaler(name):
    mode = precision.get(name)
    assert mode.fp8_recipe == name.removeprefix("fp8-")
    assert mode.autocast_dtype == torch.bfloat16 and not mode.use_scaler
    assert mode.apply()["cuda_matmul_allow_tf32"] is False


@pytest.mark.parametrize("name", FP8)
def test_fp8_is_unsupported_on_the_cpu_and_before_ada(name, monkeypatch):
    ok, reason = precision.get(name).supported(CPU)
    assert not ok and "CPU" in reason and "8.9" in reason
    fake_gpu(monkeypatch, (8, 0))  # an A100
    ok, reason = precision.get(name).supported(CUDA)
    assert not ok and reason == ("FP8 needs compute capability >= 8.9 (Ada or newer); "
                                 "this GPU is 8.0")


@pytest.mark.parametrize("capability", [(8, 9), (9, 0), (10, 0)])
def test_fp8_is_supported_from_ada_on_when_torchao_works(capability, monkeypatch):
    pytest.importorskip("torchao.float8")
    fake_gpu(monkeypatch, capability)
    for name in FP8:
        assert precision.get(name).supported(CUDA) == (True, None)


def test_fp8_without_torchao_names_the_extra(monkeypatch):
    fake_gpu(monkeypatch, (9, 0))
    no_torchao(monkeypatch)
    ok, reason = precision.get("fp8-rowwise").supported(CUDA)
    assert not ok and "torchao" in reason and "pip install -e '.[fp8]'" in reason
    # the hardware alone can (calibrate measures the FP8 roof with a bare _scaled_mm)
    assert precision.get("fp8-rowwise").device_supported(CUDA) == (True, None)
    # and the CPU reason wins over the missing library: it is the one that cannot be fixed
    assert "CPU" in precision.get("fp8-rowwise").supported(CPU)[1]


def test_fp8_with_too_old_torchao_or_torch(monkeypatch):
    torchao = pytest.importorskip("torchao")
    pytest.importorskip("torchao.float8")
    fake_gpu(monkeypatch, (9, 0))
    monkeypatch.setattr(torchao, "__version__", "0.16.0")
    ok, reason = precision.get("fp8-tensorwise").supported(CUDA)
    assert not ok and "torchao 0.16.0 is too old" in reason and ">= 0.17" in reason
    monkeypatch.setattr(torchao, "__version__", "0.18.0")
    monkeypatch.setattr(torch, "__version__", "2.10.0+cu128")
    ok, reason = precision.get("fp8-tensorwise").supported(CUDA)
    assert not ok and "torch >= 2.11" in reason and "2.10.0+cu128" in reason


def test_fp8_with_a_torchao_that_crashes_on_import(monkeypatch):
    import builtins

    fake_gpu(monkeypatch, (9, 0))
    no_torchao(monkeypatch)
    real_import = builtins.__import__

    def crashing(name, *args, **kwargs):
        if name.startswith("torchao"):
            raise RuntimeError("undefined symbol: _ZN3c10")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", crashing)
    ok, reason = precision.get("fp8-tensorwise").supported(CUDA)
    assert not ok and "does not import with torch" in reason and "undefined symbol" in reason


def test_modes_without_fp8_leave_the_model_alone():
    model = torch.nn.Linear(32, 32)
    assert precision.get("amp-bf16").prepare(model) == (model, None)


@pytest.mark.parametrize("name", FP8)
def test_fp8_converts_the_seed_cnn_fc1_and_keeps_fc2(name):
    pytest.importorskip("torchao.float8")
    from tcbench.workloads.mnist_cnn import Net

    model = Net()
    params = list(model.parameters())
    out, fp8 = precision.get(name).prepare(model, "default")
    assert out is model and list(out.parameters()) == params  # the optimiser's tensors
    assert type(model.fc1).__name__ == "Float8Linear" and type(model.fc2) is torch.nn.Linear
    assert fp8["recipe"] == name.removeprefix("fp8-") and fp8["converted"] == ["fc1"]
    assert fp8["kept"] == [{"layer": "fc2", "in_features": 128, "out_features": 10,
                            "reason": "in/out features 128/10: torch._scaled_mm needs both "
                                      "divisible by 16"}]
    assert fp8["linear_weights_converted_share"] == pytest.approx(9216 * 128 / (9216 * 128 + 1280))
    assert fp8["torchao_version"] and fp8["cast_configs"]["input"].endswith("e4m3")
    assert fp8["eager_note"] is None and fp8["unsupported_reason"] is None
    assert fp8["pad_inner_dim"] is None and not model.fc1.config.pad_inner_dim


def test_fp8_pads_the_inner_dimension_only_for_ragged_batches():
    """digits: 1,437 training samples in batches of 64 leave a last batch of 29 rows, the inner
    dimension of the weight-gradient GEMM, which torch._scaled_mm wants a multiple of 16."""
    pytest.importorskip("torchao.float8")
    from tcbench.workloads.mnist_cnn import Net

    for name in FP8:
        model, fp8 = precision.get(name).prepare(Net(), "off", {64, 1437 % 64})
        assert fp8["pad_inner_dim"] == "on: batches of 29 samples, not a multiple of 16"
        assert model.fc1.linear_mm_config.grad_weight.pad_inner_dim
        assert model.fc1.config.cast_config_input.short_str().endswith("e4m3")  # recipe kept
        # 2,656 rows in the last batch: fine
        model, fp8 = precision.get(name).prepare(Net(), "off", {4096, 60000 % 4096})
        assert fp8["pad_inner_dim"] is None and not model.fc1.config.pad_inner_dim


def test_fp8_eager_is_noted_and_attention_out_proj_is_kept():
    pytest.importorskip("torchao.float8")
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    _, fp8 = precision.get("fp8-tensorwise").prepare(layer, "off")
    assert fp8["converted"] == ["linear1", "linear2"]
    assert [k["layer"] for k in fp8["kept"]] == ["self_attn.out_proj"]
    assert "never its forward()" in fp8["kept"][0]["reason"]
    assert "torch.compile" in fp8["eager_note"]


@pytest.mark.parametrize("model,why", [
    (torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.ReLU()), "has none"),
    (torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10)), "divisible by 16"),
])
def test_fp8_without_a_convertible_layer_says_why(model, why):
    pytest.importorskip("torchao.float8")
    _, fp8 = precision.get("fp8-rowwise").prepare(model)
    assert fp8["converted"] == [] and why in fp8["unsupported_reason"]


# ---------------------------------------------------------------------- FP8 cells as records
def test_fp8_cell_on_the_cpu_is_an_unsupported_record(tmp_path):
    import json

    from tcbench import record as R
    from tcbench.job import run

    out = tmp_path / "r.json"
    spec = {"workload": "digits", "precision": "fp8-tensorwise", "batch_size": 64,
            "params": {"epochs": 1}}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    rec = R.read(out)
    assert rec["status"] == "unsupported" and "CPU" in rec["status_reason"]
    assert rec["metrics"] is None


def test_fp8_cell_without_a_convertible_layer_is_unsupported_after_build(monkeypatch):
    """ResNet-50's only Linear (2048 -> 10 classes here) cannot run in FP8: known only once the
    model is built, and a record, not a crash. (The device check is bypassed: this is a CPU.)"""
    pytest.importorskip("torchao.float8")
    from tcbench import record as R
    from tcbench.job import run

    monkeypatch.setattr(precision.Precision, "supported", lambda self, device: (True, None))
    spec = {"workload": "resnet50", "precision": "fp8-rowwise", "batch_size": 2,
            "params": {"image_size": 32, "num_classes": 10, "steps": 1, "warmup_steps": 1,
                       "compile": "default"}}
    rec = run.run_job(spec)
    assert rec["status"] == "unsupported" and rec["metrics"] is None
    assert rec["status_reason"] == ("none of the model's 1 nn.Linear layer(s) can run in FP8: "
                                    "fc: in/out features 2048/10: torch._scaled_mm needs both "
                                    "divisible by 16")
    fp8 = rec["precision_flags"]["fp8"]
    assert fp8["converted"] == [] and fp8["recipe"] == "rowwise" and fp8["compile"] == "default"
    R.validate(rec)


def test_fp8_cell_trains_the_converted_layers_and_records_them(monkeypatch):
    """The hook in tcbench.job.run end to end. torch._scaled_mm also runs on the CPU (emulated, no
    Tensor Cores), so with the device check bypassed an FP8 cell trains here: the optimiser
    must move the converted layers' weights, and the record must say what ran."""
    pytest.importorskip("torchao.float8")
    from tcbench import record as R
    from tcbench.job import run
    from tcbench.workloads import amp_recipe

    monkeypatch.setattr(precision.Precision, "supported", lambda self, device: (True, None))
    built, initial = [], []
    real_build = amp_recipe.build

    def build(*args):
        built.append(real_build(*args))
        initial.append({k: v.clone() for k, v in built[-1].model.state_dict().items()})
        return built[-1]
    monkeypatch.setattr(amp_recipe, "build", build)
    params = {"in_size": 64, "out_size": 32, "num_batches": 3, "epochs": 2, "warmup_steps": 1}
    spec = {"workload": "amp_recipe", "precision": "fp8-tensorwise", "batch_size": 32,
            "params": params}
    rec = run.run_job(spec)
    R.validate(rec)
    assert rec["status"] == "ok", rec["status_reason"]
    fp8 = rec["precision_flags"]["fp8"]
    assert fp8["converted"] == ["0", "2", "4"] and fp8["kept"] == []
    assert fp8["cast_configs"] == {"input": "dyn_ten_e4m3", "weight": "dyn_ten_e4m3",
                                   "grad_output": "dyn_ten_e5m2"}
    assert "eager" in fp8["eager_note"]
    model = built[0].model
    assert all(type(model[i]).__name__ == "Float8Linear" for i in (0, 2, 4))
    for name, weight in model.state_dict().items():  # every converted layer trained
        assert not torch.equal(weight, initial[0][name]), name
    # FLOPs are counted on the model before conversion: the same arithmetic as in bf16
    # (torch's counter sees a Float8Linear's backward differently)
    bf16 = run.run_job(spec | {"precision": "amp-bf16"})
    assert type(built[-1].model[0]) is torch.nn.Linear
    assert rec["metrics"]["flops_per_step"] == bf16["metrics"]["flops_per_step"]
