/* Helpers shared by op implementations: argument access, broadcasting,
 * PyTorch's TensorIterator output-stride rule, and strided cpu loops. */
#ifndef MTK_OP_UTIL_H
#define MTK_OP_UTIL_H

#include "mtk/op.h"

/* The tensor in argument i (NULL if the argument is not a tensor). */
static inline mtk_tensor *arg_tensor(const mtk_op_call *c, int i)
{
    return c->args[i].kind == MTK_VALUE_TENSOR ? c->args[i].as.tensor : NULL;
}
static inline bool arg_is_none(const mtk_op_call *c, int i) { return c->args[i].kind == MTK_VALUE_NONE; }
static inline int64_t arg_int(const mtk_op_call *c, int i) { return c->args[i].as.i; }
static inline bool arg_bool(const mtk_op_call *c, int i) { return c->args[i].as.b; }

/* ---------------------------------------------------- int64 arithmetic
 * Size and stride arithmetic without C's undefined behaviour on overflow.
 * ops_wrap_* give the two's complement result torch's int64 code computes;
 * ops_sat_mul saturates at INT64_MAX (mtk's rule for the strides of huge
 * shapes, as mtk_contiguous_strides); ops_size_product is the exact product
 * of sizes whenever one of them is 0, and INT64_MAX when it overflows. */
static inline int64_t ops_wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static inline int64_t ops_wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t ops_wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t ops_sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
int64_t ops_size_product(const int64_t *sizes, int32_t begin, int32_t end);
/* offset + index * stride: where element `index` along a dim of that
 * stride starts.  False with MTK_ERR_OVERFLOW (naming the op) when it
 * leaves int64: torch's wrapped offset would point anywhere. */
bool ops_offset_of(mtk_op_call *call, int64_t offset, int64_t index, int64_t stride, int64_t *out);

/* infer_size: broadcasts shape a with shape b into out (ndim in *nout).
 * On mismatch sets MTK_ERR_SHAPE with PyTorch's words, prefixed by `op`:
 * "The size of tensor a (3) must match the size of tensor b (4) at
 * non-singleton dimension 1". */
bool mtk_broadcast_shapes(mtk_ctx *ctx, const char *op, const int64_t *a, int32_t na,
                          const int64_t *b, int32_t nb, int64_t *out, int32_t *nout);

/* The output strides torch's meta device gives an element-wise op over
 * `inputs` (in PyTorch's operand order) whose broadcast shape is
 * shape[ndim]: the rule of torch._prims (compute_elementwise_output_
 * logical_to_physical_perm), which the meta kernels of element-wise ops
 * use.  0-dim cpu tensors (cpu scalars, wrapped Python numbers) do not
 * take part; the other inputs are expanded to the shape as Tensor.expand
 * does.  All contiguous (and not all channels-last) gives contiguous
 * strides, all channels-last (and not all contiguous) channels-last ones,
 * anything else TensorIterator's stride-sorting permutation (ties broken
 * by size); sizes 0 count as 1.  (PyTorch's cpu TensorIterator differs
 * in corner cases: size-1 dims with odd strides, size-0 dims, inputs
 * that are both contiguous and channels-last; see
 * mtk_ti_cpu_output_strides.)  Writes stride_out. */
void mtk_ti_output_strides(const mtk_tensor *const *inputs, int32_t ninputs,
                           const int64_t *shape, int32_t ndim, int64_t *stride_out);

/* The output strides torch's cpu TensorIterator gives an op over
 * `inputs` (its operands, already in the common dtype, in PyTorch's
 * order) whose broadcast shape is shape[ndim].  Every input takes part,
 * 0-dim ones (Python numbers, scalar tensors) included.  Inputs all of
 * that shape: all contiguous gives contiguous strides, else all
 * channels-last channels-last ones, else all non-overlapping and dense
 * with equal strides those strides.  Otherwise each input's strides as
 * TensorIterator sees them (a broadcast dim or a missing leading one 0,
 * a size-1 dim of size 1 in the shape keeps its own stride) order the
 * dims (the stride-sorting permutation of mtk_ti_output_strides); the
 * identity order gives contiguous strides, any other order dense strides
 * in that order where a size-0 dim multiplies by 0.  Writes stride_out. */
void mtk_ti_cpu_output_strides(const mtk_tensor *const *inputs, int32_t ninputs, const int64_t *shape,
                               int32_t ndim, int64_t *stride_out);

/* torch's C++ suggest_memory_format test (is_channels_last_strides_2d /
 * _3d) on a 4-D / 5-D geometry: the dims in NHWC (NDHWC) order have
 * non-decreasing strides (each dim's size scaling the next minimum), no size 0,
 * a nonzero channel stride, and N not tied with C (the N111 / N11W
 * ambiguity falls back to contiguous).  False for other ranks. */
bool mtk_strides_suggest_channels_last(int32_t ndim, const int64_t *shape, const int64_t *stride);

/* The fast path of mtk_ti_output_strides: true when every input is a
 * tensor (not a wrapped number) of exactly shape[ndim], contiguous, and
 * ndim is not 4 (where contiguous and channels-last can tie).  The rule
 * then gives contiguous strides (mtk_contiguous_strides), whatever the
 * inputs' devices: a 0-dim cpu scalar among them has ndim 0 = ndim. */
bool mtk_ti_all_contiguous(const mtk_tensor *const *inputs, int32_t ninputs, const int64_t *shape,
                           int32_t ndim);

/* The strides of t.expand(shape[ndim]) as PyTorch computes them
 * (inferExpandGeometry): a broadcast dim gets stride 0, a kept dim keeps
 * its stride, a new leading size-1 dim gets size * stride of the dim after
 * it.  `t` must broadcast to the shape. */
void mtk_expand_strides(const mtk_tensor *t, const int64_t *shape, int32_t ndim, int64_t *stride_out);

/* infer_dense_strides / empty_like(preserve_format) for one tensor:
 * same strides if non-overlapping and dense, else the TensorIterator
 * permutation applied to contiguous strides. */
void mtk_dense_strides_like(const mtk_tensor *t, int64_t *stride_out);

/* The byte strides of `t` broadcast to shape[ndim] (right-aligned; size-1
 * and missing dims get stride 0). */
void mtk_broadcast_byte_strides(const mtk_tensor *t, const int64_t *shape, int32_t ndim,
                                int64_t *byte_stride_out);

/* Strided loop over shape[ndim] for `n` (at most 16) operands: calls inner(ptrs,
 * byte_strides, count, user) once per innermost row, with each operand's
 * pointer at the row start and its innermost byte stride.  A 0-dim shape
 * is one row of one element.  strides[k] is operand k's byte-stride array
 * (ndim entries). */
typedef void (*mtk_inner_loop)(char **ptrs, const int64_t *byte_strides, int64_t count, void *user);
void mtk_foreach_strided(int32_t n, char *const *base, const int64_t *const *strides,
                         const int64_t *shape, int32_t ndim, mtk_inner_loop inner, void *user);

/* PyTorch's c10::ScalarType name of a dtype as its messages spell it
 * ("Float", "Long", "Half", "BFloat16", "Float8_e4m3fn"; "Undefined" for
 * an invalid dtype): the dtype table's scalar_type_name column. */
const char *mtk_dtype_cpp_name(mtk_dtype dtype);

/* The C++ name of a dtype's scalar type as some torch messages print it
 * (caffe2's TypeMeta / typeid: "float", "long int", "c10::Half", ...;
 * conv's bias check, sdpa's dtype checks). */
const char *mtk_cpp_type_name(mtk_dtype d);

/* The cost of an op whose work is producing its outputs: elements
 * produced (numel of every output), no FLOPs (FlopCounterMode counts
 * none of these ops).  The cost function of the element-wise, index,
 * reduction and most nn rows. */
mtk_op_cost mtk_outputs_cost(const mtk_op_call *call);

/* PyTorch's internal-overlap check of a tensor an op writes into: false,
 * with "unsupported operation: more than one element of the written-to
 * tensor refers to a single memory location..." set, when an expanded dim
 * (size > 1, stride 0) makes two elements one.  An empty tensor passes (torch
 * counts it dense). */
bool mtk_check_writable(mtk_op_call *call, const mtk_tensor *t);

/* torch's partial-overlap check (copy_'s) of two views of one storage:
 * the same view is fine (a no-op copy); two non-overlapping-and-dense
 * views whose byte ranges meet overlap partly; anything else is too hard
 * to tell, and allowed. */
bool mtk_views_partially_overlap(const mtk_tensor *a, const mtk_tensor *b);

/* Copies src into dst (same shape; any strides; converting dtype), as
 * Tensor.copy_ does after broadcasting src to dst's shape. */
void mtk_copy_strided(mtk_tensor *dst, const mtk_tensor *src);

#endif
