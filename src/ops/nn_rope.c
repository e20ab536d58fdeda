/* rope(x, cos, sin, interleaved=False): rotary position embedding, mtk's
 * op for what Hugging Face models compose by hand (docs/ops.md):
 *
 *   out = x * cos + rotate(x) * sin
 *
 * rotate is Llama's rotate_half, cat(-x2, x1) of the two halves of the last
 * dim; with interleaved, GPT-J's rotate_every_two, which maps each pair
 * (x[2i], x[2i+1]) to (-x[2i+1], x[2i]).  x is (..., S, D) with D even.
 * cos and sin have one shape, D (or D / 2: gpt_oss's half-width tables,
 * each frequency for dims i and i + D / 2, or 2i and 2i + 1 interleaved)
 * in their last dim, and either broadcast
 * to x (without growing it), or are (B, S, D) against a 4-D x (B, H, S, D),
 * taken as cos.unsqueeze(1) the way apply_rotary_pos_emb does.  The result
 * is contiguous, of dtype result_type(x, cos, sin). */
#include "core/scalar.h"
#include "ops/nn.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/elementwise.h"
#include "mtk/ops/nn.h"

#include <string.h>

/* cos/sin as seen against x: unsqueezed at 1 when (B, S, D) meets 4-D x */
static mtk_tensor aligned(const mtk_tensor *t, const mtk_tensor *x)
{
    mtk_tensor v = *t;
    if (t->ndim == 3 && x->ndim == 4) {
        v.ndim = 4;
        v.shape[0] = t->shape[0], v.stride[0] = t->stride[0];
        v.shape[1] = 1, v.stride[1] = t->shape[1] * t->stride[1];
        for (int32_t i = 1; i < 3; i++) v.shape[i + 1] = t->shape[i], v.stride[i + 1] = t->stride[i];
    }
    return v;
}

static bool check_rope(mtk_op_call *call, mtk_dtype *dtype)
{
    const mtk_tensor *x = arg_tensor(call, 0), *cos = arg_tensor(call, 1), *sin = arg_tensor(call, 2);
    char a[200], b[200];
    if (x->ndim < 1 || x->shape[x->ndim - 1] % 2 != 0)
        return mtk_call_error(call, MTK_ERR_SHAPE, "x must have an even last dim (the rotary dim), but got shape %s",
                              mtk_shape_list_str(x->shape, x->ndim, a, sizeof a));
    if (cos->ndim != sin->ndim || memcmp(cos->shape, sin->shape, (size_t)cos->ndim * sizeof *cos->shape) != 0)
        return mtk_call_error(call, MTK_ERR_SHAPE, "cos and sin must have the same shape, but got %s and %s",
                              mtk_shape_list_str(cos->shape, cos->ndim, a, sizeof a),
                              mtk_shape_list_str(sin->shape, sin->ndim, b, sizeof b));
    mtk_tensor c = aligned(cos, x);
    int64_t d = x->shape[x->ndim - 1];
    /* full width (each frequency written out for both of its dims) or half */
    bool ok = c.ndim >= 1 && c.ndim <= x->ndim && (c.shape[c.ndim - 1] == d || 2 * c.shape[c.ndim - 1] == d);
    for (int32_t i = 2; ok && i <= c.ndim; i++) {
        int64_t cs = c.shape[c.ndim - i], xs = x->shape[x->ndim - i];
        ok = cs == xs || cs == 1;
    }
    if (!ok)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "cos/sin of shape %s do not fit x of shape %s: expected (S, D), (B, S, D) with a 4-D x, "
                              "or a shape that broadcasts to x with D = x.shape[-1] (or D / 2, half width)",
                              mtk_shape_list_str(cos->shape, cos->ndim, a, sizeof a),
                              mtk_shape_list_str(x->shape, x->ndim, b, sizeof b));
    mtk_value values[3] = { call->args[0], call->args[1], call->args[2] };
    *dtype = mtk_result_type(call->ctx, values, 3);
    if (*dtype == MTK_DTYPE_UNDEFINED) return false;
    /* rotate negates x: a bool x is refused whatever cos/sin are (torch's
     * "Negation, the `-` operator, on a bool tensor is not supported") */
    if (*dtype == MTK_BOOL || x->dtype == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE, "rope needs numbers, not bool tensors");
    return true;
}

bool mtk_nn_rope_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    mtk_dtype dtype;
    if (!check_rope(call, &dtype)) return false;
    return nn_set_output(call, dtype, x->shape, x->ndim, NULL);
}

/* -v in the dtype d of x, as rotate's negation runs in it: integers wrap
 * (uint8: 256 - v; int8: -(-128) is -128) */
static double negated(mtk_dtype d, double v)
{
    if (!mtk_dtype_is_integral(d, false)) return -v;
    char elem[8];
    mtk_store_i64(d, elem, (int64_t)(0u - (uint64_t)(int64_t)v));
    return (double)mtk_load_i64(d, elem);
}

/* rope in float32 (x, cos, sin and the result): each product and the sum
 * rounded to float as torch's composition does (a float product or sum
 * is the double one rounded once, so this equals the double path bit
 * for bit), x and the tables read through their strides (x may be
 * attention's transposed view), the output contiguous. */
static void rope_f32(const mtk_tensor *x_t, const mtk_tensor *c, const mtk_tensor *s, bool interleaved,
                     mtk_tensor *out_t)
{
    int32_t nd = x_t->ndim, cd = c->ndim;
    int64_t d = x_t->shape[nd - 1], half = d / 2, width = c->shape[cd - 1], rows = d ? mtk_tensor_numel(x_t) / d : 0;
    int64_t xs = x_t->stride[nd - 1], cs = c->stride[cd - 1], ss = s->stride[cd - 1];
    const float *x = mtk_tensor_data(x_t), *cos = mtk_tensor_data(c), *sin = mtk_tensor_data(s);
    float *out = mtk_tensor_data(out_t);
    int64_t idx[MTK_MAX_DIMS] = { 0 };
    for (int64_t r = 0; r < rows; r++) {
        /* the row's offsets: x's leading dims, the tables' (broadcast) */
        int64_t xo = 0, co = 0, so = 0;
        for (int32_t i = 0; i < nd - 1; i++) {
            xo += idx[i] * x_t->stride[i];
            int32_t k = i - (nd - cd); /* the table's dim, right-aligned */
            if (k >= 0 && c->shape[k] != 1) co += idx[i] * c->stride[k], so += idx[i] * s->stride[k];
        }
        const float *xr = x + xo, *cr = cos + co, *sr = sin + so;
        float *o = out + r * d;
        for (int64_t j = 0; j < d; j++) {
            float rotated = interleaved ? (j % 2 == 0 ? -xr[(j + 1) * xs] : xr[(j - 1) * xs])
                                        : (j < half ? -xr[(j + half) * xs] : xr[(j - half) * xs]);
            int64_t at = width == d ? j : interleaved ? j / 2 : j % half;
            float a = xr[j * xs] * cr[at * cs], b = rotated * sr[at * ss];
            o[j] = a + b;
        }
        for (int32_t i = nd - 2; i >= 0 && ++idx[i] == x_t->shape[i]; i--) idx[i] = 0;
    }
}

bool mtk_nn_rope_cpu(mtk_op_call *call)
{
    const mtk_tensor *x_t = arg_tensor(call, 0);
    mtk_dtype dtype;
    if (!check_rope(call, &dtype)) return false;
    if (mtk_dtype_is_float8(dtype)) return nn_cpu_dtype_error(call, "rope", dtype);
    mtk_ctx *ctx = call->ctx;
    mtk_tensor c = aligned(arg_tensor(call, 1), x_t), s = aligned(arg_tensor(call, 2), x_t);
    if (dtype == MTK_FLOAT32 && x_t->dtype == MTK_FLOAT32 && c.dtype == MTK_FLOAT32 && s.dtype == MTK_FLOAT32 &&
        call->out[0]->dtype == MTK_FLOAT32 && mtk_tensor_is_contiguous(call->out[0])) {
        rope_f32(x_t, &c, &s, arg_bool(call, 3), call->out[0]);
        return true;
    }
    int64_t d = x_t->shape[x_t->ndim - 1], half = d / 2, n = mtk_tensor_numel(x_t);
    int64_t width = c.shape[c.ndim - 1], shape[MTK_MAX_DIMS]; /* x's shape, cos's width last */
    memcpy(shape, x_t->shape, (size_t)x_t->ndim * sizeof *shape);
    shape[x_t->ndim - 1] = width;
    double *x = nn_gather(ctx, x_t), *out = nn_alloc(ctx, n), *rot = nn_alloc(ctx, n);
    double *cos = nn_gather_as(ctx, &c, shape, x_t->ndim), *sin = nn_gather_as(ctx, &s, shape, x_t->ndim);
    bool ok = x && out && rot && cos && sin;
    if (ok) {
        bool interleaved = arg_bool(call, 3);
        // out (..., D) = x * cos + rotate(x) * sin, row by row; a half-width
        // cos (..., D/2) serves dims j and j + D/2 (pairs 2i, 2i + 1 interleaved)
        for (int64_t row = 0, crow = 0; row < n; row += d, crow += width) {
            const double *xr = x + row;
            for (int64_t j = 0; j < d; j++) {
                double rotated = interleaved ? (j % 2 == 0 ? negated(x_t->dtype, xr[j + 1]) : xr[j - 1])
                                             : (j < half ? negated(x_t->dtype, xr[j + half]) : xr[j - half]);
                int64_t at = crow + (width == d ? j : interleaved ? j / 2 : j % half);
                out[row + j] = xr[j] * cos[at];
                rot[row + j] = rotated * sin[at];
            }
        }
        /* torch's composition rounds each product and the sum to the dtype */
        nn_round(out, n, dtype);
        nn_round(rot, n, dtype);
        for (int64_t i = 0; i < n; i++) out[i] += rot[i];
        nn_scatter(call->out[0], out);
    }
    mtk_ctx_mfree(ctx, x);
    mtk_ctx_mfree(ctx, out);
    mtk_ctx_mfree(ctx, rot);
    mtk_ctx_mfree(ctx, cos);
    mtk_ctx_mfree(ctx, sin);
    return ok;
}

mtk_tensor *mtk_rope(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *cos, mtk_tensor *sin, bool interleaved)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_ROPE));
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_tensor(cos);
    call.args[2] = mtk_value_tensor(sin);
    call.args[3] = mtk_value_bool(interleaved);
    return mtk_op_run_tensor(&call);
}

/* ------------------------------------------------------- rope_complex */

/* rope_complex(x, freqs_cis): llama4's apply_rotary_emb,
 * view_as_real(view_as_complex(x pairs) * freqs_cis).flatten(-2), with
 * freqs_cis given as its real view (..., S, D / 2, 2) of (cos, sin) pairs:
 *
 *   out[2i]     = x[2i] * cos_i - x[2i + 1] * sin_i
 *   out[2i + 1] = x[2i] * sin_i + x[2i + 1] * cos_i
 *
 * freqs broadcasts against x's pair view (..., S, D / 2, 2); a 4-D freqs
 * (B, S, D / 2, 2) against a 4-D x (B, H, S, D) is taken as
 * freqs.unsqueeze(1), as freqs_cis[:, :, None, :] meets (B, S, H, D / 2)
 * queries. */

/* x's pair view (..., S, D / 2, 2) into shape, its rank returned */
static int32_t pair_shape(const mtk_tensor *x, int64_t *shape)
{
    for (int32_t i = 0; i < x->ndim - 1; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = x->shape[x->ndim - 1] / 2;
    shape[x->ndim] = 2;
    return x->ndim + 1;
}

/* freqs as seen against x's pair view: unsqueezed at 1 when 4-D meets 4-D x */
static mtk_tensor aligned_freqs(const mtk_tensor *f, const mtk_tensor *x)
{
    mtk_tensor v = *f;
    if (f->ndim == 4 && x->ndim == 4) {
        v.ndim = 5;
        v.shape[0] = f->shape[0], v.stride[0] = f->stride[0];
        v.shape[1] = 1, v.stride[1] = f->shape[1] * f->stride[1];
        for (int32_t i = 1; i < 4; i++) v.shape[i + 1] = f->shape[i], v.stride[i + 1] = f->stride[i];
    }
    return v;
}

static bool check_rope_complex(mtk_op_call *call, mtk_dtype *dtype)
{
    const mtk_tensor *x = arg_tensor(call, 0), *f = arg_tensor(call, 1);
    char a[200], b[200];
    if (!mtk_dtype_is_floating(x->dtype) || !mtk_dtype_is_floating(f->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "x and freqs_cis must be floating point, got %s and %s",
                              mtk_dtype_name(x->dtype), mtk_dtype_name(f->dtype));
    if (x->ndim < 1 || x->ndim >= MTK_MAX_DIMS || x->shape[x->ndim - 1] % 2 != 0)
        return mtk_call_error(call, MTK_ERR_SHAPE, "x must have an even last dim (the rotary dim), but got shape %s",
                              mtk_shape_list_str(x->shape, x->ndim, a, sizeof a));
    int64_t pairs[MTK_MAX_DIMS];
    int32_t np = pair_shape(x, pairs);
    mtk_tensor v = aligned_freqs(f, x);
    bool ok = v.ndim >= 2 && v.ndim <= np && v.shape[v.ndim - 1] == 2 && v.shape[v.ndim - 2] == pairs[np - 2];
    for (int32_t i = 1; ok && i <= v.ndim; i++) ok = v.shape[v.ndim - i] == pairs[np - i] || v.shape[v.ndim - i] == 1;
    if (!ok)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "freqs_cis of shape %s does not fit x of shape %s: expected (S, D/2, 2), "
                              "(B, S, D/2, 2) with a 4-D x, or a shape that broadcasts to x's pairs (..., S, D/2, 2)",
                              mtk_shape_list_str(f->shape, f->ndim, a, sizeof a),
                              mtk_shape_list_str(x->shape, x->ndim, b, sizeof b));
    mtk_value values[2] = { call->args[0], call->args[1] };
    *dtype = mtk_result_type(call->ctx, values, 2);
    return *dtype != MTK_DTYPE_UNDEFINED;
}

bool mtk_nn_rope_complex_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    mtk_dtype dtype;
    if (!check_rope_complex(call, &dtype)) return false;
    return nn_set_output(call, dtype, x->shape, x->ndim, NULL);
}

bool mtk_nn_rope_complex_cpu(mtk_op_call *call)
{
    const mtk_tensor *x_t = arg_tensor(call, 0);
    mtk_dtype dtype;
    if (!check_rope_complex(call, &dtype)) return false;
    if (mtk_dtype_is_float8(dtype)) return nn_cpu_dtype_error(call, "rope_complex", dtype);
    mtk_ctx *ctx = call->ctx;
    int64_t pairs[MTK_MAX_DIMS];
    int32_t np = pair_shape(x_t, pairs);
    mtk_tensor f = aligned_freqs(arg_tensor(call, 1), x_t);
    double *x = nn_gather(ctx, x_t), *cs = nn_gather_as(ctx, &f, pairs, np);
    bool ok = x && cs;
    if (ok) {
        // out (..., D/2, 2): each pair times its (cos, sin), a complex product
        for (int64_t i = 0, n = mtk_tensor_numel(x_t); i < n; i += 2) {
            double re = x[i], im = x[i + 1], c = cs[i], s = cs[i + 1];
            x[i] = re * c - im * s;
            x[i + 1] = re * s + im * c;
        }
        nn_scatter(call->out[0], x);
    }
    mtk_ctx_mfree(ctx, x);
    mtk_ctx_mfree(ctx, cs);
    return ok;
}

mtk_tensor *mtk_rope_complex(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *freqs_cis)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_ROPE_COMPLEX));
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_tensor(freqs_cis);
    return mtk_op_run_tensor(&call);
}
