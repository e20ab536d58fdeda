/* The index op family (shape-and-indexing ops that make new tensors):
 * the meta/cpu/cost functions named by list_index.h, and the helpers the
 * index*.c files share (prefix ix_).
 *
 *   index_cat.c      cat, concat, concatenate, stack, hstack, vstack, dstack
 *   index_split.c    tensor_split, tile, repeat_interleave
 *   index_reorder.c  roll, flip, tril, triu
 *   index_gather.c   index_select, gather, take_along_dim, embedding
 *   index_scatter.c  scatter, scatter_add, index_add, masked_fill, one_hot
 *   index_pad.c      F.pad
 *   index_sort.c     sort, argsort, topk (and index_sort_algo.c: the
 *                    libstdc++ orderings torch's cpu kernels produce)
 *   index_common.c   shared helpers, the cost function, threads
 *   index_api.c      the typed C API */
#ifndef MTK_OPS_INDEX_H
#define MTK_OPS_INDEX_H

#include "mtk/op.h"
#include "mtk/ops/creation.h" /* mtk_memory_format */

/* ------------------------------------------------- rows of list_index.h */

bool mtk_cat_meta(mtk_op_call *call);  /* cat and the *stack ops (info: which) */
bool mtk_cat_cpu(mtk_op_call *call);

bool mtk_tensor_split_meta(mtk_op_call *call);
bool mtk_tile_meta(mtk_op_call *call);
bool mtk_tile_cpu(mtk_op_call *call);
bool mtk_repeat_interleave_meta(mtk_op_call *call);
bool mtk_repeat_interleave_cpu(mtk_op_call *call);

bool mtk_roll_meta(mtk_op_call *call);
bool mtk_roll_cpu(mtk_op_call *call);
bool mtk_flip_meta(mtk_op_call *call);
bool mtk_flip_cpu(mtk_op_call *call);
bool mtk_tril_meta(mtk_op_call *call); /* tril and triu (info: which) */
bool mtk_tril_cpu(mtk_op_call *call);

bool mtk_index_select_meta(mtk_op_call *call);
bool mtk_index_select_cpu(mtk_op_call *call);
bool mtk_gather_meta(mtk_op_call *call);
bool mtk_gather_cpu(mtk_op_call *call);
bool mtk_take_along_dim_meta(mtk_op_call *call);
bool mtk_take_along_dim_cpu(mtk_op_call *call);
bool mtk_embedding_meta(mtk_op_call *call);
bool mtk_embedding_cpu(mtk_op_call *call);

bool mtk_scatter_meta(mtk_op_call *call);     /* scatter and scatter_add */
bool mtk_scatter_cpu(mtk_op_call *call);
bool mtk_index_add_meta(mtk_op_call *call);
bool mtk_index_add_cpu(mtk_op_call *call);
bool mtk_masked_fill_meta(mtk_op_call *call);
bool mtk_masked_fill_cpu(mtk_op_call *call);
bool mtk_one_hot_meta(mtk_op_call *call);
bool mtk_one_hot_cpu(mtk_op_call *call);

bool mtk_pad_meta(mtk_op_call *call);
bool mtk_pad_cpu(mtk_op_call *call);

bool mtk_sort_meta(mtk_op_call *call);        /* sort and argsort */
bool mtk_sort_cpu(mtk_op_call *call);
bool mtk_topk_meta(mtk_op_call *call);
bool mtk_topk_cpu(mtk_op_call *call);


/* Info objects of rows that share functions. */
typedef struct ix_info {
    int kind; /* op-specific: see the .c file that reads it */
} ix_info;
extern const ix_info mtk_ix_info_cat, mtk_ix_info_stack, mtk_ix_info_hstack, mtk_ix_info_vstack,
    mtk_ix_info_dstack;
extern const ix_info mtk_ix_info_tril, mtk_ix_info_triu;
extern const ix_info mtk_ix_info_scatter, mtk_ix_info_scatter_add;
extern const ix_info mtk_ix_info_sort, mtk_ix_info_argsort;

/* ------------------------------------------------------ shared helpers */

/* A fresh output tensor on the call's device (strides NULL: contiguous);
 * requires_grad is copied from `like` when not NULL.  NULL on error. */
mtk_tensor *ix_new_tensor(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                          const int64_t *stride, const mtk_tensor *like);

/* Describes the call's only output: a fresh tensor as ix_new_tensor. */
bool ix_single_output(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                      const int64_t *stride, const mtk_tensor *like);

/* torch's Tensor.suggest_memory_format(): channels-last for a 4-D (5-D)
 * tensor whose strides order N, C, H, W like NHWC (NDHWC), contiguous
 * otherwise. */
mtk_memory_format ix_suggest_memory_format(const mtk_tensor *t);

/* Strides of a fresh tensor of `shape` in `format` (contiguous unless a
 * channels-last format fits the rank). */
void ix_format_strides(mtk_memory_format format, const int64_t *shape, int32_t ndim, int64_t *stride_out);

/* Strides of torch's meta decompositions that end in
 * `elementwise(inputs...).contiguous()` (masked_fill, tril, index_add):
 * the element-wise stride rule (mtk_ti_output_strides), kept when torch
 * calls the result contiguous (size-1 dims may keep odd strides), else
 * contiguous strides. */
void ix_elementwise_then_contiguous(const mtk_tensor *const *inputs, int32_t n, const int64_t *shape, int32_t ndim,
                                    int64_t *stride_out);

/* torch's computeStride: strides that view a tensor of shape/stride[ndim]
 * as newshape[newn] (same numel), or false when no view exists.  An empty
 * tensor gets contiguous strides. */
bool ix_view_strides(const int64_t *shape, const int64_t *stride, int32_t ndim, const int64_t *newshape,
                     int32_t newn, int64_t *newstride);

/* Whether x.view(-1) works (torch's view rule for flattening). */
bool ix_can_flatten_view(const mtk_tensor *x);

/* torch's overloads refuse an explicit None where the signature's None
 * default only stands for "not given" (scatter(x, 0, i, None)): an error
 * when argument `arg` was passed as None by name or position. */
bool ix_refuse_explicit_none(mtk_op_call *call, int arg);

/* int32 or int64: the index dtypes cpu kernels read. */
bool ix_is_index_dtype(mtk_dtype dtype);

/* Reads the index element at p (any integral dtype) as int64. */
int64_t ix_load_index(mtk_dtype dtype, const void *p);

/* Element offset (in elements, from the tensor's first element) of the
 * multi-index `index` in t. */
static inline int64_t ix_offset(const mtk_tensor *t, const int64_t *index)
{
    int64_t off = 0;
    for (int32_t d = 0; d < t->ndim; d++) off += index[d] * t->stride[d];
    return off;
}

/* Row-major odometer over a shape: advances `index` by one; false after
 * the last element. */
static inline bool ix_next_index(int64_t *index, const int64_t *shape, int32_t ndim)
{
    for (int32_t d = ndim - 1; d >= 0; d--) {
        if (++index[d] < shape[d]) return true;
        index[d] = 0;
    }
    return false;
}

/* The multi-index of row-major element `linear` of shape. */
void ix_unravel(int64_t linear, const int64_t *shape, int32_t ndim, int64_t *index);

/* out[i0, .., in] = in[maps[0][i0], .., maps[n][in]] for every element
 * of out (same rank as in, same dtype); a NULL map (or NULL maps) is the
 * identity.  Any strides; runs on the family's threads when large. */
void ix_copy_mapped(mtk_tensor *out, const mtk_tensor *in, const int64_t *const *maps);

/* x as a 1-D tensor of its elements in row-major order: a view when
 * x.view(-1) exists, else a contiguous copy in memory from the context's
 * allocator (*tmp, which the caller frees with mtk_ctx_mfree; NULL when
 * no copy was made).  False (error set) when memory runs out. */
bool ix_flat_source(mtk_op_call *call, const mtk_tensor *x, mtk_tensor *flat, void **tmp);

/* The context's thread count while a kernel runs
 * (mtk_ctx_set_num_threads), at most 64. */
int32_t ix_num_threads(void);

/* How many chunks ix_parallel_for splits [0, n) into: up to
 * ix_num_threads(), each at least `grain` long; 0 for n <= 0. */
int32_t ix_parallel_chunks(int64_t n, int64_t grain);

/* Runs fn(begin, end, chunk, user) over [0, n) split into
 * ix_parallel_chunks(n, grain) contiguous chunks (chunk numbers them from
 * 0), each on its own thread; the calling thread runs chunk 0, and all of
 * [0, n) when there is one chunk. */
void ix_parallel_for(int64_t n, int64_t grain, void (*fn)(int64_t begin, int64_t end, int32_t chunk, void *user),
                     void *user);

/* The same with the number of chunks given (at most 64 and n); callers
 * that keep per-chunk scratch size it from the same number. */
void ix_parallel_run(int64_t n, int32_t chunks, void (*fn)(int64_t begin, int64_t end, int32_t chunk, void *user),
                     void *user);

#endif
