"""The generation oracle's configurations: every decoder family of the zoo
(a seeded random small config of tests/models/random_configs.py, as a
ForCausalLM), float32 / bfloat16, eager / sdpa, several (batch, prompt,
new tokens), with sliding windows shorter than the text for mistral,
qwen2, gemma2, gemma3_text and gpt_oss (and phi3), chunks shorter than the
text for llama4_text, so the windowed cache and masks are hit; deepseek_v3's
MLA caches its latents (kv_lora_rank and qk_rope_head_dim per token, one
"head"), not per-head keys and values."""
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
import random_configs  # noqa: E402

FAMILIES = ["llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "gemma", "gemma2", "phi3", "gpt_oss", "llama4_text",
            "deepseek_v3", "gemma3_text"]
CAUSAL_LM = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "mixtral": "MixtralForCausalLM",
             "qwen2": "Qwen2ForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM", "gemma": "GemmaForCausalLM",
             "gemma2": "Gemma2ForCausalLM", "phi3": "Phi3ForCausalLM", "gpt_oss": "GptOssForCausalLM",
             "llama4_text": "Llama4ForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM",
             "gemma3_text": "Gemma3ForCausalLM"}
# (dtype, attention, batch, prompt, new tokens)
SHAPES = [("float32", "sdpa", 1, 20, 6), ("bfloat16", "eager", 2, 13, 4), ("float32", "eager", 3, 9, 12),
          ("bfloat16", "sdpa", 2, 17, 9)]


def _config(family, seed, attention):
    cfg = getattr(random_configs, family)(random.Random(seed))
    cfg["architectures"] = [CAUSAL_LM[family]]
    cfg["num_hidden_layers"] = max(cfg["num_hidden_layers"], 2)
    cfg.pop("torch_dtype", None)
    if family in ("mixtral", "qwen2_moe", "gpt_oss", "deepseek_v3"):
        # the experts as hf_oracle builds them (batched_mm): sizes set by tokens x top_k,
        # whatever the routing (llama4_text's experts run every token through every expert)
        cfg["_experts_implementation"] = "batched_mm"
    if family == "mistral":
        cfg["sliding_window"] = 7
    if family == "qwen2":
        cfg.update(use_sliding_window=True, sliding_window=6, max_window_layers=1)
    if family == "gemma2":
        cfg["sliding_window"] = 8
    if family == "phi3" and seed % 2:
        cfg["sliding_window"] = 10
    if family == "gpt_oss":
        cfg.pop("layer_types", None)
        cfg["sliding_window"] = 6
    if family == "llama4_text":
        cfg.update(attention_chunk_size=5, no_rope_layer_interval=2)
        cfg.pop("no_rope_layers", None)
    if family == "gemma3_text":  # sliding and full layers, each with its rope and cache layer
        cfg.pop("sliding_window_pattern", None)
        cfg["sliding_window"] = 8
        cfg["layer_types"] = ["sliding_attention" if i % 2 == 0 else "full_attention"
                              for i in range(cfg["num_hidden_layers"])]
    return cfg


def cases():
    out = []
    for i, family in enumerate(FAMILIES):
        for j, (dtype, attention, b, s, n) in enumerate(SHAPES):
            seed = 1000 + 10 * i + j
            if family in ("gemma2", "gpt_oss"):
                attention = "eager"  # transformers 5 refuses sdpa for gemma2 and gpt_oss
            out.append({"family": family, "config": _config(family, seed, attention), "dtype": dtype,
                        "attention": attention, "batch": b, "seq": s, "new_tokens": n})
    return out


if __name__ == "__main__":
    import torch_generate
    cs = cases()
    print(len(cs), "cases")
    torch_generate.measure_all(cs)
