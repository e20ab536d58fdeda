/* The view op family (views and shape ops): meta/cpu functions named by
 * list_view.h, and the helpers view.c, shape.c, slicing.c and repeat.c
 * share. */
#ifndef MTK_OPS_VIEW_H
#define MTK_OPS_VIEW_H

#include "mtk/op.h"

/* ---- rows of list_view.h ---- */
bool mtk_view_meta(mtk_op_call *call);
bool mtk_reshape_meta(mtk_op_call *call);
bool mtk_view_as_meta(mtk_op_call *call);
bool mtk_reshape_as_meta(mtk_op_call *call);
bool mtk_flatten_meta(mtk_op_call *call);
bool mtk_unflatten_meta(mtk_op_call *call);
bool mtk_contiguous_meta(mtk_op_call *call);
bool mtk_expand_meta(mtk_op_call *call);
bool mtk_expand_as_meta(mtk_op_call *call);
bool mtk_transpose_meta(mtk_op_call *call);
bool mtk_t_meta(mtk_op_call *call);
bool mtk_permute_meta(mtk_op_call *call);
bool mtk_movedim_meta(mtk_op_call *call);
bool mtk_squeeze_meta(mtk_op_call *call);
bool mtk_unsqueeze_meta(mtk_op_call *call);
bool mtk_narrow_meta(mtk_op_call *call);
bool mtk_select_meta(mtk_op_call *call);
bool mtk_slice_meta(mtk_op_call *call);
bool mtk_split_meta(mtk_op_call *call);
bool mtk_chunk_meta(mtk_op_call *call);
bool mtk_unbind_meta(mtk_op_call *call);
bool mtk_repeat_meta(mtk_op_call *call);
bool mtk_as_strided_meta(mtk_op_call *call); /* view_strided.c */

/* A view's cpu kernel: nothing to do, the dispatcher shared the storage. */
bool mtk_view_cpu(mtk_op_call *call);
/* reshape/flatten/contiguous: nothing for a view, else copies arg 0 into
 * the fresh output in row-major element order. */
bool mtk_copy_unless_view_cpu(mtk_op_call *call);
bool mtk_repeat_cpu(mtk_op_call *call);

/* ---- shared by the view files ---- */

/* Wraps a possibly negative dim into [0, ndim) (a 0-dim tensor accepts -1
 * and 0).  On error sets PyTorch's IndexError text naming the op and
 * returns -1. */
int32_t mtk_view_wrap_dim(mtk_op_call *call, int64_t dim, int32_t ndim);

/* Strides that view x as newshape[newn] (PyTorch's computeStride); false
 * when no view exists and reshape must copy. */
bool mtk_view_strides(const mtk_tensor *x, const int64_t *newshape, int32_t newn, int64_t *newstride);

/* Reads the int[] argument `arg` into out[MTK_MAX_DIMS]; -1 on error. */
int32_t mtk_view_ints(mtk_op_call *call, int arg, int64_t *out, const char *name);

/* A tensor viewing x's storage with the given geometry (arena metadata;
 * x's dtype, device and requires_grad flag). */
mtk_tensor *mtk_view_make(mtk_op_call *call, const mtk_tensor *x, const int64_t *shape,
                          const int64_t *stride, int32_t ndim, int64_t storage_offset);

/* Describes the call's single output as a view of arg 0 (mtk_view_make). */
bool mtk_view_single(mtk_op_call *call, const mtk_tensor *x, const int64_t *shape,
                     const int64_t *stride, int32_t ndim, int64_t storage_offset);

/* Describes the single output as a fresh tensor (not a view) with x's
 * dtype, device and requires_grad flag, and the given strides (NULL:
 * contiguous). */
bool mtk_view_fresh_output(mtk_op_call *call, const mtk_tensor *x, const int64_t *shape, int32_t ndim,
                           const int64_t *stride);

/* Describes the single output as x reshaped to shape[ndim] (no -1): a view
 * when torch's stride rule allows one, else a fresh contiguous tensor that
 * mtk_copy_unless_view_cpu fills. */
bool mtk_view_reshape_output(mtk_op_call *call, const mtk_tensor *x, const int64_t *shape,
                             int32_t ndim);

#endif
