"""Hugging Face transformers by name (workload ``transformers``): tiny configurations build and
train on the CPU through the job's entry point, FP8 is `unsupported` with its reason on a CPU,
the flop counter agrees with the 6 N T + attention estimate, GPT-2's Conv1D layers become the
equal nn.Linear, and every bad input stops the study at parse time, named."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from conftest import REPO
from tcbench.launch import matrix
from tcbench import record as R
from tcbench.job import run
from tcbench import workloads

pytest.importorskip("transformers")
from tcbench.workloads import hf_transformers  # noqa: E402

TINY = {"steps": 2, "warmup_steps": 1, "profile_steps": 1, "seq_len": 32}
GPT2 = {"model": "gpt2", "config": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 250,
                                    "n_positions": 64}}
LLAMA = {"model": "llama", "config": {"hidden_size": 64, "intermediate_size": 128,
                                      "num_hidden_layers": 2, "num_attention_heads": 4,
                                      "num_key_value_heads": 2, "vocab_size": 256}}
BERT = {"model": "bert", "config": {"hidden_size": 64, "intermediate_size": 128,
                                    "num_hidden_layers": 2, "num_attention_heads": 4,
                                    "vocab_size": 256}}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing may come from the hub


def job(tmp_path, params, precision="fp32", batch_size=2) -> dict:
    out = tmp_path / f"{precision}.json"
    spec = {"workload": "transformers", "precision": precision, "batch_size": batch_size,
            "params": TINY | params}
    assert run.main(["--spec", json.dumps(spec), "--out", str(out)]) == 0
    return R.read(out)  # validated against the record schema


@pytest.mark.slow
@pytest.mark.parametrize("model", [GPT2, LLAMA, BERT], ids=["gpt2", "llama", "bert"])
def test_tiny_models_train_on_the_cpu(tmp_path, model):
    rec = job(tmp_path, model)
    assert rec["status"] == "ok", rec["status_reason"]
    m, info, data = rec["metrics"], rec["model"], rec["data"]
    assert info["source"] == "transformers" and info["model_type"] == model["model"]
    assert info["task"] == ("masked-lm" if model is BERT else "causal-lm")
    assert data["tokens_per_sample"] == 32 and data["samples_per_epoch"] == 3 * 2
    assert m["final_loss"] > 0 and m["throughput_samples_per_s"] > 0
    # the flop counter and the standard estimate count the same matmuls
    est = info["flop_estimate"]["flops_per_step"]
    assert m["flops_per_step"] == pytest.approx(est, rel=0.02)


def test_bf16_trains_and_fp8_is_unsupported_on_a_cpu(tmp_path):
    assert job(tmp_path, LLAMA, "amp-bf16")["status"] == "ok"
    rec = job(tmp_path, LLAMA, "fp8-rowwise")
    assert rec["status"] == "unsupported" and "CPU" in rec["status_reason"]


def test_gpt2_conv1d_becomes_the_equal_linear():
    from transformers import AutoConfig, AutoModelForCausalLM

    params = workloads.resolve_params("transformers", GPT2 | TINY)
    torch.manual_seed(0)
    hf = AutoModelForCausalLM.from_config(AutoConfig.for_model("gpt2", **GPT2["config"])).eval()
    x = torch.randint(0, 250, (2, 16))
    with torch.no_grad():
        before = hf(input_ids=x).logits
        model = hf_transformers.LanguageModel(hf)
        replaced = hf_transformers.conv1d_to_linear(model)
        after = model(x)
    assert len(replaced) == 4 * 2  # c_attn, c_proj, c_fc, mlp.c_proj per layer
    assert not any(type(m).__name__ == "Conv1D" for m in model.modules())
    torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-5)
    assert params["task"] == "causal-lm"


def test_fp8_converts_the_blocks_and_names_the_lm_head_it_keeps():
    pytest.importorskip("torchao")
    from tcbench.job import precision as P

    params = workloads.resolve_params("transformers", GPT2 | TINY)
    w = workloads.build("transformers", params, 16, torch.device("cpu"))
    # fp32 master weights, whatever dtype the library defaults to: autocast does the rest
    assert {p.dtype for p in w.model.parameters()} == {torch.float32}
    _, fp8 = P.get("fp8-tensorwise").prepare(w.model, "default", {16})
    assert len(fp8["converted"]) == 8
    kept = {k["layer"]: k["reason"] for k in fp8["kept"]}
    assert list(kept) == ["hf.lm_head"] and "64/250" in kept["hf.lm_head"]


def test_presets_are_the_published_sizes():
    gpt2 = hf_transformers.config_of({"model": "gpt2-small", "config": {}})
    assert (gpt2.n_layer, gpt2.n_embd, gpt2.vocab_size) == (12, 768, 50257)
    llama = hf_transformers.config_of({"model": "llama-300m", "config": {}})
    dims = (llama.hidden_size, llama.intermediate_size, llama.vocab_size,
            llama.num_key_value_heads * llama.hidden_size // llama.num_attention_heads)
    assert all(d % 16 == 0 for d in dims)  # every Linear can run in FP8
    with torch.device("meta"):
        model = hf_transformers.create({"model": "llama-300m", "config": {}, "task": "causal-lm",
                                        "attn_implementation": "sdpa"})
        n = sum(p.numel() for p in model.parameters())
    assert 1e8 < n < 4e8


@pytest.mark.parametrize("params, message", [
    ({"model": "gpt-2"}, r"model='gpt-2' is not a transformers model \(did you mean .*gpt2"),
    ({"model": "gpt2", "config": {"n_layers": 2}},
     r"config key\(s\) 'n_layers' are not attributes of GPT2Config \(did you mean .*n_layer"),
    ({"model": "gpt2", "config": {"n_embd": 100, "n_head": 12, "n_layer": 1}},
     r"n_embd.*divisible by num_heads|embed_dim.*divisible"),
    ({"model": "gpt2", "config": {"n_layer": 1}, "seq_len": 4096},
     r"seq_len=4096 is longer than .*max_position_embeddings=1024"),
    ({"model": "gpt2", "task": "masked-lm"}, r"has no masked-lm head"),
    ({"model": "gpt2", "config": [1]}, r"config=\[1\] must be a mapping"),
    ({"model": "vit"}, r"no causal-LM or masked-LM head"),
    ({"model": "gpt2", "attn_implementation": "flash"}, r"attn_implementation='flash'"),
])
def test_bad_input_is_named_before_any_job(params, message):
    with pytest.raises(ValueError, match=message):
        workloads.resolve_params("transformers", params)


def test_the_study_config_expands_to_what_its_header_says():
    """config/transformers.yaml: GPT-2 small and the Llama-style preset, bf16 against both FP8
    recipes, compiled, three repeats."""
    from snakemake.utils import validate

    from tcbench.launch import config as tcconfig

    text = (REPO / "config" / "transformers.yaml").read_text()
    config = yaml.safe_load(text)
    tcconfig.check(config)
    validate(config, str(tcconfig.SCHEMA_PATH))
    jobs = matrix.expand(config)
    assert f"= {len(jobs)} jobs" in text  # the count the header promises
    cells = {(dict(j.params)["model"], j.precision, dict(j.params)["compile"])
             for j in jobs.values()}
    assert {m for m, _, _ in cells} == {"gpt2-small", "llama-300m"}
    assert {p for _, p, _ in cells} == {"amp-bf16", "fp8-tensorwise", "fp8-rowwise"}
    assert {c for _, _, c in cells} == {"default"}
    assert {j.repeat for j in jobs.values()} == {1, 2, 3} and len(jobs) == 2 * 3 * 3


def test_the_first_pass_is_the_whole_studys_gpt2_cells():
    """config/transformers_quick.yaml: the whole study's tf_gpt2 cells, the same parameters
    (so the whole study run later reuses its records), three repeats, nothing else."""
    def cells(name):
        text = (REPO / "config" / name).read_text()
        return text, {j.id: j.params for j in matrix.expand(yaml.safe_load(text)).values()}
    text, quick = cells("transformers_quick.yaml")
    _, whole = cells("transformers.yaml")
    assert f"= {len(quick)} jobs" in text and len(quick) == 3 * 3
    assert all(k.startswith("tf_gpt2/") and whole[k] == v for k, v in quick.items())
