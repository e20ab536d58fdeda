/*
 * The op table.  Every op is defined exactly once, as one row:
 *
 *   name       PyTorch's name ("add", "matmul", "linear")
 *   signature  PyTorch-style schema, the source of argument names, order,
 *              types and defaults:
 *                "add(Tensor input, Tensor|Scalar other, *, Scalar alpha=1) -> Tensor"
 *   meta       validates the arguments and describes every output (dtype,
 *              shape, strides, offset, device, which input it is a view of).
 *              It runs for every device: real and meta shapes cannot drift.
 *   cpu        fills the outputs the meta function described (cpu device).
 *   cost       FLOPs as torch.utils.flop_counter counts them, and the
 *              element-wise operation count, for summaries.
 *   saved      what torch 2.13's autograd keeps for backward (mtk/plan.h):
 *              inputs, outputs or new tensors (dropout's mask, sdpa's
 *              logsumexp).  A fused op that transformers computes as a
 *              composition (rms_norm, rope) reports what the composition
 *              keeps.  NULL: nothing.
 *   backward   what its backward allocates and its forward's workspace;
 *              NULL: the gradient of each input that requires grad.
 *
 * The dispatcher (mtk_op_run) calls meta, then on cpu allocates the
 * outputs (or shares the input's storage for views) and calls the kernel.
 *
 * Signature types: Tensor, Tensor?, Tensor[], Scalar, Scalar?, Tensor|Scalar,
 * int, int?, int[], int[]?, int[1], int[1]?, int..., float, float?, bool,
 * bool?, str, str?, ScalarType?, Device?, Any, Any?.  A `*` starts
 * keyword-only arguments.  As PyTorch's parser: an `int[]` is a list or
 * tuple, never a lone int (a bool counts as an int after its first item);
 * an `int...` is an int[] in var-args position (the last positional
 * parameter: zeros(int... size), view(Tensor input, int... size)) that
 * gathers the trailing positional ints (x.view(3, 4), zeros(3)); an
 * `int[1]` also takes a lone int anywhere (sum(x, 1)).  A type without '?'
 * refuses None even with a None default (the argument may only be left
 * out: eye(n, m=None)).
 */
#ifndef MTK_OP_H
#define MTK_OP_H

#include "mtk/core.h"
#include "mtk/plan.h"
#include "mtk/value.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MTK_MAX_OP_ARGS 16

/* The most tensors one op call may return (split, chunk, unbind,
 * tensor_split, ...): a call that would return more fails with
 * MTK_ERR_INVALID_ARGUMENT naming the op and this limit, before any
 * metadata is allocated (unbind(i8[1000000000]) would ask for gigabytes). */
#define MTK_MAX_OP_OUTPUTS 65536

typedef struct mtk_op_def mtk_op_def;
typedef struct mtk_op_call mtk_op_call;

/* FLOPs of one call, FlopCounterMode-compatible, and element-wise work. */
typedef struct mtk_op_cost {
    int64_t flops;       /* 2*M*N*K for a matmul, as FlopCounterMode   */
    int64_t elementwise; /* elements an element-wise op produced       */
} mtk_op_cost;

enum mtk_op_flags {
    MTK_OP_VIEW = 1u << 0,           /* outputs may alias an input's storage     */
    MTK_OP_DATA_DEPENDENT = 1u << 1, /* output shape depends on data: the cpu
                                        kernel makes its outputs; meta errors   */
    MTK_OP_CREATION = 1u << 2,       /* no tensor inputs: device from the
                                        `device` argument or the default scope  */
    MTK_OP_NO_KERNEL = 1u << 3,      /* meta does all the work on every device
                                        (to_empty, copy into meta, ...)         */
    MTK_OP_INPLACE = 1u << 4,        /* result is the first argument itself      */
    MTK_OP_ANY_DEVICES = 1u << 5     /* tensor arguments may be on different
                                        devices (copy_, to(other)): the op runs
                                        on its first tensor argument's device   */
};

typedef bool (*mtk_meta_fn)(mtk_op_call *call);
typedef bool (*mtk_kernel_fn)(mtk_op_call *call);
typedef mtk_op_cost (*mtk_cost_fn)(const mtk_op_call *call);

/* One parsed argument of a signature (filled at first use). */
typedef struct mtk_arg_spec {
    const char *name;
    const char *type;       /* "Tensor", "int[]", ... (without '?')   */
    bool optional;          /* the type ended in '?'                  */
    bool keyword_only;
    bool has_default;
    mtk_value default_value;/* static storage; lists not allowed      */
} mtk_arg_spec;

struct mtk_op_def {
    const char *name;
    const char *signature;
    mtk_meta_fn meta;
    mtk_kernel_fn cpu;       /* NULL: no cpu kernel (error on cpu)     */
    mtk_cost_fn cost;        /* NULL: zero cost                         */
    uint32_t flags;
    const void *info;        /* op-family data the meta/cpu fns read   */
    mtk_saved_fn saved;      /* NULL: saves nothing                     */
    mtk_backward_fn backward;/* NULL: a gradient per differentiable input */
};

/* The state of one op call, shared by the dispatcher and the op's
 * functions.  Arguments are bound in signature order with defaults
 * filled in. */
struct mtk_op_call {
    mtk_ctx *ctx;
    const mtk_op_def *op;
    mtk_value args[MTK_MAX_OP_ARGS];
    int32_t nargs;
    mtk_device device;        /* device the op runs on (from inputs)   */
    mtk_tensor **out;         /* outputs, set by mtk_call_set_outputs  */
    int8_t *out_view_of;      /* per output: arg index it aliases, -1  */
    int32_t nout;
    mtk_value result;         /* what the call returns                 */
    uint32_t keyword_args;    /* bit i: args[i] was given by keyword
                                 (mtk_op_call_by_name; 0 in typed calls),
                                 for ops whose PyTorch overloads tell
                                 keywords apart (arange(start=3))       */
    uint32_t given_args;      /* bit i: args[i] was given by the caller,
                                 by position or keyword (mtk_op_call_by_name;
                                 0 in typed calls), for ops whose PyTorch
                                 overloads tell an omitted argument from
                                 an explicit None (max(x) / max(x, None)) */
};

/* ---- for op implementations ---- */

/* Reserves `n` output slots (NULL tensors, not views).  False on OOM, or
 * with MTK_ERR_INVALID_ARGUMENT when n > MTK_MAX_OP_OUTPUTS. */
MTK_API bool mtk_call_set_outputs(mtk_op_call *call, int32_t n);

/* Puts `t` in output slot i; `view_of` is the arg index whose storage the
 * output shares on cpu, or -1 for fresh storage. */
MTK_API void mtk_call_output(mtk_op_call *call, int32_t i, mtk_tensor *t, int32_t view_of);

/* Sets an error naming the op: "<op>: <message>". Returns false. */
MTK_API bool mtk_call_error(mtk_op_call *call, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
            __attribute__((format(printf, 3, 4)))
#endif
            ;

/* ---- the table ---- */

/* Number of ops and the i-th row (0 <= i < count). */
MTK_API int32_t mtk_op_count(void);
MTK_API const mtk_op_def *mtk_op_at(int32_t i);

/* The op with this name, NULL when there is none.  Accepts the prefixes
 * "torch.", "torch.nn.functional." and "F.". */
MTK_API const mtk_op_def *mtk_op_find(const char *name);

/* Parsed signature of an op: argument specs in order.  Returns the count
 * (0 for none), or -1 if the op's signature is malformed (a bug). */
MTK_API int32_t mtk_op_args(const mtk_op_def *op, const mtk_arg_spec **specs_out);

/* ---- calling ---- */

/* Runs a call whose args are already bound (typed API path): meta, then
 * allocation and the kernel on cpu.  Returns false with the context's
 * error set.  A NULL tensor argument (a failed earlier op) makes it return
 * false at once without a new error. */
MTK_API bool mtk_op_run(mtk_op_call *call);

/* Starts a call of `op`: nargs from the signature, every argument its
 * default (None where it has none); the caller sets args.  Arguments past
 * nargs are left unset. */
MTK_API void mtk_op_call_init(mtk_op_call *call, mtk_ctx *ctx, const mtk_op_def *op);

/* Calls an op by name with Python-style positional and keyword arguments
 * (binding by signature, defaults, type checks), then runs it.  On
 * success *result holds a TENSOR, a TUPLE/LIST of tensors, or a number.
 * Errors: MTK_ERR_UNKNOWN_OP, MTK_ERR_INVALID_ARGUMENT for a binding
 * problem, or whatever the op sets.  */
MTK_API bool mtk_op_call_by_name(mtk_ctx *ctx, const char *name,
                                 const mtk_value *positional, int32_t npositional,
                                 const char *const *kw_names, const mtk_value *kw_values,
                                 int32_t nkw, mtk_value *result);

#ifdef __cplusplus
}
#endif
#endif /* MTK_OP_H */
