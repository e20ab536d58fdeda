/* The direct float32 convolution: no im2col, no GEMM library, one
 * register-tiled AVX-512 (or AVX2) kernel for every stride, dilation,
 * padding, group count and spatial rank.
 *
 * The idea: copy each image once into zero-padded "phase planes" — for a
 * stride s, the padded input split into s phases per dim (rows 0, s,
 * 2s, ... / 1, s+1, ... / ...), each laid out (Dp, Hi, Wi) flat.  In a
 * phase plane every kernel tap (c, kd, kh, kw) is a fixed shift: output
 * position q = (od Hi + oh) Wi + ow reads plane element q + shift.  So
 *
 *     out[co, q] = sum over taps t of W[co, t] * buf[off[t] + q]
 *
 * over a contiguous q range — a GEMM whose right-hand matrix is the
 * padded input itself, read at T shifted offsets.  Columns with
 * ow >= OW (and, in 3-D, rows with oh >= OH) are computed and dropped:
 * (Wi - OW) / Wi of the work, which decides when this path is used
 * (conv_direct_applies).  A tile of MR output channels x NV vectors of
 * positions lives in registers for the whole tap loop; each tap costs NV
 * unaligned loads, MR broadcasts and MR x NV FMAs.
 *
 * Measured on this project's machine (AVX-512, one thread): the
 * 8x64x56x56 3x3 conv runs at about 150 GFLOP/s, against 95 for
 * im2col + OpenBLAS sgemm (see bench/bench_cpu_kernels.py). */
#include "ops/conv.h"
#include "core/parallel.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define DIRECT_X86 1
#include <immintrin.h>
#endif

/* Images whose phase planes are built at once: at most this many bytes
 * (at least one image). */
#define BUFFER_BUDGET_BYTES ((int64_t)64 << 20)
/* Tiles (of one kernel call's columns) per task, at least. */
#define TILES_PER_TASK 4
/* The least fraction of computed columns that are real outputs. */
#define MIN_USEFUL_FRACTION 0.7

/* ------------------------------------------------------------ kernels */

/* One tile: acc (mr x cols, row-major, cols = nv vectors) = sum over
 * taps t of a[t*mr + i] * x[off[t] + column]. */
typedef void (*tile_fn)(const float *x, const int64_t *off, const float *a, int64_t taps, float *acc);

typedef struct tile_isa {
    tile_fn fn;
    int32_t mr;   /* output channels per tile */
    int32_t cols; /* positions per tile       */
} tile_isa;

#ifdef DIRECT_X86
#define MR512 8
#define NV512 3
__attribute__((target("avx512f"))) static void tile_avx512(const float *x, const int64_t *off, const float *a,
                                                            int64_t taps, float *acc)
{
    __m512 c[MR512][NV512];
    for (int i = 0; i < MR512; i++)
        for (int v = 0; v < NV512; v++) c[i][v] = _mm512_setzero_ps();
    for (int64_t t = 0; t < taps; t++) {
        const float *p = x + off[t];
        __m512 b0 = _mm512_loadu_ps(p), b1 = _mm512_loadu_ps(p + 16), b2 = _mm512_loadu_ps(p + 32);
        const float *w = a + t * MR512;
#pragma GCC unroll 8
        for (int i = 0; i < MR512; i++) {
            __m512 wi = _mm512_set1_ps(w[i]);
            c[i][0] = _mm512_fmadd_ps(wi, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(wi, b1, c[i][1]);
            c[i][2] = _mm512_fmadd_ps(wi, b2, c[i][2]);
        }
    }
    for (int i = 0; i < MR512; i++)
        for (int v = 0; v < NV512; v++) _mm512_storeu_ps(acc + i * (NV512 * 16) + v * 16, c[i][v]);
}

#define MR256 4
#define NV256 3
__attribute__((target("avx2,fma"))) static void tile_avx2(const float *x, const int64_t *off, const float *a,
                                                           int64_t taps, float *acc)
{
    __m256 c[MR256][NV256];
    for (int i = 0; i < MR256; i++)
        for (int v = 0; v < NV256; v++) c[i][v] = _mm256_setzero_ps();
    for (int64_t t = 0; t < taps; t++) {
        const float *p = x + off[t];
        __m256 b0 = _mm256_loadu_ps(p), b1 = _mm256_loadu_ps(p + 8), b2 = _mm256_loadu_ps(p + 16);
        const float *w = a + t * MR256;
#pragma GCC unroll 4
        for (int i = 0; i < MR256; i++) {
            __m256 wi = _mm256_set1_ps(w[i]);
            c[i][0] = _mm256_fmadd_ps(wi, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(wi, b1, c[i][1]);
            c[i][2] = _mm256_fmadd_ps(wi, b2, c[i][2]);
        }
    }
    for (int i = 0; i < MR256; i++)
        for (int v = 0; v < NV256; v++) _mm256_storeu_ps(acc + i * (NV256 * 8) + v * 8, c[i][v]);
}
#endif

/* The best kernel this cpu runs; fn NULL when none. */
static tile_isa pick_isa(void)
{
    tile_isa none = { NULL, 0, 0 };
#ifdef DIRECT_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return (tile_isa){ tile_avx512, MR512, NV512 * 16 };
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return (tile_isa){ tile_avx2, MR256, NV256 * 8 };
#endif
    return none;
}

/* ----------------------------------------------------------- geometry */

/* The phase planes of one convolution. */
typedef struct geometry {
    int64_t phases[3];   /* stride per dim: phases per dim         */
    int64_t nphase;      /* their product                          */
    int64_t dims[3];     /* (Dp, Hi, Wi) of one phase plane        */
    int64_t plane;       /* Dp * Hi * Wi                            */
    int64_t chan_len;    /* nphase * plane: one channel's planes   */
    int64_t image_len;   /* in_channels * chan_len + slack          */
    int64_t q_total;     /* computed positions of one image         */
} geometry;

static geometry make_geometry(const mtk_conv_plan *p, int32_t cols)
{
    geometry g;
    g.nphase = 1;
    for (int d = 0; d < 3; d++) {
        g.phases[d] = p->stride[d];
        g.nphase *= p->stride[d];
        g.dims[d] = p->out_size[d] + (p->kernel[d] - 1) * p->dilation[d] / p->stride[d];
    }
    g.plane = g.dims[0] * g.dims[1] * g.dims[2];
    g.chan_len = g.nphase * g.plane;
    g.image_len = p->in_channels * g.chan_len + cols; /* the last tile reads past the end */
    g.q_total = ((p->out_size[0] - 1) * g.dims[1] + p->out_size[1] - 1) * g.dims[2] + p->out_size[2];
    return g;
}

bool mtk_conv_direct_applies(const mtk_conv_plan *p, mtk_dtype in_dtype, mtk_dtype out_dtype)
{
    if (p->transposed || in_dtype != MTK_FLOAT32 || out_dtype != MTK_FLOAT32 || p->empty) return false;
    tile_isa isa = pick_isa();
    if (!isa.fn) return false;
    geometry g = make_geometry(p, isa.cols);
    int64_t og = p->out_channels / p->groups;
    int64_t tiles = (g.q_total + isa.cols - 1) / isa.cols;
    int64_t blocks = (og + isa.mr - 1) / isa.mr;
    double useful = (double)(p->out_size[0] * p->out_size[1] * p->out_size[2]) / (double)(tiles * isa.cols) *
                    (double)og / (double)(blocks * isa.mr);
    return useful >= MIN_USEFUL_FRACTION;
}

/* --------------------------------------------------------------- run */

typedef struct direct_job {
    const mtk_conv_plan *p;
    const mtk_tensor *input;
    const int64_t *in_stride;   /* (N, C, D, H, W) element strides  */
    geometry g;
    tile_isa isa;
    int64_t cg, og, blocks, taps;
    const int64_t *off;         /* taps offsets, relative to a group  */
    const float *packed;        /* (G, blocks, taps, mr)              */
    const double *bias;
    float *out;                 /* contiguous (N, O, D, H, W)         */
    float *buf;                 /* phase planes of images [n0, n1)    */
    int64_t n0, n1;
    int64_t tiles, parts;       /* tiles per image, tasks per (n, g) */
    float **tile_buf;           /* per worker: mr x cols             */
} direct_job;

/* Fills the phase planes of channel c of image n. */
static void fill_task(int64_t task, int32_t worker, void *user)
{
    (void)worker;
    const direct_job *j = user;
    const mtk_conv_plan *p = j->p;
    const geometry *g = &j->g;
    int64_t n = j->n0 + task / p->in_channels, c = task % p->in_channels;
    const float *src = (const float *)mtk_tensor_data(j->input) + n * j->in_stride[0] + c * j->in_stride[1];
    float *dst = j->buf + (n - j->n0) * g->image_len + c * g->chan_len;
    const int64_t *st = j->in_stride + 2;
    for (int64_t ph = 0; ph < g->nphase; ph++) {
        int64_t phase[3] = { ph / (g->phases[1] * g->phases[2]), ph / g->phases[2] % g->phases[1], ph % g->phases[2] };
        /* plane column l reads input column l*s + phase - pad, valid for l in [lo, hi) */
        int64_t sw = g->phases[2], shift = phase[2] - p->pad[2];
        int64_t lo = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
        int64_t hi = p->in_size[2] - shift <= 0 ? 0 : (p->in_size[2] - shift + sw - 1) / sw;
        if (hi > g->dims[2]) hi = g->dims[2];
        if (lo > hi) lo = hi;
        for (int64_t i = 0; i < g->dims[0]; i++) {
            int64_t id = i * g->phases[0] + phase[0] - p->pad[0];
            for (int64_t r = 0; r < g->dims[1]; r++) {
                float *row = dst + ph * g->plane + (i * g->dims[1] + r) * g->dims[2];
                int64_t ih = r * g->phases[1] + phase[1] - p->pad[1];
                if (id < 0 || id >= p->in_size[0] || ih < 0 || ih >= p->in_size[1]) {
                    memset(row, 0, (size_t)g->dims[2] * sizeof *row);
                    continue;
                }
                const float *in_row = src + id * st[0] + ih * st[1];
                memset(row, 0, (size_t)lo * sizeof *row);
                if (sw == 1 && st[2] == 1) {
                    memcpy(row + lo, in_row + lo + shift, (size_t)(hi - lo) * sizeof *row);
                } else {
                    for (int64_t l = lo; l < hi; l++) row[l] = in_row[(l * sw + shift) * st[2]];
                }
                memset(row + hi, 0, (size_t)(g->dims[2] - hi) * sizeof *row);
            }
        }
    }
    if (c == p->in_channels - 1) /* the slack the last tiles read */
        memset(dst + g->chan_len, 0, (size_t)(g->image_len - p->in_channels * g->chan_len) * sizeof *dst);
}

/* Writes rows [0, rows) of a tile (computed positions [q0, q0 + cols))
 * to the output channels co0.. of image n, dropping the padding columns
 * and adding the bias. */
static void store_tile(const direct_job *j, const float *acc, int64_t n, int64_t co0, int64_t rows, int64_t q0)
{
    const mtk_conv_plan *p = j->p;
    const geometry *g = &j->g;
    int64_t cols = j->isa.cols, wi = g->dims[2], hi = g->dims[1];
    int64_t out_vol = p->out_size[0] * p->out_size[1] * p->out_size[2];
    int64_t q_end = q0 + cols < j->g.q_total ? q0 + cols : j->g.q_total;
    for (int64_t q = q0; q < q_end;) {
        int64_t r = q / wi, ow = q - r * wi;
        int64_t oh = r % hi, od = r / hi;
        if (ow >= p->out_size[2] || oh >= p->out_size[1]) {
            q = (r + 1) * wi;
            continue;
        }
        int64_t len = p->out_size[2] - ow;
        if (len > q_end - q) len = q_end - q;
        float *dst = j->out + (n * p->out_channels + co0) * out_vol + (od * p->out_size[1] + oh) * p->out_size[2] + ow;
        const float *src = acc + (q - q0);
        for (int64_t i = 0; i < rows; i++) {
            float *d = dst + i * out_vol;
            const float *s = src + i * cols;
            if (j->bias) {
                float b = (float)j->bias[co0 + i];
                for (int64_t k = 0; k < len; k++) d[k] = s[k] + b;
            } else {
                memcpy(d, s, (size_t)len * sizeof *d);
            }
        }
        q += len;
    }
}

/* Task (n, g, part): tiles of part `part` of image n's positions, every
 * output channel of group g. */
static void compute_task(int64_t task, int32_t worker, void *user)
{
    const direct_job *j = user;
    const mtk_conv_plan *p = j->p;
    int64_t part = task % j->parts, ng = task / j->parts;
    int64_t n = j->n0 + ng / p->groups, grp = ng % p->groups;
    const float *x = j->buf + (n - j->n0) * j->g.image_len + grp * j->cg * j->g.chan_len;
    int64_t t0 = mtk_parallel_split(j->tiles, (int32_t)part, (int32_t)j->parts);
    int64_t t1 = mtk_parallel_split(j->tiles, (int32_t)part + 1, (int32_t)j->parts);
    float *acc = j->tile_buf[worker];
    int64_t mr = j->isa.mr, cols = j->isa.cols;
    for (int64_t t = t0; t < t1; t++)
        for (int64_t b = 0; b < j->blocks; b++) {
            const float *a = j->packed + (grp * j->blocks + b) * j->taps * mr;
            j->isa.fn(x + t * cols, j->off, a, j->taps, acc);
            int64_t rows = j->og - b * mr < mr ? j->og - b * mr : mr;
            store_tile(j, acc, n, grp * j->og + b * mr, rows, t * cols);
        }
}

bool mtk_conv_direct_run(mtk_ctx *ctx, const mtk_conv_plan *p, const mtk_tensor *input, const int64_t *in_stride,
                         const float *weight, const double *bias, float *out, int32_t threads)
{
    direct_job j;
    memset(&j, 0, sizeof j);
    j.p = p;
    j.input = input;
    j.in_stride = in_stride;
    j.isa = pick_isa();
    j.g = make_geometry(p, j.isa.cols);
    j.cg = p->in_channels / p->groups;
    j.og = p->out_channels / p->groups;
    j.blocks = (j.og + j.isa.mr - 1) / j.isa.mr;
    int64_t kvol = p->kernel[0] * p->kernel[1] * p->kernel[2];
    j.taps = j.cg * kvol;
    j.bias = bias;
    j.out = out;
    j.tiles = (j.g.q_total + j.isa.cols - 1) / j.isa.cols;

    int64_t per_image = j.g.image_len * (int64_t)sizeof(float);
    int64_t round = BUFFER_BUDGET_BYTES / per_image;
    if (round < 1) round = 1;
    if (round > p->batch) round = p->batch;
    int64_t *off = mtk_ctx_malloc(ctx, (size_t)j.taps * sizeof *off);
    float *packed = mtk_ctx_malloc(ctx, (size_t)(p->groups * j.blocks * j.taps * j.isa.mr) * sizeof *packed);
    j.buf = mtk_ctx_malloc(ctx, (size_t)(round * per_image));
    float *tiles[MTK_PARALLEL_MAX_THREADS];
    memset(tiles, 0, sizeof tiles);
    bool ok = off && packed && j.buf;
    for (int32_t w = 0; ok && w < threads; w++) {
        tiles[w] = mtk_ctx_malloc(ctx, (size_t)(j.isa.mr * j.isa.cols) * sizeof(float));
        ok = tiles[w] != NULL;
    }
    if (ok) {
        /* tap t = (c, kd, kh, kw), as the weight's (I/g, kD, kH, kW) order */
        for (int64_t t = 0; t < j.taps; t++) {
            int64_t within = t % kvol;
            int64_t k[3] = { within / (p->kernel[1] * p->kernel[2]), within / p->kernel[2] % p->kernel[1],
                             within % p->kernel[2] };
            int64_t phase = 0, shift = 0;
            for (int d = 0; d < 3; d++) {
                int64_t a = k[d] * p->dilation[d];
                phase = phase * j.g.phases[d] + a % j.g.phases[d];
            }
            shift = ((k[0] * p->dilation[0] / p->stride[0]) * j.g.dims[1] + k[1] * p->dilation[1] / p->stride[1]) *
                        j.g.dims[2] +
                    k[2] * p->dilation[2] / p->stride[2];
            off[t] = (t / kvol) * j.g.chan_len + phase * j.g.plane + shift;
        }
        /* packed[g][b][t][i] = weight[g*og + b*mr + i][t], zero past og */
        for (int64_t grp = 0; grp < p->groups; grp++)
            for (int64_t b = 0; b < j.blocks; b++)
                for (int64_t t = 0; t < j.taps; t++)
                    for (int64_t i = 0; i < j.isa.mr; i++) {
                        int64_t o = b * j.isa.mr + i;
                        packed[((grp * j.blocks + b) * j.taps + t) * j.isa.mr + i] =
                            o < j.og ? weight[(grp * j.og + o) * j.taps + t] : 0.0f;
                    }
        j.off = off;
        j.packed = packed;
        j.tile_buf = tiles;
        for (j.n0 = 0; j.n0 < p->batch; j.n0 = j.n1) {
            j.n1 = j.n0 + round < p->batch ? j.n0 + round : p->batch;
            int64_t images = j.n1 - j.n0;
            int64_t fills = images * p->in_channels;
            mtk_parallel_tasks(fills, threads, fill_task, &j);
            /* enough tasks to balance the workers, each of a few tiles */
            int64_t blocks = images * p->groups;
            j.parts = (4 * threads + blocks - 1) / blocks;
            if (j.parts > j.tiles / TILES_PER_TASK) j.parts = j.tiles / TILES_PER_TASK;
            if (j.parts < 1) j.parts = 1;
            mtk_parallel_tasks(blocks * j.parts, threads, compute_task, &j);
        }
    }
    for (int32_t w = 0; w < threads; w++) mtk_ctx_mfree(ctx, tiles[w]);
    mtk_ctx_mfree(ctx, j.buf);
    mtk_ctx_mfree(ctx, packed);
    mtk_ctx_mfree(ctx, off);
    return ok;
}
