/* The model zoo's decoder families and its infrastructure: config.json
 * loading with transformers' defaults and errors naming the field, the
 * built-in models' published parameter counts, state-dict keys, buffers,
 * forward shapes and FLOPs (values from transformers 5.23 on torch 2.13,
 * built under torch.device('meta'); FLOPs from FlopCounterMode), rotary
 * inv_freq as transformers computes it, and the collapsed summary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtk/mtk.h"
#include "unit_models.h"

/* A small Llama: hidden 64, 4 heads, 2 kv heads, vocab 101; `extra` adds
 * fields ("" for none; it starts with a comma). */
static char *small_config(const char *model_type, const char *arch, int layers, const char *extra)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"model_type\": \"%s\", \"architectures\": [\"%s\"], \"hidden_size\": 64, \"intermediate_size\": 96, "
             "\"num_hidden_layers\": %d, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"vocab_size\": 101%s}",
             model_type, arch, layers, extra);
    return buf;
}

/* Builds config text on meta, named test.json; NULL with the context's error. */
static mtk_module *build_text(mtk_ctx *ctx, const char *json)
{
    return unit_model_from_text(ctx, json, "test.json");
}

/* Logits of a traced forward on (batch, seq) token ids; *flops gets the total. */
static mtk_tensor *forward_ids(mtk_module *m, int64_t batch, int64_t seq, int64_t *flops)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    int64_t shape[2] = { batch, seq };
    mtk_tensor *ids = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META);
    mtk_trace *trace = mtk_trace_begin(m);
    mtk_tensor *out = mtk_module_forward(m, ids);
    mtk_trace_end(trace);
    if (flops) *flops = mtk_trace_flops(trace);
    mtk_trace_free(trace);
    return out;
}

static void assert_error_contains(mtk_ctx *ctx, const char *part)
{
    assert_int_not_equal(mtk_ctx_status(ctx), MTK_OK);
    if (!strstr(mtk_ctx_message(ctx), part)) fail_msg("error lacks '%s': %s", part, mtk_ctx_message(ctx));
}

static void assert_shape3(const mtk_tensor *t, int64_t a, int64_t b, int64_t c)
{
    assert_non_null(t);
    assert_int_equal(t->ndim, 3);
    assert_int_equal(t->shape[0], a);
    assert_int_equal(t->shape[1], b);
    assert_int_equal(t->shape[2], c);
}

static int64_t builtin_params(const char *name)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_module *m = mtk_model_resolve(ctx, name, &options, NULL);
    if (!m) fail_msg("%s: %s", name, mtk_ctx_message(ctx));
    int64_t n = mtk_module_num_parameters(m, false);
    mtk_ctx_free(ctx);
    return n;
}

/* ------------------------------------------------------------ built-ins */

static void builtin_decoders_have_the_published_parameter_counts(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int64_t params;
    } expected[] = {
        { "llama-2-7b", 6738415616LL },     { "llama-2-13b", 13015864320LL },    { "llama-2-70b", 68976648192LL },
        { "llama-3-8b", 8030261248LL },     { "llama-3-70b", 70553706496LL },    { "llama-3.1-8b", 8030261248LL },
        { "llama-3.1-70b", 70553706496LL }, { "llama-3.1-405b", 405853388800LL }, { "llama-3.2-1b", 1235814400LL },
        { "llama-3.2-3b", 3212749824LL },   { "mistral-7b", 7241732096LL },      { "mixtral-8x7b", 46702792704LL },
        { "mixtral-8x22b", 140620634112LL }, { "qwen2-7b", 7615616512LL },        { "qwen2.5-7b", 7615616512LL },
        { "qwen2.5-72b", 72706203648LL },   { "gemma-2b", 2506172416LL },        { "gemma-7b", 8537680896LL },
        { "gemma-2-9b", 9241705984LL },     { "gemma-2-27b", 27227128320LL },    { "phi-3-mini", 3821079552LL },
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        int64_t n = builtin_params(expected[i].name);
        if (n != expected[i].params)
            fail_msg("%s: %lld parameters, transformers has %lld", expected[i].name, (long long)n,
                     (long long)expected[i].params);
    }
}

static void builtin_models_build_in_their_config_dtype(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_info info;
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_module *m = mtk_model_resolve(ctx, "llama-3-8b", &options, &info);
    assert_non_null(m);
    assert_string_equal(info.family, "llama");
    assert_string_equal(info.architecture, "LlamaForCausalLM");
    assert_string_equal(info.source, "built-in");
    assert_int_equal(info.dtype, MTK_BFLOAT16);
    assert_int_equal(info.input_dtype, MTK_INT64);
    assert_int_equal(mtk_module_tensor(m, "lm_head.weight")->dtype, MTK_BFLOAT16);
    assert_true(mtk_tensor_is_meta(mtk_module_tensor(m, "lm_head.weight")));
    options.dtype = MTK_FLOAT16; /* --dtype wins over torch_dtype */
    m = mtk_model_resolve(ctx, "llama-3-8b", &options, &info);
    assert_int_equal(mtk_module_tensor(m, "model.norm.weight")->dtype, MTK_FLOAT16);
    /* rotary buffers stay float32 */
    assert_int_equal(mtk_module_tensor(m, "model.rotary_emb.inv_freq")->dtype, MTK_FLOAT32);
    mtk_ctx_free(ctx);
}

static void tied_embeddings_are_counted_once_and_listed_twice(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_module *m = mtk_model_resolve(ctx, "llama-3.2-1b", &options, NULL);
    assert_non_null(m);
    assert_ptr_equal(mtk_module_tensor(m, "lm_head.weight"), mtk_module_tensor(m, "model.embed_tokens.weight"));
    mtk_state_dict *sd = mtk_module_state_dict(m);
    assert_non_null(mtk_state_dict_get(sd, "lm_head.weight"));
    mtk_named_tensor *params;
    int32_t n = mtk_module_named_parameters(m, &params);
    for (int32_t i = 0; i < n; i++) assert_string_not_equal(params[i].name, "lm_head.weight");
    assert_int_equal(mtk_module_num_parameters(m, false), 1235814400LL);
    mtk_ctx_free(ctx);
}

/* --------------------------------------------------------- keys, shapes */

static void llama_state_dict_keys_are_transformers_keys(void **state)
{
    (void)state;
    static const char *const keys[] = {
        "model.embed_tokens.weight",
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight",
        "model.layers.0.self_attn.o_proj.weight",
        "model.layers.0.mlp.gate_proj.weight",
        "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.mlp.down_proj.weight",
        "model.layers.0.input_layernorm.weight",
        "model.layers.0.post_attention_layernorm.weight",
        "model.norm.weight",
        "lm_head.weight",
    };
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build_text(ctx, small_config("llama", "LlamaForCausalLM", 1, ""));
    assert_non_null(m);
    mtk_state_dict *sd = mtk_module_state_dict(m);
    assert_int_equal(mtk_state_dict_count(sd), 12);
    for (int32_t i = 0; i < 12; i++) {
        const char *name;
        mtk_state_dict_at(sd, i, &name);
        assert_string_equal(name, keys[i]);
    }
    mtk_tensor *k = mtk_module_tensor(m, "model.layers.0.self_attn.k_proj.weight");
    assert_int_equal(k->shape[0], 32); /* 2 kv heads x head_dim 16 */
    assert_int_equal(k->shape[1], 64);
    assert_int_equal(mtk_module_num_parameters(m, false), 43840);
    /* inv_freq and original_inv_freq: buffers, not in the state dict */
    mtk_named_tensor *buffers;
    assert_int_equal(mtk_module_named_buffers(m, &buffers), 2);
    assert_string_equal(buffers[0].name, "model.rotary_emb.inv_freq");
    assert_false(buffers[0].persistent);
    assert_int_equal(buffers[0].tensor->shape[0], 8);
    mtk_ctx_free(ctx);
}

static void llama_forward_gives_logits_and_transformers_flops(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build_text(ctx, small_config("llama", "LlamaForCausalLM", 1, ""));
    int64_t flops;
    assert_shape3(forward_ids(m, 2, 7, &flops), 2, 7, 101);
    assert_int_equal(flops, 1066240);
    /* the base model returns the last hidden state */
    m = build_text(ctx, small_config("llama", "LlamaModel", 1, ""));
    assert_string_equal(mtk_module_type_name(m), "LlamaModel");
    assert_shape3(forward_ids(m, 2, 7, NULL), 2, 7, 64);
    mtk_ctx_free(ctx);
}

static void phi3_fuses_qkv_after_o_proj_and_gate_up(void **state)
{
    (void)state;
    static const char *const keys[] = {
        "model.embed_tokens.weight",
        "model.layers.0.self_attn.o_proj.weight",
        "model.layers.0.self_attn.qkv_proj.weight",
        "model.layers.0.mlp.gate_up_proj.weight",
        "model.layers.0.mlp.down_proj.weight",
    };
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m =
        build_text(ctx, small_config("phi3", "Phi3ForCausalLM", 1, ", \"pad_token_id\": null, \"partial_rotary_factor\": 0.5"));
    assert_non_null(m);
    mtk_state_dict *sd = mtk_module_state_dict(m);
    for (int32_t i = 0; i < 5; i++) {
        const char *name;
        mtk_state_dict_at(sd, i, &name);
        assert_string_equal(name, keys[i]);
    }
    assert_int_equal(mtk_module_tensor(m, "model.layers.0.self_attn.qkv_proj.weight")->shape[0], 128);
    assert_int_equal(mtk_module_tensor(m, "model.rotary_emb.inv_freq")->shape[0], 4); /* half of 16 * 0.5 */
    int64_t flops;
    assert_shape3(forward_ids(m, 2, 7, &flops), 2, 7, 101);
    assert_int_equal(flops, 1066240);
    mtk_ctx_free(ctx);
}

static void mixtral_experts_are_3d_and_routed_evenly_on_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_config *c = mtk_model_config_parse(
        ctx, small_config("mixtral", "MixtralForCausalLM", 2, ", \"num_local_experts\": 4, \"num_experts_per_tok\": 2"),
        "test.json");
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED);
    mtk_model_config_free(c);
    assert_non_null(m);
    mtk_tensor *gate_up = mtk_module_tensor(m, "model.layers.0.mlp.experts.gate_up_proj");
    assert_int_equal(gate_up->ndim, 3);
    assert_int_equal(gate_up->shape[0], 4);
    assert_int_equal(gate_up->shape[1], 192);
    assert_int_equal(gate_up->shape[2], 64);
    assert_non_null(mtk_module_tensor(m, "model.layers.1.mlp.gate.weight"));
    assert_int_equal(mtk_module_num_parameters(m, false), 185792);
    /* the summary must say how the routing is planned */
    mtk_model_info info;
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    assert_non_null(mtk_model_resolve(ctx, "mixtral-8x7b", &options, &info));
    assert_int_equal(info.nnotes, 1);
    assert_non_null(strstr(info.notes[0], "grouped_mm"));
    int64_t flops;
    assert_shape3(forward_ids(m, 2, 7, &flops), 2, 7, 101);
    assert_int_equal(flops, 2998016);
    assert_shape3(forward_ids(m, 1, 3, &flops), 1, 3, 101); /* 6 (token, expert) pairs on 4 experts */
    assert_int_equal(flops, 636288);
    mtk_ctx_free(ctx);
}

static void qwen2_moe_keeps_mlp_only_layers_dense(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build_text(ctx, small_config("qwen2_moe", "Qwen2MoeForCausalLM", 2,
                                                 ", \"num_experts\": 4, \"num_experts_per_tok\": 2, "
                                                 "\"moe_intermediate_size\": 32, \"shared_expert_intermediate_size\": 48, "
                                                 "\"mlp_only_layers\": [1]"));
    assert_non_null(m);
    assert_string_equal(mtk_module_type_name(mtk_module_child(m, "model.layers.0.mlp")), "Qwen2MoeSparseMoeBlock");
    assert_string_equal(mtk_module_type_name(mtk_module_child(m, "model.layers.1.mlp")), "Qwen2MoeMLP");
    assert_non_null(mtk_module_tensor(m, "model.layers.0.mlp.shared_expert_gate.weight"));
    assert_non_null(mtk_module_tensor(m, "model.layers.0.self_attn.q_proj.bias"));
    assert_int_equal(mtk_module_num_parameters(m, false), 90624);
    int64_t flops;
    assert_shape3(forward_ids(m, 2, 7, &flops), 2, 7, 101);
    assert_int_equal(flops, 2046464);
    mtk_ctx_free(ctx);
}

static void gemma2_has_four_norms_a_scaled_embedding_and_softcapping(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build_text(ctx, small_config("gemma2", "Gemma2ForCausalLM", 2,
                                                 ", \"head_dim\": 16, \"torch_dtype\": \"bfloat16\""));
    assert_non_null(m);
    assert_non_null(mtk_module_tensor(m, "model.layers.1.pre_feedforward_layernorm.weight"));
    assert_non_null(mtk_module_tensor(m, "model.layers.1.post_feedforward_layernorm.weight"));
    assert_string_equal(mtk_module_type_name(mtk_module_child(m, "model.embed_tokens")),
                        "Gemma2TextScaledWordEmbedding");
    /* embed_scale: a 0-dim non-persistent buffer in the model's dtype */
    mtk_tensor *scale = mtk_module_tensor(m, "model.embed_tokens.embed_scale");
    assert_int_equal(scale->ndim, 0);
    assert_int_equal(scale->dtype, MTK_BFLOAT16);
    assert_null(mtk_state_dict_get(mtk_module_state_dict(m), "model.embed_tokens.embed_scale"));
    /* tied by default */
    assert_int_equal(mtk_module_num_parameters(m, false), 68480);
    int64_t flops;
    mtk_tensor *logits = forward_ids(m, 2, 7, &flops);
    assert_shape3(logits, 2, 7, 101);
    assert_int_equal(logits->dtype, MTK_BFLOAT16);
    assert_int_equal(flops, 1951488);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------- computed buffers */

static void llama3_inv_freq_is_computed_at_materialization(void **state)
{
    (void)state;
    /* transformers' LlamaRotaryEmbedding.inv_freq for head_dim 16, theta
     * 500000, llama3 scaling (factor 8, low 1, high 4, original 64) */
    static const float expected[8] = { 1.0f,           0.07940301299095154f, 0.004700753837823868f,
                                       0.0009115831344388425f, 0.00017677668074611574f, 3.428102354519069e-05f,
                                       6.647869668086059e-06f, 1.289173155782919e-06f };
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build_text(ctx, small_config("llama", "LlamaForCausalLM", 1,
                                                 ", \"head_dim\": 16, \"rope_theta\": 500000.0, \"rope_scaling\": "
                                                 "{\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
                                                 "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}"));
    assert_non_null(m);
    assert_true(mtk_module_materialize(m, MTK_DEVICE_CPU, 0));
    for (int k = 0; k < 2; k++) {
        mtk_tensor *t = mtk_module_tensor(m, k ? "model.rotary_emb.original_inv_freq" : "model.rotary_emb.inv_freq");
        const float *v = mtk_tensor_data(t);
        assert_non_null(v);
        for (int i = 0; i < 8; i++)
            if (fabsf(v[i] - expected[i]) > 2e-7f * expected[i])
                fail_msg("inv_freq[%d] = %.9g, transformers %.9g", i, v[i], expected[i]);
    }
    mtk_ctx_free(ctx);
}

static void gemma_embed_scale_is_sqrt_hidden(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    char *text = small_config("gemma", "GemmaForCausalLM", 1, ", \"head_dim\": 16");
    /* hidden 48 (3 x 16) */
    char *hidden = strstr(text, "\"hidden_size\": 64");
    memcpy(hidden, "\"hidden_size\": 48", 17);
    mtk_model_config *c = mtk_model_config_parse(ctx, text, "test.json");
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED); /* cpu, init mode */
    mtk_model_config_free(c);
    assert_non_null(m);
    const float *scale = mtk_tensor_data(mtk_module_tensor(m, "model.embed_tokens.embed_scale"));
    assert_float_equal(*scale, 6.928203105926514, 1e-6);
    /* GemmaRMSNorm's weight starts at zero: x * (1 + w) */
    const float *w = mtk_tensor_data(mtk_module_tensor(m, "model.norm.weight"));
    assert_float_equal(w[0], 0.0, 0.0);
    assert_int_equal(mtk_module_num_parameters(m, false), 28032);
    mtk_ctx_free(ctx);
}

/* --------------------------------------------------------------- errors */

static void config_errors_name_the_field(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *message;
    } cases[] = {
        { "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, \"num_attention_heads\": 0, "
          "\"vocab_size\": 10, \"intermediate_size\": 8}",
          "test.json: field 'num_attention_heads': must be a positive integer, got 0" },
        { "{\"model_type\": \"llama\", \"hidden_size\": 65, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
          "\"vocab_size\": 10, \"intermediate_size\": 8}",
          "hidden_size=65 is not divisible by num_attention_heads=4" },
        { "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
          "\"intermediate_size\": 8}",
          "missing required field 'vocab_size'" },
        { "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": -1, \"num_attention_heads\": 4, "
          "\"vocab_size\": 10, \"intermediate_size\": 8}",
          "field 'num_hidden_layers'" },
        { "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
          "\"num_key_value_heads\": 3, \"vocab_size\": 10, \"intermediate_size\": 8}",
          "num_key_value_heads=3 must divide num_attention_heads=4" },
        { "{\"model_type\": \"llama\", \"hidden_size\": \"64\", \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
          "\"vocab_size\": 10, \"intermediate_size\": 8}",
          "field 'hidden_size': expected an integer" },
        { "{\"model_type\": \"llama\", \"architectures\": [\"LlamaForMaskedLM\"], \"hidden_size\": 64, "
          "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"vocab_size\": 10, \"intermediate_size\": 8}",
          "unsupported architecture 'LlamaForMaskedLM' for model_type 'llama' (supported: LlamaModel, "
          "LlamaForCausalLM, LlamaForSequenceClassification, LlamaForTokenClassification, LlamaForQuestionAnswering)" },
        { "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
          "\"vocab_size\": 10, \"intermediate_size\": 8, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}",
          "missing required field 'rope_scaling.low_freq_factor'" },
        { "{\"model_type\": \"phi3\", \"hidden_size\": 64, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
          "\"vocab_size\": 10, \"intermediate_size\": 8}",
          "field 'pad_token_id': 32000 is not a row of the embedding" },
        { "{\"model_type\": \"xlnet\"}", "unknown model_type 'xlnet' (supported: llama, mistral, mixtral" },
        { "{\"hidden_size\": 64}", "missing required field 'model_type'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        assert_null(build_text(ctx, cases[i].json));
        assert_error_contains(ctx, cases[i].message);
        mtk_ctx_free(ctx);
    }
}

static void bad_json_is_a_syntax_error_with_its_place(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_model_config_parse(ctx, "{\"model_type\": \"llama\",\n  \"hidden_size\": }", "cfg.json"));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SYNTAX);
    assert_error_contains(ctx, "cfg.json: bad JSON at line 2");
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------------- resolve */

static void resolve_reads_a_directory_holding_a_config(void **state)
{
    (void)state;
    char dir[] = "/tmp/mtk_test_models_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(small_config("mistral", "MistralForCausalLM", 2, ""), f);
    fclose(f);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_info info;
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_module *m = mtk_model_resolve(ctx, dir, &options, &info);
    assert_non_null(m);
    assert_string_equal(info.architecture, "MistralForCausalLM");
    assert_string_equal(info.source, "config.json");
    assert_int_equal(mtk_module_num_parameters(m, false), 74688);
    mtk_ctx_free(ctx);
    remove(path);
    rmdir(dir);

    ctx = mtk_ctx_new();
    assert_null(mtk_model_resolve(ctx, "llama-9", NULL, NULL));
    assert_error_contains(ctx, "unknown model 'llama-9' (built-in models: simplenet, lazynet, llama-2-7b");
    mtk_ctx_free(ctx);
}

/* Every parameter of m on `device`, with data exactly when it is not meta. */
static void assert_parameters_on(mtk_module *m, mtk_device device)
{
    mtk_named_tensor *params = NULL;
    int32_t n = mtk_module_named_parameters(m, &params);
    assert_true(n > 0);
    for (int32_t i = 0; i < n; i++) {
        assert_int_equal(params[i].tensor->device, device);
        assert_true((mtk_tensor_data(params[i].tensor) != NULL) == (device != MTK_DEVICE_META));
    }
}

static void resolve_builds_on_meta_unless_the_caller_scopes_a_device(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* no options, no scope: 774M parameters and no memory for them */
    mtk_module *m = mtk_model_resolve(ctx, "gpt2-large", NULL, NULL);
    assert_non_null(m);
    assert_int_equal(mtk_module_num_parameters(m, false), 774030080);
    assert_parameters_on(m, MTK_DEVICE_META);
    assert_true(mtk_ctx_arena_bytes(ctx) < (size_t)64 << 20);
    /* the caller's scopes are as they were */
    assert_int_equal(mtk_ctx_device_scopes(ctx), 0);
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU);
    assert_int_equal(mtk_ctx_init_mode(ctx), MTK_INIT_INIT);

    /* a device the caller scoped is honoured; options.meta still wins */
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_CPU));
    assert_parameters_on(mtk_model_resolve(ctx, "simplenet", NULL, NULL), MTK_DEVICE_CPU);
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    assert_parameters_on(mtk_model_resolve(ctx, "simplenet", &options, NULL), MTK_DEVICE_META);
    assert_int_equal(mtk_ctx_device_scopes(ctx), 1);
    assert_true(mtk_ctx_pop_device(ctx));
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

static void family_table_lists_classes_and_input_kinds(void **state)
{
    (void)state;
    const mtk_model_family_info *f = mtk_model_family_find("gemma2");
    assert_non_null(f);
    assert_string_equal(f->default_architecture, "Gemma2Model");
    assert_string_equal(f->architectures[1], "Gemma2ForCausalLM");
    assert_int_equal(f->input, MTK_MODEL_INPUT_TOKEN_IDS);
    assert_null(mtk_model_family_find("no_such_family"));
    assert_non_null(mtk_builtin_model_find("phi-3-mini"));
    assert_null(mtk_builtin_model_find("phi-9"));
}

static void encoder_decoders_take_two_inputs_and_their_encoders_one(void **state)
{
    (void)state;
    const mtk_model_family_info *f = mtk_model_family_find("t5");
    assert_non_null(f);
    assert_int_equal(f->input, MTK_MODEL_INPUT_SEQ2SEQ_IDS);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_info info;
    assert_non_null(mtk_model_resolve(ctx, "t5-base", NULL, &info));
    assert_int_equal(info.input, MTK_MODEL_INPUT_SEQ2SEQ_IDS);
    assert_int_equal(info.input_dtype, MTK_INT64);
    /* the same config as an encoder only: one input */
    mtk_model_config *c = mtk_model_config_parse(
        ctx, "{\"model_type\": \"t5\", \"architectures\": [\"T5EncoderModel\"], \"d_model\": 8, \"num_layers\": 1}",
        "t5-encoder");
    assert_non_null(c);
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED);
    mtk_model_config_free(c);
    assert_non_null(m);
    assert_string_equal(mtk_module_type_name(m), "T5EncoderModel");
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------------- summary */

static void summary_collapses_identical_layers(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_module *m = mtk_model_resolve(ctx, "llama-3-70b", &options, NULL);
    int64_t shape[2] = { 1, 16 };
    mtk_tensor *ids = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META);
    mtk_summary *s = mtk_summary_new(m, &ids, 1);
    assert_non_null(s);
    assert_true(mtk_summary_add_note(s, "a note"));
    char *text = mtk_summary_text(s, 4);
    assert_non_null(text);
    if (!strstr(text, "model.layers.0-79 ") || !strstr(text, "80 \u00d7 LlamaDecoderLayer") ||
        !strstr(text, "model.layers.0-79.self_attn ") || !strstr(text, "Note: a note") ||
        strstr(text, "model.layers.1 "))
        fail_msg("not collapsed:\n%s", text);
    /* 80 layers of 855,654,400 parameters */
    assert_non_null(strstr(text, "68,452,352,000"));
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builtin_decoders_have_the_published_parameter_counts),
        cmocka_unit_test(builtin_models_build_in_their_config_dtype),
        cmocka_unit_test(tied_embeddings_are_counted_once_and_listed_twice),
        cmocka_unit_test(llama_state_dict_keys_are_transformers_keys),
        cmocka_unit_test(llama_forward_gives_logits_and_transformers_flops),
        cmocka_unit_test(phi3_fuses_qkv_after_o_proj_and_gate_up),
        cmocka_unit_test(mixtral_experts_are_3d_and_routed_evenly_on_meta),
        cmocka_unit_test(qwen2_moe_keeps_mlp_only_layers_dense),
        cmocka_unit_test(gemma2_has_four_norms_a_scaled_embedding_and_softcapping),
        cmocka_unit_test(llama3_inv_freq_is_computed_at_materialization),
        cmocka_unit_test(gemma_embed_scale_is_sqrt_hidden),
        cmocka_unit_test(config_errors_name_the_field),
        cmocka_unit_test(bad_json_is_a_syntax_error_with_its_place),
        cmocka_unit_test(resolve_reads_a_directory_holding_a_config),
        cmocka_unit_test(resolve_builds_on_meta_unless_the_caller_scopes_a_device),
        cmocka_unit_test(family_table_lists_classes_and_input_kinds),
        cmocka_unit_test(encoder_decoders_take_two_inputs_and_their_encoders_one),
        cmocka_unit_test(summary_collapses_identical_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
