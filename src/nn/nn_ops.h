/* Calling ops of the table by name from layers, arguments set by their
 * signature names (PyTorch's), so a layer compiles before its op's typed
 * API exists and keeps working whatever order the signature lists
 * optional arguments in. */
#ifndef MTK_NN_OPS_H
#define MTK_NN_OPS_H

#include "mtk/op.h"

typedef struct nn_call {
    mtk_op_call call;
    const mtk_arg_spec *specs;
    int32_t nspecs;
    bool failed;
} nn_call;

/* Starts a call of op `name` with its defaults.  False (and
 * MTK_ERR_NOT_IMPLEMENTED naming the layer) when the op is not in the
 * table. */
bool nn_call_begin(nn_call *c, mtk_ctx *ctx, const char *name, const char *layer);
/* Whether the op has an argument named `arg` (signatures differ between
 * torch.nn.functional and aten: "training" / "train"). */
bool nn_call_has(const nn_call *c, const char *arg);
/* Sets argument `arg` (an error at run time if the op has no such argument). */
void nn_call_set(nn_call *c, const char *arg, mtk_value v);
void nn_call_tensor(nn_call *c, const char *arg, mtk_tensor *t);    /* NULL: None */
void nn_call_ints(nn_call *c, const char *arg, const int64_t *v, int32_t n);
/* Runs it; the single tensor result, or NULL with the error set. */
mtk_tensor *nn_call_run(nn_call *c);

/* Shorthand for the common case: op(input, <one named arg>). */
mtk_tensor *nn_unary_op(mtk_ctx *ctx, const char *op, const char *layer, mtk_tensor *input);

#endif
