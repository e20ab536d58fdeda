/* The adaptive pools: adaptive_avg_pool1d/2d/3d and
 * adaptive_max_pool1d/2d/3d — output_size with None entries, torch's
 * checks (its meta kernels check less than its cpu ones) and layouts. */
#include "ops/pool_internal.h"
#include "ops/op_util.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ adaptive */

/* output_size of the 2-D/3-D adaptive pools: an int, or a list of ints
 * and Nones (None keeps the input's size, F's _list_with_default). */
static bool read_output_size(mtk_ctx *ctx, const mtk_op_call *call, int32_t spatial, const mtk_tensor *t,
                             int64_t *out, int32_t *count)
{
    const mtk_value *v = &call->args[ARG_OUTPUT_SIZE];
    if (v->kind == MTK_VALUE_INT) {
        for (int32_t i = 0; i < spatial; i++) out[i] = v->as.i;
        *count = spatial;
        return true;
    }
    if (v->kind != MTK_VALUE_LIST && v->kind != MTK_VALUE_TUPLE) {
        if (!ctx) return false;
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s(): object of type '%s' has no len()", call->op->name,
                         mtk_value_type_name(v));
    }
    int32_t n = v->as.list.count;
    if (t->ndim <= n)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Input dimension should be at least %d", (int)n + 1);
    if (n > MTK_MAX_DIMS) return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "output_size must be %d", (int)spatial);
    for (int32_t i = 0; i < n; i++) {
        const mtk_value *item = &v->as.list.items[i];
        if (item->kind == MTK_VALUE_NONE) out[i] = t->shape[t->ndim - n + i];
        else if (item->kind == MTK_VALUE_INT) out[i] = item->as.i;
        else {
            if (!ctx) return false;
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "%s(): argument 'output_size' must be tuple of ints, but found element of type %s at pos %d",
                             call->op->name, mtk_value_type_name(item), (int)i);
        }
    }
    *count = n;
    return true;
}

static bool check_nonempty_dims(mtk_ctx *ctx, const mtk_op_call *call, const mtk_pool_input *in, int32_t first,
                                const char *fn)
{
    char s1[256];
    for (int32_t i = first; i < in->ndim; i++)
        if (in->shape[i] <= 0)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                       "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s "
                       "with dimension %d being empty",
                       fn, mtk_shape_list_str(in->shape, in->ndim, s1, sizeof s1), (int)i);
    return true;
}

/* adaptive_avg_pool2d/3d on `in` with `spatial` output sizes (checked
 * for count already). */
static bool plan_adaptive_avg_nd(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, const mtk_pool_input *in,
                                 int32_t spatial, const int64_t *osize, bool squeeze, mtk_dtype dtype, mtk_pool_plan *p)
{
    char s1[256];
    const char *fn = spatial == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d";
    bool negative = false, all_ones = true;
    for (int32_t i = 0; i < spatial; i++) negative |= osize[i] < 0, all_ones &= osize[i] == 1;
    if (negative) {
        /* torch prints "{2, -1}" (2-D) and "{2, -1,2}" (3-D) */
        if (spatial == 2)
            snprintf(s1, sizeof s1, "{%lld, %lld}", (long long)osize[0], (long long)osize[1]);
        else
            snprintf(s1, sizeof s1, "{%lld, %lld,%lld}", (long long)osize[0], (long long)osize[1], (long long)osize[2]);
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "%s: elements of output_size must be greater than or equal to 0 but received %s", fn, s1);
    }
    int64_t shape[MTK_MAX_DIMS];
    bool cl_input = mtk_pool_like_channels_last(in); /* only 4-D / 5-D can be */
    if (all_ones) {
        /* torch computes input.mean(spatial dims, keepdim=True) */
        if (!mtk_pool_is_float(dtype))
            return mtk_conv_error(ctx, call, MTK_ERR_DTYPE,
                       "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                       "dtype. Got: %s",
                       mtk_dtype_cpp_name(dtype));
        if (in->ndim < spatial)
            return mtk_conv_error(ctx, call, MTK_ERR_INDEX,
                       "Dimension out of range (expected to be in range of [%d, %d], but got %d)",
                       in->ndim ? -(int)in->ndim : -1, in->ndim ? (int)in->ndim - 1 : 0, -(int)spatial);
    } else {
        if (spatial == 2 && in->ndim != 3 && in->ndim != 4)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got %s",
                       mtk_shape_list_str(in->shape, in->ndim, s1, sizeof s1));
        if (spatial == 3 && in->ndim != 4 && in->ndim != 5)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got %s",
                       mtk_shape_list_str(in->shape, in->ndim, s1, sizeof s1));
        /* only torch's cpu kernel refuses empty planes */
        if (for_cpu && !check_nonempty_dims(ctx, call, in, spatial == 2 ? in->ndim - 2 : 1, fn)) return false;
    }
    memcpy(shape, in->shape, sizeof shape);
    for (int32_t i = 0; i < spatial; i++) shape[in->ndim - spatial + i] = osize[i];
    /* torch's 2-D cpu kernel returns before its dtype dispatch when the
     * output is empty; the 3-D one does not */
    bool runs_kernel = spatial == 3 || mtk_shape_numel(shape, in->ndim) != 0;
    if (for_cpu && !all_ones && runs_kernel && !mtk_pool_is_float(dtype))
        return mtk_pool_dtype_error(ctx, call, spatial == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d_cpu", dtype);
    mtk_pool_set_geometry(p, in, spatial, osize);
    /* 2-D: the input's channels-last layout (both paths); 3-D: only the
     * mean path keeps channels-last-3d */
    bool cl = spatial == 2 ? (in->ndim == 4 && cl_input) : (all_ones && in->ndim == 5 && cl_input);
    mtk_pool_set_output_layout(p, shape, in->ndim, cl, squeeze);
    return true;
}

bool mtk_pool_plan_adaptive_avg(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    if (spatial == 1) {
        if (!mtk_pool_check_dim_range(ctx, call, t)) return false;
        int64_t o;
        bool empty;
        if (!mtk_pool_check1d(ctx, call, ARG_OUTPUT_SIZE, "output_size", false, &o, &empty)) return false;
        mtk_pool_input in = mtk_pool_input_unsqueezed(t);
        int64_t o2[2] = { 1, o };
        return plan_adaptive_avg_nd(ctx, call, for_cpu, &in, 2, o2, true, t->dtype, p);
    }
    int64_t osize[MTK_MAX_DIMS];
    int32_t n = 0;
    if (!read_output_size(ctx, call, spatial, t, osize, &n)) return false;
    if (n != spatial)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "%s: output_size must be %d", call->op->name, (int)spatial);
    mtk_pool_input in = mtk_pool_input_as_is(t);
    return plan_adaptive_avg_nd(ctx, call, for_cpu, &in, spatial, osize, false, t->dtype, p);
}

bool mtk_pool_plan_adaptive_max(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    char s1[256];
    if (!mtk_pool_read_truth(ctx, call, ARG_ADAPTIVE_INDICES, &p->with_indices)) return false;
    int64_t osize[MTK_MAX_DIMS];
    int32_t n = 0;
    mtk_pool_input in;
    int32_t dims = spatial; /* of the op that runs (1-D runs as 2-D) */
    if (spatial == 1) {
        if (!mtk_pool_check_dim_range(ctx, call, t)) return false;
        bool empty;
        if (!mtk_pool_check1d(ctx, call, ARG_OUTPUT_SIZE, "output_size", false, &osize[1], &empty)) return false;
        in = mtk_pool_input_as_is(t);
        if (!check_nonempty_dims(ctx, call, &in, 1, "adaptive_max_pool1d")) return false;
        in = mtk_pool_input_unsqueezed(t);
        osize[0] = 1;
        n = dims = 2;
    } else {
        if (!read_output_size(ctx, call, spatial, t, osize, &n)) return false;
        in = mtk_pool_input_as_is(t);
    }
    const char *fn = dims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d";
    if (dims == 2 && in.ndim != 3 && in.ndim != 4)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: %s",
                   mtk_shape_list_str(in.shape, in.ndim, s1, sizeof s1));
    if (dims == 3 && in.ndim != 4 && in.ndim != 5)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: %s",
                   mtk_shape_list_str(in.shape, in.ndim, s1, sizeof s1));
    if (!check_nonempty_dims(ctx, call, &in, 1, fn)) return false;
    if (n != dims)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "%s(): internal error: output_size.size() must be %d", fn, (int)dims);
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in.shape, sizeof shape);
    for (int32_t i = 0; i < dims; i++) shape[in.ndim - dims + i] = osize[i];
    for (int32_t i = 0; i < dims; i++)
        if (osize[i] < 0)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Trying to create tensor with negative dimension %lld: %s",
                       (long long)osize[i], mtk_shape_list_str(shape, in.ndim, s1, sizeof s1));
    if (for_cpu && !mtk_pool_is_float(t->dtype))
        return mtk_pool_dtype_error(ctx, call, dims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d_cpu", t->dtype);
    mtk_pool_set_geometry(p, &in, dims, osize);
    bool cl = dims == 2 && in.ndim == 4 && mtk_pool_like_channels_last(&in);
    mtk_pool_set_output_layout(p, shape, in.ndim, cl, spatial == 1);
    return true;
}
