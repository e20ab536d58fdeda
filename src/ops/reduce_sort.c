/* Order-statistic kernels: median, nanmedian and mode.
 *
 * Each reduced slice is copied with its elements' positions and sorted by
 * (value, position), NaN last.  median takes the lower middle element and
 * is NaN (at the first NaN's position) when a NaN is present; nanmedian
 * takes the lower middle of the non-NaN elements; mode takes the most
 * frequent value (the smallest among equally frequent ones) at the last
 * position it occurs.  For distinct values the positions are torch's; for
 * repeated values torch's median reports whichever equal element its
 * selection algorithm lands on, which this sort does not promise to
 * match. */
#include "ops/reduce_kernel.h"
#include "core/scalar.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
    double f;
    int64_t i;   /* the value, integral dtypes */
    int64_t pos; /* position in the slice      */
} item;

static int cmp_float(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    bool na = isnan(a->f), nb = isnan(b->f);
    if (na != nb) return na ? 1 : -1;
    if (!na && a->f != b->f) return a->f < b->f ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static int cmp_int(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    if (a->i != b->i) return a->i < b->i ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static bool same_value(const item *a, const item *b, bool floating)
{
    if (!floating) return a->i == b->i;
    return a->f == b->f || (isnan(a->f) && isnan(b->f));
}

typedef struct sort_job {
    const red_desc *d;
    bool floating;
    const char *in;
    char *out[2];
    int64_t len, in_step;           /* the reduced slice                    */
    int32_t nk;                     /* the other dims                       */
    int64_t shape[MTK_MAX_DIMS], in_stride[MTK_MAX_DIMS], out_stride[2][MTK_MAX_DIMS];
    item *scratch;                  /* nthreads x len                       */
    /* full reductions (median(x)): the whole input, in row-major order   */
    bool full;
} sort_job;

static void load_item(const sort_job *j, const char *p, int64_t pos, item *it)
{
    mtk_dtype t = j->d->input->dtype;
    it->pos = pos;
    if (j->floating) it->f = mtk_load_f64(t, p), it->i = 0;
    else it->i = mtk_load_i64(t, p), it->f = 0.0;
}

/* Picks the answer of a sorted slice of n items: *chosen, or NULL for a
 * NaN result with no element (nanmedian of NaNs, empty slices). */
static const item *pick(const sort_job *j, item *items, int64_t n, bool *is_nan)
{
    *is_nan = false;
    if (n == 0) {
        *is_nan = true;
        return NULL;
    }
    qsort(items, (size_t)n, sizeof *items, j->floating ? cmp_float : cmp_int);
    mtk_reduce_kind kind = j->d->kind;
    if (kind == MTK_RED_MODE) {
        int64_t best = 0, best_len = 0;
        for (int64_t s = 0; s < n;) {
            int64_t e = s + 1;
            while (e < n && same_value(&items[s], &items[e], j->floating)) e++;
            if (e - s > best_len) best = e - 1, best_len = e - s;
            s = e;
        }
        return &items[best];
    }
    int64_t count = n;
    if (j->floating) {
        int64_t nans = 0;
        while (nans < n && isnan(items[n - 1 - nans].f)) nans++;
        if (kind == MTK_RED_MEDIAN && nans > 0) return &items[n - nans]; /* the first NaN */
        count = n - nans;
        if (count == 0) {
            *is_nan = true;
            return NULL;
        }
    }
    return &items[(count - 1) / 2];
}

static void store_answer(const sort_job *j, const item *it, bool is_nan, char *out0, char *out1)
{
    mtk_dtype t = j->d->out_dtype[0];
    if (is_nan || !it) mtk_store_f64(t, out0, NAN);
    else if (j->floating) mtk_store_f64(t, out0, it->f);
    else mtk_store_i64(t, out0, it->i);
    if (out1) mtk_store_i64(MTK_INT64, out1, it ? it->pos : 0);
}

static void sort_slices(int64_t begin, int64_t end, int32_t worker, void *user)
{
    const sort_job *j = user;
    item *items = j->scratch + (int64_t)worker * j->len;
    for (int64_t s = begin; s < end; s++) {
        int64_t rest = s, in_off = 0, out_off[2] = { 0, 0 };
        for (int32_t i = j->nk - 1; i >= 0; i--) {
            int64_t c = rest % j->shape[i];
            rest /= j->shape[i];
            in_off += c * j->in_stride[i];
            out_off[0] += c * j->out_stride[0][i];
            out_off[1] += c * j->out_stride[1][i];
        }
        for (int64_t k = 0; k < j->len; k++) load_item(j, j->in + in_off + k * j->in_step, k, &items[k]);
        bool is_nan;
        const item *it = pick(j, items, j->len, &is_nan);
        store_answer(j, it, is_nan, j->out[0] + out_off[0], j->d->nout > 1 ? j->out[1] + out_off[1] : NULL);
    }
}

/* median(x) / nanmedian(x): every element, in row-major order */
static bool sort_full(mtk_ctx *ctx, sort_job *j)
{
    const mtk_tensor *x = j->d->input;
    int64_t n = mtk_tensor_numel(x);
    item *items = mtk_ctx_malloc(ctx, (size_t)(n > 0 ? n : 1) * sizeof *items);
    if (!items) return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory sorting %lld elements", (long long)n);
    int64_t es = (int64_t)mtk_dtype_size(x->dtype);
    for (int64_t k = 0; k < n; k++) {
        int64_t rest = k, off = 0;
        for (int32_t i = x->ndim - 1; i >= 0; i--) {
            off += rest % x->shape[i] * x->stride[i] * es;
            rest /= x->shape[i];
        }
        load_item(j, j->in + off, k, &items[k]);
    }
    bool is_nan;
    const item *it = pick(j, items, n, &is_nan);
    store_answer(j, it, is_nan, j->out[0], NULL);
    mtk_ctx_mfree(ctx, items);
    return true;
}

bool red_sort_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out)
{
    const mtk_tensor *x = d->input;
    sort_job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.floating = mtk_dtype_is_floating(x->dtype);
    j.in = mtk_tensor_data(x);
    for (int32_t k = 0; k < d->nout; k++) j.out[k] = mtk_tensor_data(out[k]);
    if (!d->has_dim) return sort_full(ctx, &j);
    int64_t es = (int64_t)mtk_dtype_size(x->dtype);
    j.len = x->ndim ? x->shape[d->dim] : 1;
    j.in_step = x->ndim ? x->stride[d->dim] * es : 0;
    int64_t nslices = 1;
    int32_t od = 0;
    for (int32_t i = 0; i < x->ndim; i++) {
        if (i == d->dim) {
            if (d->keepdim) od++;
            continue;
        }
        int32_t m = j.nk++;
        j.shape[m] = x->shape[i];
        j.in_stride[m] = ops_wrap_mul(x->stride[i], es); /* wraps only for an empty input */
        for (int32_t k = 0; k < d->nout; k++)
            j.out_stride[k][m] = ops_wrap_mul(out[k]->stride[od], (int64_t)mtk_dtype_size(out[k]->dtype));
        od++;
        nslices *= x->shape[i];
    }
    if (nslices == 0) return true;
    int32_t nthreads = nslices * j.len < RED_PARALLEL_MIN_ELEMENTS ? 1 : red_num_threads();
    if (nthreads > nslices) nthreads = (int32_t)nslices;
    j.scratch = mtk_ctx_malloc(ctx, (size_t)(nthreads * (j.len > 0 ? j.len : 1)) * sizeof(item));
    if (!j.scratch) return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory for %s", "sorting");
    red_parallel(nslices, nthreads, sort_slices, &j);
    mtk_ctx_mfree(ctx, j.scratch);
    return true;
}
