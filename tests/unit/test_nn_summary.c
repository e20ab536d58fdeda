/* Tracing and summaries: ops recorded with their module paths, per-module
 * in/out shapes and FLOPs (FlopCounterMode's counts, taken from torch
 * 2.13), summary text and JSON, the demo models by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "mtk/mtk.h"
#include "nn_test_helpers.h"

static void assert_contains(const char *text, const char *part)
{
    assert_non_null(text);
    if (!strstr(text, part)) fail_msg("text lacks '%s':\n%s", part, text);
}

/* ---------------------------------------------------------------- trace */

static void trace_records_ops_with_their_module_paths(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_trace *tr = mtk_trace_begin(net);
    assert_non_null(tr);
    mtk_tensor *y = mtk_module_forward(net, meta_input(ctx, 2, SHAPE(1, 10)));
    mtk_trace_end(tr);
    assert_non_null(y);
    assert_int_equal(mtk_trace_op_count(tr), 3);
    const char *ops[3] = { "linear", "relu", "linear" }, *paths[3] = { "0", "1", "2" };
    const int64_t flops[3] = { 400, 0, 40 }; /* 2*M*N*K, as FlopCounterMode */
    for (int i = 0; i < 3; i++) {
        const mtk_trace_op *op = mtk_trace_op_at(tr, i);
        assert_string_equal(op->op, ops[i]);
        assert_string_equal(op->module, paths[i]);
        assert_int_equal(op->flops, flops[i]);
    }
    const mtk_trace_op *first = mtk_trace_op_at(tr, 0);
    assert_int_equal(first->ninputs, 3); /* input, weight, bias */
    assert_int_equal(first->outputs[0]->shape[1], 20);
    assert_int_equal(mtk_trace_flops(tr), 440);
    const mtk_trace_module *root = mtk_trace_module_at(tr, 0);
    assert_string_equal(root->name, "");
    assert_int_equal(root->flops, 440);
    assert_int_equal(root->calls, 1);
    assert_int_equal(root->outputs[0]->shape[1], 1);
    /* ops after the trace ended are not recorded */
    mtk_module_forward(net, meta_input(ctx, 2, SHAPE(1, 10)));
    assert_int_equal(mtk_trace_op_count(tr), 3);
    assert_null(mtk_ctx_op_hook(ctx, NULL));
    mtk_trace_free(tr);
    mtk_ctx_free(ctx);
}

static void one_trace_at_a_time(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_trace *tr = mtk_trace_begin(net);
    assert_null(mtk_trace_begin(net));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_clear_error(ctx);
    mtk_trace_free(tr);
    mtk_trace *again = mtk_trace_begin(net);
    assert_non_null(again);
    mtk_trace_free(again);
    mtk_ctx_free(ctx);
}

static void transformer_layer_flops_match_flop_counter(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_transformer_options o = mtk_transformer_defaults();
    o.dim_feedforward = 256;
    mtk_module *layer = mtk_nn_transformer_encoder_layer(ctx, 64, 4, &o);
    mtk_trace *tr = mtk_trace_begin(layer);
    mtk_tensor *y = mtk_module_forward(layer, meta_input(ctx, 3, SHAPE(10, 2, 64)));
    mtk_trace_end(tr);
    if (!y) fail_msg("%s", mtk_ctx_message(ctx));
    /* torch: FlopCounterMode over TransformerEncoderLayer(64, 4, 256) on (10, 2, 64) */
    assert_int_equal(mtk_trace_flops(tr), 2017280);
    for (int32_t i = 0; i < mtk_trace_module_count(tr); i++) {
        const mtk_trace_module *m = mtk_trace_module_at(tr, i);
        if (!strcmp(m->name, "linear1")) assert_int_equal(m->flops, 2 * 20 * 64 * 256);
        if (!strcmp(m->name, "self_attn.out_proj")) assert_int_equal(m->calls, 1);
    }
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------------- summary */

static void summary_of_simplenet_with_an_input(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *x = meta_input(ctx, 2, SHAPE(1, 10));
    mtk_summary *s = mtk_summary_new(net, &x, 1);
    assert_non_null(s);
    char *text = mtk_summary_text(s, 1);
    assert_contains(text, "  | Name | Type   | Params | In sizes | Out sizes | FLOPs\n");
    assert_contains(text, "0 | 0    | Linear | 220    | [1, 10]  | [1, 20]   | 400\n");
    assert_contains(text, "2 | 2    | Linear | 21     | [1, 20]  | [1, 1]    | 40\n");
    assert_contains(text, "241        Trainable params\n");
    assert_contains(text, "0          Non-trainable params\n");
    assert_contains(text, "241        Total params\n");
    assert_contains(text, "964 B      Params memory (float32: 964 B in 241 params)\n");
    assert_contains(text, "440        Forward FLOPs\n");
    assert_contains(text, "Output sizes: [1, 1]\n");
    mtk_summary_free(s);
    mtk_ctx_free(ctx);
}

static void summary_of_a_lazy_model_without_an_input_says_what_to_do(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_lazynet(ctx, NULL);
    mtk_summary *s = mtk_summary_new(net, NULL, 0);
    char *text = mtk_summary_text(s, 1);
    assert_contains(text, "3 | 3    | LazyLinear | ?\n");
    assert_contains(text, "224        Total params\n");
    assert_contains(text, "Uninitialized: 2 lazy parameters in 1 module (3: LazyLinear)");
    assert_contains(text, "--input SHAPE");
    assert_null(strstr(text, "In sizes"));
    cJSON *json = cJSON_Parse(mtk_summary_json(s, 1));
    assert_non_null(json);
    assert_int_equal(cJSON_GetObjectItem(json, "total_params")->valuedouble, 224);
    assert_int_equal(cJSON_GetObjectItem(json, "uninitialized_params")->valuedouble, 2);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(json, "flops")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(json, "output_shapes")), 0);
    cJSON_Delete(json);
    mtk_ctx_free(ctx);
}

static void summary_of_a_lazy_model_with_an_input_counts_everything(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_lazynet(ctx, NULL);
    mtk_tensor *x = meta_input(ctx, 4, SHAPE(1, 3, 32, 32));
    mtk_summary *s = mtk_summary_new(net, &x, 1);
    if (!s) fail_msg("%s", mtk_ctx_message(ctx));
    char *text = mtk_summary_text(s, -1);
    assert_contains(text, "72,234     Total params\n");
    assert_contains(text, "| Linear  | 72,010 | [1, 7200]      | [1, 10]        | 144,000\n");
    assert_null(strstr(text, "Uninitialized"));
    cJSON *json = cJSON_Parse(mtk_summary_json(s, -1));
    assert_int_equal(cJSON_GetObjectItem(json, "total_params")->valuedouble, 72234);
    assert_int_equal(cJSON_GetObjectItem(json, "trainable_params")->valuedouble, 72234);
    assert_int_equal(cJSON_GetObjectItem(json, "non_trainable_params")->valuedouble, 0);
    assert_int_equal(cJSON_GetObjectItem(json, "uninitialized_params")->valuedouble, 0);
    assert_int_equal(cJSON_GetObjectItem(json, "param_bytes")->valuedouble, 72234 * 4);
    assert_int_equal(cJSON_GetObjectItem(json, "flops")->valuedouble, 388800 + 144000);
    cJSON *out = cJSON_GetArrayItem(cJSON_GetObjectItem(json, "output_shapes"), 0);
    assert_int_equal(cJSON_GetArraySize(out), 2);
    assert_int_equal(cJSON_GetArrayItem(out, 1)->valuedouble, 10);
    cJSON *modules = cJSON_GetObjectItem(json, "modules");
    assert_int_equal(cJSON_GetArraySize(modules), 4);
    cJSON *conv = cJSON_GetArrayItem(modules, 0);
    assert_string_equal(cJSON_GetObjectItem(conv, "name")->valuestring, "0");
    assert_string_equal(cJSON_GetObjectItem(conv, "type")->valuestring, "Conv2d");
    assert_int_equal(cJSON_GetObjectItem(conv, "params")->valuedouble, 224);
    assert_int_equal(cJSON_GetObjectItem(conv, "flops")->valuedouble, 388800);
    cJSON *conv_out = cJSON_GetArrayItem(cJSON_GetObjectItem(conv, "out_shapes"), 0);
    assert_int_equal(cJSON_GetArrayItem(conv_out, 3)->valuedouble, 30);
    cJSON_Delete(json);
    mtk_ctx_free(ctx);
}

static void summary_depth_limits_the_rows(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *layer = mtk_nn_transformer_encoder_layer(ctx, 16, 2, NULL);
    mtk_summary *s = mtk_summary_new(layer, NULL, 0);
    cJSON *one = cJSON_Parse(mtk_summary_json(s, 1)), *all = cJSON_Parse(mtk_summary_json(s, -1));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(one, "modules")), 8);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(all, "modules")), 9); /* + self_attn.out_proj */
    assert_contains(mtk_summary_text(s, -1), "self_attn.out_proj | NonDynamicallyQuantizableLinear");
    cJSON_Delete(one);
    cJSON_Delete(all);
    mtk_ctx_free(ctx);
}

static void summary_counts_dtypes_and_frozen_parameters(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_ctx_push_dtype(ctx, MTK_BFLOAT16);
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_ctx_pop_dtype(ctx);
    mtk_module_requires_grad_(mtk_module_child(net, "2"), false);
    mtk_summary *s = mtk_summary_new(net, NULL, 0);
    char *text = mtk_summary_text(s, 1);
    assert_contains(text, "220        Trainable params\n");
    assert_contains(text, "21         Non-trainable params\n");
    assert_contains(text, "(bfloat16: 482 B in 241 params)");
    mtk_ctx_free(ctx);
}

/* Every row of the summary (the root's included) against
 * mtk_module_num_parameters of that row's module: each tensor once per
 * subtree. */
static void assert_rows_count_their_subtrees(mtk_module *root)
{
    mtk_summary *s = mtk_summary_new(root, NULL, 0);
    assert_non_null(s);
    cJSON *json = cJSON_Parse(mtk_summary_json(s, -1));
    const cJSON *row;
    int32_t n = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(json, "modules"))
    {
        const char *name = cJSON_GetObjectItem(row, "name")->valuestring;
        mtk_module *m = mtk_module_child(root, name);
        assert_non_null(m);
        int64_t want = mtk_module_num_parameters(m, false);
        if ((int64_t)cJSON_GetObjectItem(row, "params")->valuedouble != want)
            fail_msg("row %s: %.0f params, its subtree has %lld", name, cJSON_GetObjectItem(row, "params")->valuedouble,
                     (long long)want);
        n++;
    }
    assert_true(n > 3);
    assert_int_equal((int64_t)cJSON_GetObjectItem(json, "total_params")->valuedouble,
                     mtk_module_num_parameters(root, false));
    cJSON_Delete(json);
}

/* a.embed (400), a.x (72), b.c.head tied to a.embed.weight, b.c.z (72),
 * b.w tied to b.c.z.weight: the tied weights count in both holders'
 * subtrees and once in their common ones. */
static mtk_module *tied_tree(mtk_ctx *ctx)
{
    mtk_module *a = mtk_nn_module_dict(ctx), *b = mtk_nn_module_dict(ctx), *c = mtk_nn_module_dict(ctx);
    mtk_module *root = mtk_nn_module_dict(ctx);
    mtk_nn_module_dict_set(a, "embed", mtk_nn_embedding(ctx, 50, 8, MTK_NN_NO_PADDING_IDX));
    mtk_nn_module_dict_set(a, "x", mtk_nn_linear(ctx, 8, 8, true));
    mtk_nn_module_dict_set(c, "head", mtk_nn_linear(ctx, 8, 50, false));
    mtk_nn_module_dict_set(c, "z", mtk_nn_linear(ctx, 8, 8, true));
    mtk_nn_module_dict_set(b, "c", c);
    mtk_nn_module_dict_set(b, "w", mtk_nn_linear(ctx, 8, 8, false));
    mtk_nn_module_dict_set(root, "a", a);
    mtk_nn_module_dict_set(root, "b", b);
    assert_true(mtk_module_tie(root, "b.c.head.weight", "a.embed.weight"));
    assert_true(mtk_module_tie(root, "b.w.weight", "b.c.z.weight"));
    return root;
}

static void summary_rows_count_tied_weights_once_per_subtree(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *root = tied_tree(ctx);
    assert_int_equal(mtk_module_num_parameters(root, false), 400 + 72 + 72);
    assert_rows_count_their_subtrees(root);
    mtk_ctx_free(ctx);
}

static void summary_rows_count_a_shared_module_once_per_subtree(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *root = tied_tree(ctx);
    /* b.shared is a.x itself: listed once (as a.x), counted under b too */
    mtk_nn_module_dict_set(mtk_module_child(root, "b"), "shared", mtk_module_child(root, "a.x"));
    assert_int_equal(mtk_module_num_parameters(mtk_module_child(root, "b"), false), 400 + 72 + 72);
    assert_rows_count_their_subtrees(root);
    mtk_ctx_free(ctx);
}

static void a_failing_forward_fails_the_summary(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *x = meta_input(ctx, 2, SHAPE(1, 9));
    assert_null(mtk_summary_new(net, &x, 1));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_ctx_op_hook(ctx, NULL)); /* the trace ended */
    mtk_ctx_free(ctx);
}

/* ---------------------------------------------------------- demo models */

static void demo_models_resolve_by_name_through_the_one_resolver(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    assert_int_equal(mtk_demo_model_count(), 2);
    assert_non_null(mtk_demo_model_find("lazynet"));
    assert_null(mtk_demo_model_find("llama-3-8b")); /* a config-built one: the zoo's built-ins */
    mtk_model_info info;
    mtk_module *m = mtk_model_resolve(ctx, "simplenet", NULL, &info);
    assert_int_equal(mtk_module_num_parameters(m, false), 241);
    assert_string_equal(info.source, "demo");
    assert_string_equal(info.example_input, "1x10");
    assert_null(mtk_model_resolve(ctx, "resnet9000", NULL, NULL));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_contains(mtk_ctx_message(ctx), "built-in models: simplenet, lazynet, llama-2-7b");
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_model_resolve(ctx, "/nonexistent/config.json", NULL, NULL));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trace_records_ops_with_their_module_paths),
        cmocka_unit_test(one_trace_at_a_time),
        cmocka_unit_test(transformer_layer_flops_match_flop_counter),
        cmocka_unit_test(summary_of_simplenet_with_an_input),
        cmocka_unit_test(summary_of_a_lazy_model_without_an_input_says_what_to_do),
        cmocka_unit_test(summary_of_a_lazy_model_with_an_input_counts_everything),
        cmocka_unit_test(summary_depth_limits_the_rows),
        cmocka_unit_test(summary_counts_dtypes_and_frozen_parameters),
        cmocka_unit_test(a_failing_forward_fails_the_summary),
        cmocka_unit_test(summary_rows_count_tied_weights_once_per_subtree),
        cmocka_unit_test(summary_rows_count_a_shared_module_once_per_subtree),
        cmocka_unit_test(demo_models_resolve_by_name_through_the_one_resolver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
