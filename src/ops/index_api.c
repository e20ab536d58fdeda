/* The typed C API of the index family (include/mtk/ops/index.h): each
 * function binds its arguments to the op's row and runs it. */
#include "ops/index.h"
#include "ops/registry.h"
#include "mtk/ops/index.h"

/* Starts a call of `id` with x as argument 0; false for a NULL x. */
static bool start(mtk_op_call *call, mtk_ctx *ctx, mtk_op_id id, mtk_tensor *x)
{
    if (!x) return false;
    mtk_op_call_init(call, ctx, mtk_op_by_id(id));
    call->args[0] = mtk_value_tensor(x);
    return true;
}

static mtk_value dim_value(int64_t dim) { return dim == MTK_INDEX_NO_DIM ? mtk_value_none() : mtk_value_int(dim); }

/* A list value of n tensors; None (and false) when one is NULL or memory
 * runs out. */
static bool tensor_list(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n, mtk_value *out)
{
    if (n < 0 || (n > 0 && !tensors)) return false;
    for (int32_t i = 0; i < n; i++)
        if (!tensors[i]) return false;
    *out = mtk_value_list(ctx, n, false);
    if (n > 0 && out->kind == MTK_VALUE_NONE) return false;
    if (n == 0) {
        out->kind = MTK_VALUE_LIST;
        out->as.list.items = NULL;
        out->as.list.count = 0;
        out->as.list.is_size = false;
    }
    for (int32_t i = 0; i < n; i++) out->as.list.items[i] = mtk_value_tensor(tensors[i]);
    return true;
}

static mtk_tensor *run_join(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *const *tensors, int32_t n, int64_t dim, bool has_dim)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    if (!tensor_list(ctx, tensors, n, &call.args[0])) return NULL;
    if (has_dim) call.args[1] = mtk_value_int(dim);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_cat(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n, int64_t dim)
{
    return run_join(ctx, OPID_CAT, tensors, n, dim, true);
}

mtk_tensor *mtk_stack(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n, int64_t dim)
{
    return run_join(ctx, OPID_STACK, tensors, n, dim, true);
}

mtk_tensor *mtk_hstack(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n)
{
    return run_join(ctx, OPID_HSTACK, tensors, n, 0, false);
}

mtk_tensor *mtk_vstack(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n)
{
    return run_join(ctx, OPID_VSTACK, tensors, n, 0, false);
}

mtk_tensor *mtk_dstack(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n)
{
    return run_join(ctx, OPID_DSTACK, tensors, n, 0, false);
}

int32_t mtk_tensor_split(mtk_ctx *ctx, mtk_tensor *x, int64_t sections, int64_t dim, mtk_tensor **out, int32_t cap)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_TENSOR_SPLIT, x)) return -1;
    call.args[1] = mtk_value_int(sections);
    call.args[2] = mtk_value_int(dim);
    return mtk_op_run_tensors(&call, out, cap);
}

int32_t mtk_tensor_split_indices(mtk_ctx *ctx, mtk_tensor *x, const int64_t *indices, int32_t n, int64_t dim,
                                 mtk_tensor **out, int32_t cap)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_TENSOR_SPLIT, x) || n < 0) return -1;
    call.args[1] = mtk_value_int_list(ctx, indices, n);
    if (n > 0 && call.args[1].kind == MTK_VALUE_NONE) return -1;
    if (n == 0) call.args[1] = (mtk_value){ .kind = MTK_VALUE_LIST, .as.list = { NULL, 0, false } };
    call.args[2] = mtk_value_int(dim);
    return mtk_op_run_tensors(&call, out, cap);
}

/* x with an int list as argument 1 */
static mtk_tensor *run_ints(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *x, const int64_t *ints, int32_t n)
{
    mtk_op_call call;
    if (!start(&call, ctx, id, x) || n < 0) return NULL;
    call.args[1] = n > 0 ? mtk_value_int_list(ctx, ints, n) : (mtk_value){ .kind = MTK_VALUE_LIST, .as.list = { NULL, 0, false } };
    if (call.args[1].kind == MTK_VALUE_NONE) return NULL;
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_tile(mtk_ctx *ctx, mtk_tensor *x, const int64_t *dims, int32_t n)
{
    return run_ints(ctx, OPID_TILE, x, dims, n);
}

mtk_tensor *mtk_flip(mtk_ctx *ctx, mtk_tensor *x, const int64_t *dims, int32_t n)
{
    return run_ints(ctx, OPID_FLIP, x, dims, n);
}

mtk_tensor *mtk_repeat_interleave(mtk_ctx *ctx, mtk_tensor *x, int64_t repeats, int64_t dim)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_REPEAT_INTERLEAVE, x)) return NULL;
    call.args[1] = mtk_value_int(repeats);
    call.args[2] = dim_value(dim);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_repeat_interleave_tensor(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *repeats, int64_t dim,
                                         int64_t output_size)
{
    mtk_op_call call;
    if (!repeats || !start(&call, ctx, OPID_REPEAT_INTERLEAVE, x)) return NULL;
    call.args[1] = mtk_value_tensor(repeats);
    call.args[2] = dim_value(dim);
    if (output_size >= 0) call.args[3] = mtk_value_int(output_size);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_roll(mtk_ctx *ctx, mtk_tensor *x, const int64_t *shifts, int32_t n, const int64_t *dims, int32_t n_dims)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_ROLL, x) || n < 0 || n_dims < 0) return NULL;
    call.args[1] = n > 0 ? mtk_value_int_list(ctx, shifts, n) : (mtk_value){ .kind = MTK_VALUE_LIST, .as.list = { NULL, 0, false } };
    if (n_dims > 0) call.args[2] = mtk_value_int_list(ctx, dims, n_dims);
    if (call.args[1].kind == MTK_VALUE_NONE || (n_dims > 0 && call.args[2].kind == MTK_VALUE_NONE)) return NULL;
    return mtk_op_run_tensor(&call);
}

static mtk_tensor *run_diagonal(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *x, int64_t diagonal)
{
    mtk_op_call call;
    if (!start(&call, ctx, id, x)) return NULL;
    call.args[1] = mtk_value_int(diagonal);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_tril(mtk_ctx *ctx, mtk_tensor *x, int64_t diagonal) { return run_diagonal(ctx, OPID_TRIL, x, diagonal); }
mtk_tensor *mtk_triu(mtk_ctx *ctx, mtk_tensor *x, int64_t diagonal) { return run_diagonal(ctx, OPID_TRIU, x, diagonal); }

/* x, dim, index (the argument order of index_select/gather/scatter) */
static bool start_dim_index(mtk_op_call *call, mtk_ctx *ctx, mtk_op_id id, mtk_tensor *x, int64_t dim,
                            mtk_tensor *index)
{
    if (!index || !start(call, ctx, id, x)) return false;
    call->args[1] = mtk_value_int(dim);
    call->args[2] = mtk_value_tensor(index);
    return true;
}

mtk_tensor *mtk_index_select(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index)
{
    mtk_op_call call;
    return start_dim_index(&call, ctx, OPID_INDEX_SELECT, x, dim, index) ? mtk_op_run_tensor(&call) : NULL;
}

mtk_tensor *mtk_gather(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index)
{
    mtk_op_call call;
    return start_dim_index(&call, ctx, OPID_GATHER, x, dim, index) ? mtk_op_run_tensor(&call) : NULL;
}

mtk_tensor *mtk_take_along_dim(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *indices, int64_t dim)
{
    mtk_op_call call;
    if (!indices || !start(&call, ctx, OPID_TAKE_ALONG_DIM, x)) return NULL;
    call.args[1] = mtk_value_tensor(indices);
    call.args[2] = dim_value(dim);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_scatter(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index, mtk_tensor *src, const char *reduce)
{
    mtk_op_call call;
    if (!src || !start_dim_index(&call, ctx, OPID_SCATTER, x, dim, index)) return NULL;
    call.args[3] = mtk_value_tensor(src);
    if (reduce) call.args[5] = mtk_value_string(reduce);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_scatter_value(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index, double value,
                              const char *reduce)
{
    mtk_op_call call;
    if (!start_dim_index(&call, ctx, OPID_SCATTER, x, dim, index)) return NULL;
    call.args[4] = mtk_value_float(value);
    if (reduce) call.args[5] = mtk_value_string(reduce);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_scatter_add(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index, mtk_tensor *src)
{
    mtk_op_call call;
    if (!src || !start_dim_index(&call, ctx, OPID_SCATTER_ADD, x, dim, index)) return NULL;
    call.args[3] = mtk_value_tensor(src);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_index_add(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index, mtk_tensor *source,
                          double alpha)
{
    mtk_op_call call;
    if (!source || !start_dim_index(&call, ctx, OPID_INDEX_ADD, x, dim, index)) return NULL;
    call.args[3] = mtk_value_tensor(source);
    /* an integral alpha stays an int, as a Python int would */
    call.args[4] = alpha == (double)(int64_t)alpha ? mtk_value_int((int64_t)alpha) : mtk_value_float(alpha);
    return mtk_op_run_tensor(&call);
}

static mtk_tensor *run_masked_fill(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *mask, mtk_value value)
{
    mtk_op_call call;
    if (!mask || !start(&call, ctx, OPID_MASKED_FILL, x)) return NULL;
    call.args[1] = mtk_value_tensor(mask);
    call.args[2] = value;
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_masked_fill(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *mask, double value)
{
    return run_masked_fill(ctx, x, mask, mtk_value_float(value));
}

mtk_tensor *mtk_masked_fill_tensor(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *mask, mtk_tensor *value)
{
    return value ? run_masked_fill(ctx, x, mask, mtk_value_tensor(value)) : NULL;
}

mtk_tensor *mtk_embedding(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, bool has_padding_idx,
                          int64_t padding_idx)
{
    mtk_op_call call;
    if (!weight || !start(&call, ctx, OPID_EMBEDDING, input)) return NULL;
    call.args[1] = mtk_value_tensor(weight);
    if (has_padding_idx) call.args[2] = mtk_value_int(padding_idx);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_one_hot(mtk_ctx *ctx, mtk_tensor *input, int64_t num_classes)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_ONE_HOT, input)) return NULL;
    call.args[1] = mtk_value_int(num_classes);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_pad(mtk_ctx *ctx, mtk_tensor *x, const int64_t *pad, int32_t n, const char *mode, double value)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_PAD, x) || n < 0) return NULL;
    call.args[1] = n > 0 ? mtk_value_int_list(ctx, pad, n) : (mtk_value){ .kind = MTK_VALUE_LIST, .as.list = { NULL, 0, false } };
    if (call.args[1].kind == MTK_VALUE_NONE) return NULL;
    if (mode) call.args[2] = mtk_value_string(mode);
    if (!mode || value != 0.0) call.args[3] = mtk_value_float(value);
    return mtk_op_run_tensor(&call);
}

bool mtk_sort(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, bool descending, bool stable, mtk_tensor **values,
              mtk_tensor **indices)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_SORT, x)) return false;
    call.args[1] = mtk_value_int(dim);
    call.args[2] = mtk_value_bool(descending);
    call.args[3] = mtk_value_bool(stable);
    if (!mtk_op_run(&call) || call.nout != 2) return false;
    if (values) *values = call.out[0];
    if (indices) *indices = call.out[1];
    return true;
}

mtk_tensor *mtk_argsort(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, bool descending, bool stable)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_ARGSORT, x)) return NULL;
    call.args[1] = mtk_value_int(dim);
    call.args[2] = mtk_value_bool(descending);
    call.args[3] = mtk_value_bool(stable);
    return mtk_op_run_tensor(&call);
}

bool mtk_topk(mtk_ctx *ctx, mtk_tensor *x, int64_t k, int64_t dim, bool largest, bool sorted, mtk_tensor **values,
              mtk_tensor **indices)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_TOPK, x)) return false;
    call.args[1] = mtk_value_int(k);
    call.args[2] = mtk_value_int(dim);
    call.args[3] = mtk_value_bool(largest);
    call.args[4] = mtk_value_bool(sorted);
    if (!mtk_op_run(&call) || call.nout != 2) return false;
    if (values) *values = call.out[0];
    if (indices) *indices = call.out[1];
    return true;
}
