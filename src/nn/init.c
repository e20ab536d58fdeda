/* The seeded generator (xoshiro256**) and torch.nn.init's fills. */
#include "mtk/nn.h"
#include "core/scalar.h"

#include <math.h>

/* ------------------------------------------------------------ generator */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void mtk_rng_seed(mtk_rng *rng, uint64_t seed)
{
    uint64_t state = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&state);
    rng->has_spare = false;
    rng->spare = 0.0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t mtk_rng_next(mtk_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double mtk_rng_uniform(mtk_rng *rng) { return (double)(mtk_rng_next(rng) >> 11) * 0x1.0p-53; }

double mtk_rng_normal(mtk_rng *rng)
{
    if (rng->has_spare) {
        rng->has_spare = false;
        return rng->spare;
    }
    /* Box-Muller: u1 in (0, 1] keeps the log finite */
    double u1 = 1.0 - mtk_rng_uniform(rng), u2 = mtk_rng_uniform(rng);
    double r = sqrt(-2.0 * log(u1)), theta = 2.0 * M_PI * u2;
    rng->spare = r * sin(theta);
    rng->has_spare = true;
    return r * cos(theta);
}

/* ---------------------------------------------------------------- fills */

/* Whether t can be filled: false (and an error) for a lazy tensor; *skip
 * set for a meta one. */
static bool fillable(const mtk_tensor *t, const char *what, bool *skip)
{
    *skip = false;
    if (!t) return false;
    if (t->flags & MTK_TENSOR_LAZY)
        return mtk_error(t->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "%s: the tensor is uninitialized (lazy) and has no shape yet; run a "
                         "forward with an example input first",
                         what);
    if (t->device == MTK_DEVICE_META || mtk_tensor_numel(t) == 0) *skip = true;
    else if (!t->storage)
        return mtk_error(t->ctx, MTK_ERR_INVALID_ARGUMENT, "%s: the tensor has no storage", what);
    return true;
}

typedef double (*value_fn)(void *user);

/* Stores fn(user) into every element of t in row-major order. */
static void fill_with(mtk_tensor *t, value_fn fn, void *user)
{
    char *base = mtk_tensor_data(t);
    size_t esize = mtk_dtype_size(t->dtype);
    int64_t numel = mtk_tensor_numel(t);
    if (mtk_tensor_is_contiguous(t)) {
        if (t->dtype == MTK_FLOAT32) {
            float *p = (float *)base;
            for (int64_t i = 0; i < numel; i++) p[i] = (float)fn(user);
        } else {
            for (int64_t i = 0; i < numel; i++) mtk_store_f64(t->dtype, base + (size_t)i * esize, fn(user));
        }
        return;
    }
    int64_t index[MTK_MAX_DIMS] = { 0 };
    for (int64_t i = 0; i < numel; i++) {
        int64_t offset = 0;
        for (int32_t d = 0; d < t->ndim; d++) offset += index[d] * t->stride[d];
        mtk_store_f64(t->dtype, base + offset * (int64_t)esize, fn(user));
        for (int32_t d = t->ndim - 1; d >= 0; d--) {
            if (++index[d] < t->shape[d]) break;
            index[d] = 0;
        }
    }
}

typedef struct uniform_args { mtk_rng *rng; double low, span; } uniform_args;
typedef struct normal_args { mtk_rng *rng; double mean, std; } normal_args;

static double uniform_value(void *user)
{
    uniform_args *a = user;
    return a->low + a->span * mtk_rng_uniform(a->rng);
}
static double normal_value(void *user)
{
    normal_args *a = user;
    return a->mean + a->std * mtk_rng_normal(a->rng);
}
static double constant_value(void *user) { return *(const double *)user; }

/* Floating dtypes only for random fills (torch: "uniform_" not
 * implemented for 'Long'). */
static bool check_floating(const mtk_tensor *t, const char *what)
{
    if (mtk_dtype_is_floating(t->dtype)) return true;
    return mtk_error(t->ctx, MTK_ERR_DTYPE, "%s: \"%s\" is not implemented for dtype %s", what, what,
                     mtk_dtype_name(t->dtype));
}

bool mtk_init_uniform_(mtk_tensor *t, double low, double high, mtk_rng *rng)
{
    bool skip;
    if (!fillable(t, "uniform_", &skip)) return false;
    if (!check_floating(t, "uniform_")) return false;
    if (!(low <= high))
        return mtk_error(t->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "uniform_: expects to return a [from, to) range, but found from=%g > to=%g",
                         low, high);
    if (skip) return true;
    uniform_args a = { rng, low, high - low };
    fill_with(t, uniform_value, &a);
    return true;
}

bool mtk_init_normal_(mtk_tensor *t, double mean, double std, mtk_rng *rng)
{
    bool skip;
    if (!fillable(t, "normal_", &skip)) return false;
    if (!check_floating(t, "normal_")) return false;
    if (!(std >= 0.0))
        return mtk_error(t->ctx, MTK_ERR_INVALID_ARGUMENT, "normal_ expects std >= 0.0, but found std %g",
                         std);
    if (skip) return true;
    normal_args a = { rng, mean, std };
    fill_with(t, normal_value, &a);
    return true;
}

bool mtk_init_constant_(mtk_tensor *t, double value)
{
    bool skip;
    if (!fillable(t, "fill_", &skip)) return false;
    if (skip) return true;
    fill_with(t, constant_value, &value);
    return true;
}

bool mtk_init_zeros_(mtk_tensor *t) { return mtk_init_constant_(t, 0.0); }
bool mtk_init_ones_(mtk_tensor *t) { return mtk_init_constant_(t, 1.0); }

bool mtk_init_fans(const mtk_tensor *t, int64_t *fan_in, int64_t *fan_out)
{
    if (!t) return false;
    if (t->flags & MTK_TENSOR_LAZY)
        return mtk_error(t->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "Can't access the shape of an uninitialized parameter; run a forward "
                         "with an example input first");
    if (t->ndim < 2)
        return mtk_error(t->ctx, MTK_ERR_SHAPE,
                         "Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions");
    int64_t receptive = 1;
    for (int32_t d = 2; d < t->ndim; d++) receptive *= t->shape[d];
    *fan_in = t->shape[1] * receptive;
    *fan_out = t->shape[0] * receptive;
    return true;
}

bool mtk_init_kaiming_uniform_(mtk_tensor *t, double a, mtk_rng *rng)
{
    int64_t fan_in = 0, fan_out = 0;
    if (!mtk_init_fans(t, &fan_in, &fan_out)) return false;
    if (fan_in == 0) return true; /* torch warns "Initializing zero-element tensors is a no-op" */
    double gain = sqrt(2.0 / (1.0 + a * a)); /* leaky_relu gain */
    double bound = sqrt(3.0) * gain / sqrt((double)fan_in);
    return mtk_init_uniform_(t, -bound, bound, rng);
}

bool mtk_init_xavier_uniform_(mtk_tensor *t, double gain, mtk_rng *rng)
{
    int64_t fan_in = 0, fan_out = 0;
    if (!mtk_init_fans(t, &fan_in, &fan_out)) return false;
    if (fan_in + fan_out == 0) return true;
    double bound = gain * sqrt(6.0 / (double)(fan_in + fan_out));
    return mtk_init_uniform_(t, -bound, bound, rng);
}

bool mtk_init_xavier_normal_(mtk_tensor *t, double gain, mtk_rng *rng)
{
    int64_t fan_in = 0, fan_out = 0;
    if (!mtk_init_fans(t, &fan_in, &fan_out)) return false;
    if (fan_in + fan_out == 0) return true;
    return mtk_init_normal_(t, 0.0, gain * sqrt(2.0 / (double)(fan_in + fan_out)), rng);
}
