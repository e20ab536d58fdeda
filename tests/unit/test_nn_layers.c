/* Layers: constructor checks, default init, forward shapes on meta and
 * values on cpu for the layers mtk composes from element-wise ops.
 * Expected values from torch 2.13 (tests/nn/ compares every layer's
 * names, shapes, reprs, FLOPs and init statistics with torch in bulk). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"
#include "nn_test_helpers.h"

static mtk_tensor *cpu_tensor(mtk_ctx *ctx, int32_t ndim, const int64_t *shape, float *data)
{
    return mtk_tensor_from_data(ctx, MTK_FLOAT32, shape, ndim, NULL, data);
}

static void assert_values(const mtk_tensor *t, const float *want, int n)
{
    assert_non_null(t);
    const float *got = mtk_tensor_data(t);
    for (int i = 0; i < n; i++)
        if (fabsf(got[i] - want[i]) > 1e-5f * (1.0f + fabsf(want[i])))
            fail_msg("element %d: %.7g, torch says %.7g", i, got[i], want[i]);
}

/* --------------------------------------------------------------- checks */

static void constructors_check_their_arguments_as_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    assert_null(mtk_nn_conv(ctx, 2, 3, 8, SHAPE(3, 3), &(mtk_conv_options){ .stride = { 1, 1 }, .dilation = { 1, 1 }, .groups = 2, .bias = true }));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "in_channels must be divisible by groups");
    assert_null(mtk_nn_group_norm(ctx, 4, 6, 1e-5, true, true));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "num_channels (6) must be divisible by num_groups (4)");
    assert_null(mtk_nn_multihead_attention(ctx, 10, 3, NULL));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "embed_dim must be divisible by num_heads");
    assert_null(mtk_nn_dropout(ctx, 1.5));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "dropout probability has to be between 0 and 1, but got 1.5");
    assert_null(mtk_nn_embedding(ctx, 10, 4, 10));
    assert_error(ctx, MTK_ERR_INDEX, "Padding_idx must be within num_embeddings");
    assert_null(mtk_nn_transformer_encoder_layer(ctx, 16, 2, &(mtk_transformer_options){ .activation = "tanh" }));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "activation should be relu/gelu, not tanh");
    assert_null(mtk_nn_conv(ctx, 2, 3, 8, SHAPE(3, 3), &(mtk_conv_options){ .stride = { 1, 1 }, .dilation = { 1, 1 }, .groups = 1, .padding_mode = "mirror" }));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "padding_mode must be one of");
    mtk_ctx_free(ctx);
}

static void activations_by_name_include_hugging_face_names(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    assert_string_equal(mtk_module_repr(mtk_nn_activation(ctx, "GELU")), "GELU(approximate='none')");
    assert_string_equal(mtk_module_repr(mtk_nn_activation(ctx, "gelu_new")), "GELU(approximate='tanh')");
    assert_string_equal(mtk_module_type_name(mtk_nn_activation(ctx, "swish")), "SiLU");
    assert_string_equal(mtk_module_repr(mtk_nn_activation(ctx, "LeakyReLU")), "LeakyReLU(negative_slope=0.01)");
    assert_string_equal(mtk_module_repr(mtk_nn_activation(ctx, "RReLU")), "RReLU(lower=0.125, upper=0.3333333333333333)");
    assert_null(mtk_nn_activation(ctx, "Swoosh"));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "unknown activation 'Swoosh' (known: ReLU, ReLU6");
    mtk_ctx_free(ctx);
}

/* ----------------------------------------------------------------- init */

static void embedding_init_is_standard_normal_with_a_zero_padding_row(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *emb = mtk_nn_embedding(ctx, 1000, 100, -1); /* padding_idx 999 */
    assert_string_equal(mtk_module_repr(emb), "Embedding(1000, 100, padding_idx=999)");
    const float *w = mtk_tensor_data(mtk_module_tensor(emb, "weight"));
    double sum = 0, sq = 0;
    for (int i = 0; i < 99900; i++) sum += w[i], sq += (double)w[i] * w[i];
    double mean = sum / 99900, std = sqrt(sq / 99900 - mean * mean);
    assert_true(fabs(mean) < 0.02 && fabs(std - 1.0) < 0.02);
    for (int i = 99900; i < 100000; i++) assert_true(w[i] == 0.0f);
    mtk_ctx_free(ctx);
}

static void mha_init_zeroes_biases_after_out_proj_init(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *mha = mtk_nn_multihead_attention(ctx, 64, 4, NULL);
    const float *in_bias = mtk_tensor_data(mtk_module_tensor(mha, "in_proj_bias"));
    const float *out_bias = mtk_tensor_data(mtk_module_tensor(mha, "out_proj.bias"));
    const float *w = mtk_tensor_data(mtk_module_tensor(mha, "in_proj_weight"));
    const float *out_w = mtk_tensor_data(mtk_module_tensor(mha, "out_proj.weight"));
    for (int i = 0; i < 192; i++) assert_true(in_bias[i] == 0.0f);
    for (int i = 0; i < 64; i++) assert_true(out_bias[i] == 0.0f);
    double xavier = sqrt(6.0 / (64 + 192)), kaiming = 1.0 / 8.0;
    float wmax = 0, omax = 0;
    for (int i = 0; i < 192 * 64; i++) wmax = fmaxf(wmax, fabsf(w[i]));
    for (int i = 0; i < 64 * 64; i++) omax = fmaxf(omax, fabsf(out_w[i]));
    assert_true(wmax <= xavier && wmax > 0.95 * xavier);
    assert_true(omax <= kaiming && omax > 0.95 * kaiming); /* out_proj keeps Linear's init */
    mtk_ctx_free(ctx);
}

static void prelu_starts_at_its_init_value(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *p = mtk_nn_prelu(ctx, 3, 0.25);
    assert_values(mtk_module_tensor(p, "weight"), (const float[]){ 0.25f, 0.25f, 0.25f }, 3);
    mtk_ctx_free(ctx);
}

/* --------------------------------------------------------- meta shapes */

static void lazy_conv_infers_in_channels_batched_or_not(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_conv_options o = mtk_conv_defaults();
    o.groups = 2;
    mtk_module *conv = mtk_nn_lazy_conv(ctx, 2, 4, SHAPE(3, 3), &o);
    assert_string_equal(mtk_module_repr(conv), "LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1), groups=2)");
    assert_shape(mtk_module_forward(conv, meta_input(ctx, 3, SHAPE(6, 8, 8))), 3, SHAPE(4, 6, 6));
    assert_shape(mtk_module_tensor(conv, "weight"), 4, SHAPE(4, 3, 3, 3));
    assert_string_equal(mtk_module_repr(conv), "Conv2d(6, 4, kernel_size=(3, 3), stride=(1, 1), groups=2)");
    mtk_module *bad = mtk_nn_lazy_conv(ctx, 2, 4, SHAPE(3, 3), NULL);
    assert_null(mtk_module_forward(bad, meta_input(ctx, 2, SHAPE(6, 8))));
    assert_error(ctx, MTK_ERR_SHAPE, "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d");
    mtk_ctx_free(ctx);
}

static void batch_norm_checks_the_input_rank(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *bn = mtk_nn_batch_norm(ctx, 2, 3, NULL);
    assert_null(mtk_module_forward(bn, meta_input(ctx, 3, SHAPE(2, 3, 4))));
    assert_error(ctx, MTK_ERR_SHAPE, "expected 4D input (got 3D input)");
    mtk_ctx_free(ctx);
}

static void dropout_in_eval_mode_returns_its_input(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *d = mtk_nn_dropout(ctx, 0.5);
    mtk_tensor *x = meta_input(ctx, 2, SHAPE(4, 5));
    mtk_module_train(d, false);
    assert_ptr_equal(mtk_module_forward(d, x), x);
    mtk_module_train(d, true);
    mtk_tensor *y = mtk_module_forward(d, x);
    assert_shape(y, 2, SHAPE(4, 5));
    mtk_ctx_free(ctx);
}

static void mha_returns_the_averaged_attention_weights(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *mha = mtk_nn_multihead_attention(ctx, 16, 4, NULL);
    mtk_module_io io = { .in = { meta_input(ctx, 3, SHAPE(5, 2, 16)), meta_input(ctx, 3, SHAPE(7, 2, 16)),
                                 meta_input(ctx, 3, SHAPE(7, 2, 16)) },
                         .nin = 3 };
    assert_true(mtk_module_call(mha, &io));
    assert_int_equal(io.nout, 2);
    assert_shape(io.out[0], 3, SHAPE(5, 2, 16));
    assert_shape(io.out[1], 3, SHAPE(2, 5, 7));
    mtk_ctx_free(ctx);
}

static void a_thirty_two_layer_encoder_builds_on_meta_in_under_a_megabyte(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_transformer_options o = mtk_transformer_defaults();
    o.dim_feedforward = 16384;
    mtk_module *stack = mtk_nn_sequential(ctx, 0, NULL);
    for (int i = 0; i < 32; i++)
        assert_true(mtk_nn_sequential_append(stack, mtk_nn_transformer_encoder_layer(ctx, 4096, 32, &o)));
    assert_true(mtk_ctx_arena_bytes(ctx) < 1024 * 1024);
    /* torch: sum(p.numel()) of the same stack */
    assert_int_equal(mtk_module_num_parameters(stack, false), 6444154880LL);
    mtk_tensor *y = mtk_module_forward(stack, meta_input(ctx, 3, SHAPE(128, 1, 4096)));
    assert_shape(y, 3, SHAPE(128, 1, 4096));
    mtk_ctx_free(ctx);
}

/* ----------------------------------------------------------- cpu values */

static void bilinear_computes_torch_values(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_push_init_mode(ctx, MTK_INIT_EMPTY);
    mtk_module *b = mtk_nn_bilinear(ctx, 2, 3, 2, true);
    float *w = mtk_tensor_data(mtk_module_tensor(b, "weight"));
    for (int i = 0; i < 12; i++) w[i] = (float)i; /* arange(12).view(2, 2, 3) */
    float *bias = mtk_tensor_data(mtk_module_tensor(b, "bias"));
    bias[0] = 0.5f, bias[1] = -1.0f;
    float x1[2] = { 1, 2 }, x2[3] = { 1, 0, -1 };
    mtk_tensor *y = mtk_module_forward2(b, cpu_tensor(ctx, 2, SHAPE(1, 2), x1), cpu_tensor(ctx, 2, SHAPE(1, 3), x2));
    assert_shape(y, 2, SHAPE(1, 2));
    assert_values(y, (const float[]){ -5.5f, -7.0f }, 2);
    mtk_ctx_free(ctx);
}

static void prelu_uses_one_slope_per_channel(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *p = mtk_nn_prelu(ctx, 2, 0.25);
    float *w = mtk_tensor_data(mtk_module_tensor(p, "weight"));
    w[0] = 0.1f, w[1] = 0.5f;
    float x[4] = { -1, -2, 3, -4 };
    assert_values(mtk_module_forward(p, cpu_tensor(ctx, 2, SHAPE(2, 2), x)), (const float[]){ -0.1f, -1.0f, 3.0f, -2.0f }, 4);
    mtk_ctx_free(ctx);
}

static void composed_activations_compute_torch_values(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float x[5] = { -2.0f, -0.4f, 0.0f, 0.4f, 2.0f };
    mtk_tensor *in = cpu_tensor(ctx, 1, SHAPE(5), x);
    struct { mtk_module *m; float want[5]; } cases[] = {
        { mtk_nn_activation(ctx, "Softsign"), { -0.6666667f, -0.2857143f, 0.0f, 0.2857143f, 0.6666667f } },
        { mtk_nn_activation(ctx, "Hardshrink"), { -2.0f, 0.0f, 0.0f, 0.0f, 2.0f } },
        { mtk_nn_softshrink(ctx, 0.3), { -1.7f, -0.1f, 0.0f, 0.1f, 1.7f } },
        { mtk_nn_activation(ctx, "Tanhshrink"), { -1.0359724f, -0.020051032f, 0.0f, 0.020051032f, 1.0359724f } },
        { mtk_nn_activation(ctx, "LogSigmoid"), { -2.126928f, -0.9130152f, -0.6931472f, -0.5130153f, -0.126928f } },
        { mtk_nn_threshold(ctx, 0.1, 20.0), { 20.0f, 20.0f, 20.0f, 0.4f, 2.0f } },
        { mtk_nn_celu(ctx, 2.0), { -1.2642411f, -0.36253849f, 0.0f, 0.4f, 2.0f } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) assert_values(mtk_module_forward(cases[i].m, in), cases[i].want, 5);
    float four[4] = { -2.0f, -0.4f, 0.0f, 0.4f };
    assert_values(mtk_module_forward(mtk_nn_glu(ctx, 0), cpu_tensor(ctx, 1, SHAPE(4), four)), (const float[]){ -1.0f, -0.23947506f }, 2);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constructors_check_their_arguments_as_torch),
        cmocka_unit_test(activations_by_name_include_hugging_face_names),
        cmocka_unit_test(embedding_init_is_standard_normal_with_a_zero_padding_row),
        cmocka_unit_test(mha_init_zeroes_biases_after_out_proj_init),
        cmocka_unit_test(prelu_starts_at_its_init_value),
        cmocka_unit_test(lazy_conv_infers_in_channels_batched_or_not),
        cmocka_unit_test(batch_norm_checks_the_input_rank),
        cmocka_unit_test(dropout_in_eval_mode_returns_its_input),
        cmocka_unit_test(mha_returns_the_averaged_attention_weights),
        cmocka_unit_test(a_thirty_two_layer_encoder_builds_on_meta_in_under_a_megabyte),
        cmocka_unit_test(bilinear_computes_torch_values),
        cmocka_unit_test(prelu_uses_one_slope_per_channel),
        cmocka_unit_test(composed_activations_compute_torch_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
