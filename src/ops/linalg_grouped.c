/* torch._grouped_mm in the form mixture-of-experts layers call it
 * (transformers' grouped_mm experts): a (S, K) matrix of rows sorted by
 * group, b (G, K, N) one matrix per group, offs (G) int32 the cumulative
 * row ends; rows [offs[g-1], offs[g]) are multiplied by b[g], giving
 * (S, N) contiguous in a's dtype.  Rows past offs[G-1] belong to no group
 * (torch leaves them unwritten; here they are zeros).
 *
 * dtypes as torch's cpu kernel: float32, bfloat16, float16, both operands
 * alike.  torch's kernels also require 16-byte aligned strides; a plan of
 * the sizes needs no memory, so that is not checked.  The shapes do not
 * depend on offs' values, so meta needs none.  FLOPs: 2 * S * K * N, the
 * products the groups make together (FlopCounterMode does not count the
 * op; this is what a grouped kernel computes). */
#include "ops/linalg.h"
#include "ops/op_util.h"
#include "core/scalar.h"
#include "mtk/ops/linalg.h"
#include "ops/registry.h"

#include <string.h>

enum { GMM_A, GMM_B, GMM_OFFS };

static bool float_dtype(mtk_dtype d) { return d == MTK_FLOAT32 || d == MTK_BFLOAT16 || d == MTK_FLOAT16; }

bool mtk_grouped_mm_meta(mtk_op_call *call)
{
    const mtk_tensor *a = arg_tensor(call, GMM_A), *b = arg_tensor(call, GMM_B), *offs = arg_tensor(call, GMM_OFFS);
    if (!offs || a->ndim != 2 || b->ndim != 3)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "mtk supports the 2-D x 3-D form with offs ((S, K) @ (G, K, N)), got %d-D x %d-D%s",
                              (int)a->ndim, (int)b->ndim, offs ? "" : " without offs");
    if (!float_dtype(a->dtype) || a->dtype != b->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE, "Expected mat_a and mat_b to be Float32, BFloat16 or Float16 "
                              "matrices of one dtype, got %s and %s", mtk_dtype_name(a->dtype), mtk_dtype_name(b->dtype));
    if (offs->dtype != MTK_INT32) return mtk_call_error(call, MTK_ERR_DTYPE, "Offsets have to be int32");
    if (offs->ndim != 1 || offs->shape[0] != b->shape[0])
        return mtk_call_error(call, MTK_ERR_SHAPE, "offs must be 1-D with one entry per group (%lld), got %d-D of %lld",
                              (long long)b->shape[0], (int)offs->ndim, (long long)(offs->ndim ? offs->shape[0] : 1));
    if (a->shape[1] != b->shape[1])
        return mtk_call_error(call, MTK_ERR_SHAPE, "contraction dimension of mat_a and mat_b must match, got %lld and %lld",
                              (long long)a->shape[1], (long long)b->shape[1]);
    int64_t shape[2] = { a->shape[0], b->shape[2] };
    mtk_tensor *out = mtk_tensor_new(call->ctx, a->dtype, shape, 2, NULL, call->device);
    if (!out || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, out, -1);
    return true;
}

static double element(const mtk_tensor *t, const int64_t *at)
{
    int64_t offset = 0;
    for (int32_t d = 0; d < t->ndim; d++) offset += at[d] * t->stride[d];
    return mtk_load_f64(t->dtype, (const char *)mtk_tensor_data(t) + offset * (int64_t)mtk_dtype_size(t->dtype));
}

/* Each row of each group: out[r] = a[r] @ b[g], accumulated in double,
 * rounded once to the dtype. */
bool mtk_grouped_mm_cpu(mtk_op_call *call)
{
    const mtk_tensor *a = arg_tensor(call, GMM_A), *b = arg_tensor(call, GMM_B), *offs = arg_tensor(call, GMM_OFFS);
    mtk_tensor *out = call->out[0];
    int64_t rows = a->shape[0], k = a->shape[1], n = b->shape[2], groups = b->shape[0], start = 0;
    size_t es = mtk_dtype_size(out->dtype);
    char *o = mtk_tensor_data(out);
    memset(o, 0, (size_t)(rows * n) * es);
    for (int64_t g = 0; g < groups; g++) {
        int64_t at_offs[1] = { g };
        int64_t end = (int64_t)element(offs, at_offs);
        if (end < start || end > rows)
            return mtk_call_error(call, MTK_ERR_INDEX, "offs[%lld] = %lld is outside [%lld, %lld]: offsets must be "
                                  "non-decreasing and at most the %lld rows", (long long)g, (long long)end,
                                  (long long)start, (long long)rows, (long long)rows);
        for (int64_t r = start; r < end; r++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0.0;
                for (int64_t i = 0; i < k; i++) {
                    int64_t ai[2] = { r, i }, bi[3] = { g, i, j };
                    acc += element(a, ai) * element(b, bi);
                }
                mtk_store_f64(out->dtype, o + (r * n + j) * (int64_t)es, acc);
            }
        start = end;
    }
    return true;
}

mtk_op_cost mtk_grouped_mm_cost(const mtk_op_call *call)
{
    const mtk_tensor *a = arg_tensor(call, GMM_A), *b = arg_tensor(call, GMM_B);
    mtk_op_cost cost = { 0, 0 };
    if (a && b && a->ndim == 2 && b->ndim == 3) cost.flops = 2 * a->shape[0] * a->shape[1] * b->shape[2];
    return cost;
}

mtk_tensor *mtk_grouped_mm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *mat2, mtk_tensor *offs)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_GROUPED_MM));
    call.args[GMM_A] = mtk_value_tensor(input);
    call.args[GMM_B] = mtk_value_tensor(mat2);
    call.args[GMM_OFFS] = mtk_value_tensor(offs);
    return mtk_op_run_tensor(&call);
}
