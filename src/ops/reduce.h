/* The reduce op family: meta/cpu/cost functions and info objects named by
 * list_reduce.h.
 *
 * Every row's info object names its kind.  Each call is first turned into
 * a *description* (reduce_desc.c): which input dims reduce, the dtype the
 * input is converted to, the outputs' dtypes and shapes, and where torch's
 * meta device accepts what its cpu kernel refuses.  The meta function
 * builds outputs from the description, the cpu kernel builds the same
 * description and runs the reduction engine (reduce_engine.c) or the scan
 * and sort kernels, so shapes are computed in one place. */
#ifndef MTK_OPS_REDUCE_H
#define MTK_OPS_REDUCE_H

#include "mtk/op.h"

typedef enum mtk_reduce_kind {
    MTK_RED_SUM,
    MTK_RED_NANSUM,
    MTK_RED_MEAN,
    MTK_RED_NANMEAN,
    MTK_RED_PROD,
    MTK_RED_AMAX,
    MTK_RED_AMIN,
    MTK_RED_MAX,           /* max(x) / max(x, dim) / max(x, other) */
    MTK_RED_MIN,
    MTK_RED_ARGMAX,
    MTK_RED_ARGMIN,
    MTK_RED_VAR,
    MTK_RED_STD,
    MTK_RED_VAR_MEAN,
    MTK_RED_STD_MEAN,
    MTK_RED_LOGSUMEXP,
    MTK_RED_NORM,          /* torch.norm (p may be a string)        */
    MTK_RED_VECTOR_NORM,   /* torch.linalg.vector_norm               */
    MTK_RED_ALL,
    MTK_RED_ANY,
    MTK_RED_COUNT_NONZERO,
    MTK_RED_CUMSUM,
    MTK_RED_CUMPROD,
    MTK_RED_CUMMAX,
    MTK_RED_CUMMIN,
    MTK_RED_MEDIAN,
    MTK_RED_NANMEDIAN,
    MTK_RED_MODE
} mtk_reduce_kind;

/* The info object of each reduce row. */
typedef struct mtk_reduce_info {
    mtk_reduce_kind kind;
} mtk_reduce_info;

#define MTK_REDUCE_INFO(ID) extern const mtk_reduce_info mtk_reduce_info_##ID;
MTK_REDUCE_INFO(SUM)
MTK_REDUCE_INFO(NANSUM)
MTK_REDUCE_INFO(MEAN)
MTK_REDUCE_INFO(NANMEAN)
MTK_REDUCE_INFO(PROD)
MTK_REDUCE_INFO(AMAX)
MTK_REDUCE_INFO(AMIN)
MTK_REDUCE_INFO(MAX)
MTK_REDUCE_INFO(MIN)
MTK_REDUCE_INFO(ARGMAX)
MTK_REDUCE_INFO(ARGMIN)
MTK_REDUCE_INFO(VAR)
MTK_REDUCE_INFO(STD)
MTK_REDUCE_INFO(VAR_MEAN)
MTK_REDUCE_INFO(STD_MEAN)
MTK_REDUCE_INFO(LOGSUMEXP)
MTK_REDUCE_INFO(NORM)
MTK_REDUCE_INFO(VECTOR_NORM)
MTK_REDUCE_INFO(ALL)
MTK_REDUCE_INFO(ANY)
MTK_REDUCE_INFO(COUNT_NONZERO)
MTK_REDUCE_INFO(CUMSUM)
MTK_REDUCE_INFO(CUMPROD)
MTK_REDUCE_INFO(CUMMAX)
MTK_REDUCE_INFO(CUMMIN)
MTK_REDUCE_INFO(MEDIAN)
MTK_REDUCE_INFO(NANMEDIAN)
MTK_REDUCE_INFO(MODE)
#undef MTK_REDUCE_INFO

/* Shared by every row: meta (outputs of the description), the cpu kernel,
 * and the cost (elements produced, no FLOPs: FlopCounterMode counts none
 * of these ops). */
bool mtk_reduce_meta(mtk_op_call *call);
bool mtk_reduce_cpu(mtk_op_call *call);

/* histc (reduce_histc.c): (bins) in the input's dtype. */
bool mtk_histc_meta(mtk_op_call *call);
bool mtk_histc_cpu(mtk_op_call *call);

#endif
