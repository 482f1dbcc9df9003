"""lab/kernels/fp8_probe.py, the H200's FP8 probe, checked on the CPU: without CUDA it does
nothing and says so; --cpu-smoke runs every part at toy sizes (FP8 emulated, no compile)."""

import csv
import importlib.util
import json
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "fp8_probe.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("fp8_probe", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_cuda_it_says_so_and_exits_0(probe, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert probe.main(["--out", str(tmp_path / "out")]) == 0
    assert "needs CUDA" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_cpu_smoke_writes_every_part(probe, tmp_path, capsys):
    pytest.importorskip("torchao.float8")
    assert probe.main(["--out", str(tmp_path), "--cpu-smoke", "--iterations", "1"]) == 0
    result = json.loads((tmp_path / "fp8_probe.json").read_text())
    assert list(result["ceilings"]) == ["fp32", "tf32", "amp-fp16", "amp-bf16",
                                        "fp8-tensorwise", "fp8-rowwise"]
    steps = {s["mode"]: s for s in result["steps"]}
    assert list(steps) == ["fp8-tensorwise", "fp8-rowwise", "amp-bf16"]
    assert steps["fp8-rowwise"]["fp8"]["converted"] == ["0", "2", "4"]
    assert steps["amp-bf16"]["fp8"] is None
    assert all(s["step_time_s"] > 0 for s in steps.values())
    rows = list(csv.DictReader((tmp_path / "fp8_kernels.csv").open()))
    # the FP8 GEMM itself ran in both recipes (on a CPU the profile names operators)
    assert {r["mode"] for r in rows if r["kernel"] == "aten::_scaled_mm"} == \
        {"fp8-tensorwise", "fp8-rowwise"}
    assert "converted / kept" in capsys.readouterr().out
