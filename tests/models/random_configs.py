"""Random small Hugging Face configs for the zoo oracle, per family.

Each generator takes a random.Random and returns one config.json dict
(model_type, architectures and the family's fields), small enough that
transformers builds and runs it on the meta device in a few milliseconds:
odd sizes, GQA ratios, head_dim overrides, tied and untied embeddings,
with and without biases, the family's optional parts switched on and off.
Configs are seeded, so a failure reproduces.
"""
import random

DTYPES = ["float32", "float32", "bfloat16", "float16"]


def _odd(rng, lo, hi):
    """An odd integer in [lo, hi]."""
    return rng.randrange(lo | 1, hi + 1, 2)


def _heads(rng, max_heads=8):
    """(num_attention_heads, num_key_value_heads): a GQA ratio that divides."""
    heads = rng.choice([h for h in range(1, max_heads + 1)])
    divisors = [k for k in range(1, heads + 1) if heads % k == 0]
    return heads, rng.choice(divisors)


def _arch(rng, archs):
    """Some configs name no class (the family's base model is built)."""
    return {} if rng.random() < 0.2 else {"architectures": [rng.choice(archs)]}


def _decoder_common(rng, archs, head_dim_override=True):
    heads, kv = _heads(rng)
    head_dim = rng.choice([4, 6, 8, 10, 16])
    hidden = heads * head_dim
    cfg = {
        "vocab_size": _odd(rng, 33, 211),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": _odd(rng, 9, 97),
        "max_position_embeddings": rng.choice([64, 128, 256]),
        "tie_word_embeddings": rng.random() < 0.5,
        "torch_dtype": rng.choice(DTYPES),
        **_arch(rng, archs),
    }
    if head_dim_override and rng.random() < 0.4:
        # hidden need not be heads * head_dim when head_dim is given (but
        # transformers 5 still wants it to divide by heads for some families)
        cfg["head_dim"] = head_dim
        hidden = heads * rng.choice([3, 5, 7, 9])
    cfg["hidden_size"] = hidden
    return cfg


def rope_scaling(rng, cfg, rope_type):
    """A rope_scaling object of `rope_type` for cfg (original length below
    max_position_embeddings, so long inputs pass it)."""
    original = rng.choice([8, 16, 32])
    if rope_type == "llama3":
        return {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": original}
    if rope_type in ("linear", "dynamic"):
        return {"rope_type": rope_type, "factor": rng.choice([2.0, 4.0])}
    if rope_type == "yarn":
        out = {"type": "yarn", "factor": rng.choice([2.0, 4.0, 8.0]), "original_max_position_embeddings": original}
        if rng.random() < 0.4:
            out.update(beta_fast=rng.choice([16, 32]), beta_slow=rng.choice([1, 2]))
        if rng.random() < 0.3:
            out["attention_factor"] = rng.choice([0.9, 1.3])
        if rng.random() < 0.3:
            out["truncate"] = False
        return out
    assert rope_type == "longrope"
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    n = int(head_dim * cfg.get("partial_rotary_factor", 1.0)) // 2
    out = {"type": "longrope", "short_factor": [round(rng.uniform(1.0, 1.5), 3) for _ in range(n)],
           "long_factor": [round(rng.uniform(1.0, 8.0), 3) for _ in range(n)],
           "original_max_position_embeddings": original}
    if rng.random() < 0.3:
        out["factor"] = rng.choice([2.0, 4.0])
    return out


def llama(rng):
    cfg = _decoder_common(rng, ["LlamaModel", "LlamaForCausalLM"])
    cfg.update(model_type="llama", attention_bias=rng.random() < 0.5, mlp_bias=rng.random() < 0.3,
               rms_norm_eps=1e-5, rope_theta=rng.choice([10000.0, 500000.0]))
    if rng.random() < 0.4:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, "llama3")
    elif rng.random() < 0.5:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, rng.choice(["linear", "yarn", "longrope"]))
    return cfg


def mistral(rng):
    cfg = _decoder_common(rng, ["MistralModel", "MistralForCausalLM"])
    cfg.update(model_type="mistral", sliding_window=rng.choice([None, 16, 4096]))
    return cfg


def mixtral(rng):
    cfg = _decoder_common(rng, ["MixtralModel", "MixtralForCausalLM"])
    experts = rng.randint(2, 6)
    cfg.update(model_type="mixtral", num_local_experts=experts, num_experts_per_tok=rng.randint(1, experts))
    return cfg


def qwen2(rng):
    cfg = _decoder_common(rng, ["Qwen2Model", "Qwen2ForCausalLM"], head_dim_override=False)
    cfg.update(model_type="qwen2", use_sliding_window=False)
    if rng.random() < 0.5:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, "yarn")  # Qwen2.5's long-context recipe
    return cfg


def qwen2_moe(rng):
    cfg = _decoder_common(rng, ["Qwen2MoeModel", "Qwen2MoeForCausalLM"], head_dim_override=False)
    experts = rng.randint(2, 6)
    layers = cfg["num_hidden_layers"]
    cfg.update(model_type="qwen2_moe", num_experts=experts, num_experts_per_tok=rng.randint(1, experts),
               moe_intermediate_size=_odd(rng, 5, 31), shared_expert_intermediate_size=_odd(rng, 5, 41),
               decoder_sparse_step=rng.choice([1, 1, 2]), norm_topk_prob=rng.random() < 0.5,
               mlp_only_layers=sorted(rng.sample(range(layers), rng.randint(0, layers - 1))) if layers > 1 else [],
               qkv_bias=rng.random() < 0.7)
    return cfg


def qwen3(rng):
    cfg = _decoder_common(rng, ["Qwen3Model", "Qwen3ForCausalLM"])
    cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    cfg.update(model_type="qwen3", attention_bias=rng.random() < 0.4, rms_norm_eps=rng.choice([1e-6, 1e-5]),
               rope_theta=rng.choice([10000.0, 1000000.0]), use_sliding_window=False)
    if rng.random() < 0.4:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, "yarn")
    return cfg


def qwen3_moe(rng):
    cfg = _decoder_common(rng, ["Qwen3MoeModel", "Qwen3MoeForCausalLM"])
    experts = rng.randint(1, 6)
    layers = cfg["num_hidden_layers"]
    cfg.update(model_type="qwen3_moe", num_experts=experts, num_experts_per_tok=rng.randint(1, experts),
               moe_intermediate_size=_odd(rng, 5, 31), decoder_sparse_step=rng.choice([1, 1, 2]),
               norm_topk_prob=rng.random() < 0.5, attention_bias=rng.random() < 0.3,
               mlp_only_layers=sorted(rng.sample(range(layers), rng.randint(0, layers - 1))) if layers > 1 else [])
    return cfg


def olmo2(rng):
    cfg = _decoder_common(rng, ["Olmo2Model", "Olmo2ForCausalLM"])
    cfg.update(model_type="olmo2", attention_bias=rng.random() < 0.3, rms_norm_eps=rng.choice([1e-6, 1e-5]),
               pad_token_id=rng.choice([None, 1]), rope_theta=rng.choice([10000.0, 500000.0]))
    if rng.random() < 0.3:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, rng.choice(["linear", "yarn", "llama3"]))
    return cfg


def smollm3(rng):
    cfg = _decoder_common(rng, ["SmolLM3Model", "SmolLM3ForCausalLM"])
    layers = cfg["num_hidden_layers"] = rng.randint(1, 5)
    cfg.update(model_type="smollm3", pad_token_id=rng.choice([None, 0]), attention_bias=rng.random() < 0.3,
               mlp_bias=rng.random() < 0.3, rope_theta=rng.choice([10000.0, 2000000.0]))
    if rng.random() < 0.5:
        cfg["no_rope_layers"] = [rng.randint(0, 1) for _ in range(layers)]
    else:
        cfg["no_rope_layer_interval"] = rng.choice([2, 3, 4])
    if rng.random() < 0.3:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, "yarn")
    return cfg


def granite(rng):
    cfg = _decoder_common(rng, ["GraniteModel", "GraniteForCausalLM"])
    cfg.update(model_type="granite", attention_bias=rng.random() < 0.3, mlp_bias=rng.random() < 0.3,
               embedding_multiplier=rng.choice([1.0, 12.0]), residual_multiplier=rng.choice([1.0, 0.22]),
               attention_multiplier=rng.choice([0.015625, 0.25]), logits_scaling=rng.choice([1.0, 8.0]),
               rope_theta=rng.choice([10000.0, 5000000.0]))
    return cfg


def phi(rng):
    heads, kv = _heads(rng)
    head_dim = rng.choice([4, 8, 12, 16])
    cfg = {
        "model_type": "phi", "vocab_size": _odd(rng, 33, 211), "hidden_size": heads * head_dim,
        "num_hidden_layers": rng.randint(1, 3), "num_attention_heads": heads, "num_key_value_heads": kv,
        "intermediate_size": _odd(rng, 9, 97), "max_position_embeddings": rng.choice([64, 128]),
        "tie_word_embeddings": rng.random() < 0.3, "torch_dtype": rng.choice(DTYPES),
        "hidden_act": rng.choice(["gelu_new", "gelu"]), "qk_layernorm": rng.random() < 0.4,
        "layer_norm_eps": rng.choice([1e-5, 1e-6]), "resid_pdrop": 0.1, "embd_pdrop": 0.0,
        "pad_token_id": rng.choice([None, 0]), **_arch(rng, ["PhiModel", "PhiForCausalLM"]),
    }
    if rng.random() < 0.5:
        cfg["partial_rotary_factor"] = rng.choice([0.5, 1.0])
    return cfg


def gemma(rng):
    cfg = _decoder_common(rng, ["GemmaModel", "GemmaForCausalLM"])
    cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    cfg.update(model_type="gemma", hidden_act="gelu_pytorch_tanh", pad_token_id=0, bos_token_id=2,
               eos_token_id=1, attention_bias=rng.random() < 0.3)
    return cfg


def gemma2(rng):
    cfg = _decoder_common(rng, ["Gemma2Model", "Gemma2ForCausalLM"])
    cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    cfg.update(model_type="gemma2", hidden_activation="gelu_pytorch_tanh", pad_token_id=0, bos_token_id=2,
               eos_token_id=1, query_pre_attn_scalar=cfg["head_dim"], sliding_window=16,
               final_logit_softcapping=rng.choice([None, 30.0]), attn_logit_softcapping=rng.choice([None, 50.0]))
    return cfg


def phi3(rng):
    cfg = _decoder_common(rng, ["Phi3Model", "Phi3ForCausalLM"], head_dim_override=False)
    cfg.update(model_type="phi3", pad_token_id=0, bos_token_id=1, eos_token_id=2,
               partial_rotary_factor=rng.choice([1.0, 1.0, 0.5]))
    if (cfg["hidden_size"] // cfg["num_attention_heads"]) * cfg["partial_rotary_factor"] % 2:
        cfg["partial_rotary_factor"] = 1.0  # odd rotary dims: transformers breaks too
    if rng.random() < 0.6:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, "longrope")
        # Phi3Config keeps the original length at the top level (4096 unless given)
        cfg["original_max_position_embeddings"] = cfg["rope_scaling"].pop("original_max_position_embeddings")
    return cfg


def gpt2(rng):
    heads = rng.randint(1, 6)
    cfg = {
        "model_type": "gpt2",
        "vocab_size": _odd(rng, 33, 211),
        "n_positions": rng.choice([32, 64, 128]),
        "n_embd": heads * rng.choice([4, 6, 8, 10]),
        "n_layer": rng.randint(1, 3),
        "n_head": heads,
        "n_inner": rng.choice([None, _odd(rng, 9, 97)]),
        "activation_function": rng.choice(["gelu_new", "gelu", "relu"]),
        "tie_word_embeddings": rng.random() < 0.7,
        "add_cross_attention": rng.random() < 0.25,
        "scale_attn_by_inverse_layer_idx": rng.random() < 0.3,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "torch_dtype": rng.choice(DTYPES),
        **_arch(rng, ["GPT2Model", "GPT2LMHeadModel"]),
    }
    return cfg


def gpt_neox(rng):
    heads = rng.randint(1, 6)
    head_dim = rng.choice([8, 16, 24])  # rotary dims (head_dim * rotary_pct) even
    return {
        "model_type": "gpt_neox",
        "vocab_size": _odd(rng, 33, 211),
        "hidden_size": heads * head_dim,
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": heads,
        "intermediate_size": _odd(rng, 9, 97),
        "max_position_embeddings": rng.choice([64, 128]),
        "rotary_pct": rng.choice([0.25, 0.5, 1.0]),
        "rotary_emb_base": rng.choice([10000, 50000]),
        "use_parallel_residual": rng.random() < 0.6,
        "attention_bias": rng.random() < 0.7,
        "tie_word_embeddings": rng.random() < 0.4,
        "hidden_act": rng.choice(["gelu", "gelu_new", "relu"]),
        "bos_token_id": 0,
        "eos_token_id": 0,
        "torch_dtype": rng.choice(DTYPES),
        **_arch(rng, ["GPTNeoXModel", "GPTNeoXForCausalLM"]),
    }


def bert(rng):
    heads = rng.randint(1, 6)
    cfg = {
        "model_type": "bert",
        "vocab_size": _odd(rng, 33, 211),
        "hidden_size": heads * rng.choice([4, 6, 8, 10]),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": heads,
        "intermediate_size": _odd(rng, 9, 97),
        "max_position_embeddings": rng.choice([32, 64, 128]),
        "type_vocab_size": rng.randint(1, 3),
        "pad_token_id": rng.choice([0, 1]),
        "hidden_act": rng.choice(["gelu", "gelu_new", "relu"]),
        "tie_word_embeddings": rng.random() < 0.7,
        "torch_dtype": rng.choice(DTYPES),
        **_arch(rng, ["BertModel", "BertForMaskedLM", "BertForSequenceClassification", "BertForTokenClassification"]),
    }
    if rng.random() < 0.5:
        labels = rng.randint(1, 5)
        cfg["id2label"] = {str(i): "LABEL_%d" % i for i in range(labels)}
        cfg["label2id"] = {"LABEL_%d" % i: i for i in range(labels)}
    return cfg


def vit(rng):
    heads = rng.randint(1, 6)
    patch = rng.choice([2, 4, 5, 8])
    cfg = {
        "model_type": "vit",
        "hidden_size": heads * rng.choice([4, 6, 8, 10]),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": heads,
        "intermediate_size": _odd(rng, 9, 97),
        "image_size": patch * rng.randint(2, 6),
        "patch_size": patch,
        "num_channels": rng.choice([1, 3, 4]),
        "qkv_bias": rng.random() < 0.7,
        "hidden_act": rng.choice(["gelu", "gelu_new", "relu"]),
        "torch_dtype": rng.choice(DTYPES),
        **_arch(rng, ["ViTModel", "ViTForImageClassification"]),
    }
    if rng.random() < 0.5:
        labels = rng.randint(1, 7)
        cfg["id2label"] = {str(i): "LABEL_%d" % i for i in range(labels)}
        cfg["label2id"] = {"LABEL_%d" % i: i for i in range(labels)}
    if rng.random() < 0.3:
        cfg["pooler_output_size"] = _odd(rng, 5, 41)
    return cfg


def _roberta_like(rng, model_type, prefix):
    heads = rng.randint(1, 6)
    pad = rng.choice([0, 1, 3])
    cfg = {
        "model_type": model_type,
        "vocab_size": _odd(rng, 33, 211),
        "hidden_size": heads * rng.choice([4, 6, 8, 10]),
        "num_hidden_layers": rng.randint(1, 3),
        "num_attention_heads": heads,
        "intermediate_size": _odd(rng, 9, 97),
        # positions run from pad_token_id + 1: room for 23 tokens
        "max_position_embeddings": rng.choice([27, 40, 66]),
        "type_vocab_size": rng.randint(1, 3),
        "pad_token_id": pad,
        "hidden_act": rng.choice(["gelu", "gelu_new", "relu"]),
        "layer_norm_eps": rng.choice([1e-5, 1e-12]),
        "tie_word_embeddings": rng.random() < 0.7,
        "torch_dtype": rng.choice(DTYPES),
        **_arch(rng, ["%sModel" % prefix, "%sForMaskedLM" % prefix, "%sForSequenceClassification" % prefix,
                      "%sForTokenClassification" % prefix]),
    }
    if rng.random() < 0.5:
        labels = rng.randint(1, 5)
        cfg["id2label"] = {str(i): "LABEL_%d" % i for i in range(labels)}
        cfg["label2id"] = {"LABEL_%d" % i: i for i in range(labels)}
    if rng.random() < 0.3:
        cfg["classifier_dropout"] = 0.2
    return cfg


def roberta(rng):
    return _roberta_like(rng, "roberta", "Roberta")


def xlm_roberta(rng):
    return _roberta_like(rng, "xlm-roberta", "XLMRoberta")


def modernbert(rng):
    heads = rng.randint(1, 5)
    layers = rng.randint(1, 5)
    cfg = {
        "model_type": "modernbert",
        "vocab_size": _odd(rng, 33, 211),
        "hidden_size": heads * rng.choice([4, 6, 8, 10]),
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": _odd(rng, 9, 97),
        "max_position_embeddings": rng.choice([64, 128]),
        "pad_token_id": rng.choice([0, 1, 5]),
        "bos_token_id": 0, "eos_token_id": 0, "cls_token_id": 0, "sep_token_id": 0,
        "hidden_activation": rng.choice(["gelu", "gelu_new", "silu"]),
        "classifier_activation": rng.choice(["gelu", "relu"]),
        # windows shorter than the test sequences, so local layers differ from global ones
        "local_attention": rng.choice([2, 4, 6, 9]),
        "global_attn_every_n_layers": rng.randint(1, 3),
        "global_rope_theta": rng.choice([160000.0, 5000.0]),
        "local_rope_theta": rng.choice([10000.0, 777.0]),
        "norm_bias": rng.random() < 0.4,
        "attention_bias": rng.random() < 0.4,
        "mlp_bias": rng.random() < 0.4,
        "decoder_bias": rng.random() < 0.7,
        "classifier_bias": rng.random() < 0.4,
        "classifier_pooling": rng.choice(["cls", "mean"]),
        "tie_word_embeddings": rng.random() < 0.7,
        "torch_dtype": rng.choice(DTYPES),
        **_arch(rng, ["ModernBertModel", "ModernBertForMaskedLM", "ModernBertForSequenceClassification",
                      "ModernBertForTokenClassification"]),
    }
    if rng.random() < 0.3:
        cfg["layer_types"] = [rng.choice(["full_attention", "sliding_attention"]) for _ in range(layers)]
    if rng.random() < 0.5:
        labels = rng.randint(1, 5)
        cfg["id2label"] = {str(i): "LABEL_%d" % i for i in range(labels)}
        cfg["label2id"] = {"LABEL_%d" % i: i for i in range(labels)}
    return cfg


def t5(rng):
    """T5: d_kv apart from d_model / heads, relu or gated FFNs, an uneven
    decoder depth, few or many relative-position buckets and distances."""
    buckets = rng.choice([4, 6, 8, 13, 32])
    cfg = {
        "model_type": "t5",
        "vocab_size": _odd(rng, 33, 211),
        "d_model": _odd(rng, 7, 41),
        "d_kv": rng.choice([3, 4, 5, 8]),
        "d_ff": _odd(rng, 9, 97),
        "num_layers": rng.randint(1, 3),
        "num_heads": rng.randint(1, 5),
        "relative_attention_num_buckets": buckets,
        "relative_attention_max_distance": rng.choice([buckets // 2 + 1, 10, 20, 128]),
        "feed_forward_proj": rng.choice(["relu", "gated-gelu", "gated-silu", "gelu_new"]),
        "tie_word_embeddings": rng.random() < 0.5,
        "torch_dtype": rng.choice(DTYPES),
        **_arch(rng, ["T5Model", "T5ForConditionalGeneration", "T5EncoderModel", "T5ForTokenClassification"]),
        "decoder_start_token_id": 0,  # T5ForSequenceClassification's shift right needs it (no default)
    }
    if rng.random() < 0.5:
        cfg["num_decoder_layers"] = rng.randint(1, 3)
    if rng.random() < 0.4:
        labels = rng.randint(1, 5)
        cfg["id2label"] = {str(i): "LABEL_%d" % i for i in range(labels)}
        cfg["label2id"] = {"LABEL_%d" % i: i for i in range(labels)}
    return cfg


def gpt_oss(rng):
    cfg = _decoder_common(rng, ["GptOssModel", "GptOssForCausalLM"])
    cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    layers = cfg["num_hidden_layers"] = rng.randint(1, 4)
    experts = rng.randint(1, 6)
    cfg.update(model_type="gpt_oss", num_local_experts=experts, num_experts_per_tok=rng.randint(1, experts),
               attention_bias=rng.random() < 0.7, sliding_window=rng.choice([3, 5, 128]),
               swiglu_alpha=rng.choice([1.702, 1.0]), swiglu_limit=rng.choice([7.0, 1.5]),
               rms_norm_eps=rng.choice([1e-5, 1e-6]), rope_theta=rng.choice([10000.0, 150000.0]))
    if rng.random() < 0.4:
        cfg["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(layers)]
    roll = rng.random()
    if roll < 0.3:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, "yarn")
    elif roll < 0.45:
        cfg["rope_scaling"] = {"rope_type": "default"}
    # else GptOssConfig's yarn (factor 32 over 4096 positions)
    return cfg


def llama4_text(rng):
    cfg = _decoder_common(rng, ["Llama4TextModel", "Llama4ForCausalLM"])
    cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    layers = cfg["num_hidden_layers"] = rng.randint(1, 5)
    experts = rng.randint(1, 5)
    cfg.update(model_type="llama4_text", num_local_experts=experts, num_experts_per_tok=rng.randint(1, experts),
               intermediate_size_mlp=_odd(rng, 9, 97), use_qk_norm=rng.random() < 0.7,
               attention_chunk_size=rng.choice([None, 3, 5, 8192]), attn_temperature_tuning=rng.random() < 0.7,
               floor_scale=rng.choice([2, 3, 8192]), attn_scale=rng.choice([0.1, 0.5]),
               attention_bias=rng.random() < 0.3, rope_theta=rng.choice([10000.0, 500000.0]))
    if rng.random() < 0.5:
        cfg["moe_layers"] = sorted(rng.sample(range(layers), rng.randint(0, layers)))
    else:
        cfg["interleave_moe_layer_step"] = rng.choice([1, 2, 3])
    if rng.random() < 0.5:
        cfg["no_rope_layers"] = [rng.randint(0, 1) for _ in range(layers)]
    else:
        cfg["no_rope_layer_interval"] = rng.choice([2, 3, 4])
    if rng.random() < 0.3:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, "llama3")
    return cfg


def deepseek_v3(rng):
    """MLA (q_lora_rank null or set, odd ranks and head dims), dense and MoE
    layer mixes, grouped top-k with 1..k experts per token, yarn with
    DeepSeek's mscale_all_dim softmax scale."""
    heads = rng.randint(1, 6)
    experts_per_group = rng.randint(2, 4)
    groups = rng.randint(1, 4)
    experts = groups * experts_per_group
    layers = rng.randint(1, 4)
    cfg = {
        "model_type": "deepseek_v3", "vocab_size": _odd(rng, 33, 211), "hidden_size": heads * rng.choice([6, 8, 10]),
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
        "intermediate_size": _odd(rng, 9, 97), "moe_intermediate_size": _odd(rng, 5, 31),
        "max_position_embeddings": rng.choice([64, 128, 256]), "tie_word_embeddings": rng.random() < 0.3,
        "torch_dtype": rng.choice(DTYPES),
        "q_lora_rank": rng.choice([None, _odd(rng, 5, 33)]), "kv_lora_rank": _odd(rng, 5, 33),
        "qk_nope_head_dim": rng.choice([3, 4, 8]), "qk_rope_head_dim": rng.choice([2, 4, 6, 8]),
        "v_head_dim": rng.choice([3, 5, 8]), "rope_interleave": rng.random() < 0.7,
        "n_routed_experts": experts, "n_group": groups, "topk_group": rng.randint(1, groups),
        "num_experts_per_tok": rng.randint(1, experts), "n_shared_experts": rng.choice([1, 1, 2]),
        "first_k_dense_replace": rng.randint(0, layers), "norm_topk_prob": rng.random() < 0.7,
        "routed_scaling_factor": rng.choice([1.0, 2.5]), "attention_bias": rng.random() < 0.3,
        "rms_norm_eps": rng.choice([1e-6, 1e-5]), "rope_theta": rng.choice([10000.0, 50000.0]),
        "pad_token_id": rng.choice([None, 0]),
        **_arch(rng, ["DeepseekV3Model", "DeepseekV3ForCausalLM"]),
    }
    if rng.random() < 0.5:
        cfg["rope_scaling"] = rope_scaling(rng, cfg, "yarn")
        cfg["rope_scaling"].pop("attention_factor", None)
        if rng.random() < 0.7:
            cfg["rope_scaling"].update(mscale=rng.choice([0.707, 1.0]), mscale_all_dim=rng.choice([0.707, 1.0]))
    return cfg


def gemma3_text(rng):
    """Gemma 3's text model: q/k norms, sliding layers by sliding_window_pattern
    (the published configs) or layer_types, one rope per layer type
    (rope_theta + rope_scaling for full layers, rope_local_base_freq for
    sliding ones; or transformers 5's nested rope_parameters)."""
    cfg = _decoder_common(rng, ARCHITECTURES["gemma3_text"])
    cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    layers = rng.randint(1, 4)  # deeper random-weight stacks amplify float32 noise past 1e-4
    cfg.update(model_type="gemma3_text", num_hidden_layers=layers, hidden_activation="gelu_pytorch_tanh",
               pad_token_id=0, bos_token_id=2, eos_token_id=1, query_pre_attn_scalar=rng.choice([8, 16, 24]),
               sliding_window=rng.choice([16, 32]), attention_bias=rng.random() < 0.3,
               final_logit_softcapping=rng.choice([None, None, 30.0]),
               attn_logit_softcapping=rng.choice([None, 50.0]))
    style = rng.choice(["pattern", "pattern", "layer_types", "rope_parameters"])
    if style == "pattern":
        cfg["sliding_window_pattern"] = rng.choice([2, 3, 4])
        cfg["rope_theta"] = rng.choice([10000.0, 1000000.0])
        cfg["rope_local_base_freq"] = rng.choice([100.0, 10000.0])
        if rng.random() < 0.5:
            cfg["rope_scaling"] = {"rope_type": "linear", "factor": rng.choice([2.0, 8.0])}  # 4B..27B
    else:
        cfg["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(layers)]
    if style == "rope_parameters":
        full = {"rope_type": "default", "rope_theta": rng.choice([10000.0, 1000000.0])}
        if rng.random() < 0.5:
            full = rope_scaling(rng, cfg, rng.choice(["linear", "yarn"]))
            full["rope_theta"] = 50000.0
        cfg["rope_parameters"] = {"full_attention": full,
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    return cfg


def _vision_free(text_cfg, model_type, arch_rng):
    """A multimodal config around a text config: the top level keeps the
    dtype, the class and tie_word_embeddings (transformers 5 ties by the
    top-level flag, true by default)."""
    text = dict(text_cfg)
    dtype = text.pop("torch_dtype")
    tie = text.pop("tie_word_embeddings")
    text.pop("architectures", None)
    cfg = {"model_type": model_type, "text_config": text, "torch_dtype": dtype,
           **_arch(arch_rng, ARCHITECTURES[model_type])}
    if arch_rng.random() < 0.7:
        cfg["tie_word_embeddings"] = tie
    return cfg


def gemma3(rng):
    cfg = _vision_free(gemma3_text(rng), "gemma3", rng)
    side, patch = rng.choice([2, 4]), rng.choice([7, 14])
    heads = rng.choice([1, 2, 3])
    cfg.update(mm_tokens_per_image=rng.choice([p for p in (1, 2, 4) if side % p == 0]) ** 2, vision_config={
        "model_type": "siglip_vision_model", "hidden_size": heads * rng.choice([2, 4]),
        "intermediate_size": _odd(rng, 3, 13), "num_hidden_layers": rng.randint(0, 2), "num_attention_heads": heads,
        "image_size": side * patch, "patch_size": patch, "vision_use_head": rng.random() < 0.3,
        "layer_norm_eps": rng.choice([1e-6, 1e-5])})
    return cfg


def mistral3(rng):
    cfg = _vision_free(mistral(rng), "mistral3", rng)
    heads = rng.choice([1, 2, 3])
    cfg["vision_config"] = {"model_type": "pixtral", "hidden_size": heads * rng.choice([4, 6]),
                            "intermediate_size": _odd(rng, 3, 13), "num_hidden_layers": rng.randint(0, 2),
                            "num_attention_heads": heads, "head_dim": rng.choice([2, 4, 8]),
                            "image_size": 28, "patch_size": rng.choice([7, 14])}
    cfg.update(spatial_merge_size=rng.choice([1, 2]), multimodal_projector_bias=rng.random() < 0.5,
               vision_feature_layer=rng.choice([-1, [-1, -2]]))
    return cfg


def glm4_moe(rng):
    """GLM-4.5: dense first layers, routed experts in groups (1..k per token),
    shared experts, partial rotary, biased q/k/v, optional q/k norms."""
    cfg = _decoder_common(rng, ARCHITECTURES["glm4_moe"])
    layers = rng.randint(1, 4)
    experts = rng.randint(2, 8)
    n_group = rng.choice([g for g in range(1, experts + 1) if experts % g == 0 and experts // g >= 2])
    topk_group = rng.randint(1, n_group)
    cfg.update(model_type="glm4_moe", num_hidden_layers=layers, n_routed_experts=experts, n_group=n_group,
               topk_group=topk_group, num_experts_per_tok=rng.randint(1, topk_group * (experts // n_group)),
               moe_intermediate_size=_odd(rng, 5, 31), n_shared_experts=rng.randint(1, 2),
               first_k_dense_replace=rng.randint(0, layers), attention_bias=rng.random() < 0.6,
               use_qk_norm=rng.random() < 0.5, norm_topk_prob=rng.random() < 0.7,
               routed_scaling_factor=rng.choice([1.0, 2.5]))
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    if int(head_dim * 0.5) % 2:
        cfg["partial_rotary_factor"] = 1.0  # 0.5 (the default) would rotate an odd number of dims
    elif rng.random() < 0.3:
        cfg["partial_rotary_factor"] = 1.0
    return cfg


GENERATORS = {
    "llama": llama, "mistral": mistral, "mixtral": mixtral, "qwen2": qwen2, "qwen2_moe": qwen2_moe,
    "qwen3": qwen3, "qwen3_moe": qwen3_moe, "olmo2": olmo2, "smollm3": smollm3, "granite": granite,
    "phi": phi, "gemma": gemma, "gemma2": gemma2, "phi3": phi3, "gpt2": gpt2, "gpt_neox": gpt_neox, "bert": bert,
    "vit": vit, "roberta": roberta, "xlm-roberta": xlm_roberta, "modernbert": modernbert,
    "t5": t5,
    "gpt_oss": gpt_oss, "llama4_text": llama4_text,
    "deepseek_v3": deepseek_v3,
    "gemma3_text": gemma3_text, "gemma3": gemma3, "mistral3": mistral3, "glm4_moe": glm4_moe,
}

# Classes each family must build (every one is covered by a forced case).
ARCHITECTURES = {
    "llama": ["LlamaModel", "LlamaForCausalLM", "LlamaForSequenceClassification", "LlamaForTokenClassification",
        "LlamaForQuestionAnswering"],
    "mistral": ["MistralModel", "MistralForCausalLM", "MistralForSequenceClassification", "MistralForTokenClassification",
        "MistralForQuestionAnswering"],
    "mixtral": ["MixtralModel", "MixtralForCausalLM", "MixtralForSequenceClassification", "MixtralForTokenClassification",
        "MixtralForQuestionAnswering"],
    "qwen2": ["Qwen2Model", "Qwen2ForCausalLM", "Qwen2ForSequenceClassification", "Qwen2ForTokenClassification",
        "Qwen2ForQuestionAnswering"],
    "qwen2_moe": ["Qwen2MoeModel", "Qwen2MoeForCausalLM", "Qwen2MoeForSequenceClassification", "Qwen2MoeForTokenClassification",
        "Qwen2MoeForQuestionAnswering"],
    "qwen3": ["Qwen3Model", "Qwen3ForCausalLM", "Qwen3ForSequenceClassification", "Qwen3ForTokenClassification",
        "Qwen3ForQuestionAnswering"],
    "qwen3_moe": ["Qwen3MoeModel", "Qwen3MoeForCausalLM", "Qwen3MoeForSequenceClassification", "Qwen3MoeForTokenClassification",
        "Qwen3MoeForQuestionAnswering"],
    "olmo2": ["Olmo2Model", "Olmo2ForCausalLM", "Olmo2ForSequenceClassification"],
    "smollm3": ["SmolLM3Model", "SmolLM3ForCausalLM", "SmolLM3ForSequenceClassification", "SmolLM3ForTokenClassification",
        "SmolLM3ForQuestionAnswering"],
    "granite": ["GraniteModel", "GraniteForCausalLM"],
    "phi": ["PhiModel", "PhiForCausalLM", "PhiForSequenceClassification", "PhiForTokenClassification"],
    "gemma": ["GemmaModel", "GemmaForCausalLM", "GemmaForSequenceClassification", "GemmaForTokenClassification"],
    "gemma2": ["Gemma2Model", "Gemma2ForCausalLM", "Gemma2ForSequenceClassification", "Gemma2ForTokenClassification"],
    "phi3": ["Phi3Model", "Phi3ForCausalLM", "Phi3ForSequenceClassification", "Phi3ForTokenClassification"],
    "gpt2": ["GPT2Model", "GPT2LMHeadModel", "GPT2ForSequenceClassification", "GPT2ForTokenClassification",
        "GPT2ForQuestionAnswering"],
    "gpt_neox": ["GPTNeoXModel", "GPTNeoXForCausalLM", "GPTNeoXForSequenceClassification",
                 "GPTNeoXForTokenClassification",
        "GPTNeoXForQuestionAnswering"],
    "bert": ["BertModel", "BertForMaskedLM", "BertForSequenceClassification", "BertForTokenClassification"],
    "vit": ["ViTModel", "ViTForImageClassification"],
    "roberta": ["RobertaModel", "RobertaForMaskedLM", "RobertaForSequenceClassification",
                "RobertaForTokenClassification"],
    "xlm-roberta": ["XLMRobertaModel", "XLMRobertaForMaskedLM", "XLMRobertaForSequenceClassification",
                    "XLMRobertaForTokenClassification"],
    "modernbert": ["ModernBertModel", "ModernBertForMaskedLM", "ModernBertForSequenceClassification",
                   "ModernBertForTokenClassification"],
    "t5": ["T5Model", "T5ForConditionalGeneration", "T5EncoderModel", "T5ForTokenClassification",
           "T5ForSequenceClassification"],
    "gpt_oss": ["GptOssModel", "GptOssForCausalLM", "GptOssForSequenceClassification", "GptOssForTokenClassification"],
    "llama4_text": ["Llama4TextModel", "Llama4ForCausalLM"],
    "deepseek_v3": ["DeepseekV3Model", "DeepseekV3ForCausalLM", "DeepseekV3ForSequenceClassification",
                    "DeepseekV3ForTokenClassification"],
    "gemma3_text": ["Gemma3TextModel", "Gemma3ForCausalLM", "Gemma3TextForSequenceClassification"],
    "gemma3": ["Gemma3Model", "Gemma3ForConditionalGeneration", "Gemma3ForSequenceClassification"],
    "mistral3": ["Mistral3Model", "Mistral3ForConditionalGeneration"],
    "glm4_moe": ["Glm4MoeModel", "Glm4MoeForCausalLM"],
}

RANDOM_PER_FAMILY = 4

# Encoders: their generators already set labels and pad tokens.
ENCODERS = ("bert", "roberta", "xlm-roberta", "modernbert")

# Corners the random generators do not reach, named.
FIXED_CASES = [
    # GPT2Config's attribute_map: the common names instead of n_embd & co.
    ("gpt2-common-names", {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 97,
                           "hidden_size": 24, "num_attention_heads": 3, "num_hidden_layers": 2,
                           "max_position_embeddings": 40, "bos_token_id": 0, "eos_token_id": 0}),
    ("gpt2-no-scaling", {"model_type": "gpt2", "vocab_size": 50, "n_embd": 16, "n_head": 2, "n_layer": 1,
                         "n_positions": 16, "scale_attn_weights": False, "bos_token_id": 0, "eos_token_id": 0}),
    ("gpt_neox-sequential-rope-linear", {
        "model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": 61, "hidden_size": 32,
        "num_attention_heads": 2, "num_hidden_layers": 2, "intermediate_size": 40, "rotary_pct": 0.5,
        "use_parallel_residual": False, "rope_scaling": {"type": "linear", "factor": 2.0},
        "max_position_embeddings": 64, "bos_token_id": 0, "eos_token_id": 0}),
    ("bert-decoder-no-padding", {"model_type": "bert", "architectures": ["BertForMaskedLM"], "vocab_size": 71,
                                 "hidden_size": 20, "num_attention_heads": 4, "num_hidden_layers": 2,
                                 "intermediate_size": 33, "max_position_embeddings": 30, "is_decoder": True,
                                 "pad_token_id": None, "tie_word_embeddings": False}),
    ("bert-cross-attention", {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": 40,
                              "hidden_size": 12, "num_attention_heads": 2, "num_hidden_layers": 1,
                              "intermediate_size": 7, "max_position_embeddings": 16, "is_decoder": True,
                              "add_cross_attention": True}),
    ("vit-rectangular", {"model_type": "vit", "architectures": ["ViTModel"], "hidden_size": 18,
                         "num_attention_heads": 3, "num_hidden_layers": 1, "intermediate_size": 11,
                         "image_size": [12, 20], "patch_size": [4, 5], "num_channels": 2}),
    # Qwen3's head_dim default (128, not hidden / heads) and no num_experts (128 by default is too
    # many: a dense qwen3_moe with every layer in mlp_only_layers)
    ("qwen3-default-head-dim", {"model_type": "qwen3", "vocab_size": 37, "hidden_size": 24,
                                "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1,
                                "intermediate_size": 15}),
    ("qwen3_moe-no-experts", {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
                              "vocab_size": 41, "hidden_size": 16, "num_attention_heads": 4,
                              "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 9,
                              "num_experts": 0, "tie_word_embeddings": True}),
    # RoBERTa's positions: the longest sequence its position embeddings take (pad + 1 + S = max)
    ("roberta-longest-sequence", {"model_type": "roberta", "architectures": ["RobertaForMaskedLM"],
                                  "vocab_size": 45, "hidden_size": 12, "num_attention_heads": 3,
                                  "num_hidden_layers": 1, "intermediate_size": 7, "max_position_embeddings": 25,
                                  "pad_token_id": 1}),
    # ModernBERT's transformers 5 rope_parameters (per layer type) instead of the *_rope_theta fields,
    # and every layer local
    ("modernbert-rope-parameters", {"model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"],
                                    "vocab_size": 51, "hidden_size": 16, "num_attention_heads": 2,
                                    "num_hidden_layers": 2, "intermediate_size": 9, "pad_token_id": 3,
                                    "layer_types": ["sliding_attention", "sliding_attention"],
                                    "local_attention": 4,
                                    "rope_parameters": {"sliding_attention": {"rope_type": "default",
                                                                              "rope_theta": 321.0},
                                                        "full_attention": {"rope_type": "default",
                                                                           "rope_theta": 1234.0}}}),
    ("vit-no-labels", {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 16,
                       "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 9,
                       "image_size": 8, "patch_size": 4, "num_labels": 0}),
    # T5Config's attribute_map: the common names instead of d_model & co.
    ("t5-common-names", {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "vocab_size": 53,
                         "hidden_size": 20, "num_attention_heads": 3, "num_hidden_layers": 2, "head_dim": 7,
                         "d_ff": 11, "num_decoder_layers": 1}),
    # Gemma 3 as published (gemma-3-1b: rope_local_base_freq, sliding_window_pattern 6, so layer 5 is
    # the only full one) and a text_config whose class defaults fill the rest (vocab, head_dim 256)
    ("gemma3_text-published-pattern", {"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"],
                                       "vocab_size": 53, "hidden_size": 12, "intermediate_size": 17,
                                       "num_hidden_layers": 7, "num_attention_heads": 3, "num_key_value_heads": 1,
                                       "head_dim": 8, "query_pre_attn_scalar": 8, "rope_local_base_freq": 10000,
                                       "rope_theta": 1000000, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                                       "sliding_window": 512, "sliding_window_pattern": 6}),
    ("gemma3-default-text", {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
                             "text_config": {"model_type": "gemma3_text", "vocab_size": 29, "hidden_size": 8,
                                             "intermediate_size": 11, "num_hidden_layers": 1,
                                             "num_attention_heads": 2, "num_key_value_heads": 1},
                             "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 8,
                                               "intermediate_size": 5, "num_hidden_layers": 1,
                                               "num_attention_heads": 2, "image_size": 28, "patch_size": 14},
                             "mm_tokens_per_image": 4}),
    # GLM-4.5's routing groups: 8 experts in 4 groups, the best 2 groups kept, 3 experts per token
    ("glm4_moe-groups", {"model_type": "glm4_moe", "architectures": ["Glm4MoeForCausalLM"], "vocab_size": 45,
                         "hidden_size": 16, "intermediate_size": 19, "num_hidden_layers": 3,
                         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
                         "n_routed_experts": 8, "n_group": 4, "topk_group": 2, "num_experts_per_tok": 3,
                         "moe_intermediate_size": 7, "n_shared_experts": 2, "first_k_dense_replace": 1,
                         "attention_bias": True, "use_qk_norm": True, "routed_scaling_factor": 2.5}),
]


def _classifier_fields(cfg, rng):
    """Labels (id2label or num_labels), a pad token (a batch > 1 needs one to
    pool sequences), and token classification's dropout and bias."""
    labels = rng.randint(1, 5)
    if rng.random() < 0.5:
        cfg["id2label"] = {str(i): "LABEL_%d" % i for i in range(labels)}
        cfg["label2id"] = {"LABEL_%d" % i: i for i in range(labels)}
    else:
        cfg["num_labels"] = labels
    if cfg.get("pad_token_id") is None:
        cfg["pad_token_id"] = 0
    if rng.random() < 0.5:
        cfg["classifier_dropout"] = 0.2
    cfg["token_classification_bias"] = rng.random() < 0.7


def cases():
    """(case id, config dict): every class of every family once,
    RANDOM_PER_FAMILY random configs per family, then FIXED_CASES."""
    out = list(FIXED_CASES)
    for family, gen in GENERATORS.items():
        for i, arch in enumerate(ARCHITECTURES[family]):
            cfg = gen(random.Random("%s-arch-%d" % (family, i)))
            cfg["architectures"] = [arch]
            if arch.endswith(("ForSequenceClassification", "ForTokenClassification")) and family not in ENCODERS:
                _classifier_fields(cfg, random.Random("%s-labels-%d" % (family, i)))
            out.append(("%s-%s" % (family, arch), cfg))
        for i in range(RANDOM_PER_FAMILY):
            out.append(("%s-random%d" % (family, i), gen(random.Random("%s-%d" % (family, i)))))
    return out


def input_shapes(cfg, rng):
    """Two random forward inputs for a config: BxS token ids, or BxCxHxW
    pixels at the config's image size for ViT (which requires it)."""
    if cfg["model_type"] == "vit":
        size = cfg["image_size"]
        height, width = size if isinstance(size, list) else (size, size)
        return [(rng.randint(1, 3), cfg.get("num_channels", 3), height, width) for _ in range(2)]
    if cfg["model_type"] == "t5" and cfg.get("architectures", ["T5Model"])[0] in SEQ2SEQ_CLASSES:
        # (encoder ids, decoder ids): decoders of one token and longer
        out = []
        for _ in range(2):
            batch = rng.randint(1, 3)
            out.append(((batch, rng.randint(1, 23)), (batch, rng.choice([1, rng.randint(2, 17)]))))
        return out
    limit = cfg.get("n_positions", cfg.get("max_position_embeddings", 64))
    return [(rng.randint(1, 3), rng.randint(1, min(limit, 23))) for _ in range(2)]


# The classes whose forward takes encoder and decoder ids.
SEQ2SEQ_CLASSES = {"T5Model", "T5ForConditionalGeneration"}


# MoE configs for the cpu forward with real routing: `experts` experts,
# `top_k` per token, every layer sparse (deepseek_v3 / glm4_moe: a dense
# first layer when there are two or more), the family's other fields random.
_EXPERT_KEYS = {"mixtral": "num_local_experts", "qwen2_moe": "num_experts", "qwen3_moe": "num_experts",
                "deepseek_v3": "n_routed_experts", "glm4_moe": "n_routed_experts"}


def moe_routed(family, rng, experts, top_k, **fields):
    cfg = GENERATORS[family](rng)
    cfg[_EXPERT_KEYS[family]] = experts
    cfg["num_experts_per_tok"] = top_k
    if family in ("qwen2_moe", "qwen3_moe"):
        cfg.update(decoder_sparse_step=1, mlp_only_layers=[])
    cfg.update(fields)
    if family in ("deepseek_v3", "glm4_moe"):
        cfg.update(n_group=fields.get("n_group", 1), topk_group=fields.get("topk_group", 1),
                   first_k_dense_replace=min(1, cfg["num_hidden_layers"] - 1))
    return cfg
