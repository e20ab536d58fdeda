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

# Dense decoder families (MoE experts do not run on a real device yet).
FAMILIES = ["llama", "mistral", "qwen2", "qwen3", "olmo2", "smollm3", "granite", "phi", "gemma", "gemma2", "phi3",
            "gemma3_text", "gemma3", "mistral3"]
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
    cfg["architectures"] = [arch]
    random_configs._classifier_fields(cfg, rng)
    return cfg


# Classification heads; sequence classification pools the last token that is
# not padding (the test pads row b with b trailing pad tokens).
HEAD_CASES = [("%s-%d" % (arch, seed), _head_case(family, arch, seed))
              for family, prefix in [("llama", "Llama"), ("qwen3", "Qwen3"), ("phi3", "Phi3"), ("gemma2", "Gemma2"),
                                     ("smollm3", "SmolLM3"), ("olmo2", "Olmo2"), ("phi", "Phi"),
                                     ("gemma3_text", "Gemma3Text")]
              for arch in ["%sForSequenceClassification" % prefix, "%sForTokenClassification" % prefix]
              if arch not in ("Olmo2ForTokenClassification", "Gemma3TextForTokenClassification")
              for seed in range(2)]


def _glm4_dense_case(seed):
    """glm4_moe with every layer dense (experts do not run on the cpu yet):
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


def cases():
    out = list(GLM4_CASES) + WINDOW_CASES
    for family in FAMILIES:
        for i in range(PER_FAMILY):
            cfg = random_configs.GENERATORS[family](random.Random("cpu-%s-%d" % (family, i)))
            out.append(("%s-%d" % (family, i), cfg))
    out += ROPE_CASES + HEAD_CASES
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


@pytest.mark.parametrize("case_id,cfg", CASES, ids=[c[0] for c in CASES])
def test_cpu_forward_matches_transformers(case_id, cfg, zoo_probe_bin, tmp_path):
    config = hf_oracle.hf_config(cfg, str(tmp_path))
    arch = (config.architectures or [hf_oracle.BASE_CLASS[config.model_type]])[0]
    model = getattr(hf_oracle.transformers, arch)._from_config(config).eval()
    randomize_(model, 7)
    rng = random.Random(case_id)
    longest = 40 if case_id in dict(ROPE_CASES) else 12
    windowed = case_id in dict(WINDOW_CASES)
    shape = (rng.randint(1, 3), rng.randint(8, 16) if windowed else rng.randint(1, longest))
    text_cfg = cfg.get("text_config", cfg)
    ids = torch.randint(1, text_cfg["vocab_size"], shape, generator=torch.Generator().manual_seed(3))
    if arch.endswith("ForSequenceClassification"):
        for b in range(1, shape[0]):
            ids[b, max(1, shape[1] - b):] = cfg["pad_token_id"]
    with torch.no_grad():
        out = model(input_ids=ids)
    want = out["logits"] if out.get("logits") is not None else out["last_hidden_state"]
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    tensors["input_ids"] = ids
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
