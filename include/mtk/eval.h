/*
 * mtk eval: a Python-compatible expression language over the op table.
 *
 *   matmul(f32[3,4], f32[4,5])
 *   torch.zeros(2, 3, dtype=torch.float16)
 *   F.linear(f32[32,10], f32[20,10], bias=None).view(-1)
 *
 * The language (a subset of Python expressions):
 *   - tensor literals DTYPE[d0, d1, ...]: f32[3,4], bf16[] (0-dim), i64[2,0];
 *     any dtype name mtk_dtype_from_name() knows (f32, float32, bf16, ...).
 *     A literal is a contiguous tensor on the context's default device
 *     (meta: no data; cpu: zero-filled).  Sizes are integer literals.
 *   - calls name(arg, ..., key=value), with PyTorch's op names and the
 *     prefixes torch., F., torch.nn.functional.; method calls x.name(...)
 *     (the op `name` with x as its first argument); nested calls.
 *   - ints (decimal, 0x/0o/0b, underscores; int64 range), floats (1.5,
 *     1e-3, .5, 2.), True/False (also true/false), None, strings ('cpu',
 *     "cpu"), lists [a, b], tuples (a, b) and (a,), unary minus and plus,
 *     dtype names as values (bf16, torch.float16; bare `float` and `int`
 *     mean float64 and int64 as Python's types do in torch), inf and nan
 *     (also math.inf, torch.nan, float('inf')), torch.device('cpu').
 *   - Python's operators with its precedence: @ + - * / // % ** & | ^
 *     << >>, chained comparisons, unary - + ~ (on tensors torch's Tensor
 *     dunders: add, rsub, matmul, lt, neg, bitwise_not, ...; on numbers
 *     Python's arithmetic in int64); a top-level `a, b` is a tuple.
 *   - tensor attributes (x.shape is a torch.Size, x.dtype, x.device,
 *     x.ndim, x.nbytes, x.itemsize, x.T, x.mT) and metadata methods
 *     (x.size(d), x.stride(), x.numel(), x.dim(), x.storage_offset(), ...),
 *     len(); torch's basic indexing x[0, 1:3], x[..., None], x[:, ::2]
 *     (views through select/slice/unsqueeze) and tuple indexing.
 *   - creation ops (zeros(3, 4)) run on the context's default device: push
 *     a device scope (mtk_ctx_push_device) to choose meta or cpu.
 * Errors are values: syntax errors name the column ("syntax error at
 * column 7: ..."), unknown ops and attributes suggest a near name, and
 * every limit below is refused before it can exhaust the stack or memory.
 */
#ifndef MTK_EVAL_H
#define MTK_EVAL_H

#include "mtk/core.h"
#include "mtk/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The limits of the language, each refused with an error that names it
 * before memory is committed (docs/eval.md lists them too):
 *   MTK_EVAL_MAX_DEPTH   levels of nesting: brackets, calls, operators,
 *                        method chains and subscripts (x.t().t()... counts
 *                        one level a method), the height of the syntax tree
 *                        that evaluation, printing and JSON recurse through;
 *   MTK_EVAL_MAX_TEXT    bytes of one expression (one line of --batch);
 *   MTK_EVAL_MAX_ITEMS   items of one list, tuple, call or subscript, and of
 *                        a list or tuple that + or * builds;
 *   MTK_EVAL_MAX_STRING  bytes of one string literal;
 *   MTK_EVAL_MAX_CPU_LITERAL_NUMEL  elements of a tensor literal on cpu
 *                        (zero-filled memory; on meta any size torch takes);
 *   MTK_JSON_MAX_VALUES  elements that mtk_value_to_json writes as "values"
 *                        for one value (MTK_JSON_VALUES). */
#define MTK_EVAL_MAX_DEPTH 256
#define MTK_EVAL_MAX_TEXT (1 << 20)
#define MTK_EVAL_MAX_ITEMS 65536
#define MTK_EVAL_MAX_STRING 4096
#define MTK_EVAL_MAX_CPU_LITERAL_NUMEL ((int64_t)1 << 28)
#define MTK_JSON_MAX_VALUES ((int64_t)1 << 20)

/* Evaluates the NUL-terminated expression `expr` in `ctx`.  On success
 * returns true with *result holding the value (tensors, lists and strings
 * live in the context's arena).  On failure returns false, *result is None
 * and the context's sticky error says why: MTK_ERR_SYNTAX for malformed
 * text, MTK_ERR_UNKNOWN_OP, MTK_ERR_INVALID_ARGUMENT, or whatever the op
 * set.  A context that already holds an error fails at once. */
MTK_API bool mtk_eval(mtk_ctx *ctx, const char *expr, mtk_value *result);

/* Same, for `len` bytes of `text` (need not be NUL-terminated; a NUL byte
 * inside is a syntax error).  When error_column is not NULL it receives
 * the 1-based byte column where the failure was found (the offending
 * token for a syntax error, the failing call or literal otherwise), or 0
 * on success. */
MTK_API bool mtk_eval_text(mtk_ctx *ctx, const char *text, size_t len, mtk_value *result,
                           int32_t *error_column);

/* Python's repr of a value, as a NUL-terminated string in the context's
 * arena: 3, 2.5, 1e-05, True, None, 'cpu', torch.float16,
 * device(type='meta'), [a, b], (a,), and tensors as mtk_tensor_repr()
 * prints them.  NULL (with MTK_ERR_OUT_OF_MEMORY) when memory runs out. */
MTK_API char *mtk_value_repr(mtk_ctx *ctx, const mtk_value *value);

/* Flags of mtk_value_to_json. */
enum mtk_json_flags {
    MTK_JSON_VALUES = 1u << 0 /* add "values" (flattened, logical order)
                                 to tensors that have data (cpu)     */
};

/* One JSON document (one line, no newline) describing a value, in the
 * context's arena:
 *   tensor  {"shape":[3,5],"dtype":"float32","stride":[5,1],
 *            "storage_offset":0,"device":"meta"} (+ "values":[...])
 *   list, tuple          a JSON array of the items, each converted alike
 *   int, float, bool     {"scalar": v}   (non-finite floats are written
 *                        NaN, Infinity, -Infinity as Python's json does)
 *   None                 null
 *   str                  {"string": "..."}
 *   dtype, device        {"dtype": "float16"}, {"device": "cpu"}
 * Integers beyond 2^53 are written exactly.  NULL on out of memory, or
 * (MTK_ERR_INVALID_ARGUMENT) when MTK_JSON_VALUES would write more than
 * MTK_JSON_MAX_VALUES elements. */
MTK_API char *mtk_value_to_json(mtk_ctx *ctx, const mtk_value *value, uint32_t flags);

/* The context's sticky error as one JSON document in its arena:
 * {"error":{"code":"shape_error","message":"..."}} (code is
 * mtk_status_name()).  With no error recorded the code is "ok".  NULL on
 * out of memory. */
MTK_API char *mtk_error_to_json(mtk_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
