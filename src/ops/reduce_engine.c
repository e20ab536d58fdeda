/* The reduction engine: runs one accumulator (reduce_accum.c) over the
 * reduced dims of a strided input for every output element.
 *
 * The plan splits the input's dims into kept dims (one output element per
 * position) and reduced dims, drops size-1 dims, orders both by stride
 * (the fastest-moving memory dim innermost) and merges dims that are
 * contiguous with each other.  Three loop shapes:
 *   rows:  the innermost reduced dim is the fastest in memory (sum(x, -1)):
 *          per output element, rows of the reduced dims are loaded into a
 *          buffer and fed to the accumulator;
 *   tile lanes: a kept dim is faster (sum(x, 0) of a row-major matrix), or
 *          each output reduces few elements: a tile of up to LANES output
 *          elements along the fastest kept dim takes one loaded row of
 *          neighbours per reduced position, one element per accumulator;
 *   row tiles: that kept dim is narrow (under 8) but each output reduces
 *          many elements (sum(x, 0) of an (n, 4) matrix): rows, for the few
 *          outputs of a tile in turn, chunk by chunk while in cache.
 * Work is split among threads by output elements, or, when there are too
 * few of those (a full reduction), by reduced positions, each thread
 * keeping partial accumulators that are merged at the end. */
#include "ops/reduce_kernel.h"
#include "core/scalar.h"

#include <stdlib.h>
#include <string.h>

enum { CHUNK = 512, LANES = 256 };

typedef struct loop_dim {
    int64_t size;
    int64_t in_stride;      /* bytes                                        */
    int64_t idx_stride;     /* logical index step (reduced dims)            */
    int64_t out_stride[2];  /* bytes, per output (kept dims)                */
} loop_dim;

/* the loop shapes (see the top of the file) */
typedef enum loop_shape { ROWS, TILE_LANES, ROW_TILES } loop_shape;

typedef struct plan {
    int32_t nk, nr;               /* kept and reduced loop dims, outer first */
    loop_dim k[MTK_MAX_DIMS], r[MTK_MAX_DIMS];
    int64_t n_out, n_red;         /* output elements; elements per output     */
    const char *in;
    char *out[2];
    int32_t nout;
    mtk_dtype src, cast, out_dtype[2];
    bool floating;                /* accumulate as double (else int64)        */
    const red_op *op;
    red_params params;
    loop_shape loops;
    /* units of work: rows -> one output element each; lanes -> a tile   */
    int64_t n_units, tiles_per_outer;
    int64_t n_positions;          /* reduced positions a unit walks: rows
                                     (rows) or elements (lanes)            */
    int32_t accs_per_unit;
} plan;

/* ------------------------------------------------------------- loading */

static bool is_int_like(mtk_dtype t) { return mtk_dtype_is_integral(t, true); }

/* Whether loading src directly gives the values converting to cast would. */
static bool load_preserves(mtk_dtype src, mtk_dtype cast, bool floating)
{
    if (src == cast) return true;
    if (floating && cast == MTK_FLOAT64) return true; /* every load goes through double */
    if (mtk_dtype_is_float8(src) || mtk_dtype_is_float8(cast)) return false;
    if (is_int_like(src) && is_int_like(cast)) return cast != MTK_BOOL && mtk_promote_types(src, cast) == cast;
    if (mtk_dtype_is_floating(src) && mtk_dtype_is_floating(cast)) return mtk_promote_types(src, cast) == cast;
    return false;
}

#define LOAD_LOOP(T, EXPR)                                         \
    for (int64_t j = 0; j < n; j++, p += stride) {                 \
        T v;                                                       \
        memcpy(&v, p, sizeof v);                                   \
        buf[j] = EXPR;                                             \
    }

void red_load_f64(const char *p, int64_t stride, int64_t n, mtk_dtype src, mtk_dtype cast, double *buf)
{
    if (!load_preserves(src, cast, true)) {
        char tmp[8];
        for (int64_t j = 0; j < n; j++, p += stride) {
            mtk_convert_element(cast, tmp, src, p);
            buf[j] = mtk_load_f64(cast, tmp);
        }
        return;
    }
    switch (src) {
    case MTK_FLOAT32: LOAD_LOOP(float, (double)v) break;
    case MTK_FLOAT64: LOAD_LOOP(double, v) break;
    case MTK_FLOAT16: LOAD_LOOP(uint16_t, (double)mtk_f16_to_f32(v)) break;
    case MTK_BFLOAT16: LOAD_LOOP(uint16_t, (double)mtk_bf16_to_f32(v)) break;
    case MTK_INT64: LOAD_LOOP(int64_t, (double)v) break;
    case MTK_INT32: LOAD_LOOP(int32_t, (double)v) break;
    default:
        for (int64_t j = 0; j < n; j++, p += stride) buf[j] = mtk_load_f64(src, p);
    }
}

void red_load_i64(const char *p, int64_t stride, int64_t n, mtk_dtype src, mtk_dtype cast, int64_t *buf)
{
    if (!load_preserves(src, cast, false)) {
        char tmp[8];
        for (int64_t j = 0; j < n; j++, p += stride) {
            mtk_convert_element(cast, tmp, src, p);
            buf[j] = mtk_load_i64(cast, tmp);
        }
        return;
    }
    switch (src) {
    case MTK_INT64: LOAD_LOOP(int64_t, v) break;
    case MTK_INT32: LOAD_LOOP(int32_t, (int64_t)v) break;
    case MTK_INT16: LOAD_LOOP(int16_t, (int64_t)v) break;
    case MTK_INT8: LOAD_LOOP(int8_t, (int64_t)v) break;
    case MTK_UINT8: LOAD_LOOP(uint8_t, (int64_t)v) break;
    case MTK_BOOL: LOAD_LOOP(uint8_t, (int64_t)(v != 0)) break;
    default:
        for (int64_t j = 0; j < n; j++, p += stride) buf[j] = mtk_load_i64(src, p);
    }
}

#define STORE_LOOP(T, EXPR)                                        \
    for (int64_t j = 0; j < n; j++, p += stride) {                 \
        T v = EXPR;                                                \
        memcpy(p, &v, sizeof v);                                   \
    }

void red_store_f64(char *p, int64_t stride, int64_t n, mtk_dtype dst, const double *buf)
{
    switch (dst) {
    case MTK_FLOAT32: STORE_LOOP(float, (float)buf[j]) break;
    case MTK_FLOAT64: STORE_LOOP(double, buf[j]) break;
    default:
        for (int64_t j = 0; j < n; j++, p += stride) mtk_store_f64(dst, p, buf[j]);
    }
}

void red_store_i64(char *p, int64_t stride, int64_t n, mtk_dtype dst, const int64_t *buf)
{
    switch (dst) {
    case MTK_INT64: STORE_LOOP(int64_t, buf[j]) break;
    case MTK_INT32: STORE_LOOP(int32_t, (int32_t)(uint32_t)(uint64_t)buf[j]) break;
    default:
        for (int64_t j = 0; j < n; j++, p += stride) mtk_store_i64(dst, p, buf[j]);
    }
}

/* ------------------------------------------------------------ planning */

static int64_t abs64(int64_t v) { return v < 0 ? ops_wrap_sub(0, v) : v; }

/* stable insertion sort, largest |in_stride| first (outermost) */
static void sort_dims(loop_dim *dims, int32_t n)
{
    for (int32_t i = 1; i < n; i++) {
        loop_dim x = dims[i];
        int32_t j = i - 1;
        while (j >= 0 && abs64(dims[j].in_stride) < abs64(x.in_stride)) {
            dims[j + 1] = dims[j];
            j--;
        }
        dims[j + 1] = x;
    }
}

/* merges neighbours (outer a, inner b) that walk memory as one dim */
static int32_t coalesce(loop_dim *dims, int32_t n, int32_t nout, bool reduced)
{
    if (n == 0) return 0;
    int32_t m = 0;
    for (int32_t i = 1; i < n; i++) {
        loop_dim *a = &dims[m], *b = &dims[i];
        bool fits = a->in_stride == ops_wrap_mul(b->in_stride, b->size);
        if (reduced) fits = fits && a->idx_stride == ops_wrap_mul(b->idx_stride, b->size);
        else
            for (int32_t k = 0; k < nout; k++) fits = fits && a->out_stride[k] == ops_wrap_mul(b->out_stride[k], b->size);
        if (fits) {
            b->size *= a->size;
            *a = *b;
        } else {
            dims[++m] = *b;
        }
    }
    return m + 1;
}

static void make_plan(const red_desc *d, mtk_tensor *const *out, plan *p)
{
    const mtk_tensor *x = d->input;
    memset(p, 0, sizeof *p);
    p->in = mtk_tensor_data(x);
    p->nout = d->nout;
    p->src = x->dtype;
    p->cast = d->cast;
    p->floating = mtk_dtype_is_floating(d->cast);
    p->op = red_op_for(d, &p->params);
    for (int32_t k = 0; k < d->nout; k++) {
        p->out[k] = mtk_tensor_data(out[k]);
        p->out_dtype[k] = out[k]->dtype;
    }
    int64_t in_size = (int64_t)mtk_dtype_size(x->dtype);
    /* logical index strides: row-major over the reduced dims */
    int64_t idx_stride[MTK_MAX_DIMS], running = 1;
    for (int32_t i = x->ndim - 1; i >= 0; i--)
        if (d->reduce[i]) idx_stride[i] = running, running = ops_wrap_mul(running, x->shape[i]);
    p->n_out = 1, p->n_red = 1;
    int32_t od = 0;
    for (int32_t i = 0; i < x->ndim; i++) {
        /* (the products wrap only for an empty input, which no loop walks) */
        loop_dim dim = { x->shape[i], ops_wrap_mul(x->stride[i], in_size), 0, { 0, 0 } };
        if (d->reduce[i]) {
            if (d->keepdim) od++;
            p->n_red = ops_wrap_mul(p->n_red, dim.size);
            dim.idx_stride = idx_stride[i];
            if (dim.size != 1) p->r[p->nr++] = dim;
            continue;
        }
        for (int32_t k = 0; k < d->nout; k++)
            dim.out_stride[k] = ops_wrap_mul(out[k]->stride[od], (int64_t)mtk_dtype_size(out[k]->dtype));
        od++;
        p->n_out = ops_wrap_mul(p->n_out, dim.size);
        if (dim.size != 1) p->k[p->nk++] = dim;
    }
    if (p->n_out == 0) return; /* nothing to compute */
    sort_dims(p->r, p->nr);
    sort_dims(p->k, p->nk);
    p->nr = coalesce(p->r, p->nr, d->nout, true);
    p->nk = coalesce(p->k, p->nk, d->nout, false);
    /* lanes when a kept dim is faster in memory than the reduced ones;
     * also when each output reduces few elements (rows would be tiny) and
     * never for a narrow tile over many reduced elements (rows are long) */
    int64_t r_inner = p->nr ? abs64(p->r[p->nr - 1].in_stride) : INT64_MAX;
    int64_t k_size = p->nk ? p->k[p->nk - 1].size : 0;
    if (p->nk == 0) p->loops = ROWS;
    else if (p->n_red <= 32 && k_size >= 8) p->loops = TILE_LANES;
    else if (k_size < 8 && p->n_red > 64) p->loops = ROW_TILES;
    else p->loops = abs64(p->k[p->nk - 1].in_stride) < r_inner ? TILE_LANES : ROWS;
    int64_t rows = p->n_red == 0 ? 0 : p->nr ? p->n_red / p->r[p->nr - 1].size : 1;
    if (p->loops == ROWS) {
        p->n_units = p->n_out;
        p->n_positions = rows;
        p->accs_per_unit = 1;
    } else {
        p->tiles_per_outer = (k_size + LANES - 1) / LANES;
        p->n_units = p->n_out / k_size * p->tiles_per_outer;
        p->n_positions = p->loops == TILE_LANES ? p->n_red : rows;
        p->accs_per_unit = LANES;
    }
}

/* ------------------------------------------------------------- walking */

/* Offsets of position `pos` of dims[0..n) (row-major): input bytes, output
 * bytes per output, logical index. */
static void locate(const loop_dim *dims, int32_t n, int64_t pos, int64_t *in_off, int64_t *out_off,
                   int64_t *idx)
{
    *in_off = 0, *idx = 0;
    if (out_off) out_off[0] = out_off[1] = 0;
    for (int32_t i = n - 1; i >= 0; i--) {
        int64_t c = pos % dims[i].size;
        pos /= dims[i].size;
        *in_off += c * dims[i].in_stride;
        *idx += c * dims[i].idx_stride;
        if (out_off) out_off[0] += c * dims[i].out_stride[0], out_off[1] += c * dims[i].out_stride[1];
    }
}

/* An odometer over dims[0..n) starting at position `pos`. */
typedef struct odometer {
    int64_t c[MTK_MAX_DIMS];
    int64_t in_off, idx;
} odometer;

static void odo_start(odometer *o, const loop_dim *dims, int32_t n, int64_t pos)
{
    int64_t rest = pos;
    for (int32_t i = n - 1; i >= 0; i--) o->c[i] = rest % dims[i].size, rest /= dims[i].size;
    locate(dims, n, pos, &o->in_off, NULL, &o->idx);
}

static void odo_next(odometer *o, const loop_dim *dims, int32_t n)
{
    for (int32_t i = n - 1; i >= 0; i--) {
        o->in_off += dims[i].in_stride;
        o->idx += dims[i].idx_stride;
        if (++o->c[i] < dims[i].size) return;
        o->in_off -= o->c[i] * dims[i].in_stride;
        o->idx -= o->c[i] * dims[i].idx_stride;
        o->c[i] = 0;
    }
}

/* Feeds reduced positions [r0, r1) of unit `u` into accs. */
static void feed_unit(const plan *p, int64_t u, int64_t r0, int64_t r1, red_acc *accs)
{
    if (r0 >= r1) return;
    double fbuf[CHUNK > LANES ? CHUNK : LANES];
    int64_t ibuf[CHUNK > LANES ? CHUNK : LANES];
    int64_t base, idx_unused;
    if (p->loops == TILE_LANES) {
        const loop_dim *inner = &p->k[p->nk - 1];
        int64_t outer = u / p->tiles_per_outer, j0 = (u % p->tiles_per_outer) * LANES;
        int64_t cnt = inner->size - j0 < LANES ? inner->size - j0 : LANES;
        locate(p->k, p->nk - 1, outer, &base, NULL, &idx_unused);
        base += j0 * inner->in_stride;
        odometer o;
        odo_start(&o, p->r, p->nr, r0);
        for (int64_t r = r0; r < r1; r++) {
            const char *src = p->in + base + o.in_off;
            if (p->floating) {
                red_load_f64(src, inner->in_stride, cnt, p->src, p->cast, fbuf);
                p->op->lanes_f64(accs, fbuf, cnt, o.idx, &p->params);
            } else {
                red_load_i64(src, inner->in_stride, cnt, p->src, p->cast, ibuf);
                p->op->lanes_i64(accs, ibuf, cnt, o.idx, &p->params);
            }
            odo_next(&o, p->r, p->nr);
        }
        return;
    }
    /* rows: one output element (ROWS), or each of a narrow tile of them
     * in turn while the rows' memory is in cache (ROW_TILES) */
    int64_t out_unused[2], lanes = 1, lane_stride = 0;
    if (p->loops == ROW_TILES) {
        const loop_dim *inner = &p->k[p->nk - 1];
        int64_t outer = u / p->tiles_per_outer, j0 = (u % p->tiles_per_outer) * LANES;
        lanes = inner->size - j0 < LANES ? inner->size - j0 : LANES;
        lane_stride = inner->in_stride;
        locate(p->k, p->nk - 1, outer, &base, NULL, &idx_unused);
        base += j0 * inner->in_stride;
    } else {
        locate(p->k, p->nk, u, &base, out_unused, &idx_unused);
    }
    loop_dim row = p->nr ? p->r[p->nr - 1] : (loop_dim){ 1, 0, 0, { 0, 0 } };
    int32_t nouter = p->nr ? p->nr - 1 : 0;
    odometer o;
    odo_start(&o, p->r, nouter, r0);
    for (int64_t r = r0; r < r1; r++) {
        const char *src = p->in + base + o.in_off;
        for (int64_t j = 0; j < row.size; j += CHUNK) {
            int64_t cnt = row.size - j < CHUNK ? row.size - j : CHUNK;
            int64_t idx0 = o.idx + j * row.idx_stride;
            for (int64_t l = 0; l < lanes; l++) {
                const char *at = src + l * lane_stride + j * row.in_stride;
                if (p->floating) {
                    red_load_f64(at, row.in_stride, cnt, p->src, p->cast, fbuf);
                    p->op->row_f64(&accs[l], fbuf, cnt, idx0, row.idx_stride, &p->params);
                } else {
                    red_load_i64(at, row.in_stride, cnt, p->src, p->cast, ibuf);
                    p->op->row_i64(&accs[l], ibuf, cnt, idx0, row.idx_stride, &p->params);
                }
            }
        }
        odo_next(&o, p->r, nouter);
    }
}

/* Number of accumulators of unit u (a last tile may be short). */
static int64_t unit_accs(const plan *p, int64_t u)
{
    if (p->loops == ROWS) return 1;
    int64_t inner = p->k[p->nk - 1].size, j0 = (u % p->tiles_per_outer) * LANES;
    return inner - j0 < LANES ? inner - j0 : LANES;
}

static void init_unit(const plan *p, int64_t u, red_acc *accs)
{
    int64_t n = unit_accs(p, u);
    for (int64_t j = 0; j < n; j++) p->op->init(&accs[j], p->floating);
}

static void finish_unit(const plan *p, int64_t u, const red_acc *accs)
{
    int64_t in_unused, idx_unused, out_off[2];
    char *dst[2];
    if (p->loops != ROWS) {
        const loop_dim *inner = &p->k[p->nk - 1];
        int64_t outer = u / p->tiles_per_outer, j0 = (u % p->tiles_per_outer) * LANES;
        locate(p->k, p->nk - 1, outer, &in_unused, out_off, &idx_unused);
        int64_t n = unit_accs(p, u);
        for (int64_t j = 0; j < n; j++) {
            for (int32_t k = 0; k < p->nout; k++)
                dst[k] = p->out[k] + out_off[k] + (j0 + j) * inner->out_stride[k];
            p->op->finish(&accs[j], p->floating, p->n_red, &p->params, dst, p->out_dtype);
        }
        return;
    }
    locate(p->k, p->nk, u, &in_unused, out_off, &idx_unused);
    for (int32_t k = 0; k < p->nout; k++) dst[k] = p->out[k] + out_off[k];
    p->op->finish(&accs[0], p->floating, p->n_red, &p->params, dst, p->out_dtype);
}

/* --------------------------------------------------------------- drivers */

/* parallel over units: each thread owns whole output elements */
static void run_units(int64_t begin, int64_t end, int32_t worker, void *user)
{
    (void)worker;
    const plan *p = user;
    red_acc accs[LANES];
    for (int64_t u = begin; u < end; u++) {
        init_unit(p, u, accs);
        feed_unit(p, u, 0, p->n_positions, accs);
        finish_unit(p, u, accs);
    }
}

/* parallel over reduced positions: thread t keeps partial accumulators of
 * every unit in partial[t] */
typedef struct split_job {
    const plan *p;
    red_acc *partial; /* nthreads x n_units x accs_per_unit */
} split_job;

static void run_split(int64_t begin, int64_t end, int32_t worker, void *user)
{
    const split_job *job = user;
    const plan *p = job->p;
    int64_t per_thread = p->n_units * p->accs_per_unit;
    red_acc *mine = job->partial + (int64_t)worker * per_thread;
    for (int64_t u = 0; u < p->n_units; u++) {
        red_acc *accs = mine + u * p->accs_per_unit;
        init_unit(p, u, accs);
        feed_unit(p, u, begin, end, accs);
    }
}

bool red_engine_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out)
{
    plan p;
    make_plan(d, out, &p);
    if (!p.op) return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "reduction has no cpu accumulator");
    if ((p.floating && !p.op->row_f64) || (!p.floating && !p.op->row_i64))
        return mtk_error(ctx, MTK_ERR_DTYPE, "reduction has no cpu kernel for %s", mtk_dtype_name(p.cast));
    if (p.n_out == 0) return true;
    int32_t nthreads = red_num_threads();
    int64_t work = p.n_out * (p.n_red > 0 ? p.n_red : 1);
    if (work < RED_PARALLEL_MIN_ELEMENTS) nthreads = 1;
    if (nthreads <= 1 || p.n_units >= nthreads || p.n_positions < 2 * nthreads) {
        red_parallel(p.n_units, nthreads, run_units, &p);
        return true;
    }
    int64_t per_thread = p.n_units * p.accs_per_unit;
    split_job job = { &p, mtk_ctx_malloc(ctx, (size_t)(nthreads * per_thread) * sizeof(red_acc)) };
    if (!job.partial) return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory for reduction partials");
    red_parallel(p.n_positions, nthreads, run_split, &job);
    for (int64_t u = 0; u < p.n_units; u++) {
        red_acc *first = job.partial + u * p.accs_per_unit;
        int64_t n = unit_accs(&p, u);
        for (int32_t t = 1; t < nthreads; t++) {
            const red_acc *other = job.partial + t * per_thread + u * p.accs_per_unit;
            for (int64_t j = 0; j < n; j++) p.op->merge(&first[j], &other[j], p.floating, &p.params);
        }
        finish_unit(&p, u, first);
    }
    mtk_ctx_mfree(ctx, job.partial);
    return true;
}
