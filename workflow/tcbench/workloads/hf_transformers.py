"""Any Hugging Face transformers architecture, by name, built from its configuration: no weights,
no tokenizer, no download. transformers is an optional extra: ``pip install -e '.[transformers]'``.

    workload: transformers
    params: {model: gpt2-small}                         # a preset, or any model_type:
    params: {model: llama, config: {hidden_size: 512, num_hidden_layers: 8}}
    axes: {model: [gpt2-small, llama-300m]}             # several, one cell each

``AutoConfig.for_model(model_type, **config)`` then ``AutoModelForCausalLM.from_config`` (or
``AutoModelForMaskedLM`` for an encoder such as bert), attention through
``attn_implementation`` (SDPA by default). It trains on synthetic token batches made once on the
device: ``seq_len`` tokens per sample, uniform over the vocabulary, next-token targets (causal)
or ``mlm_probability`` of the positions as targets (masked); AdamW. A sample is one sequence, so
tokens/s is samples/s times ``seq_len`` (the record's ``data.tokens_per_sample``).

GPT-2 family models use transformers' ``Conv1D`` (``x @ W + b`` with W stored (in, out)); each is
replaced by the ``nn.Linear`` that computes the same product (weight transposed, the same
numbers) in every precision, so that the FP8 modes can convert them and every mode trains one
and the same module graph (``model_info.conv1d_to_linear``). A Linear whose dimensions are not
multiples of 16 (GPT-2's lm_head, 768 x 50257) stays in bfloat16 under FP8; the record's
``precision_flags.fp8.kept`` names it.
"""

from __future__ import annotations

import contextlib
import functools
import json

import torch
import torch.nn.functional as F

from . import Workload, classify, optional_package, positive_int

INSTALL = "pip install -e '.[transformers]' in a checkout of tcbench, or pip install transformers"
LOADERS = ("synthetic",)
TASKS = ("causal-lm", "masked-lm")
ATTENTION = ("sdpa", "eager")
# Out-of-the-box models: a model_type and the configuration it is built with. gpt2-small is
# GPT-2 as published (124M: 12 layers, 768 wide, 50257 tokens); llama-300m is a Llama-style
# decoder (RMSNorm, SwiGLU, RoPE, grouped-query attention) of ~270M parameters whose every
# Linear, lm_head included, has dimensions divisible by 16, so FP8 converts all of them.
PRESETS: dict[str, tuple[str, dict]] = {
    "gpt2-small": ("gpt2", {}),
    # its vocabulary padded to 50304, a multiple of 64, as nanoGPT and llm.c train it: lm_head's
    # GEMMs tile whole and FP8 converts it (50257 is not a multiple of 16); synthetic tokens
    # then range over the padded 47 too, and the FLOP count includes them
    "gpt2-small-v50304": ("gpt2", {"vocab_size": 50304}),
    "llama-300m": ("llama", {"hidden_size": 1024, "intermediate_size": 2816,
                             "num_hidden_layers": 16, "num_attention_heads": 16,
                             "num_key_value_heads": 8, "vocab_size": 32000,
                             "max_position_embeddings": 2048, "tie_word_embeddings": False}),
}
# What a job imports to check and build its model, 2-4 s a job unless a preloaded interpreter
# has them (tcbench.launch.forkserver): the registry (the parameter check's head lookup), the
# library's model base and the presets' own modules (another model_type's module is the job's)
PRELOAD = ("transformers", "transformers.models.auto.configuration_auto",
           "transformers.models.auto.modeling_auto", "transformers.modeling_utils",
           *dict.fromkeys(f"transformers.models.{t}.modeling_{t}" for t, _ in PRESETS.values()))
DEFAULTS = {
    "model": "gpt2-small",      # a preset (PRESETS) or any transformers model_type
    "config": {},               # configuration overrides, e.g. {num_hidden_layers: 6}
    "task": None,               # None: masked-lm for encoders with an MLM head, else causal-lm
    "seq_len": 1024,            # tokens per sample
    "attn_implementation": "sdpa",
    "mlm_probability": 0.15,    # masked-lm: share of positions that are targets
    "steps": 30,
    "warmup_steps": 10,
    "distinct_batches": 4,      # token batches made up front and cycled
    "optimizer": "adamw",       # or sgd
    "lr": 3e-4,
    "weight_decay": 0.1,
    "momentum": 0.9,            # sgd only
    "loader": "synthetic",
}


def transformers():
    """The transformers package, or the error that says how to install it."""
    return optional_package("transformers", "transformers", INSTALL)


@functools.cache
def model_types() -> tuple[str, ...]:
    transformers()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return tuple(CONFIG_MAPPING_NAMES)


@functools.cache
def lm_heads() -> dict[str, tuple[str, ...]]:
    """model_type -> the tasks transformers has a head class for."""
    transformers()
    from transformers.models.auto import modeling_auto as MA

    causal, masked = MA.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MA.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    return {t: tuple(k for k, m in (("causal-lm", causal), ("masked-lm", masked)) if t in m)
            for t in set(causal) | set(masked)}


def resolve(model) -> tuple[str, dict]:
    """``(model_type, preset overrides)`` for a preset or a model_type; else the error."""
    if model in PRESETS:
        return PRESETS[model]
    if not isinstance(model, str) or model not in model_types():
        raise classify.unknown_name("transformers", model, [*PRESETS, *model_types()])
    return model, {}


@functools.cache
def _config(model: str, overrides: str):
    """The configuration, every override checked to be one of its attributes (transformers
    keeps unknown keyword arguments silently, so a typo would change nothing)."""
    model_type, preset = resolve(model)
    overrides = json.loads(overrides)
    auto = transformers().AutoConfig
    plain = auto.for_model(model_type)
    unknown = [k for k in overrides if not hasattr(plain, k)]
    if unknown:
        known = sorted(plain.to_dict()) + sorted(getattr(plain, "attribute_map", {}))
        raise ValueError(f"workload 'transformers': config key(s) {', '.join(map(repr, unknown))}"
                         f" are not attributes of {type(plain).__name__}"
                         f"{classify.suggest(unknown[0], known)}; "
                         f"it has {', '.join(known[:40])}, ...")
    try:
        config = auto.for_model(model_type, **(preset | overrides))
    except Exception as exc:  # noqa: BLE001 - the library's own check of a value, named
        raise ValueError(f"workload 'transformers': model {model!r} with config {overrides}: "
                         f"{type(exc).__name__}: {exc}") from None
    config.use_cache = False  # training: no key/value cache
    return config


def config_of(params: dict):
    return _config(params["model"], json.dumps(params["config"] or {}, sort_keys=True))


def derive(params: dict) -> dict:
    transformers()  # first, and every time: the names are cached, a missing package must say so
    if not isinstance(params["config"], dict):
        raise ValueError(f"workload 'transformers': config={params['config']!r} must be a "
                         f"mapping of configuration attributes")
    model_type, _ = resolve(params["model"])
    tasks = lm_heads().get(model_type, ())
    if not tasks:
        raise ValueError(f"workload 'transformers': model {params['model']!r} (model_type "
                         f"{model_type!r}) has no causal-LM or masked-LM head in transformers "
                         f"{transformers().__version__}; tcbench trains language models")
    return {"task": "masked-lm" if "masked-lm" in tasks else "causal-lm"}


def check(params: dict) -> None:
    positive_int("transformers", params, "seq_len", "steps", "distinct_batches")
    model_type, _ = resolve(params["model"])
    for key, known in (("task", TASKS), ("attn_implementation", ATTENTION),
                       ("optimizer", tuple(classify.OPTIMIZERS))):
        if params[key] not in known:
            raise ValueError(f"workload 'transformers': {key}={params[key]!r}; choose one of "
                             f"{', '.join(known)}")
    if params["task"] not in lm_heads().get(model_type, ()):
        raise ValueError(f"workload 'transformers': model {params['model']!r} has no "
                         f"{params['task']} head; it has {', '.join(lm_heads()[model_type])}")
    p = params["mlm_probability"]
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 < p <= 1:
        raise ValueError(f"workload 'transformers': mlm_probability={p!r} must be in (0, 1]")
    for key in ("lr", "weight_decay", "momentum"):
        v = params[key]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 or \
                (key == "lr" and v == 0):
            raise ValueError(f"workload 'transformers': {key}={v!r} must be a number "
                             + ("> 0" if key == "lr" else ">= 0"))
    config = config_of(params)
    longest = getattr(config, "max_position_embeddings", None)
    if isinstance(longest, int) and params["seq_len"] > longest:
        raise ValueError(f"workload 'transformers': seq_len={params['seq_len']} is longer than "
                         f"model {params['model']!r}'s max_position_embeddings={longest}; set "
                         f"seq_len <= {longest} or config: {{max_position_embeddings: "
                         f"{params['seq_len']}}}")


def trial(params: dict) -> None:
    _forward_check(params["model"], json.dumps(params["config"] or {}, sort_keys=True),
                   params["task"], params["attn_implementation"], params["seq_len"])


@functools.cache
def _forward_check(model: str, overrides: str, task: str, attention: str, seq_len: int):
    params = {"model": model, "config": json.loads(overrides), "task": task,
              "attn_implementation": attention}
    config = config_of(params)
    classify.forward_check(f"workload 'transformers': model {model!r}"
                           + (f" with config {params['config']}" if params["config"] else ""),
                           lambda: create(params), token_batch(config.vocab_size, seq_len, task, 2),
                           lm_loss)


# --------------------------------------------------------------------------------- the model
class LanguageModel(torch.nn.Module):
    """The transformers model, called on token ids, returning its logits (the training loop's
    ``model(data)``; the loss is ``lm_loss``)."""

    def __init__(self, hf: torch.nn.Module):
        super().__init__()
        self.hf = hf

    def forward(self, input_ids):
        if input_ids.is_meta:
            with _unpacked():
                return self.hf(input_ids=input_ids).logits
        return self.hf(input_ids=input_ids).logits


@contextlib.contextmanager
def _unpacked():
    """On the meta device (the FLOP count, the parse-time check), transformers >= 4.53's test
    for sequences packed into one row (``find_packed_sequence_indices``, a data-dependent
    ``.all()``) cannot run; every row here is one sequence, which is the answer it would give
    (None), so it is given directly. On a real device the library's own test runs, as it does
    for any user of transformers (in eager mode one host synchronisation per step; compiled,
    it is traced away)."""
    try:
        from transformers import masking_utils
    except ImportError:  # older transformers: no such test
        yield
        return
    original = getattr(masking_utils, "find_packed_sequence_indices", None)
    if original is None:
        yield
        return
    masking_utils.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        masking_utils.find_packed_sequence_indices = original


def lm_loss(logits, target):
    """Cross-entropy of every position's logits against its target token (-100: no target)."""
    return F.cross_entropy(logits.flatten(0, 1).float(), target.flatten(), ignore_index=-100)


def conv1d_to_linear(model: torch.nn.Module) -> list[str]:
    """Replace every transformers ``Conv1D`` by the equal ``nn.Linear``; the names replaced."""
    from transformers.pytorch_utils import Conv1D

    replaced = []
    for name, mod in list(model.named_modules()):
        if not isinstance(mod, Conv1D):
            continue
        n_in, n_out = mod.weight.shape
        linear = torch.nn.Linear(n_in, n_out, bias=mod.bias is not None,
                                 device=mod.weight.device, dtype=mod.weight.dtype)
        with torch.no_grad():
            linear.weight.copy_(mod.weight.t())
            if mod.bias is not None:
                linear.bias.copy_(mod.bias)
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, linear)
        replaced.append(name)
    return replaced


def create(params: dict) -> LanguageModel:
    T = transformers()
    auto = T.AutoModelForMaskedLM if params["task"] == "masked-lm" else T.AutoModelForCausalLM
    hf = auto.from_config(config_of(params), attn_implementation=params["attn_implementation"])
    model = LanguageModel(hf)
    model.conv1d_replaced = conv1d_to_linear(model)
    return model


def token_batch(vocab: int, seq_len: int, task: str, batch_size: int, generator=None):
    """``make(device) -> (input_ids, targets)``: uniform random tokens; causal: the next token
    of a sequence one longer; masked: a random ``mlm_probability`` share of positions."""
    def make(device, mlm_probability: float = 0.15):
        kw = {"device": device, "generator": generator}
        if task == "causal-lm":
            seq = torch.randint(0, vocab, (batch_size, seq_len + 1), **kw)
            return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
        ids = torch.randint(0, vocab, (batch_size, seq_len), **kw)
        picked = torch.rand(batch_size, seq_len, **kw) < mlm_probability
        return ids, torch.where(picked, torch.randint(0, vocab, ids.shape, **kw), -100)
    return make


def flop_estimate(model: torch.nn.Module, config, seq_len: int, tokens: int) -> dict:
    """The standard estimate of one training step's FLOPs, to cross-check the flop counter:
    6 N per token for the matmuls (2 forward, 4 backward) with N the weights of every Linear,
    lm_head included (the embedding lookup multiplies nothing), plus 12 L d S per token for
    attention's score and value products (PaLM, Chowdhery et al. 2022, appendix B:
    6N + 12 L H Q T, with H Q = d the attention width, T the sequence length; a causal mask is
    not discounted, as neither SDPA's FLOP count nor that formula does)."""
    n = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    layers = config.num_hidden_layers
    width = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    width *= config.num_attention_heads
    return {"formula": "6 N T + 12 L d S T (PaLM appendix B)", "linear_weights": n,
            "layers": layers, "attention_width": width, "seq_len": seq_len, "tokens": tokens,
            "flops_per_step": 6 * n * tokens + 12 * layers * width * seq_len * tokens}


def build(params: dict, batch_size: int, device: torch.device) -> Workload:
    torch.manual_seed(params["seed"])
    config, seq_len, task = config_of(params), params["seq_len"], params["task"]
    with torch.device(device):  # initialised where it trains: no host copy of the weights
        model = create(params)
    g = torch.Generator(device=device).manual_seed(params["seed"])
    make = token_batch(config.vocab_size, seq_len, task, batch_size, g)
    steps = params["warmup_steps"] + params["steps"]
    made = [make(device, params["mlm_probability"])
            for _ in range(min(params["distinct_batches"], steps))]
    T = transformers()
    info = {"name": params["model"], "source": "transformers", "model_type": config.model_type,
            "architecture": type(model.hf).__name__, "task": task,
            "transformers_version": T.__version__,
            "attn_implementation": params["attn_implementation"],
            "config": {k: getattr(config, k) for k in (
                "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "num_key_value_heads", "max_position_embeddings",
                "tie_word_embeddings") if hasattr(config, k)},
            "conv1d_to_linear": model.conv1d_replaced,
            "flop_estimate": flop_estimate(model, config, seq_len, batch_size * seq_len)}
    what = ("next-token targets" if task == "causal-lm" else
            f"{params['mlm_probability']:.0%} of positions as masked-LM targets")
    return Workload(
        name="transformers",
        model=model,
        loss_fn=lm_loss,
        optimizer=classify.optimizer_of(params, model.parameters()),
        epochs=1,
        train_loader=classify.FixedBatches(made, steps),
        example_batch=made[0],
        data={"data": "synthetic", "loader": "synthetic", "samples_per_epoch": steps * batch_size,
              "tokens_per_sample": seq_len, "tokens_per_epoch": steps * batch_size * seq_len,
              "vocab_size": config.vocab_size,
              "description": f"{len(made)} distinct batches of {batch_size} x {seq_len} uniform "
                             f"random tokens over a vocabulary of {config.vocab_size}, {what}, "
                             f"cycled on the device"},
        model_info=info,
    )
