/* The cpu kernel of every convolution.  Float32 ones run on the direct
 * kernel (conv_direct.c) where it applies; the rest: im2col + GEMM
 * (OpenBLAS sgemm / dgemm) for the floating dtypes — float16 and bfloat16
 * computed in float32 and rounded once; stride-1 2-D ones with groups 1
 * and 16+ channels (float64, or float32 the direct kernel leaves) through
 * a kw-unrolled variant (the fast path below) — and GEMM + col2im for
 * transposed ones (float16 and bfloat16 ones rounded step by step as
 * torch's slow kernels round, conv_transpose_half.c); integers in plain
 * loops that wrap as the dtype does.  Work is split over (batch, group) pairs
 * across threads; columns are processed in chunks so the column buffer
 * stays small.  Inputs of any strides are gathered into contiguous
 * buffers of the compute type first. */
#include "ops/conv.h"
#include "ops/op_util.h"
#include "core/scalar.h"

#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "mtk/ops/conv.h"

#include "ops/blas.h"
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <limits.h>
#include <string.h>

typedef enum { COMPUTE_F32, COMPUTE_F64, COMPUTE_INT } compute_kind;

/* Columns per GEMM call: the column buffer of a worker stays within
 * about a quarter of a core's L2, where the GEMM reads it back (measured:
 * 3-4x faster than 8 MiB buffers on the ResNet-50 stem and 3x3 convs). */
#define COL_BUDGET_BYTES ((int64_t)512 << 10)

/* A 5-D view (N, C, D, H, W) of a batched-or-not 1-D to 3-D tensor:
 * element strides, missing dims with stride 0. */
typedef struct view5 {
    const char *base;
    mtk_dtype dtype;
    int64_t stride[5];
} view5;

static view5 make_view5(const mtk_tensor *t, int32_t spatial, bool batched)
{
    view5 v = { mtk_tensor_data(t), t->dtype, { 0, 0, 0, 0, 0 } };
    int32_t d = 0;
    if (batched) v.stride[0] = t->stride[d++];
    v.stride[1] = t->stride[d++];
    for (int32_t i = 0; i < spatial; i++) v.stride[2 + (3 - spatial) + i] = t->stride[d++];
    return v;
}

/* A weight (O, I, kD, kH, kW) as a 5-D view. */
static view5 weight_view5(const mtk_tensor *w, int32_t spatial)
{
    view5 v = { mtk_tensor_data(w), w->dtype, { w->stride[0], w->stride[1], 0, 0, 0 } };
    for (int32_t i = 0; i < spatial; i++) v.stride[2 + (3 - spatial) + i] = w->stride[2 + i];
    return v;
}

/* Copies the (c0 .. c0+nc, D, H, W) block of batch n of `v` into a
 * contiguous buffer of the compute type. */
static void gather_block(const view5 *v, int64_t n, int64_t c0, int64_t nc, const int64_t *size,
                         compute_kind kind, void *dst)
{
    size_t es = mtk_dtype_size(v->dtype);
    int64_t i = 0;
    for (int64_t c = 0; c < nc; c++)
        for (int64_t d = 0; d < size[0]; d++)
            for (int64_t h = 0; h < size[1]; h++) {
                const char *row = v->base + (n * v->stride[0] + (c0 + c) * v->stride[1] + d * v->stride[2] +
                                             h * v->stride[3]) * (int64_t)es;
                int64_t sw = v->stride[4] * (int64_t)es;
                if (kind == COMPUTE_F32) {
                    float *o = (float *)dst + i;
                    if (v->dtype == MTK_FLOAT32)
                        for (int64_t w = 0; w < size[2]; w++) memcpy(&o[w], row + w * sw, sizeof(float));
                    else
                        for (int64_t w = 0; w < size[2]; w++) o[w] = (float)mtk_load_f64(v->dtype, row + w * sw);
                } else if (kind == COMPUTE_F64) {
                    double *o = (double *)dst + i;
                    for (int64_t w = 0; w < size[2]; w++) o[w] = mtk_load_f64(v->dtype, row + w * sw);
                } else {
                    int64_t *o = (int64_t *)dst + i;
                    for (int64_t w = 0; w < size[2]; w++) o[w] = mtk_load_i64(v->dtype, row + w * sw);
                }
                i += size[2];
            }
}

/* ------------------------------------------------------------ the job */

typedef struct conv_job {
    const mtk_conv_plan *p;
    compute_kind kind;
    size_t cs;                 /* compute element size             */
    view5 in;
    const void *weight;        /* contiguous compute-typed weight  */
    const double *bias;        /* per output channel, or NULL       */
    const int64_t *ibias;      /* the same for integer outputs      */
    mtk_tensor *out;
    bool out_direct;           /* out's dtype is the compute type   */
    mtk_dtype half;            /* transposed float16/bfloat16: the
                                  dtype torch's slow kernel rounds its
                                  columns and sums to; else UNDEFINED */
    bool half_channels_last;   /* that kernel runs channels-last     */
    int64_t cg, og;            /* channels per group: in, out       */
    int64_t kvol, in_vol, out_vol;
    int64_t chunk;             /* columns per GEMM                  */
    int64_t parts;             /* column ranges per (batch, group)  */
    void **xbuf, **colbuf, **obuf; /* per worker scratch            */
} conv_job;

/* The output positions ow in [*lo, *hi) of a row whose input column
 * ow * stride - pad + k * dilation falls inside [0, in_w). */
static void valid_range(int64_t out_w, int64_t in_w, int64_t stride, int64_t pad, int64_t offset, int64_t *lo,
                        int64_t *hi)
{
    /* iw = ow * stride + shift >= 0  <=>  ow >= ceil(-shift / stride) */
    int64_t shift = offset - pad;
    int64_t first = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
    /* iw <= in_w - 1  <=>  ow <= floor((in_w - 1 - shift) / stride) */
    int64_t last = in_w - 1 - shift < 0 ? -1 : (in_w - 1 - shift) / stride;
    *lo = first < out_w ? first : out_w;
    *hi = last + 1 < *lo ? *lo : (last + 1 < out_w ? last + 1 : out_w);
}

/* dst[i] = src[2 i] for i < n: the rows of stride-2 convolutions'
 * im2col; with AVX-512, 16 at a time from two loads and a permute (the
 * second load masked so it never reads past src[2 (n - 1)]). */
#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("avx512f"))) static void copy_stride2_avx512(float *dst, const float *src, int64_t n)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 lo = _mm512_loadu_ps(src + 2 * i), hi = _mm512_maskz_loadu_ps(0x7fff, src + 2 * i + 16);
        _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(lo, even, hi));
    }
    for (; i < n; i++) dst[i] = src[2 * i];
}
#endif

static void copy_stride2_f32(float *dst, const float *src, int64_t n)
{
#if defined(__GNUC__) && defined(__x86_64__)
    if (n >= 16 && cpu_isa_active() == CPU_ISA_AVX512) {
        copy_stride2_avx512(dst, src, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) dst[i] = src[2 * i];
}

/* rows (c, kd, kh, kw) x columns [l0, l0 + nl) of the im2col matrix of
 * the gathered input x (cg, D, H, W), row-major with row length nl, for
 * elements of `es` bytes: each output row (od, oh) is a zero-padded,
 * strided copy of one input row, so it goes segment by segment.  Always
 * inlined, so that each caller's constant `es` makes its copies plain
 * loads and stores. */
static inline __attribute__((always_inline)) void im2col_es(const conv_job *j, const char *x, char *col, int64_t l0,
                                                            int64_t nl, size_t es)
{
    const mtk_conv_plan *p = j->p;
    const int64_t *is = p->in_size, *os = p->out_size;
    int64_t sw = p->stride[2];
    char *dst = col;
    for (int64_t c = 0; c < j->cg; c++)
        for (int64_t kd = 0; kd < p->kernel[0]; kd++)
            for (int64_t kh = 0; kh < p->kernel[1]; kh++)
                for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
                    int64_t lo, hi, shift = kw * p->dilation[2] - p->pad[2];
                    valid_range(os[2], is[2], sw, p->pad[2], kw * p->dilation[2], &lo, &hi);
                    for (int64_t l = l0; l < l0 + nl;) {
                        int64_t od = l / (os[1] * os[2]), oh = (l / os[2]) % os[1], ow0 = l % os[2];
                        int64_t len = os[2] - ow0 < l0 + nl - l ? os[2] - ow0 : l0 + nl - l;
                        int64_t id = od * p->stride[0] - p->pad[0] + kd * p->dilation[0];
                        int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                        if (id < 0 || id >= is[0] || ih < 0 || ih >= is[1]) {
                            memset(dst, 0, (size_t)len * es);
                        } else {
                            /* input row (c, id, ih, :); output column ow reads iw = ow * sw + shift */
                            const char *row = x + (((c * is[0] + id) * is[1] + ih) * is[2]) * (int64_t)es;
                            /* [a, b): the segment's columns with input; the
                             * segment may lie wholly left or right of [lo, hi) */
                            int64_t a = lo > ow0 ? lo : ow0, b = hi < ow0 + len ? hi : ow0 + len;
                            if (a > ow0 + len) a = ow0 + len;
                            if (b < a) b = a;
                            memset(dst, 0, (size_t)(a - ow0) * es);
                            if (b > a && sw == 1)
                                memcpy(dst + (a - ow0) * (int64_t)es, row + (a + shift) * (int64_t)es,
                                       (size_t)(b - a) * es);
                            else if (b > a && sw == 2 && es == sizeof(float))
                                copy_stride2_f32((float *)dst + (a - ow0), (const float *)row + (2 * a + shift), b - a);
                            else
                                for (int64_t ow = a; ow < b; ow++)
                                    memcpy(dst + (ow - ow0) * (int64_t)es, row + (ow * sw + shift) * (int64_t)es, es);
                            memset(dst + (b - ow0) * (int64_t)es, 0, (size_t)(ow0 + len - b) * es);
                        }
                        dst += len * (int64_t)es;
                        l += len;
                    }
                }
}

static void im2col(const conv_job *j, const void *x, void *col, int64_t l0, int64_t nl)
{
    if (j->kind == COMPUTE_F32) im2col_es(j, x, col, l0, nl, sizeof(float));
    else im2col_es(j, x, col, l0, nl, sizeof(double));
}

/* out_g[, l0 .. l0+nl) += col2im of col rows (c, kd, kh, kw) x input
 * positions [l0, l0 + nl) (transposed convolution) */
static void col2im(const conv_job *j, const void *col, void *outg, int64_t l0, int64_t nl)
{
    const mtk_conv_plan *p = j->p;
    const int64_t *is = p->in_size, *os = p->out_size;
    int64_t row = 0;
    for (int64_t c = 0; c < j->og; c++)
        for (int64_t kd = 0; kd < p->kernel[0]; kd++)
            for (int64_t kh = 0; kh < p->kernel[1]; kh++)
                for (int64_t kw = 0; kw < p->kernel[2]; kw++, row++) {
                    int64_t l = l0;
                    int64_t id = l / (is[1] * is[2]), ih = (l / is[2]) % is[1], iw = l % is[2];
                    for (int64_t t = 0; t < nl; t++) {
                        int64_t od = id * p->stride[0] - p->pad[0] + kd * p->dilation[0];
                        int64_t oh = ih * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                        int64_t ow = iw * p->stride[2] - p->pad[2] + kw * p->dilation[2];
                        if (od >= 0 && od < os[0] && oh >= 0 && oh < os[1] && ow >= 0 && ow < os[2]) {
                            int64_t dst = ((c * os[0] + od) * os[1] + oh) * os[2] + ow, src = row * nl + t;
                            if (j->kind == COMPUTE_F32) ((float *)outg)[dst] += ((const float *)col)[src];
                            else ((double *)outg)[dst] += ((const double *)col)[src];
                        }
                        if (++iw == is[2]) {
                            iw = 0;
                            if (++ih == is[1]) ih = 0, id++;
                        }
                    }
                }
}

/* ------------------------------------------------- integer kernels */

static void conv_int(const conv_job *j, const int64_t *x, uint64_t *outg, int64_t g)
{
    const mtk_conv_plan *p = j->p;
    const int64_t *is = p->in_size, *os = p->out_size;
    const int64_t *w = (const int64_t *)j->weight + g * j->og * j->cg * j->kvol;
    for (int64_t o = 0; o < j->og; o++)
        for (int64_t od = 0; od < os[0]; od++)
            for (int64_t oh = 0; oh < os[1]; oh++)
                for (int64_t ow = 0; ow < os[2]; ow++) {
                    uint64_t acc = 0;
                    const int64_t *wo = w + o * j->cg * j->kvol;
                    for (int64_t c = 0; c < j->cg; c++)
                        for (int64_t kd = 0; kd < p->kernel[0]; kd++)
                            for (int64_t kh = 0; kh < p->kernel[1]; kh++)
                                for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
                                    int64_t id = od * p->stride[0] - p->pad[0] + kd * p->dilation[0];
                                    int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                                    int64_t iw = ow * p->stride[2] - p->pad[2] + kw * p->dilation[2];
                                    if (id < 0 || id >= is[0] || ih < 0 || ih >= is[1] || iw < 0 || iw >= is[2])
                                        continue;
                                    int64_t xi = ((c * is[0] + id) * is[1] + ih) * is[2] + iw;
                                    int64_t wi = ((c * p->kernel[0] + kd) * p->kernel[1] + kh) * p->kernel[2] + kw;
                                    acc += (uint64_t)x[xi] * (uint64_t)wo[wi];
                                }
                    outg[((o * os[0] + od) * os[1] + oh) * os[2] + ow] = acc;
                }
}

static void conv_transpose_int(const conv_job *j, const int64_t *x, uint64_t *outg, int64_t g)
{
    const mtk_conv_plan *p = j->p;
    const int64_t *is = p->in_size, *os = p->out_size;
    /* weight (in_channels, og, k...): group g's rows */
    const int64_t *w = (const int64_t *)j->weight + g * j->cg * j->og * j->kvol;
    memset(outg, 0, (size_t)(j->og * j->out_vol) * sizeof *outg);
    for (int64_t c = 0; c < j->cg; c++)
        for (int64_t id = 0; id < is[0]; id++)
            for (int64_t ih = 0; ih < is[1]; ih++)
                for (int64_t iw = 0; iw < is[2]; iw++) {
                    uint64_t xv = (uint64_t)x[((c * is[0] + id) * is[1] + ih) * is[2] + iw];
                    for (int64_t o = 0; o < j->og; o++)
                        for (int64_t kd = 0; kd < p->kernel[0]; kd++)
                            for (int64_t kh = 0; kh < p->kernel[1]; kh++)
                                for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
                                    int64_t od = id * p->stride[0] - p->pad[0] + kd * p->dilation[0];
                                    int64_t oh = ih * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                                    int64_t ow = iw * p->stride[2] - p->pad[2] + kw * p->dilation[2];
                                    if (od < 0 || od >= os[0] || oh < 0 || oh >= os[1] || ow < 0 || ow >= os[2])
                                        continue;
                                    int64_t wi = (((c * j->og + o) * p->kernel[0] + kd) * p->kernel[1] + kh) *
                                                     p->kernel[2] + kw;
                                    outg[((o * os[0] + od) * os[1] + oh) * os[2] + ow] += xv * (uint64_t)w[wi];
                                }
                }
}

/* ------------------------------------------------------- one task */

/* Stores the (og, out_vol) block of output channels for (n, g) from the
 * compute-typed buffer `acc`, adding the bias. */
static void store_block(const conv_job *j, int64_t n, int64_t g, const void *acc)
{
    mtk_tensor *out = j->out;
    int64_t first = (n * j->p->out_channels + g * j->og) * j->out_vol;
    size_t es = mtk_dtype_size(out->dtype);
    char *dst = (char *)mtk_tensor_data(out) + first * (int64_t)es;
    for (int64_t o = 0; o < j->og; o++) {
        double b = j->bias ? j->bias[g * j->og + o] : 0.0;
        for (int64_t l = 0; l < j->out_vol; l++) {
            int64_t i = o * j->out_vol + l;
            char *e = dst + i * (int64_t)es;
            if (j->kind == COMPUTE_F32) {
                float v = ((const float *)acc)[i];
                if (j->bias) v = (float)((double)v + b);
                mtk_store_f64(out->dtype, e, v);
            } else if (j->kind == COMPUTE_F64) {
                mtk_store_f64(out->dtype, e, ((const double *)acc)[i] + b);
            } else {
                uint64_t v = ((const uint64_t *)acc)[i] + (j->ibias ? (uint64_t)j->ibias[g * j->og + o] : 0);
                mtk_store_i64(out->dtype, e, (int64_t)v);
            }
        }
    }
}

/* Adds the bias to columns [c0, c1) of the (og, out_vol) block `acc`. */
static void add_bias_inplace(const conv_job *j, void *acc, int64_t g, int64_t c0, int64_t c1)
{
    if (!j->bias) return;
    for (int64_t o = 0; o < j->og; o++) {
        double b = j->bias[g * j->og + o];
        if (j->kind == COMPUTE_F32) {
            float *row = (float *)acc + o * j->out_vol;
            for (int64_t l = c0; l < c1; l++) row[l] = (float)((double)row[l] + b);
        } else {
            double *row = (double *)acc + o * j->out_vol;
            for (int64_t l = c0; l < c1; l++) row[l] += b;
        }
    }
}

/* The (cg, D, H, W) input block of (n, g) in the compute type: the
 * input itself when it already is that, contiguous; else gathered into
 * `scratch`. */
static const void *input_block(const conv_job *j, int64_t n, int64_t g, void *scratch)
{
    const view5 *v = &j->in;
    const int64_t *is = j->p->in_size;
    bool same_type = (j->kind == COMPUTE_F32 && v->dtype == MTK_FLOAT32) ||
                     (j->kind == COMPUTE_F64 && v->dtype == MTK_FLOAT64);
    bool dense = v->stride[4] == 1 && (is[1] == 1 || v->stride[3] == is[2]) &&
                 (is[0] == 1 || v->stride[2] == is[1] * is[2]) && (j->cg == 1 || v->stride[1] == j->in_vol);
    if (same_type && dense)
        return v->base + (n * v->stride[0] + g * j->cg * v->stride[1]) * (int64_t)mtk_dtype_size(v->dtype);
    gather_block(v, n, g * j->cg, j->cg, is, j->kind, scratch);
    return scratch;
}

static void gemm(compute_kind kind, bool trans_a, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                 const void *b, int64_t ldb, void *c, int64_t ldc)
{
    enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
    if (kind == COMPUTE_F32)
        ops_sgemm(CblasRowMajor, ta, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, 0.0f, c,
                    (int)ldc);
    else
        ops_dgemm(CblasRowMajor, ta, CblasNoTrans, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b, (int)ldb, 0.0, c,
                    (int)ldc);
}

/* Task (n, g, part): output channels of group g for batch n, columns
 * in part `part` of `j->parts` (the parts only split direct outputs). */
static void run_task(int64_t task, int32_t worker, void *user)
{
    const conv_job *j = user;
    const mtk_conv_plan *p = j->p;
    int64_t part = task % j->parts, ng = task / j->parts;
    int64_t n = ng / p->groups, g = ng % p->groups;
    void *col = j->colbuf[worker];
    /* the output block: straight into `out` when it has the compute type */
    void *acc = j->out_direct ? (char *)mtk_tensor_data(j->out) +
                                    (n * p->out_channels + g * j->og) * j->out_vol * (int64_t)j->cs
                              : j->obuf[worker];
    if (j->kind == COMPUTE_INT) {
        gather_block(&j->in, n, g * j->cg, j->cg, p->in_size, j->kind, j->xbuf[worker]);
        if (p->transposed) conv_transpose_int(j, j->xbuf[worker], acc, g);
        else conv_int(j, j->xbuf[worker], acc, g);
        store_block(j, n, g, acc);
        return;
    }
    const char *x = input_block(j, n, g, j->xbuf[worker]);
    int64_t c0 = 0, c1 = j->out_vol;
    if (!p->transposed) {
        /* out_g (og x L) = W_g (og x cg*K) @ col (cg*K x L), columns [c0, c1) */
        c0 = mtk_parallel_split(j->out_vol, (int32_t)part, (int32_t)j->parts);
        c1 = mtk_parallel_split(j->out_vol, (int32_t)part + 1, (int32_t)j->parts);
        const char *wg = (const char *)j->weight + g * j->og * j->cg * j->kvol * (int64_t)j->cs;
        int64_t rows = j->cg * j->kvol;
        bool identity = j->kvol == 1 && p->stride[0] * p->stride[1] * p->stride[2] == 1 &&
                        p->pad[0] + p->pad[1] + p->pad[2] == 0 && j->in_vol == j->out_vol;
        for (int64_t l0 = c0; l0 < c1; l0 += j->chunk) {
            int64_t nl = c1 - l0 < j->chunk ? c1 - l0 : j->chunk;
            const void *b = col;
            int64_t ldb = nl;
            if (identity) b = x + l0 * (int64_t)j->cs, ldb = j->in_vol; /* 1x1: x is col */
            else im2col(j, x, col, l0, nl);
            gemm(j->kind, false, j->og, nl, rows, wg, rows, b, ldb, (char *)acc + l0 * (int64_t)j->cs, j->out_vol);
        }
    } else if (j->half != MTK_DTYPE_UNDEFINED) {
        /* torch's rounding steps, on the whole block */
        const float *wg = (const float *)j->weight + g * j->cg * j->og * j->kvol;
        mtk_conv_transposed_half_block(p, j->half, j->half_channels_last, (const float *)x, wg, col, acc);
    } else {
        /* col (og*K x Lin) = W_g^T ((cg) x og*K)^T @ x (cg x Lin); col2im */
        const char *wg = (const char *)j->weight + g * j->cg * j->og * j->kvol * (int64_t)j->cs;
        int64_t rows = j->og * j->kvol;
        memset(acc, 0, (size_t)(j->og * j->out_vol) * j->cs);
        for (int64_t l0 = 0; l0 < j->in_vol; l0 += j->chunk) {
            int64_t nl = j->in_vol - l0 < j->chunk ? j->in_vol - l0 : j->chunk;
            gemm(j->kind, true, rows, nl, j->cg, wg, rows, x + l0 * (int64_t)j->cs, j->in_vol, col, nl);
            col2im(j, col, acc, l0, nl);
        }
    }
    if (j->out_direct) add_bias_inplace(j, acc, g, c0, c1);
    else store_block(j, n, g, acc);
}



/* ------------------------------------ stride-1 fast path (kw-unrolled) */

/* Float convolutions with groups 1, stride 1, one depth slice and many
 * channels skip the full im2col.  For each block of output rows a worker
 * copies the rows it needs (plus the KH - 1 halo rows, dilated) into a
 * zero-padded, kw-unrolled buffer u (C, KW, rows, Wp), u[c, kw, r, q] =
 * padded input [c, r, q + kw dw] (KW copies, where im2col makes KH*KW);
 * then each kernel row kh is one GEMM, accumulating, of the (O x C*KW)
 * weight slice with u shifted down kh dh rows, read as (C*KW x rows*Wp).
 * The output block is computed "wide" (Wp columns a row, the last
 * (KW - 1) dw of them garbage) and copied out with the bias.  Measured
 * on the 8x64x56x56 3x3 conv, one thread: about 13.3 ms against 20 ms for
 * the im2col path. */
#define FAST_BLOCK_COLS 1024

typedef struct fast_job {
    const conv_job *j;
    int64_t wp;                /* padded width                           */
    int64_t block_rows;        /* output rows per GEMM                   */
    int64_t splits;            /* row ranges per image (tasks per image) */
    const char *wk;            /* (KH, O, C*KW) weight rows              */
    void **ubuf;               /* per worker: the unrolled rows          */
} fast_job;

/* Hp * Wp: the padded input plane a stride-1 convolution reads. */
static int64_t padded_plane(const mtk_conv_plan *p)
{
    return (p->out_size[1] + p->dilation[1] * (p->kernel[1] - 1)) *
           (p->out_size[2] + p->dilation[2] * (p->kernel[2] - 1));
}

static bool fast_path_applies(const conv_job *j)
{
    const mtk_conv_plan *p = j->p;
    return j->kind != COMPUTE_INT && j->out_direct && !p->transposed && p->groups == 1 &&
           (j->in.dtype == MTK_FLOAT32 || j->in.dtype == MTK_FLOAT64) && p->in_size[0] == 1 && p->kernel[0] == 1 &&
           p->out_size[0] == 1 && p->stride[1] == 1 && p->stride[2] == 1 && j->kvol > 1 && j->cg >= 16 &&
           j->og >= 16 && padded_plane(p) <= INT_MAX; /* the GEMMs' int dimensions */
}

/* Fills u (C, KW, a1 - a0, Wp) from padded rows [a0, a1) of the image
 * x (C, H, W). */
static void fast_unroll(const fast_job *f, const char *x, int64_t a0, int64_t a1, char *u)
{
    const conv_job *j = f->j;
    const mtk_conv_plan *p = j->p;
    int64_t es = (int64_t)j->cs, h = p->in_size[1], w = p->in_size[2], kwn = p->kernel[2];
    int64_t plane = (a1 - a0) * f->wp;
    for (int64_t c = 0; c < j->cg; c++)
        for (int64_t kw = 0; kw < kwn; kw++) {
            /* q in [lo, hi) reads input column q + kw dw - pw */
            int64_t shift = kw * p->dilation[2] - p->pad[2];
            int64_t lo = shift < 0 ? -shift : 0, hi = w - shift;
            if (hi > f->wp) hi = f->wp;
            if (hi < lo) hi = lo;
            if (lo > f->wp) lo = hi = f->wp;
            char *base = u + (c * kwn + kw) * plane * es;
            for (int64_t r = a0; r < a1; r++) {
                char *dst = base + (r - a0) * f->wp * es;
                int64_t ih = r - p->pad[1];
                if (ih < 0 || ih >= h) {
                    memset(dst, 0, (size_t)(f->wp * es));
                    continue;
                }
                memset(dst, 0, (size_t)(lo * es));
                memcpy(dst + lo * es, x + ((c * h + ih) * w + lo + shift) * es, (size_t)((hi - lo) * es));
                memset(dst + hi * es, 0, (size_t)((f->wp - hi) * es));
            }
        }
}

static void fast_task(int64_t task, int32_t worker, void *user)
{
    const fast_job *f = user;
    const conv_job *j = f->j;
    const mtk_conv_plan *p = j->p;
    int64_t n = task / f->splits, part = task % f->splits;
    int64_t oh = p->out_size[1], ow = p->out_size[2], es = (int64_t)j->cs;
    int64_t o_ch = j->og, k = j->cg * p->kernel[2];
    char *u = f->ubuf[worker];
    const char *x = input_block(j, n, 0, j->xbuf[worker]);
    int64_t halo = p->dilation[1] * (p->kernel[1] - 1);
    char *wide = j->obuf[worker];
    char *out = (char *)mtk_tensor_data(j->out) + n * p->out_channels * j->out_vol * es;
    int64_t first = mtk_parallel_split(oh, (int32_t)part, (int32_t)f->splits);
    int64_t end = mtk_parallel_split(oh, (int32_t)part + 1, (int32_t)f->splits);
    for (int64_t r0 = first; r0 < end; r0 += f->block_rows) {
        int64_t r1 = r0 + f->block_rows < end ? r0 + f->block_rows : end;
        int64_t ncols = (r1 - r0) * f->wp, ldb = (r1 - r0 + halo) * f->wp;
        fast_unroll(f, x, r0, r1 + halo, u);
        for (int64_t kh = 0; kh < p->kernel[1]; kh++) {
            const char *a = f->wk + kh * o_ch * k * es;
            const char *b = u + kh * p->dilation[1] * f->wp * es;
            if (j->kind == COMPUTE_F32)
                ops_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)o_ch, (int)ncols, (int)k, 1.0f,
                            (const float *)a, (int)k, (const float *)b, (int)ldb, kh ? 1.0f : 0.0f,
                            (float *)wide, (int)ncols);
            else
                ops_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)o_ch, (int)ncols, (int)k, 1.0,
                            (const double *)a, (int)k, (const double *)b, (int)ldb, kh ? 1.0 : 0.0,
                            (double *)wide, (int)ncols);
        }
        for (int64_t o = 0; o < o_ch; o++) {
            double bias = j->bias ? j->bias[o] : 0.0;
            for (int64_t r = r0; r < r1; r++) {
                char *dst = out + (o * j->out_vol + r * ow) * es;
                const char *src = wide + (o * ncols + (r - r0) * f->wp) * es;
                if (!j->bias) memcpy(dst, src, (size_t)(ow * es));
                else if (j->kind == COMPUTE_F32)
                    for (int64_t i = 0; i < ow; i++)
                        ((float *)dst)[i] = (float)((double)((const float *)src)[i] + bias);
                else
                    for (int64_t i = 0; i < ow; i++) ((double *)dst)[i] = ((const double *)src)[i] + bias;
            }
        }
    }
}

/* Runs the fast path with the job's weight and bias ready; false: out of
 * memory. */
static bool run_fast(mtk_ctx *ctx, conv_job *j, int32_t threads)
{
    const mtk_conv_plan *p = j->p;
    fast_job f;
    memset(&f, 0, sizeof f);
    f.j = j;
    int64_t es = (int64_t)j->cs, khn = p->kernel[1], kwn = p->kernel[2];
    f.wp = p->out_size[2] + p->dilation[2] * (kwn - 1);
    f.block_rows = FAST_BLOCK_COLS / f.wp;
    if (f.block_rows < 1) f.block_rows = 1;
    if (f.block_rows > p->out_size[1]) f.block_rows = p->out_size[1];
    f.splits = p->batch >= threads ? 1 : (threads + p->batch - 1) / p->batch;
    if (f.splits > p->out_size[1]) f.splits = p->out_size[1];
    int64_t ntasks = p->batch * f.splits;
    int32_t workers = mtk_conv_workers(ntasks);
    char *wk = mtk_ctx_malloc(ctx, (size_t)(j->og * j->cg * j->kvol * es));
    void *xs[256], *os[256], *us[256];
    memset(xs, 0, sizeof xs);
    memset(os, 0, sizeof os);
    memset(us, 0, sizeof us);
    bool ok = wk != NULL;
    for (int32_t w = 0; ok && w < workers; w++) {
        xs[w] = mtk_ctx_malloc(ctx, (size_t)(j->cg * j->in_vol * es) + 1);
        os[w] = mtk_ctx_malloc(ctx, (size_t)(j->og * f.block_rows * f.wp * es));
        us[w] = mtk_ctx_malloc(ctx, (size_t)(j->cg * kwn * (f.block_rows + p->dilation[1] * (khn - 1)) * f.wp * es));
        ok = xs[w] && os[w] && us[w];
    }
    if (ok) {
        /* (O, C, KH, KW) -> (KH, O, C, KW) */
        for (int64_t o = 0; o < j->og; o++)
            for (int64_t c = 0; c < j->cg; c++)
                for (int64_t kh = 0; kh < khn; kh++)
                    memcpy(wk + (((kh * j->og + o) * j->cg + c) * kwn) * es,
                           (const char *)j->weight + (((o * j->cg + c) * khn + kh) * kwn) * es, (size_t)(kwn * es));
        f.wk = wk;
        f.ubuf = us;
        j->xbuf = xs;
        j->obuf = os;
        bool single_blas = workers > 1;
        if (single_blas) ops_blas_single_begin();
        mtk_conv_parallel_for(ntasks, workers, fast_task, &f);
        if (single_blas) ops_blas_single_end();
    }
    for (int32_t w = 0; w < workers; w++) {
        mtk_ctx_mfree(ctx, xs[w]);
        mtk_ctx_mfree(ctx, os[w]);
        mtk_ctx_mfree(ctx, us[w]);
    }
    mtk_ctx_mfree(ctx, wk);
    return ok;
}

/* ------------------------------------------------------------ kernel */

bool mtk_conv_cpu(mtk_op_call *call)
{
    mtk_conv_plan plan;
    if (!mtk_conv_make_plan(call->ctx, call, true, &plan)) return false;
    mtk_tensor *result = call->out[0];
    if (plan.empty || mtk_tensor_numel(result) == 0) return true;
    if (!ops_blas_ready(call->ctx)) return false;
    const mtk_tensor *input = arg_tensor(call, 0), *weight = arg_tensor(call, 1), *bias = arg_tensor(call, 2);
    mtk_ctx *ctx = call->ctx;
    /* the kernels write a contiguous (N, O, D, H, W) buffer: a
     * channels-last result gets a contiguous scratch copied into it */
    mtk_tensor *out = result;
    void *out_scratch = NULL;
    if (!mtk_tensor_is_contiguous(result)) {
        out_scratch = mtk_ctx_malloc(ctx, mtk_tensor_nbytes(result));
        out = out_scratch ? mtk_tensor_from_data(ctx, result->dtype, result->shape, result->ndim, NULL, out_scratch)
                          : NULL;
        if (!out) {
            mtk_ctx_mfree(ctx, out_scratch);
            return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "%s: out of memory", call->op->name);
        }
    }

    conv_job j;
    memset(&j, 0, sizeof j);
    j.p = &plan;
    j.kind = input->dtype == MTK_FLOAT64 ? COMPUTE_F64 : mtk_dtype_is_floating(input->dtype) ? COMPUTE_F32 : COMPUTE_INT;
    j.cs = j.kind == COMPUTE_F32 ? sizeof(float) : sizeof(double); /* int64 has double's size */
    j.in = make_view5(input, plan.spatial, plan.batched);
    j.out = out;
    j.out_direct = (j.kind == COMPUTE_F32 && out->dtype == MTK_FLOAT32) || (j.kind == COMPUTE_F64);
    bool half = out->dtype == MTK_FLOAT16 || out->dtype == MTK_BFLOAT16;
    j.half = plan.transposed && half ? out->dtype : MTK_DTYPE_UNDEFINED;
    /* torch's slow_conv_transpose3d runs contiguous always */
    j.half_channels_last = j.half != MTK_DTYPE_UNDEFINED && plan.spatial != 3 &&
                           mtk_conv_cpu_kernel_channels_last(call, &plan);
    j.cg = plan.in_channels / plan.groups;
    j.og = plan.out_channels / plan.groups;
    j.kvol = plan.kernel[0] * plan.kernel[1] * plan.kernel[2];
    j.in_vol = plan.in_size[0] * plan.in_size[1] * plan.in_size[2];
    j.out_vol = plan.out_size[0] * plan.out_size[1] * plan.out_size[2];
    int64_t rows = plan.transposed ? j.og * j.kvol : j.cg * j.kvol;
    int64_t cols = plan.transposed ? j.in_vol : j.out_vol;
    j.chunk = rows > 0 ? COL_BUDGET_BYTES / (rows * (int64_t)j.cs) : cols;
    if (j.chunk < 1) j.chunk = 1;
    if (j.chunk > cols) j.chunk = cols;
    if (j.kind != COMPUTE_INT &&
        (rows > INT_MAX || cols > INT_MAX || j.og > INT_MAX || j.cg * j.kvol > INT_MAX || j.out_vol > INT_MAX))
        return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED, "matrix sizes beyond INT_MAX are not supported");

    int64_t ntasks = plan.batch * plan.groups;
    int32_t threads = conv_num_threads();
    /* fewer (batch, group) blocks than threads: split their columns */
    j.parts = 1;
    if (ntasks < threads && j.out_direct && !plan.transposed && j.out_vol >= 2 * threads)
        j.parts = (threads + ntasks - 1) / ntasks;
    ntasks *= j.parts;
    int32_t workers = mtk_conv_workers(ntasks);
    /* weight and bias in the compute type, then per-worker scratch */
    int64_t wcount = mtk_tensor_numel(weight);
    size_t x_bytes = (size_t)(j.cg * j.in_vol) * j.cs;
    size_t col_bytes = j.kind == COMPUTE_INT                 ? 1
                       : j.half != MTK_DTYPE_UNDEFINED ? mtk_conv_transposed_half_scratch(&plan) * sizeof(float)
                                                       : (size_t)(rows * j.chunk) * j.cs;
    size_t o_bytes = j.out_direct ? 1 : (size_t)(j.og * j.out_vol) * j.cs;
    void *wbuf = mtk_ctx_malloc(ctx, (size_t)wcount * j.cs + 1);
    double *bbuf = bias ? mtk_ctx_malloc(ctx, (size_t)bias->shape[0] * sizeof(double)) : NULL;
    void *scratch[3][256];
    memset(scratch, 0, sizeof scratch);
    bool ok = wbuf && (!bias || bbuf);
    bool direct = mtk_conv_direct_applies(&plan, input->dtype, out->dtype);
    bool fast = !direct && fast_path_applies(&j); /* these two have their own scratch */
    for (int32_t w = 0; ok && !fast && !direct && w < workers; w++) {
        scratch[0][w] = mtk_ctx_malloc(ctx, x_bytes + 1);
        scratch[1][w] = mtk_ctx_malloc(ctx, col_bytes);
        scratch[2][w] = mtk_ctx_malloc(ctx, o_bytes);
        ok = scratch[0][w] && scratch[1][w] && scratch[2][w];
    }
    if (ok) {
        view5 wv = weight_view5(weight, plan.spatial);
        int64_t wsize[3] = { plan.kernel[0], plan.kernel[1], plan.kernel[2] };
        /* (O, I, k...) contiguous: one gather per output-ish row */
        for (int64_t o = 0; o < weight->shape[0]; o++)
            gather_block(&wv, o, 0, weight->shape[1], wsize, j.kind,
                         (char *)wbuf + o * weight->shape[1] * j.kvol * (int64_t)j.cs);
        if (bias) {
            size_t es = mtk_dtype_size(bias->dtype);
            for (int64_t i = 0; i < bias->shape[0]; i++) {
                const char *e = (const char *)mtk_tensor_data(bias) + i * bias->stride[0] * (int64_t)es;
                if (j.kind == COMPUTE_INT) {
                    /* cast to the output dtype (the slow kernels copy the bias into the output) */
                    char tmp[8];
                    mtk_convert_element(out->dtype, tmp, bias->dtype, e);
                    ((int64_t *)bbuf)[i] = mtk_load_i64(out->dtype, tmp);
                } else if (!plan.transposed) {
                    char tmp[8];
                    mtk_convert_element(out->dtype, tmp, bias->dtype, e);
                    bbuf[i] = mtk_load_f64(out->dtype, tmp);
                } else {
                    bbuf[i] = mtk_load_f64(bias->dtype, e);
                }
            }
        }
        j.weight = wbuf;
        if (j.kind == COMPUTE_INT) j.ibias = (const int64_t *)bbuf;
        else j.bias = bbuf;
        if (direct) {
            ok = mtk_conv_direct_run(ctx, &plan, input, j.in.stride, wbuf, j.bias, mtk_tensor_data(out), threads);
        } else if (fast) {
            ok = run_fast(ctx, &j, threads);
        } else {
            j.xbuf = scratch[0];
            j.colbuf = scratch[1];
            j.obuf = scratch[2];
            bool single_blas = workers > 1 && j.kind != COMPUTE_INT;
            if (single_blas) ops_blas_single_begin();
            mtk_conv_parallel_for(ntasks, workers, run_task, &j);
            if (single_blas) ops_blas_single_end();
        }
    }
    for (int32_t w = 0; w < workers; w++)
        for (int k = 0; k < 3; k++) mtk_ctx_mfree(ctx, scratch[k][w]);
    mtk_ctx_mfree(ctx, wbuf);
    mtk_ctx_mfree(ctx, bbuf);
    if (ok && out != result) mtk_copy_strided(result, out);
    mtk_ctx_mfree(ctx, out_scratch);
    if (!ok) return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "%s: out of memory", call->op->name);
    return true;
}
