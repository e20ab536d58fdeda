/* The linalg op family: meta/cpu/cost functions named by list_linalg.h.
 *
 * Every op of the family (matmul, mm, bmm, dot, mv, linear) is described
 * by one *plan*: which aten op PyTorch decomposes the call into (that
 * decides the FLOPs FlopCounterMode reports and which dtypes the cpu
 * supports), and the product as a broadcast batched matrix product that
 * the single cpu kernel runs.  The meta function, the kernel and the cost
 * function all start from the same plan, so they cannot disagree. */
#ifndef MTK_OPS_LINALG_H
#define MTK_OPS_LINALG_H

#include "mtk/op.h"

/* The aten op a call ends in (torch's _matmul_impl decomposition). */
typedef enum mtk_mm_path {
    MTK_MM_DOT, /* 1-D @ 1-D: not counted by FlopCounterMode               */
    MTK_MM_MV,  /* matrix @ vector (also folded N-D @ 1-D): not counted     */
    MTK_MM_MM,  /* mm or addmm, possibly after folding batch dims: 2*M*N*K  */
    MTK_MM_BMM  /* broadcast batched product: 2*B*M*N*K                     */
} mtk_mm_path;

/* How linear's bias joins the product. */
typedef enum mtk_mm_bias {
    MTK_BIAS_NONE,
    MTK_BIAS_FUSED, /* addmm: added before rounding, broadcast over the
                       flattened (bias_rows, n) output                  */
    MTK_BIAS_ADD    /* matmul, then output.add_(bias) over its shape     */
} mtk_mm_bias;

typedef struct mtk_mm_plan {
    mtk_mm_path path;
    int64_t flops; /* as torch.utils.flop_counter.FlopCounterMode counts */
    /* out[batch] (m x n) = a[batch] (m x k) @ b[batch] (k x n), out
     * contiguous; strides in elements, 0 where an operand broadcasts. */
    int32_t batch_ndim;
    int64_t batch_shape[MTK_MAX_DIMS];
    int64_t a_batch_stride[MTK_MAX_DIMS];
    int64_t b_batch_stride[MTK_MAX_DIMS];
    int64_t m, n, k;
    int64_t a_stride_m, a_stride_k, b_stride_k, b_stride_n;
    int32_t out_ndim;
    int64_t out_shape[MTK_MAX_DIMS];
    mtk_dtype out_dtype;          /* the input's, except where torch's
                                     meta promotes (see linalg.c)       */
    bool has_out_stride;          /* out_stride set (meta's bias add);
                                     otherwise the output is contiguous */
    int64_t out_stride[MTK_MAX_DIMS];
    mtk_mm_bias bias;
    int64_t bias_rows; /* MTK_BIAS_FUSED: rows of the flattened output */
} mtk_mm_plan;

/* Builds the plan of a call of a linalg op, validating its arguments as
 * PyTorch does.  Errors go to `ctx` (NULL: silent, for cost functions that
 * run after a successful meta call) prefixed with the op name. */
typedef bool (*mtk_mm_planner)(mtk_ctx *ctx, const mtk_op_call *call, mtk_mm_plan *plan);

/* The info object of each linalg row. */
typedef struct mtk_linalg_info {
    mtk_mm_planner plan;
} mtk_linalg_info;

extern const mtk_linalg_info mtk_linalg_matmul_info;
extern const mtk_linalg_info mtk_linalg_mm_info;
extern const mtk_linalg_info mtk_linalg_bmm_info;
extern const mtk_linalg_info mtk_linalg_dot_info;
extern const mtk_linalg_info mtk_linalg_mv_info;
extern const mtk_linalg_info mtk_linalg_linear_info;

/* Shared by every row: meta (contiguous output of the plan's shape), the
 * cpu kernel (linalg_cpu.c), and FLOPs. */
bool mtk_linalg_meta(mtk_op_call *call);
bool mtk_linalg_cpu(mtk_op_call *call);
mtk_op_cost mtk_linalg_cost(const mtk_op_call *call);

/* _grouped_mm (linalg_grouped.c): (S, K) rows by group @ (G, K, N) with
 * int32 offs -> (S, N). */
bool mtk_grouped_mm_meta(mtk_op_call *call);
bool mtk_grouped_mm_cpu(mtk_op_call *call);
mtk_op_cost mtk_grouped_mm_cost(const mtk_op_call *call);

#endif
