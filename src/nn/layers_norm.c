/* Normalization layers: LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d/3d
 * and LazyBatchNorm1d/2d/3d. */
#include "nn/layers.h"
#include "mtk/ops.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------- LayerNorm, RMSNorm */

typedef struct norm_config {
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    double eps;  /* NaN: None (RMSNorm) */
    bool affine, bias;
} norm_config;

static bool ones_and_zeros(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    mtk_tensor *weight = mtk_module_find_tensor(m, "weight"), *bias = mtk_module_find_tensor(m, "bias");
    return (!weight || mtk_init_ones_(weight)) && (!bias || mtk_init_zeros_(bias));
}

static void layer_norm_repr(const mtk_module *m, char *buf, size_t cap)
{
    const norm_config *c = mtk_module_config(m);
    char shape[256], eps[40];
    snprintf(buf, cap, "%s, eps=%s, elementwise_affine=%s, bias=%s", nn_py_tuple(c->shape, c->ndim, shape, sizeof shape),
             nn_py_float(c->eps, eps, sizeof eps), nn_py_bool(c->affine), nn_py_bool(c->bias));
}

static void rms_norm_repr(const mtk_module *m, char *buf, size_t cap)
{
    const norm_config *c = mtk_module_config(m);
    char shape[256], eps[40];
    snprintf(buf, cap, "%s, eps=%s, elementwise_affine=%s", nn_py_tuple(c->shape, c->ndim, shape, sizeof shape),
             isnan(c->eps) ? "None" : nn_py_float(c->eps, eps, sizeof eps), nn_py_bool(c->affine));
}

static bool layer_norm_forward(mtk_module *m, mtk_module_io *io)
{
    const norm_config *c = mtk_module_config(m);
    return nn_output(io, mtk_layer_norm(mtk_module_ctx(m), io->in[0], c->shape, c->ndim,
                                        mtk_module_find_tensor(m, "weight"), mtk_module_find_tensor(m, "bias"),
                                        c->eps));
}

static bool rms_norm_forward(mtk_module *m, mtk_module_io *io)
{
    const norm_config *c = mtk_module_config(m);
    /* eps NAN (None): the compute dtype's machine epsilon */
    return nn_output(io, mtk_rms_norm(mtk_module_ctx(m), io->in[0], c->shape, c->ndim,
                                      mtk_module_find_tensor(m, "weight"), c->eps));
}

static const mtk_module_type layer_norm_type = { "LayerNorm", layer_norm_forward, ones_and_zeros, layer_norm_repr };
static const mtk_module_type rms_norm_type = { "RMSNorm", rms_norm_forward, ones_and_zeros, rms_norm_repr };

static mtk_module *make_norm(mtk_ctx *ctx, const mtk_module_type *type, const int64_t *shape, int32_t ndim,
                             double eps, bool affine, bool bias)
{
    if (ndim < 0 || ndim > MTK_MAX_DIMS || (ndim > 0 && !shape)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: normalized_shape of %d dims", type->name, (int)ndim);
        return NULL;
    }
    if (!mtk_shape_check(ctx, type->name, shape, ndim, NULL)) return NULL;
    mtk_module *m = mtk_module_new(ctx, type, sizeof(norm_config));
    if (!m) return NULL;
    norm_config *c = mtk_module_config(m);
    if (ndim) memcpy(c->shape, shape, (size_t)ndim * sizeof *shape);
    c->ndim = ndim;
    c->eps = eps;
    c->affine = affine;
    c->bias = affine && bias;
    if (affine && !mtk_module_new_parameter(m, "weight", shape, ndim)) return NULL;
    if (c->bias && !mtk_module_new_parameter(m, "bias", shape, ndim)) return NULL;
    return mtk_module_finish(m);
}

mtk_module *mtk_nn_layer_norm(mtk_ctx *ctx, const int64_t *normalized_shape, int32_t ndim, double eps,
                              bool elementwise_affine, bool bias)
{
    return make_norm(ctx, &layer_norm_type, normalized_shape, ndim, eps, elementwise_affine, bias);
}

mtk_module *mtk_nn_rms_norm(mtk_ctx *ctx, const int64_t *normalized_shape, int32_t ndim, double eps,
                            bool elementwise_affine)
{
    return make_norm(ctx, &rms_norm_type, normalized_shape, ndim, eps, elementwise_affine, false);
}

/* ------------------------------------------------------------ GroupNorm */

typedef struct group_norm_config {
    int64_t num_groups, num_channels;
    double eps;
    bool affine, bias;
} group_norm_config;

static void group_norm_repr(const mtk_module *m, char *buf, size_t cap)
{
    const group_norm_config *c = mtk_module_config(m);
    char eps[40];
    snprintf(buf, cap, "%lld, %lld, eps=%s, affine=%s, bias=%s", (long long)c->num_groups,
             (long long)c->num_channels, nn_py_float(c->eps, eps, sizeof eps), nn_py_bool(c->affine),
             nn_py_bool(c->bias));
}

static bool group_norm_forward(mtk_module *m, mtk_module_io *io)
{
    const group_norm_config *c = mtk_module_config(m);
    return nn_output(io, mtk_group_norm(mtk_module_ctx(m), io->in[0], c->num_groups,
                                        mtk_module_find_tensor(m, "weight"), mtk_module_find_tensor(m, "bias"),
                                        c->eps));
}

static const mtk_module_type group_norm_type = { "GroupNorm", group_norm_forward, ones_and_zeros, group_norm_repr };

mtk_module *mtk_nn_group_norm(mtk_ctx *ctx, int64_t num_groups, int64_t num_channels, double eps, bool affine,
                              bool bias)
{
    if (num_groups <= 0 || num_channels < 0 || num_channels % num_groups != 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "GroupNorm: num_channels (%lld) must be divisible by num_groups (%lld)",
                  (long long)num_channels, (long long)num_groups);
        return NULL;
    }
    mtk_module *m = mtk_module_new(ctx, &group_norm_type, sizeof(group_norm_config));
    if (!m) return NULL;
    *(group_norm_config *)mtk_module_config(m) =
        (group_norm_config){ num_groups, num_channels, eps, affine, affine && bias };
    if (affine && !mtk_module_new_parameter(m, "weight", &num_channels, 1)) return NULL;
    if (affine && bias && !mtk_module_new_parameter(m, "bias", &num_channels, 1)) return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------------------ BatchNorm */

typedef struct batch_norm_config {
    int32_t dims;
    int64_t num_features;
    mtk_batch_norm_options o;
} batch_norm_config;

mtk_batch_norm_options mtk_batch_norm_defaults(void)
{
    return (mtk_batch_norm_options){ .eps = 1e-5, .momentum = 0.1, .affine = true, .bias = true,
                                     .track_running_stats = true };
}

static void batch_norm_repr(const mtk_module *m, char *buf, size_t cap)
{
    const batch_norm_config *c = mtk_module_config(m);
    char eps[40], momentum[40];
    snprintf(buf, cap, "%lld, eps=%s, momentum=%s, affine=%s, bias=%s, track_running_stats=%s",
             (long long)c->num_features, nn_py_float(c->o.eps, eps, sizeof eps),
             isnan(c->o.momentum) ? "None" : nn_py_float(c->o.momentum, momentum, sizeof momentum),
             nn_py_bool(c->o.affine), nn_py_bool(c->o.affine && c->o.bias), nn_py_bool(c->o.track_running_stats));
}

/* reset_running_stats + reset_parameters. */
static bool batch_norm_reset(mtk_module *m, mtk_rng *rng)
{
    mtk_tensor *mean = mtk_module_find_tensor(m, "running_mean");
    mtk_tensor *var = mtk_module_find_tensor(m, "running_var");
    mtk_tensor *count = mtk_module_find_tensor(m, "num_batches_tracked");
    return (!mean || mtk_init_zeros_(mean)) && (!var || mtk_init_ones_(var)) &&
           (!count || mtk_init_zeros_(count)) && ones_and_zeros(m, rng);
}

static bool check_batch_norm_input(mtk_module *m, const batch_norm_config *c, const mtk_tensor *x)
{
    bool ok = c->dims == 1 ? (x->ndim == 2 || x->ndim == 3) : x->ndim == c->dims + 2;
    if (ok) return true;
    const char *want = c->dims == 1 ? "2D or 3D" : c->dims == 2 ? "4D" : "5D";
    return mtk_error(mtk_module_ctx(m), MTK_ERR_SHAPE, "%s: expected %s input (got %dD input)",
                     mtk_module_type_name(m), want, (int)x->ndim);
}

static bool batch_norm_forward(mtk_module *m, mtk_module_io *io)
{
    const batch_norm_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    if (!check_batch_norm_input(m, c, x)) return false;
    mtk_tensor *mean = mtk_module_find_tensor(m, "running_mean");
    mtk_tensor *var = mtk_module_find_tensor(m, "running_var");
    mtk_tensor *count = mtk_module_find_tensor(m, "num_batches_tracked");
    bool training = mtk_module_is_training(m);
    double factor = isnan(c->o.momentum) ? 0.0 : c->o.momentum;
    if (training && c->o.track_running_stats && count && mtk_tensor_data(count)) {
        int64_t *n = mtk_tensor_data(count); /* num_batches_tracked += 1 */
        *n += 1;
        if (isnan(c->o.momentum)) factor = 1.0 / (double)*n;
    }
    return nn_output(io, mtk_batch_norm(mtk_module_ctx(m), x, mean, var, mtk_module_find_tensor(m, "weight"),
                                        mtk_module_find_tensor(m, "bias"), training || !mean, factor, c->o.eps));
}

static const mtk_module_type batch_norm_types[3] = {
    { "BatchNorm1d", batch_norm_forward, batch_norm_reset, batch_norm_repr },
    { "BatchNorm2d", batch_norm_forward, batch_norm_reset, batch_norm_repr },
    { "BatchNorm3d", batch_norm_forward, batch_norm_reset, batch_norm_repr },
};

/* The tensors of a batch norm: shaped (num_features) or lazy. */
static bool add_batch_norm_tensors(mtk_module *m, const batch_norm_config *c, bool lazy)
{
    int64_t n = c->num_features;
    if (c->o.affine) {
        if (!(lazy ? mtk_module_new_lazy_parameter(m, "weight") : mtk_module_new_parameter(m, "weight", &n, 1)))
            return false;
        if (c->o.bias &&
            !(lazy ? mtk_module_new_lazy_parameter(m, "bias") : mtk_module_new_parameter(m, "bias", &n, 1)))
            return false;
    }
    if (!c->o.track_running_stats) return true;
    if (!(lazy ? mtk_module_new_lazy_buffer(m, "running_mean", MTK_DTYPE_UNDEFINED, true)
               : mtk_module_new_buffer(m, "running_mean", &n, 1, MTK_DTYPE_UNDEFINED, true)) ||
        !(lazy ? mtk_module_new_lazy_buffer(m, "running_var", MTK_DTYPE_UNDEFINED, true)
               : mtk_module_new_buffer(m, "running_var", &n, 1, MTK_DTYPE_UNDEFINED, true)))
        return false;
    /* a 0-dim int64 counter, known even for a lazy module (torch.tensor(0)) */
    mtk_tensor *count = mtk_module_new_buffer(m, "num_batches_tracked", NULL, 0, MTK_INT64, true);
    return count && (!lazy || mtk_init_zeros_(count));
}

static bool check_dims(mtk_ctx *ctx, int32_t dims, const char *what)
{
    if (dims >= 1 && dims <= 3) return true;
    return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: dims must be 1, 2 or 3, got %d", what, (int)dims);
}

mtk_module *mtk_nn_batch_norm(mtk_ctx *ctx, int32_t dims, int64_t num_features, const mtk_batch_norm_options *options)
{
    if (!check_dims(ctx, dims, "BatchNorm")) return NULL;
    if (num_features < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "BatchNorm: num_features must be non-negative, got %lld",
                  (long long)num_features);
        return NULL;
    }
    mtk_module *m = mtk_module_new(ctx, &batch_norm_types[dims - 1], sizeof(batch_norm_config));
    if (!m) return NULL;
    batch_norm_config *c = mtk_module_config(m);
    *c = (batch_norm_config){ dims, num_features, options ? *options : mtk_batch_norm_defaults() };
    if (!add_batch_norm_tensors(m, c, false)) return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------------- LazyBatchNorm */

static bool lazy_batch_norm_forward(mtk_module *m, mtk_module_io *io)
{
    batch_norm_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    if (!check_batch_norm_input(m, c, x)) return false;
    c->num_features = x->shape[1];
    const char *names[4] = { "weight", "bias", "running_mean", "running_var" };
    for (int i = 0; i < 4; i++) {
        mtk_tensor *t = mtk_module_find_tensor(m, names[i]);
        if (t && (t->flags & MTK_TENSOR_LAZY) && !mtk_module_materialize_lazy(m, t, &c->num_features, 1))
            return false;
    }
    if (!mtk_module_finish_lazy(m, &batch_norm_types[c->dims - 1])) return false;
    return batch_norm_forward(m, io);
}

static const mtk_module_type lazy_batch_norm_types[3] = {
    { "LazyBatchNorm1d", lazy_batch_norm_forward, batch_norm_reset, batch_norm_repr },
    { "LazyBatchNorm2d", lazy_batch_norm_forward, batch_norm_reset, batch_norm_repr },
    { "LazyBatchNorm3d", lazy_batch_norm_forward, batch_norm_reset, batch_norm_repr },
};

mtk_module *mtk_nn_lazy_batch_norm(mtk_ctx *ctx, int32_t dims, const mtk_batch_norm_options *options)
{
    if (!check_dims(ctx, dims, "LazyBatchNorm")) return NULL;
    mtk_module *m = mtk_module_new(ctx, &lazy_batch_norm_types[dims - 1], sizeof(batch_norm_config));
    if (!m) return NULL;
    batch_norm_config *c = mtk_module_config(m);
    *c = (batch_norm_config){ dims, 0, options ? *options : mtk_batch_norm_defaults() };
    return add_batch_norm_tensors(m, c, true) ? m : NULL;
}
