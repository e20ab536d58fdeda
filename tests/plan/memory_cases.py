"""The configurations the memory oracle checks, and the cache of torch's
measurements for them (keyed by the measuring source and the case, so a
change to either measures again).

Every causal-LM family of the zoo, small random configs (odd sizes, GQA,
tied and untied embeddings) x float32/bfloat16 x eager/sdpa x {training
with AdamW, training with SGD, inference}, with and without gradient
checkpointing, at several (batch, seq); BERT for inference; the encoders
(bert, roberta, xlm-roberta, modernbert) masked-LM training and inference.
"""
import hashlib
import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import random_configs  # noqa: E402

CACHE = os.path.join(HERE, "torch_memory_cache.json")
# the families whose attention mtk builds as sdpa only (transformers' default)
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "glm4_moe", "gpt_oss")
SDPA_ONLY = ("gpt_neox", "gpt2", "bert", "roberta", "xlm-roberta", "modernbert", "qwen3_moe", "deepseek_v3",
             "glm4_moe")
# the families transformers runs with eager attention only
EAGER_ONLY = ("gemma2", "gpt_oss")
CAUSAL = {
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM", "gemma": "GemmaForCausalLM",
    "gemma2": "Gemma2ForCausalLM", "phi3": "Phi3ForCausalLM", "gpt2": "GPT2LMHeadModel",
    "gpt_neox": "GPTNeoXForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM", "glm4_moe": "Glm4MoeForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
}


def family_config(family, arch=None):
    cfg = random_configs.GENERATORS[family](random.Random("%s-memory" % family))
    cfg["architectures"] = [arch or CAUSAL[family]]
    cfg.pop("torch_dtype", None)
    if family in MOE:
        # transformers' batched_mm experts (torch_memory.build runs them): sizes set by
        # tokens x top_k whatever the routing, so the plan is exact for torch's random one
        cfg["_experts_implementation"] = "batched_mm"
    return cfg


def cases():
    """(id, case) pairs; a case is what torch_memory.measure reads."""
    out = []
    for i, family in enumerate(CAUSAL):
        cfg = family_config(family)
        f32, bf16 = ("float32", "bfloat16") if i % 2 == 0 else ("bfloat16", "float32")
        rows = [
            ("train-adamw", dict(mode="training", optimizer="adamw", dtype=f32, attention="sdpa", batch=2, seq=13)),
            ("train-sgd-ckpt", dict(mode="training", optimizer="sgd", dtype=bf16, attention="eager",
                                    checkpointing=True, batch=1, seq=19)),
            ("inference", dict(mode="inference", dtype=f32, attention="eager" if i % 2 == 0 else "sdpa",
                               batch=3, seq=11)),
            ("train-adamw-ckpt", dict(mode="training", optimizer="adamw", dtype="bfloat16",
                                      attention="sdpa" if i % 2 == 0 else "eager", checkpointing=True,
                                      batch=2, seq=8)),
        ]
        for name, row in rows:
            if family in EAGER_ONLY:  # softcapping, sinks: no sdpa path in transformers 5
                row["attention"] = "eager"
            elif family in SDPA_ONLY:
                row["attention"] = "sdpa"
            out.append(("%s-%s" % (family, name), dict(row, config=cfg)))
    out.append(("llama-train-adamw-accum3", dict(mode="training", optimizer="adamw", dtype="float32",
                                                 attention="sdpa", batch=2, seq=13, grad_accum=3,
                                                 config=family_config("llama"))))
    out.append(("phi3-train-momentum-accum2", dict(mode="training", optimizer="momentum", dtype="float32",
                                                   attention="sdpa", batch=1, seq=11, grad_accum=2,
                                                   config=family_config("phi3"))))
    bert = family_config("bert", "BertForMaskedLM")
    out.append(("bert-inference-f32", dict(mode="inference", dtype="float32", attention="sdpa", batch=2, seq=9,
                                           config=bert)))
    out.append(("bert-inference-bf16", dict(mode="inference", dtype="bfloat16", attention="sdpa", batch=1,
                                            seq=17, config=bert)))
    # the encoders' masked-LM training (labels=input_ids) and inference
    for family, arch in (("bert", "BertForMaskedLM"), ("roberta", "RobertaForMaskedLM"),
                         ("xlm-roberta", "XLMRobertaForMaskedLM"), ("modernbert", "ModernBertForMaskedLM")):
        cfg = family_config(family, arch)
        out.append(("%s-train-adamw" % family, dict(mode="training", optimizer="adamw", dtype="float32",
                                                    attention="sdpa", batch=2, seq=13, config=cfg)))
        out.append(("%s-train-sgd-bf16" % family, dict(mode="training", optimizer="sgd", dtype="bfloat16",
                                                       attention="sdpa", batch=1, seq=19, config=cfg)))
        out.append(("%s-train-adamw-ckpt" % family, dict(mode="training", optimizer="adamw", dtype="float32",
                                                         attention="sdpa", checkpointing=True, batch=2, seq=9,
                                                         config=cfg)))
        if family != "bert":
            out.append(("%s-inference-f32" % family, dict(mode="inference", dtype="float32", attention="sdpa",
                                                          batch=3, seq=11, config=cfg)))
    return out


# the MoE families whose transformers experts take _experts_implementation
# (llama4_text's do not: every expert on every token)
GROUPED = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "glm4_moe", "gpt_oss")
# the experts' intermediate size of each family's config
_EXPERT_INTERMEDIATE = {"mixtral": "intermediate_size", "gpt_oss": "intermediate_size"}


def _round_up(n, m):
    return (n + m - 1) // m * m


def grouped_config(family):
    """family_config with transformers' default grouped_mm experts, and the
    hidden and experts' intermediate sizes rounded up to multiples of 16:
    torch's cpu grouped_mm needs 16-byte aligned strides (the attention's
    and dense sizes stay odd)."""
    cfg = family_config(family)
    cfg["_experts_implementation"] = "grouped_mm"
    step = 16
    if "head_dim" not in cfg and family != "deepseek_v3":
        heads = cfg["num_attention_heads"]
        step = step * heads // math.gcd(step, heads)  # hidden / heads stays whole
    cfg["hidden_size"] = _round_up(cfg["hidden_size"], step)
    key = _EXPERT_INTERMEDIATE.get(family, "moe_intermediate_size")
    cfg[key] = _round_up(cfg[key], 16)
    return cfg


def grouped_cases():
    """(id, case) pairs of the MoE families with grouped_mm experts:
    training with AdamW, with SGD and checkpointing, with AdamW and
    checkpointing, and inference; measured by torch_memory_grouped."""
    out = []
    for i, family in enumerate(GROUPED):
        cfg = grouped_config(family)
        f32, bf16 = ("float32", "bfloat16") if i % 2 == 0 else ("bfloat16", "float32")
        attention = "eager" if family in EAGER_ONLY else "sdpa"
        rows = [
            ("train-adamw", dict(mode="training", optimizer="adamw", dtype=f32, batch=2, seq=13)),
            ("train-sgd-ckpt", dict(mode="training", optimizer="sgd", dtype=bf16, checkpointing=True, batch=1,
                                    seq=19)),
            ("inference", dict(mode="inference", dtype=f32, batch=3, seq=11)),
            ("train-adamw-ckpt", dict(mode="training", optimizer="adamw", dtype="bfloat16", checkpointing=True,
                                      batch=2, seq=8)),
        ]
        for name, row in rows:
            out.append(("%s-grouped-%s" % (family, name), dict(row, attention=attention, config=cfg)))
    return out


def fit_cases():
    """(id, case, what, the answer mtk should give): --fit with a budget
    halfway between mtk's peaks at the answer and one more; `what` is
    "batch" or "seq" (--fit-context)."""
    return [
        ("llama-fit-batch", dict(mode="training", optimizer="adamw", dtype="float32", attention="sdpa", batch=1,
                                 seq=16, config=family_config("llama")), "batch", 3),
        ("llama-fit-context", dict(mode="training", optimizer="adamw", dtype="float32", attention="sdpa", batch=2,
                                   seq=1, config=family_config("llama")), "seq", 20),
        ("gpt2-fit-batch", dict(mode="inference", dtype="float32", attention="sdpa", batch=1, seq=12,
                                config=family_config("gpt2")), "batch", 5),
    ]


def key(case, sources=("torch_memory.py",)):
    src = b""
    for name in sources:
        with open(os.path.join(HERE, name), "rb") as f:
            src += f.read()
    return hashlib.sha256(src + json.dumps(case, sort_keys=True).encode()).hexdigest()[:24]


def load_cache():
    try:
        with open(CACHE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save_cache(cache):
    tmp = CACHE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cache, f, indent=0, sort_keys=True)
    os.replace(tmp, CACHE)


GROUPED_SOURCES = ("torch_memory.py", "torch_memory_grouped.py")


def measured(case, cache):
    """torch's numbers for case, measured now if the cache lacks them (a
    grouped_mm case by torch_memory_grouped, keyed by both sources)."""
    grouped = case["config"].get("_experts_implementation") == "grouped_mm"
    k = key(case, GROUPED_SOURCES) if grouped else key(case)
    if k not in cache:
        if grouped:
            import torch_memory_grouped as torch_memory
        else:
            import torch_memory
        cache[k] = torch_memory.measure(case)
        save_cache(cache)
    return cache[k]


def all_cases():
    """Every case the tests measure, fits' neighbours included."""
    out = [c for _, c in cases() + grouped_cases()]
    for _, c, what, n in fit_cases():
        out += [dict(c, **{what: n}), dict(c, **{what: n + 1})]
    return out


if __name__ == "__main__":
    # fill the cache: python3 tests/plan/memory_cases.py
    sys.path.insert(0, HERE)
    import torch
    torch.set_num_threads(1)
    cache = load_cache()
    for c in all_cases():
        r = measured(c, cache)
        print(c["config"]["model_type"], c["mode"], c.get("optimizer"), c["dtype"], r, flush=True)
