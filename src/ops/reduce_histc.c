/* torch.histc: the histogram of a float tensor's elements over `bins`
 * equal-width bins between min and max (min == max: the elements' own
 * minimum and maximum); elements outside are ignored, an element equal
 * to max falls in the last bin.  The result is (bins) in the input's
 * dtype, whatever the input's shape.  Its shape needs no data, so meta
 * takes min == max too. */
#include "ops/reduce.h"
#include "ops/op_util.h"
#include "core/scalar.h"
#include "ops/registry.h"
#include "mtk/ops/reduce.h"

#include <math.h>
#include <string.h>

enum { HISTC_INPUT, HISTC_BINS, HISTC_MIN, HISTC_MAX };

bool mtk_histc_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, HISTC_INPUT);
    int64_t bins = arg_int(call, HISTC_BINS);
    double lo = mtk_value_as_double(&call->args[HISTC_MIN]), hi = mtk_value_as_double(&call->args[HISTC_MAX]);
    if (x->dtype != MTK_FLOAT32 && x->dtype != MTK_FLOAT64 && x->dtype != MTK_BFLOAT16 && x->dtype != MTK_FLOAT16)
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"histogram_cpu\" not implemented for '%s'",
                              mtk_dtype_cpp_name(x->dtype));
    if (bins <= 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "bins must be > 0, but got %lld for dimension 0",
                                         (long long)bins);
    if (lo > hi) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "max must be larger than min");
    if (!isfinite(lo) || !isfinite(hi))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "range of [%g, %g] is not finite", lo, hi);
    mtk_tensor *out = mtk_tensor_new(call->ctx, x->dtype, &bins, 1, NULL, call->device);
    if (!out || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, out, -1);
    return true;
}

/* x's element number `flat` in row-major order. */
static double load_at(const mtk_tensor *x, int64_t flat)
{
    int64_t offset = 0;
    for (int32_t d = x->ndim - 1; d >= 0; d--) {
        offset += (flat % x->shape[d]) * x->stride[d];
        flat /= x->shape[d];
    }
    return mtk_load_f64(x->dtype, (const char *)mtk_tensor_data(x) + offset * (int64_t)mtk_dtype_size(x->dtype));
}

bool mtk_histc_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, HISTC_INPUT);
    mtk_tensor *out = call->out[0];
    int64_t bins = out->shape[0], n = mtk_tensor_numel(x);
    double lo = mtk_value_as_double(&call->args[HISTC_MIN]), hi = mtk_value_as_double(&call->args[HISTC_MAX]);
    if (lo == hi && n > 0) { /* the data's range */
        lo = hi = load_at(x, 0);
        for (int64_t i = 1; i < n; i++) {
            double v = load_at(x, i);
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
    }
    if (lo == hi) lo -= 1, hi += 1; /* torch widens an empty range */
    double *count = mtk_ctx_malloc(call->ctx, (size_t)bins * sizeof *count);
    if (!count) return mtk_error(call->ctx, MTK_ERR_OUT_OF_MEMORY, "histc: out of memory");
    memset(count, 0, (size_t)bins * sizeof *count);
    for (int64_t i = 0; i < n; i++) {
        double v = load_at(x, i);
        if (!(v >= lo && v <= hi)) continue;
        int64_t b = (int64_t)((v - lo) / (hi - lo) * (double)bins);
        count[b < bins ? b : bins - 1] += 1.0;
    }
    char *o = mtk_tensor_data(out);
    size_t es = mtk_dtype_size(out->dtype);
    for (int64_t b = 0; b < bins; b++) mtk_store_f64(out->dtype, o + b * (int64_t)es, count[b]);
    mtk_ctx_mfree(call->ctx, count);
    return true;
}

mtk_tensor *mtk_histc(mtk_ctx *ctx, mtk_tensor *input, int64_t bins, double min, double max)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_HISTC));
    call.args[HISTC_INPUT] = mtk_value_tensor(input);
    call.args[HISTC_BINS] = mtk_value_int(bins);
    call.args[HISTC_MIN] = mtk_value_float(min);
    call.args[HISTC_MAX] = mtk_value_float(max);
    return mtk_op_run_tensor(&call);
}
