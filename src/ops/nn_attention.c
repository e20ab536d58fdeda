/* F.scaled_dot_product_attention: query (..., L, E), key (..., S, E),
 * value (..., S, Ev) -> (..., L, Ev), contiguous, of the query's dtype.
 *
 * Validation follows torch's math path (the one its meta device and cpu
 * take): the batch dims broadcast as matmul broadcasts them (query with
 * key, then the scores with value), with bmm's words for mismatched E or
 * S; enable_gqa repeats key/value heads (dim -3) to the query's; the mask
 * (bool: keep where true; float: added) broadcasts with the scores
 * (..., L, S): on meta it may grow them (torch adds it out of place), on
 * cpu not.  is_causal masks j > i (top-left aligned).  A row with nothing
 * to attend to gives zeros, as torch's cpu.  torch's meta takes integer
 * and bool queries (float32 weights, then a mixed-dtype matmul that its
 * mm accepts and its bmm refuses); its cpu refuses them.  With L == 0 or
 * an empty value torch answers zeros of (q.shape[:-1], Ev) checking only
 * dtypes and dims (int64 for a bool query).
 *
 * The cpu kernel runs softmax(Q K^T * scale + mask) V per batch matrix
 * with OpenBLAS (float32 for float32/float16/bfloat16, float64 for
 * float64), threads over the batch.  FLOPs: FlopCounterMode counts the two
 * products of the math path, 2*B1*L*S*E + 2*B2*L*S*Ev (B1 the batch of
 * the scores, B2 of the output), which equals sdpa_flop_count. */
#include "ops/nn.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/elementwise.h"
#include "ops/nn_fast.h"
#include "ops/linalg_half.h"
#include "core/scalar.h"
#include "mtk/ops/nn.h"
#include "mtk/ops/linalg.h"

#include "ops/blas.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ARG_Q, ARG_K, ARG_V, ARG_MASK, ARG_DROPOUT, ARG_CAUSAL, ARG_SCALE, ARG_GQA };

/* Everything the meta, cpu and cost functions need. */
typedef struct sdpa_plan {
    int64_t L, S, E, Ev;
    int32_t nb;                       /* output batch dims                */
    int64_t batch[MTK_MAX_DIMS];      /* output batch shape               */
    int64_t scores_batch;             /* product of the scores' batch     */
    int64_t scores_shape[MTK_MAX_DIMS];/* the scores' batch shape         */
    int32_t n_scores_batch;
    int64_t out_batch;                /* product of the output's batch    */
    int64_t k_head_div, v_head_div;   /* GQA: key head = query head / div */
    bool empty;                       /* torch's shortcut for L == 0 or an
                                       * empty value: zeros of (q.shape[:-1],
                                       * Ev), nothing else checked          */
} sdpa_plan;

static bool batch_broadcast(mtk_op_call *call, const int64_t *a, int32_t na, const int64_t *b, int32_t nb,
                            int64_t *out, int32_t *nout)
{
    return mtk_broadcast_shapes(call->ctx, call->op->name, a, na, b, nb, out, nout);
}

/* torch's cpu flash-attention gates up to its attn_mask shape check. */
static bool cpu_flash_gates_pass(mtk_op_call *call)
{
    const mtk_tensor *q = arg_tensor(call, ARG_Q), *k = arg_tensor(call, ARG_K), *v = arg_tensor(call, ARG_V);
    if (call->args[ARG_DROPOUT].as.f > 0.0 || q->ndim != 4 || k->ndim != 4 || v->ndim != 4) return false;
    if (q->shape[0] != k->shape[0] || q->shape[0] != v->shape[0]) return false;
    int64_t hq = q->shape[1], hk = k->shape[1], hv = v->shape[1];
    if (hq == hk && hq == hv) return true;
    return arg_bool(call, ARG_GQA) && hk == hv && hk > 0 && hq % hk == 0;
}

static bool plan_sdpa(mtk_op_call *call, sdpa_plan *p)
{
    const mtk_tensor *q = arg_tensor(call, ARG_Q), *k = arg_tensor(call, ARG_K), *v = arg_tensor(call, ARG_V);
    const mtk_tensor *mask = arg_tensor(call, ARG_MASK);
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                              "%d key.dim: %d and value.dim: %d instead.",
                              (int)q->ndim, (int)k->ndim, (int)v->ndim);
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Expected query, key, and value to have the same dtype, but got query.dtype: %s "
                              "key.dtype: %s and value.dtype: %s instead.",
                              mtk_cpp_type_name(q->dtype), mtk_cpp_type_name(k->dtype), mtk_cpp_type_name(v->dtype));
    if (mask && mask->dtype != MTK_BOOL && mask->dtype != MTK_FLOAT32 && mask->dtype != q->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                              "attn_mask.dtype: %s and  query.dtype: %s instead.",
                              mtk_cpp_type_name(mask->dtype), mtk_cpp_type_name(q->dtype));
    p->empty = q->shape[q->ndim - 2] == 0 || mtk_tensor_numel(v) == 0;
    if (p->empty) {
        p->nb = q->ndim - 2;
        memcpy(p->batch, q->shape, (size_t)p->nb * sizeof *p->batch);
        p->L = q->shape[q->ndim - 2];
        p->E = q->shape[q->ndim - 1];
        p->S = 0;
        p->Ev = v->shape[v->ndim - 1];
        p->scores_batch = p->out_batch = nn_prod(p->batch, 0, p->nb);
        p->k_head_div = p->v_head_div = 1;
        return true;
    }
    if (mask && arg_bool(call, ARG_CAUSAL))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
    double dropout_p = call->args[ARG_DROPOUT].as.f;
    if (dropout_p > 1.0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "dropout probability has to be between 0 and 1, but got %g", dropout_p);
    /* torch's cpu kernels take floating types; its meta runs the math path
     * on any (checked in sdpa_meta_matmul_check) */
    if (call->device != MTK_DEVICE_META && (!mtk_dtype_is_floating(q->dtype) || mtk_dtype_is_float8(q->dtype)))
        return mtk_call_error(call, MTK_ERR_DTYPE, "expected scalar type Float but found %s",
                              mtk_dtype_cpp_name(q->dtype));
    // enable_gqa: key/value heads (dim -3) repeat_interleave'd to the query's
    int64_t k_shape[MTK_MAX_DIMS], v_shape[MTK_MAX_DIMS];
    memcpy(k_shape, k->shape, (size_t)k->ndim * sizeof *k_shape);
    memcpy(v_shape, v->shape, (size_t)v->ndim * sizeof *v_shape);
    p->k_head_div = p->v_head_div = 1;
    if (arg_bool(call, ARG_GQA)) {
        const mtk_tensor *t[3] = { q, k, v };
        for (int32_t i = 0; i < 3; i++)
            if (t[i]->ndim < 3)
                return mtk_call_error(call, MTK_ERR_INDEX,
                                      "Dimension out of range (expected to be in range of [-%d, %d], but got -3)",
                                      (int)t[i]->ndim, (int)t[i]->ndim - 1);
        int64_t hq = q->shape[q->ndim - 3], hk = k->shape[k->ndim - 3], hv = v->shape[v->ndim - 3];
        bool all_equal = hq == hk && hk == hv;
        if (!all_equal && !(hk && hv && hq % hk == 0 && hq % hv == 0))
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "Number of heads in key and value must divide the number of heads in query "
                                  "(query %lld, key %lld, value %lld heads)",
                                  (long long)hq, (long long)hk, (long long)hv);
        if (!all_equal) {
            p->k_head_div = hq / hk;
            p->v_head_div = hq / hv;
            k_shape[k->ndim - 3] = hq;
            v_shape[v->ndim - 3] = hq;
        }
    }
    // scores = q @ k^T: (batch(q, k), L, S); out = scores @ v
    int64_t sb[MTK_MAX_DIMS];
    int32_t nsb;
    if (!batch_broadcast(call, q->shape, q->ndim - 2, k_shape, k->ndim - 2, sb, &nsb)) return false;
    p->L = q->shape[q->ndim - 2];
    p->E = q->shape[q->ndim - 1];
    p->S = k_shape[k->ndim - 2];
    p->scores_batch = nn_prod(sb, 0, nsb);
    memcpy(p->scores_shape, sb, (size_t)nsb * sizeof *sb);
    p->n_scores_batch = nsb;
    if (k_shape[k->ndim - 1] != p->E)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: "
                              "[%lld, %lld].",
                              (long long)p->scores_batch, (long long)p->E, (long long)p->scores_batch,
                              (long long)k_shape[k->ndim - 1]);
    if (!batch_broadcast(call, sb, nsb, v_shape, v->ndim - 2, p->batch, &p->nb)) return false;
    p->out_batch = nn_prod(p->batch, 0, p->nb);
    if (v_shape[v->ndim - 2] != p->S)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: "
                              "[%lld, %lld].",
                              (long long)p->out_batch, (long long)p->S, (long long)p->out_batch,
                              (long long)v_shape[v->ndim - 2]);
    p->Ev = v_shape[v->ndim - 1];
    if (p->nb + 2 > MTK_MAX_DIMS) return mtk_call_error(call, MTK_ERR_SHAPE, "too many dimensions");
    if (mask) {
        // the mask broadcasts with the scores (batch..., L, S)
        int64_t target[MTK_MAX_DIMS], grown[MTK_MAX_DIMS];
        memcpy(target, p->batch, (size_t)p->nb * sizeof *target);
        target[p->nb] = p->L;
        target[p->nb + 1] = p->S;
        int32_t nt = p->nb + 2, ng = mask->ndim > nt ? mask->ndim : nt;
        char ms[200], ts[200];
        for (int32_t i = 1; i <= ng; i++) {
            int64_t m = i <= mask->ndim ? mask->shape[mask->ndim - i] : 1, t = i <= nt ? target[nt - i] : 1;
            if (m != t && m != 1 && t != 1)
                return mtk_call_error(call, MTK_ERR_SHAPE,
                                      "Attempting to broadcast a dimension of length %lld at %d! Mismatching argument "
                                      "at index 1 had torch.Size(%s); but expected shape should be broadcastable to %s",
                                      (long long)m, -i, mtk_shape_list_str(mask->shape, mask->ndim, ms, sizeof ms),
                                      mtk_shape_list_str(target, nt, ts, sizeof ts));
            grown[ng - i] = t == 1 ? m : t;
        }
        bool grows = ng != nt || memcmp(grown, target, (size_t)nt * sizeof *grown) != 0;
        if (call->device != MTK_DEVICE_META) {
            /* torch's cpu asks the mask's size(-2) when its flash kernel's
             * earlier gates pass (no dropout, 4-D inputs of one batch
             * size, heads equal or grouped with enable_gqa) */
            if (mask->ndim < 2 && cpu_flash_gates_pass(call))
                return mtk_call_error(call, MTK_ERR_INDEX,
                                      "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
            if (grows)
                return mtk_call_error(call, MTK_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                                      mtk_shape_list_str(target, nt, ts, sizeof ts),
                                      mtk_shape_list_str(grown, ng, ms, sizeof ms));
        } else if (grows) {
            /* torch's meta lets the mask's batch dims grow the output */
            if (ng > MTK_MAX_DIMS) return mtk_call_error(call, MTK_ERR_SHAPE, "too many dimensions");
            p->nb = ng - 2;
            memcpy(p->batch, grown, (size_t)p->nb * sizeof *grown);
            p->out_batch = nn_prod(p->batch, 0, p->nb);
        }
    }
    return true;
}

/* The last product of torch's math path, attn @ value, replayed on meta
 * stand-ins: attn = scores (batch(q, k)..., L, S) + mask, out of place on
 * meta so the mask may grow any of its dims, then matmul with the value
 * (its heads repeated for GQA).  For an integer or bool query the weights
 * are float32 (query * scale promotes) while the value keeps its dtype: a
 * mix torch's meta mm accepts and its bmm refuses.  The product (its
 * shape is the output's), or NULL with the error torch gives. */
static mtk_tensor *sdpa_meta_product(mtk_op_call *call, const sdpa_plan *p)
{
    mtk_ctx *ctx = call->ctx;
    const mtk_tensor *q = arg_tensor(call, ARG_Q), *v = arg_tensor(call, ARG_V), *mask = arg_tensor(call, ARG_MASK);
    int64_t attn_shape[MTK_MAX_DIMS], grown[MTK_MAX_DIMS];
    int32_t na = p->n_scores_batch + 2, ng = na;
    memcpy(attn_shape, p->scores_shape, (size_t)p->n_scores_batch * sizeof *attn_shape);
    attn_shape[na - 2] = p->L;
    attn_shape[na - 1] = p->S;
    if (mask) {
        if (!mtk_broadcast_shapes(ctx, call->op->name, attn_shape, na, mask->shape, mask->ndim, grown, &ng))
            return NULL;
        memcpy(attn_shape, grown, (size_t)ng * sizeof *grown);
        na = ng;
    }
    bool floating = mtk_dtype_is_floating(q->dtype);
    mtk_dtype value_dtype = floating ? MTK_FLOAT32 : v->dtype;
    mtk_tensor *attn = mtk_tensor_new(ctx, MTK_FLOAT32, attn_shape, na, NULL, MTK_DEVICE_META);
    mtk_tensor *value;
    if (p->v_head_div > 1) {
        /* repeat_interleave'd heads: a new contiguous tensor */
        int64_t shape[MTK_MAX_DIMS];
        memcpy(shape, v->shape, (size_t)v->ndim * sizeof *shape);
        shape[v->ndim - 3] *= p->v_head_div;
        value = mtk_tensor_new(ctx, value_dtype, shape, v->ndim, NULL, MTK_DEVICE_META);
    } else {
        value = nn_meta_standin(ctx, v, value_dtype);
    }
    return attn && value ? mtk_matmul(ctx, attn, value) : NULL;
}

bool mtk_nn_sdpa_meta(mtk_op_call *call)
{
    sdpa_plan p;
    if (!plan_sdpa(call, &p)) return false;
    const mtk_tensor *q = arg_tensor(call, ARG_Q);
    if (p.empty) {
        /* torch's shortcut: zeros(q dtype) + (q.sum() + k.sum() + v.sum()) * 0,
         * which a bool query promotes to int64 */
        int64_t shape[MTK_MAX_DIMS];
        memcpy(shape, p.batch, (size_t)p.nb * sizeof *shape);
        shape[p.nb] = p.L;
        shape[p.nb + 1] = p.Ev;
        return nn_set_output(call, q->dtype == MTK_BOOL ? MTK_INT64 : q->dtype, shape, p.nb + 2, NULL);
    }
    mtk_tensor *product = sdpa_meta_product(call, &p);
    if (!product) return false;
    return nn_set_output(call, q->dtype, product->shape, product->ndim, NULL);
}

mtk_op_cost mtk_nn_sdpa_cost(const mtk_op_call *call)
{
    mtk_op_cost cost = { 0, 0 };
    sdpa_plan p;
    mtk_ctx *ctx = call->ctx;
    if (mtk_ctx_status(ctx) != MTK_OK) return cost;
    if (!plan_sdpa((mtk_op_call *)call, &p)) {
        mtk_ctx_clear_error(ctx);
        return cost;
    }
    if (p.empty) return cost; /* zeros and sums: nothing FlopCounterMode counts */
    cost.flops = 2 * p.scores_batch * p.L * p.S * p.E + 2 * p.out_batch * p.L * p.S * p.Ev;
    return cost;
}

/* ------------------------------------------------------------ the kernel */

/* One operand's element strides (in elements) over the output's batch dims
 * (0 where broadcast) and its two matrix dims; head_div divides the index
 * of the last batch dim (GQA). */
typedef struct operand {
    const char *base;
    mtk_dtype dtype;
    int64_t batch_stride[MTK_MAX_DIMS];
    int64_t row_stride, col_stride;
    int64_t head_div;
} operand;

static void describe_operand(operand *o, const mtk_tensor *t, const sdpa_plan *p, int64_t head_div, bool matrix)
{
    o->base = mtk_tensor_data(t);
    o->dtype = t->dtype;
    o->head_div = head_div;
    int32_t tb = matrix ? t->ndim - 2 : t->ndim - 2; /* batch dims of t */
    for (int32_t i = 0; i < p->nb; i++) {
        int32_t d = i - (p->nb - tb);
        o->batch_stride[i] = d >= 0 && t->shape[d] != 1 ? t->stride[d] : 0;
    }
    o->row_stride = t->shape[t->ndim - 2] != 1 ? t->stride[t->ndim - 2] : 0;
    o->col_stride = t->shape[t->ndim - 1] != 1 ? t->stride[t->ndim - 1] : 0;
}

/* Element offset of batch index `bi` (row-major over the output batch). */
static int64_t batch_offset(const operand *o, const sdpa_plan *p, int64_t bi)
{
    int64_t off = 0;
    for (int32_t d = p->nb - 1; d >= 0; d--) {
        int64_t idx = bi % p->batch[d];
        bi /= p->batch[d];
        if (d == p->nb - 1 && o->head_div > 1) idx /= o->head_div;
        off += idx * o->batch_stride[d];
    }
    return off;
}

/* Copies rows x cols of `o` at batch `bi` into dst (row-major, double or
 * float); float32 rows of unit column stride are copied whole, bfloat16
 * and float16 ones widened in one tight pass (a decode step's cache). */
static void gather(void *dst, bool f64, const operand *o, const sdpa_plan *p, int64_t bi, int64_t rows, int64_t cols)
{
    size_t es = mtk_dtype_size(o->dtype);
    const char *base = o->base + batch_offset(o, p, bi) * (int64_t)es;
    bool unit_cols = o->col_stride == 1 || cols == 1;
    if (!f64 && o->dtype == MTK_FLOAT32 && unit_cols) {
        if (o->row_stride == cols || rows == 1) {
            memcpy(dst, base, (size_t)(rows * cols) * sizeof(float));
        } else {
            for (int64_t r = 0; r < rows; r++)
                memcpy((float *)dst + r * cols, (const float *)base + r * o->row_stride, (size_t)cols * sizeof(float));
        }
        return;
    }
    if (!f64 && (o->dtype == MTK_BFLOAT16 || o->dtype == MTK_FLOAT16) && unit_cols) {
        for (int64_t r = 0; r < rows; r++)
            linalg_half_widen((float *)dst + r * cols, base + r * o->row_stride * (int64_t)es, o->dtype, 1, cols, cols);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double v = mtk_load_f64(o->dtype, base + (r * o->row_stride + c * o->col_stride) * (int64_t)es);
            if (f64) ((double *)dst)[r * cols + c] = v;
            else ((float *)dst)[r * cols + c] = (float)v;
        }
}

typedef struct sdpa_job {
    const sdpa_plan *plan;
    operand q, k, v, mask;
    bool has_mask, mask_bool, causal, f64;
    double scale, dropout_p;
    uint64_t seed;
    mtk_tensor *out;
    bool failed;
} sdpa_job;

static double uniform(uint64_t seed, uint64_t index)
{
    uint64_t z = seed + (index + 1) * UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* scores (L x S, double) -> probabilities in place: mask, softmax,
 * dropout.  Rows with nothing to attend to become zeros. */
static void attention_probs(const sdpa_job *job, int64_t bi, double *scores)
{
    const sdpa_plan *p = job->plan;
    size_t mes = job->has_mask ? mtk_dtype_size(job->mask.dtype) : 0;
    const char *mbase = job->has_mask ? job->mask.base + batch_offset(&job->mask, p, bi) * (int64_t)mes : NULL;
    for (int64_t i = 0; i < p->L; i++) {
        double *row = scores + i * p->S;
        double max = -INFINITY;
        for (int64_t j = 0; j < p->S; j++) {
            if (job->causal && j > i) row[j] = -INFINITY;
            if (mbase) {
                const char *m = mbase + (i * job->mask.row_stride + j * job->mask.col_stride) * (int64_t)mes;
                if (job->mask_bool) {
                    if (!*(const bool *)m) row[j] = -INFINITY;
                } else {
                    row[j] += mtk_load_f64(job->mask.dtype, m);
                }
            }
            if (row[j] > max || isnan(row[j])) max = row[j];
        }
        if (max == -INFINITY) {
            for (int64_t j = 0; j < p->S; j++) row[j] = 0.0;
            continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < p->S; j++) sum += row[j] = exp(row[j] - max);
        for (int64_t j = 0; j < p->S; j++) row[j] /= sum;
        if (job->dropout_p > 0) {
            uint64_t first = (uint64_t)((bi * p->L + i) * p->S);
            for (int64_t j = 0; j < p->S; j++) {
                bool keep = job->dropout_p < 1.0 && uniform(job->seed, first + (uint64_t)j) >= job->dropout_p;
                row[j] = keep ? row[j] / (1.0 - job->dropout_p) : 0.0;
            }
        }
    }
}

/* The float32 path without dropout: scores (L x S, float) -> probs
 * (L x S, float): mask, then the vectorised float softmax of nn_fast.c
 * (under 2 ulp per exp; the double path's rounding differs by about one
 * float ulp).  Rows with nothing to attend to become zeros. */
static void attention_probs_f32(const sdpa_job *job, int64_t bi, float *scores, float *probs)
{
    const sdpa_plan *p = job->plan;
    size_t mes = job->has_mask ? mtk_dtype_size(job->mask.dtype) : 0;
    const char *mbase = job->has_mask ? job->mask.base + batch_offset(&job->mask, p, bi) * (int64_t)mes : NULL;
    for (int64_t i = 0; i < p->L; i++) {
        float *row = scores + i * p->S, *out = probs + i * p->S;
        for (int64_t j = 0; (job->causal || mbase) && j < p->S; j++) {
            if (job->causal && j > i) row[j] = -INFINITY;
            if (mbase) {
                const char *m = mbase + (i * job->mask.row_stride + j * job->mask.col_stride) * (int64_t)mes;
                if (job->mask_bool) {
                    if (!*(const bool *)m) row[j] = -INFINITY;
                } else {
                    row[j] = (float)((double)row[j] + mtk_load_f64(job->mask.dtype, m));
                }
            }
        }
        bool any = false; /* a score other than -inf (NaN counts, as in the double path) */
        for (int64_t j = 0; j < p->S; j++) any |= row[j] != -INFINITY;
        if (!any) memset(out, 0, (size_t)p->S * sizeof(float));
        else nn_fast_softmax_row_f32(row, out, p->S);
    }
}

static void sdpa_range(int64_t begin, int64_t end, void *user)
{
    sdpa_job *job = user;
    const sdpa_plan *p = job->plan;
    int64_t L = p->L, S = p->S, E = p->E, Ev = p->Ev;
    size_t cs = job->f64 ? sizeof(double) : sizeof(float);
    size_t qn = (size_t)(L * E), kn = (size_t)(S * E), vn = (size_t)(S * Ev), sn = (size_t)(L * S), on = (size_t)(L * Ev);
    char *scratch = mtk_ctx_malloc(job->out->ctx, (qn + kn + vn + sn + on) * cs + sn * sizeof(double) + 64);
    if (!scratch) {
        job->failed = true;
        return;
    }
    // the double buffer first: the float ones after it keep their alignment
    double *probs = (double *)scratch;
    void *qb = scratch + sn * sizeof(double), *kb = (char *)qb + qn * cs, *vb = (char *)kb + kn * cs;
    void *sb = (char *)vb + vn * cs, *ob = (char *)sb + sn * cs;
    size_t out_es = mtk_dtype_size(job->out->dtype);
    char *out_base = mtk_tensor_data(job->out);
    for (int64_t bi = begin; bi < end; bi++) {
        gather(qb, job->f64, &job->q, p, bi, L, E);
        gather(kb, job->f64, &job->k, p, bi, S, E);
        gather(vb, job->f64, &job->v, p, bi, S, Ev);
        // scores (L, S) = Q (L, E) @ K^T (E, S) * scale
        if (E > 0 && L > 0 && S > 0) {
            if (job->f64)
                ops_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)L, (int)S, (int)E, job->scale, qb, (int)E,
                            kb, (int)E, 0.0, sb, (int)S);
            else
                ops_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)L, (int)S, (int)E, (float)job->scale, qb,
                            (int)E, kb, (int)E, 0.0f, sb, (int)S);
        }
        const void *pb = sb; /* the probabilities */
        if (!job->f64 && job->dropout_p == 0 && E > 0) {
            attention_probs_f32(job, bi, sb, (float *)probs);
            pb = probs;
        } else {
            for (size_t i = 0; i < sn; i++)
                probs[i] = E == 0 ? 0.0 : job->f64 ? ((double *)sb)[i] : ((float *)sb)[i];
            attention_probs(job, bi, probs);
            for (size_t i = 0; i < sn; i++) {
                if (job->f64) ((double *)sb)[i] = probs[i];
                else ((float *)sb)[i] = (float)probs[i];
            }
        }
        // out (L, Ev) = P (L, S) @ V (S, Ev)
        if (S > 0 && L > 0 && Ev > 0) {
            if (job->f64)
                ops_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)L, (int)Ev, (int)S, 1.0, pb, (int)S, vb,
                            (int)Ev, 0.0, ob, (int)Ev);
            else
                ops_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)L, (int)Ev, (int)S, 1.0f, pb, (int)S, vb,
                            (int)Ev, 0.0f, ob, (int)Ev);
        } else {
            memset(ob, 0, on * cs);
        }
        char *dst = out_base + bi * L * Ev * (int64_t)out_es; /* the output is contiguous */
        if (!job->f64 && job->out->dtype == MTK_FLOAT32)
            memcpy(dst, ob, on * sizeof(float));
        else
            for (size_t i = 0; i < on; i++)
                mtk_store_f64(job->out->dtype, dst + i * out_es, job->f64 ? ((double *)ob)[i] : ((float *)ob)[i]);
    }
    mtk_ctx_mfree(job->out->ctx, scratch);
}

bool mtk_nn_sdpa_cpu(mtk_op_call *call)
{
    sdpa_plan p;
    if (!plan_sdpa(call, &p)) return false;
    mtk_tensor *out = call->out[0];
    if (mtk_tensor_numel(out) == 0) return true;
    if (!ops_blas_ready(call->ctx)) return false;
    if (p.empty) {
        /* torch's shortcut: zeros */
        memset(mtk_tensor_data(out), 0, (size_t)mtk_tensor_numel(out) * mtk_dtype_size(out->dtype));
        return true;
    }
    if (p.L > INT_MAX || p.S > INT_MAX || p.E > INT_MAX || p.Ev > INT_MAX)
        return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED, "matrix sizes beyond INT_MAX are not supported");
    const mtk_tensor *q = arg_tensor(call, ARG_Q), *mask = arg_tensor(call, ARG_MASK);
    sdpa_job job;
    memset(&job, 0, sizeof job);
    job.plan = &p;
    describe_operand(&job.q, q, &p, 1, true);
    describe_operand(&job.k, arg_tensor(call, ARG_K), &p, p.k_head_div, true);
    describe_operand(&job.v, arg_tensor(call, ARG_V), &p, p.v_head_div, true);
    if (mask) {
        // the mask's dims align with (batch..., L, S) from the right
        mtk_tensor m = *mask;
        if (m.ndim < 2) {
            int32_t add = 2 - m.ndim;
            memmove(m.shape + add, m.shape, (size_t)m.ndim * sizeof *m.shape);
            memmove(m.stride + add, m.stride, (size_t)m.ndim * sizeof *m.stride);
            for (int32_t i = 0; i < add; i++) m.shape[i] = 1, m.stride[i] = 0;
            m.ndim = 2;
        }
        describe_operand(&job.mask, &m, &p, 1, true);
        job.has_mask = true;
        job.mask_bool = mask->dtype == MTK_BOOL;
    }
    job.causal = arg_bool(call, ARG_CAUSAL);
    job.f64 = q->dtype == MTK_FLOAT64;
    job.scale = arg_is_none(call, ARG_SCALE) ? 1.0 / sqrt((double)p.E) : call->args[ARG_SCALE].as.f;
    job.dropout_p = call->args[ARG_DROPOUT].as.f;
    if (job.dropout_p > 0) job.seed = mtk_ctx_next_seed(call->ctx);
    job.out = out;
    /* each worker's (batch, head) products on one OpenBLAS thread */
    ops_blas_single_begin();
    nn_parallel(p.out_batch, 1, sdpa_range, &job);
    ops_blas_single_end();
    if (job.failed) return mtk_call_error(call, MTK_ERR_OUT_OF_MEMORY, "out of memory for attention scratch");
    return true;
}

/* ------------------------------------------------------------- typed API */

mtk_tensor *mtk_scaled_dot_product_attention(mtk_ctx *ctx, mtk_tensor *query, mtk_tensor *key, mtk_tensor *value,
                                             mtk_tensor *attn_mask, double dropout_p, bool is_causal, double scale,
                                             bool enable_gqa)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_SCALED_DOT_PRODUCT_ATTENTION));
    call.args[ARG_Q] = mtk_value_tensor(query);
    call.args[ARG_K] = mtk_value_tensor(key);
    call.args[ARG_V] = mtk_value_tensor(value);
    call.args[ARG_MASK] = attn_mask ? mtk_value_tensor(attn_mask) : mtk_value_none();
    call.args[ARG_DROPOUT] = mtk_value_float(dropout_p);
    call.args[ARG_CAUSAL] = mtk_value_bool(is_causal);
    call.args[ARG_SCALE] = isnan(scale) ? mtk_value_none() : mtk_value_float(scale);
    call.args[ARG_GQA] = mtk_value_bool(enable_gqa);
    return mtk_op_run_tensor(&call);
}
