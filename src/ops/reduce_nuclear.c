/* The nuclear norm, torch.norm(x, 'nuc', dim=(d0, d1)): the sum of the
 * singular values of every matrix that the two reduced dims form, from
 * LAPACK's dgesvd (OpenBLAS ships it) in double, then rounded to the
 * output dtype.  torch computes in the input's dtype; double is at least
 * as accurate. */
#include "ops/reduce_kernel.h"
#include "core/scalar.h"

#include <math.h>
#include <string.h>

/* LAPACK (Fortran ABI: trailing lengths of the character arguments). */
extern void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a, const int *lda,
                    double *s, double *u, const int *ldu, double *vt, const int *ldvt, double *work,
                    const int *lwork, int *info, size_t jobu_len, size_t jobvt_len);

/* Sum of the singular values of the m x n column-major matrix a (which
 * dgesvd overwrites); NaN when LAPACK fails (NaN input). */
static double singular_value_sum(mtk_ctx *ctx, double *a, int m, int n, double *s, double **work, int *lwork)
{
    if (m == 0 || n == 0) return 0.0;
    int one = 1, info = 0, query = -1;
    double dummy = 0.0, size = 0.0;
    if (*lwork == 0) { /* workspace query, once */
        dgesvd_("N", "N", &m, &n, a, &m, s, &dummy, &one, &dummy, &one, &size, &query, &info, 1, 1);
        *lwork = size > 1.0 ? (int)size : 1;
        *work = mtk_ctx_malloc(ctx, (size_t)*lwork * sizeof **work);
        if (!*work) return NAN;
    }
    dgesvd_("N", "N", &m, &n, a, &m, s, &dummy, &one, &dummy, &one, *work, lwork, &info, 1, 1);
    if (info != 0) return NAN;
    double sum = 0.0;
    for (int k = 0; k < (m < n ? m : n); k++) sum += s[k];
    return sum;
}

bool red_nuclear_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out)
{
    const mtk_tensor *x = d->input;
    int32_t rows = -1, cols = -1;
    for (int32_t i = 0; i < x->ndim; i++)
        if (d->reduce[i]) {
            if (rows < 0) rows = i;
            else cols = i;
        }
    if (rows < 0 || cols < 0) return mtk_error(ctx, MTK_ERR_SHAPE, "norm: the nuclear norm needs two dims");
    int64_t m = x->shape[rows], n = x->shape[cols];
    if (m > INT32_MAX / (n > 0 ? n : 1))
        return mtk_error(ctx, MTK_ERR_OVERFLOW, "norm: a %lldx%lld matrix is too large for LAPACK", (long long)m,
                         (long long)n);
    /* the batch: every kept dim, with its input and output strides */
    int64_t es = (int64_t)mtk_dtype_size(x->dtype), oes = (int64_t)mtk_dtype_size(out[0]->dtype);
    int64_t shape[MTK_MAX_DIMS], in_stride[MTK_MAX_DIMS], out_stride[MTK_MAX_DIMS], batch = 1;
    int32_t nb = 0, od = 0;
    for (int32_t i = 0; i < x->ndim; i++) {
        if (d->reduce[i]) {
            if (d->keepdim) od++;
            continue;
        }
        shape[nb] = x->shape[i], in_stride[nb] = x->stride[i] * es, out_stride[nb] = out[0]->stride[od] * oes;
        batch *= x->shape[i], nb++, od++;
    }
    double *a = mtk_ctx_malloc(ctx, (size_t)(m * n > 0 ? m * n : 1) * sizeof *a);
    double *s = mtk_ctx_malloc(ctx, (size_t)((m < n ? m : n) + 1) * sizeof *s);
    double *work = NULL;
    int lwork = 0;
    bool ok = a && s;
    const char *in = mtk_tensor_data(x);
    char *dst = mtk_tensor_data(out[0]);
    for (int64_t b = 0; ok && b < batch; b++) {
        int64_t rest = b, in_off = 0, out_off = 0;
        for (int32_t i = nb - 1; i >= 0; i--) {
            in_off += rest % shape[i] * in_stride[i];
            out_off += rest % shape[i] * out_stride[i];
            rest /= shape[i];
        }
        /* column-major copy: a[r + c*m] = x[.., r, .., c, ..] */
        for (int64_t c = 0; c < n; c++)
            red_load_f64(in + in_off + c * x->stride[cols] * es, x->stride[rows] * es, m, x->dtype, d->cast,
                         a + c * m);
        double r = singular_value_sum(ctx, a, (int)m, (int)n, s, &work, &lwork);
        if (lwork > 0 && !work) ok = false;
        mtk_store_f64(out[0]->dtype, dst + out_off, r);
    }
    mtk_ctx_mfree(ctx, work);
    mtk_ctx_mfree(ctx, s);
    mtk_ctx_mfree(ctx, a);
    return ok ? true : mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "norm: out of memory for the nuclear norm");
}
