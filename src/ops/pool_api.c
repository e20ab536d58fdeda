/* Typed C API of the pooling ops (include/mtk/ops/conv.h). */
#include "ops/pool_internal.h"
#include "ops/registry.h"
#include "mtk/ops/conv.h"

#include <string.h>

/* ---------------------------------------------------------- typed API */

mtk_pool_args mtk_pool_args_default(int64_t kernel_size)
{
    mtk_pool_args a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < 3; i++) a.kernel_size[i] = a.stride[i] = kernel_size, a.dilation[i] = 1;
    a.count_include_pad = true;
    return a;
}

static mtk_tensor *run_pool(mtk_ctx *ctx, mtk_op_id id, int32_t spatial, mtk_tensor *input, const mtk_pool_args *args,
                            mtk_tensor **indices)
{
    const mtk_op_def *op = mtk_op_by_id(id);
    const mtk_pool_info *info = op->info;
    mtk_pool_args a = args ? *args : mtk_pool_args_default(1);
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    call.args[ARG_INPUT] = mtk_value_tensor(input);
    call.args[ARG_KERNEL] = mtk_value_int_list(ctx, a.kernel_size, spatial);
    call.args[ARG_STRIDE] = mtk_value_int_list(ctx, a.stride, spatial);
    call.args[ARG_PADDING] = mtk_value_int_list(ctx, a.padding, spatial);
    if (info->kind == MTK_POOL_MAX) {
        call.args[ARG_MAX_DILATION] = mtk_value_int_list(ctx, a.dilation, spatial);
        call.args[ARG_MAX_CEIL] = mtk_value_bool(a.ceil_mode);
        call.args[ARG_MAX_INDICES] = mtk_value_bool(indices != NULL);
    } else {
        call.args[ARG_AVG_CEIL] = mtk_value_bool(a.ceil_mode);
        call.args[ARG_AVG_COUNT_PAD] = mtk_value_bool(a.count_include_pad);
        if (spatial > 1)
            call.args[ARG_AVG_DIVISOR] = a.divisor_override ? mtk_value_int(a.divisor_override) : mtk_value_none();
    }
    if (mtk_ctx_status(ctx) != MTK_OK) return NULL;
    if (!mtk_op_run(&call)) return NULL;
    if (indices) *indices = call.nout > 1 ? call.out[1] : NULL;
    return call.out[0];
}

static mtk_tensor *run_adaptive(mtk_ctx *ctx, mtk_op_id id, int32_t spatial, mtk_tensor *input,
                                const int64_t *output_size, mtk_tensor **indices)
{
    const mtk_op_def *op = mtk_op_by_id(id);
    const mtk_pool_info *info = op->info;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    call.args[ARG_INPUT] = mtk_value_tensor(input);
    mtk_value list = mtk_value_list(ctx, spatial, true);
    if (list.kind == MTK_VALUE_NONE) return NULL;
    for (int32_t i = 0; i < spatial; i++)
        list.as.list.items[i] = output_size[i] == -1 && spatial > 1 ? mtk_value_none() : mtk_value_int(output_size[i]);
    call.args[ARG_OUTPUT_SIZE] = list;
    if (info->kind == MTK_POOL_ADAPTIVE_MAX) call.args[ARG_ADAPTIVE_INDICES] = mtk_value_bool(indices != NULL);
    if (!mtk_op_run(&call)) return NULL;
    if (indices) *indices = call.nout > 1 ? call.out[1] : NULL;
    return call.out[0];
}

mtk_tensor *mtk_max_pool1d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args, mtk_tensor **indices)
{
    return run_pool(ctx, OPID_MAX_POOL1D, 1, input, args, indices);
}

mtk_tensor *mtk_max_pool2d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args, mtk_tensor **indices)
{
    return run_pool(ctx, OPID_MAX_POOL2D, 2, input, args, indices);
}

mtk_tensor *mtk_max_pool3d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args, mtk_tensor **indices)
{
    return run_pool(ctx, OPID_MAX_POOL3D, 3, input, args, indices);
}

mtk_tensor *mtk_avg_pool1d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args)
{
    return run_pool(ctx, OPID_AVG_POOL1D, 1, input, args, NULL);
}

mtk_tensor *mtk_avg_pool2d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args)
{
    return run_pool(ctx, OPID_AVG_POOL2D, 2, input, args, NULL);
}

mtk_tensor *mtk_avg_pool3d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args)
{
    return run_pool(ctx, OPID_AVG_POOL3D, 3, input, args, NULL);
}

mtk_tensor *mtk_adaptive_avg_pool1d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_AVG_POOL1D, 1, input, output_size, NULL);
}

mtk_tensor *mtk_adaptive_avg_pool2d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_AVG_POOL2D, 2, input, output_size, NULL);
}

mtk_tensor *mtk_adaptive_avg_pool3d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_AVG_POOL3D, 3, input, output_size, NULL);
}

mtk_tensor *mtk_adaptive_max_pool1d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size, mtk_tensor **indices)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_MAX_POOL1D, 1, input, output_size, indices);
}

mtk_tensor *mtk_adaptive_max_pool2d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size, mtk_tensor **indices)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_MAX_POOL2D, 2, input, output_size, indices);
}

mtk_tensor *mtk_adaptive_max_pool3d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size, mtk_tensor **indices)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_MAX_POOL3D, 3, input, output_size, indices);
}
