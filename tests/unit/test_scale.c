/* Models far bigger than any real one: names are looked up in constant
 * time (registering, finding, tying and loading the 20,000th layer does
 * not compare 20,000 strings), and sizes past mtk's stated limits are
 * refused before memory is committed, with the field, value and limit in
 * the message.
 *
 * The complexity tests bound the process's cpu time (not wall time) with
 * a wide margin: each takes well under 0.5 s of cpu, and took 5 to 60
 * times the bound when a lookup scanned every name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mtk/mtk.h"
#include "unit_models.h"

#define CPU_BOUND_S 15.0

static double cpu_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

/* A Llama on meta with `layers` tiny layers (tied embeddings), or NULL
 * with the error set. */
static mtk_module *tiny_llama(mtk_ctx *ctx, long long layers, const char *extra)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"model_type\": \"llama\", \"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 8, "
             "\"intermediate_size\": 8, \"num_hidden_layers\": %lld, \"num_attention_heads\": 2, "
             "\"num_key_value_heads\": 2, \"vocab_size\": 16, \"tie_word_embeddings\": true%s}",
             layers, extra);
    return unit_model_from_text(ctx, json, "scale.json");
}

static void module_list_of_60000_finds_every_name_in_linear_time(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_ctx_push_init_mode(ctx, MTK_INIT_META);
    double start = cpu_seconds();
    enum { N = 60000 };
    mtk_module *list = mtk_nn_module_list(ctx);
    for (int i = 0; i < N; i++) assert_true(mtk_nn_module_list_append(list, mtk_nn_linear(ctx, 2, 2, i % 2 == 0)));
    assert_int_equal(mtk_module_child_count(list), N);
    char path[64];
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof path, "%d.weight", i);
        assert_non_null(mtk_module_find_tensor(list, path));
        snprintf(path, sizeof path, "%d.bias", i);
        assert_true((mtk_module_find_tensor(list, path) != NULL) == (i % 2 == 0));
    }
    /* names stay unique, and every name is still found after a copy */
    assert_false(mtk_module_add(list, "123", mtk_nn_identity(ctx)));
    assert_non_null(strstr(mtk_ctx_message(ctx), "attribute '123' already exists"));
    mtk_ctx_clear_error(ctx);
    mtk_module *copy = mtk_module_copy_meta(list);
    assert_non_null(copy);
    assert_non_null(mtk_module_child(copy, "59999"));
    assert_null(mtk_module_child(copy, "60000"));
    mtk_ctx_clear_error(ctx);
    assert_true(mtk_module_tie(copy, "59998.weight", "0.weight"));
    assert_ptr_equal(mtk_module_tensor(copy, "59998.weight"), mtk_module_tensor(copy, "0.weight"));
    double spent = cpu_seconds() - start;
    print_message("60,000 children: %.3f s of cpu\n", spent);
    assert_true(spent < CPU_BOUND_S);
    mtk_ctx_free(ctx);
}

static void llama_of_20000_layers_state_dict_round_trips_in_linear_time(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    double start = cpu_seconds();
    mtk_module *m = tiny_llama(ctx, 20000, "");
    assert_non_null(m);
    mtk_state_dict *sd = mtk_module_state_dict(m);
    assert_non_null(sd);
    assert_int_equal(mtk_state_dict_count(sd), 20000 * 9 + 3); /* 9 per layer, embed, norm, tied head */
    assert_non_null(mtk_state_dict_get(sd, "model.layers.19999.mlp.down_proj.weight"));
    mtk_named_tensor *params = NULL;
    assert_int_equal(mtk_module_named_parameters(m, &params), 20000 * 9 + 2); /* the tied head once */
    /* loading its own state dict: every key matched by name */
    mtk_load_report report;
    assert_true(mtk_module_load_state_dict(m, sd, &(mtk_load_options){ .strict = true, .assign = true }, &report));
    assert_int_equal(report.nmissing + report.nunexpected + report.nmismatched, 0);
    double spent = cpu_seconds() - start;
    print_message("20,000 layers: %.3f s of cpu\n", spent);
    assert_true(spent < CPU_BOUND_S);
    mtk_ctx_free(ctx);
}

static void config_of_a_billion_layers_is_refused_before_building(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    size_t before = mtk_ctx_arena_bytes(ctx);
    assert_null(tiny_llama(ctx, 1000000000LL, ""));
    const char *msg = mtk_ctx_message(ctx);
    assert_non_null(strstr(msg, "num_hidden_layers"));
    assert_non_null(strstr(msg, "1000000000"));
    assert_non_null(strstr(msg, "limit of 100000 layers"));
    assert_true(mtk_ctx_arena_bytes(ctx) - before < ((size_t)1 << 20)); /* nothing built */
    mtk_ctx_free(ctx);
}

static void each_sizing_field_names_its_limit(void **state)
{
    (void)state;
    static const struct { const char *extra; const char *words; } cases[] = {
        { ", \"max_position_embeddings\": 1000000000000", "limit of 268435456 positions" },
        { ", \"head_dim\": 2000000", "'head_dim': 2000000 is over mtk's limit of 1048576 features" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        assert_null(tiny_llama(ctx, 2, cases[i].extra));
        if (!strstr(mtk_ctx_message(ctx), cases[i].words)) fail_msg("%s", mtk_ctx_message(ctx));
        mtk_ctx_free(ctx);
    }
    mtk_ctx *ctx = mtk_ctx_new();
    const char *gpt2 = "{\"model_type\": \"gpt2\", \"architectures\": [\"GPT2Model\"], \"n_layer\": 1, "
                       "\"n_embd\": 8, \"n_head\": 2, \"vocab_size\": 100000000}";
    mtk_model_config *c = mtk_model_config_parse(ctx, gpt2, "gpt2.json");
    assert_null(mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED));
    assert_non_null(strstr(mtk_ctx_message(ctx), "'vocab_size': 100000000 is over mtk's limit of 16777216 tokens"));
    mtk_model_config_free(c);
    mtk_ctx_free(ctx);
}

/* Kimi K2's MoE sizes (384 experts of 2,048 in 61 layers, hidden 7,168,
 * vocab 163,840) as a Mixtral: about a trillion parameters, within the
 * limits. */
static void kimi_k2_sized_moe_builds_within_the_limits(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const char *json = "{\"model_type\": \"mixtral\", \"architectures\": [\"MixtralForCausalLM\"], "
                       "\"hidden_size\": 7168, \"intermediate_size\": 2048, \"num_attention_heads\": 64, "
                       "\"num_key_value_heads\": 64, \"num_hidden_layers\": 61, \"vocab_size\": 163840, "
                       "\"num_local_experts\": 384, \"num_experts_per_tok\": 8}";
    mtk_model_config *c = mtk_model_config_parse(ctx, json, "kimi.json");
    assert_non_null(c);
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_ctx_push_init_mode(ctx, MTK_INIT_META);
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED);
    if (!m) fail_msg("%s", mtk_ctx_message(ctx));
    assert_int_equal(mtk_module_num_parameters(m, false), 1046651827200LL);
    mtk_model_config_free(c);
    mtk_ctx_free(ctx);
}

static void model_over_the_parameter_limit_is_refused(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* 65,536 experts of 1,048,576 x 1,048,576: 2^57 parameters in one tensor */
    const char *json = "{\"model_type\": \"mixtral\", \"architectures\": [\"MixtralForCausalLM\"], "
                       "\"hidden_size\": 1048576, \"intermediate_size\": 1048576, \"num_attention_heads\": 64, "
                       "\"num_key_value_heads\": 64, \"num_hidden_layers\": 2, \"vocab_size\": 16, "
                       "\"num_local_experts\": 65536, \"num_experts_per_tok\": 8}";
    mtk_model_config *c = mtk_model_config_parse(ctx, json, "huge.json");
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_ctx_push_init_mode(ctx, MTK_INIT_META);
    assert_null(mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED));
    assert_non_null(strstr(mtk_ctx_message(ctx), "more than 1125899906842624 parameters, mtk's limit"));
    mtk_model_config_free(c);
    mtk_ctx_free(ctx);
}

static void arena_refuses_one_absurd_request_stating_the_limit(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    size_t before = mtk_ctx_arena_bytes(ctx);
    assert_null(mtk_ctx_alloc(ctx, (size_t)9 << 30)); /* unbind(i8[1000000000])'s 9 GB list */
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(mtk_ctx_message(ctx), "9663676416 bytes"));
    assert_non_null(strstr(mtk_ctx_message(ctx), "limit of one arena request is 1073741824 bytes"));
    assert_int_equal(mtk_ctx_arena_bytes(ctx), before);
    mtk_ctx_clear_error(ctx);
    assert_non_null(mtk_ctx_alloc(ctx, 1024)); /* still usable */
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(module_list_of_60000_finds_every_name_in_linear_time),
        cmocka_unit_test(llama_of_20000_layers_state_dict_round_trips_in_linear_time),
        cmocka_unit_test(config_of_a_billion_layers_is_refused_before_building),
        cmocka_unit_test(each_sizing_field_names_its_limit),
        cmocka_unit_test(kimi_k2_sized_moe_builds_within_the_limits),
        cmocka_unit_test(model_over_the_parameter_limit_is_refused),
        cmocka_unit_test(arena_refuses_one_absurd_request_stating_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
