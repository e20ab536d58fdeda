/* torch.sum(t) over a whole floating tensor as torch's cpu kernel adds
 * it up, so that a loss that ends in a sum rounds exactly like torch's
 * (a weighted mean whose weights cancel to exactly 0 must give inf).
 *
 * The order: TensorIterator sorts the dims by stride (smallest first;
 * broadcast dims keep their place, equal strides put the smaller size
 * first) and merges dims that are contiguous in one another; the first
 * two dims form the 2-D loop, the rest are walked around it (dim 2
 * fastest).  Each 2-D block is summed by the cascade sum of
 * SumKernel.cpp: rows contiguous in memory go through 32-byte vectors
 * (lanes summed apart, four vectors at a time, in a cascade of levels of
 * at least 16 steps, the tail elements first, then the lanes in order),
 * blocks contiguous along the second dim sum 4 x lanes rows at a time,
 * and the rest is summed by rows (or 4 rows at a time) with the same
 * cascade.  float64 adds in double, float32 in float, float16/bfloat16 in
 * float too, rounded to their dtype once at the end (their vector loads
 * fold 16 elements into 8 float lanes: bfloat16 x[l] + x[l + 8], float16
 * x[2l] + x[2l + 1]).  Tensors of 32768 elements or more are split across threads by
 * torch; that split is not followed (the order stays the serial one). */
#include "ops/nn.h"
#include "ops/nn_loss.h"

#include <string.h>

#define LEVELS 4
#define ILP 4
#define MAX_ROWS 32 /* 4 vectors of 8 float lanes */

typedef struct sum_ctx {
    mtk_dtype acc;   /* float64 or float32 */
    const double *mem;
} sum_ctx;

static double add(const sum_ctx *s, double a, double b)
{
    double r = a + b;
    return s->acc == MTK_FLOAT32 ? (double)(float)r : r;
}

/* A loader: element (i, k) of a view of memory.  `pair` > 0: the value
 * is two elements of a reduced dtype added in float (a vector load of
 * float16/bfloat16 that folds 16 elements into 8 float lanes). */
typedef struct loader {
    int64_t base, row_stride, col_stride, pair;
} loader;

static double load(const sum_ctx *s, const loader *l, int64_t i, int64_t k)
{
    int64_t at = l->base + i * l->row_stride + k * l->col_stride;
    if (!l->pair) return s->mem[at];
    return add(s, s->mem[at], s->mem[at + l->pair]);
}

static int64_t ceil_log2(int64_t x)
{
    int64_t r = 0;
    while (((int64_t)1 << r) < x) r++;
    return r;
}

/* multi_row_sum: `nrows` sums at once, row i of element k at (i, k) */
static void multi_row_sum(const sum_ctx *s, const loader *l, int64_t nrows, int64_t size, double *out)
{
    double acc[LEVELS][MAX_ROWS];
    memset(acc, 0, sizeof acc);
    int64_t power = ceil_log2(size) / LEVELS;
    if (power < 4) power = 4;
    int64_t step = (int64_t)1 << power, mask = step - 1, i = 0;
    while (i + step <= size) {
        for (int64_t j = 0; j < step; j++, i++)
            for (int64_t k = 0; k < nrows; k++) acc[0][k] = add(s, acc[0][k], load(s, l, i, k));
        for (int64_t j = 1; j < LEVELS; j++) {
            for (int64_t k = 0; k < nrows; k++) {
                acc[j][k] = add(s, acc[j][k], acc[j - 1][k]);
                acc[j - 1][k] = 0;
            }
            if ((i & (mask << (j * power))) != 0) break;
        }
    }
    for (; i < size; i++)
        for (int64_t k = 0; k < nrows; k++) acc[0][k] = add(s, acc[0][k], load(s, l, i, k));
    for (int64_t j = 1; j < LEVELS; j++)
        for (int64_t k = 0; k < nrows; k++) acc[0][k] = add(s, acc[0][k], acc[j][k]);
    memcpy(out, acc[0], (size_t)nrows * sizeof *out);
}

/* row_sum: `size` elements at l(i, 0), four interleaved partial sums */
static double row_sum(const sum_ctx *s, const loader *l, int64_t size)
{
    loader four = *l;
    four.row_stride = l->row_stride * ILP;
    four.col_stride = l->row_stride;
    double partial[ILP];
    multi_row_sum(s, &four, ILP, size / ILP, partial);
    for (int64_t i = size / ILP * ILP; i < size; i++) partial[0] = add(s, partial[0], load(s, l, i, 0));
    for (int64_t k = 1; k < ILP; k++) partial[0] = add(s, partial[0], partial[k]);
    return partial[0];
}

/* TensorIterator's order for a full reduction: dims sorted by stride,
 * then coalesced; returns the dim count (sizes/strides fastest first) */
static int32_t iteration_dims(const int64_t *shape, const int64_t *stride, int32_t ndim, int64_t *sz, int64_t *st)
{
    int32_t perm[MTK_MAX_DIMS];
    for (int32_t i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
    for (int32_t i = 1; i < ndim; i++) {
        int32_t d1 = i;
        for (int32_t d0 = i - 1; d0 >= 0; d0--) {
            int64_t a = stride[perm[d0]], b = stride[perm[d1]];
            int cmp = 0;
            if (a != 0 && b != 0) cmp = a < b ? -1 : a > b ? 1 : shape[perm[d0]] > shape[perm[d1]] ? 1 : 0;
            if (cmp > 0) {
                int32_t t = perm[d0];
                perm[d0] = perm[d1], perm[d1] = t;
                d1 = d0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
    if (ndim == 0) {
        sz[0] = 1, st[0] = 0;
        return 1;
    }
    for (int32_t i = 0; i < ndim; i++) sz[i] = shape[perm[i]], st[i] = stride[perm[i]];
    int32_t prev = 0;
    for (int32_t d = 1; d < ndim; d++) {
        if (sz[prev] == 1 || sz[d] == 1 || sz[prev] * st[prev] == st[d]) {
            if (sz[prev] == 1) st[prev] = st[d];
            sz[prev] *= sz[d];
        } else {
            prev++;
            sz[prev] = sz[d], st[prev] = st[d];
        }
    }
    return prev + 1;
}

/* the 2-D loop of cascade_sum over one block at `base`; adds each row's
 * sum into *out (in the accumulation dtype) */
static void sum_block(const sum_ctx *s, mtk_dtype dtype, int64_t base, int64_t size0, int64_t size1, int64_t s0,
                      int64_t s1, double *out)
{
    bool reduced = dtype == MTK_FLOAT16 || dtype == MTK_BFLOAT16;
    int64_t lanes = dtype == MTK_FLOAT64 ? 4 : 8;   /* float lanes of a 32-byte vector   */
    int64_t per_vec = reduced ? 16 : lanes;          /* input elements per vector load    */
#define STORE(v) (*out = add(s, *out, (v)))
    if (s0 == 1 && size0 >= per_vec) {
        /* contiguous rows: vectors of lanes, then the tail, then the lanes */
        int64_t vectors = size0 / per_vec;
        for (int64_t j = 0; j < size1; j++) {
            int64_t row = base + j * s1;
            double lane_sum[8];
            for (int64_t lane = 0; lane < lanes; lane++) {
                /* bfloat16 folds x[l] + x[l + 8], float16 x[2l] + x[2l + 1] */
                loader l = { row + (dtype == MTK_FLOAT16 ? 2 * lane : lane), per_vec, 0,
                             reduced ? (dtype == MTK_FLOAT16 ? 1 : 8) : 0 };
                lane_sum[lane] = row_sum(s, &l, vectors);
            }
            double final = 0;
            for (int64_t k = vectors * per_vec; k < size0; k++) final = add(s, final, s->mem[row + k]);
            for (int64_t lane = 0; lane < lanes; lane++) final = add(s, final, lane_sum[lane]);
            STORE(final);
        }
        return;
    }
    if (s1 == 1 && size1 >= per_vec) {
        /* contiguous along the second dim: 4 vectors of lanes at a time */
        int64_t j = 0;
        for (; j + ILP * lanes <= size1; j += ILP * lanes) {
            double sums[MAX_ROWS];
            for (int64_t lane = 0; lane < lanes; lane++) {
                loader l = { base + j + lane, s0, lanes, 0 };
                double r[ILP];
                multi_row_sum(s, &l, ILP, size0, r);
                for (int64_t k = 0; k < ILP; k++) sums[k * lanes + lane] = r[k];
            }
            for (int64_t k = 0; k < ILP * lanes; k++) STORE(sums[k]);
        }
        for (; j + lanes <= size1; j += lanes)
            for (int64_t lane = 0; lane < lanes; lane++) {
                loader l = { base + j + lane, s0, 0, 0 };
                STORE(row_sum(s, &l, size0));
            }
        for (; j < size1; j++) {
            loader l = { base + j, s0, 0, 0 };
            STORE(row_sum(s, &l, size0));
        }
        return;
    }
    if (s0 < s1) {
        for (int64_t j = 0; j < size1; j++) {
            loader l = { base + j * s1, s0, 0, 0 };
            STORE(row_sum(s, &l, size0));
        }
        return;
    }
    int64_t j = 0;
    for (; j + ILP - 1 < size1; j += ILP) {
        loader l = { base + j * s1, s0, s1, 0 };
        double r[ILP];
        multi_row_sum(s, &l, ILP, size0, r);
        for (int64_t k = 0; k < ILP; k++) STORE(r[k]);
    }
    for (; j < size1; j++) {
        loader l = { base + j * s1, s0, 0, 0 };
        STORE(row_sum(s, &l, size0));
    }
#undef STORE
}

bool nn_torch_sum(mtk_ctx *ctx, const double *values, const int64_t *shape, const int64_t *stride, int32_t ndim,
                  mtk_dtype dtype, double *out)
{
    *out = 0;
    int64_t n = 1, span = 1;
    for (int32_t i = 0; i < ndim; i++) {
        n *= shape[i];
        if (shape[i] > 1) span += (shape[i] - 1) * stride[i];
    }
    if (n == 0) return true;
    /* the values where the tensor keeps them */
    double *mem = nn_alloc(ctx, span);
    if (!mem) return false;
    int64_t idx[MTK_MAX_DIMS] = { 0 };
    for (int64_t e = 0; e < n; e++) {
        int64_t at = 0;
        for (int32_t i = 0; i < ndim; i++) at += idx[i] * stride[i];
        mem[at] = values[e];
        for (int32_t i = ndim - 1; i >= 0; i--) {
            if (++idx[i] < shape[i]) break;
            idx[i] = 0;
        }
    }
    int64_t sz[MTK_MAX_DIMS], st[MTK_MAX_DIMS];
    int32_t nd = iteration_dims(shape, stride, ndim, sz, st);
    sum_ctx s = { dtype == MTK_FLOAT64 ? MTK_FLOAT64 : MTK_FLOAT32, mem };
    int64_t size0 = sz[0], size1 = nd > 1 ? sz[1] : 1, s0 = st[0], s1 = nd > 1 ? st[1] : 0;
    int64_t outer = 1;
    for (int32_t i = 2; i < nd; i++) outer *= sz[i];
    int64_t oidx[MTK_MAX_DIMS] = { 0 };
    for (int64_t o = 0; o < outer; o++) {
        int64_t base = 0;
        for (int32_t i = 2; i < nd; i++) base += oidx[i] * st[i];
        sum_block(&s, dtype, base, size0, size1, s0, s1, out);
        for (int32_t i = 2; i < nd; i++) {
            if (++oidx[i] < sz[i]) break;
            oidx[i] = 0;
        }
    }
    *out = nn_rounded(dtype, *out);
    mtk_ctx_mfree(ctx, mem);
    return true;
}
