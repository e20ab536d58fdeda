"""The configurations the parallel-plan oracle checks, and the cache of
transformers' answers for them (keyed by the oracle's source and the
case, so a change to either measures again): small random configs of
every family with a tensor-parallel plan in transformers 5.24 and in
src/models/tp_plans.c, their heads, key-value heads and vocabulary divisible
by 8 and an intermediate size (90) that 4 and 8 split unevenly, at T in
{2, 4, 8}, with one forward's collectives at T = 8."""
import hashlib
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import random_configs  # noqa: E402

CACHE = os.path.join(HERE, "torch_shard_cache.json")
FAMILIES = {
    "llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
    "gemma": "GemmaForCausalLM", "olmo2": "Olmo2ForCausalLM", "phi3": "Phi3ForCausalLM",
    "phi": "PhiForCausalLM", "gpt_neox": "GPTNeoXForCausalLM", "mixtral": "MixtralForCausalLM",
    # every other family with a plan in transformers 5.24 and in src/models/tp_plans.c
    "qwen2_moe": "Qwen2MoeForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM",
    "kimi_k2": "DeepseekV3ForCausalLM", "glm4_moe": "Glm4MoeForCausalLM", "gpt_oss": "GptOssForCausalLM",
    "llama4_text": "Llama4ForCausalLM", "mistral": "MistralForCausalLM", "smollm3": "SmolLM3ForCausalLM",
    "granite": "GraniteForCausalLM", "gemma2": "Gemma2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM",
    "gemma3": "Gemma3ForConditionalGeneration", "mistral3": "Mistral3ForConditionalGeneration",
}
# the experts' fields of the MoE families: 8 experts (whole experts on
# each of 8 ranks), an expert width (90) that packed_colwise's strided
# halves and rowwise split unevenly at 4 and 8, and every layer sparse
MOE = {
    "mixtral": dict(num_local_experts=8, num_experts_per_tok=2),
    "kimi_k2": dict(n_routed_experts=8, n_group=2, topk_group=1),
    "qwen2_moe": dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=90,
                      shared_expert_intermediate_size=90, decoder_sparse_step=1, mlp_only_layers=[]),
    "qwen3_moe": dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=90, decoder_sparse_step=1,
                      mlp_only_layers=[]),
    "deepseek_v3": dict(n_routed_experts=8, n_group=2, topk_group=1, num_experts_per_tok=2, moe_intermediate_size=90,
                        first_k_dense_replace=1, num_hidden_layers=2),
    "glm4_moe": dict(n_routed_experts=8, n_group=2, topk_group=1, num_experts_per_tok=2, moe_intermediate_size=90,
                     first_k_dense_replace=1, num_hidden_layers=2),
    "gpt_oss": dict(num_local_experts=8, num_experts_per_tok=2),
    "llama4_text": dict(num_local_experts=8, num_experts_per_tok=1, intermediate_size_mlp=90, num_hidden_layers=2,
                        interleave_moe_layer_step=2, moe_layers=None, no_rope_layers=None),
}
TPS = [2, 4, 8]
FORWARD = [2, 5]


def config(family):
    # Kimi-K2's config is DeepseekV3Config's (its remote code) under its own model_type
    generator = random_configs.GENERATORS["deepseek_v3" if family == "kimi_k2" else family]
    cfg = generator(random.Random("%s-shard" % family))
    if family == "kimi_k2":
        cfg["model_type"] = "kimi_k2"
    cfg.update(architectures=[FAMILIES[family]], tie_word_embeddings=False)
    cfg.pop("torch_dtype", None)
    cfg.pop("dtype", None)
    if "text_config" in cfg:  # multimodal: the text model takes the plan
        cfg["text_config"] = text_config(cfg["text_config"])
        return cfg
    return text_config(cfg, family)


def text_config(cfg, family=None):
    cfg = dict(cfg, num_attention_heads=8, num_key_value_heads=8, head_dim=8, hidden_size=64, vocab_size=136,
               intermediate_size=90)
    cfg.pop("torch_dtype", None)
    cfg.pop("rope_scaling", None)  # longrope's factors are sized by the head dim
    cfg.pop("rope_parameters", None)
    if family in ("deepseek_v3", "kimi_k2"):
        cfg.pop("head_dim")  # MLA's rope head dim is qk_rope_head_dim, which DeepseekV3Config calls head_dim
    cfg.update(MOE.get(family, {}))
    for k in [k for k, v in cfg.items() if v is None and k in MOE.get(family, {})]:
        cfg.pop(k)
    return cfg


def cases():
    return [(f, dict(config=config(f), tps=TPS, forward=FORWARD)) for f in FAMILIES]


# expert parallelism (torch_ep.py, cached in torch_ep_cache.json): the
# families with a base_model_ep_plan, at E in {2, 4, 8} as --dp E --ep E
EP_CACHE = os.path.join(HERE, "torch_ep_cache.json")
EP_FAMILIES = ["mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "kimi_k2", "glm4_moe", "gpt_oss"]
EPS = [2, 4, 8]


def ep_cases():
    return [(f, dict(config=config(f), eps=EPS, forward=FORWARD)) for f in EP_FAMILIES]


# expert parallelism with tensor parallelism (torch_ep_tp.py, cached in
# torch_ep_tp_cache.json): [tp, fsdp (mtk's dp), ep] meshes, the last one
# transformers refuses (ep not a multiple of tp)
EP_TP_CACHE = os.path.join(HERE, "torch_ep_tp_cache.json")
EP_TP_FAMILIES = ["mixtral", "qwen3_moe"]
EP_TP_MESHES = [[2, 2, 2], [2, 2, 4], [2, 4, 4], [4, 2, 4], [4, 2, 2]]


def ep_tp_cases():
    return [(f, dict(config=config(f), meshes=EP_TP_MESHES, forward=FORWARD)) for f in EP_TP_FAMILIES]


def ep_tp_measured(case, cache):
    return measured(case, cache, "torch_ep_tp.py", EP_TP_CACHE)


def key(case, scripts=("torch_shard.py",)):
    src = b""
    for name in scripts:
        with open(os.path.join(HERE, name), "rb") as f:
            src += f.read()
    return hashlib.sha256(src + json.dumps(case, sort_keys=True).encode()).hexdigest()[:24]


def load_cache(path=CACHE):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def measured(case, cache, script="torch_shard.py", path=CACHE):
    """transformers' answer for case, measured now (a fresh process: the
    fake process group is per process) if the cache lacks it."""
    scripts = {"torch_shard.py": ("torch_shard.py",), "torch_ep_tp.py": (script, "torch_ep.py", "torch_shard.py")}
    k = key(case, scripts.get(script, (script, "torch_shard.py")))
    if k not in cache:
        r = subprocess.run([sys.executable, os.path.join(HERE, script), json.dumps(case)],
                           capture_output=True, text=True, timeout=600, cwd=HERE)
        assert r.returncode == 0, r.stderr[-4000:]
        cache[k] = json.loads(r.stdout)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(cache, f, indent=0, sort_keys=True)
        os.replace(tmp, path)
    return cache[k]


def ep_measured(case, cache):
    return measured(case, cache, "torch_ep.py", EP_CACHE)


if __name__ == "__main__":
    # fill the cache: python3 tests/plan/shard_cases.py
    cache = load_cache()
    for name, c in cases():
        measured(c, cache)
        print(name, flush=True)
    cache = load_cache(EP_CACHE)
    for name, c in ep_cases():
        ep_measured(c, cache)
        print(name, "ep", flush=True)
