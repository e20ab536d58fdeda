"""Greedy generation as transformers 5 does it, for mtk generate's oracle.

Each case is a small random decoder of one family, initialised by
transformers, its weights scaled away from the tiny init (so the argmax
is well separated), saved with `save_pretrained` (config.json,
generation_config.json, model.safetensors), and what
`generate(do_sample=False, max_new_tokens=20, output_logits=True)` makes
of two prompts: one row, and a batch of two rows whose first is left-padded
(attention_mask 0 there).  Sliding windows (mistral, qwen2, gemma2,
gemma3_text, gpt_oss) and llama4's attention chunks are shorter than
prompt + generated tokens.  The MoE families route each token to its top-k
experts at every decode step.  The "-eos" case
stops rows on an eos token taken from the tokens the model generates.

build(root) writes root/<case>/ (the checkpoint, expected.json,
logits.safetensors) once; the caller caches root by this file's hash and
the library versions, and runs it in its own process (run_isolated)."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

MAX_NEW = 20
PROMPT = 9
PAD_LEFT = 3

DECODER = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
               num_key_value_heads=2, vocab_size=97, max_position_embeddings=128, tie_word_embeddings=False,
               bos_token_id=1, eos_token_id=2, pad_token_id=None)

# case -> (model_type, class, config fields)
CASES = {
    "llama": ("llama", "LlamaForCausalLM", dict(DECODER)),
    "llama-eos": ("llama", "LlamaForCausalLM", dict(DECODER, pad_token_id=0)),
    "mistral-window": ("mistral", "MistralForCausalLM", dict(DECODER, sliding_window=5)),
    "qwen2-window": ("qwen2", "Qwen2ForCausalLM",
                     dict(DECODER, use_sliding_window=True, sliding_window=6, max_window_layers=1)),
    "qwen3": ("qwen3", "Qwen3ForCausalLM", dict(DECODER, head_dim=8)),
    "olmo2": ("olmo2", "Olmo2ForCausalLM", dict(DECODER)),
    "smollm3": ("smollm3", "SmolLM3ForCausalLM", dict(DECODER, no_rope_layer_interval=2)),
    "granite": ("granite", "GraniteForCausalLM",
                dict(DECODER, embedding_multiplier=2.0, residual_multiplier=0.5, attention_multiplier=0.3,
                     logits_scaling=1.5)),
    "phi3": ("phi3", "Phi3ForCausalLM", dict(DECODER, num_key_value_heads=4)),
    "gemma": ("gemma", "GemmaForCausalLM", dict(DECODER, head_dim=8, hidden_act="gelu_pytorch_tanh")),
    "gemma2-window": ("gemma2", "Gemma2ForCausalLM",
                      dict(DECODER, head_dim=8, sliding_window=6, attn_logit_softcapping=5.0,
                           final_logit_softcapping=3.0, query_pre_attn_scalar=8)),
    "gemma3_text-window": ("gemma3_text", "Gemma3ForCausalLM",
                           dict(DECODER, head_dim=8, sliding_window=4, num_hidden_layers=4,
                                layer_types=["sliding_attention", "full_attention", "sliding_attention",
                                             "full_attention"],
                                final_logit_softcapping=None, attn_logit_softcapping=None)),
    # their own layer stacks (absolute positions, partial rope, parallel residuals), the cache all the same
    "gpt2": ("gpt2", "GPT2LMHeadModel", dict(n_embd=32, n_layer=3, n_head=4, vocab_size=97, n_positions=128,
                                               bos_token_id=1, eos_token_id=2)),
    "gpt_neox": ("gpt_neox", "GPTNeoXForCausalLM",
                 dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
                      vocab_size=97, max_position_embeddings=128, tie_word_embeddings=False, rotary_pct=0.5,
                      bos_token_id=1, eos_token_id=2)),
    "phi": ("phi", "PhiForCausalLM", dict(DECODER, num_key_value_heads=4, partial_rotary_factor=0.5,
                                          qk_layernorm=True)),
    # the MoE families: routed experts (top-k, the family's normalisation), shared experts, grouped top-k
    "mixtral": ("mixtral", "MixtralForCausalLM", dict(DECODER, num_local_experts=4, num_experts_per_tok=2)),
    "qwen2_moe": ("qwen2_moe", "Qwen2MoeForCausalLM",
                  dict(DECODER, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
                       shared_expert_intermediate_size=40, norm_topk_prob=True)),
    "qwen3_moe": ("qwen3_moe", "Qwen3MoeForCausalLM",
                  dict(DECODER, head_dim=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
                       norm_topk_prob=False)),
    "deepseek_v3": ("deepseek_v3", "DeepseekV3ForCausalLM",
                    dict(DECODER, num_key_value_heads=4, moe_intermediate_size=24, n_routed_experts=8,
                         n_shared_experts=1, num_experts_per_tok=2, n_group=4, topk_group=2, first_k_dense_replace=1,
                         q_lora_rank=16, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8,
                         routed_scaling_factor=2.5, norm_topk_prob=True, rope_scaling=None)),
    "glm4_moe": ("glm4_moe", "Glm4MoeForCausalLM",
                 dict(DECODER, head_dim=8, moe_intermediate_size=24, n_routed_experts=8, n_shared_experts=1,
                      num_experts_per_tok=2, n_group=2, topk_group=1, first_k_dense_replace=1,
                      routed_scaling_factor=2.5, norm_topk_prob=True)),
    "gpt_oss-window": ("gpt_oss", "GptOssForCausalLM",
                       dict(DECODER, head_dim=8, num_local_experts=4, num_experts_per_tok=2, sliding_window=6,
                            rope_scaling={"rope_type": "default"})),
    "llama4_text-chunk": ("llama4_text", "Llama4ForCausalLM",
                          dict(DECODER, head_dim=8, num_local_experts=3, num_experts_per_tok=1,
                               intermediate_size_mlp=40, attention_chunk_size=8, no_rope_layer_interval=2,
                               floor_scale=4, attn_scale=0.5)),
}
UNCACHED = ()  # every case gets the left-padded batch


def prompts(vocab, padded=True):
    """(single ids, batch ids, batch mask): ids from 3 on (clear of the
    bos/eos/pad ids), the batch's first row left-padded with 0."""
    import torch
    gen = torch.Generator().manual_seed(11)
    single = torch.randint(3, vocab, (1, PROMPT), generator=gen)
    batch = torch.randint(3, vocab, (2, PROMPT), generator=gen)
    mask = torch.ones_like(batch)
    if padded:
        batch[0, :PAD_LEFT] = 0
        mask[0, :PAD_LEFT] = 0
    return single, batch, mask


def randomize_(model, seed):
    import torch
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1 and "norm" in name:
                p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)


def _generate(model, ids, mask):
    import torch
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=MAX_NEW,
                             output_logits=True, return_dict_in_generate=True)
    return out.sequences, torch.stack(out.logits)  # (B, S + n), (n, B, vocab)


def build_case(name, root):
    import torch
    import transformers
    from safetensors.torch import save_file
    model_type, cls, fields = CASES[name]
    out = root / name
    if (out / "expected.json").exists():
        return
    out.mkdir(parents=True, exist_ok=True)
    config = transformers.AutoConfig.for_model(model_type, **fields)
    torch.manual_seed(0)
    model = getattr(transformers, cls)(config).eval()
    randomize_(model, 7)
    single, batch, mask = prompts(config.vocab_size, padded=name not in UNCACHED)
    if name.endswith("-eos"):
        # eos: the 4th token row 1 of the batch generates, and one never made
        seq, _ = _generate(model, batch, mask)
        model.generation_config.eos_token_id = [int(seq[1, PROMPT + 3]), config.vocab_size - 1]
        model.generation_config.pad_token_id = 0
    model.save_pretrained(out)
    expected = {"class": cls}
    for key, ids, m in (("single", single, None), ("batch", batch, mask)):
        seq, logits = _generate(model, ids, m if m is not None else torch.ones_like(ids))
        expected[key] = {"input_ids": ids.tolist(), "attention_mask": None if m is None else m.tolist(),
                         "sequences": seq.tolist()}
        save_file({"logits": logits.float().contiguous()}, str(out / ("logits_%s.safetensors" % key)))
    (out / "expected.json").write_text(json.dumps(expected))


def build(root):
    import transformers
    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    root = Path(root)
    for name in CASES:
        build_case(name, root)


def run_isolated(root):
    """build(root) in a fresh interpreter (transformers' state stays out of
    pytest's process, as tests/io/load_fixtures.py does)."""
    subprocess.run([sys.executable, __file__, str(root)], check=True)


if __name__ == "__main__":
    build(sys.argv[1])
