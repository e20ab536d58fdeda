/* The trace record, shared by trace.c (recording), forward.c (module
 * calls) and summary.c (analysis).  Everything lives in the arena, so a
 * trace that is never freed goes with its context. */
#ifndef MTK_NN_TRACE_INTERNAL_H
#define MTK_NN_TRACE_INTERNAL_H

#include "mtk/nn.h"

struct mtk_trace {
    mtk_ctx *ctx;
    mtk_module *root;
    bool recording;
    mtk_trace_module *modules; /* named_modules(root), pre-order */
    int32_t nmodules;
    mtk_trace_op *ops;
    int32_t nops, ops_cap;
    int32_t *stack;            /* module indices of the calls running */
    int32_t depth, stack_cap;
    int64_t flops;
};

/* The trace recording in ctx, or NULL. */
mtk_trace *nn_active_trace(mtk_ctx *ctx);

/* Around one module call: enter returns a token for exit (-1: the module
 * is not part of the traced tree; its ops go to the enclosing module). */
int32_t nn_trace_enter(mtk_trace *trace, mtk_module *m, const mtk_module_io *io);
void nn_trace_exit(mtk_trace *trace, int32_t token, const mtk_module_io *io, bool ok);

#endif
