/* The cpu kernel of F.interpolate.  Every mode is described per spatial
 * dim as *taps*: for each output position, the input positions it reads
 * and their weights, computed with torch's formulas in torch's precision
 * (float for float32/float16/bfloat16/uint8 inputs, double for float64):
 *   nearest        src = floor(o * scale)            (1 tap)
 *   nearest-exact  src = floor((o + 0.5) * scale)    (1 tap)
 *   linear         src = scale * (o + 0.5) - 0.5, clamped at 0, or
 *                  scale * o with align_corners      (2 taps)
 *   bicubic        the same source index unclamped, Keys' cubic with
 *                  A = -0.75, borders replicated     (4 taps)
 *   antialias      PIL-style filters stretched by the scale when
 *                  downsampling, normalized          (up to 2*ceil(support)+1)
 * where scale is 1 / scale_factor when a scale factor was given (and not
 * recomputed), else in / out ((in - 1) / (out - 1) with align_corners).
 * The output is the weighted sum over the taps of every dim, summed in
 * double and rounded once. */
#include "ops/conv.h"
#include "ops/op_util.h"
#include "core/scalar.h"

#include <math.h>
#include <string.h>

typedef struct axis_taps {
    int64_t count;   /* taps per output position */
    int64_t *index;  /* [out][count] input positions */
    double *weight;  /* [out][count] */
} axis_taps;

/* rounds to the compute precision: float unless `dbl` */
static double opm(bool dbl, double v) { return dbl ? v : (double)(float)v; }

/* area_pixel_compute_scale */
static double pixel_scale(bool dbl, int64_t in, int64_t out, bool align_corners, double user_scale)
{
    if (align_corners) {
        if (out <= 1) return 0;
        return dbl ? (double)(in - 1) / (double)(out - 1) : (double)((float)(in - 1) / (float)(out - 1));
    }
    if (user_scale > 0) return opm(dbl, 1.0 / user_scale);
    return dbl ? (double)in / (double)out : (double)((float)in / (float)out);
}

/* area_pixel_compute_source_index */
static double source_index(bool dbl, double scale, int64_t o, bool align_corners, bool cubic)
{
    if (align_corners) return dbl ? scale * (double)o : (double)((float)scale * (float)o);
    double src = opm(dbl, scale * ((double)o + 0.5) - 0.5);
    return (!cubic && src < 0) ? 0 : src;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* floor of a value converted to float first (torch's floorf) */
static int64_t floor_f(double v) { return (int64_t)floorf((float)v); }

static void nearest_taps(const mtk_interp_plan *p, bool dbl, int32_t d, axis_taps *t)
{
    int64_t in = p->in_size[d], out = p->out_size[d];
    bool exact = p->mode == MTK_INTERP_NEAREST_EXACT;
    for (int64_t o = 0; o < out; o++) {
        int64_t src;
        if (p->nearest_fast_path) {
            /* torch's channels-last kernel: nearest_idx / nearest_exact_idx in float */
            float scale = p->scale[d] > 0 ? (float)(1.0 / p->scale[d]) : (float)in / (float)out;
            if (!exact && out == in) src = o;
            else if (!exact && out == 2 * in) src = o >> 1;
            else if (exact) src = min64((int64_t)floorf((float)(((double)o + 0.5) * scale)), in - 1);
            else src = min64((int64_t)floorf((float)o * scale), in - 1);
        } else {
            double scale = pixel_scale(dbl, in, out, false, p->scale[d]);
            if (exact) src = min64(floor_f(source_index(dbl, scale, o, false, false) + 0.5), in - 1);
            else src = min64(floor_f(source_index(dbl, scale, o, true, false)), in - 1);
        }
        t->index[o] = src;
        t->weight[o] = 1;
    }
}

static void linear_taps(const mtk_interp_plan *p, bool dbl, int32_t d, axis_taps *t)
{
    int64_t in = p->in_size[d], out = p->out_size[d];
    double scale = pixel_scale(dbl, in, out, p->align_corners, p->scale[d]);
    for (int64_t o = 0; o < out; o++) {
        int64_t *ix = t->index + 2 * o;
        double *w = t->weight + 2 * o;
        if (out == in) {
            ix[0] = ix[1] = o, w[0] = 1, w[1] = 0;
            continue;
        }
        double real = source_index(dbl, scale, o, p->align_corners, false);
        int64_t i0 = min64(floor_f(real), in - 1);
        double l1 = opm(dbl, real - (double)i0);
        l1 = l1 < 0 ? 0 : l1 > 1 ? 1 : l1;
        ix[0] = i0, ix[1] = i0 + (i0 < in - 1 ? 1 : 0);
        w[0] = opm(dbl, 1.0 - l1), w[1] = l1;
    }
}

/* Keys' cubic convolution kernel pieces */
static double cubic1(bool dbl, double x, double a) { return opm(dbl, ((a + 2) * x - (a + 3)) * x * x + 1); }
static double cubic2(bool dbl, double x, double a) { return opm(dbl, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a); }

static void cubic_taps(const mtk_interp_plan *p, bool dbl, int32_t d, axis_taps *t)
{
    int64_t in = p->in_size[d], out = p->out_size[d];
    double scale = pixel_scale(dbl, in, out, p->align_corners, p->scale[d]);
    const double a = -0.75;
    for (int64_t o = 0; o < out; o++) {
        int64_t *ix = t->index + 4 * o;
        double *w = t->weight + 4 * o;
        double real = source_index(dbl, scale, o, p->align_corners, true);
        int64_t i0 = min64(floor_f(real), in - 1);
        double x = opm(dbl, real - (double)i0);
        x = x < 0 ? 0 : x > 1 ? 1 : x;
        w[0] = cubic2(dbl, opm(dbl, x + 1.0), a);
        w[1] = cubic1(dbl, x, a);
        w[2] = cubic1(dbl, opm(dbl, 1.0 - x), a);
        w[3] = cubic2(dbl, opm(dbl, opm(dbl, 1.0 - x) + 1.0), a);
        for (int k = 0; k < 4; k++) ix[k] = max64(min64(i0 - 1 + k, in - 1), 0);
    }
}

static double aa_filter(bool dbl, bool cubic, double x)
{
    x = fabs(x);
    if (!cubic) return x < 1 ? opm(dbl, 1.0 - x) : 0;
    if (x < 1) return cubic1(dbl, x, -0.5);
    if (x < 2) return cubic2(dbl, x, -0.5);
    return 0;
}

/* taps count of the antialiased filters */
static int64_t aa_taps_count(const mtk_interp_plan *p, bool dbl, int32_t d)
{
    double scale = pixel_scale(dbl, p->in_size[d], p->out_size[d], p->align_corners, p->scale[d]);
    double size = p->mode == MTK_INTERP_BICUBIC ? 4 : 2;
    double support = opm(dbl, scale >= 1.0 ? (size * 0.5) * scale : size * 0.5);
    return (int64_t)ceil(support) * 2 + 1;
}

static void aa_taps(const mtk_interp_plan *p, bool dbl, int32_t d, axis_taps *t)
{
    int64_t in = p->in_size[d], out = p->out_size[d], max_taps = t->count;
    bool cubic = p->mode == MTK_INTERP_BICUBIC;
    double scale = pixel_scale(dbl, in, out, p->align_corners, p->scale[d]);
    double size = cubic ? 4 : 2;
    double support = opm(dbl, scale >= 1.0 ? (size * 0.5) * scale : size * 0.5);
    double invscale = scale >= 1.0 ? opm(dbl, 1.0 / scale) : 1.0;
    for (int64_t o = 0; o < out; o++) {
        int64_t *ix = t->index + max_taps * o;
        double *w = t->weight + max_taps * o;
        double center = opm(dbl, scale * ((double)o + 0.5));
        int64_t xmin = max64((int64_t)(opm(dbl, center - support) + 0.5), 0);
        int64_t xsize = min64((int64_t)(opm(dbl, center + support) + 0.5), in) - xmin;
        xsize = xsize < 0 ? 0 : xsize > max_taps ? max_taps : xsize;
        double total = 0;
        int64_t j = 0;
        for (; j < xsize; j++) {
            double arg = (opm(dbl, (double)(j + xmin) - center) + 0.5) * invscale;
            w[j] = aa_filter(dbl, cubic, opm(dbl, arg));
            total = opm(dbl, total + w[j]);
            ix[j] = j + xmin;
        }
        if (total != 0)
            for (int64_t k = 0; k < xsize; k++) w[k] = opm(dbl, w[k] / total);
        for (; j < max_taps; j++) w[j] = 0, ix[j] = -1; /* not read */
    }
}

/* -------------------------------------------------------------- uint8 */

/* torch resizes uint8 images (bilinear, bicubic, with or without
 * antialias) in fixed point: per dim, PIL-style weights in double
 * quantized to int16 with as many fraction bits as the largest weight
 * allows, a horizontal pass then a vertical one, each rounding to uint8. */
typedef struct u8_axis {
    int64_t count;     /* taps per output */
    int64_t *index;    /* [out][count], -1: no tap */
    int32_t *weight;   /* [out][count] */
    int32_t precision; /* fraction bits */
    bool copy;         /* the same size: no pass */
} u8_axis;

static bool u8_axis_make(mtk_ctx *ctx, const mtk_interp_plan *p, int32_t d, u8_axis *a)
{
    int64_t in = p->in_size[d], out = p->out_size[d];
    bool cubic = p->mode == MTK_INTERP_BICUBIC, aa = p->antialias;
    memset(a, 0, sizeof *a);
    a->copy = in == out && (aa || !cubic);
    if (a->copy) return true;
    axis_taps t;
    if (cubic && !aa) {
        /* Keys' cubic taps with replicated borders, as the float kernel */
        t.count = 4;
    } else {
        double scale = pixel_scale(true, in, out, p->align_corners, p->scale[d]);
        double support = (aa && scale >= 1.0) ? (cubic ? 2.0 : 1.0) * scale : (cubic ? 2.0 : 1.0);
        t.count = (int64_t)ceil(support) * 2 + 1;
    }
    t.index = mtk_ctx_malloc(ctx, (size_t)(out * t.count) * sizeof *t.index + 1);
    t.weight = mtk_ctx_malloc(ctx, (size_t)(out * t.count) * sizeof *t.weight + 1);
    a->index = t.index;
    a->weight = mtk_ctx_malloc(ctx, (size_t)(out * t.count) * sizeof *a->weight + 1);
    if (!t.index || !t.weight || !a->weight) {
        mtk_ctx_mfree(ctx, t.weight);
        return false;
    }
    a->count = t.count;
    if (cubic && !aa) {
        cubic_taps(p, false, d, &t);
    } else {
        double scale = pixel_scale(true, in, out, p->align_corners, p->scale[d]);
        double support = (aa && scale >= 1.0) ? (cubic ? 2.0 : 1.0) * scale : (cubic ? 2.0 : 1.0);
        double delta = p->align_corners && !aa ? 0.5 : 0.0, invscale = aa && scale >= 1.0 ? 1.0 / scale : 1.0;
        for (int64_t o = 0; o < out; o++) {
            int64_t *ix = t.index + t.count * o;
            double *w = t.weight + t.count * o, center = scale * ((double)o + 0.5 - delta), total = 0;
            int64_t xmin = max64((int64_t)(center - support + 0.5 + delta), 0);
            int64_t xsize = min64((int64_t)(center + support + 0.5 + delta), in) - xmin;
            xsize = xsize < 0 ? 0 : xsize > t.count ? t.count : xsize;
            for (int64_t j = 0; j < t.count; j++) {
                ix[j] = j < xsize ? xmin + j : -1;
                w[j] = j < xsize ? aa_filter(true, cubic, ((double)(j + xmin) - center + 0.5 - delta) * invscale) : 0;
                total += w[j];
            }
            if (total != 0)
                for (int64_t j = 0; j < xsize; j++) w[j] /= total;
        }
    }
    double wmax = 0;
    for (int64_t i = 0; i < out * t.count; i++) wmax = t.weight[i] > wmax ? t.weight[i] : wmax;
    int32_t prec = 0;
    while (prec < 22 && (int64_t)(0.5 + wmax * (double)(1 << (prec + 1))) < (1 << 15)) prec++;
    a->precision = prec;
    for (int64_t i = 0; i < out * t.count; i++) {
        double v = t.weight[i] * (double)(1 << prec);
        a->weight[i] = (int32_t)(int16_t)(v < 0 ? v - 0.5 : v + 0.5);
    }
    mtk_ctx_mfree(ctx, t.weight);
    return true;
}

static uint8_t clip8(int64_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

typedef struct u8_job {
    const mtk_interp_plan *p;
    mtk_planes in, out;
    u8_axis h, w;
    uint8_t **scratch; /* per worker: H x out_W */
} u8_job;

static void u8_plane(int64_t plane, int32_t worker, void *user)
{
    const u8_job *j = user;
    const mtk_interp_plan *p = j->p;
    int64_t H = p->in_size[1], OH = p->out_size[1], OW = p->out_size[2];
    const char *ip = mtk_plane_at(&j->in, plane);
    char *op = mtk_plane_at(&j->out, plane);
    uint8_t *tmp = j->scratch[worker]; /* H x OW */
    for (int64_t y = 0; y < H; y++) {
        const char *row = ip + y * j->in.stride[1];
        for (int64_t x = 0; x < OW; x++) {
            if (j->w.copy) {
                tmp[y * OW + x] = *(const uint8_t *)(row + x * j->in.stride[2]);
                continue;
            }
            int64_t acc = (int64_t)1 << (j->w.precision - 1);
            for (int64_t k = 0; k < j->w.count; k++) {
                int64_t ix = j->w.index[x * j->w.count + k];
                if (ix >= 0) acc += (int64_t)*(const uint8_t *)(row + ix * j->in.stride[2]) * j->w.weight[x * j->w.count + k];
            }
            tmp[y * OW + x] = clip8(acc >> j->w.precision);
        }
    }
    for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
            uint8_t v;
            if (j->h.copy) {
                v = tmp[y * OW + x];
            } else {
                int64_t acc = (int64_t)1 << (j->h.precision - 1);
                for (int64_t k = 0; k < j->h.count; k++) {
                    int64_t iy = j->h.index[y * j->h.count + k];
                    if (iy >= 0) acc += (int64_t)tmp[iy * OW + x] * j->h.weight[y * j->h.count + k];
                }
                v = clip8(acc >> j->h.precision);
            }
            *(uint8_t *)(op + y * j->out.stride[1] + x * j->out.stride[2]) = v;
        }
}

static bool interp_u8(mtk_op_call *call, const mtk_interp_plan *plan)
{
    mtk_ctx *ctx = call->ctx;
    u8_job j;
    memset(&j, 0, sizeof j);
    j.p = plan;
    j.in = mtk_planes_of(arg_tensor(call, 0), 2);
    j.out = mtk_planes_of(call->out[0], 2);
    int64_t planes = plan->batch * plan->channels;
    int32_t workers = mtk_conv_workers(planes);
    uint8_t *scratch[256] = { 0 };
    bool ok = u8_axis_make(ctx, plan, 1, &j.h) && u8_axis_make(ctx, plan, 2, &j.w);
    for (int32_t w = 0; ok && w < workers; w++)
        ok = (scratch[w] = mtk_ctx_malloc(ctx, (size_t)(plan->in_size[1] * plan->out_size[2]) + 1)) != NULL;
    if (ok) {
        j.scratch = scratch;
        mtk_conv_parallel_for(planes, workers, u8_plane, &j);
    }
    for (int32_t w = 0; w < workers; w++) mtk_ctx_mfree(ctx, scratch[w]);
    mtk_ctx_mfree(ctx, j.h.index), mtk_ctx_mfree(ctx, j.h.weight);
    mtk_ctx_mfree(ctx, j.w.index), mtk_ctx_mfree(ctx, j.w.weight);
    if (!ok) return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "%s: out of memory", call->op->name);
    return true;
}

/* ------------------------------------------------------------ kernel */

typedef double (*load_fn)(const char *p);

static double load_f32(const char *p)
{
    float f;
    memcpy(&f, p, sizeof f);
    return f;
}

static double load_f64(const char *p)
{
    double f;
    memcpy(&f, p, sizeof f);
    return f;
}

typedef struct interp_job {
    const mtk_interp_plan *p;
    load_fn load; /* float32 / float64 inputs; NULL: mtk_load_f64 */
    mtk_planes in, out;
    axis_taps taps[3];
    bool round_to_int; /* uint8 */
} interp_job;

static void interp_plane(int64_t plane, int32_t worker, void *user)
{
    (void)worker;
    const interp_job *j = user;
    const mtk_interp_plan *p = j->p;
    char *ip = mtk_plane_at(&j->in, plane), *op = mtk_plane_at(&j->out, plane);
    const axis_taps *td = &j->taps[0], *th = &j->taps[1], *tw = &j->taps[2];
    for (int64_t od = 0; od < p->out_size[0]; od++)
        for (int64_t oh = 0; oh < p->out_size[1]; oh++)
            for (int64_t ow = 0; ow < p->out_size[2]; ow++) {
                double sum = 0;
                for (int64_t a = 0; a < td->count; a++) {
                    int64_t ia = td->index[od * td->count + a];
                    if (ia < 0) continue; /* antialias padding */
                    double wa = td->weight[od * td->count + a];
                    const char *pa = ip + ia * j->in.stride[0];
                    double sb = 0;
                    for (int64_t b = 0; b < th->count; b++) {
                        int64_t ib = th->index[oh * th->count + b];
                        if (ib < 0) continue;
                        double wb = th->weight[oh * th->count + b];
                        const char *pb = pa + ib * j->in.stride[1];
                        double sc = 0;
                        for (int64_t c = 0; c < tw->count; c++) {
                            int64_t ic = tw->index[ow * tw->count + c];
                            if (ic < 0) continue;
                            double wc = tw->weight[ow * tw->count + c];
                            const char *pc = pb + ic * j->in.stride[2];
                            sc += wc * (j->load ? j->load(pc) : mtk_load_f64(j->in.dtype, pc));
                        }
                        sb += wb * sc;
                    }
                    sum += wa * sb;
                }
                char *e = op + od * j->out.stride[0] + oh * j->out.stride[1] + ow * j->out.stride[2];
                if (j->round_to_int) {
                    double r = nearbyint(sum);
                    mtk_store_i64(j->out.dtype, e, (int64_t)(r < 0 ? 0 : r > 255 ? 255 : r));
                } else {
                    mtk_store_f64(j->out.dtype, e, sum);
                }
            }
}

bool mtk_interp_cpu(mtk_op_call *call)
{
    mtk_interp_plan plan;
    if (!mtk_interp_make_plan(call->ctx, call, true, &plan)) return false;
    mtk_tensor *out = call->out[0];
    if (mtk_tensor_numel(out) == 0) return true;
    if (plan.mode == MTK_INTERP_AREA) return mtk_interp_area_cpu(call);
    const mtk_tensor *input = arg_tensor(call, 0);
    if (input->dtype == MTK_UINT8 && plan.mode != MTK_INTERP_NEAREST && plan.mode != MTK_INTERP_NEAREST_EXACT)
        return interp_u8(call, &plan);
    bool dbl = input->dtype == MTK_FLOAT64;
    interp_job j;
    memset(&j, 0, sizeof j);
    j.p = &plan;
    j.in = mtk_planes_of(input, plan.spatial);
    j.out = mtk_planes_of(out, plan.spatial);
    j.load = input->dtype == MTK_FLOAT32 ? load_f32 : input->dtype == MTK_FLOAT64 ? load_f64 : NULL;
    j.round_to_int = input->dtype == MTK_UINT8 && plan.mode != MTK_INTERP_NEAREST &&
                     plan.mode != MTK_INTERP_NEAREST_EXACT;
    bool ok = true;
    for (int32_t d = 0; d < 3; d++) {
        axis_taps *t = &j.taps[d];
        int64_t n = plan.out_size[d];
        /* a dim of the same size is copied by torch's separable
         * antialias kernel (linear's weights make it a copy anyway) */
        bool skip = d < 3 - plan.spatial || (plan.in_size[d] == n && plan.antialias);
        if (skip) t->count = 1;
        else if (plan.antialias) t->count = aa_taps_count(&plan, dbl, d);
        else t->count = plan.mode == MTK_INTERP_LINEAR ? 2 : plan.mode == MTK_INTERP_BICUBIC ? 4 : 1;
        t->index = mtk_ctx_malloc(call->ctx, (size_t)(n * t->count) * sizeof *t->index + 1);
        t->weight = mtk_ctx_malloc(call->ctx, (size_t)(n * t->count) * sizeof *t->weight + 1);
        if (!t->index || !t->weight) {
            ok = false;
            continue;
        }
        if (skip) {
            for (int64_t o = 0; o < n; o++) t->index[o] = o, t->weight[o] = 1;
        } else if (plan.antialias) {
            aa_taps(&plan, dbl, d, t);
            if (d == 1 && plan.first_row_only) {
                /* torch's contiguous antialias kernel, for an output one
                 * column wide, repeats output row 0 in every row (its
                 * channels-last kernel does not); we follow it */
                for (int64_t o = 1; o < n; o++) {
                    memcpy(t->index + o * t->count, t->index, (size_t)t->count * sizeof *t->index);
                    memcpy(t->weight + o * t->count, t->weight, (size_t)t->count * sizeof *t->weight);
                }
            }
        } else if (plan.mode == MTK_INTERP_LINEAR) {
            linear_taps(&plan, dbl, d, t);
        } else if (plan.mode == MTK_INTERP_BICUBIC) {
            cubic_taps(&plan, dbl, d, t);
        } else {
            nearest_taps(&plan, dbl, d, t);
        }
    }
    if (ok) {
        int64_t planes = plan.batch * plan.channels;
        mtk_conv_parallel_for(planes, mtk_conv_workers(planes), interp_plane, &j);
    }
    for (int32_t d = 0; d < 3; d++) {
        mtk_ctx_mfree(call->ctx, j.taps[d].index);
        mtk_ctx_mfree(call->ctx, j.taps[d].weight);
    }
    if (!ok) return mtk_error(call->ctx, MTK_ERR_OUT_OF_MEMORY, "%s: out of memory", call->op->name);
    return true;
}
