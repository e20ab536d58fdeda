/* The op table's rows come from the per-family lists (list_*.h).  Each
 * list row is the op's ID and its columns (mtk_op_def's fields) as
 * designated initializers:
 *   MTK_OP(ID, .name = "name", .signature = "sig", .meta = meta, .cpu = cpu,
 *          .cost = cost, .flags = flags, .info = info)
 * A row names only the columns it has; the others are zero/NULL, so a new
 * column needs no edit of the rows that do not use it.  ID becomes
 * OPID_<ID>; op families call their own rows through mtk_op_by_id().
 * Adding an op touches its family's list and .c only. */
#ifndef MTK_OPS_REGISTRY_H
#define MTK_OPS_REGISTRY_H

#include "mtk/op.h"
#include "ops/families.h"

typedef enum mtk_op_id {
#define MTK_OP(ID, ...) OPID_##ID,
#include "ops/list_all.h"
#undef MTK_OP
    OPID_COUNT
} mtk_op_id;

/* A signature's argument types, as the binder checks them. */
typedef enum mtk_arg_type {
    MTK_ARG_UNKNOWN = 0,
    MTK_ARG_TENSOR,
    MTK_ARG_TENSOR_OR_SCALAR,
    MTK_ARG_SCALAR,
    MTK_ARG_INT,
    MTK_ARG_INT_LIST,    /* int[] (a list) and int... (var-args)        */
    MTK_ARG_INT_OR_LIST, /* int[1]: a list or a lone int, anywhere      */
    MTK_ARG_FLOAT,
    MTK_ARG_BOOL,
    MTK_ARG_STR,
    MTK_ARG_DTYPE,
    MTK_ARG_DEVICE,
    MTK_ARG_ANY,
    MTK_ARG_TENSOR_LIST
} mtk_arg_type;

/* An op's signature as the dispatcher reads it, parsed once for all ops
 * (thread-safe) and never freed. */
typedef struct mtk_op_sig {
    const mtk_arg_spec *specs;
    int32_t count;                      /* arguments; -1: malformed      */
    int32_t npositional;                /* arguments before the '*'      */
    int32_t varargs;                    /* the int[] that gathers
                                           trailing ints (view(x, 2, 3)),
                                           or -1                         */
    bool returns_sequence;              /* "-> Tensor[]"                 */
    uint8_t types[MTK_MAX_OP_ARGS];     /* mtk_arg_type of each argument */
    mtk_value defaults[MTK_MAX_OP_ARGS];/* default, or None              */
} mtk_op_sig;

/* The parsed signature of a row of the table; NULL for anything else or
 * when memory ran out at the first use. */
const mtk_op_sig *mtk_op_sig_of(const mtk_op_def *op);

/* The row of an op id (never NULL for a valid id). */
const mtk_op_def *mtk_op_by_id(mtk_op_id id);

/* Runs a typed call of `id` whose args the caller filled (nargs set by
 * mtk_op_call_init from the signature); returns the single tensor result
 * or NULL with the context's error set. */
mtk_tensor *mtk_op_run_tensor(mtk_op_call *call);

/* Runs a typed call whose result is a tuple of tensors (split, unbind,
 * tensor_split, ...); copies up to `cap` of them to out and returns how
 * many there are, or -1 with the context's error set. */
int32_t mtk_op_run_tensors(mtk_op_call *call, mtk_tensor **out, int32_t cap);

#endif
