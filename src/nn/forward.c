/* Calling a module: argument checks, the trace brackets, and the one- and
 * two-input shorthands. */
#include "nn/module_internal.h"
#include "nn/trace_internal.h"

#include <string.h>

bool mtk_module_call(mtk_module *m, mtk_module_io *io)
{
    if (!m || !io) return false;
    mtk_ctx *ctx = m->ctx;
    io->nout = 0;
    memset(io->out, 0, sizeof io->out);
    if (io->nin < 0 || io->nin > MTK_MODULE_MAX_IO)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: %d inputs (at most %d)", m->type->name,
                         (int)io->nin, MTK_MODULE_MAX_IO);
    for (int32_t i = 0; i < io->nin; i++)
        if (!io->in[i]) {
            /* a failed earlier call: its error is already set */
            if (mtk_ctx_status(ctx) == MTK_OK)
                mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s.forward: input %d is NULL", m->type->name,
                          (int)i);
            return false;
        }
    if (!m->type->forward)
        return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
                         "%s is a container with no forward: call the modules it holds", m->type->name);
    void *hook_user;
    mtk_module_hook hook = mtk_ctx_module_hook(ctx, &hook_user);
    if (hook && !hook(hook_user, m, io, false)) return false;
    mtk_trace *tr = nn_active_trace(ctx);
    int32_t token = tr ? nn_trace_enter(tr, m, io) : -1;
    bool ok = m->type->forward(m, io);
    if (hook) (void)hook(hook_user, m, io, true);
    if (ok && (io->nout < 1 || !io->out[0])) {
        ok = false;
        if (mtk_ctx_status(ctx) == MTK_OK)
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s.forward returned no output", m->type->name);
    }
    if (tr) nn_trace_exit(tr, token, io, ok);
    return ok;
}

mtk_tensor *mtk_module_forward(mtk_module *m, mtk_tensor *input)
{
    mtk_module_io io = { .in = { input }, .nin = 1 };
    return mtk_module_call(m, &io) ? io.out[0] : NULL;
}

mtk_tensor *mtk_module_forward2(mtk_module *m, mtk_tensor *a, mtk_tensor *b)
{
    mtk_module_io io = { .in = { a, b }, .nin = 2 };
    return mtk_module_call(m, &io) ? io.out[0] : NULL;
}
