/* Linear, LazyLinear, Bilinear, Identity (and MultiheadAttention's
 * NonDynamicallyQuantizableLinear, a Linear by another name). */
#include "nn/layers.h"
#include "mtk/ops/linalg.h"
#include "mtk/ops/view.h"
#include "mtk/ops/elementwise.h"

#include <math.h>
#include <stdio.h>

typedef struct linear_config {
    int64_t in_features, out_features;
    bool bias;
} linear_config;

static void linear_repr(const mtk_module *m, char *buf, size_t cap)
{
    const linear_config *c = mtk_module_config(m);
    snprintf(buf, cap, "in_features=%lld, out_features=%lld, bias=%s", (long long)c->in_features,
             (long long)c->out_features, c->bias ? "True" : "False");
}

/* Linear.reset_parameters: kaiming_uniform(a=sqrt(5)) for the weight,
 * U(+-1/sqrt(fan_in)) for the bias. */
static bool linear_reset(mtk_module *m, mtk_rng *rng)
{
    mtk_tensor *weight = mtk_module_find_tensor(m, "weight");
    mtk_tensor *bias = mtk_module_find_tensor(m, "bias");
    if (!mtk_init_kaiming_uniform_(weight, sqrt(5.0), rng)) return false;
    return !bias || nn_init_bias_from_weight(bias, weight, rng);
}

bool nn_init_bias_from_weight(mtk_tensor *bias, const mtk_tensor *weight, mtk_rng *rng)
{
    int64_t fan_in = 0, fan_out = 0;
    if (!mtk_init_fans(weight, &fan_in, &fan_out)) return false;
    double bound = fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 0.0;
    return mtk_init_uniform_(bias, -bound, bound, rng);
}

static bool linear_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    io->out[0] = mtk_linear(ctx, io->in[0], mtk_module_find_tensor(m, "weight"),
                            mtk_module_find_tensor(m, "bias"));
    io->nout = 1;
    return io->out[0] != NULL;
}

const mtk_module_type nn_linear_type = { "Linear", linear_forward, linear_reset, linear_repr };
const mtk_module_type nn_ndq_linear_type = { "NonDynamicallyQuantizableLinear", linear_forward,
                                             linear_reset, linear_repr };

static mtk_module *make_linear(mtk_ctx *ctx, const mtk_module_type *type, int64_t in_features,
                               int64_t out_features, bool bias)
{
    if (in_features < 0 || out_features < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "Linear: in_features and out_features must be non-negative, got %lld and %lld",
                  (long long)in_features, (long long)out_features);
        return NULL;
    }
    mtk_module *m = mtk_module_new(ctx, type, sizeof(linear_config));
    if (!m) return NULL;
    *(linear_config *)mtk_module_config(m) = (linear_config){ in_features, out_features, bias };
    int64_t wshape[2] = { out_features, in_features };
    if (!mtk_module_new_parameter(m, "weight", wshape, 2)) return NULL;
    if (bias && !mtk_module_new_parameter(m, "bias", &out_features, 1)) return NULL;
    return mtk_module_finish(m);
}

mtk_module *mtk_nn_linear(mtk_ctx *ctx, int64_t in_features, int64_t out_features, bool bias)
{
    return make_linear(ctx, &nn_linear_type, in_features, out_features, bias);
}

mtk_module *nn_ndq_linear(mtk_ctx *ctx, int64_t in_features, int64_t out_features, bool bias)
{
    return make_linear(ctx, &nn_ndq_linear_type, in_features, out_features, bias);
}

/* ------------------------------------------------------------ LazyLinear */

static bool lazy_linear_forward(mtk_module *m, mtk_module_io *io)
{
    linear_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *weight = mtk_module_find_tensor(m, "weight");
    mtk_tensor *bias = mtk_module_find_tensor(m, "bias");
    if (weight->flags & MTK_TENSOR_LAZY) {
        if (x->ndim < 1)
            return mtk_error(mtk_module_ctx(m), MTK_ERR_SHAPE,
                             "LazyLinear: cannot infer in_features from a 0-dim input");
        c->in_features = x->shape[x->ndim - 1];
        int64_t wshape[2] = { c->out_features, c->in_features };
        if (!mtk_module_materialize_lazy(m, weight, wshape, 2)) return false;
        if (bias && (bias->flags & MTK_TENSOR_LAZY) &&
            !mtk_module_materialize_lazy(m, bias, &c->out_features, 1))
            return false;
    } else {
        c->in_features = weight->shape[weight->ndim - 1]; /* shape came from a state dict */
    }
    if (!mtk_module_finish_lazy(m, &nn_linear_type)) return false;
    return linear_forward(m, io);
}

static const mtk_module_type lazy_linear_type = { "LazyLinear", lazy_linear_forward, linear_reset,
                                                  linear_repr };

mtk_module *mtk_nn_lazy_linear(mtk_ctx *ctx, int64_t out_features, bool bias)
{
    if (out_features < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "LazyLinear: out_features must be non-negative, got %lld",
                  (long long)out_features);
        return NULL;
    }
    mtk_module *m = mtk_module_new(ctx, &lazy_linear_type, sizeof(linear_config));
    if (!m) return NULL;
    *(linear_config *)mtk_module_config(m) = (linear_config){ 0, out_features, bias };
    if (!mtk_module_new_lazy_parameter(m, "weight")) return NULL;
    if (bias && !mtk_module_new_lazy_parameter(m, "bias")) return NULL;
    return m;
}

/* -------------------------------------------------------------- Bilinear */

typedef struct bilinear_config {
    int64_t in1_features, in2_features, out_features;
    bool bias;
} bilinear_config;

static void bilinear_repr(const mtk_module *m, char *buf, size_t cap)
{
    const bilinear_config *c = mtk_module_config(m);
    snprintf(buf, cap, "in1_features=%lld, in2_features=%lld, out_features=%lld, bias=%s",
             (long long)c->in1_features, (long long)c->in2_features, (long long)c->out_features,
             c->bias ? "True" : "False");
}

static bool bilinear_reset(mtk_module *m, mtk_rng *rng)
{
    const bilinear_config *c = mtk_module_config(m);
    double bound = c->in1_features > 0 ? 1.0 / sqrt((double)c->in1_features) : 0.0;
    mtk_tensor *bias = mtk_module_find_tensor(m, "bias");
    if (!mtk_init_uniform_(mtk_module_find_tensor(m, "weight"), -bound, bound, rng)) return false;
    return !bias || mtk_init_uniform_(bias, -bound, bound, rng);
}

/* y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o], as products:
 * (B, in1) @ (in1, out*in2) -> (B, out, in2) @ (B, in2, 1) -> (B, out). */
static bool bilinear_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const bilinear_config *c = mtk_module_config(m);
    if (io->nin != 2)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "Bilinear.forward takes 2 inputs, got %d", (int)io->nin);
    mtk_tensor *x1 = io->in[0], *x2 = io->in[1];
    char a[128], b[128];
    if (x1->ndim < 1 || x1->ndim != x2->ndim)
        return mtk_error(ctx, MTK_ERR_SHAPE, "bilinear(): input dimensions do not match: got %d and %d",
                         (int)x1->ndim, (int)x2->ndim);
    for (int32_t d = 0; d + 1 < x1->ndim; d++)
        if (x1->shape[d] != x2->shape[d])
            return mtk_error(ctx, MTK_ERR_SHAPE, "bilinear(): input batch dimensions do not match: got %s and %s",
                             mtk_shape_list_str(x1->shape, x1->ndim - 1, a, sizeof a),
                             mtk_shape_list_str(x2->shape, x2->ndim - 1, b, sizeof b));
    if (x1->shape[x1->ndim - 1] != c->in1_features)
        return mtk_error(ctx, MTK_ERR_SHAPE, "bilinear(): input1 size does not match weight size: got %lld but expected %lld",
                         (long long)x1->shape[x1->ndim - 1], (long long)c->in1_features);
    if (x2->shape[x2->ndim - 1] != c->in2_features)
        return mtk_error(ctx, MTK_ERR_SHAPE, "bilinear(): input2 size does not match weight size: got %lld but expected %lld",
                         (long long)x2->shape[x2->ndim - 1], (long long)c->in2_features);
    int64_t batch = mtk_shape_numel(x1->shape, x1->ndim - 1);
    int64_t x1_shape[2] = { batch, c->in1_features }, x2_shape[3] = { batch, c->in2_features, 1 };
    int64_t w_shape[2] = { c->in1_features, c->out_features * c->in2_features };
    int64_t t_shape[3] = { batch, c->out_features, c->in2_features };
    int64_t perm[3] = { 1, 0, 2 };
    mtk_tensor *w = mtk_reshape(ctx, mtk_permute(ctx, mtk_module_find_tensor(m, "weight"), perm, 3), w_shape, 2);
    mtk_tensor *t = mtk_reshape(ctx, mtk_mm(ctx, mtk_reshape(ctx, x1, x1_shape, 2), w), t_shape, 3);
    mtk_tensor *y = mtk_squeeze_dim(ctx, mtk_matmul(ctx, t, mtk_reshape(ctx, x2, x2_shape, 3)), -1);
    mtk_tensor *bias = mtk_module_find_tensor(m, "bias");
    if (bias) y = mtk_add(ctx, y, bias);
    int64_t out_shape[MTK_MAX_DIMS];
    for (int32_t d = 0; d + 1 < x1->ndim; d++) out_shape[d] = x1->shape[d];
    out_shape[x1->ndim - 1] = c->out_features;
    io->out[0] = mtk_reshape(ctx, y, out_shape, x1->ndim);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type bilinear_type = { "Bilinear", bilinear_forward, bilinear_reset, bilinear_repr };

mtk_module *mtk_nn_bilinear(mtk_ctx *ctx, int64_t in1_features, int64_t in2_features, int64_t out_features,
                            bool bias)
{
    if (in1_features < 0 || in2_features < 0 || out_features < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "Bilinear: feature sizes must be non-negative");
        return NULL;
    }
    mtk_module *m = mtk_module_new(ctx, &bilinear_type, sizeof(bilinear_config));
    if (!m) return NULL;
    *(bilinear_config *)mtk_module_config(m) = (bilinear_config){ in1_features, in2_features, out_features, bias };
    int64_t wshape[3] = { out_features, in1_features, in2_features };
    if (!mtk_module_new_parameter(m, "weight", wshape, 3)) return NULL;
    if (bias && !mtk_module_new_parameter(m, "bias", &out_features, 1)) return NULL;
    return mtk_module_finish(m);
}

/* -------------------------------------------------------------- Identity */

static bool identity_forward(mtk_module *m, mtk_module_io *io)
{
    (void)m;
    io->out[0] = io->in[0];
    io->nout = 1;
    return true;
}

static const mtk_module_type identity_type = { "Identity", identity_forward, NULL, NULL };

mtk_module *mtk_nn_identity(mtk_ctx *ctx) { return mtk_module_new(ctx, &identity_type, 0); }
