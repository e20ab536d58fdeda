#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/fuzz_config.c: one file per built-in
model of src/models/builtins.c (its embedded config.json), plus a few
small hand-written configs that reach the optional branches (rope_scaling
kinds, MoE, classification heads).  Run from the repository root:

    python3 tests/models/make_config_corpus.py

The files are committed (tests/models/corpus/); rerun after adding a
built-in model."""
import ast
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "models" / "corpus"

# { "name", "hf id", "json" "json" ..., "input" },
ROW = re.compile(r'\{\s*"([^"]+)",\s*"[^"]*",\s*((?:"(?:[^"\\]|\\.)*"\s*)+),\s*"[^"]*"\s*\}', re.S)

EXTRA = {
    "llama3-rope": {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                    "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100,
                    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 8192}},
    "qwen2-moe-tiny": {"model_type": "qwen2_moe", "hidden_size": 32, "num_attention_heads": 4,
                       "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 50,
                       "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                       "shared_expert_intermediate_size": 32, "decoder_sparse_step": 1,
                       "mlp_only_layers": [1]},
    "qwen3-moe-tiny": {"model_type": "qwen3_moe", "hidden_size": 32, "num_attention_heads": 4,
                       "num_key_value_heads": 2, "head_dim": 12, "num_hidden_layers": 2,
                       "intermediate_size": 64, "vocab_size": 50, "num_experts": 4, "num_experts_per_tok": 2,
                       "moe_intermediate_size": 16, "norm_topk_prob": True, "mlp_only_layers": [0]},
    "bert-classifier": {"model_type": "bert", "architectures": ["BertForSequenceClassification"],
                        "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 1,
                        "intermediate_size": 64, "vocab_size": 50, "id2label": {"0": "a", "1": "b"}},
    "vit-classifier": {"model_type": "vit", "architectures": ["ViTForImageClassification"],
                       "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 1,
                       "intermediate_size": 64, "image_size": 32, "patch_size": 8, "num_labels": 3},
    "xlm-roberta-classifier": {"model_type": "xlm-roberta", "architectures": ["XLMRobertaForSequenceClassification"],
                               "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 1,
                               "intermediate_size": 64, "vocab_size": 50, "max_position_embeddings": 40,
                               "num_labels": 3},
    "modernbert-mean-pooling": {"model_type": "modernbert", "architectures": ["ModernBertForSequenceClassification"],
                                "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 3,
                                "intermediate_size": 48, "vocab_size": 50, "pad_token_id": 0,
                                "local_attention": 8, "classifier_pooling": "mean",
                                "layer_types": ["full_attention", "sliding_attention", "sliding_attention"]},
    "t5-encoder-gated": {"model_type": "t5", "architectures": ["T5EncoderModel"], "d_model": 24, "d_kv": 5,
                         "d_ff": 40, "num_layers": 2, "num_heads": 3, "relative_attention_num_buckets": 8,
                         "relative_attention_max_distance": 20, "feed_forward_proj": "gated-gelu",
                         "vocab_size": 50},
    "gpt-oss-tiny": {"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "hidden_size": 32,
                     "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "num_hidden_layers": 2,
                     "intermediate_size": 24, "vocab_size": 50, "num_local_experts": 4, "num_experts_per_tok": 2,
                     "sliding_window": 4},
    "llama4-tiny": {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
                    "text_config": {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
                                    "head_dim": 8, "num_hidden_layers": 4, "intermediate_size": 24,
                                    "intermediate_size_mlp": 40, "vocab_size": 50, "num_local_experts": 3,
                                    "interleave_moe_layer_step": 2, "attention_chunk_size": 4,
                                    "no_rope_layers": [1, 1, 0, 1]}},
    # diffusers components (keyed by _class_name) and a CLIP text encoder
    "unet-tiny": {"_class_name": "UNet2DConditionModel", "block_out_channels": [32, 64],
                  "down_block_types": ["CrossAttnDownBlock2D", "DownBlock2D"],
                  "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D"], "layers_per_block": 1,
                  "attention_head_dim": 2, "cross_attention_dim": 16, "norm_num_groups": 8},
    "unet-xl-tiny": {"_class_name": "UNet2DConditionModel", "block_out_channels": [32, 64],
                     "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D"],
                     "up_block_types": ["CrossAttnUpBlock2D", "UpBlock2D"], "layers_per_block": 1,
                     "attention_head_dim": [2, 4], "cross_attention_dim": 16, "norm_num_groups": 8,
                     "use_linear_projection": True, "addition_embed_type": "text_time",
                     "addition_time_embed_dim": 4, "projection_class_embeddings_input_dim": 40,
                     "transformer_layers_per_block": [1, 2]},
    "vae-tiny": {"_class_name": "AutoencoderKL", "block_out_channels": [8, 16], "norm_num_groups": 4,
                 "down_block_types": ["DownEncoderBlock2D"] * 2, "up_block_types": ["UpDecoderBlock2D"] * 2},
    "clip-text-tiny": {"model_type": "clip_text_model", "architectures": ["CLIPTextModelWithProjection"],
                       "hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2,
                       "num_hidden_layers": 2, "vocab_size": 50, "max_position_embeddings": 8},
    "sd3-tiny": {"_class_name": "SD3Transformer2DModel", "sample_size": 16, "in_channels": 4, "num_layers": 2,
                 "attention_head_dim": 8, "num_attention_heads": 2, "joint_attention_dim": 12,
                 "caption_projection_dim": 16, "pooled_projection_dim": 10, "out_channels": 4,
                 "pos_embed_max_size": 16, "dual_attention_layers": [0], "qk_norm": "rms_norm"},
    "flux-tiny": {"_class_name": "FluxTransformer2DModel", "in_channels": 8, "num_layers": 1, "num_single_layers": 1,
                  "attention_head_dim": 8, "num_attention_heads": 2, "joint_attention_dim": 12,
                  "pooled_projection_dim": 10, "guidance_embeds": True, "axes_dims_rope": [2, 2, 4]},
    "lumina2-tiny": {"_class_name": "Lumina2Transformer2DModel", "in_channels": 4, "hidden_size": 16, "num_layers": 1,
                     "num_refiner_layers": 1, "num_attention_heads": 2, "num_kv_heads": 1, "multiple_of": 8,
                     "ffn_dim_multiplier": 1.5, "axes_dim_rope": [2, 2, 4], "axes_lens": [10, 10, 10],
                     "cap_feat_dim": 12},
}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    source = (ROOT / "src" / "models" / "builtins.c").read_text()
    count = 0
    for name, literals in ROW.findall(source):
        text = "".join(ast.literal_eval(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', literals))
        json.loads(text)  # each must be valid JSON
        (OUT / f"{name}.json").write_text(text)
        count += 1
    for name, config in EXTRA.items():
        (OUT / f"{name}.json").write_text(json.dumps(config))
    print(f"wrote {count} built-in and {len(EXTRA)} hand-written configs to {OUT}")


if __name__ == "__main__":
    main()
