/* The decoder families' KV cache (transformers 5's DynamicCache): a
 * prefill then decode steps give the logits of the forward without a
 * cache (full attention) or of a longer prefill (sliding windows, where
 * the masks' offsets matter), and the cache keeps what DynamicLayer and
 * DynamicSlidingWindowLayer keep: the whole concatenation for full layers,
 * a view of the last window - 1 tokens of it for sliding ones (bytes as
 * torch 2.13 + transformers 5.24 measured them on the same configs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mtk/mtk.h"

/* hidden 32, 4 heads, 2 kv heads (head_dim 8), vocab 101; `extra` starts
 * with a comma or is "". */
static const char *config(const char *model_type, int layers, const char *extra)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"model_type\": \"%s\", \"architectures\": [\"%s\"], \"hidden_size\": 32, \"intermediate_size\": 45, "
             "\"num_hidden_layers\": %d, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
             "\"vocab_size\": 101, \"max_position_embeddings\": 256%s}",
             model_type,
             strcmp(model_type, "llama") == 0     ? "LlamaForCausalLM"
             : strcmp(model_type, "mistral") == 0 ? "MistralForCausalLM"
             : strcmp(model_type, "gemma2") == 0  ? "Gemma2ForCausalLM"
                                                  : "Qwen2ForCausalLM",
             layers, extra);
    return buf;
}

static mtk_module *build(mtk_ctx *ctx, const char *json, bool meta)
{
    mtk_model_config *c = mtk_model_config_parse(ctx, json, "test.json");
    assert_non_null(c);
    if (meta) {
        mtk_ctx_push_device(ctx, MTK_DEVICE_META);
        mtk_ctx_push_init_mode(ctx, MTK_INIT_META);
    }
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_FLOAT32);
    if (meta) {
        mtk_ctx_pop_init_mode(ctx);
        mtk_ctx_pop_device(ctx);
    }
    mtk_model_config_free(c);
    if (!m) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_module_train(m, false);
    return m;
}

/* (b, s) token ids on cpu: (7 i + 3 j) mod 101 */
static mtk_tensor *ids_cpu(mtk_ctx *ctx, int64_t b, int64_t s, int64_t from)
{
    int64_t shape[2] = { b, s };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_CPU);
    assert_true(t && mtk_tensor_alloc_storage(t));
    int64_t *d = mtk_tensor_data(t);
    for (int64_t i = 0; i < b; i++)
        for (int64_t j = 0; j < s; j++) d[i * s + j] = (7 * i + 3 * (j + from) + 1) % 101;
    return t;
}

/* |a[:, pa] - b[:, pb]| over (B, ., V) float32 logits, both contiguous. */
static double max_diff(const mtk_tensor *a, int64_t pa, const mtk_tensor *b, int64_t pb)
{
    mtk_tensor *ac = mtk_contiguous(a->ctx, (mtk_tensor *)a), *bc = mtk_contiguous(b->ctx, (mtk_tensor *)b);
    const float *x = mtk_tensor_data(ac), *y = mtk_tensor_data(bc);
    int64_t batch = a->shape[0], v = a->shape[2];
    double worst = 0;
    for (int64_t i = 0; i < batch; i++)
        for (int64_t k = 0; k < v; k++) {
            double d = fabs((double)x[(i * a->shape[1] + pa) * v + k] - (double)y[(i * b->shape[1] + pb) * v + k]);
            if (d > worst) worst = d;
        }
    return worst;
}

static mtk_tensor *columns(mtk_ctx *ctx, mtk_tensor *ids, int64_t from, int64_t n)
{
    return mtk_contiguous(ctx, mtk_narrow(ctx, ids, 1, from, n));
}

static void prefill_then_decode_matches_forward_without_cache(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, config("llama", 2, ""), false);
    mtk_tensor *ids = ids_cpu(ctx, 2, 10, 0);
    mtk_tensor *full = mtk_module_forward(m, ids); /* (2, 10, 101) */
    assert_non_null(full);
    mtk_kv_cache *cache = mtk_kv_cache_new(m);
    assert_true(mtk_kv_cache_plannable(cache));
    mtk_lm_step last = { .logits_to_keep = 1, .attention_mask = true };
    mtk_tensor *out = mtk_lm_forward_cached(m, columns(ctx, ids, 0, 8), cache, &last);
    if (!out) fail_msg("%s", mtk_ctx_message(ctx));
    assert_int_equal(out->shape[1], 1);
    assert_true(max_diff(out, 0, full, 7) < 1e-4);
    for (int64_t j = 8; j < 10; j++) {
        out = mtk_lm_forward_cached(m, columns(ctx, ids, j, 1), cache, &last);
        assert_non_null(out);
        assert_true(max_diff(out, 0, full, j) < 1e-4);
    }
    assert_int_equal(mtk_kv_cache_length(cache), 10);
    const mtk_kv_cache_layer *l = mtk_kv_cache_layer_at(cache, 1);
    assert_int_equal(l->keys->shape[2], 10);
    assert_int_equal(l->window, 0);
    mtk_ctx_free(ctx);
}

/* A sliding window shorter than the text: decoding the last tokens after a
 * prefill gives the logits a prefill of the whole text gives there. */
static void sliding(const char *json)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, json, false);
    mtk_tensor *ids = ids_cpu(ctx, 2, 14, 0);
    mtk_kv_cache *whole = mtk_kv_cache_new(m);
    mtk_lm_step all = { 0, false, NULL, NULL }, last = { 1, true, NULL, NULL };
    mtk_tensor *ref = mtk_lm_forward_cached(m, ids, whole, &all); /* (2, 14, 101) */
    if (!ref) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_kv_cache *cache = mtk_kv_cache_new(m);
    mtk_tensor *out = mtk_lm_forward_cached(m, columns(ctx, ids, 0, 9), cache, &last);
    assert_non_null(out);
    assert_true(max_diff(out, 0, ref, 8) < 1e-4);
    for (int64_t j = 9; j < 14; j++) {
        out = mtk_lm_forward_cached(m, columns(ctx, ids, j, 1), cache, &last);
        if (!out) fail_msg("%s", mtk_ctx_message(ctx));
        assert_true(max_diff(out, 0, ref, j) < 1e-4);
    }
    /* the window really cuts: without it the logits differ */
    mtk_ctx_free(ctx);
}

static void sliding_window_decode_matches_a_longer_prefill(void **state)
{
    (void)state;
    sliding(config("mistral", 2, ", \"sliding_window\": 4"));
    sliding(config("gemma2", 3, ", \"sliding_window\": 4, \"head_dim\": 8, \"query_pre_attn_scalar\": 8"));
    sliding(config("qwen2", 2, ", \"use_sliding_window\": true, \"sliding_window\": 5, \"max_window_layers\": 1"));
}

static void sliding_window_changes_the_logits(void **state)
{
    (void)state;
    /* two fresh contexts draw the same parameters: only the mask differs */
    mtk_ctx *c1 = mtk_ctx_new(), *c2 = mtk_ctx_new();
    mtk_module *slide = build(c1, config("mistral", 1, ", \"sliding_window\": 4"), false);
    mtk_module *wide = build(c2, config("mistral", 1, ", \"sliding_window\": 64"), false);
    mtk_tensor *a = mtk_lm_forward_cached(slide, ids_cpu(c1, 1, 12, 0), mtk_kv_cache_new(slide), NULL);
    mtk_tensor *b = mtk_lm_forward_cached(wide, ids_cpu(c2, 1, 12, 0), mtk_kv_cache_new(wide), NULL);
    assert_true(a && b);
    assert_true(max_diff(a, 3, b, 3) < 1e-5); /* inside the window */
    assert_true(max_diff(a, 11, b, 11) > 1e-4);
    mtk_ctx_free(c1);
    mtk_ctx_free(c2);
}

/* mistral, window 8, B=2, S=24, head_dim 8, float32, 2 layers: torch
 * measured 12288 bytes of storage (4 x 2x2x24x8x4: the prefill's whole
 * concatenation) for 3584 bytes of views (7 tokens) after the prefill,
 * and 4096 (8 tokens) after a decode step. */
static void sliding_cache_keeps_the_concatenation_behind_its_view(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, config("mistral", 2, ", \"sliding_window\": 8"), true);
    int64_t shape[2] = { 2, 24 }, one[2] = { 2, 1 };
    mtk_kv_cache *cache = mtk_kv_cache_new(m);
    mtk_lm_step last = { 1, true, NULL, NULL };
    mtk_tensor *out = mtk_lm_forward_cached(m, mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META),
                                            cache, &last);
    if (!out) fail_msg("%s", mtk_ctx_message(ctx));
    assert_int_equal(out->shape[1], 1);
    assert_int_equal(mtk_kv_cache_storage_bytes(cache), 12288);
    assert_int_equal(mtk_kv_cache_tensor_bytes(cache), 3584);
    for (int i = 0; i < 3; i++) {
        out = mtk_lm_forward_cached(m, mtk_tensor_new(ctx, MTK_INT64, one, 2, NULL, MTK_DEVICE_META), cache, &last);
        assert_non_null(out);
        assert_int_equal(mtk_kv_cache_storage_bytes(cache), 4096);
        assert_int_equal(mtk_kv_cache_tensor_bytes(cache), 3584);
    }
    assert_int_equal(mtk_kv_cache_length(cache), 27);
    mtk_ctx_free(ctx);
}

/* transformers 5's layer types: qwen2 slides from max_window_layers on,
 * gemma2 on even layers, mistral everywhere (4096 when absent), llama
 * nowhere. */
static void layer_types_follow_the_family(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const char *jsons[4];
    int64_t want[4][4] = { { 0, 0, 8, 8 }, { 8, 0, 8, 0 }, { 4096, 4096, 4096, 4096 }, { 0, 0, 0, 0 } };
    static char a[1024], b[1024], c[1024], d[1024];
    snprintf(a, sizeof a, "%s", config("qwen2", 4, ", \"use_sliding_window\": true, \"sliding_window\": 8, "
                                                   "\"max_window_layers\": 2"));
    snprintf(b, sizeof b, "%s", config("gemma2", 4, ", \"sliding_window\": 8, \"head_dim\": 8"));
    snprintf(c, sizeof c, "%s", config("mistral", 4, ""));
    snprintf(d, sizeof d, "%s", config("llama", 4, ""));
    jsons[0] = a, jsons[1] = b, jsons[2] = c, jsons[3] = d;
    for (int k = 0; k < 4; k++) {
        mtk_kv_cache *cache = mtk_kv_cache_new(build(ctx, jsons[k], true));
        assert_non_null(cache);
        assert_int_equal(mtk_kv_cache_layer_count(cache), 4);
        for (int32_t i = 0; i < 4; i++) assert_int_equal(mtk_kv_cache_layer_at(cache, i)->window, want[k][i]);
    }
    mtk_ctx_free(ctx);
}

/* assume(length) holds what prefill + decode steps leave: same storage,
 * same view bytes, same length, for full and sliding layers. */
static void assumed_cache_equals_the_stepped_one(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, config("qwen2", 3, ", \"use_sliding_window\": true, \"sliding_window\": 6, "
                                                  "\"max_window_layers\": 1"), true);
    int64_t shape[2] = { 3, 11 }, one[2] = { 3, 1 };
    for (int64_t steps = 1; steps < 9; steps++) {
        mtk_kv_cache *run = mtk_kv_cache_new(m), *assumed = mtk_kv_cache_new(m);
        assert_non_null(mtk_lm_forward_cached(m, mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META), run,
                                              NULL));
        for (int64_t i = 0; i < steps; i++)
            assert_non_null(mtk_lm_forward_cached(m, mtk_tensor_new(ctx, MTK_INT64, one, 2, NULL, MTK_DEVICE_META),
                                                  run, NULL));
        assert_true(mtk_kv_cache_assume(assumed, 3, 11 + steps));
        assert_int_equal(mtk_kv_cache_length(assumed), mtk_kv_cache_length(run));
        assert_int_equal(mtk_kv_cache_storage_bytes(assumed), mtk_kv_cache_storage_bytes(run));
        assert_int_equal(mtk_kv_cache_tensor_bytes(assumed), mtk_kv_cache_tensor_bytes(run));
    }
    assert_false(mtk_kv_cache_assume(mtk_kv_cache_new(m), 3, 0));
    mtk_ctx_free(ctx);
}

static void cache_refuses_other_models_and_batches(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *lin = mtk_nn_linear(ctx, 3, 4, true);
    assert_null(mtk_kv_cache_new(lin));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mtk_ctx_message(ctx), "not a decoder model"));
    mtk_ctx_free(ctx);
    ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, config("llama", 1, ""), true);
    mtk_kv_cache *cache = mtk_kv_cache_new(m);
    int64_t s1[2] = { 2, 5 }, s2[2] = { 3, 1 };
    assert_non_null(mtk_lm_forward_cached(m, mtk_tensor_new(ctx, MTK_INT64, s1, 2, NULL, MTK_DEVICE_META), cache, NULL));
    assert_null(mtk_lm_forward_cached(m, mtk_tensor_new(ctx, MTK_INT64, s2, 2, NULL, MTK_DEVICE_META), cache, NULL));
    assert_non_null(strstr(mtk_ctx_message(ctx), "batch 3"));
    mtk_ctx_free(ctx);
}

/* gpt_oss (sinks, sliding layers of window 4, experts routed on the cpu)
 * and llama4_text (chunks of 4 on its rope layers, a NoPE layer with
 * temperature tuning): a prefill then decode steps past the window and the
 * chunks give the forward without a cache (itself checked against
 * transformers by tests/models/test_zoo_cpu_forward.py). */
static const char gpt_oss_config[] =
    "{\"model_type\": \"gpt_oss\", \"architectures\": [\"GptOssForCausalLM\"], \"hidden_size\": 32, "
    "\"intermediate_size\": 21, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
    "\"head_dim\": 8, \"vocab_size\": 101, \"max_position_embeddings\": 256, \"num_local_experts\": 4, "
    "\"num_experts_per_tok\": 2, \"sliding_window\": 4}";
static const char llama4_config[] =
    "{\"model_type\": \"llama4_text\", \"architectures\": [\"Llama4ForCausalLM\"], \"hidden_size\": 32, "
    "\"intermediate_size\": 21, \"intermediate_size_mlp\": 27, \"num_hidden_layers\": 2, "
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 8, \"vocab_size\": 101, "
    "\"max_position_embeddings\": 256, \"num_local_experts\": 3, \"num_experts_per_tok\": 1, "
    "\"attention_chunk_size\": 4, \"no_rope_layer_interval\": 2, \"floor_scale\": 2, \"attn_scale\": 0.5}";

static void local(const char *json)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, json, false);
    mtk_tensor *ids = ids_cpu(ctx, 2, 14, 0);
    mtk_tensor *full = mtk_module_forward(m, ids); /* (2, 14, 101) */
    if (!full) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_kv_cache *cache = mtk_kv_cache_new(m);
    mtk_lm_step all = { 0, false, NULL, NULL }, last = { 1, true, NULL, NULL };
    mtk_tensor *out = mtk_lm_forward_cached(m, columns(ctx, ids, 0, 9), cache, &all);
    if (!out) fail_msg("%s", mtk_ctx_message(ctx));
    for (int64_t j = 0; j < 9; j++) assert_true(max_diff(out, j, full, j) < 1e-4);
    for (int64_t j = 9; j < 14; j++) {
        out = mtk_lm_forward_cached(m, columns(ctx, ids, j, 1), cache, &last);
        if (!out) fail_msg("%s", mtk_ctx_message(ctx));
        assert_true(max_diff(out, 0, full, j) < 1e-4);
    }
    /* layer 0 slides / is chunked: it keeps window - 1 = 3 tokens; layer 1 all 14 */
    assert_int_equal(mtk_kv_cache_layer_at(cache, 0)->window, 4);
    assert_int_equal(mtk_kv_cache_layer_at(cache, 0)->keys->shape[2], 3);
    assert_int_equal(mtk_kv_cache_layer_at(cache, 1)->window, 0);
    assert_int_equal(mtk_kv_cache_layer_at(cache, 1)->keys->shape[2], 14);
    mtk_ctx_free(ctx);
}

static void sinks_and_chunks_decode_matches_forward_without_cache(void **state)
{
    (void)state;
    local(gpt_oss_config);
    local(llama4_config);
}


/* gpt2 (absolute positions, no rotary), gpt_neox (partial rotary, parallel
 * residual) and phi (partial rotary, q/k LayerNorms, grouped kv heads):
 * their own layers take the cache too; a prefill then decode steps give
 * their plain forward's logits, each layer keeping every token. */
static const char *const own_layer_configs[] = {
    "{\"model_type\": \"gpt2\", \"architectures\": [\"GPT2LMHeadModel\"], \"n_embd\": 32, \"n_layer\": 2, "
    "\"n_head\": 4, \"vocab_size\": 101, \"n_positions\": 64}",
    "{\"model_type\": \"gpt_neox\", \"architectures\": [\"GPTNeoXForCausalLM\"], \"hidden_size\": 32, "
    "\"intermediate_size\": 48, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 101, "
    "\"max_position_embeddings\": 64, \"rotary_pct\": 0.5}",
    "{\"model_type\": \"phi\", \"architectures\": [\"PhiForCausalLM\"], \"hidden_size\": 32, "
    "\"intermediate_size\": 48, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
    "\"vocab_size\": 101, \"max_position_embeddings\": 64, \"qk_layernorm\": true}",
};

static void own_layers_decode_matches_their_forward_without_cache(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof own_layer_configs / sizeof *own_layer_configs; k++) {
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_module *m = build(ctx, own_layer_configs[k], false);
        mtk_tensor *ids = ids_cpu(ctx, 2, 10, 0);
        mtk_tensor *full = mtk_module_forward(m, ids); /* (2, 10, 101) */
        if (!full) fail_msg("%s", mtk_ctx_message(ctx));
        mtk_kv_cache *cache = mtk_kv_cache_new(m);
        if (!cache) fail_msg("%s", mtk_ctx_message(ctx));
        assert_false(mtk_kv_cache_plannable(cache)); /* plans trace their plain forward */
        mtk_lm_step all = { 0, false, NULL, NULL }, last = { 1, true, NULL, NULL };
        mtk_tensor *out = mtk_lm_forward_cached(m, columns(ctx, ids, 0, 7), cache, &all);
        if (!out) fail_msg("%s", mtk_ctx_message(ctx));
        for (int64_t j = 0; j < 7; j++) assert_true(max_diff(out, j, full, j) < 1e-4);
        for (int64_t j = 7; j < 10; j++) {
            out = mtk_lm_forward_cached(m, columns(ctx, ids, j, 1), cache, &last);
            if (!out) fail_msg("%s", mtk_ctx_message(ctx));
            assert_int_equal(out->shape[1], 1);
            assert_true(max_diff(out, 0, full, j) < 1e-4);
        }
        assert_int_equal(mtk_kv_cache_layer_count(cache), 2);
        const mtk_kv_cache_layer *l = mtk_kv_cache_layer_at(cache, 1);
        assert_int_equal(l->window, 0);
        assert_int_equal(l->keys->shape[1], k == 2 ? 2 : 4); /* phi: its kv heads */
        assert_int_equal(l->keys->shape[2], 10);
        assert_int_equal(l->values->shape[3], 8);
        mtk_ctx_free(ctx);
    }
}

/* mtk_lm_generate against greedy decoding without a cache: each step the
 * whole sequence through the forward, the argmax of the last logits. */
static void generate_equals_greedy_decoding_without_a_cache(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, config("mistral", 2, ", \"sliding_window\": 4"), false);
    mtk_tensor *ids = ids_cpu(ctx, 2, 5, 0);
    mtk_generate_options o = { .max_new_tokens = 6, .output_logits = true };
    mtk_generate_stats st;
    mtk_tensor *out = mtk_lm_generate(m, ids, &o, &st);
    if (!out) fail_msg("%s", mtk_ctx_message(ctx));
    assert_int_equal(out->shape[0], 2);
    assert_int_equal(out->shape[1], 11);
    assert_int_equal(st.new_tokens, 6);
    assert_int_equal(st.prompt_tokens, 10);
    assert_int_equal(st.decode_tokens, 10);
    assert_int_equal(st.logits->shape[0], 6);
    const int64_t *got = mtk_tensor_data(out);
    for (int64_t len = 5; len < 11; len++) {
        mtk_kv_cache *fresh = mtk_kv_cache_new(m);
        mtk_tensor *logits = mtk_lm_forward_cached(m, columns(ctx, out, 0, len), fresh, NULL); /* (2, len, 101) */
        assert_non_null(logits);
        const float *v = mtk_tensor_data(mtk_contiguous(ctx, logits));
        for (int64_t r = 0; r < 2; r++) {
            const float *row = v + (r * len + len - 1) * 101;
            int64_t best = 0;
            for (int64_t k = 1; k < 101; k++)
                if (row[k] > row[best]) best = k;
            assert_int_equal(got[r * 11 + len], best);
        }
    }
    mtk_ctx_free(ctx);
}

static void generate_refuses_no_tokens_meta_models_and_encoders(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, config("llama", 1, ""), false);
    mtk_tensor *ids = ids_cpu(ctx, 1, 3, 0);
    mtk_generate_options o = { .max_new_tokens = 0 };
    assert_null(mtk_lm_generate(m, ids, &o, NULL));
    assert_non_null(strstr(mtk_ctx_message(ctx), "max_new_tokens must be >= 1, got 0"));
    mtk_ctx_clear_error(ctx);
    o.max_new_tokens = 2;
    mtk_module *meta = build(ctx, config("llama", 1, ""), true);
    assert_null(mtk_lm_generate(meta, ids, &o, NULL));
    assert_non_null(strstr(mtk_ctx_message(ctx), "on meta (no weights)"));
    mtk_ctx_clear_error(ctx);
    mtk_model_config *c = mtk_model_config_parse(ctx, "{\"model_type\": \"llama\", \"architectures\": "
        "[\"LlamaModel\"], \"hidden_size\": 32, \"intermediate_size\": 45, \"num_hidden_layers\": 1, "
        "\"num_attention_heads\": 4, \"vocab_size\": 101}", "base.json");
    mtk_module *base = mtk_model_build_config(ctx, c, MTK_FLOAT32);
    mtk_model_config_free(c);
    assert_null(mtk_lm_generate(base, ids, &o, NULL));
    assert_non_null(strstr(mtk_ctx_message(ctx), "LlamaModel is not a language model"));
    mtk_ctx_free(ctx);
}

/* A left-padded row generates what the same row without the padding does. */
static void left_padding_does_not_change_a_row(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, config("llama", 2, ""), false);
    mtk_tensor *ids = ids_cpu(ctx, 2, 6, 0), *mask = ids_cpu(ctx, 2, 6, 0);
    int64_t *d = mtk_tensor_data(ids), *k = mtk_tensor_data(mask);
    for (int64_t j = 0; j < 12; j++) k[j] = !(j < 2); /* row 0: two pads */
    d[0] = d[1] = 0;
    mtk_generate_options o = { .max_new_tokens = 5, .attention_mask = mask };
    mtk_tensor *padded = mtk_lm_generate(m, ids, &o, NULL);
    if (!padded) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_generate_options plain = { .max_new_tokens = 5 };
    mtk_tensor *alone = mtk_lm_generate(m, columns(ctx, mtk_narrow(ctx, ids, 0, 0, 1), 2, 4), &plain, NULL);
    assert_non_null(alone);
    const int64_t *a = mtk_tensor_data(padded), *b = mtk_tensor_data(alone);
    for (int64_t j = 0; j < 5; j++) assert_int_equal(a[6 + j], b[4 + j]);
    mtk_ctx_free(ctx);
}

/* Each step gives its metadata back to the arena: ten times the steps
 * grow the context's arena no more than a few steps do (it grew by tens of
 * KB a step before). */
static void generate_keeps_the_arena_flat_across_steps(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, config("mistral", 2, ", \"sliding_window\": 4"), false);
    mtk_tensor *ids = ids_cpu(ctx, 2, 5, 0);
    size_t growth[2];
    mtk_tensor *out[2];
    int64_t steps[2] = { 4, 40 };
    for (int32_t i = 0; i < 2; i++) {
        size_t before = mtk_ctx_arena_bytes(ctx);
        mtk_generate_options o = { .max_new_tokens = steps[i], .output_logits = true };
        mtk_generate_stats st;
        out[i] = mtk_lm_generate(m, ids, &o, &st);
        if (!out[i]) fail_msg("%s", mtk_ctx_message(ctx));
        assert_int_equal(st.logits->shape[0], steps[i]);
        growth[i] = mtk_ctx_arena_bytes(ctx) - before;
    }
    assert_true(growth[1] <= growth[0] + 128 * 1024);
    /* the kept tensors survived the resets: the longer run starts as the shorter one */
    const int64_t *a = mtk_tensor_data(out[0]), *b = mtk_tensor_data(out[1]);
    for (int64_t r = 0; r < 2; r++)
        for (int64_t j = 0; j < 9; j++) assert_int_equal(a[r * 9 + j], b[r * 45 + j]);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prefill_then_decode_matches_forward_without_cache),
        cmocka_unit_test(sliding_window_decode_matches_a_longer_prefill),
        cmocka_unit_test(sliding_window_changes_the_logits),
        cmocka_unit_test(sliding_cache_keeps_the_concatenation_behind_its_view),
        cmocka_unit_test(layer_types_follow_the_family),
        cmocka_unit_test(assumed_cache_equals_the_stepped_one),
        cmocka_unit_test(cache_refuses_other_models_and_batches),
        cmocka_unit_test(sinks_and_chunks_decode_matches_forward_without_cache),
        cmocka_unit_test(own_layers_decode_matches_their_forward_without_cache),
        cmocka_unit_test(generate_equals_greedy_decoding_without_a_cache),
        cmocka_unit_test(generate_refuses_no_tokens_meta_models_and_encoders),
        cmocka_unit_test(left_padding_does_not_change_a_row),
        cmocka_unit_test(generate_keeps_the_arena_flat_across_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
