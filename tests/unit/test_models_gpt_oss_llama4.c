/* The gpt_oss and llama4 families' config rules (their module trees,
 * counts and forwards are checked against transformers in tests/models/):
 * GptOssConfig's default yarn rope, the errors of configs that cannot
 * build, and a llama4 config's text part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "unit_models.h"

#define GPT_OSS_TINY                                                                                            \
    "\"model_type\": \"gpt_oss\", \"hidden_size\": 32, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, " \
    "\"head_dim\": 64, \"num_hidden_layers\": 2, \"intermediate_size\": 24, \"vocab_size\": 50"
#define LLAMA4_TINY                                                                                               \
    "\"hidden_size\": 32, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 8, "              \
    "\"num_hidden_layers\": 4, \"intermediate_size\": 24, \"intermediate_size_mlp\": 40, \"vocab_size\": 50, " \
    "\"num_local_experts\": 3"

static void assert_error_contains(mtk_ctx *ctx, const char *part)
{
    assert_int_not_equal(mtk_ctx_status(ctx), MTK_OK);
    if (!strstr(mtk_ctx_message(ctx), part)) fail_msg("error lacks '%s': %s", part, mtk_ctx_message(ctx));
}

/* inv_freq of the GptOssModel built on the cpu from `json` (32 values: head_dim 64). */
static const float *inv_freq(mtk_ctx *ctx, const char *json)
{
    mtk_model_config *c = mtk_model_config_parse(ctx, json, "test.json");
    assert_non_null(c);
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_FLOAT32);
    mtk_model_config_free(c);
    if (!m) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_named_tensor *buffers = NULL;
    int32_t n = mtk_module_named_buffers(m, &buffers);
    mtk_tensor *t = NULL;
    for (int32_t i = 0; i < n; i++)
        if (strcmp(buffers[i].name, "rotary_emb.inv_freq") == 0) t = buffers[i].tensor; /* GptOssModel */
    assert_non_null(t);
    assert_false(mtk_tensor_is_meta(t));
    assert_int_equal(mtk_tensor_numel(t), 32);
    return mtk_tensor_data(t);
}

/* No rope settings: yarn, factor 32 over 4096 positions (theta 150000):
 * the lowest frequency is interpolated (/ 32), the highest kept. */
static void gpt_oss_without_rope_settings_uses_yarn(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const float *yarn = inv_freq(ctx, "{" GPT_OSS_TINY "}");
    const float *plain = inv_freq(ctx, "{" GPT_OSS_TINY ", \"rope_scaling\": {\"rope_type\": \"default\"}}");
    assert_float_equal(plain[31], 1.0 / pow(150000.0, 62.0 / 64.0), 1e-9);
    assert_float_equal(yarn[31] * 32.0, plain[31], 1e-9);
    assert_float_equal(yarn[0], plain[0], 1e-7);
    mtk_ctx_free(ctx);
}

static void configs_that_cannot_build_say_why(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *message;
    } cases[] = {
        { "{" GPT_OSS_TINY ", \"num_local_experts\": 2, \"num_experts_per_tok\": 3}",
          "field 'num_experts_per_tok': 3 is more than num_local_experts=2" },
        { "{\"model_type\": \"llama4_text\", " LLAMA4_TINY ", \"no_rope_layers\": [1, 0]}",
          "field 'no_rope_layers': has 2 entries for 4 layers" },
        { "{\"model_type\": \"llama4_text\", " LLAMA4_TINY ", \"num_experts_per_tok\": 4}",
          "field 'num_experts_per_tok': 4 is more than num_local_experts=3" },
        { "{\"model_type\": \"llama4_text\", " LLAMA4_TINY ", \"layer_types\": [\"full_attention\"]}",
          "field 'layer_types': must be a list of num_hidden_layers=4 strings" },
        { "{\"model_type\": \"llama4\"}", "missing required field 'text_config'" },
        { "{\"model_type\": \"llama4\", \"text_config\": {\"hidden_size\": 32}}",
          "test.json: text_config: missing required field" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        assert_null(unit_model_from_text(ctx, cases[i].json, "test.json"));
        assert_error_contains(ctx, cases[i].message);
        mtk_ctx_free(ctx);
    }
}

/* A llama4 config: Llama4ForConditionalGeneration holding language_model
 * only, with the text model's parameters; interleave step 2 puts experts
 * on layers 1 and 3. */
static void llama4_config_builds_its_language_model(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = unit_model_from_text(
        ctx, "{\"model_type\": \"llama4\", \"text_config\": {" LLAMA4_TINY ", \"interleave_moe_layer_step\": 2}}",
        "test.json");
    if (!m) fail_msg("%s", mtk_ctx_message(ctx));
    assert_string_equal(mtk_module_type_name(m), "Llama4ForConditionalGeneration");
    assert_int_equal(mtk_module_child_count(m), 1);
    assert_non_null(mtk_module_find_tensor(m, "language_model.lm_head.weight"));
    assert_non_null(mtk_module_find_tensor(m, "language_model.model.layers.1.feed_forward.experts.gate_up_proj"));
    assert_non_null(mtk_module_find_tensor(m, "language_model.model.layers.2.feed_forward.gate_proj.weight"));
    assert_null(mtk_module_find_tensor(m, "language_model.model.layers.0.feed_forward.router.weight"));
    mtk_ctx_free(ctx);
}

/* The KV cache of a llama4 config is its language model's: assumed 10
 * tokens long, the chunked layers (chunk 4: rope layers 0, 1, 2) hold 4
 * and show the last 3 (DynamicSlidingWindowLayer's window - 1), the NoPE
 * layer 3 all 10; equal to the llama4_text config's. */
static void llama4_config_caches_like_its_text_model(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *wrapped = unit_model_from_text(
        ctx, "{\"model_type\": \"llama4\", \"text_config\": {" LLAMA4_TINY ", \"attention_chunk_size\": 4}}",
        "test.json");
    mtk_module *text = unit_model_from_text(
        ctx, "{\"model_type\": \"llama4_text\", \"architectures\": [\"Llama4ForCausalLM\"], " LLAMA4_TINY
             ", \"attention_chunk_size\": 4}",
        "test.json");
    if (!wrapped || !text) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_kv_cache *a = mtk_kv_cache_new(wrapped), *b = mtk_kv_cache_new(text);
    assert_true(a && b && mtk_kv_cache_assume(a, 2, 10) && mtk_kv_cache_assume(b, 2, 10));
    assert_int_equal(mtk_kv_cache_layer_count(a), 4);
    static const int64_t held[4] = { 4, 4, 4, 10 }, shown[4] = { 3, 3, 3, 10 };
    for (int32_t i = 0; i < 4; i++) {
        assert_int_equal(mtk_kv_cache_layer_at(a, i)->keys_base->shape[2], held[i]);
        assert_int_equal(mtk_kv_cache_layer_at(a, i)->keys->shape[2], shown[i]);
    }
    /* (2, 2 kv heads, T, 8) float32 keys and values per layer */
    assert_int_equal(mtk_kv_cache_storage_bytes(a), 2 * 2 * 2 * 8 * 4 * (4 + 4 + 4 + 10));
    assert_int_equal(mtk_kv_cache_storage_bytes(a), mtk_kv_cache_storage_bytes(b));
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpt_oss_without_rope_settings_uses_yarn),
        cmocka_unit_test(configs_that_cannot_build_say_why),
        cmocka_unit_test(llama4_config_builds_its_language_model),
        cmocka_unit_test(llama4_config_caches_like_its_text_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
