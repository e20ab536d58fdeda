/* Tracing: the op observer that records every op with the module path it
 * ran in, and the module-call record.  The dispatcher calls on_op after
 * each successful op (mtk_ctx_set_op_hook); mtk_module_call brackets each
 * module call with nn_trace_enter / nn_trace_exit. */
#include "nn/module_internal.h"
#include "nn/trace_internal.h"
#include "mtk/op.h"

#include <stdint.h>
#include <string.h>

/* Copies n tensor pointers into the arena (NULL for n == 0). */
static mtk_tensor *const *copy_tensors(mtk_ctx *ctx, mtk_tensor *const *src, int32_t n)
{
    if (n <= 0) return NULL;
    mtk_tensor **dst = mtk_ctx_alloc(ctx, (size_t)n * sizeof *dst);
    if (dst) memcpy(dst, src, (size_t)n * sizeof *dst);
    return dst;
}

/* A deep copy of v into the arena: lists and strings copied, tensors by
 * pointer.  False on out of memory. */
static bool copy_value(mtk_ctx *ctx, const mtk_value *v, mtk_value *out)
{
    *out = *v;
    if (v->kind == MTK_VALUE_STRING && v->as.s) {
        size_t n = strlen(v->as.s) + 1;
        char *s = mtk_ctx_alloc(ctx, n);
        if (!s) return false;
        memcpy(s, v->as.s, n);
        out->as.s = s;
    } else if (v->kind == MTK_VALUE_LIST || v->kind == MTK_VALUE_TUPLE) {
        int32_t n = v->as.list.count;
        out->as.list.items = NULL;
        if (n <= 0) return true;
        mtk_value *items = mtk_ctx_alloc(ctx, (size_t)n * sizeof *items);
        if (!items) return false;
        for (int32_t i = 0; i < n; i++)
            if (!copy_value(ctx, &v->as.list.items[i], &items[i])) return false;
        out->as.list.items = items;
    }
    return true;
}

/* a + b for FLOP counts, INT64_MAX once they pass it (no wrap) */
static int64_t saturating_add(int64_t a, int64_t b)
{
    int64_t sum;
    return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

static void on_op(void *user, const struct mtk_op_call *call)
{
    mtk_trace *tr = user;
    if (!tr->recording) return;
    if (!nn_slots_reserve(tr->ctx, (void **)&tr->ops, &tr->ops_cap, tr->nops + 1, sizeof *tr->ops)) return;
    /* tensor arguments, lists of tensors flattened */
    mtk_tensor *inputs[2 * MTK_MAX_OP_ARGS];
    int32_t nin = 0;
    for (int32_t i = 0; i < call->nargs; i++) {
        const mtk_value *v = &call->args[i];
        if (v->kind == MTK_VALUE_TENSOR && v->as.tensor) {
            if (nin < (int32_t)(sizeof inputs / sizeof inputs[0])) inputs[nin++] = v->as.tensor;
        } else if (v->kind == MTK_VALUE_LIST || v->kind == MTK_VALUE_TUPLE) {
            for (int32_t k = 0; k < v->as.list.count; k++)
                if (v->as.list.items[k].kind == MTK_VALUE_TENSOR && v->as.list.items[k].as.tensor &&
                    nin < (int32_t)(sizeof inputs / sizeof inputs[0]))
                    inputs[nin++] = v->as.list.items[k].as.tensor;
        }
    }
    int64_t flops = call->op->cost ? call->op->cost(call).flops : 0;
    int32_t module = tr->depth > 0 ? tr->stack[tr->depth - 1] : -1;
    mtk_trace_op *op = &tr->ops[tr->nops++];
    op->op = call->op->name;
    op->module_index = module;
    op->module = module >= 0 ? tr->modules[module].name : "";
    op->inputs = copy_tensors(tr->ctx, inputs, nin);
    op->ninputs = op->inputs ? nin : 0;
    op->outputs = copy_tensors(tr->ctx, call->out, call->nout);
    op->noutputs = op->outputs ? call->nout : 0;
    op->flops = flops;
    op->def = call->op;
    op->args = NULL;
    op->out_view_of = NULL;
    mtk_value *args = call->nargs > 0 ? mtk_ctx_alloc(tr->ctx, (size_t)call->nargs * sizeof *args) : NULL;
    op->nargs = 0;
    if (args) {
        int32_t n = 0;
        while (n < call->nargs && copy_value(tr->ctx, &call->args[n], &args[n])) n++;
        op->args = args;
        op->nargs = n;
    }
    int8_t *views = call->nout > 0 ? mtk_ctx_alloc(tr->ctx, (size_t)call->nout) : NULL;
    if (views) {
        for (int32_t i = 0; i < call->nout; i++) views[i] = call->out_view_of ? call->out_view_of[i] : -1;
        op->out_view_of = views;
    }
    tr->flops = saturating_add(tr->flops, flops);
    /* inclusive: every module on the call stack ran this op */
    for (int32_t d = 0; d < tr->depth; d++) {
        tr->modules[tr->stack[d]].flops = saturating_add(tr->modules[tr->stack[d]].flops, flops);
        tr->modules[tr->stack[d]].ops++;
    }
}

mtk_trace *nn_active_trace(mtk_ctx *ctx)
{
    void *user;
    return mtk_ctx_op_hook(ctx, &user) == on_op ? user : NULL;
}

mtk_trace *mtk_trace_begin(mtk_module *root)
{
    if (!root) return NULL;
    mtk_ctx *ctx = mtk_module_ctx(root);
    if (mtk_ctx_op_hook(ctx, NULL)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "trace_begin: a trace (or another op observer) is already running in this "
                  "context; end it first");
        return NULL;
    }
    mtk_trace *tr = mtk_ctx_alloc(ctx, sizeof *tr);
    if (!tr) return NULL;
    tr->ctx = ctx;
    tr->root = root;
    mtk_named_module *mods;
    int32_t n = mtk_module_named_modules(root, &mods);
    if (n < 0) return NULL;
    tr->modules = mtk_ctx_alloc(ctx, (size_t)(n ? n : 1) * sizeof *tr->modules);
    if (!tr->modules) return NULL;
    for (int32_t i = 0; i < n; i++) {
        tr->modules[i] = (mtk_trace_module){ .name = mods[i].name, .module = mods[i].module,
                                             .depth = mods[i].depth };
        mods[i].module->scratch = i + 1; /* the module's index, for enter */
    }
    tr->nmodules = n;
    tr->recording = true;
    mtk_ctx_set_op_hook(ctx, on_op, tr);
    return tr;
}

void mtk_trace_end(mtk_trace *tr)
{
    if (!tr || !tr->recording) return;
    tr->recording = false;
    for (int32_t i = 0; i < tr->nmodules; i++) tr->modules[i].module->scratch = 0;
    if (nn_active_trace(tr->ctx) == tr) mtk_ctx_set_op_hook(tr->ctx, NULL, NULL);
}

void mtk_trace_free(mtk_trace *tr) { mtk_trace_end(tr); /* the rest is arena memory */ }

int32_t nn_trace_enter(mtk_trace *tr, mtk_module *m, const mtk_module_io *io)
{
    int32_t index = m->scratch - 1;
    if (!tr->recording || index < 0 || index >= tr->nmodules || tr->modules[index].module != m) return -1;
    if (!nn_slots_reserve(tr->ctx, (void **)&tr->stack, &tr->stack_cap, tr->depth + 1, sizeof *tr->stack))
        return -1;
    tr->stack[tr->depth++] = index;
    mtk_trace_module *rec = &tr->modules[index];
    if (rec->calls == 0) {
        rec->inputs = copy_tensors(tr->ctx, io->in, io->nin);
        rec->ninputs = rec->inputs ? io->nin : 0;
    }
    return index;
}

void nn_trace_exit(mtk_trace *tr, int32_t token, const mtk_module_io *io, bool ok)
{
    if (token < 0) return;
    if (tr->depth > 0) tr->depth--;
    mtk_trace_module *rec = &tr->modules[token];
    if (ok && rec->calls == 0) {
        rec->outputs = copy_tensors(tr->ctx, io->out, io->nout);
        rec->noutputs = rec->outputs ? io->nout : 0;
    }
    if (ok) rec->calls++;
}

int32_t mtk_trace_op_count(const mtk_trace *tr) { return tr ? tr->nops : 0; }
const mtk_trace_op *mtk_trace_op_at(const mtk_trace *tr, int32_t i)
{
    return tr && i >= 0 && i < tr->nops ? &tr->ops[i] : NULL;
}
int32_t mtk_trace_module_count(const mtk_trace *tr) { return tr ? tr->nmodules : 0; }
const mtk_trace_module *mtk_trace_module_at(const mtk_trace *tr, int32_t i)
{
    return tr && i >= 0 && i < tr->nmodules ? &tr->modules[i] : NULL;
}
int64_t mtk_trace_flops(const mtk_trace *tr) { return tr ? tr->flops : 0; }
