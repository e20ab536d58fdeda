/* The reduce family: result dtypes, shapes, strides and errors as torch
 * 2.13 gives them on meta and cpu, and cpu values computed by torch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"
#include "ops/registry.h"
#include "core/scalar.h"

/* ---------------------------------------------------------------- helpers */

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define NDIM(...) ((int32_t)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
#define META(ctx, dtype, ...) mtk_tensor_new(ctx, dtype, SHAPE(__VA_ARGS__), NDIM(__VA_ARGS__), NULL, MTK_DEVICE_META)
#define DIMS(...) SHAPE(__VA_ARGS__), NDIM(__VA_ARGS__)
#define NONE MTK_DTYPE_UNDEFINED

static void assert_meta(const mtk_tensor *t, mtk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *stride)
{
    assert_non_null(t);
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) {
        assert_int_equal(t->shape[i], shape[i]);
        if (stride) assert_int_equal(t->stride[i], stride[i]);
    }
}

static void assert_error(mtk_ctx *ctx, mtk_status status, const char *text)
{
    assert_int_equal(mtk_ctx_status(ctx), status);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("message '%s' lacks '%s'", mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

/* x = [[1.5, -2, 3.25, 0.5], [4, 4, -1, 2], [0.25, 8, 8, -3.5]] on cpu */
static const float X_DATA[12] = { 1.5f, -2.0f, 3.25f, 0.5f, 4.0f, 4.0f, -1.0f, 2.0f, 0.25f, 8.0f, 8.0f, -3.5f };

static mtk_tensor *matrix_x(mtk_ctx *ctx)
{
    return mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, (void *)X_DATA);
}

static void assert_floats_near(const mtk_tensor *t, const double *want, int64_t n, double rtol)
{
    assert_non_null(t);
    assert_int_equal(mtk_tensor_numel(t), n);
    int64_t idx[MTK_MAX_DIMS] = { 0 };
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int32_t d = 0; d < t->ndim; d++) off += idx[d] * t->stride[d];
        double got;
        if (t->dtype == MTK_FLOAT64) got = ((const double *)mtk_tensor_data(t))[off];
        else got = ((const float *)mtk_tensor_data(t))[off];
        bool same = (isnan(got) && isnan(want[k])) || got == want[k] ||
                    fabs(got - want[k]) <= rtol * fabs(want[k]) + 1e-6;
        if (!same) fail_msg("element %lld: got %.9g, want %.9g", (long long)k, got, want[k]);
        for (int32_t d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
}

static void assert_int64s(const mtk_tensor *t, const int64_t *want, int64_t n)
{
    assert_non_null(t);
    assert_int_equal(t->dtype, MTK_INT64);
    assert_int_equal(mtk_tensor_numel(t), n);
    assert_true(mtk_tensor_is_contiguous(t));
    const int64_t *got = mtk_tensor_data(t);
    for (int64_t i = 0; i < n; i++) assert_int_equal(got[i], want[i]);
}

/* -------------------------------------------------------- meta: dtypes */

static void sum_of_integers_and_bool_is_int64(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_meta(mtk_sum(ctx, META(ctx, MTK_INT8, 3, 4), DIMS(0), false, NONE), MTK_INT64, 1, SHAPE(4), SHAPE(1));
    assert_meta(mtk_sum(ctx, META(ctx, MTK_BOOL, 3, 4), NULL, 0, false, NONE), MTK_INT64, 0, NULL, NULL);
    assert_meta(mtk_prod(ctx, META(ctx, MTK_UINT8, 3), NONE), MTK_INT64, 0, NULL, NULL);
    assert_meta(mtk_cumsum(ctx, META(ctx, MTK_INT32, 3, 4), 1, NONE), MTK_INT64, 2, SHAPE(3, 4), SHAPE(4, 1));
    /* float16 stays float16; dtype= wins */
    assert_meta(mtk_sum(ctx, META(ctx, MTK_FLOAT16, 3, 4), NULL, 0, false, NONE), MTK_FLOAT16, 0, NULL, NULL);
    assert_meta(mtk_sum(ctx, META(ctx, MTK_FLOAT16, 3, 4), NULL, 0, false, MTK_INT32), MTK_INT32, 0, NULL, NULL);
    /* amax, all/any and argmax */
    assert_meta(mtk_amax(ctx, META(ctx, MTK_INT16, 3, 4), DIMS(1), false), MTK_INT16, 1, SHAPE(3), NULL);
    assert_meta(mtk_all(ctx, META(ctx, MTK_UINT8, 3, 4), DIMS(1), false), MTK_UINT8, 1, SHAPE(3), NULL);
    assert_meta(mtk_any(ctx, META(ctx, MTK_FLOAT32, 3, 4), NULL, 0, false), MTK_BOOL, 0, NULL, NULL);
    assert_meta(mtk_argmax(ctx, META(ctx, MTK_FLOAT32, 3, 4), NULL, false), MTK_INT64, 0, NULL, NULL);
    assert_meta(mtk_count_nonzero(ctx, META(ctx, MTK_FLOAT32, 3, 4), DIMS(0)), MTK_INT64, 1, SHAPE(4), NULL);
    /* logsumexp of integers gives the default float dtype */
    assert_meta(mtk_logsumexp(ctx, META(ctx, MTK_INT32, 3, 4), DIMS(1), false), MTK_FLOAT32, 1, SHAPE(3), NULL);
    mtk_ctx_free(ctx);
}

static void mean_of_integers_errors_with_torch_words(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_mean(ctx, META(ctx, MTK_INT64, 3), NULL, 0, false, NONE));
    assert_error(ctx, MTK_ERR_DTYPE,
                 "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                 "dtype. Got: Long");
    assert_null(mtk_mean(ctx, META(ctx, MTK_FLOAT32, 3), NULL, 0, false, MTK_INT32));
    assert_error(ctx, MTK_ERR_DTYPE, "Optional dtype must be either a floating point or complex dtype. Got: Int");
    /* an integral input with a floating dtype= is fine */
    assert_meta(mtk_mean(ctx, META(ctx, MTK_INT64, 3), NULL, 0, false, MTK_FLOAT64), MTK_FLOAT64, 0, NULL, NULL);
    assert_null(mtk_nanmean(ctx, META(ctx, MTK_INT8, 3), NULL, 0, false, MTK_FLOAT32));
    assert_error(ctx, MTK_ERR_DTYPE, "nanmean(): expected input to have floating point or complex dtype but got Char");
    assert_null(mtk_vector_norm(ctx, META(ctx, MTK_INT32, 3), 2.0, NULL, 0, false, NONE));
    assert_error(ctx, MTK_ERR_DTYPE, "Expected a floating point or complex tensor as input. Got Int");
    assert_null(mtk_vector_norm(ctx, META(ctx, MTK_FLOAT32, 3), 2.0, NULL, 0, false, MTK_FLOAT16));
    assert_error(ctx, MTK_ERR_DTYPE, "should be convertible without narrowing");
    mtk_ctx_free(ctx);
}

/* torch's meta device takes var of an int tensor (an int result); its cpu
 * kernel refuses it */
static void var_of_integers_is_meta_only(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_meta(mtk_var(ctx, META(ctx, MTK_INT32, 3), NULL, 0, 1.0, false), MTK_INT32, 0, NULL, NULL);
    static const int32_t data[3] = { 1, 2, 3 };
    mtk_tensor *x = mtk_tensor_from_data(ctx, MTK_INT32, SHAPE(3), 1, NULL, (void *)data);
    assert_null(mtk_var(ctx, x, NULL, 0, 1.0, false));
    assert_error(ctx, MTK_ERR_DTYPE, "std and var only support floating point and complex dtypes");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------ meta: shapes, strides */

static void reductions_of_permuted_inputs_are_contiguous(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *p = mtk_permute(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), SHAPE(2, 0, 1), 3); /* (4, 2, 3) */
    assert_meta(mtk_sum(ctx, p, DIMS(1), false, NONE), MTK_FLOAT32, 2, SHAPE(4, 3), SHAPE(3, 1));
    assert_meta(mtk_sum(ctx, p, DIMS(1), true, NONE), MTK_FLOAT32, 3, SHAPE(4, 1, 3), SHAPE(3, 3, 1));
    assert_meta(mtk_amax(ctx, p, DIMS(-1, 0), true), MTK_FLOAT32, 3, SHAPE(1, 2, 1), SHAPE(2, 1, 1));
    mtk_tensor *values, *indices;
    assert_true(mtk_max_dim(ctx, p, 1, true, &values, &indices));
    assert_meta(values, MTK_FLOAT32, 3, SHAPE(4, 1, 3), SHAPE(3, 3, 1));
    assert_meta(indices, MTK_INT64, 3, SHAPE(4, 1, 3), SHAPE(3, 3, 1));
    assert_meta(mtk_cumsum(ctx, p, 0, NONE), MTK_FLOAT32, 3, SHAPE(4, 2, 3), SHAPE(6, 3, 1));
    /* channels-last inputs too */
    mtk_tensor *cl = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2, 3, 4, 5), 4, SHAPE(60, 1, 15, 3), MTK_DEVICE_META);
    assert_meta(mtk_sum(ctx, cl, DIMS(1), true, NONE), MTK_FLOAT32, 4, SHAPE(2, 1, 4, 5), SHAPE(20, 20, 5, 1));
    mtk_ctx_free(ctx);
}

/* keepdim strides around size-0 dims: sum/amax unsqueeze on meta */
static void keepdim_next_to_an_empty_dim_follows_torch_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = META(ctx, MTK_FLOAT32, 2, 0);
    assert_meta(mtk_sum(ctx, x, DIMS(0), true, NONE), MTK_FLOAT32, 2, SHAPE(1, 0), SHAPE(0, 1));
    assert_meta(mtk_mean(ctx, x, DIMS(0), true, NONE), MTK_FLOAT32, 2, SHAPE(1, 0), SHAPE(1, 1));
    mtk_ctx_free(ctx);
}

static void dims_are_checked_with_torch_words(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = META(ctx, MTK_FLOAT32, 2, 3);
    assert_null(mtk_sum(ctx, x, DIMS(1, -1), false, NONE));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "sum: dim 1 appears multiple times in the list of dims");
    assert_null(mtk_amax(ctx, x, DIMS(2), false));
    assert_error(ctx, MTK_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    /* a 0-dim input takes dims 0 and -1 */
    mtk_tensor *s = mtk_tensor_new(ctx, MTK_FLOAT32, NULL, 0, NULL, MTK_DEVICE_META);
    assert_meta(mtk_sum(ctx, s, DIMS(-1), true, NONE), MTK_FLOAT32, 0, NULL, NULL);
    assert_meta(mtk_argmax(ctx, s, SHAPE(0), true), MTK_INT64, 0, NULL, NULL);
    assert_null(mtk_sum(ctx, s, DIMS(1), false, NONE));
    assert_error(ctx, MTK_ERR_INDEX, "expected to be in range of [-1, 0], but got 1");
    /* [] is every dim to sum, no dim to all */
    int64_t none[1];
    assert_meta(mtk_sum(ctx, x, none, 0, false, NONE), MTK_FLOAT32, 0, NULL, NULL);
    assert_meta(mtk_all(ctx, x, none, 0, false), MTK_BOOL, 2, SHAPE(2, 3), SHAPE(3, 1));
    mtk_ctx_free(ctx);
}

static void reducing_an_empty_dim(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = META(ctx, MTK_FLOAT32, 0, 4);
    assert_meta(mtk_sum(ctx, x, DIMS(0), false, NONE), MTK_FLOAT32, 1, SHAPE(4), NULL);
    assert_null(mtk_amax(ctx, x, DIMS(0), false));
    assert_error(ctx, MTK_ERR_INDEX, "amax(): Expected reduction dim 0 to have non-zero size.");
    assert_null(mtk_argmax(ctx, x, NULL, false));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                 "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
    assert_meta(mtk_amax(ctx, x, DIMS(1), false), MTK_FLOAT32, 1, SHAPE(0), NULL);
    /* max(x) of an empty tensor: meta accepts, cpu refuses, as torch */
    assert_meta(mtk_max(ctx, x), MTK_FLOAT32, 0, NULL, NULL);
    float unused = 0;
    mtk_tensor *c = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(0, 4), 2, NULL, &unused);
    assert_null(mtk_max(ctx, c));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                 "max(): Expected reduction dim to be specified for input.numel() == 0.");
    /* sum, prod, mean, all, any of nothing */
    mtk_tensor *s = mtk_sum(ctx, c, DIMS(0), false, NONE);
    static const double zeros[4] = { 0, 0, 0, 0 }, nans[4] = { NAN, NAN, NAN, NAN };
    assert_floats_near(s, zeros, 4, 0);
    assert_floats_near(mtk_mean(ctx, c, DIMS(0), false, NONE), nans, 4, 0);
    static const double ones[4] = { 1, 1, 1, 1 }, minf[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    assert_floats_near(mtk_prod_dim(ctx, c, 0, false, NONE), ones, 4, 0);
    assert_floats_near(mtk_logsumexp(ctx, c, DIMS(0), false), minf, 4, 0);
    mtk_tensor *all = mtk_all(ctx, c, DIMS(0), false);
    assert_non_null(all);
    for (int i = 0; i < 4; i++) assert_int_equal(((const uint8_t *)mtk_tensor_data(all))[i], 1);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------ cpu: values */

static void sum_mean_prod_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = matrix_x(ctx);
    static const double sum0[4] = { 5.75, 10.0, 10.25, -1.0 }, sum1[3] = { 3.25, 9.0, 12.75 };
    assert_floats_near(mtk_sum(ctx, x, DIMS(0), false, NONE), sum0, 4, 1e-6);
    assert_floats_near(mtk_sum(ctx, x, DIMS(-1), false, NONE), sum1, 3, 1e-6);
    /* through a transposed view: the same sums */
    assert_floats_near(mtk_sum(ctx, mtk_t(ctx, x), DIMS(1), false, NONE), sum0, 4, 1e-6);
    static const double mean[1] = { 2.0833332538604736 };
    assert_floats_near(mtk_mean(ctx, x, NULL, 0, false, NONE), mean, 1, 1e-6);
    static const double prod1[3] = { -4.875, -32.0, -56.0 };
    assert_floats_near(mtk_prod_dim(ctx, x, 1, false, NONE), prod1, 3, 1e-6);
    mtk_ctx_free(ctx);
}

static void integer_sums_are_exact_int64(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static const int8_t data[6] = { 3, -7, 100, 127, 127, -128 };
    mtk_tensor *i = mtk_tensor_from_data(ctx, MTK_INT8, SHAPE(2, 3), 2, NULL, (void *)data);
    static const int64_t sum1[2] = { 96, 126 }, all[1] = { 222 }, prod[1] = { 4335475200LL };
    assert_int64s(mtk_sum(ctx, i, DIMS(1), false, NONE), sum1, 2);
    assert_int64s(mtk_sum(ctx, i, NULL, 0, false, NONE), all, 1);
    assert_int64s(mtk_prod(ctx, i, NONE), prod, 1);
    static const int64_t cum[6] = { 3, -4, 96, 127, 254, 126 };
    assert_int64s(mtk_cumsum(ctx, i, 1, NONE), cum, 6);
    /* dtype=int8 wraps as torch: 222 -> -34 */
    mtk_tensor *w = mtk_sum(ctx, i, NULL, 0, false, MTK_INT8);
    assert_non_null(w);
    assert_int_equal(*(const int8_t *)mtk_tensor_data(w), -34);
    mtk_ctx_free(ctx);
}

static void max_and_argmax_take_the_first_index_and_nan_wins(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = matrix_x(ctx);
    mtk_tensor *values, *indices;
    assert_true(mtk_max_dim(ctx, x, 1, false, &values, &indices));
    static const double v[3] = { 3.25, 4.0, 8.0 };
    static const int64_t ix[3] = { 2, 0, 1 };
    assert_floats_near(values, v, 3, 0);
    assert_int64s(indices, ix, 3);
    static const int64_t flat[1] = { 9 }, argmin0[4] = { 2, 0, 1, 2 };
    assert_int64s(mtk_argmax(ctx, x, NULL, false), flat, 1);
    assert_int64s(mtk_argmin(ctx, x, SHAPE(0), false), argmin0, 4);
    static const float with_nan[4] = { 1.0f, NAN, 5.0f, NAN };
    mtk_tensor *n = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(4), 1, NULL, (void *)with_nan);
    assert_true(mtk_max_dim(ctx, n, 0, false, &values, &indices));
    static const double nan1[1] = { NAN };
    static const int64_t first_nan[1] = { 1 };
    assert_floats_near(values, nan1, 1, 0);
    assert_int64s(indices, first_nan, 1);
    assert_floats_near(mtk_amax(ctx, n, NULL, 0, false), nan1, 1, 0);
    mtk_ctx_free(ctx);
}

static void var_std_and_pairs_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = matrix_x(ctx);
    static const double var1[3] = { 4.807291507720947, 5.583333492279053, 33.22395706176758 };
    assert_floats_near(mtk_var(ctx, x, DIMS(1), 1.0, false), var1, 3, 1e-5);
    static const double std0[4] = { 1.5590238571166992, 4.109609127044678, 3.676124095916748, 2.3213980197906494 };
    assert_floats_near(mtk_std(ctx, x, DIMS(0), 0.0, false), std0, 4, 1e-5);
    static const double var_c[1] = { 14.978070259094238 };
    assert_floats_near(mtk_var(ctx, x, NULL, 0, 2.5, false), var_c, 1, 1e-5);
    mtk_tensor *var, *mean;
    assert_true(mtk_var_mean(ctx, x, DIMS(1), 1.0, true, &var, &mean));
    static const double mean1[3] = { 0.8125, 2.25, 3.1875 };
    assert_meta(mean, MTK_FLOAT32, 2, SHAPE(3, 1), SHAPE(1, 1));
    assert_floats_near(var, var1, 3, 1e-5);
    assert_floats_near(mean, mean1, 3, 1e-6);
    mtk_ctx_free(ctx);
}

static void logsumexp_and_norms_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = matrix_x(ctx);
    static const double lse[3] = { 3.467487096786499, 4.761774063110352, 8.693367004394531 };
    assert_floats_near(mtk_logsumexp(ctx, x, DIMS(1), false), lse, 3, 1e-6);
    static const float special[6] = { 1.0f, INFINITY, -INFINITY, -INFINITY, NAN, 1.0f };
    mtk_tensor *s = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 2), 2, NULL, (void *)special);
    static const double lse_special[3] = { INFINITY, -INFINITY, NAN };
    assert_floats_near(mtk_logsumexp(ctx, s, DIMS(1), false), lse_special, 3, 0);
    static const struct {
        double ord, all, dim0[4];
    } norms[] = {
        { 2, 13.941843032836914, { 4.279310703277588, 9.165151596069336, 8.692668914794922, 4.062019348144531 } },
        { 1, 38.0, { 5.75, 14.0, 12.25, 6.0 } },
        { 0, 12.0, { 3.0, 3.0, 3.0, 3.0 } },
        { INFINITY, 8.0, { 4.0, 8.0, 8.0, 3.5 } },
        { -INFINITY, 0.25, { 0.25, 2.0, 1.0, 0.5 } },
        { 3, 10.771366119384766, { 4.0694260597229, 8.358678817749023, 8.179924011230469, 3.7084298133850098 } },
        { 0.5, 383.7969665527344, { 13.873723983764648, 38.97056198120117, 31.7104434967041, 15.93725299835205 } },
    };
    /* torch.norm(x, 'nuc'): the sum of the singular values */
    mtk_value args[2] = { mtk_value_tensor(x), mtk_value_string("nuc") };
    mtk_value r;
    assert_true(mtk_op_call_by_name(ctx, "norm", args, 2, NULL, NULL, 0, &r));
    static const double nuclear[1] = { 21.824020385742188 };
    assert_floats_near(r.as.tensor, nuclear, 1, 1e-5);
    for (size_t k = 0; k < sizeof norms / sizeof norms[0]; k++) {
        assert_floats_near(mtk_vector_norm(ctx, x, norms[k].ord, NULL, 0, false, NONE), &norms[k].all, 1, 1e-5);
        assert_floats_near(mtk_vector_norm(ctx, x, norms[k].ord, DIMS(0), false, NONE), norms[k].dim0, 4, 1e-5);
    }
    mtk_ctx_free(ctx);
}

static void all_any_keep_uint8_and_count_nonzero(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static const uint8_t data[6] = { 0, 2, 0, 1, 1, 1 };
    mtk_tensor *u = mtk_tensor_from_data(ctx, MTK_UINT8, SHAPE(2, 3), 2, NULL, (void *)data);
    mtk_tensor *all = mtk_all(ctx, u, DIMS(1), false), *any = mtk_any(ctx, u, DIMS(0), false);
    assert_meta(all, MTK_UINT8, 1, SHAPE(2), NULL);
    const uint8_t *a = mtk_tensor_data(all), *b = mtk_tensor_data(any);
    assert_int_equal(a[0], 0);
    assert_int_equal(a[1], 1);
    for (int i = 0; i < 3; i++) assert_int_equal(b[i], 1);
    static const int64_t counts[3] = { 1, 2, 1 };
    assert_int64s(mtk_count_nonzero(ctx, u, DIMS(0)), counts, 3);
    mtk_ctx_free(ctx);
}

static void cumulative_ops_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = matrix_x(ctx);
    static const double cumsum1[12] = { 1.5, -0.5, 2.75, 3.25, 4.0, 8.0, 7.0, 9.0, 0.25, 8.25, 16.25, 12.75 };
    assert_floats_near(mtk_cumsum(ctx, x, 1, NONE), cumsum1, 12, 1e-6);
    static const double cumprod0[12] = { 1.5, -2.0, 3.25, 0.5, 6.0, -8.0, -3.25, 1.0, 1.5, -64.0, -26.0, -3.5 };
    assert_floats_near(mtk_cumprod(ctx, x, 0, NONE), cumprod0, 12, 1e-6);
    mtk_tensor *values, *indices;
    assert_true(mtk_cummax(ctx, x, 1, &values, &indices));
    /* ties take the later index, as torch's cummax */
    static const int64_t ix[12] = { 0, 0, 2, 2, 0, 1, 1, 1, 0, 1, 2, 2 };
    assert_int64s(indices, ix, 12);
    mtk_ctx_free(ctx);
}

static void median_and_mode_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = matrix_x(ctx);
    static const double med[1] = { 1.5 };
    assert_floats_near(mtk_median(ctx, x), med, 1, 0);
    mtk_tensor *values, *indices;
    assert_true(mtk_median_dim(ctx, x, 1, false, &values, &indices));
    static const double med1[3] = { 0.5, 2.0, 0.25 };
    static const int64_t med_ix[3] = { 3, 3, 0 };
    assert_floats_near(values, med1, 3, 0);
    assert_int64s(indices, med_ix, 3);
    assert_true(mtk_mode(ctx, x, 1, false, &values, &indices));
    static const double mode1[3] = { -2.0, 4.0, 8.0 };
    static const int64_t mode_ix[3] = { 1, 1, 2 };
    assert_floats_near(values, mode1, 3, 0);
    assert_int64s(indices, mode_ix, 3);
    mtk_ctx_free(ctx);
}

/* torch's cpu median fills the result of an empty input with NaN before
 * it dispatches on the dtype (a bool one becomes true), and checks an
 * empty reduced dim before the dtype */
static void median_of_empty_input_follows_torch_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    bool none[1] = { false };
    mtk_tensor *empty = mtk_tensor_from_data(ctx, MTK_BOOL, SHAPE(0), 1, NULL, none);
    mtk_tensor *m = mtk_median(ctx, empty);
    assert_non_null(m);
    assert_int_equal(m->dtype, MTK_BOOL);
    assert_true(*(const bool *)mtk_tensor_data(m));
    mtk_tensor *values, *indices;
    mtk_tensor *rows = mtk_tensor_from_data(ctx, MTK_BOOL, SHAPE(2, 0), 2, NULL, none);
    assert_false(mtk_median_dim(ctx, rows, 1, false, &values, &indices));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INDEX);
    assert_non_null(strstr(mtk_ctx_message(ctx), "Expected reduction dim 1 to have non-zero size."));
    mtk_ctx_clear_error(ctx);
    mtk_tensor *cols = mtk_tensor_from_data(ctx, MTK_BOOL, SHAPE(0, 2), 2, NULL, none);
    assert_false(mtk_median_dim(ctx, cols, 1, false, &values, &indices));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    assert_non_null(strstr(mtk_ctx_message(ctx), "\"median_out\" not implemented for 'Bool'"));
    mtk_ctx_free(ctx);
}

/* prod multiplies in the dtype, as torch's kernel does: float16 partial
 * products past 65504 are inf even where the whole product is small
 * (torch: prod(linspace(-3, 1.5, 48, dtype=float16)) is inf) */
static void half_prod_overflows_as_torch_does(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_linspace(ctx, -3.0, 1.5, 48, MTK_FLOAT16);
    mtk_tensor *p = mtk_prod(ctx, x, MTK_DTYPE_UNDEFINED);
    assert_non_null(p);
    double v = mtk_load_f64(MTK_FLOAT16, mtk_tensor_data(p));
    assert_true(isinf(v) && v > 0);
    mtk_ctx_free(ctx);
}

/* float16 accumulates wider and rounds once, as torch: 1000.5 */
static void half_sums_round_once(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    uint16_t h[8];
    h[0] = 0x63d0; /* 1000.0 */
    for (int i = 1; i < 8; i++) h[i] = 0x2e66; /* 0.0999755859375 */
    mtk_tensor *x = mtk_tensor_from_data(ctx, MTK_FLOAT16, SHAPE(8), 1, NULL, h);
    mtk_tensor *s = mtk_sum(ctx, x, NULL, 0, false, NONE), *m = mtk_mean(ctx, x, NULL, 0, false, NONE);
    assert_non_null(s);
    assert_non_null(m);
    assert_int_equal(*(const uint16_t *)mtk_tensor_data(s), 0x63d1);  /* 1000.5   */
    assert_int_equal(*(const uint16_t *)mtk_tensor_data(m), 0x57d1);  /* 125.0625 */
    mtk_ctx_free(ctx);
}

/* a sum over a million elements on 1 and 2 threads agrees with a double
 * sum, and every layout of the same data gives the same answer */
static void large_reductions_are_accurate_on_any_thread_count(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    enum { R = 1000, C = 1000 };
    static float data[R * C];
    double want_all = 0;
    for (int i = 0; i < R * C; i++) {
        data[i] = (float)(((int64_t)i * 7919) % 1000) / 1000.0f - 0.25f;
        want_all += data[i];
    }
    mtk_tensor *x = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(R, C), 2, NULL, data);
    for (int32_t threads = 1; threads <= 2; threads++) {
        mtk_ctx_set_num_threads(ctx, threads);
        assert_floats_near(mtk_sum(ctx, x, NULL, 0, false, NONE), &want_all, 1, 1e-6);
        assert_floats_near(mtk_sum(ctx, mtk_t(ctx, x), NULL, 0, false, NONE), &want_all, 1, 1e-6);
        mtk_tensor *col = mtk_sum(ctx, x, DIMS(0), false, NONE);
        mtk_tensor *row_of_t = mtk_sum(ctx, mtk_t(ctx, x), DIMS(1), false, NONE);
        assert_non_null(col);
        assert_non_null(row_of_t);
        assert_memory_equal(mtk_tensor_data(col), mtk_tensor_data(row_of_t), C * sizeof(float));
        static const int64_t argmax[1] = { 321 }; /* the first 0.749 */
        assert_int64s(mtk_argmax(ctx, x, NULL, false), argmax, 1);
    }
    mtk_ctx_set_num_threads(ctx, 0);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------- by name, misc */

static void max_overloads_by_name(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value args[2] = { mtk_value_tensor(META(ctx, MTK_FLOAT32, 3, 4)), mtk_value_int(1) };
    mtk_value r;
    assert_true(mtk_op_call_by_name(ctx, "max", args, 2, NULL, NULL, 0, &r));
    assert_int_equal(r.kind, MTK_VALUE_TUPLE);
    assert_int_equal(r.as.list.count, 2);
    assert_meta(r.as.list.items[1].as.tensor, MTK_INT64, 1, SHAPE(3), NULL);
    args[1] = mtk_value_tensor(META(ctx, MTK_FLOAT64, 4)); /* max(x, other): maximum, promoted */
    assert_true(mtk_op_call_by_name(ctx, "torch.max", args, 2, NULL, NULL, 0, &r));
    assert_int_equal(r.kind, MTK_VALUE_TENSOR);
    assert_meta(r.as.tensor, MTK_FLOAT64, 2, SHAPE(3, 4), NULL);
    assert_true(mtk_op_call_by_name(ctx, "min", args, 1, NULL, NULL, 0, &r));
    assert_meta(r.as.tensor, MTK_FLOAT32, 0, NULL, NULL);
    /* var(x, True) is the unbiased overload */
    args[1] = mtk_value_bool(false);
    assert_true(mtk_op_call_by_name(ctx, "var", args, 2, NULL, NULL, 0, &r));
    assert_meta(r.as.tensor, MTK_FLOAT32, 0, NULL, NULL);
    /* overloads PyTorch has not: max(x, None), sum(x, keepdim=True),
     * var(x, unbiased=False, keepdim=True); sum(x, None, keepdim=True) is one */
    args[1] = mtk_value_none();
    assert_false(mtk_op_call_by_name(ctx, "max", args, 2, NULL, NULL, 0, &r));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "max(): argument 'dim' must be int, not NoneType");
    const char *keepdim[1] = { "keepdim" };
    mtk_value yes[2] = { mtk_value_bool(true), mtk_value_bool(false) };
    assert_false(mtk_op_call_by_name(ctx, "sum", args, 1, keepdim, yes, 1, &r));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "keepdim needs a dim");
    assert_true(mtk_op_call_by_name(ctx, "sum", args, 2, keepdim, yes, 1, &r));
    assert_meta(r.as.tensor, MTK_FLOAT32, 2, SHAPE(1, 1), NULL);
    const char *unbiased_keepdim[2] = { "keepdim", "unbiased" };
    assert_false(mtk_op_call_by_name(ctx, "var", args, 1, unbiased_keepdim, yes, 2, &r));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "takes no keepdim");
    mtk_ctx_free(ctx);
}

static void null_inputs_pass_through_without_a_new_error(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *failed = mtk_sum(ctx, META(ctx, MTK_FLOAT32, 2, 3), DIMS(5), false, NONE);
    assert_null(failed);
    const char *first = mtk_ctx_message(ctx);
    mtk_tensor *values, *indices;
    assert_null(mtk_mean(ctx, failed, NULL, 0, false, NONE));
    assert_false(mtk_max_dim(ctx, failed, 0, false, &values, &indices));
    assert_null(values);
    assert_null(indices);
    assert_ptr_equal(mtk_ctx_message(ctx), first);
    assert_true(strstr(first, "sum: Dimension out of range") != NULL);
    mtk_ctx_free(ctx);
}

static void cost_counts_elements_produced(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_SUM));
    call.args[0] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 3, 4));
    call.args[1] = mtk_value_int(1);
    assert_true(mtk_op_run(&call));
    mtk_op_cost cost = call.op->cost(&call);
    assert_int_equal(cost.flops, 0);
    assert_int_equal(cost.elementwise, 3);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sum_of_integers_and_bool_is_int64),
        cmocka_unit_test(mean_of_integers_errors_with_torch_words),
        cmocka_unit_test(var_of_integers_is_meta_only),
        cmocka_unit_test(reductions_of_permuted_inputs_are_contiguous),
        cmocka_unit_test(keepdim_next_to_an_empty_dim_follows_torch_meta),
        cmocka_unit_test(dims_are_checked_with_torch_words),
        cmocka_unit_test(reducing_an_empty_dim),
        cmocka_unit_test(sum_mean_prod_match_torch),
        cmocka_unit_test(integer_sums_are_exact_int64),
        cmocka_unit_test(max_and_argmax_take_the_first_index_and_nan_wins),
        cmocka_unit_test(var_std_and_pairs_match_torch),
        cmocka_unit_test(logsumexp_and_norms_match_torch),
        cmocka_unit_test(all_any_keep_uint8_and_count_nonzero),
        cmocka_unit_test(cumulative_ops_match_torch),
        cmocka_unit_test(median_and_mode_match_torch),
        cmocka_unit_test(median_of_empty_input_follows_torch_cpu),
        cmocka_unit_test(half_prod_overflows_as_torch_does),
        cmocka_unit_test(half_sums_round_once),
        cmocka_unit_test(large_reductions_are_accurate_on_any_thread_count),
        cmocka_unit_test(max_overloads_by_name),
        cmocka_unit_test(null_inputs_pass_through_without_a_new_error),
        cmocka_unit_test(cost_counts_elements_produced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
