/* The built-in models: each a copy of the published config.json of the
 * model on the Hugging Face Hub (hf_id), so nothing is downloaded.  The
 * values are the published ones (fields transformers ignores for the
 * architecture, such as tokenizer ids, are kept as published; a few
 * bookkeeping fields, transformers_version and the like, are left out).
 * vit-base-patch16-224 says "num_labels": 1000 instead of listing its
 * 1000 id2label names, which transformers treats the same.  An
 * encoder-decoder's example input is the encoder's and the decoder's ids
 * joined by '+' ("1x512+1x128": `--input 1x512 --input 1x128`).
 * Adding a model is one row. */
#include "models/config.h"

#include <string.h>

static const mtk_builtin_model builtins[] = {
    { "llama-2-7b", "meta-llama/Llama-2-7b-hf",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"bos_token_id\": 1, \"eos_token_id\": 2,"
      " \"hidden_act\": \"silu\", \"hidden_size\": 4096, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 11008, \"max_position_embeddings\": 4096, \"model_type\": \"llama\","
      " \"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 32,"
      " \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null, \"rope_theta\": 10000.0,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\", \"use_cache\": true,"
      " \"vocab_size\": 32000}",
      "1x4096" },
    { "llama-2-13b", "meta-llama/Llama-2-13b-hf",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"bos_token_id\": 1, \"eos_token_id\": 2,"
      " \"hidden_act\": \"silu\", \"hidden_size\": 5120, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 13824, \"max_position_embeddings\": 4096, \"model_type\": \"llama\","
      " \"num_attention_heads\": 40, \"num_hidden_layers\": 40, \"num_key_value_heads\": 40,"
      " \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null, \"rope_theta\": 10000.0,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\", \"use_cache\": true,"
      " \"vocab_size\": 32000}",
      "1x4096" },
    { "llama-2-70b", "meta-llama/Llama-2-70b-hf",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"bos_token_id\": 1, \"eos_token_id\": 2,"
      " \"hidden_act\": \"silu\", \"hidden_size\": 8192, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 28672, \"max_position_embeddings\": 4096, \"model_type\": \"llama\","
      " \"num_attention_heads\": 64, \"num_hidden_layers\": 80, \"num_key_value_heads\": 8,"
      " \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null, \"rope_theta\": 10000.0,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\", \"use_cache\": true,"
      " \"vocab_size\": 32000}",
      "1x4096" },
    { "llama-3-8b", "meta-llama/Meta-Llama-3-8B",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 128000, \"eos_token_id\": 128001, \"hidden_act\": \"silu\", \"hidden_size\": 4096,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 14336, \"max_position_embeddings\": 8192,"
      " \"model_type\": \"llama\", \"num_attention_heads\": 32, \"num_hidden_layers\": 32,"
      " \"num_key_value_heads\": 8, \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null,"
      " \"rope_theta\": 500000.0, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 128256}",
      "1x2048" },
    { "llama-3-70b", "meta-llama/Meta-Llama-3-70B",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 128000, \"eos_token_id\": 128001, \"hidden_act\": \"silu\", \"hidden_size\": 8192,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 28672, \"max_position_embeddings\": 8192,"
      " \"model_type\": \"llama\", \"num_attention_heads\": 64, \"num_hidden_layers\": 80,"
      " \"num_key_value_heads\": 8, \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null,"
      " \"rope_theta\": 500000.0, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 128256}",
      "1x4096" },
    { "llama-3.1-8b", "meta-llama/Llama-3.1-8B",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 128000, \"eos_token_id\": 128001, \"hidden_act\": \"silu\", \"hidden_size\": 4096,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 14336, \"max_position_embeddings\": 131072,"
      " \"mlp_bias\": false, \"model_type\": \"llama\", \"num_attention_heads\": 32,"
      " \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, \"pretraining_tp\": 1,"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0,"
      " \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"},"
      " \"rope_theta\": 500000.0, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 128256}",
      "1x4096" },
    { "llama-3.1-70b", "meta-llama/Llama-3.1-70B",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 128000, \"eos_token_id\": 128001, \"hidden_act\": \"silu\", \"hidden_size\": 8192,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 28672, \"max_position_embeddings\": 131072,"
      " \"mlp_bias\": false, \"model_type\": \"llama\", \"num_attention_heads\": 64,"
      " \"num_hidden_layers\": 80, \"num_key_value_heads\": 8, \"pretraining_tp\": 1,"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0,"
      " \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"},"
      " \"rope_theta\": 500000.0, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 128256}",
      "1x4096" },
    { "llama-3.1-405b", "meta-llama/Llama-3.1-405B",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 128000, \"eos_token_id\": 128001, \"hidden_act\": \"silu\", \"hidden_size\": 16384,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 53248, \"max_position_embeddings\": 131072,"
      " \"mlp_bias\": false, \"model_type\": \"llama\", \"num_attention_heads\": 128,"
      " \"num_hidden_layers\": 126, \"num_key_value_heads\": 8, \"pretraining_tp\": 1,"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0,"
      " \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"},"
      " \"rope_theta\": 500000.0, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 128256}",
      "1x4096" },
    { "llama-3.2-1b", "meta-llama/Llama-3.2-1B",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 128000, \"eos_token_id\": 128001, \"hidden_act\": \"silu\", \"hidden_size\": 2048,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 8192, \"max_position_embeddings\": 131072,"
      " \"mlp_bias\": false, \"model_type\": \"llama\", \"num_attention_heads\": 32,"
      " \"num_hidden_layers\": 16, \"num_key_value_heads\": 8, \"pretraining_tp\": 1,"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 32.0, \"low_freq_factor\": 1.0,"
      " \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"},"
      " \"rope_theta\": 500000.0, \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 128256, \"head_dim\": 64}",
      "1x4096" },
    { "llama-3.2-3b", "meta-llama/Llama-3.2-3B",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 128000, \"eos_token_id\": 128001, \"hidden_act\": \"silu\", \"hidden_size\": 3072,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 8192, \"max_position_embeddings\": 131072,"
      " \"mlp_bias\": false, \"model_type\": \"llama\", \"num_attention_heads\": 24,"
      " \"num_hidden_layers\": 28, \"num_key_value_heads\": 8, \"pretraining_tp\": 1,"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 32.0, \"low_freq_factor\": 1.0,"
      " \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"},"
      " \"rope_theta\": 500000.0, \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 128256, \"head_dim\": 128}",
      "1x4096" },
    { "llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct",
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, 128009], \"head_dim\": 128,"
      " \"hidden_act\": \"silu\", \"hidden_size\": 8192, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 28672, \"max_position_embeddings\": 131072, \"mlp_bias\": false,"
      " \"model_type\": \"llama\", \"num_attention_heads\": 64, \"num_hidden_layers\": 80,"
      " \"num_key_value_heads\": 8, \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05,"
      " \"rope_scaling\": {\"factor\": 8.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0,"
      " \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}, \"rope_theta\": 500000.0,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"vocab_size\": 128256}",
      "1x4096" },
    { "mistral-7b", "mistralai/Mistral-7B-v0.1",
      "{\"architectures\": [\"MistralForCausalLM\"], \"bos_token_id\": 1, \"eos_token_id\": 2,"
      " \"hidden_act\": \"silu\", \"hidden_size\": 4096, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 14336, \"max_position_embeddings\": 32768, \"model_type\": \"mistral\","
      " \"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8,"
      " \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, \"sliding_window\": 4096,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"vocab_size\": 32000}",
      "1x4096" },
    { "mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1",
      "{\"architectures\": [\"MixtralForCausalLM\"], \"attention_dropout\": 0.0, \"bos_token_id\": 1,"
      " \"eos_token_id\": 2, \"hidden_act\": \"silu\", \"hidden_size\": 4096, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 14336, \"max_position_embeddings\": 32768, \"model_type\": \"mixtral\","
      " \"num_attention_heads\": 32, \"num_experts_per_tok\": 2, \"num_hidden_layers\": 32,"
      " \"num_key_value_heads\": 8, \"num_local_experts\": 8, \"output_router_logits\": false,"
      " \"rms_norm_eps\": 1e-05, \"rope_theta\": 1000000.0, \"router_aux_loss_coef\": 0.02,"
      " \"sliding_window\": null, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 32000}",
      "1x4096" },
    { "mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1",
      "{\"architectures\": [\"MixtralForCausalLM\"], \"attention_dropout\": 0.0, \"bos_token_id\": 1,"
      " \"eos_token_id\": 2, \"hidden_act\": \"silu\", \"hidden_size\": 6144, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 16384, \"max_position_embeddings\": 65536, \"model_type\": \"mixtral\","
      " \"num_attention_heads\": 48, \"num_experts_per_tok\": 2, \"num_hidden_layers\": 56,"
      " \"num_key_value_heads\": 8, \"num_local_experts\": 8, \"output_router_logits\": false,"
      " \"rms_norm_eps\": 1e-05, \"rope_theta\": 1000000.0, \"router_aux_loss_coef\": 0.001,"
      " \"sliding_window\": null, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 32000}",
      "1x4096" },
    { "qwen2-7b", "Qwen/Qwen2-7B",
      "{\"architectures\": [\"Qwen2ForCausalLM\"], \"attention_dropout\": 0.0, \"bos_token_id\": 151643,"
      " \"eos_token_id\": 151643, \"hidden_act\": \"silu\", \"hidden_size\": 3584,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 18944, \"max_position_embeddings\": 131072,"
      " \"max_window_layers\": 28, \"model_type\": \"qwen2\", \"num_attention_heads\": 28,"
      " \"num_hidden_layers\": 28, \"num_key_value_heads\": 4, \"rms_norm_eps\": 1e-06,"
      " \"rope_theta\": 1000000.0, \"sliding_window\": 131072, \"tie_word_embeddings\": false,"
      " \"torch_dtype\": \"bfloat16\", \"use_cache\": true, \"use_sliding_window\": false,"
      " \"vocab_size\": 152064}",
      "1x4096" },
    { "qwen2.5-7b", "Qwen/Qwen2.5-7B",
      "{\"architectures\": [\"Qwen2ForCausalLM\"], \"attention_dropout\": 0.0, \"bos_token_id\": 151643,"
      " \"eos_token_id\": 151643, \"hidden_act\": \"silu\", \"hidden_size\": 3584,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 18944, \"max_position_embeddings\": 131072,"
      " \"max_window_layers\": 28, \"model_type\": \"qwen2\", \"num_attention_heads\": 28,"
      " \"num_hidden_layers\": 28, \"num_key_value_heads\": 4, \"rms_norm_eps\": 1e-06,"
      " \"rope_theta\": 1000000.0, \"sliding_window\": 131072, \"tie_word_embeddings\": false,"
      " \"torch_dtype\": \"bfloat16\", \"use_cache\": true, \"use_sliding_window\": false,"
      " \"vocab_size\": 152064}",
      "1x4096" },
    { "qwen2.5-72b", "Qwen/Qwen2.5-72B",
      "{\"architectures\": [\"Qwen2ForCausalLM\"], \"attention_dropout\": 0.0, \"bos_token_id\": 151643,"
      " \"eos_token_id\": 151643, \"hidden_act\": \"silu\", \"hidden_size\": 8192,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 29568, \"max_position_embeddings\": 131072,"
      " \"max_window_layers\": 80, \"model_type\": \"qwen2\", \"num_attention_heads\": 64,"
      " \"num_hidden_layers\": 80, \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-05,"
      " \"rope_theta\": 1000000.0, \"sliding_window\": 131072, \"tie_word_embeddings\": false,"
      " \"torch_dtype\": \"bfloat16\", \"use_cache\": true, \"use_sliding_window\": false,"
      " \"vocab_size\": 152064}",
      "1x4096" },
    { "qwen3-0.6b", "Qwen/Qwen3-0.6B",
      "{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 151643, \"eos_token_id\": 151645, \"head_dim\": 128, \"hidden_act\": \"silu\","
      " \"hidden_size\": 1024, \"initializer_range\": 0.02, \"intermediate_size\": 3072,"
      " \"max_position_embeddings\": 40960, \"max_window_layers\": 28, \"model_type\": \"qwen3\","
      " \"num_attention_heads\": 16, \"num_hidden_layers\": 28, \"num_key_value_heads\": 8,"
      " \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 1000000, \"sliding_window\": null,"
      " \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"use_sliding_window\": false, \"vocab_size\": 151936}",
      "1x4096" },
    { "qwen3-8b", "Qwen/Qwen3-8B",
      "{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 151643, \"eos_token_id\": 151645, \"head_dim\": 128, \"hidden_act\": \"silu\","
      " \"hidden_size\": 4096, \"initializer_range\": 0.02, \"intermediate_size\": 12288,"
      " \"max_position_embeddings\": 40960, \"max_window_layers\": 36, \"model_type\": \"qwen3\","
      " \"num_attention_heads\": 32, \"num_hidden_layers\": 36, \"num_key_value_heads\": 8,"
      " \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 1000000, \"sliding_window\": null,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"use_sliding_window\": false, \"vocab_size\": 151936}",
      "1x4096" },
    { "qwen3-32b", "Qwen/Qwen3-32B",
      "{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 151643, \"eos_token_id\": 151645, \"head_dim\": 128, \"hidden_act\": \"silu\","
      " \"hidden_size\": 5120, \"initializer_range\": 0.02, \"intermediate_size\": 25600,"
      " \"max_position_embeddings\": 40960, \"max_window_layers\": 64, \"model_type\": \"qwen3\","
      " \"num_attention_heads\": 64, \"num_hidden_layers\": 64, \"num_key_value_heads\": 8,"
      " \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 1000000, \"sliding_window\": null,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"use_sliding_window\": false, \"vocab_size\": 151936}",
      "1x4096" },
    { "qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B",
      "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 151643, \"decoder_sparse_step\": 1, \"eos_token_id\": 151645, \"head_dim\": 128,"
      " \"hidden_act\": \"silu\", \"hidden_size\": 2048, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 6144, \"max_position_embeddings\": 40960, \"max_window_layers\": 48,"
      " \"mlp_only_layers\": [], \"model_type\": \"qwen3_moe\", \"moe_intermediate_size\": 768,"
      " \"norm_topk_prob\": true, \"num_attention_heads\": 32, \"num_experts\": 128,"
      " \"num_experts_per_tok\": 8, \"num_hidden_layers\": 48, \"num_key_value_heads\": 4,"
      " \"output_router_logits\": false, \"rms_norm_eps\": 1e-06, \"rope_scaling\": null,"
      " \"rope_theta\": 1000000.0, \"router_aux_loss_coef\": 0.001, \"sliding_window\": null,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"use_sliding_window\": false, \"vocab_size\": 151936}",
      "1x4096" },
    { "qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B",
      "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 151643, \"decoder_sparse_step\": 1, \"eos_token_id\": 151645, \"head_dim\": 128,"
      " \"hidden_act\": \"silu\", \"hidden_size\": 4096, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 12288, \"max_position_embeddings\": 40960, \"max_window_layers\": 94,"
      " \"mlp_only_layers\": [], \"model_type\": \"qwen3_moe\", \"moe_intermediate_size\": 1536,"
      " \"norm_topk_prob\": true, \"num_attention_heads\": 64, \"num_experts\": 128,"
      " \"num_experts_per_tok\": 8, \"num_hidden_layers\": 94, \"num_key_value_heads\": 4,"
      " \"output_router_logits\": false, \"rms_norm_eps\": 1e-06, \"rope_scaling\": null,"
      " \"rope_theta\": 1000000.0, \"router_aux_loss_coef\": 0.001, \"sliding_window\": null,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"use_sliding_window\": false, \"vocab_size\": 151936}",
      "1x4096" },
    { "olmo-2-7b", "allenai/OLMo-2-1124-7B",
      "{\"architectures\": [\"Olmo2ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"eos_token_id\": 100257, \"hidden_act\": \"silu\", \"hidden_size\": 4096,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 11008, \"max_position_embeddings\": 4096,"
      " \"model_type\": \"olmo2\", \"num_attention_heads\": 32, \"num_hidden_layers\": 32,"
      " \"num_key_value_heads\": 32, \"pad_token_id\": 100277, \"rms_norm_eps\": 1e-06,"
      " \"rope_scaling\": null, \"rope_theta\": 500000, \"tie_word_embeddings\": false,"
      " \"torch_dtype\": \"float32\", \"use_cache\": true, \"vocab_size\": 100352}",
      "1x4096" },
    { "smollm3-3b", "HuggingFaceTB/SmolLM3-3B",
      "{\"architectures\": [\"SmolLM3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": null, \"eos_token_id\": 128012, \"hidden_act\": \"silu\", \"hidden_size\": 2048,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 11008, \"layer_types\": [\"full_attention\","
      " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\","
      " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\","
      " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\","
      " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\","
      " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\","
      " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\","
      " \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\"],"
      " \"max_position_embeddings\": 65536, \"max_window_layers\": 28, \"mlp_bias\": false,"
      " \"model_type\": \"smollm3\", \"no_rope_layer_interval\": 4, \"no_rope_layers\": [1, 1, 1, 0, 1, 1,"
      " 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0],"
      " \"num_attention_heads\": 16, \"num_hidden_layers\": 36, \"num_key_value_heads\": 4,"
      " \"pad_token_id\": 128004, \"pretraining_tp\": 2, \"rms_norm_eps\": 1e-06, \"rope_scaling\": null,"
      " \"rope_theta\": 5000000.0, \"sliding_window\": null, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": false, \"use_sliding_window\": false, \"vocab_size\": 128256}",
      "1x4096" },
    { "gemma-2b", "google/gemma-2b",
      "{\"architectures\": [\"GemmaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 2, \"eos_token_id\": 1, \"head_dim\": 256, \"hidden_act\": \"gelu\","
      " \"hidden_size\": 2048, \"initializer_range\": 0.02, \"intermediate_size\": 16384,"
      " \"max_position_embeddings\": 8192, \"model_type\": \"gemma\", \"num_attention_heads\": 8,"
      " \"num_hidden_layers\": 18, \"num_key_value_heads\": 1, \"pad_token_id\": 0, \"rms_norm_eps\": 1e-06,"
      " \"rope_scaling\": null, \"rope_theta\": 10000.0, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"vocab_size\": 256000}",
      "1x4096" },
    { "gemma-7b", "google/gemma-7b",
      "{\"architectures\": [\"GemmaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 2, \"eos_token_id\": 1, \"head_dim\": 256, \"hidden_act\": \"gelu\","
      " \"hidden_size\": 3072, \"initializer_range\": 0.02, \"intermediate_size\": 24576,"
      " \"max_position_embeddings\": 8192, \"model_type\": \"gemma\", \"num_attention_heads\": 16,"
      " \"num_hidden_layers\": 28, \"num_key_value_heads\": 16, \"pad_token_id\": 0,"
      " \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 10000.0,"
      " \"torch_dtype\": \"bfloat16\", \"use_cache\": true, \"vocab_size\": 256000}",
      "1x4096" },
    { "gemma-2-9b", "google/gemma-2-9b",
      "{\"architectures\": [\"Gemma2ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"attn_logit_softcapping\": 50.0, \"bos_token_id\": 2, \"cache_implementation\": \"hybrid\","
      " \"eos_token_id\": 1, \"final_logit_softcapping\": 30.0, \"head_dim\": 256,"
      " \"hidden_act\": \"gelu_pytorch_tanh\", \"hidden_activation\": \"gelu_pytorch_tanh\","
      " \"hidden_size\": 3584, \"initializer_range\": 0.02, \"intermediate_size\": 14336,"
      " \"max_position_embeddings\": 8192, \"model_type\": \"gemma2\", \"num_attention_heads\": 16,"
      " \"num_hidden_layers\": 42, \"num_key_value_heads\": 8, \"pad_token_id\": 0,"
      " \"query_pre_attn_scalar\": 256, \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0,"
      " \"sliding_window\": 4096, \"torch_dtype\": \"float32\", \"use_cache\": true, \"vocab_size\": 256000}",
      "1x4096" },
    { "gemma-2-27b", "google/gemma-2-27b",
      "{\"architectures\": [\"Gemma2ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"attn_logit_softcapping\": 50.0, \"bos_token_id\": 2, \"cache_implementation\": \"hybrid\","
      " \"eos_token_id\": 1, \"final_logit_softcapping\": 30.0, \"head_dim\": 128,"
      " \"hidden_act\": \"gelu_pytorch_tanh\", \"hidden_activation\": \"gelu_pytorch_tanh\","
      " \"hidden_size\": 4608, \"initializer_range\": 0.02, \"intermediate_size\": 36864,"
      " \"max_position_embeddings\": 8192, \"model_type\": \"gemma2\", \"num_attention_heads\": 32,"
      " \"num_hidden_layers\": 46, \"num_key_value_heads\": 16, \"pad_token_id\": 0,"
      " \"query_pre_attn_scalar\": 144, \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0,"
      " \"sliding_window\": 4096, \"torch_dtype\": \"float32\", \"use_cache\": true, \"vocab_size\": 256000}",
      "1x4096" },
    { "phi-3-mini", "microsoft/Phi-3-mini-4k-instruct",
      "{\"architectures\": [\"Phi3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 1, \"embd_pdrop\": 0.0, \"eos_token_id\": 32000, \"hidden_act\": \"silu\","
      " \"hidden_size\": 3072, \"initializer_range\": 0.02, \"intermediate_size\": 8192,"
      " \"max_position_embeddings\": 4096, \"model_type\": \"phi3\", \"num_attention_heads\": 32,"
      " \"num_hidden_layers\": 32, \"num_key_value_heads\": 32,"
      " \"original_max_position_embeddings\": 4096, \"pad_token_id\": 32000, \"resid_pdrop\": 0.0,"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": null, \"rope_theta\": 10000.0, \"sliding_window\": 2047,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"vocab_size\": 32064}",
      "1x4096" },
    { "phi-3.5-mini", "microsoft/Phi-3.5-mini-instruct",
      "{\"architectures\": [\"Phi3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 1, \"embd_pdrop\": 0.0, \"eos_token_id\": 32000, \"hidden_act\": \"silu\","
      " \"hidden_size\": 3072, \"initializer_range\": 0.02, \"intermediate_size\": 8192,"
      " \"max_position_embeddings\": 131072, \"model_type\": \"phi3\", \"num_attention_heads\": 32,"
      " \"num_hidden_layers\": 32, \"num_key_value_heads\": 32,"
      " \"original_max_position_embeddings\": 4096, \"pad_token_id\": 32000, \"resid_pdrop\": 0.0,"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"long_factor\": [1.0800000429153442,"
      " 1.1100000143051147, 1.1399999856948853, 1.340000033378601, 1.5899999141693115,"
      " 1.600000023841858, 1.6200000047683716, 2.620000123977661, 3.2300000190734863,"
      " 3.2300000190734863, 4.789999961853027, 7.400000095367432, 7.700000286102295,"
      " 9.09000015258789, 12.199999809265137, 17.670000076293945, 24.46000099182129,"
      " 28.57000160217285, 30.420001983642578, 30.840002059936523, 32.590003967285156,"
      " 32.93000411987305, 42.320003509521484, 44.96000289916992, 50.340003967285156,"
      " 50.45000457763672, 57.55000305175781, 57.93000411987305, 58.21000289916992,"
      " 60.1400032043457, 62.61000442504883, 62.62000274658203, 62.71000289916992, 63.1400032043457,"
      " 63.1400032043457, 63.77000427246094, 63.93000411987305, 63.96000289916992,"
      " 63.970001220703125, 64.02999877929688, 64.06999969482422, 64.08000183105469,"
      " 64.12000274658203, 64.41000366210938, 64.4800033569336, 64.51000213623047,"
      " 64.52999877929688, 64.83999633789062], \"short_factor\": [1.0, 1.0199999809265137,"
      " 1.0299999713897705, 1.0299999713897705, 1.0499999523162842, 1.0499999523162842,"
      " 1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0699999332427979,"
      " 1.0999999046325684, 1.1099998950958252, 1.1599998474121094, 1.1599998474121094,"
      " 1.1699998378753662, 1.2899998426437378, 1.339999794960022, 1.679999828338623,"
      " 1.7899998426437378, 1.8199998140335083, 1.8499997854232788, 1.8799997568130493,"
      " 1.9099997282028198, 1.9399996995925903, 1.9899996519088745, 2.0199997425079346,"
      " 2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,"
      " 2.0199997425079346, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,"
      " 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,"
      " 2.0299997329711914, 2.0299997329711914, 2.0799996852874756, 2.0899996757507324,"
      " 2.189999580383301, 2.2199995517730713, 2.5899994373321533, 2.729999542236328,"
      " 2.749999523162842, 2.8399994373321533], \"type\": \"longrope\"}, \"rope_theta\": 10000.0,"
      " \"sliding_window\": 262144, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 32064}",
      "1x4096" },
    { "phi-4", "microsoft/phi-4",
      "{\"architectures\": [\"Phi3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 100257, \"embd_pdrop\": 0.0, \"eos_token_id\": 100265, \"hidden_act\": \"silu\","
      " \"hidden_size\": 5120, \"initializer_range\": 0.02, \"intermediate_size\": 17920,"
      " \"max_position_embeddings\": 16384, \"model_type\": \"phi3\", \"num_attention_heads\": 40,"
      " \"num_hidden_layers\": 40, \"num_key_value_heads\": 10,"
      " \"original_max_position_embeddings\": 16384, \"pad_token_id\": 100349, \"resid_pdrop\": 0.0,"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": null, \"rope_theta\": 250000, \"sliding_window\": null,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"vocab_size\": 100352}",
      "1x4096" },
    { "phi-2", "microsoft/phi-2",
      "{\"architectures\": [\"PhiForCausalLM\"], \"attention_dropout\": 0.0, \"bos_token_id\": 50256,"
      " \"embd_pdrop\": 0.0, \"eos_token_id\": 50256, \"hidden_act\": \"gelu_new\", \"hidden_size\": 2560,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 10240, \"layer_norm_eps\": 1e-05,"
      " \"max_position_embeddings\": 2048, \"model_type\": \"phi\", \"num_attention_heads\": 32,"
      " \"num_hidden_layers\": 32, \"num_key_value_heads\": 32, \"partial_rotary_factor\": 0.4,"
      " \"qk_layernorm\": false, \"resid_pdrop\": 0.1, \"rope_scaling\": null, \"rope_theta\": 10000.0,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\", \"use_cache\": true,"
      " \"vocab_size\": 51200}",
      "1x2048" },
    { "gpt2", "openai-community/gpt2",
      "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], \"attn_pdrop\": 0.1,"
      " \"bos_token_id\": 50256, \"embd_pdrop\": 0.1, \"eos_token_id\": 50256, \"initializer_range\": 0.02,"
      " \"layer_norm_epsilon\": 1e-05, \"model_type\": \"gpt2\", \"n_ctx\": 1024, \"n_embd\": 768,"
      " \"n_head\": 12, \"n_layer\": 12, \"n_positions\": 1024, \"resid_pdrop\": 0.1,"
      " \"summary_activation\": null, \"summary_first_dropout\": 0.1, \"summary_proj_to_labels\": true,"
      " \"summary_type\": \"cls_index\", \"summary_use_proj\": true, \"vocab_size\": 50257}",
      "1x1024" },
    { "gpt2-medium", "openai-community/gpt2-medium",
      "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], \"attn_pdrop\": 0.1,"
      " \"bos_token_id\": 50256, \"embd_pdrop\": 0.1, \"eos_token_id\": 50256, \"initializer_range\": 0.02,"
      " \"layer_norm_epsilon\": 1e-05, \"model_type\": \"gpt2\", \"n_ctx\": 1024, \"n_embd\": 1024,"
      " \"n_head\": 16, \"n_layer\": 24, \"n_positions\": 1024, \"resid_pdrop\": 0.1,"
      " \"summary_activation\": null, \"summary_first_dropout\": 0.1, \"summary_proj_to_labels\": true,"
      " \"summary_type\": \"cls_index\", \"summary_use_proj\": true, \"vocab_size\": 50257}",
      "1x1024" },
    { "gpt2-large", "openai-community/gpt2-large",
      "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], \"attn_pdrop\": 0.1,"
      " \"bos_token_id\": 50256, \"embd_pdrop\": 0.1, \"eos_token_id\": 50256, \"initializer_range\": 0.02,"
      " \"layer_norm_epsilon\": 1e-05, \"model_type\": \"gpt2\", \"n_ctx\": 1024, \"n_embd\": 1280,"
      " \"n_head\": 20, \"n_layer\": 36, \"n_positions\": 1024, \"resid_pdrop\": 0.1,"
      " \"summary_activation\": null, \"summary_first_dropout\": 0.1, \"summary_proj_to_labels\": true,"
      " \"summary_type\": \"cls_index\", \"summary_use_proj\": true, \"vocab_size\": 50257}",
      "1x1024" },
    { "gpt2-xl", "openai-community/gpt2-xl",
      "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], \"attn_pdrop\": 0.1,"
      " \"bos_token_id\": 50256, \"embd_pdrop\": 0.1, \"eos_token_id\": 50256, \"initializer_range\": 0.02,"
      " \"layer_norm_epsilon\": 1e-05, \"model_type\": \"gpt2\", \"n_ctx\": 1024, \"n_embd\": 1600,"
      " \"n_head\": 25, \"n_layer\": 48, \"n_positions\": 1024, \"resid_pdrop\": 0.1,"
      " \"summary_activation\": null, \"summary_first_dropout\": 0.1, \"summary_proj_to_labels\": true,"
      " \"summary_type\": \"cls_index\", \"summary_use_proj\": true, \"vocab_size\": 50257}",
      "1x1024" },
    { "bert-base-uncased", "google-bert/bert-base-uncased",
      "{\"architectures\": [\"BertForMaskedLM\"], \"attention_probs_dropout_prob\": 0.1,"
      " \"gradient_checkpointing\": false, \"hidden_act\": \"gelu\", \"hidden_dropout_prob\": 0.1,"
      " \"hidden_size\": 768, \"initializer_range\": 0.02, \"intermediate_size\": 3072,"
      " \"layer_norm_eps\": 1e-12, \"max_position_embeddings\": 512, \"model_type\": \"bert\","
      " \"num_attention_heads\": 12, \"num_hidden_layers\": 12, \"pad_token_id\": 0,"
      " \"position_embedding_type\": \"absolute\", \"type_vocab_size\": 2, \"use_cache\": true,"
      " \"vocab_size\": 30522}",
      "1x512" },
    { "bert-large-uncased", "google-bert/bert-large-uncased",
      "{\"architectures\": [\"BertForMaskedLM\"], \"attention_probs_dropout_prob\": 0.1,"
      " \"gradient_checkpointing\": false, \"hidden_act\": \"gelu\", \"hidden_dropout_prob\": 0.1,"
      " \"hidden_size\": 1024, \"initializer_range\": 0.02, \"intermediate_size\": 4096,"
      " \"layer_norm_eps\": 1e-12, \"max_position_embeddings\": 512, \"model_type\": \"bert\","
      " \"num_attention_heads\": 16, \"num_hidden_layers\": 24, \"pad_token_id\": 0,"
      " \"position_embedding_type\": \"absolute\", \"type_vocab_size\": 2, \"use_cache\": true,"
      " \"vocab_size\": 30522}",
      "1x512" },
    { "vit-base-patch16-224", "google/vit-base-patch16-224",
      "{\"architectures\": [\"ViTForImageClassification\"], \"attention_probs_dropout_prob\": 0.0,"
      " \"hidden_act\": \"gelu\", \"hidden_dropout_prob\": 0.0, \"hidden_size\": 768, \"image_size\": 224,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 3072, \"layer_norm_eps\": 1e-12,"
      " \"model_type\": \"vit\", \"num_attention_heads\": 12, \"num_channels\": 3, \"num_hidden_layers\": 12,"
      " \"num_labels\": 1000, \"patch_size\": 16, \"qkv_bias\": true}",
      "1x3x224x224" },
    { "pythia-160m", "EleutherAI/pythia-160m",
      "{\"architectures\": [\"GPTNeoXForCausalLM\"], \"bos_token_id\": 0, \"eos_token_id\": 0,"
      " \"hidden_act\": \"gelu\", \"hidden_size\": 768, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 3072, \"layer_norm_eps\": 1e-05, \"max_position_embeddings\": 2048,"
      " \"model_type\": \"gpt_neox\", \"num_attention_heads\": 12, \"num_hidden_layers\": 12,"
      " \"rotary_emb_base\": 10000, \"rotary_pct\": 0.25, \"tie_word_embeddings\": false,"
      " \"torch_dtype\": \"float16\", \"use_cache\": true, \"use_parallel_residual\": true,"
      " \"vocab_size\": 50304}",
      "1x2048" },
    { "roberta-base", "FacebookAI/roberta-base",
      "{\"architectures\": [\"RobertaForMaskedLM\"], \"attention_probs_dropout_prob\": 0.1,"
      " \"bos_token_id\": 0, \"eos_token_id\": 2, \"hidden_act\": \"gelu\", \"hidden_dropout_prob\": 0.1,"
      " \"hidden_size\": 768, \"initializer_range\": 0.02, \"intermediate_size\": 3072,"
      " \"layer_norm_eps\": 1e-05, \"max_position_embeddings\": 514, \"model_type\": \"roberta\","
      " \"num_attention_heads\": 12, \"num_hidden_layers\": 12, \"pad_token_id\": 1,"
      " \"type_vocab_size\": 1, \"vocab_size\": 50265}",
      "1x512" },
    { "xlm-roberta-large", "FacebookAI/xlm-roberta-large",
      "{\"architectures\": [\"XLMRobertaForMaskedLM\"], \"attention_probs_dropout_prob\": 0.1,"
      " \"bos_token_id\": 0, \"eos_token_id\": 2, \"hidden_act\": \"gelu\", \"hidden_dropout_prob\": 0.1,"
      " \"hidden_size\": 1024, \"initializer_range\": 0.02, \"intermediate_size\": 4096,"
      " \"layer_norm_eps\": 1e-05, \"max_position_embeddings\": 514, \"model_type\": \"xlm-roberta\","
      " \"num_attention_heads\": 16, \"num_hidden_layers\": 24, \"output_past\": true, \"pad_token_id\": 1,"
      " \"type_vocab_size\": 1, \"vocab_size\": 250002}",
      "1x512" },
    { "modernbert-base", "answerdotai/ModernBERT-base",
      "{\"architectures\": [\"ModernBertForMaskedLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"bos_token_id\": 50281, \"classifier_activation\": \"gelu\", \"classifier_bias\": false,"
      " \"classifier_dropout\": 0.0, \"classifier_pooling\": \"mean\", \"cls_token_id\": 50281,"
      " \"decoder_bias\": true, \"deterministic_flash_attn\": false, \"embedding_dropout\": 0.0,"
      " \"eos_token_id\": 50282, \"global_attn_every_n_layers\": 3, \"global_rope_theta\": 160000.0,"
      " \"gradient_checkpointing\": false, \"hidden_activation\": \"gelu\", \"hidden_size\": 768,"
      " \"initializer_cutoff_factor\": 2.0, \"initializer_range\": 0.02, \"intermediate_size\": 1152,"
      " \"layer_norm_eps\": 1e-05, \"local_attention\": 128, \"local_rope_theta\": 10000.0,"
      " \"max_position_embeddings\": 8192, \"mlp_bias\": false, \"mlp_dropout\": 0.0,"
      " \"model_type\": \"modernbert\", \"norm_bias\": false, \"norm_eps\": 1e-05,"
      " \"num_attention_heads\": 12, \"num_hidden_layers\": 22, \"pad_token_id\": 50283,"
      " \"position_embedding_type\": \"absolute\", \"sep_token_id\": 50282, \"torch_dtype\": \"float32\","
      " \"transformers_version\": \"4.47.0.dev0\", \"vocab_size\": 50368}",
      "1x8192" },
    { "t5-base", "google-t5/t5-base",
      "{\"architectures\": [\"T5ForConditionalGeneration\"], \"d_ff\": 3072, \"d_kv\": 64, \"d_model\": 768,"
      " \"decoder_start_token_id\": 0, \"dropout_rate\": 0.1, \"eos_token_id\": 1, \"initializer_factor\": 1.0,"
      " \"is_encoder_decoder\": true, \"layer_norm_epsilon\": 1e-06, \"model_type\": \"t5\", \"n_positions\": 512,"
      " \"num_heads\": 12, \"num_layers\": 12, \"output_past\": true, \"pad_token_id\": 0,"
      " \"relative_attention_num_buckets\": 32, \"vocab_size\": 32128}",
      "1x512+1x128" },
    { "flan-t5-base", "google/flan-t5-base",
      "{\"architectures\": [\"T5ForConditionalGeneration\"], \"d_ff\": 2048, \"d_kv\": 64, \"d_model\": 768,"
      " \"decoder_start_token_id\": 0, \"dense_act_fn\": \"gelu_new\", \"dropout_rate\": 0.1, \"eos_token_id\": 1,"
      " \"feed_forward_proj\": \"gated-gelu\", \"initializer_factor\": 1.0, \"is_encoder_decoder\": true,"
      " \"is_gated_act\": true, \"layer_norm_epsilon\": 1e-06, \"model_type\": \"t5\", \"n_positions\": 512,"
      " \"num_decoder_layers\": 12, \"num_heads\": 12, \"num_layers\": 12, \"output_past\": true,"
      " \"pad_token_id\": 0, \"relative_attention_max_distance\": 128, \"relative_attention_num_buckets\": 32,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\", \"use_cache\": true, \"vocab_size\": 32128}",
      "1x512+1x128" },
    /* gpt-oss: the published config.json names no dtype; its non-expert tensors are
     * bfloat16, so torch_dtype says so here (the experts are mxfp4: quantization_config). */
    { "gpt-oss-20b", "openai/gpt-oss-20b",
      "{\"architectures\": [\"GptOssForCausalLM\"], \"attention_bias\": true, \"attention_dropout\": 0.0,"
      " \"eos_token_id\": 200002, \"experts_per_token\": 4, \"head_dim\": 64, \"hidden_act\": \"silu\","
      " \"hidden_size\": 2880, \"initial_context_length\": 4096, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 2880, \"layer_types\": [\"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\"], \"max_position_embeddings\": 131072,"
      " \"model_type\": \"gpt_oss\", \"num_attention_heads\": 64, \"num_experts_per_tok\": 4,"
      " \"num_hidden_layers\": 24, \"num_key_value_heads\": 8, \"num_local_experts\": 32,"
      " \"output_router_logits\": false, \"pad_token_id\": 199999,"
      " \"quantization_config\": {\"modules_to_not_convert\": [\"model.layers.*.self_attn\","
      " \"model.layers.*.mlp.router\", \"model.embed_tokens\", \"lm_head\"], \"quant_method\": \"mxfp4\"},"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": 32.0,"
      " \"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", \"truncate\": false},"
      " \"rope_theta\": 150000, \"router_aux_loss_coef\": 0.9, \"sliding_window\": 128, \"swiglu_limit\": 7.0,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"vocab_size\": 201088}",
      "1x4096" },
    { "gpt-oss-120b", "openai/gpt-oss-120b",
      "{\"architectures\": [\"GptOssForCausalLM\"], \"attention_bias\": true, \"attention_dropout\": 0.0,"
      " \"eos_token_id\": 200002, \"experts_per_token\": 4, \"head_dim\": 64, \"hidden_act\": \"silu\","
      " \"hidden_size\": 2880, \"initial_context_length\": 4096, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 2880, \"layer_types\": [\"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
      " \"sliding_attention\", \"full_attention\"], \"max_position_embeddings\": 131072,"
      " \"model_type\": \"gpt_oss\", \"num_attention_heads\": 64, \"num_experts_per_tok\": 4,"
      " \"num_hidden_layers\": 36, \"num_key_value_heads\": 8, \"num_local_experts\": 128,"
      " \"output_router_logits\": false, \"pad_token_id\": 199999,"
      " \"quantization_config\": {\"modules_to_not_convert\": [\"model.layers.*.self_attn\","
      " \"model.layers.*.mlp.router\", \"model.embed_tokens\", \"lm_head\"], \"quant_method\": \"mxfp4\"},"
      " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": 32.0,"
      " \"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", \"truncate\": false},"
      " \"rope_theta\": 150000, \"router_aux_loss_coef\": 0.9, \"sliding_window\": 128, \"swiglu_limit\": 7.0,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"use_cache\": true,"
      " \"vocab_size\": 201088}",
      "1x4096" },
    /* Llama 4 Scout: the text_config of the published Llama4ForConditionalGeneration config,
     * as a llama4_text Llama4ForCausalLM (the vision tower and projector are not counted). */
    { "llama-4-scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct",
      "{\"architectures\": [\"Llama4ForCausalLM\"], \"attention_bias\": false, \"attention_chunk_size\": 8192,"
      " \"attention_dropout\": 0.0, \"attn_scale\": 0.1, \"attn_temperature_tuning\": true,"
      " \"bos_token_id\": 200000, \"eos_token_id\": [200001, 200007, 200008], \"floor_scale\": 8192,"
      " \"for_llm_compressor\": false, \"head_dim\": 128, \"hidden_act\": \"silu\", \"hidden_size\": 5120,"
      " \"initializer_range\": 0.02, \"interleave_moe_layer_step\": 1, \"intermediate_size\": 8192,"
      " \"intermediate_size_mlp\": 16384, \"max_position_embeddings\": 10485760,"
      " \"model_type\": \"llama4_text\", \"no_rope_layers\": [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0,"
      " 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0],"
      " \"num_attention_heads\": 40, \"num_experts_per_tok\": 1, \"num_hidden_layers\": 48,"
      " \"num_key_value_heads\": 8, \"num_local_experts\": 16, \"output_router_logits\": false,"
      " \"pad_token_id\": 200018, \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 16.0,"
      " \"high_freq_factor\": 1.0, \"low_freq_factor\": 1.0, \"original_max_position_embeddings\": 8192,"
      " \"rope_type\": \"llama3\"}, \"rope_theta\": 500000.0, \"router_aux_loss_coef\": 0.001,"
      " \"router_jitter_noise\": 0.0, \"torch_dtype\": \"bfloat16\", \"use_cache\": true, \"use_qk_norm\": true,"
      " \"vocab_size\": 202048}",
      "1x4096" },
    /* deepseek_v3: DeepSeek-V3 (671B; its checkpoint's 62nd layer, the
       multi-token-prediction module model.layers.61, is not built, as
       transformers does not) and Kimi-K2 (1.04T: DeepseekV3 with 384
       experts, 64 heads; the published config.json says "kimi_k2", the
       model_type of its remote code, which is DeepseekV3's: the family
       table reads both).  Both ship fp8 block-wise weights. */
    { "deepseek-v3", "deepseek-ai/DeepSeek-V3",
      "{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"aux_loss_alpha\": 0.001, \"bos_token_id\": 0, \"eos_token_id\": 1, \"ep_size\": 1,"
      " \"first_k_dense_replace\": 3, \"hidden_act\": \"silu\", \"hidden_size\": 7168,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 18432, \"kv_lora_rank\": 512,"
      " \"max_position_embeddings\": 163840, \"model_type\": \"deepseek_v3\", \"moe_intermediate_size\": 2048,"
      " \"moe_layer_freq\": 1, \"n_group\": 8, \"n_routed_experts\": 256, \"n_shared_experts\": 1,"
      " \"norm_topk_prob\": true, \"num_attention_heads\": 128, \"num_experts_per_tok\": 8,"
      " \"num_hidden_layers\": 61, \"num_key_value_heads\": 128, \"num_nextn_predict_layers\": 1,"
      " \"q_lora_rank\": 1536, \"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64,"
      " \"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"quant_method\": \"fp8\","
      " \"weight_block_size\": [128, 128]}, \"rms_norm_eps\": 1e-06, \"rope_scaling\": {\"beta_fast\": 32,"
      " \"beta_slow\": 1, \"factor\": 40, \"mscale\": 1.0, \"mscale_all_dim\": 1.0,"
      " \"original_max_position_embeddings\": 4096, \"type\": \"yarn\"}, \"rope_theta\": 10000,"
      " \"routed_scaling_factor\": 2.5, \"scoring_func\": \"sigmoid\", \"seq_aux\": true,"
      " \"tie_word_embeddings\": false, \"topk_group\": 4, \"topk_method\": \"noaux_tc\","
      " \"torch_dtype\": \"bfloat16\", \"use_cache\": true, \"v_head_dim\": 128, \"vocab_size\": 129280}",
      "1x4096" },
    { "kimi-k2", "moonshotai/Kimi-K2-Instruct",
      "{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"aux_loss_alpha\": 0.001, \"bos_token_id\": 163584, \"eos_token_id\": 163585,"
      " \"first_k_dense_replace\": 1, \"hidden_act\": \"silu\", \"hidden_size\": 7168,"
      " \"initializer_range\": 0.02, \"intermediate_size\": 18432, \"kv_lora_rank\": 512,"
      " \"max_position_embeddings\": 131072, \"model_type\": \"kimi_k2\", \"moe_intermediate_size\": 2048,"
      " \"moe_layer_freq\": 1, \"n_group\": 1, \"n_routed_experts\": 384, \"n_shared_experts\": 1,"
      " \"norm_topk_prob\": true, \"num_attention_heads\": 64, \"num_experts_per_tok\": 8,"
      " \"num_hidden_layers\": 61, \"num_key_value_heads\": 64, \"num_nextn_predict_layers\": 0,"
      " \"pretraining_tp\": 1, \"q_lora_rank\": 1536, \"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64,"
      " \"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"quant_method\": \"fp8\","
      " \"weight_block_size\": [128, 128]}, \"rms_norm_eps\": 1e-06, \"rope_scaling\": {\"beta_fast\": 1.0,"
      " \"beta_slow\": 1.0, \"factor\": 32.0, \"mscale\": 1.0, \"mscale_all_dim\": 1.0,"
      " \"original_max_position_embeddings\": 4096, \"type\": \"yarn\"}, \"rope_theta\": 50000.0,"
      " \"routed_scaling_factor\": 2.827, \"scoring_func\": \"sigmoid\", \"seq_aux\": true,"
      " \"tie_word_embeddings\": false, \"topk_group\": 1, \"topk_method\": \"noaux_tc\","
      " \"torch_dtype\": \"bfloat16\", \"use_cache\": true, \"v_head_dim\": 128, \"vocab_size\": 163840}",
      "1x4096" },
    { "gemma-3-1b", "google/gemma-3-1b-it",
      "{\"architectures\": [\"Gemma3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"attn_logit_softcapping\": null, \"bos_token_id\": 2, \"cache_implementation\": \"hybrid\","
      " \"eos_token_id\": [1, 106], \"final_logit_softcapping\": null, \"head_dim\": 256,"
      " \"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": 1152, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 6912, \"max_position_embeddings\": 32768, \"model_type\": \"gemma3_text\","
      " \"num_attention_heads\": 4, \"num_hidden_layers\": 26, \"num_key_value_heads\": 1,"
      " \"pad_token_id\": 0, \"query_pre_attn_scalar\": 256, \"rms_norm_eps\": 1e-06,"
      " \"rope_local_base_freq\": 10000, \"rope_scaling\": null, \"rope_theta\": 1000000,"
      " \"sliding_window\": 512, \"sliding_window_pattern\": 6, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"vocab_size\": 262144}",
      "1x4096" },
    /* the text model only (mtk does not model the SigLIP vision tower) */
    { "gemma-3-27b", "google/gemma-3-27b-it",
      "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"boi_token_index\": 255999,"
      " \"eoi_token_index\": 256000, \"eos_token_id\": [1, 106], \"image_token_index\": 262144,"
      " \"initializer_range\": 0.02, \"mm_tokens_per_image\": 256, \"model_type\": \"gemma3\","
      " \"text_config\": {\"head_dim\": 128, \"hidden_size\": 5376, \"intermediate_size\": 21504,"
      " \"model_type\": \"gemma3_text\", \"num_attention_heads\": 32, \"num_hidden_layers\": 62,"
      " \"num_key_value_heads\": 16, \"query_pre_attn_scalar\": 168,"
      " \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, \"sliding_window\": 1024},"
      " \"torch_dtype\": \"bfloat16\","
      " \"vision_config\": {\"hidden_size\": 1152, \"image_size\": 896, \"intermediate_size\": 4304,"
      " \"model_type\": \"siglip_vision_model\", \"num_attention_heads\": 16, \"num_hidden_layers\": 27,"
      " \"patch_size\": 14, \"vision_use_head\": false}}",
      "1x4096" },
    /* the text model only (mtk does not model the Pixtral vision tower);
       "tie_word_embeddings": false added: transformers 5 ties a mistral3
       lm_head by the top-level flag (default true), the checkpoint holds its
       own lm_head */
    { "mistral-small-3.1", "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
      "{\"architectures\": [\"Mistral3ForConditionalGeneration\"], \"image_token_index\": 10,"
      " \"model_type\": \"mistral3\", \"multimodal_projector_bias\": false,"
      " \"projector_hidden_act\": \"gelu\", \"spatial_merge_size\": 2,"
      " \"text_config\": {\"attention_dropout\": 0.0, \"head_dim\": 128, \"hidden_act\": \"silu\","
      " \"hidden_size\": 5120, \"initializer_range\": 0.02, \"intermediate_size\": 32768,"
      " \"max_position_embeddings\": 131072, \"model_type\": \"mistral\", \"num_attention_heads\": 32,"
      " \"num_hidden_layers\": 40, \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-05,"
      " \"rope_theta\": 1000000000.0, \"sliding_window\": null, \"use_cache\": true,"
      " \"vocab_size\": 131072}, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
      " \"vision_config\": {\"attention_dropout\": 0.0, \"head_dim\": 64, \"hidden_act\": \"silu\","
      " \"hidden_size\": 1024, \"image_size\": 1540, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 4096, \"model_type\": \"pixtral\", \"num_attention_heads\": 16,"
      " \"num_channels\": 3, \"num_hidden_layers\": 24, \"patch_size\": 14, \"rope_theta\": 10000.0},"
      " \"vision_feature_layer\": -1}",
      "1x4096" },
    { "glm-4.5-air", "zai-org/GLM-4.5-Air",
      "{\"architectures\": [\"Glm4MoeForCausalLM\"], \"attention_bias\": true, \"attention_dropout\": 0.0,"
      " \"eos_token_id\": [151329, 151336, 151338], \"first_k_dense_replace\": 1, \"head_dim\": 128,"
      " \"hidden_act\": \"silu\", \"hidden_size\": 4096, \"initializer_range\": 0.02,"
      " \"intermediate_size\": 10944, \"max_position_embeddings\": 131072, \"model_type\": \"glm4_moe\","
      " \"moe_intermediate_size\": 1408, \"n_group\": 1, \"n_routed_experts\": 128, \"n_shared_experts\": 1,"
      " \"norm_topk_prob\": true, \"num_attention_heads\": 96, \"num_experts_per_tok\": 8,"
      " \"num_hidden_layers\": 46, \"num_key_value_heads\": 8, \"num_nextn_predict_layers\": 1,"
      " \"pad_token_id\": 151329, \"partial_rotary_factor\": 0.5, \"rms_norm_eps\": 1e-05,"
      " \"rope_scaling\": null, \"rope_theta\": 1000000, \"routed_scaling_factor\": 1.0,"
      " \"tie_word_embeddings\": false, \"topk_group\": 1, \"torch_dtype\": \"bfloat16\","
      " \"use_cache\": true, \"use_qk_norm\": false, \"vocab_size\": 151552}",
      "1x4096" },
    /* diffusers pipelines' components: each the published config.json of
       the pipeline's subfolder (transformer/, text_encoder/); a diffusers
       component's example input lists its forward's inputs at a 1024x1024
       image, batch 1, as its pipeline calls it (models/diffusers.h) */
    { "sd-3.5-medium-transformer", "stabilityai/stable-diffusion-3.5-medium",
      "{\"_class_name\": \"SD3Transformer2DModel\", \"_diffusers_version\": \"0.31.0.dev0\","
      " \"attention_head_dim\": 64, \"caption_projection_dim\": 1536,"
      " \"dual_attention_layers\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], \"in_channels\": 16,"
      " \"joint_attention_dim\": 4096, \"num_attention_heads\": 24, \"num_layers\": 24,"
      " \"out_channels\": 16, \"patch_size\": 2, \"pooled_projection_dim\": 2048,"
      " \"pos_embed_max_size\": 384, \"qk_norm\": \"rms_norm\", \"sample_size\": 128}",
      "1x16x128x128+1x333x4096+1x2048+1:float32" },
    { "flux.1-dev-transformer", "black-forest-labs/FLUX.1-dev",
      "{\"_class_name\": \"FluxTransformer2DModel\", \"_diffusers_version\": \"0.30.0.dev0\","
      " \"_name_or_path\": \"../checkpoints/flux-dev/transformer\", \"attention_head_dim\": 128,"
      " \"guidance_embeds\": true, \"in_channels\": 64, \"joint_attention_dim\": 4096,"
      " \"num_attention_heads\": 24, \"num_layers\": 19, \"num_single_layers\": 38, \"patch_size\": 1,"
      " \"pooled_projection_dim\": 768}",
      "1x4096x64+1x512x4096+1x768+1+4096x3+512x3+1:float32" },
    { "lumina-image-2.0-transformer", "Alpha-VLLM/Lumina-Image-2.0",
      "{\"_class_name\": \"Lumina2Transformer2DModel\", \"_diffusers_version\": \"0.33.0.dev0\","
      " \"axes_dim_rope\": [32, 32, 32], \"axes_lens\": [300, 512, 512], \"cap_feat_dim\": 2304,"
      " \"ffn_dim_multiplier\": null, \"hidden_size\": 2304, \"in_channels\": 16, \"multiple_of\": 256,"
      " \"norm_eps\": 1e-05, \"num_attention_heads\": 24, \"num_kv_heads\": 8, \"num_layers\": 26,"
      " \"num_refiner_layers\": 2, \"out_channels\": null, \"patch_size\": 2, \"sample_size\": 128,"
      " \"scaling_factor\": 1.0}",
      "1x16x128x128+1:float32+1x256x2304+1x256:int64" },
    /* Lumina-Image-2.0's text_encoder/: Gemma-2 2B as a Gemma2Model (the
       pipeline takes its hidden_states[-2]) */
    { "lumina-image-2.0-text-encoder", "Alpha-VLLM/Lumina-Image-2.0",
      "{\"architectures\": [\"Gemma2Model\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
      " \"attn_logit_softcapping\": 50.0, \"bos_token_id\": 2, \"cache_implementation\": \"hybrid\","
      " \"eos_token_id\": 1, \"final_logit_softcapping\": 30.0, \"head_dim\": 256,"
      " \"hidden_act\": \"gelu_pytorch_tanh\", \"hidden_activation\": \"gelu_pytorch_tanh\","
      " \"hidden_size\": 2304, \"initializer_range\": 0.02, \"intermediate_size\": 9216,"
      " \"max_position_embeddings\": 8192, \"model_type\": \"gemma2\", \"num_attention_heads\": 8,"
      " \"num_hidden_layers\": 26, \"num_key_value_heads\": 4, \"pad_token_id\": 0,"
      " \"query_pre_attn_scalar\": 256, \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0,"
      " \"sliding_window\": 4096, \"torch_dtype\": \"float32\", \"use_cache\": true, \"vocab_size\": 256000}",
      "1x256" },
};

#define BUILTIN_COUNT ((int32_t)(sizeof builtins / sizeof builtins[0]))

int32_t mtk_builtin_model_count(void) { return BUILTIN_COUNT; }

const mtk_builtin_model *mtk_builtin_model_at(int32_t i) { return i >= 0 && i < BUILTIN_COUNT ? &builtins[i] : NULL; }

const mtk_builtin_model *mtk_builtin_model_find(const char *name)
{
    for (int32_t i = 0; name && i < BUILTIN_COUNT; i++)
        if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
    return NULL;
}
