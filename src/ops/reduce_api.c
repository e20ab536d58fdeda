/* The typed C API of the reduce family (include/mtk/ops/reduce.h): each
 * function fills the arguments of its op row and runs it. */
#include "ops/registry.h"
#include "mtk/ops/reduce.h"

static mtk_value dims_value(mtk_ctx *ctx, const int64_t *dims, int32_t ndims)
{
    return dims ? mtk_value_int_list(ctx, dims, ndims) : mtk_value_none();
}

static mtk_value dtype_value(mtk_dtype dtype)
{
    return dtype == MTK_DTYPE_UNDEFINED ? mtk_value_none() : mtk_value_dtype(dtype);
}

static void start(mtk_op_call *call, mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input)
{
    mtk_op_call_init(call, ctx, mtk_op_by_id(id));
    call->args[0] = mtk_value_tensor(input);
}

/* (input, dim, keepdim, *, dtype) rows */
static mtk_tensor *run_dims_keep_dtype(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, const int64_t *dims,
                                       int32_t ndims, bool keepdim, mtk_dtype dtype)
{
    mtk_op_call call;
    start(&call, ctx, id, input);
    call.args[1] = dims_value(ctx, dims, ndims);
    call.args[2] = mtk_value_bool(keepdim);
    call.args[3] = dtype_value(dtype);
    return mtk_op_run_tensor(&call);
}

/* (input, dim, keepdim) rows */
static mtk_tensor *run_dims_keep(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, const int64_t *dims, int32_t ndims,
                                 bool keepdim)
{
    mtk_op_call call;
    start(&call, ctx, id, input);
    call.args[1] = dims_value(ctx, dims, ndims);
    call.args[2] = mtk_value_bool(keepdim);
    return mtk_op_run_tensor(&call);
}

/* Runs a call with two tensor outputs into *a and *b (NULL on error). */
static bool run_pair(mtk_op_call *call, mtk_tensor **a, mtk_tensor **b)
{
    *a = *b = NULL;
    if (!mtk_op_run(call)) return false;
    if (call->nout != 2) return false;
    *a = call->out[0];
    *b = call->out[1];
    return true;
}

mtk_tensor *mtk_sum(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim, mtk_dtype dtype)
{
    return run_dims_keep_dtype(ctx, OPID_SUM, input, dims, ndims, keepdim, dtype);
}

mtk_tensor *mtk_nansum(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim,
                       mtk_dtype dtype)
{
    return run_dims_keep_dtype(ctx, OPID_NANSUM, input, dims, ndims, keepdim, dtype);
}

mtk_tensor *mtk_mean(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim, mtk_dtype dtype)
{
    return run_dims_keep_dtype(ctx, OPID_MEAN, input, dims, ndims, keepdim, dtype);
}

mtk_tensor *mtk_nanmean(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim,
                        mtk_dtype dtype)
{
    return run_dims_keep_dtype(ctx, OPID_NANMEAN, input, dims, ndims, keepdim, dtype);
}

mtk_tensor *mtk_prod(mtk_ctx *ctx, mtk_tensor *input, mtk_dtype dtype)
{
    mtk_op_call call;
    start(&call, ctx, OPID_PROD, input);
    call.args[3] = dtype_value(dtype);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_prod_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_dtype dtype)
{
    mtk_op_call call;
    start(&call, ctx, OPID_PROD, input);
    call.args[1] = mtk_value_int(dim);
    call.args[2] = mtk_value_bool(keepdim);
    call.args[3] = dtype_value(dtype);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_amax(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim)
{
    return run_dims_keep(ctx, OPID_AMAX, input, dims, ndims, keepdim);
}

mtk_tensor *mtk_amin(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim)
{
    return run_dims_keep(ctx, OPID_AMIN, input, dims, ndims, keepdim);
}

mtk_tensor *mtk_max(mtk_ctx *ctx, mtk_tensor *input)
{
    mtk_op_call call;
    start(&call, ctx, OPID_MAX, input);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_min(mtk_ctx *ctx, mtk_tensor *input)
{
    mtk_op_call call;
    start(&call, ctx, OPID_MIN, input);
    return mtk_op_run_tensor(&call);
}

static bool extreme_dim(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values,
                        mtk_tensor **indices)
{
    mtk_op_call call;
    start(&call, ctx, id, input);
    call.args[1] = mtk_value_int(dim);
    call.args[2] = mtk_value_bool(keepdim);
    return run_pair(&call, values, indices);
}

bool mtk_max_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values, mtk_tensor **indices)
{
    return extreme_dim(ctx, OPID_MAX, input, dim, keepdim, values, indices);
}

bool mtk_min_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values, mtk_tensor **indices)
{
    return extreme_dim(ctx, OPID_MIN, input, dim, keepdim, values, indices);
}

static mtk_tensor *arg_extreme(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, const int64_t *dim, bool keepdim)
{
    mtk_op_call call;
    start(&call, ctx, id, input);
    call.args[1] = dim ? mtk_value_int(*dim) : mtk_value_none();
    call.args[2] = mtk_value_bool(keepdim);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_argmax(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dim, bool keepdim)
{
    return arg_extreme(ctx, OPID_ARGMAX, input, dim, keepdim);
}

mtk_tensor *mtk_argmin(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dim, bool keepdim)
{
    return arg_extreme(ctx, OPID_ARGMIN, input, dim, keepdim);
}

/* var-like rows: (input, dim, unbiased, keepdim, *, correction) */
static void start_var(mtk_op_call *call, mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, const int64_t *dims,
                      int32_t ndims, double correction, bool keepdim)
{
    start(call, ctx, id, input);
    call->args[1] = dims_value(ctx, dims, ndims);
    call->args[3] = mtk_value_bool(keepdim);
    call->args[4] = mtk_value_float(correction);
}

mtk_tensor *mtk_var(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, double correction,
                    bool keepdim)
{
    mtk_op_call call;
    start_var(&call, ctx, OPID_VAR, input, dims, ndims, correction, keepdim);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_std(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, double correction,
                    bool keepdim)
{
    mtk_op_call call;
    start_var(&call, ctx, OPID_STD, input, dims, ndims, correction, keepdim);
    return mtk_op_run_tensor(&call);
}

bool mtk_var_mean(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, double correction,
                  bool keepdim, mtk_tensor **var, mtk_tensor **mean)
{
    mtk_op_call call;
    start_var(&call, ctx, OPID_VAR_MEAN, input, dims, ndims, correction, keepdim);
    return run_pair(&call, var, mean);
}

bool mtk_std_mean(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, double correction,
                  bool keepdim, mtk_tensor **std, mtk_tensor **mean)
{
    mtk_op_call call;
    start_var(&call, ctx, OPID_STD_MEAN, input, dims, ndims, correction, keepdim);
    return run_pair(&call, std, mean);
}

mtk_tensor *mtk_logsumexp(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim)
{
    if (!dims) {
        /* dim is required in PyTorch; NULL here means every dim */
        int64_t all[MTK_MAX_DIMS];
        int32_t n = input ? input->ndim : 0;
        for (int32_t i = 0; i < n; i++) all[i] = i;
        if (n == 0) all[n++] = 0; /* a 0-dim input: dim 0 */
        return run_dims_keep(ctx, OPID_LOGSUMEXP, input, all, n, keepdim);
    }
    return run_dims_keep(ctx, OPID_LOGSUMEXP, input, dims, ndims, keepdim);
}

mtk_tensor *mtk_vector_norm(mtk_ctx *ctx, mtk_tensor *input, double ord, const int64_t *dims, int32_t ndims,
                            bool keepdim, mtk_dtype dtype)
{
    mtk_op_call call;
    start(&call, ctx, OPID_VECTOR_NORM, input);
    call.args[1] = mtk_value_float(ord);
    call.args[2] = dims_value(ctx, dims, ndims);
    call.args[3] = mtk_value_bool(keepdim);
    call.args[4] = dtype_value(dtype);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_all(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim)
{
    return run_dims_keep(ctx, OPID_ALL, input, dims, ndims, keepdim);
}

mtk_tensor *mtk_any(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim)
{
    return run_dims_keep(ctx, OPID_ANY, input, dims, ndims, keepdim);
}

mtk_tensor *mtk_count_nonzero(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims)
{
    mtk_op_call call;
    start(&call, ctx, OPID_COUNT_NONZERO, input);
    call.args[1] = dims_value(ctx, dims, ndims);
    return mtk_op_run_tensor(&call);
}

static mtk_tensor *cumulative(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, int64_t dim, mtk_dtype dtype)
{
    mtk_op_call call;
    start(&call, ctx, id, input);
    call.args[1] = mtk_value_int(dim);
    call.args[2] = dtype_value(dtype);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_cumsum(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_dtype dtype)
{
    return cumulative(ctx, OPID_CUMSUM, input, dim, dtype);
}

mtk_tensor *mtk_cumprod(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_dtype dtype)
{
    return cumulative(ctx, OPID_CUMPROD, input, dim, dtype);
}

static bool cumulative_extreme(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, int64_t dim, mtk_tensor **values,
                               mtk_tensor **indices)
{
    mtk_op_call call;
    start(&call, ctx, id, input);
    call.args[1] = mtk_value_int(dim);
    return run_pair(&call, values, indices);
}

bool mtk_cummax(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_tensor **values, mtk_tensor **indices)
{
    return cumulative_extreme(ctx, OPID_CUMMAX, input, dim, values, indices);
}

bool mtk_cummin(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_tensor **values, mtk_tensor **indices)
{
    return cumulative_extreme(ctx, OPID_CUMMIN, input, dim, values, indices);
}

mtk_tensor *mtk_median(mtk_ctx *ctx, mtk_tensor *input)
{
    mtk_op_call call;
    start(&call, ctx, OPID_MEDIAN, input);
    return mtk_op_run_tensor(&call);
}

bool mtk_median_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values,
                    mtk_tensor **indices)
{
    return extreme_dim(ctx, OPID_MEDIAN, input, dim, keepdim, values, indices);
}

bool mtk_mode(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values, mtk_tensor **indices)
{
    return extreme_dim(ctx, OPID_MODE, input, dim, keepdim, values, indices);
}
