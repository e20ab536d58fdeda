"""The gpt2, gpt_neox, bert and vit families beyond shapes: computed
buffers (bert's position_ids / token_type_ids, GPT-NeoX's rotary inv_freq)
get transformers' values when the model gets memory; bad configs fail with
the config and the field named; bad inputs fail as transformers does (or
with the limit named where transformers on meta would not notice)."""
import json
import subprocess

import pytest
import torch

import hf_oracle

TINY = {
    "bert": {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": 50, "hidden_size": 8,
             "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 12,
             "max_position_embeddings": 17, "type_vocab_size": 3},
    "roberta": {"model_type": "roberta", "architectures": ["RobertaForMaskedLM"], "vocab_size": 50, "hidden_size": 8,
                "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 12,
                "max_position_embeddings": 19, "type_vocab_size": 1},
    # the rotary buffers of both layer types, each with its own theta
    "modernbert": {"model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"], "vocab_size": 50,
                   "hidden_size": 24, "num_attention_heads": 2, "num_hidden_layers": 3, "intermediate_size": 12,
                   "pad_token_id": 0, "global_attn_every_n_layers": 2, "global_rope_theta": 80000.0,
                   "local_rope_theta": 5000.0},
    "modernbert-only-global": {"model_type": "modernbert", "vocab_size": 50, "hidden_size": 16,
                               "num_attention_heads": 2, "num_hidden_layers": 2, "intermediate_size": 12,
                               "pad_token_id": 0, "global_attn_every_n_layers": 1},
    "gpt_neox": {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": 50,
                 "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 12,
                 "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 32},
    "gpt_neox-rope-linear": {"model_type": "gpt_neox", "architectures": ["GPTNeoXModel"], "vocab_size": 50,
                             "hidden_size": 96, "num_attention_heads": 2, "num_hidden_layers": 1,
                             "intermediate_size": 12, "rotary_pct": 0.5, "rotary_emb_base": 50000,
                             "rope_scaling": {"type": "linear", "factor": 4.0}, "max_position_embeddings": 32},
    "gpt_neox-rope-parameters": {"model_type": "gpt_neox", "vocab_size": 50, "hidden_size": 48,
                                 "num_attention_heads": 3, "num_hidden_layers": 1, "intermediate_size": 12,
                                 "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0,
                                                     "partial_rotary_factor": 0.5}},
    # yarn and longrope: inv_freq from the scaling (the attention factor scales cos/sin, checked by
    # test_zoo_cpu_forward.py)
    "qwen2-yarn": {"model_type": "qwen2", "vocab_size": 50, "hidden_size": 64, "num_attention_heads": 2,
                   "num_hidden_layers": 1, "intermediate_size": 12, "max_position_embeddings": 256,
                   "rope_theta": 1000000.0,
                   "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}},
    "llama-yarn-mscale": {"model_type": "llama", "vocab_size": 50, "hidden_size": 96, "num_attention_heads": 2,
                          "num_hidden_layers": 1, "intermediate_size": 12, "max_position_embeddings": 512,
                          "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                              "original_max_position_embeddings": 128, "beta_fast": 32,
                                              "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0,
                                              "truncate": False}},
    "phi3-longrope": {"model_type": "phi3", "vocab_size": 50, "pad_token_id": 0, "hidden_size": 48, "num_attention_heads": 2,
                      "num_hidden_layers": 1, "intermediate_size": 12, "max_position_embeddings": 128,
                      "original_max_position_embeddings": 32, "partial_rotary_factor": 0.5,
                      "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.1, 1.25, 1.5, 2.0, 3.0],
                                       "long_factor": [1.5, 2.0, 4.0, 8.0, 16.0, 24.0]}},
}


TINY.update({
    # gemma3: a rope per layer type (full: theta 1e6, linear x8; sliding: rope_local_base_freq)
    "gemma3_text-two-ropes": {"model_type": "gemma3_text", "vocab_size": 50, "hidden_size": 16, "head_dim": 16,
                              "num_attention_heads": 1, "num_key_value_heads": 1, "num_hidden_layers": 2,
                              "intermediate_size": 12, "sliding_window_pattern": 2, "rope_local_base_freq": 100.0,
                              "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
    # gemma3's SigLIP position_ids; mistral3's Pixtral axial inv_freq (even then odd frequencies)
    "gemma3-vision": {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
                      "text_config": {"model_type": "gemma3_text", "vocab_size": 50, "hidden_size": 8,
                                      "head_dim": 8, "num_attention_heads": 1, "num_key_value_heads": 1,
                                      "num_hidden_layers": 1, "intermediate_size": 12},
                      "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 8,
                                        "intermediate_size": 5, "num_hidden_layers": 1, "num_attention_heads": 2,
                                        "image_size": 28, "patch_size": 7, "vision_use_head": False},
                      "mm_tokens_per_image": 4},
    "mistral3-pixtral": {"model_type": "mistral3", "architectures": ["Mistral3ForConditionalGeneration"],
                         "text_config": {"model_type": "mistral", "vocab_size": 50, "hidden_size": 8, "num_key_value_heads": 1,
                                         "num_attention_heads": 1, "num_hidden_layers": 1, "intermediate_size": 12},
                         "vision_config": {"model_type": "pixtral", "hidden_size": 16, "intermediate_size": 5,
                                           "num_hidden_layers": 1, "num_attention_heads": 1, "head_dim": 16,
                                           "image_size": 28, "patch_size": 14, "rope_theta": 500.0}},
    # glm4_moe: partial rotary (half of head_dim) and e_score_correction_bias (zeros)
    "glm4_moe-partial-rope": {"model_type": "glm4_moe", "vocab_size": 50, "hidden_size": 32, "head_dim": 16,
                              "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 2,
                              "intermediate_size": 12, "n_routed_experts": 4, "num_experts_per_tok": 2,
                              "moe_intermediate_size": 6, "rope_theta": 5000.0},
})


@pytest.mark.parametrize("name", sorted(TINY))
def test_computed_buffers_get_transformers_values(name, zoo_probe_bin, tmp_path):
    cfg = TINY[name]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    out = subprocess.run([zoo_probe_bin, "--buffers", str(tmp_path / "config.json")], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert "error" not in got, got.get("error")
    config = hf_oracle.hf_config(cfg, str(tmp_path))
    arch = (config.architectures or [hf_oracle.BASE_CLASS[config.model_type]])[0]
    model = getattr(hf_oracle.transformers, arch)._from_config(config)  # on cpu: buffers with values
    want = {n: b.flatten().double().tolist() for n, b in model.named_buffers()}
    assert sorted(got["buffers"]) == sorted(want)
    for buffer_name, values in want.items():
        # float32 buffers (inv_freq) within one ulp: torch's vectorized pow
        # and libm's powf may round the last bit differently
        torch.testing.assert_close(torch.tensor(got["buffers"][buffer_name], dtype=torch.float64),
                                   torch.tensor(values, dtype=torch.float64), rtol=1.2e-7, atol=0, msg=buffer_name)


# The required fields of a decoder family's config.
DECODER = {"vocab_size": 50, "hidden_size": 32, "num_attention_heads": 2, "num_hidden_layers": 1,
           "intermediate_size": 12}

# (family config, what the error must say)
BAD_CONFIGS = [
    ({"model_type": "gpt2", "n_embd": 10, "n_head": 3}, "n_embd=10 is not divisible by n_head=3"),
    ({"model_type": "gpt2", "n_head": 0}, "'n_head': must be a positive integer, got 0"),
    ({"model_type": "gpt2", "n_layer": -2}, "'n_layer': must be a non-negative integer, got -2"),
    ({"model_type": "gpt2", "activation_function": "nope"}, "'activation_function'"),
    ({"model_type": "gpt2", "attn_pdrop": 1.5}, "'attn_pdrop': a dropout probability is in [0, 1], got 1.5"),
    ({"model_type": "gpt2", "n_embd": "768"}, "'n_embd': expected an integer"),
    ({"model_type": "gpt_neox", "hidden_size": 30, "num_attention_heads": 4},
     "hidden_size=30 is not divisible by num_attention_heads=4"),
    ({"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4, "rotary_pct": 0.1},
     "'rotary_pct': rotary_pct=0.1 of the head size 16 gives 1 rotary dims"),
    ({"model_type": "gpt_neox", "rotary_pct": 0}, "'rotary_pct': must be in (0, 1], got 0"),
    ({"model_type": "gpt_neox", "layer_norm_eps": -1}, "'layer_norm_eps': must be positive, got -1"),
    ({"model_type": "bert", "hidden_size": 10, "num_attention_heads": 4},
     "hidden_size=10 is not a multiple of num_attention_heads=4"),
    ({"model_type": "bert", "vocab_size": 100, "pad_token_id": 100}, "'pad_token_id': 100 is not a row"),
    ({"model_type": "bert", "id2label": [1, 2]}, "'id2label': expected an object"),
    ({"model_type": "bert", "architectures": ["BertForQuestionAnswering"]},
     "unsupported architecture 'BertForQuestionAnswering'"),
    ({"model_type": "roberta", "pad_token_id": None}, "'pad_token_id': RobertaModel numbers positions from "
     "pad_token_id + 1; it cannot be null"),
    ({"model_type": "roberta", "pad_token_id": -1}, "'pad_token_id': must be >= 0 for RobertaModel's positions"),
    ({"model_type": "xlm-roberta", "pad_token_id": 20, "max_position_embeddings": 21},
     "'pad_token_id': 20 leaves no position"),
    ({"model_type": "modernbert", "classifier_pooling": "max"}, "'classifier_pooling': must be \"cls\" or \"mean\""),
    ({"model_type": "modernbert", "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
     "rope type 'linear' is not supported for modernbert (supported: default)"),
    ({"model_type": "modernbert", "num_hidden_layers": 2, "layer_types": ["full_attention", "chunked"]},
     "'layer_types': item 1 is not \"full_attention\" or \"sliding_attention\""),
    ({"model_type": "modernbert", "hidden_size": 30, "num_attention_heads": 2},
     "gives an odd head dim 15"),
    ({**DECODER, "model_type": "llama", "rope_scaling": {"rope_type": "ntk-by-parts", "factor": 2.0}},
     "rope type 'ntk-by-parts' is not supported (supported: default, linear, dynamic, llama3, yarn, longrope)"),
    ({**DECODER, "model_type": "qwen2", "rope_scaling": {"type": "yarn", "original_max_position_embeddings": 4096}},
     "missing required field 'rope_scaling.factor' (rope type 'yarn')"),
    ({**DECODER, "model_type": "phi3", "pad_token_id": 0, "hidden_size": 64, "num_attention_heads": 4,
      "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 8, "long_factor": [1.0] * 7}},
     "'rope_scaling.long_factor': has 7 values; the rotary embedding has 8 frequencies"),
    ({"model_type": "vit", "image_size": 16, "patch_size": 32}, "'patch_size': a 32 x 32 patch does not fit"),
    ({"model_type": "vit", "image_size": [224, 224, 3]}, "'image_size': expected an integer or a list of two"),
    ({"model_type": "vit", "hidden_size": 10, "num_attention_heads": 4},
     "hidden_size=10 is not a multiple of num_attention_heads=4"),
    ({"model_type": "vit", "num_labels": -1}, "'num_labels': must be >= 0, got -1"),
    ({"model_type": "vit", "pooler_act": "nope"}, "'pooler_act'"),
]


@pytest.mark.parametrize("cfg,message", BAD_CONFIGS, ids=[m for _, m in BAD_CONFIGS])
def test_bad_config_names_the_field(cfg, message, mtk, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    result = mtk("summary", str(path))
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("mtk: error: %s:" % path), result.stderr
    assert message in result.stderr


# (MODEL, --input, what the error must say)
BAD_INPUTS = [
    ("gpt2", "1x1025", "a sequence of 1025 tokens is longer than the 1024 positions the model has (n_positions)"),
    ("bert-base-uncased", "2x513", "longer than the 512 positions the model has (max_position_embeddings)"),
    ("roberta-base", "1x513", "RobertaModel: a sequence of 513 tokens is longer than the 512 positions the model "
     "has (max_position_embeddings)"),
    ("gpt2", "2x3x4", "GPT2Model: expects token ids (batch, sequence) of an integer dtype, got 3 dims"),
    ("pythia-160m", "8:float32", "GPTNeoXModel: expects token ids (batch, sequence) of an integer dtype, got 1 dim "
     "of float32"),
    ("llama-3.2-1b", "8", "LlamaModel: expects token ids (batch, sequence) of an integer dtype, got 1 dim of int64"),
    ("vit-base-patch16-224", "1x3x200x200", "Input image size (200*200) doesn't match model (224*224)."),
    ("vit-base-patch16-224", "1x1x224x224", "Expected 3 but got 1."),
    ("vit-base-patch16-224", "1x224x224", "expects pixel values (batch, channels, height, width)"),
]


@pytest.mark.parametrize("model,shape,message", BAD_INPUTS, ids=[m for _, _, m in BAD_INPUTS])
def test_bad_input_is_an_error(model, shape, message, mtk, builtin_models):
    if model not in builtin_models:
        pytest.skip("%s is not a built-in of this build" % model)
    result = mtk("summary", model, "--input", shape)
    assert result.returncode == 1, result.stdout
    assert message in result.stderr


@pytest.mark.parametrize("model,shape,output", [
    ("gpt2", "2x1024", [[2, 1024, 50257]]),
    ("bert-base-uncased", "3x128", [[3, 128, 30522]]),
    ("vit-base-patch16-224", "4x3x224x224", [[4, 1000]]),
    ("vit-base-patch16-224", "1x3x224x224:uint8", [[1, 1000]]),  # cast to the model's dtype
    ("pythia-160m", "1x4096", [[1, 4096, 50304]]),  # rotary: no position limit
    ("roberta-base", "2x512", [[2, 512, 50265]]),  # positions 2..513 of 514
    ("xlm-roberta-large", "1x16", [[1, 16, 250002]]),
    ("modernbert-base", "1x9000", [[1, 9000, 50368]]),  # rotary: past max_position_embeddings, as transformers
])
def test_summary_of_builtin(model, shape, output, mtk, builtin_models):
    if model not in builtin_models:
        pytest.skip("%s is not a built-in of this build" % model)
    result = mtk("summary", model, "--input", shape, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output_shapes"] == output


def test_sequence_classification_without_pad_token_takes_batch_one(mtk, tmp_path):
    cfg = {**DECODER, "model_type": "llama", "architectures": ["LlamaForSequenceClassification"], "num_labels": 3}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    one = mtk("summary", str(path), "--input", "1x5", "--json")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["output_shapes"] == [[1, 3]]
    two = mtk("summary", str(path), "--input", "2x5")
    assert two.returncode == 1, two.stdout
    assert "Cannot handle batch sizes > 1 if no padding token is defined" in two.stderr


@pytest.mark.parametrize("args,column", [(("models",), "Class"), (("models", "--families"), "Input")])
def test_model_lists_keep_their_columns_past_long_family_names(args, column, mtk):
    """'xlm-roberta' is longer than the family column's header: the column
    widens so every row's next column starts under its header."""
    result = mtk(*args)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines[0].index(column)
    rows = [line for line in lines[1:] if line.split() and line.split()[0] in ("xlm-roberta-large", "xlm-roberta",
                                                                                "bert-base-uncased", "bert")]
    assert len(rows) == 2, lines
    for row in rows:
        assert row[at - 1] == " " and row[at] != " ", row
