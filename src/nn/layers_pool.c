/* Pooling: MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d,
 * AdaptiveMaxPool1d/2d/3d. */
#include "nn/layers.h"
#include "mtk/ops.h"

#include <string.h>

typedef enum pool_kind { POOL_MAX, POOL_AVG, POOL_ADAPTIVE_AVG, POOL_ADAPTIVE_MAX } pool_kind;

typedef struct pool_config {
    pool_kind kind;
    int32_t dims;
    int64_t kernel[3];      /* output_size for the adaptive ones */
    mtk_pool_options o;     /* stride filled in (kernel when 0)  */
    bool stride_defaulted;  /* stride=None: it is the kernel size */
} pool_config;

mtk_pool_options mtk_pool_defaults(void)
{
    return (mtk_pool_options){ .dilation = { 1, 1, 1 }, .count_include_pad = true };
}

/* PyTorch prints what the user passed; mtk prints one int when every dim
 * agrees (MaxPool2d(2)) and the tuple otherwise. */
static const char *int_or_tuple(const int64_t *v, int32_t n, bool force_tuple, char *buf, size_t cap)
{
    bool same = true;
    for (int32_t i = 1; i < n; i++) same &= v[i] == v[0];
    if (same && !force_tuple) {
        snprintf(buf, cap, "%lld", (long long)v[0]);
        return buf;
    }
    return nn_py_tuple(v, n, buf, cap);
}

static void pool_repr(const mtk_module *m, char *buf, size_t cap)
{
    const pool_config *c = mtk_module_config(m);
    char k[96], s[96], p[96], d[96];
    /* AvgPool1d stores tuples (_single), the others what they were given */
    bool tuple = c->kind == POOL_AVG && c->dims == 1;
    int_or_tuple(c->kernel, c->dims, tuple || c->o.tuple_repr, k, sizeof k);
    bool stride_tuple = tuple || (c->o.tuple_repr && c->stride_defaulted);
    switch (c->kind) {
    case POOL_MAX:
        snprintf(buf, cap, "kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s", k,
                 int_or_tuple(c->o.stride, c->dims, stride_tuple, s, sizeof s),
                 int_or_tuple(c->o.padding, c->dims, false, p, sizeof p),
                 int_or_tuple(c->o.dilation, c->dims, false, d, sizeof d), nn_py_bool(c->o.ceil_mode));
        break;
    case POOL_AVG:
        snprintf(buf, cap, "kernel_size=%s, stride=%s, padding=%s", k,
                 int_or_tuple(c->o.stride, c->dims, stride_tuple, s, sizeof s),
                 int_or_tuple(c->o.padding, c->dims, tuple, p, sizeof p));
        break;
    case POOL_ADAPTIVE_AVG:
    case POOL_ADAPTIVE_MAX: snprintf(buf, cap, "output_size=%s", k); break;
    }
}

static bool pool_forward(mtk_module *m, mtk_module_io *io)
{
    typedef mtk_tensor *(*max_fn)(mtk_ctx *, mtk_tensor *, const mtk_pool_args *, mtk_tensor **);
    typedef mtk_tensor *(*avg_fn)(mtk_ctx *, mtk_tensor *, const mtk_pool_args *);
    typedef mtk_tensor *(*adaptive_avg_fn)(mtk_ctx *, mtk_tensor *, const int64_t *);
    typedef mtk_tensor *(*adaptive_max_fn)(mtk_ctx *, mtk_tensor *, const int64_t *, mtk_tensor **);
    static const max_fn max_pools[3] = { mtk_max_pool1d, mtk_max_pool2d, mtk_max_pool3d };
    static const avg_fn avg_pools[3] = { mtk_avg_pool1d, mtk_avg_pool2d, mtk_avg_pool3d };
    static const adaptive_avg_fn adaptive_avg[3] = { mtk_adaptive_avg_pool1d, mtk_adaptive_avg_pool2d,
                                                     mtk_adaptive_avg_pool3d };
    static const adaptive_max_fn adaptive_max[3] = { mtk_adaptive_max_pool1d, mtk_adaptive_max_pool2d,
                                                     mtk_adaptive_max_pool3d };
    const pool_config *c = mtk_module_config(m);
    mtk_ctx *ctx = mtk_module_ctx(m);
    int32_t d = c->dims - 1;
    if (c->kind == POOL_ADAPTIVE_AVG) return nn_output(io, adaptive_avg[d](ctx, io->in[0], c->kernel));
    if (c->kind == POOL_ADAPTIVE_MAX) return nn_output(io, adaptive_max[d](ctx, io->in[0], c->kernel, NULL));
    mtk_pool_args args = mtk_pool_args_default(c->kernel[0]);
    for (int32_t i = 0; i < c->dims; i++) {
        args.kernel_size[i] = c->kernel[i];
        args.stride[i] = c->o.stride[i];
        args.padding[i] = c->o.padding[i];
        args.dilation[i] = c->o.dilation[i];
    }
    args.ceil_mode = c->o.ceil_mode;
    args.count_include_pad = c->o.count_include_pad;
    if (c->kind == POOL_MAX) return nn_output(io, max_pools[d](ctx, io->in[0], &args, NULL));
    return nn_output(io, avg_pools[d](ctx, io->in[0], &args));
}

#define POOL_TYPE(name) { name, pool_forward, NULL, pool_repr }
static const mtk_module_type pool_types[4][3] = {
    { POOL_TYPE("MaxPool1d"), POOL_TYPE("MaxPool2d"), POOL_TYPE("MaxPool3d") },
    { POOL_TYPE("AvgPool1d"), POOL_TYPE("AvgPool2d"), POOL_TYPE("AvgPool3d") },
    { POOL_TYPE("AdaptiveAvgPool1d"), POOL_TYPE("AdaptiveAvgPool2d"), POOL_TYPE("AdaptiveAvgPool3d") },
    { POOL_TYPE("AdaptiveMaxPool1d"), POOL_TYPE("AdaptiveMaxPool2d"), POOL_TYPE("AdaptiveMaxPool3d") },
};

static mtk_module *make_pool(mtk_ctx *ctx, pool_kind kind, int32_t dims, const int64_t *sizes,
                             const mtk_pool_options *options)
{
    if (dims < 1 || dims > 3 || !sizes) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "pooling: dims must be 1, 2 or 3 (got %d) with %s", (int)dims,
                  kind >= POOL_ADAPTIVE_AVG ? "an output_size" : "a kernel_size");
        return NULL;
    }
    mtk_pool_options o = options ? *options : mtk_pool_defaults();
    for (int32_t i = 0; i < dims; i++) {
        bool adaptive = kind >= POOL_ADAPTIVE_AVG;
        if ((adaptive && sizes[i] < 0) || (!adaptive && sizes[i] <= 0) || o.stride[i] < 0 || o.padding[i] < 0 ||
            (kind == POOL_MAX && o.dilation[i] <= 0)) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: bad size in dim %d (size %lld, stride %lld, padding %lld)",
                      pool_types[kind][dims - 1].name, (int)i, (long long)sizes[i], (long long)o.stride[i],
                      (long long)o.padding[i]);
            return NULL;
        }
    }
    bool stride_defaulted = true;
    for (int32_t i = 0; i < dims; i++) stride_defaulted &= o.stride[i] == 0;
    for (int32_t i = 0; i < dims; i++)
        if (o.stride[i] == 0) o.stride[i] = sizes[i]; /* stride=None */
    mtk_module *m = mtk_module_new(ctx, &pool_types[kind][dims - 1], sizeof(pool_config));
    if (!m) return NULL;
    pool_config *c = mtk_module_config(m);
    *c = (pool_config){ .kind = kind, .dims = dims, .o = o, .stride_defaulted = stride_defaulted };
    memcpy(c->kernel, sizes, (size_t)dims * sizeof *sizes);
    return m;
}

mtk_module *mtk_nn_max_pool(mtk_ctx *ctx, int32_t dims, const int64_t *kernel_size, const mtk_pool_options *options)
{
    return make_pool(ctx, POOL_MAX, dims, kernel_size, options);
}

mtk_module *mtk_nn_avg_pool(mtk_ctx *ctx, int32_t dims, const int64_t *kernel_size, const mtk_pool_options *options)
{
    return make_pool(ctx, POOL_AVG, dims, kernel_size, options);
}

mtk_module *mtk_nn_adaptive_avg_pool(mtk_ctx *ctx, int32_t dims, const int64_t *output_size,
                                     const mtk_pool_options *options)
{
    return make_pool(ctx, POOL_ADAPTIVE_AVG, dims, output_size, options);
}

mtk_module *mtk_nn_adaptive_max_pool(mtk_ctx *ctx, int32_t dims, const int64_t *output_size,
                                     const mtk_pool_options *options)
{
    return make_pool(ctx, POOL_ADAPTIVE_MAX, dims, output_size, options);
}
