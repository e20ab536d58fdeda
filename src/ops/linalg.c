/* The linalg family's plans, meta function, FLOPs and typed API:
 * matmul, mm, bmm, dot, mv and linear, validated as PyTorch does.
 *
 * torch.matmul decomposes by the operands' dims (and, for N-D @ 1-D/2-D,
 * by the larger operand's strides: "folding") into dot, mv, mm or bmm;
 * each has its own error messages and FlopCounterMode counts only mm,
 * addmm and bmm.  The plan records that decomposition.
 *
 * Mixed dtypes follow torch device by device.  Its cpu kernels of mm, mv
 * and addmm refuse them; its meta device runs Python decompositions that
 * take them: mm gives its first operand's dtype, mv and addmm (linear
 * with a bias) the promoted dtype, and linear's bias is added out of
 * place (promoting, broadcasting) where the cpu adds it in place.  dot
 * and bmm refuse on both. */
#include "ops/linalg.h"
#include "ops/elementwise_kernel.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/linalg.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static bool plan_error(mtk_ctx *ctx, const mtk_op_call *call, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static bool plan_error(mtk_ctx *ctx, const mtk_op_call *call, mtk_status status, const char *fmt, ...)
{
    if (!ctx) return false;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mtk_error(ctx, status, "%s: %s", call->op->name, msg);
}

static int64_t product(const int64_t *shape, int32_t n) { return ops_size_product(shape, 0, n); }

/* FlopCounterMode's 2 * a * b * c * d (Python's exact integers), saturated
 * at INT64_MAX past int64 */
static int64_t flops_of(int64_t a, int64_t b, int64_t c, int64_t d)
{
    const int64_t factors[5] = { 2, a, b, c, d };
    return ops_size_product(factors, 0, 5);
}

/* x.mT (or x.t() for a matrix): the last two dims swapped; a 1-D tensor
 * is returned as it is (t() of a vector is the vector). */
static mtk_tensor transposed(const mtk_tensor *x)
{
    mtk_tensor t = *x;
    if (x->ndim >= 2) {
        int32_t a = x->ndim - 2, b = x->ndim - 1;
        t.shape[a] = x->shape[b], t.shape[b] = x->shape[a];
        t.stride[a] = x->stride[b], t.stride[b] = x->stride[a];
    }
    return t;
}

/* x.squeeze(0) */
static mtk_tensor squeezed0(const mtk_tensor *x)
{
    mtk_tensor t = *x;
    t.ndim = x->ndim - 1;
    memmove(t.shape, x->shape + 1, (size_t)t.ndim * sizeof *t.shape);
    memmove(t.stride, x->stride + 1, (size_t)t.ndim * sizeof *t.stride);
    return t;
}

static bool requires_grad(const mtk_tensor *t) { return (t->flags & MTK_TENSOR_REQUIRES_GRAD) != 0; }

/* Whether the call follows torch's meta device (lenient on dtypes) rather
 * than its cpu kernels. */
static bool meta_rules(const mtk_op_call *call) { return call->device == MTK_DEVICE_META; }

/* The dtype torch's meta decompositions give (their type promotion: a
 * 0-dim operand counts less than one with dims).  `c` may be NULL.
 * Without a context (cost functions) nothing is checked. */
static mtk_dtype promoted(mtk_ctx *ctx, const mtk_tensor *a, const mtk_tensor *b, const mtk_tensor *c)
{
    if (!ctx) return a->dtype;
    mtk_value v[3] = { mtk_value_tensor((mtk_tensor *)a), mtk_value_tensor((mtk_tensor *)b),
                       c ? mtk_value_tensor((mtk_tensor *)c) : mtk_value_none() };
    return mtk_meta_result_type(ctx, v, 3);
}

/* Describes out = a @ b as a broadcast batched product (sizes already
 * checked): batch dims are a's and b's leading dims broadcast together, a
 * vector operand is a 1-row (a) or 1-column (b) matrix whose dim is
 * dropped from the output. */
static bool describe_product(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *a,
                             const mtk_tensor *b, mtk_mm_plan *p)
{
    int32_t a_batch = a->ndim > 2 ? a->ndim - 2 : 0, b_batch = b->ndim > 2 ? b->ndim - 2 : 0;
    if (!mtk_broadcast_shapes(ctx, call->op->name, a->shape, a_batch, b->shape, b_batch,
                              p->batch_shape, &p->batch_ndim))
        return false;
    for (int32_t i = 0; i < p->batch_ndim; i++) {
        int32_t ia = i - (p->batch_ndim - a_batch), ib = i - (p->batch_ndim - b_batch);
        p->a_batch_stride[i] = ia >= 0 && a->shape[ia] != 1 ? a->stride[ia] : 0;
        p->b_batch_stride[i] = ib >= 0 && b->shape[ib] != 1 ? b->stride[ib] : 0;
    }
    int32_t la = a->ndim - 1, lb = b->ndim - 1;
    p->out_dtype = a->dtype;
    p->k = a->shape[la];
    p->a_stride_k = a->stride[la];
    p->m = a->ndim >= 2 ? a->shape[la - 1] : 1;
    p->a_stride_m = a->ndim >= 2 ? a->stride[la - 1] : 0;
    p->n = b->ndim >= 2 ? b->shape[lb] : 1;
    p->b_stride_n = b->ndim >= 2 ? b->stride[lb] : 0;
    p->b_stride_k = b->ndim >= 2 ? b->stride[lb - 1] : b->stride[0];
    p->out_ndim = p->batch_ndim;
    memcpy(p->out_shape, p->batch_shape, (size_t)p->batch_ndim * sizeof *p->out_shape);
    if (a->ndim >= 2) p->out_shape[p->out_ndim++] = p->m;
    if (b->ndim >= 2) p->out_shape[p->out_ndim++] = p->n;
    return true;
}

static bool check_same_dtype_mm(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *a,
                                const mtk_tensor *b)
{
    if (a->dtype == b->dtype || meta_rules(call)) return true;
    return plan_error(ctx, call, MTK_ERR_DTYPE,
                      "expected m1 and m2 to have the same dtype, but got: %s != %s",
                      mtk_dtype_name(a->dtype), mtk_dtype_name(b->dtype));
}

static bool mm_shape_error(mtk_ctx *ctx, const mtk_op_call *call, int64_t r1, int64_t c1, int64_t r2,
                           int64_t c2)
{
    return plan_error(ctx, call, MTK_ERR_SHAPE,
                      "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                      (long long)r1, (long long)c1, (long long)r2, (long long)c2);
}

static bool mv_shape_error(mtk_ctx *ctx, const mtk_op_call *call, int64_t rows, int64_t cols, int64_t len)
{
    return plan_error(ctx, call, MTK_ERR_SHAPE, "size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                      (long long)rows, (long long)rows, (long long)cols, (long long)len);
}

/* ------------------------------------------------------ the basic products */

/* dot(a, b): two vectors of one dtype and length; a 0-dim result. */
static bool plan_dot_of(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *a,
                        const mtk_tensor *b, mtk_mm_plan *p)
{
    if (a->ndim != 1 || b->ndim != 1)
        return plan_error(ctx, call, MTK_ERR_SHAPE, "1D tensors expected, but got %dD and %dD tensors",
                          (int)a->ndim, (int)b->ndim);
    if (a->dtype != b->dtype)
        return plan_error(ctx, call, MTK_ERR_DTYPE,
                          "expected both vectors to have same dtype, but found %s and %s",
                          mtk_dtype_name(a->dtype), mtk_dtype_name(b->dtype));
    if (a->shape[0] != b->shape[0])
        return plan_error(ctx, call, MTK_ERR_SHAPE,
                          "inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the "
                          "same number of elements, but got %lld and %lld elements respectively",
                          (long long)a->shape[0], (long long)b->shape[0], (long long)a->shape[0],
                          (long long)b->shape[0]);
    p->path = MTK_MM_DOT;
    p->flops = 0;
    return describe_product(ctx, call, a, b, p);
}

/* mv(mat, vec) */
static bool plan_mv_of(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b,
                       mtk_mm_plan *p)
{
    if (a->ndim != 2 || b->ndim != 1)
        return plan_error(ctx, call, MTK_ERR_SHAPE, "matrix @ vector expected, got %d, %d", (int)a->ndim,
                          (int)b->ndim);
    if (a->shape[1] != b->shape[0]) return mv_shape_error(ctx, call, a->shape[0], a->shape[1], b->shape[0]);
    if (!check_same_dtype_mm(ctx, call, a, b)) return false;
    p->path = MTK_MM_MV;
    p->flops = 0;
    if (!describe_product(ctx, call, a, b, p)) return false;
    p->out_dtype = promoted(ctx, a, b, NULL); /* torch's meta: (mat * vec).sum(1) */
    return p->out_dtype != MTK_DTYPE_UNDEFINED;
}

/* mm(a, b); a may be a vector standing for a 1-row matrix (matmul's
 * 1-D @ 2-D case, unsqueeze(0).mm(b).squeeze_(0)). */
static bool plan_mm_of(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b,
                       mtk_mm_plan *p)
{
    if (a->ndim != 2 && a->ndim != 1) return plan_error(ctx, call, MTK_ERR_SHAPE, "self must be a matrix");
    if (b->ndim != 2) return plan_error(ctx, call, MTK_ERR_SHAPE, "mat2 must be a matrix");
    int64_t rows = a->ndim == 2 ? a->shape[0] : 1, cols = a->shape[a->ndim - 1];
    if (cols != b->shape[0]) return mm_shape_error(ctx, call, rows, cols, b->shape[0], b->shape[1]);
    if (!check_same_dtype_mm(ctx, call, a, b)) return false;
    p->path = MTK_MM_MM;
    p->flops = flops_of(rows, b->shape[1], cols, 1);
    return describe_product(ctx, call, a, b, p);
}

/* The operand dtypes of a batched product (bmm, and matmul's batched
 * path), once `p` describes it.  torch's meta checks them always.  Its
 * cpu bmm takes the output's dtype from batch2 and checks only when it
 * computes something: an empty output, or an empty contraction (zeros),
 * is fine with any pair. */
static bool check_bmm_dtypes(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b,
                             mtk_mm_plan *p)
{
    if (a->dtype == b->dtype) return true;
    if (!meta_rules(call) && (p->k == 0 || product(p->out_shape, p->out_ndim) == 0)) {
        p->out_dtype = b->dtype;
        return true;
    }
    return plan_error(ctx, call, MTK_ERR_DTYPE, "expected scalar type %s but found %s", mtk_dtype_name(a->dtype),
                      mtk_dtype_name(b->dtype));
}

/* bmm(a, b): two 3-D tensors with one batch size. */
static bool plan_bmm_of(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b,
                        mtk_mm_plan *p)
{
    if (a->ndim != 3) return plan_error(ctx, call, MTK_ERR_SHAPE, "batch1 must be a 3D tensor");
    if (b->ndim != 3) return plan_error(ctx, call, MTK_ERR_SHAPE, "batch2 must be a 3D tensor");
    if (b->shape[0] != a->shape[0] || b->shape[1] != a->shape[2])
        return plan_error(ctx, call, MTK_ERR_SHAPE,
                          "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                          "but got: [%lld, %lld].",
                          (long long)a->shape[0], (long long)a->shape[2], (long long)b->shape[0],
                          (long long)b->shape[1]);
    p->path = MTK_MM_BMM;
    p->flops = flops_of(a->shape[0], a->shape[1], b->shape[2], a->shape[2]);
    return describe_product(ctx, call, a, b, p) && check_bmm_dtypes(ctx, call, a, b, p);
}

/* ----------------------------------------------------------------- matmul */

/* torch's should_fold: N-D @ 1-D/2-D (or the mirror) runs as one mm/mv
 * over the larger operand's folded batch when that needs no copy. */
static bool should_fold(const mtk_tensor *a, const mtk_tensor *b)
{
    bool a_larger = a->ndim >= b->ndim;
    mtk_tensor t1 = a_larger ? *a : transposed(b);
    int32_t dim_t2 = a_larger ? b->ndim : a->ndim;
    if (!(t1.ndim >= 3 && dim_t2 <= 2)) return false;
    if (requires_grad(a_larger ? b : a)) return true;
    if (a->ndim == 2) return false;
    if (mtk_tensor_numel(&t1) == 0) return true;
    for (int32_t i = 0; i < t1.ndim - 2; i++)
        if (t1.stride[i] != t1.stride[i + 1] * t1.shape[i + 1]) return false;
    return true;
}

static bool plan_matmul_of(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *a,
                           const mtk_tensor *b, mtk_mm_plan *p)
{
    int32_t da = a->ndim, db = b->ndim;
    if (da == 0 || db == 0)
        return plan_error(ctx, call, MTK_ERR_SHAPE,
                          "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                          (int)da, (int)db);
    if (da == 1 && db == 1) return plan_dot_of(ctx, call, a, b, p);
    if (da == 2 && db == 1) return plan_mv_of(ctx, call, a, b, p);
    if (da <= 2 && db == 2) return plan_mm_of(ctx, call, a, b, p);
    if (should_fold(a, b)) {
        /* t1 (the larger, folded to rows x cols) @ t2 */
        bool transpose = db > da;
        mtk_tensor t1 = transpose ? transposed(b) : *a;
        mtk_tensor t2 = transpose ? transposed(a) : *b;
        int64_t rows = product(t1.shape, t1.ndim - 1), cols = t1.shape[t1.ndim - 1];
        if (t2.ndim == 2) {
            if (cols != t2.shape[0]) return mm_shape_error(ctx, call, rows, cols, t2.shape[0], t2.shape[1]);
            if (!check_same_dtype_mm(ctx, call, a, b)) return false;
            p->path = MTK_MM_MM;
            p->flops = flops_of(rows, t2.shape[1], cols, 1);
        } else {
            if (cols != t2.shape[0]) return mv_shape_error(ctx, call, rows, cols, t2.shape[0]);
            if (!check_same_dtype_mm(ctx, call, a, b)) return false;
            p->path = MTK_MM_MV;
            p->flops = 0;
        }
        if (!describe_product(ctx, call, a, b, p)) return false;
        /* mm gives t1's dtype, mv the promoted one */
        p->out_dtype = p->path == MTK_MM_MM ? t1.dtype : promoted(ctx, a, b, NULL);
        return p->out_dtype != MTK_DTYPE_UNDEFINED;
    }
    /* 3-D @ 3-D with different batches, in torch's meta decomposition: a
     * second operand of batch 1 is squeezed first (and the product may
     * fold into one mm), a first one only when it requires grad.  Its cpu
     * matmul runs them as one broadcast bmm. */
    if (meta_rules(call) && da == 3 && db == 3 && a->shape[0] != b->shape[0]) {
        if (a->shape[0] == 1 && requires_grad(a)) {
            mtk_tensor s = squeezed0(a);
            return plan_matmul_of(ctx, call, &s, b, p);
        }
        if (b->shape[0] == 1) {
            mtk_tensor s = squeezed0(b);
            return plan_matmul_of(ctx, call, a, &s, p);
        }
    }
    /* broadcast batched product */
    if (!describe_product(ctx, call, a, b, p)) return false;
    int64_t n = da > 1 ? a->shape[da - 2] : 1, m1 = a->shape[da - 1];
    int64_t m2 = db > 1 ? b->shape[db - 2] : b->shape[0], cols = db > 1 ? b->shape[db - 1] : 1;
    int64_t batch = product(p->batch_shape, p->batch_ndim);
    if (m1 != m2)
        return plan_error(ctx, call, MTK_ERR_SHAPE,
                          "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                          "but got: [%lld, %lld].",
                          (long long)batch, (long long)m1, (long long)batch, (long long)m2);
    p->path = MTK_MM_BMM;
    p->flops = flops_of(batch, n, cols, m1);
    return check_bmm_dtypes(ctx, call, a, b, p);
}

/* ----------------------------------------------------------------- linear */

static int32_t squeezed_ndim(const mtk_tensor *t)
{
    int32_t n = 0;
    for (int32_t i = 0; i < t->ndim; i++) n += t->shape[i] != 1;
    return n;
}

/* addmm(bias, mat1 (rows x cols), mat2) as linear's fused path checks it,
 * bias expanding to (rows, mat2 columns). */
static bool check_addmm(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *bias,
                        const mtk_tensor *mat1, int64_t rows, int64_t cols, const mtk_tensor *mat2)
{
    if (meta_rules(call)) { /* torch's meta: mm's checks; the bias is added (promoting) afterwards */
        if (mat2->ndim != 2) return plan_error(ctx, call, MTK_ERR_SHAPE, "b must be 2D");
        if (cols != mat2->shape[0]) return mm_shape_error(ctx, call, rows, cols, mat2->shape[0], mat2->shape[1]);
        return true;
    }
    if (bias->dtype != mat2->dtype)
        return plan_error(ctx, call, MTK_ERR_DTYPE, "self and mat2 must have the same dtype, but got %s and %s",
                          mtk_dtype_name(bias->dtype), mtk_dtype_name(mat2->dtype));
    if (mat1->dtype != mat2->dtype)
        return plan_error(ctx, call, MTK_ERR_DTYPE, "mat1 and mat2 must have the same dtype, but got %s and %s",
                          mtk_dtype_name(mat1->dtype), mtk_dtype_name(mat2->dtype));
    if (mat2->ndim != 2)
        return plan_error(ctx, call, MTK_ERR_SHAPE, "mat2 must be a matrix, got %d-D tensor", (int)mat2->ndim);
    if (cols != mat2->shape[0]) return mm_shape_error(ctx, call, rows, cols, mat2->shape[0], mat2->shape[1]);
    int64_t target[2] = { rows, mat2->shape[1] };
    char tb[64], bb[160];
    mtk_shape_list_str(target, 2, tb, sizeof tb);
    mtk_shape_list_str(bias->shape, bias->ndim, bb, sizeof bb);
    if (bias->ndim > 2)
        return plan_error(ctx, call, MTK_ERR_SHAPE,
                          "cannot expand bias of shape %s to %s: the number of sizes provided (2) must "
                          "be greater or equal to the number of dimensions in the tensor (%d)",
                          bb, tb, (int)bias->ndim);
    for (int32_t i = 1; i >= 2 - bias->ndim; i--) {
        int64_t have = bias->shape[i - (2 - bias->ndim)];
        if (have != 1 && have != target[i])
            return plan_error(ctx, call, MTK_ERR_SHAPE,
                              "The expanded size of the tensor (%lld) must match the existing size (%lld) "
                              "at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                              (long long)target[i], (long long)have, (int)i, tb, bb);
    }
    return true;
}

/* output.add_(bias): bias broadcasts to the output's shape, and the
 * promoted dtype casts back to the output's. */
static bool check_add_inplace(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *bias,
                              mtk_dtype out_dtype, const int64_t *shape, int32_t ndim)
{
    int64_t b[MTK_MAX_DIMS];
    int32_t nb;
    if (!mtk_broadcast_shapes(ctx, call->op->name, shape, ndim, bias->shape, bias->ndim, b, &nb)) return false;
    if (nb != ndim || memcmp(b, shape, (size_t)ndim * sizeof *b) != 0) {
        char s1[160], s2[160];
        return plan_error(ctx, call, MTK_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                          mtk_shape_list_str(shape, ndim, s1, sizeof s1), mtk_shape_list_str(b, nb, s2, sizeof s2));
    }
    mtk_dtype result = mtk_promote_types(out_dtype, bias->dtype);
    if (result == MTK_DTYPE_UNDEFINED)
        return plan_error(ctx, call, MTK_ERR_DTYPE,
                          "Promotion for Float8 Types is not supported, attempted to promote %s and %s",
                          mtk_dtype_name(out_dtype), mtk_dtype_name(bias->dtype));
    bool narrowing = (mtk_dtype_is_floating(bias->dtype) && !mtk_dtype_is_floating(out_dtype)) ||
                     (out_dtype == MTK_BOOL && bias->dtype != MTK_BOOL);
    if (narrowing)
        return plan_error(ctx, call, MTK_ERR_DTYPE, "result type %s can't be cast to the desired output type %s",
                          mtk_dtype_name(result), mtk_dtype_name(out_dtype));
    return true;
}

/* linear's addmm on torch's meta device: mm over the input flattened to
 * (rows, cols), then `out + bias` (promoting, broadcasting: the bias may
 * give a 2-D input's result more dims, which the cpu's addmm refuses);
 * an N-D input's result is viewed back to (*lead, n). */
static bool meta_addmm(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *bias, const mtk_tensor *input,
                       const mtk_tensor *weight_t, mtk_mm_plan *p)
{
    if (!ctx) return true; /* a cost function: the product is all it needs */
    p->out_dtype = promoted(ctx, bias, input, weight_t);
    if (p->out_dtype == MTK_DTYPE_UNDEFINED) return false;
    int64_t product_shape[2] = { p->bias_rows, weight_t->shape[1] }; /* (rows, n) */
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    if (!mtk_broadcast_shapes(ctx, call->op->name, product_shape, 2, bias->shape, bias->ndim, shape, &ndim))
        return false;
    if (input->ndim == 2) {
        memcpy(p->out_shape, shape, (size_t)ndim * sizeof *shape);
        p->out_ndim = ndim;
        return true;
    }
    /* result.view(*lead, result.size(1)) */
    int64_t n = shape[ndim - 1];
    p->out_ndim = input->ndim;
    memcpy(p->out_shape, input->shape, (size_t)(input->ndim - 1) * sizeof *p->out_shape);
    p->out_shape[input->ndim - 1] = n;
    int64_t have = mtk_shape_numel(shape, ndim), want = mtk_shape_numel(p->out_shape, p->out_ndim);
    if (have != want) {
        char s1[160];
        return plan_error(ctx, call, MTK_ERR_SHAPE, "shape '%s' is invalid for input of size %lld",
                          mtk_shape_list_str(p->out_shape, p->out_ndim, s1, sizeof s1), (long long)have);
    }
    return true;
}

/* linear's `out + bias` on torch's meta device: out of place, so the bias
 * promotes and broadcasts, and the result has element-wise strides. */
static bool meta_add(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *bias, mtk_mm_plan *p)
{
    if (!ctx) return true;
    mtk_tensor product_out; /* the matmul result: contiguous */
    memset(&product_out, 0, sizeof product_out);
    product_out.dtype = p->out_dtype;
    product_out.ndim = p->out_ndim;
    product_out.device = call->device;
    memcpy(product_out.shape, p->out_shape, (size_t)p->out_ndim * sizeof *p->out_shape);
    mtk_contiguous_strides(product_out.shape, product_out.ndim, product_out.stride);
    mtk_dtype common = promoted(ctx, &product_out, bias, NULL);
    if (common == MTK_DTYPE_UNDEFINED) return false;
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    if (!mtk_broadcast_shapes(ctx, call->op->name, product_out.shape, product_out.ndim, bias->shape, bias->ndim,
                              shape, &ndim))
        return false;
    ew_lay sum = ew_lay_binary(EW_R_PRIM, ew_lay_of(&product_out, call->device), ew_lay_of(bias, call->device),
                               ew_opmath(common), NULL);
    p->out_dtype = common;
    p->out_ndim = sum.t.ndim;
    memcpy(p->out_shape, sum.t.shape, (size_t)sum.t.ndim * sizeof *sum.t.shape);
    memcpy(p->out_stride, sum.t.stride, (size_t)sum.t.ndim * sizeof *sum.t.stride);
    p->has_out_stride = true;
    return true;
}

/* F.linear as torch's cpu runs it: addmm for 2-D input with bias; the
 * flattened addmm for contiguous input with a vector-like contiguous bias;
 * otherwise matmul(input, weight.t()) then add_(bias). */
static bool plan_linear(mtk_ctx *ctx, const mtk_op_call *call, mtk_mm_plan *p)
{
    const mtk_tensor *input = arg_tensor(call, 0), *weight = arg_tensor(call, 1), *bias = arg_tensor(call, 2);
    if (input->ndim == 0 || weight->ndim == 0)
        return plan_error(ctx, call, MTK_ERR_SHAPE,
                          "both arguments to linear need to be at least 1D, but they are %dD and %dD",
                          (int)input->ndim, (int)weight->ndim);
    if (weight->ndim > 2)
        return plan_error(ctx, call, MTK_ERR_SHAPE, "t() expects a tensor with <= 2 dimensions, but self is %dD",
                          (int)weight->ndim);
    mtk_tensor wt = transposed(weight);
    bool fusable = bias && (bias->ndim == 1 || squeezed_ndim(bias) == 1) && mtk_tensor_is_contiguous(bias);
    if (bias && (input->ndim == 2 || (fusable && mtk_tensor_is_contiguous(input)))) {
        int64_t rows = product(input->shape, input->ndim - 1), cols = input->shape[input->ndim - 1];
        if (!check_addmm(ctx, call, bias, input, rows, cols, &wt)) return false;
        p->path = MTK_MM_MM;
        p->flops = flops_of(rows, wt.shape[1], cols, 1);
        p->bias = MTK_BIAS_FUSED;
        p->bias_rows = rows;
        if (!describe_product(ctx, call, input, &wt, p)) return false;
        return !meta_rules(call) || meta_addmm(ctx, call, bias, input, &wt, p);
    }
    if (!plan_matmul_of(ctx, call, input, &wt, p)) return false;
    p->bias = MTK_BIAS_NONE;
    if (!bias) return true;
    p->bias = MTK_BIAS_ADD;
    if (meta_rules(call)) return meta_add(ctx, call, bias, p);
    return check_add_inplace(ctx, call, bias, input->dtype, p->out_shape, p->out_ndim);
}

/* ------------------------------------------------------------- the rows */

static bool plan_matmul(mtk_ctx *ctx, const mtk_op_call *call, mtk_mm_plan *p)
{
    return plan_matmul_of(ctx, call, arg_tensor(call, 0), arg_tensor(call, 1), p);
}

static bool plan_mm(mtk_ctx *ctx, const mtk_op_call *call, mtk_mm_plan *p)
{
    const mtk_tensor *a = arg_tensor(call, 0);
    if (a->ndim != 2) return plan_error(ctx, call, MTK_ERR_SHAPE, "self must be a matrix");
    return plan_mm_of(ctx, call, a, arg_tensor(call, 1), p);
}

static bool plan_bmm(mtk_ctx *ctx, const mtk_op_call *call, mtk_mm_plan *p)
{
    return plan_bmm_of(ctx, call, arg_tensor(call, 0), arg_tensor(call, 1), p);
}

static bool plan_dot(mtk_ctx *ctx, const mtk_op_call *call, mtk_mm_plan *p)
{
    return plan_dot_of(ctx, call, arg_tensor(call, 0), arg_tensor(call, 1), p);
}

static bool plan_mv(mtk_ctx *ctx, const mtk_op_call *call, mtk_mm_plan *p)
{
    return plan_mv_of(ctx, call, arg_tensor(call, 0), arg_tensor(call, 1), p);
}

const mtk_linalg_info mtk_linalg_matmul_info = { plan_matmul };
const mtk_linalg_info mtk_linalg_mm_info = { plan_mm };
const mtk_linalg_info mtk_linalg_bmm_info = { plan_bmm };
const mtk_linalg_info mtk_linalg_dot_info = { plan_dot };
const mtk_linalg_info mtk_linalg_mv_info = { plan_mv };
const mtk_linalg_info mtk_linalg_linear_info = { plan_linear };

/* A plan about to be made: the fields a planner may leave alone (every
 * successful one describes the product; the arrays are not cleared). */
static void plan_init(mtk_mm_plan *p)
{
    p->flops = 0;
    p->bias = MTK_BIAS_NONE;
    p->bias_rows = 0;
    p->has_out_stride = false;
}

bool mtk_linalg_meta(mtk_op_call *call)
{
    const mtk_linalg_info *info = call->op->info;
    mtk_mm_plan plan;
    plan_init(&plan);
    if (!info->plan(call->ctx, call, &plan)) return false;
    mtk_tensor *out = mtk_tensor_new(call->ctx, plan.out_dtype, plan.out_shape, plan.out_ndim,
                                     plan.has_out_stride ? plan.out_stride : NULL, call->device);
    if (!out || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, out, -1);
    return true;
}

mtk_op_cost mtk_linalg_cost(const mtk_op_call *call)
{
    const mtk_linalg_info *info = call->op->info;
    mtk_mm_plan plan;
    mtk_op_cost cost = { 0, 0 };
    plan_init(&plan);
    if (info->plan(NULL, call, &plan)) cost.flops = plan.flops;
    return cost;
}

/* ------------------------------------------------------------- typed API */

static mtk_tensor *run2(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *a, mtk_tensor *b)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[0] = mtk_value_tensor(a);
    call.args[1] = mtk_value_tensor(b);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_matmul(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other)
{
    return run2(ctx, OPID_MATMUL, input, other);
}

mtk_tensor *mtk_mm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *mat2) { return run2(ctx, OPID_MM, input, mat2); }

mtk_tensor *mtk_bmm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *mat2) { return run2(ctx, OPID_BMM, input, mat2); }

mtk_tensor *mtk_dot(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other) { return run2(ctx, OPID_DOT, input, other); }

mtk_tensor *mtk_mv(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *vec) { return run2(ctx, OPID_MV, input, vec); }

mtk_tensor *mtk_linear(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_LINEAR));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_tensor(weight);
    call.args[2] = bias ? mtk_value_tensor(bias) : mtk_value_none();
    return mtk_op_run_tensor(&call);
}
