/* mtk_model_run (include/mtk/run.h): a padded batch gives each kept token
 * the logits it has when its sequence runs alone (left and right padding,
 * a sliding window shorter than the sequence), and bad inputs fail with
 * an error that names them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mtk/mtk.h"

/* A 2-layer mistral (window 3) or llama, hidden 32, vocab 101, built with
 * initialized weights on the cpu. */
static mtk_module *build(mtk_ctx *ctx, const char *model_type)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"model_type\": \"%s\", \"architectures\": [\"%s\"], \"hidden_size\": 32, \"intermediate_size\": 45, "
             "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
             "\"vocab_size\": 101, \"max_position_embeddings\": 64, \"sliding_window\": 3}",
             model_type, strcmp(model_type, "mistral") == 0 ? "MistralForCausalLM" : "LlamaForCausalLM");
    mtk_model_config *c = mtk_model_config_parse(ctx, json, "test.json");
    assert_non_null(c);
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_FLOAT32);
    mtk_model_config_free(c);
    if (!m) fail_msg("%s", mtk_ctx_message(ctx));
    return m;
}

static mtk_tensor *ints(mtk_ctx *ctx, int64_t b, int64_t s, const int64_t *values)
{
    int64_t shape[2] = { b, s };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_CPU);
    assert_true(t && mtk_tensor_alloc_storage(t));
    memcpy(mtk_tensor_data(t), values, (size_t)(b * s) * sizeof *values);
    return t;
}

/* max |a[ra, pa + i] - b[rb, pb + i]| over i < n and the vocabulary. */
static double max_diff(const mtk_tensor *a, int64_t ra, int64_t pa, const mtk_tensor *b, int64_t rb, int64_t pb,
                       int64_t n)
{
    const float *x = mtk_tensor_data(a), *y = mtk_tensor_data(b);
    int64_t v = a->shape[2];
    double worst = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < v; k++) {
            double d = fabs((double)x[(ra * a->shape[1] + pa + i) * v + k] - (double)y[(rb * b->shape[1] + pb + i) * v + k]);
            if (d > worst) worst = d;
        }
    return worst;
}

static mtk_tensor *logits_of(mtk_module *m, mtk_tensor *ids, mtk_tensor *mask)
{
    mtk_model_inputs in = { .input_ids = ids, .attention_mask = mask };
    mtk_model_outputs out;
    if (!mtk_model_run(m, &in, &out)) fail_msg("%s", mtk_ctx_message(mtk_module_ctx(m)));
    assert_int_equal(out.count, 1);
    assert_string_equal(out.names[0], "logits");
    return mtk_contiguous(mtk_module_ctx(m), out.tensors[0]);
}

static void padded_rows_give_each_kept_token_its_unpadded_logits(void **state)
{
    (void)state;
    static const char *const types[] = { "mistral", "llama" };
    for (int t = 0; t < 2; t++) {
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_module *m = build(ctx, types[t]);
        /* row 0 left-padded by 2, row 1 right-padded by 2: the same 6 tokens */
        const int64_t seq[6] = { 5, 17, 42, 9, 77, 3 };
        const int64_t ids[16] = { 0, 0, 5, 17, 42, 9, 77, 3, 5, 17, 42, 9, 77, 3, 0, 0 };
        const int64_t mask[16] = { 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0 };
        mtk_tensor *alone = logits_of(m, ints(ctx, 1, 6, seq), NULL);
        mtk_tensor *padded = logits_of(m, ints(ctx, 2, 8, ids), ints(ctx, 2, 8, mask));
        assert_true(max_diff(padded, 0, 2, alone, 0, 0, 6) < 1e-5);
        assert_true(max_diff(padded, 1, 0, alone, 0, 0, 6) < 1e-5);
        /* without the mask the left padding is attended: the logits move */
        mtk_tensor *unmasked = logits_of(m, ints(ctx, 2, 8, ids), NULL);
        assert_true(max_diff(unmasked, 0, 2, alone, 0, 0, 6) > 1e-4);
        mtk_ctx_free(ctx);
    }
}

static void bad_inputs_fail_naming_them(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, "llama");
    const int64_t ids[4] = { 1, 2, 3, 101 }, ones[4] = { 1, 1, 1, 1 }, twos[4] = { 1, 2, 1, 1 };
    mtk_model_outputs out;
    mtk_model_inputs in = { .input_ids = ints(ctx, 1, 4, ids) };
    assert_false(mtk_model_run(m, &in, &out));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INDEX);
    assert_non_null(strstr(mtk_ctx_message(ctx), "input_ids[0][3] = 101"));
    mtk_ctx_clear_error(ctx);

    in.input_ids = ints(ctx, 2, 2, ones);
    in.attention_mask = ints(ctx, 1, 4, ones);
    assert_false(mtk_model_run(m, &in, &out));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    assert_non_null(strstr(mtk_ctx_message(ctx), "attention_mask is (1, 4) but input_ids is (2, 2)"));
    mtk_ctx_clear_error(ctx);

    in.input_ids = ints(ctx, 1, 4, ones);
    in.attention_mask = ints(ctx, 1, 4, twos);
    assert_false(mtk_model_run(m, &in, &out));
    assert_non_null(strstr(mtk_ctx_message(ctx), "attention_mask holds 2 at row 0, column 1"));
    mtk_ctx_clear_error(ctx);

    in.attention_mask = NULL;
    in.token_type_ids = ints(ctx, 1, 4, ones);
    assert_false(mtk_model_run(m, &in, &out));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_NOT_IMPLEMENTED);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(padded_rows_give_each_kept_token_its_unpadded_logits),
        cmocka_unit_test(bad_inputs_fail_naming_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
