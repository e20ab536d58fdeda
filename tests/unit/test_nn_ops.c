/* The nn ops: shapes, strides and errors as torch 2.13 gives them on
 * device='meta', cpu values computed by torch (F.softmax, F.layer_norm,
 * F.scaled_dot_product_attention, ... on the same inputs), and FLOPs as
 * torch.utils.flop_counter.FlopCounterMode counts them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"
#include "mtk/ops/nn.h"
#include "mtk/ops/convert.h"
#include "mtk/ops/view.h"
#include "ops/registry.h"

/* ---------------------------------------------------------------- helpers */

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define NDIM(...) ((int32_t)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
#define META(ctx, dtype, ...) mtk_tensor_new(ctx, dtype, SHAPE(__VA_ARGS__), NDIM(__VA_ARGS__), NULL, MTK_DEVICE_META)

/* A cpu float32 tensor over a copy of `values` (arena memory). */
static mtk_tensor *cpu_f32(mtk_ctx *ctx, const float *values, int32_t ndim, const int64_t *shape)
{
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, ndim, NULL, MTK_DEVICE_CPU);
    assert_non_null(t);
    assert_true(mtk_tensor_alloc_storage(t));
    memcpy(mtk_tensor_data(t), values, (size_t)mtk_tensor_numel(t) * sizeof(float));
    return t;
}
#define CPU(ctx, values, ...) cpu_f32(ctx, values, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))

/* torch.linspace(lo, hi, n) in float32 */
static float *linspace(mtk_ctx *ctx, double lo, double hi, int64_t n)
{
    float *v = mtk_ctx_alloc(ctx, (size_t)n * sizeof(float));
    double step = n > 1 ? (hi - lo) / (double)(n - 1) : 0;
    for (int64_t i = 0; i < n; i++) v[i] = (float)(i < n / 2 ? lo + step * (double)i : hi - step * (double)(n - 1 - i));
    return v;
}

static void assert_shape(const mtk_tensor *t, int32_t ndim, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) assert_int_equal(t->shape[i], shape[i]);
}

static void assert_strides(const mtk_tensor *t, const int64_t *stride)
{
    for (int32_t i = 0; i < t->ndim; i++) assert_int_equal(t->stride[i], stride[i]);
}

static void assert_error(mtk_ctx *ctx, mtk_status status, const char *text)
{
    assert_int_equal(mtk_ctx_status(ctx), status);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("message '%s' lacks '%s'", mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

/* float32 values within torch's oracle tolerance (rtol 1e-5, atol 1e-6) */
static void assert_close(const mtk_tensor *t, const double *want, int64_t n)
{
    assert_non_null(t);
    assert_int_equal(mtk_tensor_numel(t), n);
    assert_int_equal(t->dtype, MTK_FLOAT32);
    const float *got = mtk_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > 1e-6 + 1e-5 * fabs(want[i]))
            fail_msg("element %lld: got %.9g, want %.9g", (long long)i, got[i], want[i]);
}

/* ------------------------------------------------------------ meta rules */

static void softmax_of_int_works_on_meta_but_not_on_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *y = mtk_softmax(ctx, META(ctx, MTK_INT64, 3, 4), 1, MTK_DTYPE_UNDEFINED);
    assert_shape(y, 2, SHAPE(3, 4));
    assert_int_equal(y->dtype, MTK_INT64);
    mtk_tensor *c = mtk_tensor_new(ctx, MTK_INT64, SHAPE(3, 4), 2, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(c));
    memset(mtk_tensor_data(c), 0, 12 * sizeof(int64_t));
    assert_null(mtk_softmax(ctx, c, 1, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_DTYPE, "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'");
    /* dtype= casts first: any input works on cpu */
    assert_non_null(mtk_softmax(ctx, c, 1, MTK_FLOAT32));
    mtk_ctx_free(ctx);
}

static void softmax_output_is_contiguous_and_takes_dtype(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = META(ctx, MTK_FLOAT16, 2, 3, 4, 5);
    mtk_channels_last_strides(x->shape, 4, x->stride);
    mtk_tensor *y = mtk_log_softmax(ctx, x, 1, MTK_FLOAT32);
    assert_int_equal(y->dtype, MTK_FLOAT32);
    assert_strides(y, SHAPE(60, 20, 5, 1));
    mtk_ctx_free(ctx);
}

static void layer_norm_checks_shapes_with_torch_words(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_layer_norm(ctx, META(ctx, MTK_FLOAT32, 2, 3), SHAPE(4), 1, NULL, NULL, 1e-5));
    assert_error(ctx, MTK_ERR_SHAPE,
                 "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]");
    assert_null(mtk_layer_norm(ctx, META(ctx, MTK_FLOAT32, 2, 3), SHAPE(3), 1, META(ctx, MTK_FLOAT32, 4), NULL, 1e-5));
    assert_error(ctx, MTK_ERR_SHAPE,
                 "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and "
                 "normalized_shape = [3]");
    assert_null(mtk_layer_norm(ctx, META(ctx, MTK_FLOAT32, 2, 3), NULL, 0, NULL, NULL, 1e-5));
    assert_error(ctx, MTK_ERR_SHAPE, "Expected normalized_shape to be at least 1-dimensional");
    /* bf16 input with float32 parameters: the input's dtype, contiguous */
    mtk_tensor *x = META(ctx, MTK_BFLOAT16, 3, 2);
    x->stride[0] = 1, x->stride[1] = 3; /* t() of (2, 3) */
    mtk_tensor *y = mtk_layer_norm(ctx, x, SHAPE(2), 1, META(ctx, MTK_FLOAT32, 2), META(ctx, MTK_FLOAT32, 2), 1e-5);
    assert_int_equal(y->dtype, MTK_BFLOAT16);
    assert_strides(y, SHAPE(2, 1));
    mtk_ctx_free(ctx);
}

static void batch_norm_keeps_channels_last_and_checks_features(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = META(ctx, MTK_FLOAT32, 2, 3, 4, 5);
    mtk_channels_last_strides(x->shape, 4, x->stride);
    mtk_tensor *y = mtk_batch_norm(ctx, x, META(ctx, MTK_FLOAT32, 3), META(ctx, MTK_FLOAT32, 3), NULL, NULL, false,
                                   0.1, 1e-5);
    assert_strides(y, SHAPE(60, 1, 15, 3));
    assert_null(mtk_batch_norm(ctx, META(ctx, MTK_FLOAT32, 2, 3), META(ctx, MTK_FLOAT32, 4), META(ctx, MTK_FLOAT32, 3),
                               NULL, NULL, false, 0.1, 1e-5));
    assert_error(ctx, MTK_ERR_SHAPE, "running_mean should contain 3 elements not 4");
    assert_null(mtk_batch_norm(ctx, META(ctx, MTK_FLOAT32, 2, 3), NULL, NULL, NULL, NULL, false, 0.1, 1e-5));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "running_mean must be defined in evaluation mode");
    assert_null(mtk_batch_norm(ctx, META(ctx, MTK_FLOAT32, 1, 3), NULL, NULL, NULL, NULL, true, 0.1, 1e-5));
    assert_error(ctx, MTK_ERR_SHAPE, "Expected more than 1 value per channel when training");
    mtk_ctx_free(ctx);
}

static void group_norm_needs_divisible_channels(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_group_norm(ctx, META(ctx, MTK_FLOAT32, 2, 6, 4), 4, NULL, NULL, 1e-5));
    assert_error(ctx, MTK_ERR_SHAPE,
                 "Expected number of channels in input to be divisible by num_groups, but got input of shape "
                 "[2, 6, 4] and num_groups=4");
    assert_shape(mtk_group_norm(ctx, META(ctx, MTK_FLOAT32, 2, 6, 4), 3, NULL, NULL, 1e-5), 3, SHAPE(2, 6, 4));
    mtk_ctx_free(ctx);
}

static void attention_broadcasts_batch_and_checks_dtypes(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *q = META(ctx, MTK_FLOAT32, 2, 3, 5, 8), *k = META(ctx, MTK_FLOAT32, 3, 7, 8);
    mtk_tensor *y = mtk_scaled_dot_product_attention(ctx, q, k, META(ctx, MTK_FLOAT32, 7, 6), NULL, 0, false, NAN, false);
    assert_shape(y, 4, SHAPE(2, 3, 5, 6));
    assert_strides(y, SHAPE(90, 30, 6, 1));
    assert_null(mtk_scaled_dot_product_attention(ctx, q, META(ctx, MTK_FLOAT16, 2, 3, 7, 8),
                                                 META(ctx, MTK_FLOAT32, 2, 3, 7, 6), NULL, 0, false, NAN, false));
    assert_error(ctx, MTK_ERR_DTYPE, "Expected query, key, and value to have the same dtype");
    assert_null(mtk_scaled_dot_product_attention(ctx, q, k, META(ctx, MTK_FLOAT32, 7, 6), META(ctx, MTK_BOOL, 5, 7),
                                                 0, true, NAN, false));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "Explicit attn_mask should not be set when is_causal=True");
    /* grouped-query attention: 4 query heads over 2 key/value heads */
    y = mtk_scaled_dot_product_attention(ctx, META(ctx, MTK_FLOAT32, 2, 4, 5, 8), META(ctx, MTK_FLOAT32, 2, 2, 7, 8),
                                         META(ctx, MTK_FLOAT32, 2, 2, 7, 6), NULL, 0, false, NAN, true);
    assert_shape(y, 4, SHAPE(2, 4, 5, 6));
    assert_null(mtk_scaled_dot_product_attention(ctx, META(ctx, MTK_FLOAT32, 2, 6, 5, 8),
                                                 META(ctx, MTK_FLOAT32, 2, 4, 7, 8), META(ctx, MTK_FLOAT32, 2, 4, 7, 6),
                                                 NULL, 0, false, NAN, true));
    assert_error(ctx, MTK_ERR_SHAPE, "Number of heads in key and value must divide the number of heads in query");
    mtk_ctx_free(ctx);
}

/* FlopCounterMode on torch 2.13 (the math path's two products) */
static void attention_flops_follow_flop_counter_mode(void **state)
{
    (void)state;
    static const struct {
        int64_t q[4], k[4], v[4];
        int32_t nq, nk, nv;
        bool gqa;
        int64_t flops;
    } cases[] = {
        { { 2, 3, 5, 8 }, { 2, 3, 7, 8 }, { 2, 3, 7, 6 }, 4, 4, 4, false, 5880 },
        { { 5, 8 }, { 7, 8 }, { 7, 6 }, 2, 2, 2, false, 980 },
        { { 3, 5, 8 }, { 3, 7, 8 }, { 2, 3, 7, 6 }, 3, 3, 4, false, 4200 },
        { { 2, 4, 5, 8 }, { 2, 2, 7, 8 }, { 2, 1, 7, 6 }, 4, 4, 4, true, 7840 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_op_call call;
        mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_SCALED_DOT_PRODUCT_ATTENTION));
        call.args[0] = mtk_value_tensor(mtk_tensor_new(ctx, MTK_FLOAT32, cases[i].q, cases[i].nq, NULL, MTK_DEVICE_META));
        call.args[1] = mtk_value_tensor(mtk_tensor_new(ctx, MTK_FLOAT32, cases[i].k, cases[i].nk, NULL, MTK_DEVICE_META));
        call.args[2] = mtk_value_tensor(mtk_tensor_new(ctx, MTK_FLOAT32, cases[i].v, cases[i].nv, NULL, MTK_DEVICE_META));
        call.args[7] = mtk_value_bool(cases[i].gqa);
        assert_true(mtk_op_run(&call));
        assert_int_equal(call.op->cost(&call).flops, cases[i].flops);
        mtk_ctx_free(ctx);
    }
}

static void cross_entropy_shapes_follow_target_kind(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* class indices (N, C, d1, d2) with 'none': (N, d1, d2) */
    mtk_tensor *y = mtk_cross_entropy(ctx, META(ctx, MTK_FLOAT32, 4, 5, 3, 2), META(ctx, MTK_INT64, 4, 3, 2), NULL,
                                      -100, "none", 0);
    assert_shape(y, 3, SHAPE(4, 3, 2));
    /* probabilities promote with the target */
    y = mtk_cross_entropy(ctx, META(ctx, MTK_FLOAT32, 4, 5), META(ctx, MTK_FLOAT64, 4, 5), NULL, -100, "mean", 0);
    assert_int_equal(y->ndim, 0);
    assert_int_equal(y->dtype, MTK_FLOAT64);
    assert_null(mtk_cross_entropy(ctx, META(ctx, MTK_FLOAT32, 4, 5), META(ctx, MTK_INT64, 3), NULL, -100, "mean", 0));
    assert_error(ctx, MTK_ERR_SHAPE, "Expected input batch_size (4) to match target batch_size (3).");
    assert_null(mtk_cross_entropy(ctx, META(ctx, MTK_FLOAT32, 4, 5), META(ctx, MTK_INT64, 4), NULL, -100, "foo", 0));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "foo is not a valid value for reduction");
    mtk_ctx_free(ctx);
}

static void dropout_without_training_returns_the_input_itself(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = META(ctx, MTK_FLOAT32, 4, 3);
    assert_ptr_equal(mtk_dropout(ctx, x, 0.5, false, false), x);
    assert_ptr_equal(mtk_dropout(ctx, x, 0.0, true, false), x);
    /* training: a new tensor laid out like the input (t() keeps (1, 3)) */
    mtk_tensor *t = META(ctx, MTK_FLOAT32, 3, 4);
    t->stride[0] = 1, t->stride[1] = 3;
    mtk_tensor *y = mtk_dropout(ctx, t, 0.5, true, false);
    assert_true(y != t);
    assert_strides(y, SHAPE(1, 3));
    assert_null(mtk_dropout(ctx, x, 1.5, true, false));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "dropout probability has to be between 0 and 1, but got 1.5");
    assert_null(mtk_dropout1d(ctx, META(ctx, MTK_FLOAT32, 4), 0.5, true, false));
    assert_error(ctx, MTK_ERR_SHAPE, "dropout1d: Expected 2D or 3D input, but received a 1D input");
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------------- cpu values */

static void softmax_values_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = CPU(ctx, linspace(ctx, -2, 2, 6), 2, 3);
    static const double soft[] = { 0.12227071821689606, 0.272118479013443, 0.6056108474731445,
                                   0.12227071076631546, 0.272118479013443, 0.6056107878684998 };
    assert_close(mtk_softmax(ctx, x, 1, MTK_DTYPE_UNDEFINED), soft, 6);
    static const double logsoft[] = { -2.4868361949920654, -2.4868361949920654, -2.4868361949920654,
                                      -0.08683611452579498, -0.08683611452579498, -0.08683611452579498 };
    assert_close(mtk_log_softmax(ctx, x, 0, MTK_DTYPE_UNDEFINED), logsoft, 6);
    mtk_ctx_free(ctx);
}

static void layer_and_rms_norm_values_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = CPU(ctx, linspace(ctx, -2, 2, 6), 2, 3);
    mtk_tensor *w = CPU(ctx, ((const float[]){ 1, 2, 3 }), 3), *b = CPU(ctx, ((const float[]){ 0.5f, 0, -0.5f }), 3);
    static const double ln[] = { -0.724730372428894, 0.0, 3.174191474914551, -0.7247306108474731, 0.0, 3.1741909980773926 };
    assert_close(mtk_layer_norm(ctx, x, SHAPE(3), 1, w, b, 1e-5), ln, 6);
    static const double rms[] = { -1.4638500213623047, -1.7566200494766235, -0.878309965133667,
                                  0.29276999831199646, 1.7566200494766235, 4.391550064086914 };
    assert_close(mtk_rms_norm(ctx, x, SHAPE(3), 1, w, NAN), rms, 6);
    mtk_ctx_free(ctx);
}

static void batch_norm_training_updates_running_stats(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = CPU(ctx, linspace(ctx, -3, 3, 24), 2, 4, 3);
    mtk_tensor *rm = CPU(ctx, ((const float[]){ 0, 1, 2, 3 }), 4), *rv = CPU(ctx, ((const float[]){ 1, 2, 3, 4 }), 4);
    mtk_tensor *y = mtk_batch_norm(ctx, x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    assert_non_null(y);
    static const double out[] = { -1.1560096740722656, -0.9908654093742371, -0.8257212042808533,
                                  -1.156009554862976, -0.9908654093742371, -0.8257212042808533 };
    const float *got = mtk_tensor_data(y);
    for (int i = 0; i < 6; i++) assert_true(fabs(got[i] - out[i]) < 1e-5);
    static const double mean[] = { -0.11739130318164825, 0.8608695268630981, 1.8391304016113281, 2.8173911571502686 };
    static const double var[] = { 1.1994328498840332, 2.099432945251465, 2.9994328022003174, 3.899432897567749 };
    assert_close(rm, mean, 4);
    assert_close(rv, var, 4);
    mtk_ctx_free(ctx);
}

static void attention_values_match_torch_causal_and_masked(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *q = CPU(ctx, linspace(ctx, -1, 1, 24), 1, 2, 3, 4);
    mtk_tensor *k = CPU(ctx, linspace(ctx, -2, 1, 40), 1, 2, 5, 4);
    mtk_tensor *v = CPU(ctx, linspace(ctx, 0, 3, 20), 1, 2, 5, 2);
    static const double causal[] = { 0.0, 0.15789473056793213, 0.1327626258134842, 0.2906573414802551,
                                     0.2933011054992676, 0.4511958360671997, 1.5789474248886108, 1.736842155456543,
                                     1.7619743347167969, 1.9198689460754395, 2.0023298263549805, 2.160224437713623 };
    assert_close(mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0, true, NAN, false), causal, 12);
    /* a (1, 5) bool mask broadcast over the 3 query rows */
    mtk_tensor *mask = mtk_tensor_new(ctx, MTK_BOOL, SHAPE(1, 5), 2, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(mask));
    memcpy(mtk_tensor_data(mask), ((const bool[]){ true, false, true, true, false }), 5);
    static const double masked[] = { 0.26353779435157776, 0.4214325249195099, 0.36370766162872314, 0.5216023921966553,
                                     0.47265100479125977, 0.6305457353591919, 2.156278133392334, 2.3141729831695557,
                                     2.2459969520568848, 2.4038915634155273, 2.3163001537323, 2.4741950035095215 };
    /* the same on one thread and on two */
    mtk_ctx_set_num_threads(ctx, 1);
    assert_close(mtk_scaled_dot_product_attention(ctx, q, k, v, mask, 0, false, NAN, false), masked, 12);
    mtk_ctx_set_num_threads(ctx, 2);
    assert_close(mtk_scaled_dot_product_attention(ctx, q, k, v, mask, 0, false, NAN, false), masked, 12);
    mtk_ctx_set_num_threads(ctx, 0);
    mtk_ctx_free(ctx);
}

/* The float32 kernel (row copies, float softmax) against the float64 one
 * (element gathers, double softmax) on the same values: a transposed key
 * (column stride != 1), a sliced value (row stride != its width), an
 * additive mask that leaves one query row nothing to attend to (zeros);
 * causal. */
static void attention_float32_matches_float64_on_strided_operands(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *q = CPU(ctx, linspace(ctx, -1, 1, 24), 1, 2, 3, 4);
    mtk_tensor *k = mtk_transpose(ctx, CPU(ctx, linspace(ctx, -2, 1, 40), 1, 2, 4, 5), 2, 3); /* (1, 2, 5, 4) */
    mtk_tensor *v = mtk_narrow(ctx, CPU(ctx, linspace(ctx, 0, 3, 30), 1, 2, 5, 3), 3, 0, 2); /* (1, 2, 5, 2) */
    float m[15];
    for (int i = 0; i < 15; i++) m[i] = i / 5 == 1 ? -INFINITY : 0.25f * (float)(i % 4);
    mtk_tensor *mask = CPU(ctx, m, 3, 5);
    for (int causal = 0; causal < 2; causal++) {
        mtk_tensor *mk = causal ? NULL : mask; /* torch takes one or the other */
        mtk_tensor *y = mtk_scaled_dot_product_attention(ctx, q, k, v, mk, 0, causal, NAN, false);
        mtk_tensor *ref = mtk_scaled_dot_product_attention(
            ctx, mtk_to_dtype(ctx, q, MTK_FLOAT64), mtk_to_dtype(ctx, k, MTK_FLOAT64), mtk_to_dtype(ctx, v, MTK_FLOAT64),
            mk ? mtk_to_dtype(ctx, mk, MTK_FLOAT64) : NULL, 0, causal, NAN, false);
        if (!y) fail_msg("%s", mtk_ctx_message(ctx));
        assert_non_null(ref);
        assert_int_equal(y->dtype, MTK_FLOAT32);
        const float *got = mtk_tensor_data(y);
        const double *want = mtk_tensor_data(ref);
        for (int64_t i = 0; i < 12; i++) {
            assert_true(fabs(got[i] - want[i]) <= 1e-6 * (1 + fabs(want[i])));
            if (!causal && (i / 2) % 3 == 1) assert_true(got[i] == 0.0f); /* query row 1: every key masked */
        }
    }
    mtk_ctx_free(ctx);
}

/* bfloat16 keys and values read through row strides (a narrowed cache,
 * a transposed head layout) give the bits of the same values copied
 * contiguous first */
static void attention_bf16_strided_cache_matches_a_contiguous_copy(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *q = mtk_to_dtype(ctx, CPU(ctx, linspace(ctx, -1, 1, 16), 1, 2, 1, 8), MTK_BFLOAT16);
    /* (1, 2, 9, 8) caches, 5 positions used; values as (1, 9, 2, 8) transposed */
    mtk_tensor *kc = mtk_to_dtype(ctx, CPU(ctx, linspace(ctx, -2, 1, 144), 1, 2, 9, 8), MTK_BFLOAT16);
    mtk_tensor *vc = mtk_to_dtype(ctx, CPU(ctx, linspace(ctx, 0, 3, 144), 1, 9, 2, 8), MTK_BFLOAT16);
    mtk_tensor *k = mtk_narrow(ctx, kc, 2, 0, 5), *v = mtk_narrow(ctx, mtk_transpose(ctx, vc, 1, 2), 2, 0, 5);
    mtk_tensor *y = mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0, false, NAN, false);
    mtk_tensor *ref = mtk_scaled_dot_product_attention(ctx, q, mtk_contiguous(ctx, k), mtk_contiguous(ctx, v), NULL, 0,
                                                       false, NAN, false);
    if (!y || !ref) fail_msg("%s", mtk_ctx_message(ctx));
    assert_int_equal(y->dtype, MTK_BFLOAT16);
    assert_memory_equal(mtk_tensor_data(y), mtk_tensor_data(ref), 16 * 2);
    /* and within a bfloat16 ulp of the float32 attention */
    mtk_tensor *y32 = mtk_scaled_dot_product_attention(ctx, mtk_to_dtype(ctx, q, MTK_FLOAT32),
                                                       mtk_to_dtype(ctx, k, MTK_FLOAT32),
                                                       mtk_to_dtype(ctx, v, MTK_FLOAT32), NULL, 0, false, NAN, false);
    mtk_tensor *got = mtk_to_dtype(ctx, y, MTK_FLOAT32);
    assert_non_null(y32);
    assert_non_null(got);
    for (int i = 0; i < 16; i++) {
        float a = ((const float *)mtk_tensor_data(got))[i], b = ((const float *)mtk_tensor_data(y32))[i];
        assert_true(fabsf(a - b) <= fabsf(b) / 128.0f + 1e-6f);
    }
    mtk_ctx_free(ctx);
}

static void losses_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *logits = CPU(ctx, linspace(ctx, -1, 2, 6), 2, 3);
    mtk_tensor *target = mtk_tensor_new(ctx, MTK_INT64, SHAPE(2), 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(target));
    memcpy(mtk_tensor_data(target), ((const int64_t[]){ 2, 0 }), sizeof(int64_t) * 2);
    assert_close(mtk_cross_entropy(ctx, logits, target, NULL, -100, "mean", 0), (const double[]){ 1.2151888608932495 }, 1);
    assert_close(mtk_nll_loss(ctx, logits, target, NULL, -100, "sum"), (const double[]){ -1.0 }, 1);
    /* a class index out of range is torch's IndexError */
    memcpy(mtk_tensor_data(target), ((const int64_t[]){ 3, 0 }), sizeof(int64_t) * 2);
    assert_null(mtk_nll_loss(ctx, logits, target, NULL, -100, "sum"));
    assert_error(ctx, MTK_ERR_INDEX, "Target 3 is out of bounds.");
    mtk_tensor *x = CPU(ctx, linspace(ctx, -2, 2, 6), 2, 3);
    /* x.flip(1) of linspace(-2, 2, 6).view(2, 3) */
    mtk_tensor *xf = CPU(ctx, ((const float[]){ -0.4f, -1.2f, -2, 2, 1.2f, 0.4f }), 2, 3);
    assert_close(mtk_mse_loss(ctx, x, xf, "mean"), (const double[]){ 1.7066668272018433 }, 1);
    mtk_ctx_free(ctx);
}

/* rope_complex against llama4's view_as_real(view_as_complex(x pairs) *
 * freqs_cis) in torch, freqs_cis = polar(1, linspace(0, 1.5, 4).view(2, 2)) */
static void rope_complex_matches_llama4_complex_product(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = CPU(ctx, linspace(ctx, -1, 1, 8), 1, 1, 2, 4);
    static const float cis[] = { 1.0f, 0.0f, 0.8775825500488281f, 0.4794255495071411f,
                                 0.5403022766113281f, 0.8414709568023682f, 0.07073719799518585f, 0.9974949955940247f };
    mtk_tensor *freqs = CPU(ctx, cis, 2, 2, 2); /* (S, D/2, 2) */
    static const double want[] = { -1.0, -0.7142857313156128, -0.3076174557209015, -0.3308369815349579,
                                   -0.2834443747997284, 0.3517681956291199, -0.9469684362411499, 0.783233642578125 };
    assert_close(mtk_rope_complex(ctx, x, freqs), want, 8);
    /* (B, S, D/2, 2) meets a 4-D x after unsqueeze(1), as freqs_cis[:, :, None, :] */
    assert_shape(mtk_rope_complex(ctx, META(ctx, MTK_FLOAT32, 2, 8, 5, 6), META(ctx, MTK_FLOAT32, 2, 5, 3, 2)),
                 4, SHAPE(2, 8, 5, 6));
    /* full-width cos-like tables and integer x are refused */
    assert_null(mtk_rope_complex(ctx, META(ctx, MTK_FLOAT32, 2, 8, 5, 6), META(ctx, MTK_FLOAT32, 5, 6)));
    assert_error(ctx, MTK_ERR_SHAPE, "does not fit x of shape [2, 8, 5, 6]");
    assert_null(mtk_rope_complex(ctx, META(ctx, MTK_INT64, 5, 6), META(ctx, MTK_FLOAT32, 5, 3, 2)));
    assert_error(ctx, MTK_ERR_DTYPE, "floating point");
    mtk_ctx_free(ctx);
}

/* rope with half-width cos/sin against gpt_oss's _apply_rotary_emb in
 * torch: cat(x1 * cos - x2 * sin, x2 * cos + x1 * sin) */
static void rope_takes_half_width_tables_as_gpt_oss(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = CPU(ctx, linspace(ctx, -1, 1, 8), 1, 1, 2, 4);
    mtk_tensor *cos = CPU(ctx, linspace(ctx, 0, 1, 4), 2, 2), *sin = CPU(ctx, linspace(ctx, 1, 0, 4), 2, 2);
    static const double want[] = { 0.4285714030265808,  -0.14285719394683838, -1.0, -0.5238094925880432,
                                   -0.14285719394683838, 0.4285714030265808,  0.5238094925880432, 1.0 };
    assert_close(mtk_rope(ctx, x, cos, sin, false), want, 8);
    /* (B, S, D/2) meets a 4-D x after unsqueeze(1); neither D nor D/2 is refused */
    assert_shape(mtk_rope(ctx, META(ctx, MTK_FLOAT32, 2, 8, 5, 6), META(ctx, MTK_FLOAT32, 2, 5, 3),
                          META(ctx, MTK_FLOAT32, 2, 5, 3), false),
                 4, SHAPE(2, 8, 5, 6));
    assert_null(mtk_rope(ctx, META(ctx, MTK_FLOAT32, 2, 8, 5, 6), META(ctx, MTK_FLOAT32, 5, 4),
                         META(ctx, MTK_FLOAT32, 5, 4), false));
    assert_error(ctx, MTK_ERR_SHAPE, "do not fit x");
    mtk_ctx_free(ctx);
}

/* rope against Hugging Face's x * cos + rotate_half(x) * sin in torch */
static void rope_matches_hugging_face_composition(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = CPU(ctx, linspace(ctx, -1, 1, 8), 1, 1, 2, 4);
    mtk_tensor *cos = CPU(ctx, linspace(ctx, 0, 1, 8), 2, 4), *sin = CPU(ctx, linspace(ctx, 1, 0, 8), 2, 4);
    static const double half[] = { 0.4285714030265808, 0.020408131182193756, -0.8367347121238708, -0.4693877398967743,
                                   -0.22448985278606415, 0.020408153533935547, 0.6326530575752258, 1.0 };
    assert_close(mtk_rope(ctx, x, cos, sin, false), half, 8);
    static const double pairs[] = { 0.7142857313156128, -0.9591836929321289, -0.02040819078683853, -0.30612242221832275,
                                    -0.1020408421754837, 0.34693875908851624, 0.4693877696990967, 1.0 };
    assert_close(mtk_rope(ctx, x, cos, sin, true), pairs, 8);
    /* (B, S, D) cos/sin meet a 4-D x after unsqueeze(1); an odd D is refused */
    assert_shape(mtk_rope(ctx, META(ctx, MTK_FLOAT32, 2, 8, 5, 6), META(ctx, MTK_FLOAT32, 2, 5, 6),
                          META(ctx, MTK_FLOAT32, 2, 5, 6), false),
                 4, SHAPE(2, 8, 5, 6));
    assert_null(mtk_rope(ctx, META(ctx, MTK_FLOAT32, 2, 8, 5, 5), META(ctx, MTK_FLOAT32, 5, 5),
                         META(ctx, MTK_FLOAT32, 5, 5), false));
    assert_error(ctx, MTK_ERR_SHAPE, "even last dim");
    /* an integer x is negated in its dtype: uint8 -2 is 254, -200 is 56 */
    mtk_tensor *xu = mtk_tensor_new(ctx, MTK_UINT8, SHAPE(1, 1, 1, 4), 4, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(xu));
    memcpy(mtk_tensor_data(xu), (const uint8_t[]){ 0, 1, 2, 200 }, 4);
    mtk_tensor *cu = CPU(ctx, ((const float[]){ 0.5f, 0.25f, 1, 2 }), 1, 4);
    mtk_tensor *su = CPU(ctx, ((const float[]){ 1, 0.5f, 0.25f, 1.5f }), 1, 4);
    assert_close(mtk_rope(ctx, xu, cu, su, false), (const double[]){ 254.0, 28.25, 2.0, 401.5 }, 4);
    mtk_ctx_free(ctx);
}

static void dropout_mask_is_deterministic_for_a_seed(void **state)
{
    (void)state;
    float first[64], second[64];
    float ones[64];
    for (int i = 0; i < 64; i++) ones[i] = 1;
    for (int run = 0; run < 2; run++) {
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_ctx_manual_seed(ctx, 42);
        mtk_tensor *y = mtk_dropout(ctx, CPU(ctx, ones, 64), 0.5, true, false);
        assert_non_null(y);
        memcpy(run ? second : first, mtk_tensor_data(y), sizeof first);
        mtk_ctx_free(ctx);
    }
    int kept = 0;
    for (int i = 0; i < 64; i++) {
        assert_true(first[i] == 0.0f || first[i] == 2.0f); /* dropped, or scaled by 1 / (1 - p) */
        kept += first[i] != 0;
    }
    assert_memory_equal(first, second, sizeof first);
    assert_true(kept > 16 && kept < 48);
}

/* ------------------------------------------ torch 2.13's meta decompositions */

/* A meta tensor of `dtype` with the given shape and strides. */
static mtk_tensor *strided(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *stride)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, stride, MTK_DEVICE_META);
    assert_non_null(t);
    return t;
}

static void log_softmax_keeps_odd_size_one_strides_on_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* transpose(f32[1,3,5], 0, 1): torch's meta log_softmax is its
     * decomposition (x.contiguous() - logsumexp), softmax a real kernel */
    mtk_tensor *x = strided(ctx, MTK_FLOAT32, 3, SHAPE(3, 1, 5), SHAPE(5, 15, 1));
    assert_strides(mtk_log_softmax(ctx, x, 0, MTK_DTYPE_UNDEFINED), SHAPE(5, 15, 1));
    assert_strides(mtk_log_softmax(ctx, x, 0, MTK_FLOAT64), SHAPE(5, 15, 1));
    assert_strides(mtk_softmax(ctx, x, 0, MTK_DTYPE_UNDEFINED), SHAPE(5, 5, 1));
    /* movedim(narrow(f16[1,4], 1, 0, 3), 0, 1) with dtype=bf16 */
    x = strided(ctx, MTK_FLOAT16, 2, SHAPE(3, 1), SHAPE(1, 4));
    assert_strides(mtk_log_softmax(ctx, x, 0, MTK_BFLOAT16), SHAPE(1, 3));
    mtk_ctx_free(ctx);
}

static void norms_have_the_strides_of_torch_meta_decompositions(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* layer_norm(transpose(f64[1,3], 0, 1), [3, 1]) */
    mtk_tensor *x = strided(ctx, MTK_FLOAT64, 2, SHAPE(3, 1), SHAPE(1, 3));
    assert_strides(mtk_layer_norm(ctx, x, SHAPE(3, 1), 2, NULL, NULL, 1e-5), SHAPE(1, 3));
    /* rms_norm(transpose(narrow(f32[3,4,5], 1, 1, 1), 1, 2), [1]) */
    x = strided(ctx, MTK_FLOAT32, 3, SHAPE(3, 5, 1), SHAPE(20, 1, 5));
    assert_strides(mtk_rms_norm(ctx, x, SHAPE(1), 1, NULL, NAN), SHAPE(5, 1, 5));
    /* rms_norm of a layout python's are_strides_like_channels_last calls
     * channels-last and torch's C++ suggest_memory_format does not */
    x = strided(ctx, MTK_FLOAT32, 4, SHAPE(3, 4, 4, 1), SHAPE(16, 1, 4, 1));
    assert_strides(mtk_rms_norm(ctx, x, SHAPE(4, 1), 2, META(ctx, MTK_FLOAT32, 4, 1), NAN), SHAPE(16, 4, 1, 1));
    /* group_norm(transpose(f64[1,2], 0, 1), 1); channels-last-like: contiguous */
    x = strided(ctx, MTK_FLOAT64, 2, SHAPE(2, 1), SHAPE(1, 2));
    assert_strides(mtk_group_norm(ctx, x, 1, NULL, NULL, 1e-5), SHAPE(1, 2));
    x = strided(ctx, MTK_BFLOAT16, 4, SHAPE(1, 4, 2, 3), SHAPE(24, 1, 12, 4));
    assert_strides(mtk_group_norm(ctx, x, 2, NULL, NULL, 1e-5), SHAPE(24, 6, 3, 1));
    /* batch_norm(select(transpose(f64[2,4,1], 2, 0), 1, 1), ...) in eval */
    x = strided(ctx, MTK_FLOAT64, 2, SHAPE(1, 2), SHAPE(1, 4));
    assert_strides(mtk_batch_norm(ctx, x, META(ctx, MTK_FLOAT64, 2), META(ctx, MTK_FLOAT64, 2), NULL, NULL, false, 0.1,
                                  1e-5),
                   SHAPE(2, 1));
    /* instance_norm(transpose(f64[1,3,2,1], 0, 3), ...): contiguous, view back */
    x = strided(ctx, MTK_FLOAT64, 4, SHAPE(1, 3, 2, 1), SHAPE(1, 2, 1, 6));
    assert_strides(mtk_instance_norm(ctx, x, NULL, NULL, NULL, META(ctx, MTK_FLOAT64, 3), true, 0.1, 1e-5),
                   SHAPE(6, 2, 1, 6));
    /* instance_norm of uint8 with running statistics (no input stats): meta accepts */
    mtk_tensor *y = mtk_instance_norm(ctx, META(ctx, MTK_UINT8, 3, 2, 2, 3), META(ctx, MTK_UINT8, 2),
                                      META(ctx, MTK_UINT8, 2), NULL, NULL, false, 0.1, 1e-5);
    assert_non_null(y);
    assert_int_equal(y->dtype, MTK_UINT8);
    /* a running_mean alone: fine of x's dtype, refused of another */
    assert_non_null(mtk_instance_norm(ctx, META(ctx, MTK_FLOAT32, 3, 2, 3), META(ctx, MTK_FLOAT32, 2), NULL, NULL, NULL,
                                      true, 0.1, 1e-5));
    assert_null(mtk_instance_norm(ctx, META(ctx, MTK_FLOAT32, 3, 2, 3), META(ctx, MTK_FLOAT16, 2), NULL, NULL, NULL,
                                  true, 0.1, 1e-5));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "Expected a proper Tensor but got None");
    mtk_ctx_free(ctx);
}

static void dropout_lays_out_half_products_as_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* narrow(transpose(bf16[4,3,5], 1, 0), 0, -1, 1): torch's meta mul of
     * two bfloat16 tensors gives (20, 5, 1), of float32 ones (5, 5, 1) */
    mtk_tensor *x = strided(ctx, MTK_BFLOAT16, 3, SHAPE(1, 4, 5), SHAPE(5, 15, 1));
    assert_strides(mtk_dropout(ctx, x, 0.2, true, false), SHAPE(20, 5, 1));
    x = strided(ctx, MTK_FLOAT32, 3, SHAPE(1, 4, 5), SHAPE(5, 15, 1));
    assert_strides(mtk_dropout(ctx, x, 0.2, true, false), SHAPE(5, 5, 1));
    mtk_ctx_free(ctx);
}

static void attention_takes_integer_queries_on_meta_only(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* float32 weights @ int32 value: torch's meta mm mixes dtypes */
    mtk_tensor *y = mtk_scaled_dot_product_attention(ctx, META(ctx, MTK_INT32, 2, 3), META(ctx, MTK_INT32, 4, 3),
                                                     META(ctx, MTK_INT32, 4, 5), META(ctx, MTK_FLOAT32, 2, 4), 0, false,
                                                     NAN, false);
    assert_shape(y, 2, SHAPE(2, 5));
    assert_int_equal(y->dtype, MTK_INT32);
    /* ... its bmm does not */
    assert_null(mtk_scaled_dot_product_attention(ctx, META(ctx, MTK_INT32, 2, 4), META(ctx, MTK_INT32, 3, 4),
                                                 META(ctx, MTK_INT32, 5, 3, 4), NULL, 0, false, NAN, false));
    mtk_ctx_clear_error(ctx);
    /* L == 0: zeros(q dtype) + sums * 0, int64 for a bool query */
    y = mtk_scaled_dot_product_attention(ctx, META(ctx, MTK_BOOL, 3, 1, 0, 3), META(ctx, MTK_BOOL, 3, 1, 4, 3),
                                         META(ctx, MTK_BOOL, 1, 5, 1), NULL, 0, false, NAN, true);
    assert_shape(y, 4, SHAPE(3, 1, 0, 1));
    assert_int_equal(y->dtype, MTK_INT64);
    mtk_ctx_free(ctx);
}

static mtk_tensor *cpu_zeros(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_CPU);
    assert_non_null(t);
    assert_true(mtk_tensor_alloc_storage(t));
    memset(mtk_tensor_data(t), 0, (size_t)mtk_tensor_numel(t) * mtk_dtype_size(dtype));
    return t;
}
#define ZEROS(ctx, dtype, ...) cpu_zeros(ctx, dtype, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))

static void attention_cpu_follows_torch_shortcuts_and_gates(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* an empty value: zeros of (q.shape[:-1], Ev), key's S unchecked */
    mtk_tensor *q = CPU(ctx, linspace(ctx, -1, 1, 24), 3, 2, 4);
    mtk_tensor *y = mtk_scaled_dot_product_attention(ctx, q, ZEROS(ctx, MTK_FLOAT32, 3, 5, 7),
                                                     ZEROS(ctx, MTK_FLOAT32, 3, 0, 4), NULL, 0, false, NAN, false);
    assert_close(y, (const double[24]){ 0 }, 24);
    /* integer queries: torch's cpu refuses, unless the shortcut answers */
    assert_null(mtk_scaled_dot_product_attention(ctx, ZEROS(ctx, MTK_INT32, 3, 2, 4), ZEROS(ctx, MTK_INT32, 3, 3, 4),
                                                 ZEROS(ctx, MTK_INT32, 3, 3, 4), NULL, 0, false, NAN, false));
    assert_error(ctx, MTK_ERR_DTYPE, "expected scalar type Float but found Int");
    y = mtk_scaled_dot_product_attention(ctx, ZEROS(ctx, MTK_INT32, 3, 0, 4), ZEROS(ctx, MTK_INT32, 3, 3, 4),
                                         ZEROS(ctx, MTK_INT32, 3, 3, 4), NULL, 0, false, NAN, false);
    assert_shape(y, 3, SHAPE(3, 0, 4));
    /* a 1-D mask: refused where the flash kernel's gates ask its size(-2) */
    mtk_tensor *m = ZEROS(ctx, MTK_FLOAT32, 5);
    assert_null(mtk_scaled_dot_product_attention(ctx, ZEROS(ctx, MTK_FLOAT32, 3, 2, 1, 4),
                                                 ZEROS(ctx, MTK_FLOAT32, 3, 2, 5, 4), ZEROS(ctx, MTK_FLOAT32, 3, 2, 5, 4),
                                                 m, 0, false, NAN, false));
    assert_error(ctx, MTK_ERR_INDEX, "Dimension out of range");
    assert_non_null(mtk_scaled_dot_product_attention(ctx, ZEROS(ctx, MTK_FLOAT32, 3, 2, 1, 4),
                                                     ZEROS(ctx, MTK_FLOAT32, 1, 2, 5, 4),
                                                     ZEROS(ctx, MTK_FLOAT32, 3, 2, 5, 4), m, 0, false, NAN, false));
    /* a float32 mask with a float16 query (torch's values) */
    mtk_tensor *qh = mtk_to_dtype(ctx, CPU(ctx, linspace(ctx, -1, 1, 24), 1, 2, 3, 4), MTK_FLOAT16);
    mtk_tensor *kh = mtk_to_dtype(ctx, CPU(ctx, linspace(ctx, -2, 1, 40), 1, 2, 5, 4), MTK_FLOAT16);
    mtk_tensor *vh = mtk_to_dtype(ctx, CPU(ctx, linspace(ctx, 0, 3, 20), 1, 2, 5, 2), MTK_FLOAT16);
    y = mtk_scaled_dot_product_attention(ctx, qh, kh, vh, CPU(ctx, linspace(ctx, -1, 0.5, 5), 1, 5), 0, false, NAN,
                                         false);
    assert_non_null(y);
    assert_int_equal(y->dtype, MTK_FLOAT16);
    static const double want[] = { 0.53125, 0.689453125, 0.66552734375, 0.8232421875, 0.79541015625, 0.95361328125,
                                   2.48828125, 2.646484375, 2.578125, 2.736328125, 2.646484375, 2.8046875 };
    mtk_tensor *y32 = mtk_to_dtype(ctx, y, MTK_FLOAT32);
    const float *got = mtk_tensor_data(y32);
    for (int i = 0; i < 12; i++)
        if (fabs(got[i] - want[i]) > 1e-3 + 2e-3 * fabs(want[i])) fail_msg("element %d: %g vs %g", i, got[i], want[i]);
    mtk_ctx_free(ctx);
}

static void rope_refuses_a_bool_x_whatever_cos_is(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_rope(ctx, META(ctx, MTK_BOOL, 1, 2, 4, 4), META(ctx, MTK_FLOAT32, 1, 4, 4),
                         META(ctx, MTK_FLOAT32, 1, 4, 4), false));
    assert_error(ctx, MTK_ERR_DTYPE, "rope needs numbers");
    mtk_ctx_free(ctx);
}

/* torch's cpu batch_norm with a half input: statistics kept in the half
 * dtype, and a non-dense input normalized by a kernel that rounds every
 * step (values from torch 2.13) */
static void batch_norm_half_rounds_as_torch_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static const float xv[] = { -2.5f, -1.25f, 0.125f, 1.5f, 2.75f, 4.0f }, wv[] = { -3.0f, 4.0f };
    mtk_tensor *x = mtk_to_dtype(ctx, CPU(ctx, xv, 1, 2, 1, 3), MTK_FLOAT16);
    mtk_tensor *w = mtk_to_dtype(ctx, CPU(ctx, wv, 2), MTK_FLOAT16);
    mtk_tensor *y = mtk_to_dtype(ctx, mtk_batch_norm(ctx, x, NULL, NULL, w, NULL, true, 0.1, 1e-5), MTK_FLOAT32);
    static const double trained[] = { 3.615234375, 0.11749267578125, -3.73046875, -4.8984375, 0.0, 4.8984375 };
    assert_close(y, trained, 6); /* (exact) half values */
    static const float bv[] = { -2.5f, 0.75f, 1.25f, -0.375f, 3.0f, 2.0f, 0.5f, -1.5f };
    static const float rmv[] = { 0.3f, -0.7f }, rvv[] = { 0.6f, 2.2f }, biv[] = { 0.1f, 0.2f };
    mtk_tensor *base = mtk_to_dtype(ctx, CPU(ctx, bv, 4, 2), MTK_BFLOAT16);
    mtk_tensor *rm = mtk_to_dtype(ctx, CPU(ctx, rmv, 2), MTK_BFLOAT16);
    mtk_tensor *rv = mtk_to_dtype(ctx, CPU(ctx, rvv, 2), MTK_BFLOAT16);
    mtk_tensor *b = mtk_to_dtype(ctx, CPU(ctx, biv, 2), MTK_BFLOAT16);
    /* t(base).unsqueeze(0): (1, 2, 4) with strides (2, 1, 2) */
    mtk_tensor *xt = mtk_as_strided(ctx, base, SHAPE(1, 2, 4), SHAPE(2, 1, 2), 3, 0);
    y = mtk_contiguous(ctx, mtk_to_dtype(ctx, mtk_batch_norm(ctx, xt, rm, rv, NULL, b, false, 0.1, 1e-5), MTK_FLOAT32));
    static const double strided_eval[] = { -3.515625, 1.328125, 3.578125, 0.35546875,
                                           1.1796875, 0.41796875, 2.015625, -0.33984375 };
    assert_close(y, strided_eval, 8);
    y = mtk_to_dtype(ctx, mtk_batch_norm(ctx, mtk_contiguous(ctx, xt), rm, rv, NULL, b, false, 0.1, 1e-5), MTK_FLOAT32);
    static const double dense_eval[] = { -3.515625, 1.3203125, 3.578125, 0.357421875,
                                         1.1796875, 0.41796875, 2.015625, -0.33984375 };
    assert_close(y, dense_eval, 8);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(softmax_of_int_works_on_meta_but_not_on_cpu),
        cmocka_unit_test(softmax_output_is_contiguous_and_takes_dtype),
        cmocka_unit_test(layer_norm_checks_shapes_with_torch_words),
        cmocka_unit_test(batch_norm_keeps_channels_last_and_checks_features),
        cmocka_unit_test(group_norm_needs_divisible_channels),
        cmocka_unit_test(attention_broadcasts_batch_and_checks_dtypes),
        cmocka_unit_test(attention_flops_follow_flop_counter_mode),
        cmocka_unit_test(cross_entropy_shapes_follow_target_kind),
        cmocka_unit_test(dropout_without_training_returns_the_input_itself),
        cmocka_unit_test(softmax_values_match_torch),
        cmocka_unit_test(layer_and_rms_norm_values_match_torch),
        cmocka_unit_test(batch_norm_training_updates_running_stats),
        cmocka_unit_test(attention_values_match_torch_causal_and_masked),
        cmocka_unit_test(attention_float32_matches_float64_on_strided_operands),
        cmocka_unit_test(losses_match_torch),
        cmocka_unit_test(rope_matches_hugging_face_composition),
        cmocka_unit_test(rope_complex_matches_llama4_complex_product),
        cmocka_unit_test(rope_takes_half_width_tables_as_gpt_oss),
        cmocka_unit_test(dropout_mask_is_deterministic_for_a_seed),
        cmocka_unit_test(log_softmax_keeps_odd_size_one_strides_on_meta),
        cmocka_unit_test(norms_have_the_strides_of_torch_meta_decompositions),
        cmocka_unit_test(dropout_lays_out_half_products_as_torch),
        cmocka_unit_test(attention_takes_integer_queries_on_meta_only),
        cmocka_unit_test(attention_cpu_follows_torch_shortcuts_and_gates),
        cmocka_unit_test(rope_refuses_a_bool_x_whatever_cos_is),
        cmocka_unit_test(batch_norm_half_rounds_as_torch_cpu),
        cmocka_unit_test(attention_bf16_strided_cache_matches_a_contiguous_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
