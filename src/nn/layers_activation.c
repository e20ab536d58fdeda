/* Activation modules: one table row per torch.nn activation class (its
 * name, its defaults, how it prints), one forward that switches on the
 * row.  Activations without an op of their own are compositions of
 * element-wise ops that give the same shape and dtype (and, on cpu, the
 * same values) as PyTorch's. */
#include "nn/layers.h"
#include "mtk/ops.h"
#include "mtk/ops/creation.h"
#include "mtk/ops/elementwise.h"
#include "mtk/ops/view.h"

#include <math.h>
#include <string.h>
#include <strings.h>

typedef enum act_kind {
    ACT_RELU, ACT_RELU6, ACT_LEAKY_RELU, ACT_PRELU, ACT_RRELU, ACT_ELU, ACT_CELU, ACT_SELU, ACT_GELU,
    ACT_SILU, ACT_MISH, ACT_SIGMOID, ACT_TANH, ACT_SOFTPLUS, ACT_SOFTSIGN, ACT_HARDSWISH,
    ACT_HARDSIGMOID, ACT_HARDTANH, ACT_HARDSHRINK, ACT_SOFTSHRINK, ACT_TANHSHRINK, ACT_LOGSIGMOID,
    ACT_THRESHOLD, ACT_GLU, ACT_SOFTMAX, ACT_SOFTMIN, ACT_LOG_SOFTMAX, ACT_SOFTMAX2D, ACT_COUNT
} act_kind;

/* How extra_repr prints the arguments. */
typedef enum act_repr {
    REPR_NONE,        /* ReLU()                                       */
    REPR_SLOPE,       /* LeakyReLU(negative_slope=0.01)               */
    REPR_ALPHA,       /* ELU(alpha=1.0)                               */
    REPR_APPROXIMATE, /* GELU(approximate='none')                     */
    REPR_SOFTPLUS,    /* Softplus(beta=1.0, threshold=20.0)           */
    REPR_HARDTANH,    /* Hardtanh(min_val=-1.0, max_val=1.0)          */
    REPR_LAMBDA,      /* Hardshrink(0.5)                              */
    REPR_THRESHOLD,   /* Threshold(threshold=0.1, value=20.0)         */
    REPR_RRELU,       /* RReLU(lower=0.125, upper=0.3333333333333333) */
    REPR_PRELU,       /* PReLU(num_parameters=1)                      */
    REPR_DIM          /* Softmax(dim=1)                               */
} act_repr;

typedef struct act_config {
    act_kind kind;
    double a, b;          /* the row's numeric arguments */
    int64_t dim;          /* GLU and the softmax family   */
    bool tanh_approx;     /* GELU                         */
    bool new_gelu;        /* GELU as transformers' NewGELUActivation
                             computes it ("gelu_new"): element-wise ops,
                             each kept by autograd on its own */
} act_config;

static bool act_forward(mtk_module *m, mtk_module_io *io);
static void act_extra_repr(const mtk_module *m, char *buf, size_t cap);
static bool prelu_reset(mtk_module *m, mtk_rng *rng);

#define ACT_TYPE(name) { name, act_forward, NULL, act_extra_repr }
static const mtk_module_type act_types[ACT_COUNT] = {
    [ACT_RELU] = ACT_TYPE("ReLU"),           [ACT_RELU6] = ACT_TYPE("ReLU6"),
    [ACT_LEAKY_RELU] = ACT_TYPE("LeakyReLU"),
    [ACT_PRELU] = { "PReLU", act_forward, prelu_reset, act_extra_repr },
    [ACT_RRELU] = ACT_TYPE("RReLU"),         [ACT_ELU] = ACT_TYPE("ELU"),
    [ACT_CELU] = ACT_TYPE("CELU"),           [ACT_SELU] = ACT_TYPE("SELU"),
    [ACT_GELU] = ACT_TYPE("GELU"),           [ACT_SILU] = ACT_TYPE("SiLU"),
    [ACT_MISH] = ACT_TYPE("Mish"),           [ACT_SIGMOID] = ACT_TYPE("Sigmoid"),
    [ACT_TANH] = ACT_TYPE("Tanh"),           [ACT_SOFTPLUS] = ACT_TYPE("Softplus"),
    [ACT_SOFTSIGN] = ACT_TYPE("Softsign"),   [ACT_HARDSWISH] = ACT_TYPE("Hardswish"),
    [ACT_HARDSIGMOID] = ACT_TYPE("Hardsigmoid"), [ACT_HARDTANH] = ACT_TYPE("Hardtanh"),
    [ACT_HARDSHRINK] = ACT_TYPE("Hardshrink"), [ACT_SOFTSHRINK] = ACT_TYPE("Softshrink"),
    [ACT_TANHSHRINK] = ACT_TYPE("Tanhshrink"), [ACT_LOGSIGMOID] = ACT_TYPE("LogSigmoid"),
    [ACT_THRESHOLD] = ACT_TYPE("Threshold"), [ACT_GLU] = ACT_TYPE("GLU"),
    [ACT_SOFTMAX] = ACT_TYPE("Softmax"),     [ACT_SOFTMIN] = ACT_TYPE("Softmin"),
    [ACT_LOG_SOFTMAX] = ACT_TYPE("LogSoftmax"), [ACT_SOFTMAX2D] = ACT_TYPE("Softmax2d"),
};

/* Per row: how it prints and PyTorch's default arguments. */
static const struct {
    act_repr repr;
    double a, b;
    int64_t dim;
} act_rows[ACT_COUNT] = {
    [ACT_LEAKY_RELU] = { REPR_SLOPE, 0.01, 0, 0 },
    [ACT_PRELU] = { REPR_PRELU, 1, 0.25, 0 },
    [ACT_RRELU] = { REPR_RRELU, 1.0 / 8.0, 1.0 / 3.0, 0 },
    [ACT_ELU] = { REPR_ALPHA, 1.0, 0, 0 },
    [ACT_CELU] = { REPR_ALPHA, 1.0, 0, 0 },
    [ACT_GELU] = { REPR_APPROXIMATE, 0, 0, 0 },
    [ACT_SOFTPLUS] = { REPR_SOFTPLUS, 1.0, 20.0, 0 },
    [ACT_HARDTANH] = { REPR_HARDTANH, -1.0, 1.0, 0 },
    [ACT_HARDSHRINK] = { REPR_LAMBDA, 0.5, 0, 0 },
    [ACT_SOFTSHRINK] = { REPR_LAMBDA, 0.5, 0, 0 },
    [ACT_THRESHOLD] = { REPR_THRESHOLD, 0, 0, 0 },
    [ACT_GLU] = { REPR_DIM, 0, 0, -1 },
    [ACT_SOFTMAX] = { REPR_DIM, 0, 0, MTK_NN_DIM_NONE },
    [ACT_SOFTMIN] = { REPR_DIM, 0, 0, MTK_NN_DIM_NONE },
    [ACT_LOG_SOFTMAX] = { REPR_DIM, 0, 0, MTK_NN_DIM_NONE },
};

/* ---------------------------------------------------------------- repr */

static void act_extra_repr(const mtk_module *m, char *buf, size_t cap)
{
    const act_config *c = mtk_module_config(m);
    char a[40], b[40];
    nn_py_float(c->a, a, sizeof a);
    nn_py_float(c->b, b, sizeof b);
    switch (act_rows[c->kind].repr) {
    case REPR_NONE: buf[0] = '\0'; break;
    case REPR_SLOPE: snprintf(buf, cap, "negative_slope=%s", a); break;
    case REPR_ALPHA: snprintf(buf, cap, "alpha=%s", a); break;
    case REPR_APPROXIMATE: snprintf(buf, cap, "approximate='%s'", c->tanh_approx ? "tanh" : "none"); break;
    case REPR_SOFTPLUS: snprintf(buf, cap, "beta=%s, threshold=%s", a, b); break;
    case REPR_HARDTANH: snprintf(buf, cap, "min_val=%s, max_val=%s", a, b); break;
    case REPR_LAMBDA: snprintf(buf, cap, "%s", a); break;
    case REPR_THRESHOLD: snprintf(buf, cap, "threshold=%s, value=%s", a, b); break;
    case REPR_RRELU: snprintf(buf, cap, "lower=%s, upper=%s", a, b); break;
    case REPR_PRELU: snprintf(buf, cap, "num_parameters=%lld", (long long)c->a); break;
    case REPR_DIM:
        if (c->dim == MTK_NN_DIM_NONE) snprintf(buf, cap, "dim=None");
        else snprintf(buf, cap, "dim=%lld", (long long)c->dim);
        break;
    }
}

/* ------------------------------------------------------------- forward */

/* torch's _get_softmax_dim for dim=None (legacy): 0 for 0-, 1- and 3-dim
 * inputs, else 1. */
static int64_t softmax_dim(const act_config *c, const mtk_tensor *x)
{
    if (c->dim != MTK_NN_DIM_NONE) return c->dim;
    return (x->ndim == 0 || x->ndim == 1 || x->ndim == 3) ? 0 : 1;
}

static mtk_tensor *glu(mtk_ctx *ctx, mtk_tensor *x, int64_t dim)
{
    int32_t d = mtk_wrap_dim(ctx, dim, x->ndim);
    if (d < 0) return NULL;
    if (x->ndim == 0 || x->shape[d] % 2 != 0) {
        mtk_error(ctx, MTK_ERR_SHAPE, "glu: Halving dimension must be even, but dimension %d is size %lld",
                  (int)d, (long long)(x->ndim ? x->shape[d] : 1));
        return NULL;
    }
    mtk_tensor *halves[2];
    if (mtk_chunk(ctx, x, 2, d, halves, 2) != 2) return NULL;
    return mtk_mul(ctx, halves[0], mtk_sigmoid(ctx, halves[1]));
}

static mtk_tensor *prelu(mtk_ctx *ctx, mtk_module *m, mtk_tensor *x)
{
    mtk_tensor *w = mtk_module_find_tensor(m, "weight");
    if (!w) return NULL;
    int64_t n = w->ndim ? w->shape[0] : 1;
    if (n > 1) {
        /* one slope per channel: dim 1, or dim 0 of a 1-dim input */
        int32_t channel = x->ndim >= 2 ? 1 : 0;
        if (x->ndim == 0 || x->shape[channel] != n) {
            mtk_error(ctx, MTK_ERR_SHAPE,
                      "prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                      "numbers = %lld and channel size = %lld.",
                      (long long)n, (long long)(x->ndim ? x->shape[channel] : 1));
            return NULL;
        }
        int64_t shape[MTK_MAX_DIMS];
        for (int32_t d = 0; d < x->ndim; d++) shape[d] = d == channel ? n : 1;
        w = mtk_reshape(ctx, w, shape, x->ndim);
    }
    mtk_tensor *positive = mtk_ge_scalar(ctx, x, mtk_value_int(0));
    return mtk_where(ctx, positive, x, mtk_mul(ctx, w, x));
}

static mtk_tensor *activate(mtk_ctx *ctx, mtk_module *m, const act_config *c, mtk_tensor *x)
{
    switch (c->kind) {
    case ACT_RELU: return mtk_relu(ctx, x);
    case ACT_RELU6: return mtk_relu6(ctx, x);
    case ACT_LEAKY_RELU: return mtk_leaky_relu(ctx, x, c->a);
    case ACT_PRELU: return prelu(ctx, m, x);
    /* RReLU samples its slopes in training; mtk uses their mean, which
     * is eval mode's rule and gives the same shapes */
    case ACT_RRELU: return mtk_leaky_relu(ctx, x, (c->a + c->b) / 2.0);
    case ACT_ELU: return mtk_elu(ctx, x, c->a);
    case ACT_CELU: /* alpha * elu(x / alpha) */
        return mtk_mul_scalar(ctx, mtk_elu(ctx, mtk_div_scalar(ctx, x, mtk_value_float(c->a)), 1.0),
                              mtk_value_float(c->a));
    case ACT_SELU: return mtk_selu(ctx, x);
    case ACT_GELU:
        if (c->new_gelu) { /* 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), in torch's order */
            mtk_tensor *half = mtk_mul_scalar(ctx, x, mtk_value_float(0.5));
            mtk_tensor *cube = mtk_mul_scalar(ctx, mtk_pow_scalar(ctx, x, mtk_value_float(3.0)), mtk_value_float(0.044715));
            mtk_tensor *inner = mtk_mul_scalar(ctx, mtk_add(ctx, x, cube), mtk_value_float(0.7978845608028654));
            return mtk_mul(ctx, half, mtk_add_scalar(ctx, mtk_tanh(ctx, inner), mtk_value_float(1.0)));
        }
        return mtk_gelu(ctx, x, c->tanh_approx ? "tanh" : "none");
    case ACT_SILU: return mtk_silu(ctx, x);
    case ACT_MISH: return mtk_mish(ctx, x);
    case ACT_SIGMOID: return mtk_sigmoid(ctx, x);
    case ACT_TANH: return mtk_tanh(ctx, x);
    case ACT_SOFTPLUS: return mtk_softplus(ctx, x, c->a, c->b);
    case ACT_SOFTSIGN: return mtk_div(ctx, x, mtk_add_scalar(ctx, mtk_abs(ctx, x), mtk_value_int(1)));
    case ACT_HARDSWISH: return mtk_hardswish(ctx, x);
    case ACT_HARDSIGMOID: return mtk_hardsigmoid(ctx, x);
    case ACT_HARDTANH: return mtk_hardtanh(ctx, x, c->a, c->b);
    case ACT_HARDSHRINK:
        return mtk_where(ctx, mtk_gt_scalar(ctx, mtk_abs(ctx, x), mtk_value_float(c->a)), x,
                         mtk_zeros_like(ctx, x, MTK_DTYPE_UNDEFINED));
    case ACT_SOFTSHRINK:
        return mtk_sub(ctx, x, mtk_clamp(ctx, x, mtk_value_float(-c->a), mtk_value_float(c->a)));
    case ACT_TANHSHRINK: return mtk_sub(ctx, x, mtk_tanh(ctx, x));
    case ACT_LOGSIGMOID: return mtk_neg(ctx, mtk_softplus(ctx, mtk_neg(ctx, x), 1.0, 20.0));
    case ACT_THRESHOLD:
        return mtk_where(ctx, mtk_gt_scalar(ctx, x, mtk_value_float(c->a)), x,
                         mtk_full_like(ctx, x, c->b, MTK_DTYPE_UNDEFINED));
    case ACT_GLU: return glu(ctx, x, c->dim);
    case ACT_SOFTMAX: return mtk_softmax(ctx, x, softmax_dim(c, x), MTK_DTYPE_UNDEFINED);
    case ACT_SOFTMIN: return mtk_softmax(ctx, mtk_neg(ctx, x), softmax_dim(c, x), MTK_DTYPE_UNDEFINED);
    case ACT_LOG_SOFTMAX: return mtk_log_softmax(ctx, x, softmax_dim(c, x), MTK_DTYPE_UNDEFINED);
    case ACT_SOFTMAX2D:
        if (x->ndim != 3 && x->ndim != 4) {
            mtk_error(ctx, MTK_ERR_SHAPE, "Softmax2d: expected input to be 3D or 4D, got %dD instead",
                      (int)x->ndim);
            return NULL;
        }
        return mtk_softmax(ctx, x, -3, MTK_DTYPE_UNDEFINED);
    case ACT_COUNT: break;
    }
    mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "unknown activation");
    return NULL;
}

static bool act_forward(mtk_module *m, mtk_module_io *io)
{
    return nn_output(io, activate(mtk_module_ctx(m), m, mtk_module_config(m), io->in[0]));
}

static bool prelu_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    const act_config *c = mtk_module_config(m);
    return mtk_init_constant_(mtk_module_find_tensor(m, "weight"), c->b);
}

/* ---------------------------------------------------------- constructors */

static mtk_module *make(mtk_ctx *ctx, act_kind kind, double a, double b, int64_t dim)
{
    mtk_module *m = mtk_module_new(ctx, &act_types[kind], sizeof(act_config));
    if (!m) return NULL;
    *(act_config *)mtk_module_config(m) = (act_config){ kind, a, b, dim, false, false };
    return m;
}

static mtk_module *make_default(mtk_ctx *ctx, act_kind kind)
{
    return make(ctx, kind, act_rows[kind].a, act_rows[kind].b, act_rows[kind].dim);
}

/* Hugging Face's activation names (ACT2FN keys) for the model zoo. */
static const struct { const char *name; act_kind kind; bool tanh; } hf_names[] = {
    { "relu", ACT_RELU, false },       { "relu6", ACT_RELU6, false },
    { "leaky_relu", ACT_LEAKY_RELU, false }, { "elu", ACT_ELU, false },
    { "selu", ACT_SELU, false },       { "celu", ACT_CELU, false },
    { "gelu", ACT_GELU, false },       { "gelu_new", ACT_GELU, true },
    { "gelu_pytorch_tanh", ACT_GELU, true }, { "gelu_fast", ACT_GELU, true },
    { "silu", ACT_SILU, false },       { "swish", ACT_SILU, false },
    { "mish", ACT_MISH, false },       { "sigmoid", ACT_SIGMOID, false },
    { "tanh", ACT_TANH, false },       { "softplus", ACT_SOFTPLUS, false },
    { "hardswish", ACT_HARDSWISH, false }, { "hardsigmoid", ACT_HARDSIGMOID, false },
};

mtk_module *mtk_nn_activation(mtk_ctx *ctx, const char *name)
{
    if (!name) name = "(null)";
    for (int k = 0; k < ACT_COUNT; k++) {
        if (strcmp(act_types[k].name, name) != 0) continue;
        if (k == ACT_THRESHOLD) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "Threshold needs its threshold and value: use mtk_nn_threshold");
            return NULL;
        }
        if (k == ACT_PRELU) return mtk_nn_prelu(ctx, 1, 0.25);
        return make_default(ctx, (act_kind)k);
    }
    for (size_t i = 0; i < sizeof hf_names / sizeof hf_names[0]; i++)
        if (strcmp(hf_names[i].name, name) == 0) {
            mtk_module *m = make_default(ctx, hf_names[i].kind);
            if (m) {
                act_config *c = mtk_module_config(m);
                c->tanh_approx = hf_names[i].tanh;
                c->new_gelu = strcmp(name, "gelu_new") == 0;
            }
            return m;
        }
    char known[640] = "";
    size_t len = 0;
    for (int k = 0; k < ACT_COUNT && len < sizeof known; k++)
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", k ? ", " : "", act_types[k].name);
    mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "unknown activation '%s' (known: %s; and Hugging Face's "
              "relu, gelu, gelu_new, silu, swish, ...)", name, known);
    return NULL;
}

mtk_module *mtk_nn_leaky_relu(mtk_ctx *ctx, double negative_slope) { return make(ctx, ACT_LEAKY_RELU, negative_slope, 0, 0); }
mtk_module *mtk_nn_elu(mtk_ctx *ctx, double alpha) { return make(ctx, ACT_ELU, alpha, 0, 0); }
mtk_module *mtk_nn_softplus(mtk_ctx *ctx, double beta, double threshold) { return make(ctx, ACT_SOFTPLUS, beta, threshold, 0); }
mtk_module *mtk_nn_hardtanh(mtk_ctx *ctx, double min_val, double max_val) { return make(ctx, ACT_HARDTANH, min_val, max_val, 0); }
mtk_module *mtk_nn_hardshrink(mtk_ctx *ctx, double lambd) { return make(ctx, ACT_HARDSHRINK, lambd, 0, 0); }
mtk_module *mtk_nn_softshrink(mtk_ctx *ctx, double lambd) { return make(ctx, ACT_SOFTSHRINK, lambd, 0, 0); }
mtk_module *mtk_nn_threshold(mtk_ctx *ctx, double threshold, double value) { return make(ctx, ACT_THRESHOLD, threshold, value, 0); }
mtk_module *mtk_nn_rrelu(mtk_ctx *ctx, double lower, double upper) { return make(ctx, ACT_RRELU, lower, upper, 0); }
mtk_module *mtk_nn_glu(mtk_ctx *ctx, int64_t dim) { return make(ctx, ACT_GLU, 0, 0, dim); }
mtk_module *mtk_nn_softmax(mtk_ctx *ctx, int64_t dim) { return make(ctx, ACT_SOFTMAX, 0, 0, dim); }
mtk_module *mtk_nn_softmin(mtk_ctx *ctx, int64_t dim) { return make(ctx, ACT_SOFTMIN, 0, 0, dim); }
mtk_module *mtk_nn_log_softmax(mtk_ctx *ctx, int64_t dim) { return make(ctx, ACT_LOG_SOFTMAX, 0, 0, dim); }

mtk_module *mtk_nn_celu(mtk_ctx *ctx, double alpha)
{
    if (alpha == 0.0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "ZeroDivisionError: alpha cannot be 0 for CELU");
        return NULL;
    }
    return make(ctx, ACT_CELU, alpha, 0, 0);
}

mtk_module *mtk_nn_gelu(mtk_ctx *ctx, const char *approximate)
{
    bool tanh_approx = approximate && strcmp(approximate, "tanh") == 0;
    if (approximate && !tanh_approx && strcmp(approximate, "none") != 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "GELU: approximate must be 'none' or 'tanh', got '%s'",
                  approximate);
        return NULL;
    }
    mtk_module *m = make(ctx, ACT_GELU, 0, 0, 0);
    if (m) ((act_config *)mtk_module_config(m))->tanh_approx = tanh_approx;
    return m;
}

mtk_module *mtk_nn_prelu(mtk_ctx *ctx, int64_t num_parameters, double init)
{
    if (num_parameters < 1) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "PReLU: num_parameters must be at least 1, got %lld",
                  (long long)num_parameters);
        return NULL;
    }
    mtk_module *m = make(ctx, ACT_PRELU, (double)num_parameters, init, 0);
    if (!m || !mtk_module_new_parameter(m, "weight", &num_parameters, 1)) return NULL;
    return mtk_module_finish(m);
}
