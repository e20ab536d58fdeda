/* Convolutions: Conv1d/2d/3d, ConvTranspose1d/2d/3d, LazyConv1d/2d/3d. */
#include "nn/layers.h"
#include "mtk/ops.h"

#include <math.h>
#include <string.h>

typedef struct conv_config {
    int32_t dims;
    bool transposed;
    int64_t in_channels, out_channels;
    int64_t kernel[3];
    mtk_conv_options o;
    char padding_mode[16];
} conv_config;

mtk_conv_options mtk_conv_defaults(void)
{
    return (mtk_conv_options){ .stride = { 1, 1, 1 }, .dilation = { 1, 1, 1 }, .groups = 1, .bias = true,
                               .padding_mode = "zeros" };
}

static bool all_equal(const int64_t *v, int32_t n, int64_t value)
{
    for (int32_t i = 0; i < n; i++)
        if (v[i] != value) return false;
    return true;
}

/* torch's ConvNd.extra_repr. */
static void conv_repr(const mtk_module *m, char *buf, size_t cap)
{
    const conv_config *c = mtk_module_config(m);
    int32_t d = c->dims;
    char t[128];
    size_t n = 0;
#define APPEND(...) \
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, __VA_ARGS__)
    APPEND("%lld, %lld, kernel_size=%s", (long long)c->in_channels, (long long)c->out_channels,
           nn_py_tuple(c->kernel, d, t, sizeof t));
    APPEND(", stride=%s", nn_py_tuple(c->o.stride, d, t, sizeof t));
    if (!all_equal(c->o.padding, d, 0)) APPEND(", padding=%s", nn_py_tuple(c->o.padding, d, t, sizeof t));
    if (!all_equal(c->o.dilation, d, 1)) APPEND(", dilation=%s", nn_py_tuple(c->o.dilation, d, t, sizeof t));
    if (!all_equal(c->o.output_padding, d, 0))
        APPEND(", output_padding=%s", nn_py_tuple(c->o.output_padding, d, t, sizeof t));
    if (c->o.groups != 1) APPEND(", groups=%lld", (long long)c->o.groups);
    if (!c->o.bias) APPEND(", bias=False");
    if (strcmp(c->padding_mode, "zeros") != 0) APPEND(", padding_mode=%s", c->padding_mode);
#undef APPEND
}

/* kaiming_uniform(a=sqrt(5)) weight, U(+-1/sqrt(fan_in)) bias. */
static bool conv_reset(mtk_module *m, mtk_rng *rng)
{
    mtk_tensor *weight = mtk_module_find_tensor(m, "weight"), *bias = mtk_module_find_tensor(m, "bias");
    if (!mtk_init_kaiming_uniform_(weight, sqrt(5.0), rng)) return false;
    return !bias || nn_init_bias_from_weight(bias, weight, rng);
}

/* F.pad(input, reversed padding repeated twice, mode) for the non-zero
 * padding modes. */
static mtk_tensor *pad_input(mtk_module *m, const conv_config *c, mtk_tensor *x)
{
    int64_t pad[6];
    for (int32_t i = 0; i < c->dims; i++) {
        pad[2 * i] = pad[2 * i + 1] = c->o.padding[c->dims - 1 - i];
    }
    return mtk_pad(mtk_module_ctx(m), x, pad, 2 * c->dims, c->padding_mode, 0.0);
}

static bool conv_forward(mtk_module *m, mtk_module_io *io)
{
    const conv_config *c = mtk_module_config(m);
    typedef mtk_tensor *(*conv_fn)(mtk_ctx *, mtk_tensor *, mtk_tensor *, mtk_tensor *, const mtk_conv_args *);
    static const conv_fn convs[2][3] = { { mtk_conv1d, mtk_conv2d, mtk_conv3d },
                                         { mtk_conv_transpose1d, mtk_conv_transpose2d, mtk_conv_transpose3d } };
    mtk_tensor *x = io->in[0];
    bool zeros = strcmp(c->padding_mode, "zeros") == 0;
    if (!zeros && !(x = pad_input(m, c, x))) return false; /* padded already: the conv pads nothing */
    mtk_conv_args args = mtk_conv_args_default();
    for (int32_t i = 0; i < c->dims; i++) {
        args.stride[i] = c->o.stride[i];
        args.padding[i] = zeros ? c->o.padding[i] : 0;
        args.dilation[i] = c->o.dilation[i];
        args.output_padding[i] = c->transposed ? c->o.output_padding[i] : 0;
    }
    args.groups = c->o.groups;
    return nn_output(io, convs[c->transposed][c->dims - 1](mtk_module_ctx(m), x, mtk_module_find_tensor(m, "weight"),
                                                            mtk_module_find_tensor(m, "bias"), &args));
}

static const mtk_module_type conv_types[2][3] = {
    { { "Conv1d", conv_forward, conv_reset, conv_repr },
      { "Conv2d", conv_forward, conv_reset, conv_repr },
      { "Conv3d", conv_forward, conv_reset, conv_repr } },
    { { "ConvTranspose1d", conv_forward, conv_reset, conv_repr },
      { "ConvTranspose2d", conv_forward, conv_reset, conv_repr },
      { "ConvTranspose3d", conv_forward, conv_reset, conv_repr } },
};

/* Checks the arguments PyTorch checks in _ConvNd.__init__. */
static bool check_conv(mtk_ctx *ctx, const char *what, int32_t dims, int64_t in, int64_t out,
                       const int64_t *kernel, const mtk_conv_options *o, bool lazy)
{
    if (dims < 1 || dims > 3)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: dims must be 1, 2 or 3, got %d", what, (int)dims);
    if (!kernel) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: kernel_size is NULL", what);
    if (o->groups <= 0) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "groups must be a positive integer");
    if (!lazy && in % o->groups != 0)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "in_channels must be divisible by groups");
    if (out % o->groups != 0) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "out_channels must be divisible by groups");
    if (in < 0 || out < 0) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: channel counts must be non-negative", what);
    for (int32_t i = 0; i < dims; i++) {
        if (kernel[i] <= 0 || o->stride[i] <= 0 || o->dilation[i] <= 0 || o->padding[i] < 0 || o->output_padding[i] < 0)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "%s: kernel_size, stride and dilation must be positive and padding non-negative "
                             "(dim %d: kernel %lld, stride %lld, dilation %lld, padding %lld)",
                             what, (int)i, (long long)kernel[i], (long long)o->stride[i],
                             (long long)o->dilation[i], (long long)o->padding[i]);
    }
    const char *mode = o->padding_mode ? o->padding_mode : "zeros";
    static const char *const modes[] = { "zeros", "reflect", "replicate", "circular" };
    for (size_t i = 0; i < 4; i++)
        if (strcmp(mode, modes[i]) == 0) return true;
    return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                     "padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got "
                     "padding_mode='%s'", mode);
}

/* The weight shape: (out, in/groups, *k), or (in, out/groups, *k) transposed. */
static int32_t weight_shape(const conv_config *c, int64_t *shape)
{
    shape[0] = c->transposed ? c->in_channels : c->out_channels;
    shape[1] = (c->transposed ? c->out_channels : c->in_channels) / c->o.groups;
    for (int32_t i = 0; i < c->dims; i++) shape[2 + i] = c->kernel[i];
    return 2 + c->dims;
}

static mtk_module *make_conv(mtk_ctx *ctx, const mtk_module_type *type, int32_t dims, bool transposed,
                             int64_t in, int64_t out, const int64_t *kernel, const mtk_conv_options *options,
                             bool lazy)
{
    mtk_conv_options o = options ? *options : mtk_conv_defaults();
    if (!check_conv(ctx, lazy ? "LazyConv" : transposed ? "ConvTranspose" : "Conv", dims, in, out, kernel, &o, lazy))
        return NULL;
    mtk_module *m = mtk_module_new(ctx, type, sizeof(conv_config));
    if (!m) return NULL;
    conv_config *c = mtk_module_config(m);
    *c = (conv_config){ .dims = dims, .transposed = transposed, .in_channels = in, .out_channels = out, .o = o };
    memcpy(c->kernel, kernel, (size_t)dims * sizeof *kernel);
    snprintf(c->padding_mode, sizeof c->padding_mode, "%s", o.padding_mode ? o.padding_mode : "zeros");
    c->o.padding_mode = NULL; /* the copy above is the one used */
    if (lazy) {
        if (!mtk_module_new_lazy_parameter(m, "weight")) return NULL;
        if (o.bias && !mtk_module_new_lazy_parameter(m, "bias")) return NULL;
        return m;
    }
    int64_t shape[5];
    int32_t ndim = weight_shape(c, shape);
    if (!mtk_module_new_parameter(m, "weight", shape, ndim)) return NULL;
    if (o.bias && !mtk_module_new_parameter(m, "bias", &out, 1)) return NULL;
    return mtk_module_finish(m);
}

static const mtk_module_type *conv_type(int32_t dims, bool transposed)
{
    return dims >= 1 && dims <= 3 ? &conv_types[transposed][dims - 1] : &conv_types[0][0];
}

mtk_module *mtk_nn_conv(mtk_ctx *ctx, int32_t dims, int64_t in_channels, int64_t out_channels,
                        const int64_t *kernel_size, const mtk_conv_options *options)
{
    return make_conv(ctx, conv_type(dims, false), dims, false, in_channels, out_channels, kernel_size, options, false);
}

mtk_module *mtk_nn_conv_transpose(mtk_ctx *ctx, int32_t dims, int64_t in_channels, int64_t out_channels,
                                  const int64_t *kernel_size, const mtk_conv_options *options)
{
    return make_conv(ctx, conv_type(dims, true), dims, true, in_channels, out_channels, kernel_size, options, false);
}

mtk_module *mtk_nn_conv2d(mtk_ctx *ctx, int64_t in_channels, int64_t out_channels, int64_t kernel)
{
    int64_t k[2] = { kernel, kernel };
    return mtk_nn_conv(ctx, 2, in_channels, out_channels, k, NULL);
}

/* -------------------------------------------------------------- LazyConv */

static bool lazy_conv_forward(mtk_module *m, mtk_module_io *io)
{
    conv_config *c = mtk_module_config(m);
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0], *weight = mtk_module_find_tensor(m, "weight");
    mtk_tensor *bias = mtk_module_find_tensor(m, "bias");
    if (weight->flags & MTK_TENSOR_LAZY) {
        int32_t unbatched = c->dims + 1, batched = c->dims + 2;
        if (x->ndim != unbatched && x->ndim != batched) {
            char s[128];
            return mtk_error(ctx, MTK_ERR_SHAPE,
                             "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
                             (int)unbatched, (int)batched, mtk_module_type_name(m),
                             mtk_shape_list_str(x->shape, x->ndim, s, sizeof s));
        }
        c->in_channels = x->shape[x->ndim == batched ? 1 : 0];
        if (c->in_channels % c->o.groups != 0)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "in_channels must be divisible by groups");
        int64_t shape[5];
        int32_t ndim = weight_shape(c, shape);
        if (!mtk_module_materialize_lazy(m, weight, shape, ndim)) return false;
        if (bias && (bias->flags & MTK_TENSOR_LAZY) && !mtk_module_materialize_lazy(m, bias, &c->out_channels, 1))
            return false;
    } else {
        c->in_channels = weight->shape[1] * c->o.groups; /* shape came from a state dict */
    }
    if (!mtk_module_finish_lazy(m, &conv_types[0][c->dims - 1])) return false;
    return conv_forward(m, io);
}

static const mtk_module_type lazy_conv_types[3] = {
    { "LazyConv1d", lazy_conv_forward, conv_reset, conv_repr },
    { "LazyConv2d", lazy_conv_forward, conv_reset, conv_repr },
    { "LazyConv3d", lazy_conv_forward, conv_reset, conv_repr },
};

mtk_module *mtk_nn_lazy_conv(mtk_ctx *ctx, int32_t dims, int64_t out_channels, const int64_t *kernel_size,
                             const mtk_conv_options *options)
{
    const mtk_module_type *type = dims >= 1 && dims <= 3 ? &lazy_conv_types[dims - 1] : &lazy_conv_types[0];
    return make_conv(ctx, type, dims, false, 0, out_channels, kernel_size, options, true);
}
