"""The saved-activations oracle: for every family of the zoo (small random
configs with odd sizes) x float32/bfloat16 x eager/sdpa, the bytes
autograd keeps for backward during a training forward (labels=input_ids
for the causal LMs, the plain forward for the encoders) must equal, byte
for byte, what mtk's graph says (mtk_plan_trace_model on meta, the cpu's
kernels), in total and per module (each storage in the innermost module
running when it is first saved; the loss in the root).  torch's numbers are cached, keyed by this oracle's sources and
the case, in the build directory (torch runs take seconds)."""
import copy
import hashlib
import json
import random
from pathlib import Path

import pytest

import random_configs
from probe_build import build_dir

HERE = Path(__file__).resolve().parent
CACHE_FILE = "plan_saved_oracle_cache.json"

# the class each family is traced as; None: the family's base model
ARCH = {
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
    "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM", "phi3": "Phi3ForCausalLM",
    "mixtral": "MixtralForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM",
    "gpt2": "GPT2LMHeadModel", "gpt_neox": "GPTNeoXForCausalLM", "bert": "BertModel", "vit": "ViTModel",
    "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM", "olmo2": "Olmo2ForCausalLM",
    "smollm3": "SmolLM3ForCausalLM", "granite": "GraniteForCausalLM", "phi": "PhiForCausalLM",
    "roberta": "RobertaForMaskedLM", "xlm-roberta": "XLMRobertaForMaskedLM", "modernbert": "ModernBertForMaskedLM",
    "gpt_oss": "GptOssForCausalLM", "llama4_text": "Llama4ForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM", "gemma3": "Gemma3ForConditionalGeneration",
    "mistral3": "Mistral3ForConditionalGeneration", "glm4_moe": "Glm4MoeForCausalLM",
}
# not traced here: t5 takes two inputs (encoder and decoder ids), which the plan probe's
# one-input lines cannot give; tests/plan/test_memory_cli.py plans it from the command line
TWO_INPUTS = {"t5"}
ENCODERS = {"bert", "vit"}
# transformers runs eager and sdpa for these (the others: sdpa only in mtk)
BOTH_ATTENTIONS = {"llama", "mistral", "qwen2", "gemma", "phi3", "mixtral", "qwen2_moe"}
# gemma2 and gpt_oss run eager only (transformers refuses sdpa for them)
EAGER_ONLY = {"gemma2", "gpt_oss"}
# routing depends on the data (tokens per expert are not known on meta): these run
# batched_mm, whose sizes do not depend on it
DATA_DEPENDENT = {"mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "deepseek_v3", "glm4_moe"}
# gpt2 and bert keep their dropouts (0.1 by default): cpu sdpa then runs the math path
DROPOUT_KEYS = ["resid_pdrop", "embd_pdrop", "attn_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob",
                "attention_dropout", "hidden_dropout", "summary_first_dropout"]
SHAPES = [(2, 7), (1, 13), (3, 5)]


def family_config(family, seed):
    """A random config of `family` (random_configs), as the class traced."""
    cfg = random_configs.GENERATORS[family](random.Random(seed))
    cfg["architectures"] = [ARCH[family]]
    cfg.pop("torch_dtype", None)
    if family in DATA_DEPENDENT:
        # transformers' batched_mm experts: what they save is set by tokens x top_k,
        # whatever the routing (its default grouped_mm refuses these odd sizes on cpu)
        cfg["_experts_implementation"] = "batched_mm"
    if family in ("gpt_neox", "vit"):
        for key in DROPOUT_KEYS:  # their attention dropout is not passed to sdpa yet (0 by default)
            cfg[key] = 0.0
    return cfg


def cases():
    out = []
    for i, family in enumerate(sorted(set(random_configs.GENERATORS) - TWO_INPUTS)):
        for dtype in ("float32", "bfloat16"):
            both = ("eager", "sdpa") if family in BOTH_ATTENTIONS else None
            for attention in both or (("eager",) if family in EAGER_ONLY else ("sdpa",)):
                b, s = SHAPES[(i + len(out)) % len(SHAPES)]
                out.append(pytest.param(family, dtype, attention, b, s, id=f"{family}-{dtype}-{attention}-{b}x{s}"))
    return out


def oracle_key(cfg, dtype, attention, b, s, loss):
    import torch
    import transformers
    h = hashlib.sha256()
    h.update((HERE / "saved_oracle.py").read_bytes())
    h.update(json.dumps([cfg, dtype, attention, b, s, loss, torch.__version__, transformers.__version__],
                        sort_keys=True).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def torch_saved():
    path = build_dir() / CACHE_FILE
    cache = json.loads(path.read_text()) if path.exists() else {}

    def get(cfg, dtype, attention, b, s, loss):
        key = oracle_key(cfg, dtype, attention, b, s, loss)
        if key not in cache:
            import saved_oracle
            cache[key] = saved_oracle.saved_by_module(copy.deepcopy(cfg), dtype, attention, b, s, loss)
            path.write_text(json.dumps(cache, indent=0, sort_keys=True))
        return cache[key]

    return get


@pytest.mark.parametrize("family,dtype,attention,b,s", cases())
def test_saved_bytes_equal_torch(family, dtype, attention, b, s, tmp_path, plan_probe, torch_saved):
    cfg = family_config(family, seed=1000 + len(family))
    loss = family not in ENCODERS
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    (mtk,) = plan_probe([f"{path} | {b}x{s} | {dtype} | {attention} | cpu | {'loss' if loss else 'noloss'}"])
    assert "error" not in mtk, mtk
    expected = torch_saved(cfg, dtype, attention, b, s, loss)
    assert mtk["saved_bytes"] == expected["total"], \
        f"mtk {mtk['saved_bytes']} vs torch {expected['total']} bytes ({json.dumps(cfg)})"
    assert mtk["modules"] == expected["modules"]


def moe_cases():
    return [p for p in cases() if p.values[0] in DATA_DEPENDENT]


@pytest.mark.parametrize("family,dtype,attention,b,s", moe_cases())
def test_moe_blocks_saved_bytes_equal_torch(family, dtype, attention, b, s, tmp_path, plan_probe, torch_saved):
    """Every module of the feed-forward blocks (router, batched_mm experts,
    shared experts, and the dense layers' MLPs) saves what torch's does,
    byte for byte, also where the family's attention is not exact yet."""
    cfg = family_config(family, seed=1000 + len(family))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    (mtk,) = plan_probe([f"{path} | {b}x{s} | {dtype} | {attention} | cpu | loss"])
    assert "error" not in mtk, mtk
    expected = torch_saved(cfg, dtype, attention, b, s, True)

    def blocks(modules):
        return {k: v for k, v in modules.items() if ".mlp" in k}
    assert blocks(expected["modules"]), expected["modules"]
    assert blocks(mtk["modules"]) == blocks(expected["modules"])
