/* Calls of ops by name for the layers. */
#include "nn/nn_ops.h"

#include <string.h>

bool nn_call_begin(nn_call *c, mtk_ctx *ctx, const char *name, const char *layer)
{
    memset(c, 0, sizeof *c);
    const mtk_op_def *op = mtk_op_find(name);
    if (!op) {
        c->failed = true;
        return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
                         "%s.forward needs the op '%s', which this build of mtk does not have yet", layer,
                         name);
    }
    mtk_op_call_init(&c->call, ctx, op);
    c->nspecs = mtk_op_args(op, &c->specs);
    if (c->nspecs < 0) c->failed = true;
    return !c->failed;
}

bool nn_call_has(const nn_call *c, const char *arg)
{
    for (int32_t i = 0; i < c->nspecs; i++)
        if (strcmp(c->specs[i].name, arg) == 0) return true;
    return false;
}

void nn_call_set(nn_call *c, const char *arg, mtk_value v)
{
    if (c->failed) return;
    for (int32_t i = 0; i < c->nspecs; i++)
        if (strcmp(c->specs[i].name, arg) == 0) {
            c->call.args[i] = v;
            return;
        }
    c->failed = true;
    mtk_error(c->call.ctx, MTK_ERR_NOT_IMPLEMENTED, "%s has no argument '%s' (signature: %s)",
              c->call.op->name, arg, c->call.op->signature);
}

void nn_call_tensor(nn_call *c, const char *arg, mtk_tensor *t)
{
    nn_call_set(c, arg, t ? mtk_value_tensor(t) : mtk_value_none());
}

void nn_call_ints(nn_call *c, const char *arg, const int64_t *v, int32_t n)
{
    if (c->failed) return;
    mtk_value list = mtk_value_int_list(c->call.ctx, v, n);
    if (list.kind == MTK_VALUE_NONE) {
        c->failed = true;
        return;
    }
    nn_call_set(c, arg, list);
}

mtk_tensor *nn_call_run(nn_call *c)
{
    if (c->failed) return NULL;
    if (!mtk_op_run(&c->call)) return NULL;
    if (c->call.result.kind == MTK_VALUE_TENSOR) return c->call.result.as.tensor;
    if ((c->call.result.kind == MTK_VALUE_TUPLE || c->call.result.kind == MTK_VALUE_LIST) &&
        c->call.result.as.list.count > 0 && c->call.result.as.list.items[0].kind == MTK_VALUE_TENSOR)
        return c->call.result.as.list.items[0].as.tensor;
    mtk_error(c->call.ctx, MTK_ERR_INVALID_ARGUMENT, "%s returned no tensor", c->call.op->name);
    return NULL;
}

mtk_tensor *nn_unary_op(mtk_ctx *ctx, const char *op, const char *layer, mtk_tensor *input)
{
    if (!input) return NULL;
    nn_call c;
    if (!nn_call_begin(&c, ctx, op, layer)) return NULL;
    c.call.args[0] = mtk_value_tensor(input);
    return nn_call_run(&c);
}
