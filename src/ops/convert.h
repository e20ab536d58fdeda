/* The convert op family: meta/cpu functions named by list_convert.h.
 * convert.c: device and dtype transitions (to, to_empty, type_as, clone,
 * copy_, item); datadep.c: ops whose output size depends on the data
 * (nonzero, masked_select, unique). */
#ifndef MTK_OPS_CONVERT_H
#define MTK_OPS_CONVERT_H

#include "mtk/op.h"

bool mtk_to_meta(mtk_op_call *call);
bool mtk_type_as_meta(mtk_op_call *call);
bool mtk_to_empty_meta(mtk_op_call *call);
bool mtk_clone_meta(mtk_op_call *call);
bool mtk_copy__meta(mtk_op_call *call);
bool mtk_item_meta(mtk_op_call *call);
bool mtk_nonzero_meta(mtk_op_call *call);
bool mtk_masked_select_meta(mtk_op_call *call);
bool mtk_unique_meta(mtk_op_call *call);

bool mtk_convert_copy_cpu(mtk_op_call *call); /* to, type_as, clone: out[0] = input */
bool mtk_copy__cpu(mtk_op_call *call);
bool mtk_item_cpu(mtk_op_call *call);
bool mtk_nonzero_cpu(mtk_op_call *call);
bool mtk_masked_select_cpu(mtk_op_call *call);
bool mtk_unique_cpu(mtk_op_call *call);

/* The message every "needs data from a meta tensor" error starts with
 * (PyTorch's words), and the hint mtk adds after it. */
#define MTK_META_COPY_MESSAGE "Cannot copy out of meta tensor; no data!"
#define MTK_META_DATA_HINT                                                                        \
    "A meta tensor has a shape and a dtype but no values: use to_empty(device='cpu') to get "    \
    "uninitialized memory on a real device, or load a checkpoint to fill it"

#endif
