/* What the pooling files (pool.c, pool_window.c, pool_adaptive.c,
 * pool_api.c) share: argument positions, the input as an op sees it and
 * the helpers of the plans. */
#ifndef MTK_OPS_POOL_INTERNAL_H
#define MTK_OPS_POOL_INTERNAL_H

#include "ops/conv.h"

/* argument positions of the pooling signatures (list_conv.h) */
enum { ARG_INPUT, ARG_KERNEL, ARG_STRIDE, ARG_PADDING };
enum { ARG_MAX_DILATION = 4, ARG_MAX_CEIL = 5, ARG_MAX_INDICES = 6 };
enum { ARG_AVG_CEIL = 4, ARG_AVG_COUNT_PAD = 5, ARG_AVG_DIVISOR = 6 };
enum { ARG_OUTPUT_SIZE = 1, ARG_ADAPTIVE_INDICES = 2 };

/* The input as the op sees it: its shape and strides, possibly after
 * unsqueeze(-2) (the 1-D ops). */
typedef struct mtk_pool_input {
    int32_t ndim;
    int64_t shape[MTK_MAX_DIMS];
    int64_t stride[MTK_MAX_DIMS];
} mtk_pool_input;

mtk_pool_input mtk_pool_input_as_is(const mtk_tensor *t);
/* t.unsqueeze(-2): a size-1 dim before the last, stride as torch sets it */
mtk_pool_input mtk_pool_input_unsqueezed(const mtk_tensor *t);
/* torch's suggest_memory_format of the input is channels-last (3-d) */
bool mtk_pool_like_channels_last(const mtk_pool_input *in);
/* torch's cpu max_pool3d takes its channels-last path for a 4-D input
 * when input.unsqueeze(0) is not contiguous but is channels_last_3d-
 * contiguous (its result: channels_last_3d strides of the unsqueezed
 * output, squeezed again) */
bool mtk_pool3d_unbatched_channels_last(const mtk_tensor *t);
/* the 1-D ops' check1d: "max_pool1d() argument 'kernel_size' should
 * contain one int (got 2)"; an empty list passes when may_be_empty */
bool mtk_pool_check1d(mtk_ctx *ctx, const mtk_op_call *call, int arg, const char *name, bool may_be_empty,
                      int64_t *value, bool *empty);
/* return_indices as F's boolean_dispatch reads it: Python truthiness */
bool mtk_pool_read_truth(mtk_ctx *ctx, const mtk_op_call *call, int arg, bool *out);
/* checkDimRange of the 1-D ops: 2-D or 3-D input */
bool mtk_pool_check_dim_range(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *t);
/* output strides: channels-last when `channels_last`, else contiguous;
 * `squeeze` drops the unsqueezed dim of the 1-D ops */
void mtk_pool_set_output_layout(mtk_pool_plan *p, const int64_t *shape, int32_t ndim, bool channels_last,
                                bool squeeze);
/* the plan's 3-D geometry from the last `spatial` dims of `in` */
void mtk_pool_set_geometry(mtk_pool_plan *p, const mtk_pool_input *in, int32_t spatial, const int64_t *out_size);
/* "\"max_pool2d\" not implemented for 'Bool'" */
bool mtk_pool_dtype_error(mtk_ctx *ctx, const mtk_op_call *call, const char *kernel, mtk_dtype d);
bool mtk_pool_is_float(mtk_dtype d);

/* the plans of pool_window.c and pool_adaptive.c */
bool mtk_pool_plan_max(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p);
bool mtk_pool_plan_avg(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p);
bool mtk_pool_plan_adaptive_avg(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial,
                                mtk_pool_plan *p);
bool mtk_pool_plan_adaptive_max(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial,
                                mtk_pool_plan *p);

#endif
