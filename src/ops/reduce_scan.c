/* Cumulative kernels: cumsum, cumprod, cummax and cummin along one dim.
 *
 * Each line along the dim is scanned in order.  Floating results
 * accumulate in double (torch's cpu accumulates float32 in double too and
 * float16/bfloat16 in float) and are rounded to the output dtype at every
 * step; integral ones in int64 with wrap-around.  cummax/cummin take the
 * later index among equal values and keep a NaN once seen (a later NaN
 * takes over the index), as torch's cpu kernel does. */
#include "ops/reduce_kernel.h"
#include "core/scalar.h"

#include <math.h>
#include <string.h>

typedef struct scan_job {
    const red_desc *d;
    const char *in;
    char *out[2];
    int64_t len;                 /* size along the dim                */
    int64_t in_step, out_step[2]; /* byte strides along the dim        */
    int32_t nlines_dims;          /* the other dims                    */
    int64_t shape[MTK_MAX_DIMS], in_stride[MTK_MAX_DIMS], out_stride[2][MTK_MAX_DIMS];
    bool floating;
} scan_job;

enum { SCAN_CHUNK = 256 };

static void scan_line(const scan_job *j, const char *in, char *out0, char *out1)
{
    const red_desc *d = j->d;
    mtk_dtype src = d->input->dtype, cast = d->cast, o0 = d->out_dtype[0];
    bool is_max = d->kind == MTK_RED_CUMMAX, extreme = is_max || d->kind == MTK_RED_CUMMIN;
    double fbuf[SCAN_CHUNK], facc = d->kind == MTK_RED_CUMPROD ? 1.0 : 0.0;
    int64_t ibuf[SCAN_CHUNK], index[SCAN_CHUNK], iacc = d->kind == MTK_RED_CUMPROD ? 1 : 0, best = 0;
    bool have = false;
    for (int64_t s = 0; s < j->len; s += SCAN_CHUNK) {
        int64_t cnt = j->len - s < SCAN_CHUNK ? j->len - s : SCAN_CHUNK;
        const char *p = in + s * j->in_step;
        /* each buffer is overwritten in place by its running results */
        if (j->floating) {
            red_load_f64(p, j->in_step, cnt, src, cast, fbuf);
            if (d->kind == MTK_RED_CUMSUM)
                for (int64_t k = 0; k < cnt; k++) fbuf[k] = facc += fbuf[k];
            else if (d->kind == MTK_RED_CUMPROD)
                for (int64_t k = 0; k < cnt; k++) fbuf[k] = facc *= fbuf[k];
            else
                for (int64_t k = 0; k < cnt; k++) {
                    double x = fbuf[k];
                    if (!have || isnan(x) || (!isnan(facc) && (is_max ? x >= facc : x <= facc)))
                        facc = x, best = s + k, have = true;
                    fbuf[k] = facc;
                    index[k] = best;
                }
            red_store_f64(out0 + s * j->out_step[0], j->out_step[0], cnt, o0, fbuf);
        } else {
            red_load_i64(p, j->in_step, cnt, src, cast, ibuf);
            if (d->kind == MTK_RED_CUMSUM)
                for (int64_t k = 0; k < cnt; k++) ibuf[k] = iacc = (int64_t)((uint64_t)iacc + (uint64_t)ibuf[k]);
            else if (d->kind == MTK_RED_CUMPROD)
                for (int64_t k = 0; k < cnt; k++) ibuf[k] = iacc = (int64_t)((uint64_t)iacc * (uint64_t)ibuf[k]);
            else
                for (int64_t k = 0; k < cnt; k++) {
                    int64_t x = ibuf[k];
                    if (!have || (is_max ? x >= iacc : x <= iacc)) iacc = x, best = s + k, have = true;
                    ibuf[k] = iacc;
                    index[k] = best;
                }
            red_store_i64(out0 + s * j->out_step[0], j->out_step[0], cnt, o0, ibuf);
        }
        if (extreme) red_store_i64(out1 + s * j->out_step[1], j->out_step[1], cnt, MTK_INT64, index);
    }
}

static void scan_lines(int64_t begin, int64_t end, int32_t worker, void *user)
{
    (void)worker;
    const scan_job *j = user;
    for (int64_t line = begin; line < end; line++) {
        int64_t rest = line, in_off = 0, out_off[2] = { 0, 0 };
        for (int32_t i = j->nlines_dims - 1; i >= 0; i--) {
            int64_t c = rest % j->shape[i];
            rest /= j->shape[i];
            in_off += c * j->in_stride[i];
            out_off[0] += c * j->out_stride[0][i];
            out_off[1] += c * j->out_stride[1][i];
        }
        scan_line(j, j->in + in_off, j->out[0] + out_off[0], j->d->nout > 1 ? j->out[1] + out_off[1] : NULL);
    }
}

bool red_scan_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out)
{
    (void)ctx;
    const mtk_tensor *x = d->input;
    scan_job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.in = mtk_tensor_data(x);
    j.floating = mtk_dtype_is_floating(d->cast);
    int64_t in_size = (int64_t)mtk_dtype_size(x->dtype);
    for (int32_t k = 0; k < d->nout; k++) j.out[k] = mtk_tensor_data(out[k]);
    if (x->ndim == 0) {
        j.len = 1;
    } else {
        j.len = x->shape[d->dim];
        j.in_step = x->stride[d->dim] * in_size;
        for (int32_t k = 0; k < d->nout; k++)
            j.out_step[k] = out[k]->stride[d->dim] * (int64_t)mtk_dtype_size(out[k]->dtype);
    }
    int64_t nlines = 1;
    for (int32_t i = 0; i < x->ndim; i++) {
        if (i == d->dim) continue;
        int32_t m = j.nlines_dims++;
        j.shape[m] = x->shape[i];
        j.in_stride[m] = x->stride[i] * in_size;
        for (int32_t k = 0; k < d->nout; k++)
            j.out_stride[k][m] = out[k]->stride[i] * (int64_t)mtk_dtype_size(out[k]->dtype);
        nlines *= x->shape[i];
    }
    if (nlines == 0 || j.len == 0) return true;
    int32_t nthreads = nlines * j.len < RED_PARALLEL_MIN_ELEMENTS ? 1 : red_num_threads();
    red_parallel(nlines, nthreads, scan_lines, &j);
    return true;
}
