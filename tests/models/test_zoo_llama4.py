"""A `llama4` (multimodal) config: mtk builds the text model inside
Llama4ForConditionalGeneration, `language_model` (a Llama4ForCausalLM of the
text_config), and leaves out the vision tower and the projector.  Its
parameters, buffers and state dict must be exactly transformers'
`language_model.*` entries of the whole model (on meta), its count their
count, and its logits for token ids (no image) those of transformers'
language_model in shape, dtype and FLOPs."""
import json
import random

import pytest

import hf_oracle
import random_configs
import test_zoo_oracle as oracle


def _config(seed):
    rng = random.Random("llama4-mm-%d" % seed)
    text = random_configs.llama4_text(rng)
    text.pop("architectures", None)
    dtype = text.pop("torch_dtype")
    return {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"], "torch_dtype": dtype,
            "text_config": text,
            "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 16, "num_hidden_layers": 1,
                              "num_attention_heads": 2, "intermediate_size": 20, "image_size": 28,
                              "patch_size": 14, "vision_output_dim": 16, "projector_input_dim": 16,
                              "projector_output_dim": text["hidden_size"]}}


def _text_only(rows):
    return [r for r in rows if r[0].startswith("language_model.")]


@pytest.mark.parametrize("seed", range(4))
def test_llama4_text_part_matches_transformers(seed, zoo_probe, tmp_path):
    cfg = _config(seed)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    shape = [2, 7]
    got = zoo_probe([(str(tmp_path / "config.json"), [shape])])[0]
    assert "error" not in got, got.get("error")
    model = hf_oracle.hf_model(hf_oracle.hf_config(cfg, str(tmp_path)))
    want = hf_oracle.describe(model)
    assert got["type"] == want["type"] == "Llama4ForConditionalGeneration"
    for key, what in (("state_dict", "state dict"), ("params", "parameters"), ("buffers", "buffers")):
        oracle.assert_same_tensors(got[key], _text_only(want[key]), what)
    text_count = sum(p.numel() for n, p in model.named_parameters() if n.startswith("language_model."))
    assert got["num_params"] == text_count < want["num_params"]
    # transformers 5.24's Llama4ForConditionalGeneration.forward fails on token ids alone (it reads
    # image_outputs from its language model's output): its language_model runs them
    oracle.assert_same_forward(got["forwards"][0], hf_oracle.forward(model.language_model, shape))
