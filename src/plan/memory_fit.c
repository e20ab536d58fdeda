/* What fits: the largest batch or context whose peak is within a budget.
 * The peak grows with both (monotone; linear in the batch, linear or
 * quadratic in the sequence), so a secant step between the largest size
 * known to fit and the smallest known not to lands near the answer in a
 * few plans; bisection takes over when a secant step stalls. */
#include "plan/memory_internal.h"

typedef struct probe {
    mtk_ctx *ctx;
    const char *model;
    mtk_memory_options o;
    bool context;
    int32_t evaluations;
} probe;

/* The plan at size x, its peak plus overhead in *bytes. */
static mtk_memory_plan *plan_at(probe *p, int64_t x, int64_t *bytes)
{
    if (p->context) p->o.seq = x;
    else p->o.batch = x;
    p->evaluations++;
    mtk_memory_plan *plan = mtk_memory_plan_model(p->ctx, p->model, &p->o);
    if (plan) *bytes = plan->peak.peak_bytes + plan->overhead_bytes;
    return plan;
}

/* The next size to try between a fitting lo and a failing hi (hi 0:
 * none yet), from the secant through (a, a_bytes) and (lo, lo_bytes). */
static int64_t next_size(int64_t a, int64_t a_bytes, int64_t lo, int64_t lo_bytes, int64_t hi, int64_t budget,
                         bool bisect)
{
    double slope = lo > a ? (double)(lo_bytes - a_bytes) / (double)(lo - a) : 0.0;
    int64_t next = slope > 0 ? lo + (int64_t)((double)(budget - lo_bytes) / slope) : 2 * lo;
    if (!hi) {
        if (next <= lo) next = lo + 1;
        if (next > 4 * lo + 16) next = 4 * lo + 16; /* the peak may grow faster than the secant */
        return next;
    }
    if (bisect || next <= lo || next >= hi) next = lo + (hi - lo) / 2;
    return next > lo ? next : lo + 1;
}

bool mtk_memory_fit_model(mtk_ctx *ctx, const char *model, const mtk_memory_options *options, int64_t budget,
                          bool context, int64_t limit, mtk_memory_fit *out)
{
    if (!ctx) return false;
    if (!model || !options || !out)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: NULL model, options or result");
    if (budget <= 0) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: --fit needs a positive budget");
    if (limit <= 0) limit = context ? (int64_t)1 << 24 : (int64_t)1 << 20;
    probe p = { .ctx = ctx, .model = model, .o = *options, .context = context };
    *out = (mtk_memory_fit){ .context = context };
    int64_t bytes;
    mtk_memory_plan *plan = plan_at(&p, 1, &bytes);
    if (!plan) return false;
    if (bytes > budget) {
        out->peak_bytes_next = bytes;
        out->evaluations = p.evaluations;
        return true;
    }
    /* lo fits, hi (0: none yet) does not; a is the fitting point before lo */
    int64_t a = 0, a_bytes = 0, lo = 1, lo_bytes = bytes, hi = 0, hi_bytes = 0;
    mtk_memory_plan *lo_plan = plan;
    bool bisect = false;
    while ((hi == 0 && lo < limit) || (hi != 0 && hi > lo + 1)) {
        int64_t x = next_size(a, a_bytes, lo, lo_bytes, hi, budget, bisect);
        if (x > limit) x = limit;
        plan = plan_at(&p, x, &bytes);
        if (!plan) return false;
        if (bytes <= budget) {
            a = lo, a_bytes = lo_bytes;
            lo = x, lo_bytes = bytes, lo_plan = plan;
        } else {
            hi = x, hi_bytes = bytes;
        }
        bisect = hi != 0 && !bisect; /* secant and bisection by turns once bracketed */
    }
    out->max = lo;
    out->peak_bytes = lo_bytes;
    out->plan = lo_plan;
    if (hi) out->peak_bytes_next = hi_bytes;
    else if (!plan_at(&p, lo + 1, &out->peak_bytes_next)) return false;
    out->evaluations = p.evaluations;
    return true;
}
