/* The cpu kernel of every linalg op: the plan's broadcast batched product
 * (OpenBLAS for float32/float64; float16, bfloat16 and float8 computed in
 * float32 and rounded once; integers in a plain loop that wraps as the
 * dtype does), then linear's bias. */
#include "ops/linalg.h"
#include "ops/linalg_gemv.h"
#include "ops/linalg_half.h"
#include "ops/op_util.h"
#include "core/scalar.h"

#include "ops/blas.h"
#include <limits.h>
#include <string.h>

typedef enum { COMPUTE_F32, COMPUTE_F64, COMPUTE_LOW_PRECISION, COMPUTE_INT } compute_kind;

/* One operand matrix: rows x cols at `base` with element strides. */
typedef struct matrix {
    const char *base;
    mtk_dtype dtype;
    int64_t rows, cols, stride_row, stride_col;
} matrix;

static const char *element_at(const matrix *x, int64_t i, int64_t j)
{
    return x->base + (i * x->stride_row + j * x->stride_col) * (int64_t)mtk_dtype_size(x->dtype);
}

/* Whether BLAS can read the matrix in place (row-major, maybe as the
 * transpose of a row-major matrix); sets the transpose flag and leading
 * dimension. */
static bool blas_layout(const matrix *x, bool *trans, int64_t *ld)
{
    int64_t rows = x->rows, cols = x->cols;
    int64_t min_cols = cols > 1 ? cols : 1, min_rows = rows > 1 ? rows : 1;
    if ((cols == 1 || x->stride_col == 1) && (rows == 1 || x->stride_row >= min_cols)) {
        *trans = false;
        *ld = rows == 1 ? min_cols : x->stride_row;
    } else if ((rows == 1 || x->stride_row == 1) && (cols == 1 || x->stride_col >= min_rows)) {
        *trans = true;
        *ld = cols == 1 ? min_rows : x->stride_col;
    } else {
        return false;
    }
    return *ld <= INT_MAX;
}

/* Copies a matrix into a contiguous float32 / float64 buffer. */
static void gather_f32(float *dst, const matrix *x)
{
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t j = 0; j < x->cols; j++) {
            const char *p = element_at(x, i, j);
            float v;
            if (x->dtype == MTK_FLOAT32) memcpy(&v, p, sizeof v); /* may be unaligned (a mapped file) */
            else v = (float)mtk_load_f64(x->dtype, p);
            *dst++ = v;
        }
}

static void gather_f64(double *dst, const matrix *x)
{
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t j = 0; j < x->cols; j++) *dst++ = mtk_load_f64(x->dtype, element_at(x, i, j));
}

/* An operand as BLAS will read it: in place, or gathered into `scratch`
 * (re-gathered only when the matrix moved: broadcast operands are
 * gathered once). */
typedef struct blas_operand {
    const void *data;
    bool trans;
    int64_t ld;
    void *scratch;
    const char *gathered_base; /* base of the matrix now in scratch */
} blas_operand;

static void prepare_operand(blas_operand *op, const matrix *x, bool gather_always, bool f64)
{
    bool aligned = (uintptr_t)x->base % mtk_dtype_size(x->dtype) == 0;
    bool readable = blas_layout(x, &op->trans, &op->ld);
    if (!gather_always && aligned && readable) {
        op->data = x->base;
        return;
    }
    op->data = op->scratch;
    if (readable && !f64) {
        /* widened row by row over the storage as it lies (a transposed
         * operand stays transposed): one sequential pass */
        int64_t outer = op->trans ? x->cols : x->rows, inner = op->trans ? x->rows : x->cols;
        if (op->gathered_base != x->base) linalg_half_widen(op->scratch, x->base, x->dtype, outer, inner, op->ld);
        op->ld = inner > 1 ? inner : 1;
    } else {
        op->trans = false;
        op->ld = x->cols > 1 ? x->cols : 1;
        if (op->gathered_base == x->base) return;
        if (f64) gather_f64(op->scratch, x);
        else gather_f32(op->scratch, x);
    }
    op->gathered_base = x->base;
}

/* c (m x n, float32, contiguous) = a @ b for a bfloat16 b read in place
 * (linalg_half_rows_fit): a is widened into `scratch` (m x k floats). */
static void gemm_half_rows(const matrix *a, const matrix *b, float *scratch, float *c)
{
    if (a->cols == 1 || a->stride_col == 1)
        linalg_half_widen(scratch, a->base, a->dtype, a->rows, a->cols, a->rows > 1 ? a->stride_row : a->cols);
    else
        gather_f32(scratch, a);
    linalg_half_rows(c, scratch, b->base, a->rows, b->cols, a->cols, b->stride_col);
}

/* c (m x n, float32, contiguous) = a @ b for a float32 b read in place
 * on mtk's threads (linalg_gemv_fit): a is read in place when its rows'
 * elements are adjacent, else gathered into `scratch` (m x k floats). */
static void gemm_f32_rows(const matrix *a, const matrix *b, float *scratch, float *c)
{
    const float *x = (const float *)a->base;
    int64_t lda = a->rows > 1 ? a->stride_row : a->cols;
    if (!(a->cols == 1 || a->stride_col == 1) || (uintptr_t)a->base % sizeof(float)) {
        gather_f32(scratch, a);
        x = scratch;
        lda = a->cols;
    }
    linalg_gemv(c, x, lda, b->base, b->stride_col, a->rows, b->cols, a->cols);
}

/* c (m x n, contiguous, in the compute dtype) = a @ b */
static void gemm_blas(bool f64, blas_operand *oa, const matrix *a, blas_operand *ob, const matrix *b,
                      void *c, bool gather_always)
{
    prepare_operand(oa, a, gather_always, f64);
    prepare_operand(ob, b, gather_always, f64);
    int m = (int)a->rows, n = (int)b->cols, k = (int)a->cols;
    enum CBLAS_TRANSPOSE ta = oa->trans ? CblasTrans : CblasNoTrans, tb = ob->trans ? CblasTrans : CblasNoTrans;
    if (!f64 && m == 1) {
        /* one row: c^T = b^T a^T as a matrix-vector product (sgemm would
         * pack all of b first); b^T is b's storage read the other way */
        int inc = oa->trans ? (int)oa->ld : 1;
        if (ob->trans) ops_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, ob->data, (int)ob->ld, oa->data, inc, 0.0f, c, 1);
        else ops_sgemv(CblasRowMajor, CblasTrans, k, n, 1.0f, ob->data, (int)ob->ld, oa->data, inc, 0.0f, c, 1);
    } else if (f64)
        ops_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, oa->data, (int)oa->ld, ob->data, (int)ob->ld, 0.0, c, n);
    else
        ops_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, oa->data, (int)oa->ld, ob->data, (int)ob->ld, 0.0f, c, n);
}

/* c = a @ b for integer dtypes; products and sums wrap as int64 does
 * (computed unsigned), then the store wraps to the output dtype. */
static void gemm_int(const matrix *a, const matrix *b, mtk_dtype out_dtype, char *c)
{
    size_t es = mtk_dtype_size(out_dtype);
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t j = 0; j < b->cols; j++) {
            uint64_t acc = 0;
            for (int64_t p = 0; p < a->cols; p++)
                acc += (uint64_t)mtk_load_i64(a->dtype, element_at(a, i, p)) *
                       (uint64_t)mtk_load_i64(b->dtype, element_at(b, p, j));
            mtk_store_i64(out_dtype, c, (int64_t)acc);
            c += es;
        }
}

/* ------------------------------------------------------------- the bias */

typedef struct { mtk_dtype target, bias; } add_info;

/* target += bias, in the arithmetic torch uses for the target dtype
 * (float for the half types, double for float64, wrapping integers). */
static void add_inner(char **ptrs, const int64_t *bs, int64_t count, void *user)
{
    const add_info *ai = user;
    char *t = ptrs[0], *s = ptrs[1];
    for (int64_t i = 0; i < count; i++, t += bs[0], s += bs[1]) {
        if (ai->target == MTK_FLOAT64) {
            mtk_store_f64(MTK_FLOAT64, t, mtk_load_f64(MTK_FLOAT64, t) + mtk_load_f64(ai->bias, s));
        } else if (mtk_dtype_is_floating(ai->target)) {
            float sum = (float)mtk_load_f64(ai->target, t) + (float)mtk_load_f64(ai->bias, s);
            mtk_store_f64(ai->target, t, sum);
        } else {
            uint64_t sum = (uint64_t)mtk_load_i64(ai->target, t) + (uint64_t)mtk_load_i64(ai->bias, s);
            mtk_store_i64(ai->target, t, (int64_t)sum);
        }
    }
}

/* Adds `bias` broadcast to shape[ndim] into the contiguous `data`. */
static void add_bias(void *data, mtk_dtype dtype, const int64_t *shape, int32_t ndim, const mtk_tensor *bias)
{
    int64_t target_strides[MTK_MAX_DIMS], bias_strides[MTK_MAX_DIMS];
    mtk_contiguous_strides(shape, ndim, target_strides);
    for (int32_t i = 0; i < ndim; i++) target_strides[i] *= (int64_t)mtk_dtype_size(dtype);
    mtk_broadcast_byte_strides(bias, shape, ndim, bias_strides);
    char *base[2] = { data, mtk_tensor_data(bias) };
    const int64_t *strides[2] = { target_strides, bias_strides };
    add_info ai = { dtype, bias->dtype };
    mtk_foreach_strided(2, base, strides, shape, ndim, add_inner, &ai);
}

/* ------------------------------------------------------------ the kernel */

/* As torch's cpu: no bool kernels, float8 only through mm/addmm; but
 * only dot always dispatches on the dtype; mm, mv and bmm first return
 * an empty output as it is and fill an empty contraction with zeros. */
static bool check_cpu_dtype(mtk_op_call *call, const mtk_mm_plan *plan, mtk_dtype dtype, int64_t numel)
{
    bool float8_ok = plan->path == MTK_MM_MM && plan->bias != MTK_BIAS_ADD;
    if (plan->path != MTK_MM_DOT && (numel == 0 || plan->k == 0)) return true;
    if (dtype == MTK_BOOL || (mtk_dtype_is_float8(dtype) && !float8_ok))
        return mtk_call_error(call, MTK_ERR_DTYPE, "not implemented for '%s' tensors on cpu",
                              mtk_dtype_name(dtype));
    return true;
}

bool mtk_linalg_cpu(mtk_op_call *call)
{
    const mtk_linalg_info *info = call->op->info;
    mtk_mm_plan plan;
    memset(&plan, 0, sizeof plan);
    if (!info->plan(call->ctx, call, &plan) || !ops_blas_ready(call->ctx)) return false;
    mtk_tensor *out = call->out[0];
    const mtk_tensor *a = arg_tensor(call, 0), *b = arg_tensor(call, 1);
    const mtk_tensor *bias = plan.bias != MTK_BIAS_NONE ? arg_tensor(call, 2) : NULL;
    mtk_dtype dtype = out->dtype;
    int64_t numel = mtk_tensor_numel(out);
    if (!check_cpu_dtype(call, &plan, dtype, numel)) return false;
    if (numel == 0) return true;
    if (plan.m > INT_MAX || plan.n > INT_MAX || plan.k > INT_MAX)
        return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED, "matrix sizes beyond INT_MAX are not supported");

    compute_kind kind = dtype == MTK_FLOAT32   ? COMPUTE_F32
                        : dtype == MTK_FLOAT64 ? COMPUTE_F64
                        : mtk_dtype_is_floating(dtype) ? COMPUTE_LOW_PRECISION
                                                       : COMPUTE_INT;
    bool f64 = kind == COMPUTE_F64;
    size_t compute_size = f64 ? sizeof(double) : kind == COMPUTE_INT ? mtk_dtype_size(dtype) : sizeof(float);

    /* results go straight into `out`, or into a float32 accumulator */
    void *acc = mtk_tensor_data(out);
    if (kind == COMPUTE_LOW_PRECISION) acc = mtk_ctx_malloc(call->ctx, (size_t)numel * sizeof(float));
    /* a few rows times a bfloat16 weight: the weight is read in place */
    bool half_rows = kind == COMPUTE_LOW_PRECISION && linalg_half_rows_fit(plan.m, b->dtype, plan.b_stride_k);
    size_t a_bytes = (size_t)(plan.m * plan.k) * compute_size, b_bytes = (size_t)(plan.k * plan.n) * compute_size;
    /* a few float32 rows times a weight as stored: mtk's threads */
    bool f32_rows = kind == COMPUTE_F32 && linalg_gemv_fit(plan.m, b->dtype, plan.b_stride_k);
    if (half_rows || f32_rows) b_bytes = 0;
    blas_operand oa = { 0 }, ob = { 0 };
    if (kind != COMPUTE_INT) {
        oa.scratch = mtk_ctx_malloc(call->ctx, a_bytes ? a_bytes : 1);
        ob.scratch = mtk_ctx_malloc(call->ctx, b_bytes ? b_bytes : 1);
    }
    if (!acc || (kind != COMPUTE_INT && (!oa.scratch || !ob.scratch))) {
        if (acc != mtk_tensor_data(out)) mtk_ctx_mfree(call->ctx, acc);
        mtk_ctx_mfree(call->ctx, oa.scratch);
        mtk_ctx_mfree(call->ctx, ob.scratch);
        return mtk_error(call->ctx, MTK_ERR_OUT_OF_MEMORY, "%s: out of memory", call->op->name);
    }

    // out is (batch..., m, n); each batch index picks a's and b's matrices
    size_t a_es = mtk_dtype_size(a->dtype), b_es = mtk_dtype_size(b->dtype);
    int64_t counter[MTK_MAX_DIMS] = { 0 };
    int64_t batches = 1;
    for (int32_t i = 0; i < plan.batch_ndim; i++) batches *= plan.batch_shape[i];
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t a_off = 0, b_off = 0;
        for (int32_t d = 0; d < plan.batch_ndim; d++) {
            a_off += counter[d] * plan.a_batch_stride[d];
            b_off += counter[d] * plan.b_batch_stride[d];
        }
        matrix ma = { (const char *)mtk_tensor_data(a) + a_off * (int64_t)a_es, a->dtype, plan.m, plan.k,
                      plan.a_stride_m, plan.a_stride_k };
        matrix mb = { (const char *)mtk_tensor_data(b) + b_off * (int64_t)b_es, b->dtype, plan.k, plan.n,
                      plan.b_stride_k, plan.b_stride_n };
        char *c = (char *)acc + bi * plan.m * plan.n * (int64_t)compute_size;
        if (plan.k == 0) memset(c, 0, (size_t)(plan.m * plan.n) * compute_size);
        else if (kind == COMPUTE_INT) gemm_int(&ma, &mb, dtype, c);
        else if (half_rows) gemm_half_rows(&ma, &mb, oa.scratch, (float *)c);
        else if (f32_rows) gemm_f32_rows(&ma, &mb, oa.scratch, (float *)c);
        else gemm_blas(f64, &oa, &ma, &ob, &mb, c, kind == COMPUTE_LOW_PRECISION);
        for (int32_t d = plan.batch_ndim - 1; d >= 0; d--) {
            if (++counter[d] < plan.batch_shape[d]) break;
            counter[d] = 0;
        }
    }
    mtk_ctx_mfree(call->ctx, oa.scratch);
    mtk_ctx_mfree(call->ctx, ob.scratch);

    /* the bias: addmm adds it before rounding, over the (rows, n) view */
    int64_t fused_shape[2] = { plan.bias_rows, plan.n };
    mtk_dtype acc_dtype = kind == COMPUTE_LOW_PRECISION ? MTK_FLOAT32 : dtype;
    if (plan.bias == MTK_BIAS_FUSED) add_bias(acc, acc_dtype, fused_shape, 2, bias);
    if (kind == COMPUTE_LOW_PRECISION) {
        const float *src = acc;
        char *dst = mtk_tensor_data(out);
        size_t es = mtk_dtype_size(dtype);
        for (int64_t i = 0; i < numel; i++) mtk_store_f64(dtype, dst + i * (int64_t)es, src[i]);
        mtk_ctx_mfree(call->ctx, acc);
    }
    if (plan.bias == MTK_BIAS_ADD) add_bias(mtk_tensor_data(out), dtype, out->shape, out->ndim, bias);
    return true;
}
