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
 * Measured with bench/bench_cpu_kernels.py, one thread, in the same run
 * as torch 2.13 (oneDNN): the 8x64x56x56 3x3 conv 14.8 ms against 12.4
 * (the kw-unrolled sgemm path took 19.5), the ResNet-50 stem 2.0 ms
 * against 1.8 (im2col + sgemm: 3.1).  Of the register tiles tried (8x3,
 * 6x4, 12x2, 4x6, 7x3 vectors), 8 channels x 3 vectors was fastest.
 *
 * A tile whose positions are one run of outputs of one row is stored
 * by the kernel straight into the output; the others go through a
 * buffer.  AVX2's tile (4 channels x 3 vectors, 16 registers) runs the
 * taps in chunks of whole channels so that their input stays in L1
 * across the blocks of output channels; the sums carry over exactly.
 * Which kernel runs: core/cpu_isa.h (none on the baseline variant). */
#include "ops/conv.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define DIRECT_X86 1
#include <immintrin.h>
#endif

/* The most bytes of input one task copies (its band of every plane). */
#define BAND_BUDGET_BYTES ((int64_t)1 << 20)
/* The most bytes one task may copy, even for a 3-D conv's halo of whole
 * planes; beyond it the im2col path runs. */
#define MAX_BAND_BYTES ((int64_t)256 << 20)
/* The least fraction of computed columns that are real outputs. */
#define MIN_USEFUL_FRACTION 0.7

/* ------------------------------------------------------------ kernels */

/* One tile: acc (mr x cols, row i at acc + i * ld, cols = nv vectors)
 * = sum over taps t of a[t*mr + i] * x[off[t] + column], added to what
 * acc holds when `add` (a chunk of the taps after the first: the sums
 * go on in the same order, bit for bit as in one call). */
typedef void (*tile_fn)(const float *x, const int64_t *off, const float *a, int64_t taps, float *acc, int64_t ld,
                        bool add);

/* The most columns a tile has (AVX-512: 48). */
#define MAX_COLS 48

typedef struct tile_isa {
    tile_fn fn;
    int32_t mr;   /* output channels per tile */
    int32_t cols; /* positions per tile       */
    int32_t chunk_taps; /* taps per call at most, in whole channels (0: all) */
    const char *name;
} tile_isa;

#ifdef DIRECT_X86
/* One tile kernel per instruction set, from one body: MR channels x 3
 * vectors of VL floats, the accumulators in registers through the whole
 * tap loop (24 of AVX-512's 32 registers, 12 of AVX2's 16). */
#define TILE_KERNEL(NAME, TARGET, VEC, VL, MR, ZERO, LOADU, SET1, FMADD, STOREU)                                \
    __attribute__((target(TARGET))) static void NAME(const float *x, const int64_t *off, const float *a,       \
                                                     int64_t taps, float *acc, int64_t ld, bool add)          \
    {                                                                                                          \
        VEC c[MR][3];                                                                                          \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                                   \
            _Pragma("GCC unroll 3") for (int v = 0; v < 3; v++) c[i][v] = add ? LOADU(acc + i * ld + v * VL)   \
                                                                              : ZERO();                        \
        for (int64_t t = 0; t < taps; t++) {                                                                   \
            const float *p = x + off[t], *w = a + t * MR;                                                      \
            VEC b0 = LOADU(p), b1 = LOADU(p + VL), b2 = LOADU(p + 2 * VL);                                     \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                             \
                VEC wi = SET1(w[i]);                                                                           \
                c[i][0] = FMADD(wi, b0, c[i][0]);                                                              \
                c[i][1] = FMADD(wi, b1, c[i][1]);                                                              \
                c[i][2] = FMADD(wi, b2, c[i][2]);                                                              \
            }                                                                                                  \
        }                                                                                                      \
        _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++)                                                   \
            _Pragma("GCC unroll 3") for (int v = 0; v < 3; v++) STOREU(acc + i * ld + v * VL, c[i][v]);       \
    }

#define MR512 8
#define MR256 4
#define AVX2_CHUNK_TAPS 256
TILE_KERNEL(tile_avx512, "avx512f", __m512, 16, MR512, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_set1_ps,
            _mm512_fmadd_ps, _mm512_storeu_ps)
TILE_KERNEL(tile_avx2, "avx2,fma", __m256, 8, MR256, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_set1_ps,
            _mm256_fmadd_ps, _mm256_storeu_ps)
#endif

/* The kernel of cpu_isa_active(); fn NULL for the baseline (the
 * im2col + sgemm path runs then). */
static tile_isa pick_isa(void)
{
    tile_isa none = { NULL, 0, 0, 0, "none" };
#ifdef DIRECT_X86
    switch (cpu_isa_active()) {
    case CPU_ISA_AVX512: return (tile_isa){ tile_avx512, MR512, 3 * 16, 0, "avx512f 8x48" };
    /* AVX2: the 4-channel tile reads its input 16 times for 64 output
     * channels; in chunks of taps that input stays in L1 (perf put the
     * 3x3 conv's time on the tile's loads) */
    case CPU_ISA_AVX2: return (tile_isa){ tile_avx2, MR256, 3 * 8, AVX2_CHUNK_TAPS, "avx2+fma 4x24" };
    default: break;
    }
#endif
    return none;
}

const char *mtk_conv_direct_kernel_name(void)
{
    return pick_isa().name;
}

/* ----------------------------------------------------------- geometry */

/* The phase planes of one convolution. */
typedef struct geometry {
    int64_t phases[3];   /* stride per dim: phases per dim         */
    int64_t nphase;      /* their product                          */
    int64_t dims[3];     /* (Dp, Hi, Wi) of one phase plane        */
    int64_t plane;       /* Dp * Hi * Wi                            */
    int64_t q_total;     /* computed positions of one image         */
    int64_t max_shift;   /* the largest tap shift within a plane    */
} geometry;

static geometry make_geometry(const mtk_conv_plan *p)
{
    geometry g;
    g.nphase = 1;
    for (int d = 0; d < 3; d++) {
        g.phases[d] = p->stride[d];
        g.nphase *= p->stride[d];
        g.dims[d] = p->out_size[d] + (p->kernel[d] - 1) * p->dilation[d] / p->stride[d];
    }
    g.plane = g.dims[0] * g.dims[1] * g.dims[2];
    g.q_total = ((p->out_size[0] - 1) * g.dims[1] + p->out_size[1] - 1) * g.dims[2] + p->out_size[2];
    g.max_shift = 0;
    for (int d = 0; d < 3; d++)
        g.max_shift = g.max_shift * (d ? g.dims[d] : 1) + (p->kernel[d] - 1) * p->dilation[d] / p->stride[d];
    return g;
}

/* Tiles per task ("band"): the copy of a band (its positions plus the
 * max_shift halo, in each of the group's planes) stays within
 * BAND_BUDGET_BYTES where it can, the halo is at most half of it, and
 * `threads` workers all get tasks (BANDS_PER_WORKER over, for balance).
 * Tasks are handed out as workers come: with fewer images than workers
 * (a batch-1 ResNet stem on 2 threads), a worker that starts late or is
 * descheduled leaves at most one band for the others to wait on, so the
 * bands are short (4 per worker: the stem's 537 tiles in 8 bands of 68,
 * each copying a 348-element halo more than 2 bands per worker would:
 * 0.3% more instructions). */
#define BANDS_PER_WORKER 4
static int64_t band_tiles_for(const mtk_conv_plan *p, const geometry *g, int64_t cols, int64_t tiles,
                              int32_t threads)
{
    int64_t planes = p->in_channels / p->groups * g->nphase;
    int64_t least = (2 * g->max_shift + cols - 1) / cols;
    int64_t fit = (BAND_BUDGET_BYTES / ((int64_t)sizeof(float) * planes) - g->max_shift) / cols;
    int64_t band = fit > least ? fit : least;
    int64_t images = p->batch * p->groups;
    if (images < threads) { /* split images so that every worker has bands */
        int64_t want = (BANDS_PER_WORKER * threads + images - 1) / images;
        int64_t split = (tiles + want - 1) / want;
        if (split < band) band = split > least ? split : least;
    }
    if (band > tiles) band = tiles;
    return band < 1 ? 1 : band;
}

bool mtk_conv_direct_applies(const mtk_conv_plan *p, mtk_dtype in_dtype, mtk_dtype out_dtype)
{
    if (p->transposed || in_dtype != MTK_FLOAT32 || out_dtype != MTK_FLOAT32 || p->empty) return false;
    tile_isa isa = pick_isa();
    if (!isa.fn) return false;
    geometry g = make_geometry(p);
    int64_t og = p->out_channels / p->groups;
    int64_t tiles = (g.q_total + isa.cols - 1) / isa.cols;
    int64_t blocks = (og + isa.mr - 1) / isa.mr;
    double useful = (double)(p->out_size[0] * p->out_size[1] * p->out_size[2]) / (double)(tiles * isa.cols) *
                    (double)og / (double)(blocks * isa.mr);
    int64_t band = band_tiles_for(p, &g, isa.cols, tiles, 1);
    double copy_bytes = (double)(p->in_channels / p->groups * g.nphase) * (double)(band * isa.cols + g.max_shift) * 4.0;
    return useful >= MIN_USEFUL_FRACTION && copy_bytes <= (double)MAX_BAND_BYTES;
}

/* --------------------------------------------------------------- run */

typedef struct direct_job {
    const mtk_conv_plan *p;
    const mtk_tensor *input;
    const int64_t *in_stride;   /* (N, C, D, H, W) element strides     */
    geometry g;
    tile_isa isa;
    int64_t cg, og, blocks, taps;
    int64_t chunk_channels;     /* input channels per tile call         */
    const int64_t *off;         /* per tap: its offset in a band copy:
                                   plane (c * nphase + ph) * band_len
                                   + its shift within the plane        */
    const float *packed;        /* (G, blocks, taps, mr)                */
    const double *bias;
    float *out;                 /* contiguous (N, O, D, H, W)           */
    int64_t tiles;              /* tiles per image                      */
    int64_t band_tiles, bands;  /* tiles per task, tasks per (n, g)     */
    int64_t band_len;           /* elements of a plane a task copies    */
    float **band_buf;           /* per worker: cg planes x band_len     */
    float **tile_buf;           /* per worker: blocks x mr x cols       */
} direct_job;

/* d[i] = src[2 i] for i < n (a stride-2 conv's column phase), four at a
 * time from two loads and one shuffle; it never reads past src[2 (n - 1)],
 * the last element the row has. */
static void copy_even(float *restrict d, const float *restrict src, int64_t n)
{
    typedef float four __attribute__((vector_size(4 * sizeof(float))));
    int64_t i = 0;
    for (; i + 4 < n; i += 4) {
        four lo, hi;
        memcpy(&lo, src + 2 * i, sizeof lo);
        memcpy(&hi, src + 2 * i + 4, sizeof hi);
        four even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6);
        memcpy(d + i, &even, sizeof even);
    }
    for (; i < n; i++) d[i] = src[2 * i];
}

/* Copies elements [e0, e1) of phase plane ph of channel c of image n,
 * flat (Dp, Hi, Wi) order, to dst; elements past the plane are zero. */
static void fill_range(const direct_job *j, int64_t n, int64_t c, int64_t ph, int64_t e0, int64_t e1, float *dst)
{
    const mtk_conv_plan *p = j->p;
    const geometry *g = &j->g;
    const float *src = (const float *)mtk_tensor_data(j->input) + n * j->in_stride[0] + c * j->in_stride[1];
    const int64_t *st = j->in_stride + 2;
    int64_t phase[3] = { ph / (g->phases[1] * g->phases[2]), ph / g->phases[2] % g->phases[1], ph % g->phases[2] };
    /* plane column l reads input column l*s + phase - pad, valid for l in [lo, hi) */
    int64_t sw = g->phases[2], shift = phase[2] - p->pad[2];
    int64_t lo = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
    int64_t hi = p->in_size[2] - shift <= 0 ? 0 : (p->in_size[2] - shift + sw - 1) / sw;
    if (hi > g->dims[2]) hi = g->dims[2];
    if (lo > hi) lo = hi;
    int64_t wi = g->dims[2];
    for (int64_t e = e0; e < e1;) {
        int64_t row = e / wi, l0 = e - row * wi;
        int64_t l1 = wi - l0 < e1 - e ? wi : l0 + (e1 - e);
        float *out = dst + (e - e0);
        int64_t i = row / g->dims[1], r = row % g->dims[1];
        int64_t id = i * g->phases[0] + phase[0] - p->pad[0], ih = r * g->phases[1] + phase[1] - p->pad[1];
        if (i >= g->dims[0] || id < 0 || id >= p->in_size[0] || ih < 0 || ih >= p->in_size[1]) {
            memset(out, 0, (size_t)(l1 - l0) * sizeof *out);
        } else {
            const float *in_row = src + id * st[0] + ih * st[1];
            /* the columns with input, [a, b) within [l0, l1): the
             * segment may lie wholly left or right of [lo, hi) */
            int64_t a = lo > l0 ? lo : l0, b = hi < l1 ? hi : l1;
            if (a > l1) a = l1;
            if (b < a) b = a;
            memset(out, 0, (size_t)(a - l0) * sizeof *out);
            if (sw == 1 && st[2] == 1)
                memcpy(out + (a - l0), in_row + a + shift, (size_t)(b - a) * sizeof *out);
            else if (sw == 2 && st[2] == 1)
                copy_even(out + (a - l0), in_row + 2 * a + shift, b - a);
            else
                for (int64_t l = a; l < b; l++) out[l - l0] = in_row[(l * sw + shift) * st[2]];
            memset(out + (b - l0), 0, (size_t)(l1 - b) * sizeof *out);
        }
        e += l1 - l0;
    }
}

/* A run of a tile's columns that are consecutive real outputs. */
typedef struct segment {
    int32_t col;   /* first column in the tile               */
    int32_t len;
    int64_t out;   /* its first output, within a channel     */
} segment;

/* The segments of the tile of positions [q0, q0 + cols); returns how
 * many (at most cols). */
static int32_t tile_segments(const direct_job *j, int64_t q0, segment *segs)
{
    const mtk_conv_plan *p = j->p;
    int64_t wi = j->g.dims[2], hi = j->g.dims[1], ow_n = p->out_size[2], oh_n = p->out_size[1];
    int64_t q_end = q0 + j->isa.cols < j->g.q_total ? q0 + j->isa.cols : j->g.q_total;
    int32_t n = 0;
    for (int64_t q = q0; q < q_end;) {
        int64_t r = q / wi, ow = q - r * wi;
        int64_t oh = r % hi, od = r / hi;
        if (ow >= ow_n || oh >= oh_n) { /* padding columns / rows */
            q = (r + 1) * wi;
            continue;
        }
        int64_t len = ow_n - ow < q_end - q ? ow_n - ow : q_end - q;
        segs[n++] = (segment){ (int32_t)(q - q0), (int32_t)len, (od * oh_n + oh) * ow_n + ow };
        q += len;
    }
    return n;
}

/* d[e] += b for e < len, 8 at a time where it can (a loop of fixed
 * length, which the compiler vectorizes; an element loop of unknown
 * length it left scalar). */
static void add_row(float *d, int64_t len, float b)
{
    int64_t e = 0;
    for (; e + 8 <= len; e += 8)
        for (int k = 0; k < 8; k++) d[e + k] += b;
    for (; e < len; e++) d[e] += b;
}

/* d[e] = src[e] for e < len, 8 floats a step (a call of memcpy costs
 * more for rows this short, and GCC turns a plain loop into one). */
static void copy_row(float *restrict d, const float *restrict src, int32_t len)
{
    typedef float eight __attribute__((vector_size(8 * sizeof(float))));
    int32_t e = 0;
    for (; e + 8 <= len; e += 8) {
        eight v;
        memcpy(&v, src + e, sizeof v);
        memcpy(d + e, &v, sizeof v);
    }
    for (; e < len; e++) d[e] = src[e];
}

/* Writes rows [0, rows) of a computed tile to output channels co0.. of
 * image n: its segments only, plus the bias. */
static void store_tile(const direct_job *j, const float *acc, int64_t n, int64_t co0, int64_t rows,
                       const segment *segs, int32_t nsegs)
{
    const mtk_conv_plan *p = j->p;
    int64_t cols = j->isa.cols, out_vol = p->out_size[0] * p->out_size[1] * p->out_size[2];
    float *base = j->out + (n * p->out_channels + co0) * out_vol;
    for (int64_t i = 0; i < rows; i++) {
        float b = j->bias ? (float)j->bias[co0 + i] : 0.0f;
        for (int32_t k = 0; k < nsegs; k++) {
            float *d = base + i * out_vol + segs[k].out;
            const float *src = acc + i * cols + segs[k].col;
            copy_row(d, src, segs[k].len);
            if (j->bias) add_row(d, segs[k].len, b);
        }
    }
}

/* Task (n, g, band): copies the positions the band's tiles read from
 * group g's planes of image n into the worker's buffer (plane by plane,
 * band_len each), then computes the tiles for every output channel of
 * the group, while the copy is still in the core's cache. */
static void band_task(int64_t task, int32_t worker, void *user)
{
    const direct_job *j = user;
    const mtk_conv_plan *p = j->p;
    int64_t band = task % j->bands, ng = task / j->bands;
    int64_t n = ng / p->groups, grp = ng % p->groups;
    int64_t mr = j->isa.mr, cols = j->isa.cols;
    int64_t t0 = band * j->band_tiles, t1 = t0 + j->band_tiles < j->tiles ? t0 + j->band_tiles : j->tiles;
    int64_t q0 = t0 * cols, len = (t1 - t0) * cols + j->g.max_shift;
    float *buf = j->band_buf[worker];
    for (int64_t c = 0; c < j->cg; c++)
        for (int64_t ph = 0; ph < j->g.nphase; ph++) {
            float *dst = buf + (c * j->g.nphase + ph) * j->band_len;
            int64_t end = q0 + len < j->g.plane ? q0 + len : j->g.plane;
            fill_range(j, n, grp * j->cg + c, ph, q0, end, dst);
            if (end < q0 + len) memset(dst + (end - q0), 0, (size_t)(q0 + len - end) * sizeof *dst);
        }
    int64_t out_vol = p->out_size[0] * p->out_size[1] * p->out_size[2];
    int64_t kvol = j->taps / j->cg;
    segment segs[MAX_COLS];
    for (int64_t t = t0; t < t1; t++) {
        int32_t nsegs = tile_segments(j, t * cols, segs);
        /* a tile of consecutive outputs of one row goes straight to them */
        bool whole = nsegs == 1 && segs[0].len == cols;
        /* the taps in chunks of whole channels, each chunk for every
         * block of output channels: (blocks, mr, cols) sums in between */
        for (int64_t c0 = 0; c0 < j->cg; c0 += j->chunk_channels) {
            int64_t tap0 = c0 * kvol, ntaps = (j->cg - c0 < j->chunk_channels ? j->cg - c0 : j->chunk_channels) * kvol;
            for (int64_t b = 0; b < j->blocks; b++) {
                const float *a = j->packed + ((grp * j->blocks + b) * j->taps + tap0) * mr;
                int64_t co0 = grp * j->og + b * mr, rows = j->og - b * mr < mr ? j->og - b * mr : mr;
                if (whole && rows == mr) {
                    float *d = j->out + (n * p->out_channels + co0) * out_vol + segs[0].out;
                    j->isa.fn(buf + (t - t0) * cols, j->off + tap0, a, ntaps, d, out_vol, c0 > 0);
                } else {
                    j->isa.fn(buf + (t - t0) * cols, j->off + tap0, a, ntaps, j->tile_buf[worker] + b * mr * cols,
                              cols, c0 > 0);
                }
            }
        }
        for (int64_t b = 0; b < j->blocks; b++) {
            int64_t co0 = grp * j->og + b * mr, rows = j->og - b * mr < mr ? j->og - b * mr : mr;
            if (whole && rows == mr) {
                float *d = j->out + (n * p->out_channels + co0) * out_vol + segs[0].out;
                for (int64_t i = 0; j->bias && i < rows; i++) add_row(d + i * out_vol, cols, (float)j->bias[co0 + i]);
            } else {
                store_tile(j, j->tile_buf[worker] + b * mr * cols, n, co0, rows, segs, nsegs);
            }
        }
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
    j.g = make_geometry(p);
    j.cg = p->in_channels / p->groups;
    j.og = p->out_channels / p->groups;
    j.blocks = (j.og + j.isa.mr - 1) / j.isa.mr;
    int64_t kvol = p->kernel[0] * p->kernel[1] * p->kernel[2];
    j.taps = j.cg * kvol;
    /* chunks of near-equal channel counts, each at most chunk_taps taps */
    j.chunk_channels = j.cg;
    if (j.isa.chunk_taps > 0 && j.taps > j.isa.chunk_taps) {
        int64_t chunks = (j.taps + j.isa.chunk_taps - 1) / j.isa.chunk_taps;
        j.chunk_channels = (j.cg + chunks - 1) / chunks;
    }
    j.bias = bias;
    j.out = out;
    j.tiles = (j.g.q_total + j.isa.cols - 1) / j.isa.cols;
    j.band_tiles = band_tiles_for(p, &j.g, j.isa.cols, j.tiles, threads);
    j.bands = (j.tiles + j.band_tiles - 1) / j.band_tiles;
    j.band_len = j.band_tiles * j.isa.cols + j.g.max_shift;
    int64_t images = p->batch * p->groups;

    int64_t *off = mtk_ctx_malloc(ctx, (size_t)j.taps * sizeof *off);
    float *packed = mtk_ctx_malloc(ctx, (size_t)(p->groups * j.blocks * j.taps * j.isa.mr) * sizeof *packed);
    float *tiles[MTK_PARALLEL_MAX_THREADS], *bufs[MTK_PARALLEL_MAX_THREADS];
    memset(tiles, 0, sizeof tiles);
    memset(bufs, 0, sizeof bufs);
    int32_t workers = threads < images * j.bands ? threads : (int32_t)(images * j.bands);
    bool ok = off && packed;
    for (int32_t w = 0; ok && w < workers; w++) {
        tiles[w] = mtk_ctx_malloc(ctx, (size_t)(j.blocks * j.isa.mr * j.isa.cols) * sizeof(float));
        bufs[w] = mtk_ctx_malloc(ctx, (size_t)(j.cg * j.g.nphase * j.band_len) * sizeof(float));
        ok = tiles[w] && bufs[w];
    }
    if (ok) {
        /* tap t = (c, kd, kh, kw), as the weight's (I/g, kD, kH, kW) order */
        for (int64_t t = 0; t < j.taps; t++) {
            int64_t within = t % kvol;
            int64_t k[3] = { within / (p->kernel[1] * p->kernel[2]), within / p->kernel[2] % p->kernel[1],
                             within % p->kernel[2] };
            int64_t phase = 0, s = 0;
            for (int d = 0; d < 3; d++) {
                int64_t a = k[d] * p->dilation[d];
                phase = phase * j.g.phases[d] + a % j.g.phases[d];
                s = s * (d ? j.g.dims[d] : 1) + a / j.g.phases[d];
            }
            off[t] = ((t / kvol) * j.g.nphase + phase) * j.band_len + s;
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
        j.band_buf = bufs;
        mtk_parallel_tasks(images * j.bands, workers, band_task, &j);
    }
    for (int32_t w = 0; w < workers; w++) {
        mtk_ctx_mfree(ctx, tiles[w]);
        mtk_ctx_mfree(ctx, bufs[w]);
    }
    mtk_ctx_mfree(ctx, packed);
    mtk_ctx_mfree(ctx, off);
    return ok;
}
