/* Op rows of the reduce family (see registry.h for the row format).
 *
 * Every row shares the family's meta/cpu/cost functions; the info object
 * names the op's kind.  Where PyTorch has overloads (max(x) / max(x, dim)
 * / max(x, other); var(x, unbiased) / var(x, dim, unbiased, keepdim) /
 * var(x, dim, *, correction, keepdim)) one signature covers them with
 * `Any` arguments that the description step tells apart. */
#define RED_ROW(ID, name_, sig, ...) \
    MTK_OP(ID, .name = name_, \
           .signature = sig, \
           .meta = mtk_reduce_meta, .cpu = mtk_reduce_cpu, .cost = mtk_outputs_cost, \
           .info = &mtk_reduce_info_##ID, __VA_ARGS__)

RED_ROW(SUM, "sum", "sum(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
RED_ROW(NANSUM, "nansum", "nansum(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
RED_ROW(MEAN, "mean", "mean(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
RED_ROW(NANMEAN, "nanmean", "nanmean(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
RED_ROW(PROD, "prod", "prod(Tensor input, int? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", .saved = ag_saved_input_result)
RED_ROW(AMAX, "amax", "amax(Tensor input, int[1]? dim=None, bool keepdim=False) -> Tensor", .saved = ag_saved_input_result)
RED_ROW(AMIN, "amin", "amin(Tensor input, int[1]? dim=None, bool keepdim=False) -> Tensor", .saved = ag_saved_input_result)
RED_ROW(MAX, "max",
        "max(Tensor input, Any? dim=None, bool keepdim=False, *, Tensor? other=None) -> Tensor | (Tensor values, Tensor indices)", .saved = ag_saved_extreme)
RED_ROW(MIN, "min",
        "min(Tensor input, Any? dim=None, bool keepdim=False, *, Tensor? other=None) -> Tensor | (Tensor values, Tensor indices)", .saved = ag_saved_extreme)
RED_ROW(ARGMAX, "argmax", "argmax(Tensor input, int? dim=None, bool keepdim=False) -> Tensor")
RED_ROW(ARGMIN, "argmin", "argmin(Tensor input, int? dim=None, bool keepdim=False) -> Tensor")
RED_ROW(VAR, "var",
        "var(Tensor input, Any? dim=None, bool? unbiased=None, bool keepdim=False, *, Scalar? correction=None) -> Tensor", .saved = ag_saved_input)
RED_ROW(STD, "std",
        "std(Tensor input, Any? dim=None, bool? unbiased=None, bool keepdim=False, *, Scalar? correction=None) -> Tensor", .saved = ag_saved_input_result)
RED_ROW(VAR_MEAN, "var_mean",
        "var_mean(Tensor input, Any? dim=None, bool? unbiased=None, bool keepdim=False, *, Scalar? correction=None) -> (Tensor, Tensor)")
RED_ROW(STD_MEAN, "std_mean",
        "std_mean(Tensor input, Any? dim=None, bool? unbiased=None, bool keepdim=False, *, Scalar? correction=None) -> (Tensor, Tensor)")
RED_ROW(LOGSUMEXP, "logsumexp", "logsumexp(Tensor input, int[1] dim, bool keepdim=False) -> Tensor", .saved = ag_saved_input_result)
RED_ROW(NORM, "norm",
        "norm(Tensor input, Any? p='fro', Any? dim=None, bool keepdim=False, Any? out=None, ScalarType? dtype=None) -> Tensor", .saved = ag_saved_input_result)
RED_ROW(VECTOR_NORM, "linalg.vector_norm",
        "linalg.vector_norm(Tensor input, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", .saved = ag_saved_input_result)
RED_ROW(ALL, "all", "all(Tensor input, int[1]? dim=None, bool keepdim=False) -> Tensor")
RED_ROW(ANY, "any", "any(Tensor input, int[1]? dim=None, bool keepdim=False) -> Tensor")
RED_ROW(COUNT_NONZERO, "count_nonzero", "count_nonzero(Tensor input, int[1]? dim=None) -> Tensor")
RED_ROW(CUMSUM, "cumsum", "cumsum(Tensor input, int dim, *, ScalarType? dtype=None) -> Tensor")
RED_ROW(CUMPROD, "cumprod", "cumprod(Tensor input, int dim, *, ScalarType? dtype=None) -> Tensor")
RED_ROW(CUMMAX, "cummax", "cummax(Tensor input, int dim) -> (Tensor values, Tensor indices)")
RED_ROW(CUMMIN, "cummin", "cummin(Tensor input, int dim) -> (Tensor values, Tensor indices)")
RED_ROW(MEDIAN, "median",
        "median(Tensor input, int? dim=None, bool keepdim=False) -> Tensor | (Tensor values, Tensor indices)")
RED_ROW(NANMEDIAN, "nanmedian",
        "nanmedian(Tensor input, int? dim=None, bool keepdim=False) -> Tensor | (Tensor values, Tensor indices)")
RED_ROW(MODE, "mode", "mode(Tensor input, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)")
MTK_OP(HISTC, .name = "histc",
       .signature = "histc(Tensor input, int bins=100, Scalar min=0, Scalar max=0) -> Tensor",
       .meta = mtk_histc_meta, .cpu = mtk_histc_cpu, .cost = mtk_outputs_cost)

#undef RED_ROW
