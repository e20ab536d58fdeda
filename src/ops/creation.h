/* The creation op family: meta/cpu/cost functions named by list_creation.h,
 * and the helpers creation.c and creation_range.c share. */
#ifndef MTK_OPS_CREATION_H
#define MTK_OPS_CREATION_H

#include "mtk/op.h"
#include "mtk/ops/creation.h"

/* ---- rows of list_creation.h ---- */
bool mtk_empty_meta(mtk_op_call *call);
bool mtk_zeros_meta(mtk_op_call *call);
bool mtk_full_meta(mtk_op_call *call);
bool mtk_eye_meta(mtk_op_call *call);
bool mtk_arange_meta(mtk_op_call *call);
bool mtk_linspace_meta(mtk_op_call *call);
bool mtk_like_meta(mtk_op_call *call);      /* empty_like, zeros_like, ones_like */
bool mtk_full_like_meta(mtk_op_call *call);

bool mtk_empty_cpu(mtk_op_call *call);
bool mtk_zeros_cpu(mtk_op_call *call);
bool mtk_ones_cpu(mtk_op_call *call);
bool mtk_full_cpu(mtk_op_call *call);
bool mtk_eye_cpu(mtk_op_call *call);
bool mtk_arange_cpu(mtk_op_call *call);
bool mtk_linspace_cpu(mtk_op_call *call);
bool mtk_full_like_cpu(mtk_op_call *call);

/* ---- shared by the creation files ---- */

/* Resolves the dtype/device/requires_grad keyword arguments at positions
 * `dtype_arg`, `dtype_arg + 1`, `dtype_arg + 2` (the order every creation
 * signature uses) and describes one fresh output of `shape` with `stride`
 * (NULL: contiguous).  `dtype` is the dtype to use when the dtype argument
 * is None; `device` the device when the device argument is None.  Sets
 * call->device to the output's device so that the cpu kernel runs for a
 * cpu output whatever the default-device scope says. */
bool mtk_creation_output(mtk_op_call *call, int dtype_arg, mtk_dtype dtype, mtk_device device,
                         const int64_t *shape, int32_t ndim, const int64_t *stride);

/* Reads a memory_format argument (None, or a string such as
 * "channels_last" or "torch.channels_last"); None gives `if_none`.  Sets
 * an error naming the accepted values otherwise. */
bool mtk_memory_format_arg(mtk_op_call *call, int arg, mtk_memory_format if_none,
                           mtk_memory_format *out);

/* Strides of a fresh tensor of `shape` in `format` (contiguous or
 * channels-last; preserve is refused: "unsupported memory format
 * Preserve").  Errors: channels_last on a tensor that is not 4-D ("required
 * rank 4 tensor to use channels_last format"), channels_last_3d not 5-D. */
bool mtk_memory_format_strides(mtk_op_call *call, mtk_memory_format format, const int64_t *shape,
                               int32_t ndim, int64_t *stride_out);

/* torch's x.is_contiguous(memory_format): the row-major rule for
 * contiguous (and preserve); for channels-last the NHWC/NDHWC order, which
 * torch checks without the row-major rule's shortcut for empty tensors. */
bool mtk_is_contiguous_as(const mtk_tensor *x, mtk_memory_format format);

/* Checks that a Python number converts to `dtype` without overflow, as
 * c10's checked Scalar conversion does (the cpu kernels of full, fill and
 * linspace).  Sets "value cannot be converted to type int8_t without
 * overflow" and returns false otherwise. */
bool mtk_scalar_fits(mtk_op_call *call, const mtk_value *v, mtk_dtype dtype);

/* Writes the number `v` converted to `dtype` into `elem` (one element). */
void mtk_scalar_store(const mtk_value *v, mtk_dtype dtype, void *elem);

/* Fills every element of a fresh dense cpu tensor with the element
 * pattern `elem`. */
void mtk_fill_dense(mtk_tensor *t, const void *elem);

#endif
