/* F.interpolate: the argument rules of torch.nn.functional.interpolate
 * (exactly one of size and scale_factor, modes and the input dims they
 * need, align_corners only for the interpolating modes, antialias only
 * for 4-D bilinear/bicubic), then the checks of torch's upsample ops; the
 * output size is floor(input size * scale_factor).  'area' is
 * adaptive_avg_pool{1,2,3}d, run through that op's plan.  Kernels are in
 * interp_cpu.c. */
#include "ops/conv.h"
#include "ops/interp_layout.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/conv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ARG_INPUT, ARG_SIZE, ARG_SCALE, ARG_MODE, ARG_ALIGN, ARG_RECOMPUTE, ARG_ANTIALIAS };

#define MODES "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"

/* The adaptive_avg_pool{n}d call that mode='area' runs. */
static mtk_op_id area_op(int32_t spatial)
{
    return spatial == 1 ? OPID_ADAPTIVE_AVG_POOL1D : spatial == 2 ? OPID_ADAPTIVE_AVG_POOL2D : OPID_ADAPTIVE_AVG_POOL3D;
}

/* the Python type name torch's messages print: <class 'float'> */
static const char *py_class(const mtk_value *v)
{
    switch (v->kind) {
    case MTK_VALUE_INT: return "<class 'int'>";
    case MTK_VALUE_FLOAT: return "<class 'float'>";
    case MTK_VALUE_BOOL: return "<class 'bool'>";
    case MTK_VALUE_STRING: return "<class 'str'>";
    case MTK_VALUE_NONE: return "<class 'NoneType'>";
    case MTK_VALUE_TENSOR: return "<class 'torch.Tensor'>";
    case MTK_VALUE_LIST: return "<class 'list'>";
    case MTK_VALUE_TUPLE: return "<class 'tuple'>";
    default: return "<class 'object'>";
    }
}

static const char *value_list_text(const mtk_value *v, char *buf, size_t cap)
{
    size_t len = 0;
    bool tuple = v->kind == MTK_VALUE_TUPLE;
    len += (size_t)snprintf(buf, cap, "%s", tuple ? "(" : "[");
    for (int32_t i = 0; i < v->as.list.count && len < cap; i++) {
        const mtk_value *it = &v->as.list.items[i];
        const char *sep = i ? ", " : "";
        if (it->kind == MTK_VALUE_INT) len += (size_t)snprintf(buf + len, cap - len, "%s%lld", sep, (long long)it->as.i);
        else if (it->kind == MTK_VALUE_FLOAT) len += (size_t)snprintf(buf + len, cap - len, "%s%g", sep, it->as.f);
        else len += (size_t)snprintf(buf + len, cap - len, "%s%s", sep, mtk_value_type_name(it));
    }
    if (len < cap) snprintf(buf + len, cap - len, "%s", tuple ? (v->as.list.count == 1 ? ",)" : ")") : "]");
    return buf;
}

static bool is_list(const mtk_value *v) { return v->kind == MTK_VALUE_LIST || v->kind == MTK_VALUE_TUPLE; }

static bool mode_from_name(const char *s, mtk_interp_mode *mode, int32_t *needs_dims)
{
    static const struct { const char *name; mtk_interp_mode mode; int32_t dims; } modes[] = {
        { "nearest", MTK_INTERP_NEAREST, 0 },   { "nearest-exact", MTK_INTERP_NEAREST_EXACT, 0 },
        { "area", MTK_INTERP_AREA, 0 },         { "linear", MTK_INTERP_LINEAR, 1 },
        { "bilinear", MTK_INTERP_LINEAR, 2 },   { "trilinear", MTK_INTERP_LINEAR, 3 },
        { "bicubic", MTK_INTERP_BICUBIC, 2 },
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(s, modes[i].name) == 0) {
            *mode = modes[i].mode;
            *needs_dims = modes[i].dims;
            return true;
        }
    return false;
}

/* The dispatch of F.interpolate's tail: which (mode, ndim) pairs exist. */
static bool check_mode_dims(mtk_ctx *ctx, const mtk_op_call *call, const char *name, int32_t ndim,
                            bool known, int32_t needs_dims)
{
    static const char *const names[4] = { "", "linear", "bilinear", "trilinear" };
    if (known && ndim >= 3 && ndim <= 5 && (needs_dims == 0 || needs_dims == ndim - 2)) return true;
    if (known && needs_dims > 0 && ndim >= 3 && ndim <= 5 && strcmp(name, "bicubic") != 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "Got %dD input, but %s mode needs %dD input",
                              (int)ndim, names[needs_dims], (int)needs_dims + 2);
    return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                          "Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: " MODES
                          " (got %s)",
                          (int)ndim, name);
}

/* The checks torch's meta kernels of the upsample ops make (they differ
 * from its cpu kernels': an empty input passes for the linear modes). */
static bool meta_checks(mtk_ctx *ctx, const mtk_op_call *call, const mtk_interp_plan *p, mtk_interp_mode mode,
                        bool antialias, int32_t dim, const int64_t *out)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    char s1[256], s2[256];
    bool nearest = mode == MTK_INTERP_NEAREST || mode == MTK_INTERP_NEAREST_EXACT;
    if (nearest && mtk_tensor_numel(t) == 0)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Non-empty %dD data tensor expected but got a tensor with sizes %s",
                              (int)t->ndim, mtk_shape_list_str(t->shape, t->ndim, s1, sizeof s1));
    if (antialias && t->shape[1] == 0)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Non-empty 4D data tensor expected but got a tensor with sizes %s",
                              mtk_shape_list_str(t->shape, t->ndim, s1, sizeof s1));
    if (nearest || antialias) {
        bool positive = true;
        for (int32_t i = 0; i < dim; i++) positive &= t->shape[2 + i] > 0 && out[i] > 0;
        if (!positive)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                                  "Input and output sizes should be greater than 0, but got input size %s and output "
                                  "size %s",
                                  mtk_shape_list_str(t->shape, t->ndim, s1, sizeof s1),
                                  mtk_shape_list_str(out, dim, s2, sizeof s2));
        return true;
    }
    /* the linear and cubic modes: torch's decomposition divides by the
     * output size (unless align_corners or a scale factor sets the scale)
     * and builds aranges of it */
    for (int32_t i = 0; i < dim; i++) {
        if (out[i] == 0 && !p->align_corners && !(p->scale[3 - dim + i] > 0))
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "division by zero (output size 0)");
        if (out[i] < 0)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "upper bound and lower bound inconsistent with step sign");
    }
    return true;
}

bool mtk_interp_make_plan(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, mtk_interp_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    const mtk_value *size = &call->args[ARG_SIZE], *scale = &call->args[ARG_SCALE];
    const char *mode_name = call->args[ARG_MODE].as.s;
    char s1[256];
    memset(p, 0, sizeof *p);
    mtk_interp_mode mode = MTK_INTERP_NEAREST;
    int32_t needs_dims = 0;
    bool known = mode_from_name(mode_name, &mode, &needs_dims);
    bool lanczos = strcmp(mode_name, "lanczos") == 0;
    bool interpolating = !(known && (mode == MTK_INTERP_NEAREST || mode == MTK_INTERP_NEAREST_EXACT ||
                                     mode == MTK_INTERP_AREA));
    bool has_align = !arg_is_none(call, ARG_ALIGN);
    if (!interpolating && has_align)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                              "align_corners option can only be set with the interpolating modes: linear | bilinear "
                              "| bicubic | trilinear");
    p->align_corners = has_align && arg_bool(call, ARG_ALIGN);
    int32_t dim = t->ndim - 2;

    /* exactly one of size and scale_factor, one entry per spatial dim */
    int64_t out[MTK_MAX_DIMS];
    double factors[MTK_MAX_DIMS];
    int32_t n_out = -1; /* known output sizes: -1 none */
    bool have_scales = false;
    bool has_size = size->kind != MTK_VALUE_NONE, has_scale = scale->kind != MTK_VALUE_NONE;
    if (has_size && has_scale)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "only one of size or scale_factor should be defined");
    if (has_size) {
        if (is_list(size)) {
            if (size->as.list.count != dim) {
                int64_t spatial[MTK_MAX_DIMS];
                for (int32_t i = 0; i < dim; i++) spatial[i] = t->shape[2 + i];
                char s2[256];
                return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                                      "Input and output must have the same number of spatial dimensions, but got input "
                                      "with spatial dimensions of %s and output size of %s. Please provide input "
                                      "tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                                      "format.",
                                      mtk_shape_list_str(spatial, dim > 0 ? dim : 0, s1, sizeof s1),
                                      value_list_text(size, s2, sizeof s2));
            }
            bool ints = true;
            for (int32_t i = 0; i < dim; i++) ints &= size->as.list.items[i].kind == MTK_VALUE_INT;
            if (!ints) {
                size_t len = 0;
                for (int32_t i = 0; i < dim && len < sizeof s1; i++)
                    len += (size_t)snprintf(s1 + len, sizeof s1 - len, "%s%s", i ? ", " : "",
                                            py_class(&size->as.list.items[i]));
                return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                                      "expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, "
                                      "int, int], but got size with types [%s]",
                                      s1);
            }
            for (int32_t i = 0; i < dim; i++) out[i] = size->as.list.items[i].as.i;
        } else {
            if (size->kind != MTK_VALUE_INT)
                return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                                      "argument 'size' must be int or tuple of ints, not %s", mtk_value_type_name(size));
            for (int32_t i = 0; i < dim; i++) out[i] = size->as.i;
        }
        n_out = dim > 0 ? dim : 0;
    } else if (has_scale) {
        if (is_list(scale)) {
            if (scale->as.list.count != dim) {
                int64_t spatial[MTK_MAX_DIMS];
                for (int32_t i = 0; i < dim; i++) spatial[i] = t->shape[2 + i];
                char s2[256];
                return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                                      "Input and scale_factor must have the same number of spatial dimensions, but got "
                                      "input with spatial dimensions of %s and scale_factor of shape %s. Please provide "
                                      "input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, "
                                      "...,sK) format.",
                                      mtk_shape_list_str(spatial, dim > 0 ? dim : 0, s1, sizeof s1),
                                      value_list_text(scale, s2, sizeof s2));
            }
            for (int32_t i = 0; i < dim; i++) {
                const mtk_value *it = &scale->as.list.items[i];
                if (!mtk_value_is_number(it))
                    return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                                          "argument 'scale_factors' must be tuple of floats, not %s",
                                          mtk_value_type_name(it));
                factors[i] = mtk_value_as_double(it);
            }
        } else {
            if (!mtk_value_is_number(scale))
                return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                                      "argument 'scale_factor' must be a number or tuple of floats, not %s",
                                      mtk_value_type_name(scale));
            for (int32_t i = 0; i < dim; i++) factors[i] = mtk_value_as_double(scale);
        }
        have_scales = true;
    } else {
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "either size or scale_factor should be defined");
    }
    bool recompute = !arg_is_none(call, ARG_RECOMPUTE) && arg_bool(call, ARG_RECOMPUTE);
    if (recompute && has_size)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                              "recompute_scale_factor is not meaningful with an explicit size.");
    if (known && mode == MTK_INTERP_AREA && n_out < 0) recompute = true;
    if (recompute) {
        /* Python: int(input.size(i + 2) * scale_factors[i]) */
        for (int32_t i = 0; i < dim; i++) {
            double o = (double)t->shape[2 + i] * factors[i];
            if (isnan(o)) return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "cannot convert float NaN to integer");
            if (isinf(o))
                return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "cannot convert float infinity to integer");
            if (!(o > -9.2e18 && o < 9.2e18))
                return mtk_conv_error(ctx, call, MTK_ERR_OVERFLOW, "value cannot be converted to type int64_t without overflow");
            out[i] = (int64_t)o;
        }
        n_out = dim > 0 ? dim : 0;
        have_scales = false;
    }
    bool antialias = arg_bool(call, ARG_ANTIALIAS);
    bool aa_mode = known && (mode == MTK_INTERP_LINEAR || mode == MTK_INTERP_BICUBIC) && needs_dims == 2;
    if (antialias && !((aa_mode || lanczos) && t->ndim == 4))
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                              "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                              "4-D tensor as input");
    if (lanczos && t->ndim == 4) {
        if (p->align_corners)
            return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "Lanczos mode does not support align_corners=True");
        if (!antialias)
            return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "Lanczos mode requires antialias=True");
        return mtk_conv_error(ctx, call, MTK_ERR_NOT_IMPLEMENTED, "mode 'lanczos' is not supported by mtk");
    }
    if (!check_mode_dims(ctx, call, mode_name, t->ndim, known, needs_dims)) return false;

    p->mode = mode;
    p->spatial = dim;
    p->antialias = antialias;
    if (mode == MTK_INTERP_AREA) {
        /* adaptive_avg_pool{n}d(input, output_size) */
        mtk_op_call area;
        mtk_op_call_init(&area, call->ctx, mtk_op_by_id(area_op(dim)));
        area.device = call->device;
        area.args[0] = call->args[ARG_INPUT];
        mtk_value list = mtk_value_list(call->ctx, dim, true);
        if (list.kind == MTK_VALUE_NONE) return false;
        for (int32_t i = 0; i < dim; i++) list.as.list.items[i] = mtk_value_int(out[i]);
        area.args[1] = list;
        mtk_pool_plan pp;
        if (!mtk_pool_make_plan(ctx, &area, for_cpu, &pp)) return false;
        p->out_ndim = pp.out_ndim;
        memcpy(p->out_shape, pp.out_shape, sizeof p->out_shape);
        memcpy(p->out_stride, pp.out_stride, sizeof p->out_stride);
        return true;
    }

    /* torch's compute_output_size: floor(input size * scale) as int64 */
    if (have_scales) {
        for (int32_t i = 0; i < dim; i++) {
            double o = (double)t->shape[2 + i] * factors[i];
            if (!(o > -9.2e18 && o < 9.2e18))
                return mtk_conv_error(ctx, call, MTK_ERR_OVERFLOW, "value cannot be converted to type int64_t without overflow");
            out[i] = (int64_t)o;
            p->scale[3 - dim + i] = factors[i];
        }
    }
    if (!for_cpu && !meta_checks(ctx, call, p, mode, antialias, dim, out)) return false;
    /* upsample_{1,2,3}d_common_check */
    bool positive = true;
    for (int32_t i = 0; i < dim; i++) positive &= t->shape[2 + i] > 0 && out[i] > 0;
    if (for_cpu && !positive) {
        static const char *const names[3] = { "D", "H", "W" };
        char a[160] = "", b[160] = "";
        size_t la = 0, lb = 0;
        for (int32_t i = 0; i < dim; i++) {
            const char *nm = names[3 - dim + i];
            la += (size_t)snprintf(a + la, sizeof a - la, "%s%s: %lld", i ? ", " : "", nm, (long long)t->shape[2 + i]);
            lb += (size_t)snprintf(b + lb, sizeof b - lb, "%s%s: %lld", i ? ", " : "", nm, (long long)out[i]);
        }
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Input and output sizes should be greater than 0, but got input (%s)%s output (%s)", a,
                              dim == 1 ? " and" : "", b);
    }
    if (for_cpu && t->shape[1] == 0)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Non-empty %dD data tensor expected but got a tensor with sizes %s",
                              (int)t->ndim, mtk_shape_list_str(t->shape, t->ndim, s1, sizeof s1));
    if (for_cpu) {
        mtk_dtype d = t->dtype;
        bool is_float = d == MTK_FLOAT32 || d == MTK_FLOAT64 || d == MTK_FLOAT16 || d == MTK_BFLOAT16;
        bool ok = is_float;
        if (d == MTK_UINT8) ok = mode == MTK_INTERP_NEAREST || mode == MTK_INTERP_NEAREST_EXACT || dim == 2;
        /* torch's separable antialias kernel copies an input of the
         * output's size before its dtype dispatch */
        bool same_size = true;
        for (int32_t i = 0; i < dim; i++) same_size &= out[i] == t->shape[2 + i];
        if (antialias && (d == MTK_FLOAT16 || d == MTK_BFLOAT16)) ok = same_size;
        if (!ok) {
            static const char *const kinds[] = { "upsample_nearest", "_upsample_nearest_exact", "upsample_linear",
                                                 "upsample_bicubic" };
            const char *kind = mode == MTK_INTERP_LINEAR ? (dim == 1 ? "upsample_linear" : dim == 2 ? "upsample_bilinear"
                                                                                                    : "upsample_trilinear")
                                                         : kinds[mode == MTK_INTERP_BICUBIC ? 3 : (int)mode];
            return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "\"%s%dd%s\" not implemented for '%s'", kind, (int)dim,
                                  antialias ? "_aa" : "", mtk_dtype_cpp_name(d));
        }
    }

    p->batch = t->shape[0];
    p->channels = t->shape[1];
    for (int32_t i = 0; i < 3; i++) p->in_size[i] = p->out_size[i] = 1;
    for (int32_t i = 0; i < dim; i++) {
        p->in_size[3 - dim + i] = t->shape[2 + i];
        p->out_size[3 - dim + i] = out[i];
    }
    p->out_ndim = t->ndim;
    p->out_shape[0] = t->shape[0], p->out_shape[1] = t->shape[1];
    for (int32_t i = 0; i < dim; i++) p->out_shape[2 + i] = out[i];
    mtk_interp_output_strides(t, for_cpu, p);
    bool cl = mtk_strides_suggest_channels_last(t->ndim, t->shape, t->stride);
    /* nearest: torch's channels-last kernel (small outputs, or channels-
     * last inputs of more than 3 channels) special-cases out == in and
     * out == 2 * in; its generic kernel does not */
    int64_t out_sum = 0;
    for (int32_t i = 0; i < dim; i++)
        if (__builtin_add_overflow(out_sum, out[i], &out_sum)) out_sum = INT64_MAX;
    p->first_row_only = antialias && (!cl || mtk_tensor_is_contiguous(t)) && dim == 2 && out[1] == 1 &&
                        out[0] != t->shape[2];
    p->nearest_fast_path = (dim == 2 && ((cl && t->shape[1] > 3) || out_sum <= 128)) ||
                           (dim == 3 && cl && t->shape[1] > 3);
    return true;
}

bool mtk_interp_meta(mtk_op_call *call)
{
    mtk_interp_plan plan;
    if (!mtk_interp_make_plan(call->ctx, call, call->device == MTK_DEVICE_CPU, &plan)) return false;
    const mtk_tensor *input = arg_tensor(call, ARG_INPUT);
    mtk_tensor *out = mtk_tensor_new(call->ctx, input->dtype, plan.out_shape, plan.out_ndim, plan.out_stride,
                                     call->device);
    if (!out || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, out, -1);
    return true;
}

mtk_op_cost mtk_interp_cost(const mtk_op_call *call)
{
    mtk_op_cost cost = { 0, 0 };
    if (call->nout > 0 && call->out[0]) cost.elementwise = mtk_tensor_numel(call->out[0]);
    return cost;
}

/* Runs the 'area' mode on cpu: the adaptive_avg_pool kernel. */
bool mtk_interp_area_cpu(mtk_op_call *call)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    int32_t dim = t->ndim - 2;
    mtk_op_call area;
    mtk_op_call_init(&area, call->ctx, mtk_op_by_id(area_op(dim)));
    area.device = MTK_DEVICE_CPU;
    area.args[0] = call->args[ARG_INPUT];
    mtk_value list = mtk_value_list(call->ctx, dim, true);
    if (list.kind == MTK_VALUE_NONE) return false;
    for (int32_t i = 0; i < dim; i++) list.as.list.items[i] = mtk_value_int(call->out[0]->shape[2 + i]);
    area.args[1] = list;
    area.out = call->out;
    area.nout = 1;
    return mtk_pool_cpu(&area);
}

/* ---------------------------------------------------------- typed API */

mtk_tensor *mtk_interpolate(mtk_ctx *ctx, mtk_tensor *input, const mtk_interp_args *args)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_INTERPOLATE));
    call.args[ARG_INPUT] = mtk_value_tensor(input);
    if (!args) return mtk_op_run_tensor(&call); /* "either size or scale_factor should be defined" */
    int32_t dim = input && input->ndim > 2 ? input->ndim - 2 : 0;
    if (args->size) call.args[ARG_SIZE] = mtk_value_int_list(ctx, args->size, dim);
    if (args->scale_factor) {
        mtk_value list = mtk_value_list(ctx, dim, true);
        if (list.kind == MTK_VALUE_NONE && dim > 0) return NULL;
        for (int32_t i = 0; i < dim; i++) list.as.list.items[i] = mtk_value_float(args->scale_factor[i]);
        call.args[ARG_SCALE] = list;
    }
    call.args[ARG_MODE] = mtk_value_string(args->mode ? args->mode : "nearest");
    call.args[ARG_ALIGN] = args->align_corners < 0 ? mtk_value_none() : mtk_value_bool(args->align_corners != 0);
    call.args[ARG_RECOMPUTE] =
        args->recompute_scale_factor < 0 ? mtk_value_none() : mtk_value_bool(args->recompute_scale_factor != 0);
    call.args[ARG_ANTIALIAS] = mtk_value_bool(args->antialias);
    if (mtk_ctx_status(ctx) != MTK_OK) return NULL;
    return mtk_op_run_tensor(&call);
}
