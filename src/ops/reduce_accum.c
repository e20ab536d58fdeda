/* The accumulators of the reduction engine, one per kind of reduction.
 *
 * Floating inputs accumulate in double (torch accumulates float16 and
 * bfloat16 in float32, float32 with a cascade sum; double is at least as
 * accurate, so results agree within rounding), except products, which
 * torch forms in the dtype itself: prod rounds each one to it.  Integral and bool inputs
 * accumulate in int64 with wrap-around (unsigned arithmetic), as torch's
 * int64 accumulators do.  Every accumulator can merge with the
 * accumulator of another part of the same reduction, so the engine may
 * visit elements in any order and split them among threads; extremes
 * with indices keep the smallest index among equal values (torch's first
 * index), and NaN wins over every number. */
#include "ops/reduce_kernel.h"
#include "core/scalar.h"

#include <math.h>
#include <stdint.h>

/* Generate the row and lanes loops of an accumulator from its one-element
 * step functions NAME_f (double) and NAME_i (int64). */
#define RED_ROW_F(NAME)                                                                             \
    static void NAME##_row_f(red_acc *acc, const double *x, int64_t n, int64_t idx0, int64_t step, \
                             const red_params *p)                                                   \
    {                                                                                               \
        for (int64_t j = 0; j < n; j++) NAME##_f(acc, x[j], idx0 + j * step, p);                    \
    }
#define RED_ROW_I(NAME)                                                                             \
    static void NAME##_row_i(red_acc *acc, const int64_t *x, int64_t n, int64_t idx0, int64_t step,\
                             const red_params *p)                                                   \
    {                                                                                               \
        for (int64_t j = 0; j < n; j++) NAME##_i(acc, x[j], idx0 + j * step, p);                    \
    }
#define RED_LANES(NAME)                                                                                 \
    static void NAME##_lanes_f(red_acc *acc, const double *x, int64_t n, int64_t idx, const red_params *p) \
    {                                                                                                   \
        for (int64_t j = 0; j < n; j++) NAME##_f(&acc[j], x[j], idx, p);                                \
    }                                                                                                   \
    static void NAME##_lanes_i(red_acc *acc, const int64_t *x, int64_t n, int64_t idx, const red_params *p) \
    {                                                                                                   \
        for (int64_t j = 0; j < n; j++) NAME##_i(&acc[j], x[j], idx, p);                                \
    }
#define RED_LOOPS(NAME) RED_ROW_F(NAME) RED_ROW_I(NAME) RED_LANES(NAME)

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static void store(char *out, mtk_dtype dtype, bool floating, const red_acc *acc)
{
    if (floating) mtk_store_f64(dtype, out, acc->a);
    else mtk_store_i64(dtype, out, acc->i);
}

/* ------------------------------------------------------------------ sums */

static void sum_init(red_acc *acc, bool floating)
{
    (void)floating;
    acc->a = acc->b = acc->c = 0.0;
    acc->i = acc->idx = acc->n = 0;
}

/* a row sum with eight partial sums (independent chains, better rounding) */
static void sum_row_f(red_acc *acc, const double *x, int64_t n, int64_t idx0, int64_t step, const red_params *p)
{
    (void)idx0, (void)step, (void)p;
    double s[8] = { 0 };
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) s[k] += x[j + k];
    double tail = 0.0;
    for (; j < n; j++) tail += x[j];
    acc->a += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail;
}

static void sum_lanes_f(red_acc *acc, const double *x, int64_t n, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    for (int64_t j = 0; j < n; j++) acc[j].a += x[j];
}

static void sum_row_i(red_acc *acc, const int64_t *x, int64_t n, int64_t idx0, int64_t step, const red_params *p)
{
    (void)idx0, (void)step, (void)p;
    uint64_t s = (uint64_t)acc->i;
    for (int64_t j = 0; j < n; j++) s += (uint64_t)x[j];
    acc->i = (int64_t)s;
}

static void sum_lanes_i(red_acc *acc, const int64_t *x, int64_t n, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    for (int64_t j = 0; j < n; j++) acc[j].i = wrap_add(acc[j].i, x[j]);
}

static void sum_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    (void)floating, (void)p;
    acc->a += o->a;
    acc->i = wrap_add(acc->i, o->i);
    acc->n += o->n;
}

static void sum_finish(const red_acc *acc, bool floating, int64_t count, const red_params *p, char *const *out,
                       const mtk_dtype *dt)
{
    (void)count, (void)p;
    store(out[0], dt[0], floating, acc);
}

static void mean_finish(const red_acc *acc, bool floating, int64_t count, const red_params *p, char *const *out,
                        const mtk_dtype *dt)
{
    (void)floating, (void)p;
    mtk_store_f64(dt[0], out[0], acc->a / (double)count);
}

/* nansum / nanmean: NaN elements count as missing */
static inline void nansum_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    if (!isnan(x)) acc->a += x, acc->n++;
}
static inline void nansum_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    acc->i = wrap_add(acc->i, x);
    acc->n++;
}
RED_LOOPS(nansum)

static void nanmean_finish(const red_acc *acc, bool floating, int64_t count, const red_params *p, char *const *out,
                           const mtk_dtype *dt)
{
    (void)floating, (void)count, (void)p;
    mtk_store_f64(dt[0], out[0], acc->a / (double)acc->n);
}

/* ----------------------------------------------------------------- prod */

static void prod_init(red_acc *acc, bool floating)
{
    sum_init(acc, floating);
    acc->a = 1.0;
    acc->i = 1;
}
/* a * b in `dtype`, as torch's prod multiplies (scalar_t, not a wider
 * accumulator): a float32/float16/bfloat16 product is exact in double,
 * so rounding it once gives the dtype's own multiplication, overflow to
 * inf and underflow to 0 included. */
static inline double mul_in(mtk_dtype dtype, double a, double b)
{
    double r = a * b;
    switch (dtype) {
    case MTK_FLOAT32: return (double)(float)r;
    case MTK_FLOAT16: return (double)mtk_f16_to_f32(mtk_f32_to_f16((float)r));
    case MTK_BFLOAT16: return (double)mtk_bf16_to_f32(mtk_f32_to_bf16((float)r));
    default: return r;
    }
}

static inline void prod_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx;
    acc->a = mul_in(p->cast, acc->a, x);
}
static inline void prod_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    acc->i = wrap_mul(acc->i, x);
}
RED_LOOPS(prod)

static void prod_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    (void)floating;
    acc->a = mul_in(p->cast, acc->a, o->a);
    acc->i = wrap_mul(acc->i, o->i);
}

/* ------------------------------------------------- extremes (no index) */

static void amax_init(red_acc *acc, bool floating)
{
    sum_init(acc, floating);
    acc->a = -INFINITY;
    acc->i = INT64_MIN;
}
static void amin_init(red_acc *acc, bool floating)
{
    sum_init(acc, floating);
    acc->a = INFINITY;
    acc->i = INT64_MAX;
}
static inline void amax_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    if (x > acc->a || isnan(x)) acc->a = isnan(acc->a) ? acc->a : x;
}
static inline void amax_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    if (x > acc->i) acc->i = x;
}
static inline void amin_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    if (x < acc->a || isnan(x)) acc->a = isnan(acc->a) ? acc->a : x;
}
static inline void amin_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    if (x < acc->i) acc->i = x;
}
RED_ROW_I(amax)
RED_ROW_I(amin)
RED_LANES(amax)
RED_LANES(amin)

/* rows of amax/amin: the extreme of the numbers, then NaN if any */
static void amax_row_fast(red_acc *acc, const double *x, int64_t n, int64_t idx0, int64_t step, const red_params *p)
{
    (void)idx0, (void)step;
    double m = -INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < n; j++) {
        m = x[j] > m ? x[j] : m;
        nan |= x[j] != x[j];
    }
    amax_f(acc, nan ? NAN : m, 0, p);
}
static void amin_row_fast(red_acc *acc, const double *x, int64_t n, int64_t idx0, int64_t step, const red_params *p)
{
    (void)idx0, (void)step;
    double m = INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < n; j++) {
        m = x[j] < m ? x[j] : m;
        nan |= x[j] != x[j];
    }
    amin_f(acc, nan ? NAN : m, 0, p);
}

static void amax_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    (void)floating;
    amax_f(acc, o->a, 0, p);
    amax_i(acc, o->i, 0, p);
}
static void amin_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    (void)floating;
    amin_f(acc, o->a, 0, p);
    amin_i(acc, o->i, 0, p);
}

/* ---------------------------------------------------- extremes + index */

/* Whether (x, xi) replaces the accumulator's (value, index): a larger
 * value (smaller for min), NaN over numbers, the smaller index among
 * equals. */
static inline bool takes_max_f(const red_acc *acc, double x, int64_t xi)
{
    if (acc->n == 0) return true;
    if (isnan(acc->a)) return isnan(x) && xi < acc->idx;
    if (isnan(x)) return true;
    return x > acc->a || (x == acc->a && xi < acc->idx);
}
static inline bool takes_min_f(const red_acc *acc, double x, int64_t xi)
{
    if (acc->n == 0) return true;
    if (isnan(acc->a)) return isnan(x) && xi < acc->idx;
    if (isnan(x)) return true;
    return x < acc->a || (x == acc->a && xi < acc->idx);
}
static inline bool takes_max_i(const red_acc *acc, int64_t x, int64_t xi)
{
    return acc->n == 0 || x > acc->i || (x == acc->i && xi < acc->idx);
}
static inline bool takes_min_i(const red_acc *acc, int64_t x, int64_t xi)
{
    return acc->n == 0 || x < acc->i || (x == acc->i && xi < acc->idx);
}

static inline void argmax_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)p;
    if (takes_max_f(acc, x, idx)) acc->a = x, acc->idx = idx, acc->n = 1;
}
static inline void argmax_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p)
{
    (void)p;
    if (takes_max_i(acc, x, idx)) acc->i = x, acc->idx = idx, acc->n = 1;
}
static inline void argmin_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)p;
    if (takes_min_f(acc, x, idx)) acc->a = x, acc->idx = idx, acc->n = 1;
}
static inline void argmin_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p)
{
    (void)p;
    if (takes_min_i(acc, x, idx)) acc->i = x, acc->idx = idx, acc->n = 1;
}
RED_LANES(argmax)
RED_LANES(argmin)

/* Rows of argmax/argmin: a row's indices increase along it, so its own
 * extreme is the first strictly better element (the first NaN ends the
 * search); that candidate then meets the accumulator by the full rule. */
static void argmax_row_fast(red_acc *acc, const double *x, int64_t n, int64_t idx0, int64_t step,
                            const red_params *p)
{
    if (n <= 0) return;
    double m = x[0];
    int64_t k = 0;
    if (m == m)
        for (int64_t j = 1; j < n; j++) {
            if (x[j] > m) m = x[j], k = j;
            else if (x[j] != x[j]) {
                m = x[j], k = j;
                break;
            }
        }
    argmax_f(acc, m, idx0 + k * step, p);
}
static void argmin_row_fast(red_acc *acc, const double *x, int64_t n, int64_t idx0, int64_t step,
                            const red_params *p)
{
    if (n <= 0) return;
    double m = x[0];
    int64_t k = 0;
    if (m == m)
        for (int64_t j = 1; j < n; j++) {
            if (x[j] < m) m = x[j], k = j;
            else if (x[j] != x[j]) {
                m = x[j], k = j;
                break;
            }
        }
    argmin_f(acc, m, idx0 + k * step, p);
}
static void argmax_row_fast_i(red_acc *acc, const int64_t *x, int64_t n, int64_t idx0, int64_t step,
                              const red_params *p)
{
    if (n <= 0) return;
    int64_t m = x[0], k = 0;
    for (int64_t j = 1; j < n; j++)
        if (x[j] > m) m = x[j], k = j;
    argmax_i(acc, m, idx0 + k * step, p);
}
static void argmin_row_fast_i(red_acc *acc, const int64_t *x, int64_t n, int64_t idx0, int64_t step,
                              const red_params *p)
{
    if (n <= 0) return;
    int64_t m = x[0], k = 0;
    for (int64_t j = 1; j < n; j++)
        if (x[j] < m) m = x[j], k = j;
    argmin_i(acc, m, idx0 + k * step, p);
}

static void argmax_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    if (o->n == 0) return;
    if (floating) argmax_f(acc, o->a, o->idx, p);
    else argmax_i(acc, o->i, o->idx, p);
}
static void argmin_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    if (o->n == 0) return;
    if (floating) argmin_f(acc, o->a, o->idx, p);
    else argmin_i(acc, o->i, o->idx, p);
}

/* max(x, dim): (values, indices) */
static void values_indices_finish(const red_acc *acc, bool floating, int64_t count, const red_params *p,
                                  char *const *out, const mtk_dtype *dt)
{
    (void)count, (void)p;
    store(out[0], dt[0], floating, acc);
    mtk_store_i64(dt[1], out[1], acc->idx);
}

static void index_finish(const red_acc *acc, bool floating, int64_t count, const red_params *p, char *const *out,
                         const mtk_dtype *dt)
{
    (void)floating, (void)count, (void)p;
    mtk_store_i64(dt[0], out[0], acc->idx);
}

/* ----------------------------------------------------- variance (Welford) */

/* acc: n elements, mean b, sum of squared deviations c.  Rows are taken
 * as a block (two passes over the loaded values) merged by Chan's
 * formula; lanes take Welford's one-element update. */
static void welford_merge_parts(red_acc *acc, int64_t n2, double mean2, double m2_2)
{
    if (n2 == 0) return;
    if (acc->n == 0) {
        acc->n = n2, acc->b = mean2, acc->c = m2_2;
        return;
    }
    double n1 = (double)acc->n, nb = (double)n2, n = n1 + nb;
    double delta = mean2 - acc->b;
    acc->b += delta * (nb / n);
    acc->c += m2_2 + delta * delta * (n1 * nb / n);
    acc->n += n2;
}

static void welford_row_f(red_acc *acc, const double *x, int64_t n, int64_t idx0, int64_t step, const red_params *p)
{
    (void)idx0, (void)step, (void)p;
    if (n == 0) return;
    double s = 0.0;
    for (int64_t j = 0; j < n; j++) s += x[j];
    double mean = s / (double)n, m2 = 0.0;
    for (int64_t j = 0; j < n; j++) m2 += (x[j] - mean) * (x[j] - mean);
    welford_merge_parts(acc, n, mean, m2);
}

static void welford_lanes_f(red_acc *acc, const double *x, int64_t n, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    for (int64_t j = 0; j < n; j++) {
        red_acc *a = &acc[j];
        a->n++;
        double delta = x[j] - a->b;
        a->b += delta / (double)a->n;
        a->c += delta * (x[j] - a->b);
    }
}

static void welford_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    (void)floating, (void)p;
    welford_merge_parts(acc, o->n, o->b, o->c);
}

static double variance_of(const red_acc *acc, const red_params *p)
{
    double divisor = (double)acc->n - p->correction;
    if (divisor < 0) divisor = 0;
    return acc->n == 0 ? NAN : acc->c / divisor;
}

static void var_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                       const mtk_dtype *dt)
{
    (void)f, (void)count;
    mtk_store_f64(dt[0], out[0], variance_of(acc, p));
}
static void std_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                       const mtk_dtype *dt)
{
    (void)f, (void)count;
    mtk_store_f64(dt[0], out[0], sqrt(variance_of(acc, p)));
}
static void var_mean_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                            const mtk_dtype *dt)
{
    (void)f, (void)count;
    mtk_store_f64(dt[0], out[0], variance_of(acc, p));
    mtk_store_f64(dt[1], out[1], acc->n == 0 ? NAN : acc->b);
}
static void std_mean_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                            const mtk_dtype *dt)
{
    (void)f, (void)count;
    mtk_store_f64(dt[0], out[0], sqrt(variance_of(acc, p)));
    mtk_store_f64(dt[1], out[1], acc->n == 0 ? NAN : acc->b);
}

/* ------------------------------------------------------------ logsumexp */

/* acc: running maximum a of the finite elements, b = sum of exp(x - a)
 * over them; i flags NaN (1) and +inf (2) elements.  The result is
 * torch's log(sum(exp(x - m))) + m with m = max(x) (0 when infinite). */
enum { LSE_NAN = 1, LSE_POSINF = 2 };

static void lse_init(red_acc *acc, bool floating)
{
    sum_init(acc, floating);
    acc->a = -INFINITY;
}
static inline void lse_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    if (isnan(x)) acc->i |= LSE_NAN;
    else if (x == INFINITY) acc->i |= LSE_POSINF;
    else if (x == -INFINITY) return;
    else if (x > acc->a) acc->b = acc->b * exp(acc->a - x) + 1.0, acc->a = x;
    else acc->b += exp(x - acc->a);
}
static inline void lse_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p) { lse_f(acc, (double)x, idx, p); }
RED_LOOPS(lse)

static void lse_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    (void)floating, (void)p;
    acc->i |= o->i;
    if (o->b == 0.0) return;
    if (acc->b == 0.0) {
        acc->a = o->a, acc->b = o->b;
        return;
    }
    double m = acc->a > o->a ? acc->a : o->a;
    acc->b = acc->b * exp(acc->a - m) + o->b * exp(o->a - m);
    acc->a = m;
}

static void lse_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                       const mtk_dtype *dt)
{
    (void)f, (void)count, (void)p;
    double r;
    if (acc->i & LSE_NAN) r = NAN;
    else if (acc->i & LSE_POSINF) r = INFINITY;
    else if (acc->b == 0.0) r = -INFINITY;
    else r = log(acc->b) + acc->a;
    mtk_store_f64(dt[0], out[0], r);
}

/* --------------------------------------------------------- vector norms */

static inline void norm2_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    acc->a += x * x;
}
static inline void norm1_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    acc->a += fabs(x);
}
static inline void norm0_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    acc->a += x != 0.0 ? 1.0 : 0.0;
}
static inline void normp_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx;
    acc->a += pow(fabs(x), p->ord);
}
static inline void norminf_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    amax_f(acc, fabs(x), idx, p);
}
static inline void normninf_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    amin_f(acc, fabs(x), idx, p);
}
/* norms take floating inputs only; the int64 loops are never used */
#define NORM_I(NAME)                                                                   \
    static inline void NAME##_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p) \
    {                                                                                  \
        NAME##_f(acc, (double)x, idx, p);                                              \
    }
NORM_I(norm2)
NORM_I(norm1)
NORM_I(norm0)
NORM_I(normp)
NORM_I(norminf)
NORM_I(normninf)
RED_LOOPS(norm2)
RED_LOOPS(norm1)
RED_LOOPS(norm0)
RED_LOOPS(normp)
RED_LOOPS(norminf)
RED_LOOPS(normninf)

static void norminf_init(red_acc *acc, bool floating)
{
    sum_init(acc, floating);
    acc->a = 0.0;
}

static void norm_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                        const mtk_dtype *dt)
{
    (void)f, (void)count;
    double r = acc->a;
    if (p->ord == 2.0) r = sqrt(r);
    else if (p->ord != 1.0 && p->ord != 0.0 && !isinf(p->ord)) r = pow(r, 1.0 / p->ord);
    mtk_store_f64(dt[0], out[0], r);
}

/* ------------------------------------------------- all / any / count */

static inline void nonzero_f(red_acc *acc, double x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    acc->i += x != 0.0;
}
static inline void nonzero_i(red_acc *acc, int64_t x, int64_t idx, const red_params *p)
{
    (void)idx, (void)p;
    acc->i += x != 0;
}
RED_LOOPS(nonzero)

static void count_merge(red_acc *acc, const red_acc *o, bool floating, const red_params *p)
{
    (void)floating, (void)p;
    acc->i += o->i;
}
static void all_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                       const mtk_dtype *dt)
{
    (void)f, (void)p;
    mtk_store_i64(dt[0], out[0], acc->i == count);
}
static void any_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                       const mtk_dtype *dt)
{
    (void)f, (void)count, (void)p;
    mtk_store_i64(dt[0], out[0], acc->i > 0);
}
static void count_finish(const red_acc *acc, bool f, int64_t count, const red_params *p, char *const *out,
                         const mtk_dtype *dt)
{
    (void)f, (void)count, (void)p;
    mtk_store_i64(dt[0], out[0], acc->i);
}

/* ------------------------------------------------------------ the table */

#define OP(init, loops, merge, finish, index) \
    { init, loops##_row_f, loops##_row_i, loops##_lanes_f, loops##_lanes_i, merge, finish, index }

static const red_op op_sum = OP(sum_init, sum, sum_merge, sum_finish, false);
static const red_op op_mean = OP(sum_init, sum, sum_merge, mean_finish, false);
static const red_op op_nansum = OP(sum_init, nansum, sum_merge, sum_finish, false);
static const red_op op_nanmean = OP(sum_init, nansum, sum_merge, nanmean_finish, false);
static const red_op op_prod = OP(prod_init, prod, prod_merge, sum_finish, false);
static const red_op op_amax = { amax_init, amax_row_fast, amax_row_i, amax_lanes_f, amax_lanes_i,
                                 amax_merge, sum_finish, false };
static const red_op op_amin = { amin_init, amin_row_fast, amin_row_i, amin_lanes_f, amin_lanes_i,
                                 amin_merge, sum_finish, false };
#define ARG_OP(dir, finish)                                                                          \
    { sum_init, arg##dir##_row_fast, arg##dir##_row_fast_i, arg##dir##_lanes_f, arg##dir##_lanes_i, \
      arg##dir##_merge, finish, true }
static const red_op op_max = ARG_OP(max, values_indices_finish);
static const red_op op_min = ARG_OP(min, values_indices_finish);
static const red_op op_argmax = ARG_OP(max, index_finish);
static const red_op op_argmin = ARG_OP(min, index_finish);
#undef ARG_OP
static const red_op op_lse = OP(lse_init, lse, lse_merge, lse_finish, false);
static const red_op op_norm2 = OP(sum_init, norm2, sum_merge, norm_finish, false);
static const red_op op_norm1 = OP(sum_init, norm1, sum_merge, norm_finish, false);
static const red_op op_norm0 = OP(sum_init, norm0, sum_merge, norm_finish, false);
static const red_op op_normp = OP(sum_init, normp, sum_merge, norm_finish, false);
static const red_op op_norminf = OP(norminf_init, norminf, amax_merge, norm_finish, false);
static const red_op op_normninf = OP(amin_init, normninf, amin_merge, norm_finish, false);
static const red_op op_all = OP(sum_init, nonzero, count_merge, all_finish, false);
static const red_op op_any = OP(sum_init, nonzero, count_merge, any_finish, false);
static const red_op op_count = OP(sum_init, nonzero, count_merge, count_finish, false);
#undef OP

/* variance takes floating inputs only */
#define VAR_OP(finish) { sum_init, welford_row_f, NULL, welford_lanes_f, NULL, welford_merge, finish, false }
static const red_op op_var = VAR_OP(var_finish);
static const red_op op_std = VAR_OP(std_finish);
static const red_op op_var_mean = VAR_OP(var_mean_finish);
static const red_op op_std_mean = VAR_OP(std_mean_finish);
#undef VAR_OP

const red_op *red_op_for(const red_desc *d, red_params *params)
{
    params->ord = d->ord;
    params->correction = d->correction;
    params->cast = d->cast;
    switch (d->kind) {
    case MTK_RED_SUM: return &op_sum;
    case MTK_RED_MEAN: return &op_mean;
    case MTK_RED_NANSUM: return &op_nansum;
    case MTK_RED_NANMEAN: return &op_nanmean;
    case MTK_RED_PROD: return &op_prod;
    case MTK_RED_AMAX: return &op_amax;
    case MTK_RED_AMIN: return &op_amin;
    case MTK_RED_MAX: return &op_max;
    case MTK_RED_MIN: return &op_min;
    case MTK_RED_ARGMAX: return &op_argmax;
    case MTK_RED_ARGMIN: return &op_argmin;
    case MTK_RED_VAR: return &op_var;
    case MTK_RED_STD: return &op_std;
    case MTK_RED_VAR_MEAN: return &op_var_mean;
    case MTK_RED_STD_MEAN: return &op_std_mean;
    case MTK_RED_LOGSUMEXP: return &op_lse;
    case MTK_RED_VECTOR_NORM:
        if (d->ord == 2.0) return &op_norm2;
        if (d->ord == 1.0) return &op_norm1;
        if (d->ord == 0.0) return &op_norm0;
        if (d->ord == INFINITY) return &op_norminf;
        if (d->ord == -INFINITY) return &op_normninf;
        return &op_normp;
    case MTK_RED_ALL: return &op_all;
    case MTK_RED_ANY: return &op_any;
    case MTK_RED_COUNT_NONZERO: return &op_count;
    default: return NULL;
    }
}
