"""The zoo's cpu forward against transformers: a small random-weight model
of each decoder family, in float32, built by transformers on the cpu and
saved as safetensors with random token ids; zoo_probe --cpu-forward builds
the same config on mtk's cpu, loads the weights and runs it.  Logits (or
the last hidden state) must agree within 1e-4.

Weights are random with norms' scales away from 1 (so a missing or
misplaced RMSNorm, such as qwen3's q_norm/k_norm, shows), sequences are
short (below every sliding window the random configs use) except for the
rope cases, which pass the original length of yarn / longrope configs."""
import json
import random
import subprocess

import pytest
import torch
from safetensors.torch import load_file, save_file

import hf_oracle
import random_configs

# Dense decoder families and gpt_oss / llama4_text (the other MoE families'
# routing is tested by MOE_ROUTED below).
FAMILIES = ["llama", "mistral", "qwen2", "qwen3", "olmo2", "smollm3", "granite", "phi", "gemma", "gemma2", "phi3",
            "gpt_oss", "llama4_text", "gemma3_text", "gemma3", "mistral3"]
PER_FAMILY = 3


def _rope_case(family, rope_type, seed):
    rng = random.Random("cpu-rope-%s-%s-%d" % (family, rope_type, seed))
    cfg = random_configs.GENERATORS[family](rng)
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    if int(head_dim * cfg.get("partial_rotary_factor", 1.0)) % 2:
        cfg["partial_rotary_factor"] = 1.0  # odd rotary dims break transformers too
    cfg["rope_scaling"] = random_configs.rope_scaling(rng, cfg, rope_type)
    if "sliding_window" in cfg:
        cfg["sliding_window"] = 64  # past the longest sequence: the forward without a cache keeps no window
    if family == "phi3":
        cfg["original_max_position_embeddings"] = cfg["rope_scaling"].pop("original_max_position_embeddings")
    return cfg


# Every rope type on the cpu; longrope both within its original length (short
# factors) and past it (long factors: the sequences go up to 40 tokens).
ROPE_CASES = [("%s-%s-%d" % (family, rope_type, seed), _rope_case(family, rope_type, seed))
              for family, rope_type in [("llama", "llama3"), ("llama", "linear"), ("llama", "dynamic"),
                                        ("llama", "yarn"), ("llama", "longrope"), ("qwen2", "yarn"),
                                        ("qwen3", "yarn"), ("phi3", "longrope"), ("gemma3_text", "linear")]
              for seed in range(2)]


def _head_case(family, arch, seed):
    rng = random.Random("cpu-head-%s-%s-%d" % (family, arch, seed))
    cfg = random_configs.GENERATORS[family](rng)
    if family == "deepseek_v3":
        cfg["first_k_dense_replace"] = cfg["num_hidden_layers"]
    if family == "gpt2":
        cfg["add_cross_attention"] = False  # its cross-attention needs encoder states
    cfg["architectures"] = [arch]
    random_configs._classifier_fields(cfg, rng)
    return cfg


# Classification heads; sequence classification pools the last token that is
# not padding (the test pads row b with b trailing pad tokens).
HEAD_CASES = [("%s-%d" % (arch, seed), _head_case(family, arch, seed))
              for family, prefix in [("llama", "Llama"), ("qwen3", "Qwen3"), ("phi3", "Phi3"), ("gemma2", "Gemma2"),
                                     ("smollm3", "SmolLM3"), ("olmo2", "Olmo2"), ("phi", "Phi"),
                                     ("deepseek_v3", "DeepseekV3"), ("gemma3_text", "Gemma3Text"),
                                     ("gpt2", "GPT2"), ("gpt_neox", "GPTNeoX"), ("gemma3", "Gemma3")]
              for arch in ["%sForSequenceClassification" % prefix, "%sForTokenClassification" % prefix]
              if arch not in ("Olmo2ForTokenClassification", "Gemma3TextForTokenClassification",
                              "Gemma3ForTokenClassification")
              for seed in range(2)]

# Question answering: the start logits (mtk's first output) of classes
# named model and transformer.
HEAD_CASES += [("%sForQuestionAnswering-%d" % (prefix, seed),
                _head_case(family, "%sForQuestionAnswering" % prefix, seed))
               for family, prefix in [("llama", "Llama"), ("mistral", "Mistral"), ("qwen3", "Qwen3"),
                                      ("smollm3", "SmolLM3"), ("gpt2", "GPT2"), ("gpt_neox", "GPTNeoX")]
               for seed in range(2)]


# Encoders, every class; token ids include the pad token (RoBERTa numbers positions around it) and
# sequences run past ModernBERT's local windows.
ENCODER_CASES = [("%s-%s" % (family, arch), dict(random_configs.GENERATORS[family](
                     random.Random("cpu-%s-%s" % (family, arch))), architectures=[arch]))
                 for family in ("bert", "roberta", "xlm-roberta", "modernbert")
                 for arch in random_configs.ARCHITECTURES[family]]


def _t5_case(arch, seed):
    cfg = random_configs.t5(random.Random("cpu-t5-%s-%d" % (arch, seed)))
    cfg["architectures"] = [arch]
    cfg["dropout_rate"] = 0.0
    return cfg


# t5: relative position buckets over sequences longer than the exact range
# (both directions in the encoder), relu and gated FFNs, tied and untied
# (unscaled) outputs, decoders of one token and more.
T5_CASES = [("%s-%d" % (arch, seed), _t5_case(arch, seed))
            for arch in random_configs.ARCHITECTURES["t5"] for seed in range(3)]


# Sliding windows (gpt_oss) and attention chunks (llama4_text) shorter than
# the sequences (up to 40 tokens), with sinks, routing to k of E experts,
# NoPE layers whose temperature tuning changes within the sequence.
LOCAL_CASES = [
    ("gpt_oss-window3", {"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "vocab_size": 97,
                         "hidden_size": 24, "head_dim": 8, "num_attention_heads": 4, "num_key_value_heads": 2,
                         "num_hidden_layers": 3, "intermediate_size": 13, "num_local_experts": 5,
                         "num_experts_per_tok": 2, "sliding_window": 3, "swiglu_limit": 1.5,
                         "max_position_embeddings": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                                         "original_max_position_embeddings": 16}}),
    ("gpt_oss-types-1expert", {"model_type": "gpt_oss", "vocab_size": 61, "hidden_size": 20, "head_dim": 6,
                               "num_attention_heads": 3, "num_key_value_heads": 1, "num_hidden_layers": 3,
                               "intermediate_size": 11, "num_local_experts": 3, "num_experts_per_tok": 1,
                               "sliding_window": 7, "attention_bias": False, "max_position_embeddings": 64,
                               "layer_types": ["full_attention", "sliding_attention", "sliding_attention"]}),
    ("llama4_text-chunk4", {"model_type": "llama4_text", "architectures": ["Llama4ForCausalLM"], "vocab_size": 89,
                            "hidden_size": 30, "head_dim": 8, "num_attention_heads": 4, "num_key_value_heads": 2,
                            "num_hidden_layers": 4, "intermediate_size": 11, "intermediate_size_mlp": 17,
                            "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
                            "attention_chunk_size": 4, "no_rope_layer_interval": 2, "floor_scale": 3,
                            "attn_scale": 0.5, "max_position_embeddings": 64,
                            "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                             "high_freq_factor": 1.0, "original_max_position_embeddings": 16}}),
    ("llama4_text-moe-layers", {"model_type": "llama4_text", "vocab_size": 53, "hidden_size": 16, "head_dim": 4,
                                "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 3,
                                "intermediate_size": 9, "intermediate_size_mlp": 7, "num_local_experts": 3,
                                "num_experts_per_tok": 2, "moe_layers": [0, 2], "attention_chunk_size": 6,
                                "no_rope_layers": [0, 1, 0], "use_qk_norm": False, "floor_scale": 2,
                                "max_position_embeddings": 64, "tie_word_embeddings": True}),
]


def _deepseek_dense(seed, rope_type=None):
    """deepseek_v3 with every layer dense (first_k_dense_replace = layers):
    MLA with q_lora_rank null or set, interleaved rope or not, yarn with
    mscale_all_dim; MOE_ROUTED runs the MoE layers."""
    rng = random.Random("cpu-deepseek-%s-%d" % (rope_type, seed))
    cfg = random_configs.deepseek_v3(rng)
    cfg["first_k_dense_replace"] = cfg["num_hidden_layers"]
    cfg["q_lora_rank"] = [None, 7][seed % 2]
    cfg["rope_interleave"] = seed % 3 != 2
    if rope_type:
        cfg["rope_scaling"] = random_configs.rope_scaling(rng, cfg, rope_type)
        cfg["rope_scaling"].update(mscale=1.0, mscale_all_dim=[0.707, 1.0][seed % 2])
    return cfg


DEEPSEEK_CASES = [("deepseek_v3-%d" % i, _deepseek_dense(i)) for i in range(3)]
ROPE_CASES += [("deepseek_v3-yarn-%d" % i, _deepseek_dense(i, "yarn")) for i in range(2)]


def _glm4_dense_case(seed):
    """glm4_moe with every layer dense (MOE_ROUTED runs its MoE layers):
    its partial rotary, q/k/v biases and q/k norms."""
    cfg = random_configs.glm4_moe(random.Random("cpu-glm4_moe-%d" % seed))
    cfg["first_k_dense_replace"] = cfg["num_hidden_layers"]
    cfg["architectures"] = ["Glm4MoeForCausalLM"]
    return cfg


GLM4_CASES = [("glm4_moe-dense-%d" % seed, _glm4_dense_case(seed)) for seed in range(3)]


def _window_case(family, seed):
    """Sliding windows shorter than the text, sliding and full layers mixed
    (gemma3: each layer type with its own rope), run through mtk's cached
    forward, which builds transformers' masks."""
    rng = random.Random("cpu-window-%s-%d" % (family, seed))
    cfg = random_configs.GENERATORS[family](rng)
    text = cfg.get("text_config", cfg)
    text["sliding_window"] = rng.choice([3, 5])
    text["num_hidden_layers"] = max(text["num_hidden_layers"], 2)
    if family != "mistral3":
        text.pop("sliding_window_pattern", None)
        text["layer_types"] = ["full_attention" if i % 2 else "sliding_attention"
                               for i in range(text["num_hidden_layers"])]
        cfg["architectures"] = ["Gemma3ForCausalLM" if family == "gemma3_text" else "Gemma3ForConditionalGeneration"]
    else:
        cfg["architectures"] = ["Mistral3ForConditionalGeneration"]
    return cfg


WINDOW_CASES = [("window-%s-%d" % (family, seed), _window_case(family, seed))
                for family in ["gemma3_text", "gemma3", "mistral3"] for seed in range(2)]


# Real routing: (case, config, ids shape, whether some expert must get no
# token, whether the group limit must change some token's experts).  Few
# tokens over many experts leave experts idle; deepseek_v3 / glm4_moe with
# n_group > topk_group drop whole groups, and a random
# e_score_correction_bias moves the choice but not the weights.
def _moe(family, name, experts, top_k, shape, idle=False, grouped=False, **fields):
    cfg = random_configs.moe_routed(family, random.Random("cpu-moe-%s-%s" % (family, name)), experts, top_k,
                                    **fields)
    cfg["architectures"] = [random_configs.ARCHITECTURES[family][1]]  # <Prefix>ForCausalLM
    return ("moe-%s-%s" % (family, name), cfg, shape, idle, grouped)


MOE_ROUTED = [
    _moe("mixtral", "top2", 8, 2, (2, 12)),
    _moe("mixtral", "top1-idle", 6, 1, (1, 3), idle=True),
    _moe("mixtral", "top3", 5, 3, (2, 7), num_hidden_layers=2),
    _moe("qwen2_moe", "norm", 6, 2, (2, 10), norm_topk_prob=True),
    _moe("qwen2_moe", "raw-idle", 8, 2, (1, 3), idle=True, norm_topk_prob=False),
    _moe("qwen3_moe", "norm", 6, 2, (2, 9), norm_topk_prob=True),
    _moe("qwen3_moe", "raw-idle", 7, 1, (1, 4), idle=True, norm_topk_prob=False),
    _moe("deepseek_v3", "groups4-keep2", 8, 3, (2, 10), grouped=True, n_group=4, topk_group=2,
         num_hidden_layers=2, norm_topk_prob=True, routed_scaling_factor=2.5),
    _moe("deepseek_v3", "groups4-keep1-idle", 8, 2, (1, 5), idle=True, grouped=True, n_group=4, topk_group=1,
         num_hidden_layers=3, norm_topk_prob=False),
    _moe("deepseek_v3", "ungrouped", 6, 2, (2, 6), num_hidden_layers=2, norm_topk_prob=True),
    _moe("glm4_moe", "groups2-keep1", 8, 2, (2, 8), grouped=True, n_group=2, topk_group=1, num_hidden_layers=2,
         norm_topk_prob=True, routed_scaling_factor=2.5),
    _moe("glm4_moe", "ungrouped-idle", 6, 2, (1, 3), idle=True, num_hidden_layers=2, norm_topk_prob=False),
]
MOE_CASES = [(case[0], case[1]) for case in MOE_ROUTED]
MOE_SHAPES = {case[0]: case[2:] for case in MOE_ROUTED}


def _routing_hooks(model):
    """Forward hooks on every router: the (input, indices) each layer's router saw and chose."""
    seen = []
    for module in model.modules():
        if type(module).__name__.endswith(("TopKRouter", "TopkRouter")):
            module.register_forward_hook(lambda mod, args, out: seen.append((mod, args[0], out[2])))
    return seen


def _check_routing(seen, idle, grouped):
    """Several experts get tokens in every MoE layer; with `idle`, some
    expert gets none; with `grouped`, the group limit changes some token's
    choice (against the plain top-k of the bias-corrected scores)."""
    assert seen, "no router ran"
    some_idle = group_changed = False
    for router, x, indices in seen:
        hit = torch.unique(indices).numel()
        assert hit >= 2, "only %d expert got tokens" % hit
        some_idle |= hit < router.num_experts
        if hasattr(router, "e_score_correction_bias"):
            scores = torch.sigmoid(x.reshape(-1, router.hidden_dim).float() @ router.weight.float().T)
            plain = torch.topk(scores + router.e_score_correction_bias, router.top_k, dim=-1)[1]
            group_changed |= not torch.equal(plain.sort(-1)[0], indices.sort(-1)[0])
    assert some_idle or not idle, "every expert got tokens"
    assert group_changed or not grouped, "the group limit changed no token's experts"


def cases():
    out = list(ENCODER_CASES) + DEEPSEEK_CASES + GLM4_CASES + WINDOW_CASES
    for family in FAMILIES:
        for i in range(PER_FAMILY):
            cfg = random_configs.GENERATORS[family](random.Random("cpu-%s-%d" % (family, i)))
            out.append(("%s-%d" % (family, i), cfg))
    out += ROPE_CASES + HEAD_CASES + T5_CASES + LOCAL_CASES + MOE_CASES
    for _, cfg in out:
        cfg["torch_dtype"] = "float32"
        cfg.get("text_config", {}).pop("torch_dtype", None)
    return out


CASES = cases()


def randomize_(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1 and "norm" in name:
                p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):  # moves the experts' choice, not their weights
                b.copy_(torch.randn(b.shape, generator=gen) * 0.2)


@pytest.mark.parametrize("case_id,cfg", CASES, ids=[c[0] for c in CASES])
def test_cpu_forward_matches_transformers(case_id, cfg, zoo_probe_bin, tmp_path):
    config = hf_oracle.hf_config(cfg, str(tmp_path))
    arch = (config.architectures or [hf_oracle.BASE_CLASS[config.model_type]])[0]
    model = getattr(hf_oracle.transformers, arch)._from_config(config).eval()
    randomize_(model, 7)
    rng = random.Random(case_id)
    longest = 40 if case_id in dict(ROPE_CASES + LOCAL_CASES + T5_CASES) else 12
    windowed = case_id in dict(WINDOW_CASES)
    shape = (rng.randint(1, 3), rng.randint(8, 16) if windowed else rng.randint(1, longest))
    moe = MOE_SHAPES.get(case_id)
    if moe:
        shape = moe[0]
    text_cfg = cfg.get("text_config", cfg)
    ids = torch.randint(1, text_cfg["vocab_size"], shape, generator=torch.Generator().manual_seed(3))
    if case_id in dict(ENCODER_CASES):
        ids[:, -1] = cfg.get("pad_token_id") or 0  # a pad token at the end of every row
    if arch.endswith("ForSequenceClassification") and case_id not in dict(ENCODER_CASES + T5_CASES):
        for b in range(1, shape[0]):
            ids[b, max(1, shape[1] - b):] = cfg["pad_token_id"]
    if arch == "T5ForSequenceClassification":
        # one <eos> per row (as transformers requires), row b's b tokens before the end
        eos = cfg.get("eos_token_id", 1)
        ids[ids == eos] = eos + 1 if eos + 1 < cfg["vocab_size"] else eos - 1
        for b in range(shape[0]):
            ids[b, max(0, shape[1] - 1 - b)] = eos
    inputs = {"input_ids": ids}
    if arch in random_configs.SEQ2SEQ_CLASSES:
        decoder_len = rng.choice([1, rng.randint(2, 30)])
        inputs["decoder_input_ids"] = torch.randint(0, cfg["vocab_size"], (shape[0], decoder_len),
                                                    generator=torch.Generator().manual_seed(4))
    seen = _routing_hooks(model) if moe else None
    with torch.no_grad():
        out = model(**inputs)
    if moe:
        _check_routing(seen, *moe[1:])
    want = next(out[k] for k in ("logits", "start_logits", "last_hidden_state") if out.get(k) is not None)
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    tensors.update(inputs)
    save_file(tensors, str(tmp_path / "weights.safetensors"))
    result = subprocess.run([zoo_probe_bin, "--cpu-forward-cached" if windowed else "--cpu-forward",
                             str(tmp_path / "config.json"),
                             str(tmp_path / "weights.safetensors"), str(tmp_path / "out.safetensors")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert "error" not in answer, answer["error"]
    got = load_file(str(tmp_path / "out.safetensors"))["output"]
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    if moe:
        assert torch.equal(got.argmax(-1), want.argmax(-1))


VISION_CASES = [("vision-gemma3-%d" % seed, random_configs.gemma3(random.Random("cpu-vision-gemma3-%d" % seed)))
                for seed in range(4)]


@pytest.mark.parametrize("case_id,cfg", VISION_CASES, ids=[c[0] for c in VISION_CASES])
def test_cpu_vision_tower_and_projector_match_transformers(case_id, cfg, zoo_probe_bin, tmp_path):
    """gemma3's SigLIP tower and projector on random pixels: the image
    features transformers' get_image_features gives, within 1e-4."""
    cfg = dict(cfg, architectures=["Gemma3ForConditionalGeneration"], torch_dtype="float32")
    cfg["vision_config"] = dict(cfg["vision_config"], vision_use_head=False)
    config = hf_oracle.hf_config(cfg, str(tmp_path))
    model = hf_oracle.transformers.Gemma3ForConditionalGeneration._from_config(config).eval()
    randomize_(model, 11)
    vision = config.vision_config
    pixels = torch.randn(random.Random(case_id).randint(1, 2), vision.num_channels, vision.image_size,
                         vision.image_size, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        want = model.model.get_image_features(pixel_values=pixels).pooler_output
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    tensors["pixel_values"] = pixels
    save_file(tensors, str(tmp_path / "weights.safetensors"))
    result = subprocess.run([zoo_probe_bin, "--cpu-forward-vision", str(tmp_path / "config.json"),
                             str(tmp_path / "weights.safetensors"), str(tmp_path / "out.safetensors")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert "error" not in answer, answer["error"]
    got = load_file(str(tmp_path / "out.safetensors"))["output"]
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_t5_sequence_classification_refuses_rows_with_other_eos_counts(zoo_probe_bin, tmp_path):
    """transformers refuses rows with different numbers of <eos> tokens;
    so does mtk's cpu forward, naming the counts."""
    cfg = {"model_type": "t5", "architectures": ["T5ForSequenceClassification"], "vocab_size": 40, "d_model": 16,
           "d_kv": 4, "d_ff": 24, "num_layers": 1, "num_heads": 2, "num_labels": 3, "decoder_start_token_id": 0,
           "torch_dtype": "float32"}
    config = hf_oracle.hf_config(cfg, str(tmp_path))
    model = hf_oracle.transformers.T5ForSequenceClassification._from_config(config).eval()
    ids = torch.tensor([[5, 6, 1, 7, 1], [5, 6, 7, 8, 1]])  # two <eos> in row 0, one in row 1
    with pytest.raises(ValueError, match="same number of <eos>"):
        model(input_ids=ids)
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    tensors["input_ids"] = ids
    save_file(tensors, str(tmp_path / "weights.safetensors"))
    result = subprocess.run([zoo_probe_bin, "--cpu-forward", str(tmp_path / "config.json"),
                             str(tmp_path / "weights.safetensors"), str(tmp_path / "out.safetensors")],
                            capture_output=True, text=True, timeout=120)
    answer = json.loads(result.stdout) if result.stdout.strip() else {"error": result.stderr}
    assert "row 0 has 2, row 1 has 1" in answer.get("error", "") + result.stderr
