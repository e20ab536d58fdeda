/* Traversal of a module tree: named_modules, named_parameters,
 * named_buffers, parameter statistics, train/eval and requires_grad_. */
#include "nn/module_internal.h"
#include "nn/ptrset.h"
#include "nn/walk.h"

#include <stdio.h>
#include <string.h>

char *nn_join_name(mtk_ctx *ctx, const char *prefix, const char *name)
{
    if (!prefix || !*prefix) return mtk_ctx_strdup(ctx, name);
    size_t a = strlen(prefix), b = strlen(name);
    char *s = mtk_ctx_alloc(ctx, a + b + 2);
    if (!s) return NULL;
    memcpy(s, prefix, a);
    s[a] = '.';
    memcpy(s + a + 1, name, b + 1);
    return s;
}

/* ------------------------------------------------------------ modules */

typedef struct module_walk {
    mtk_ctx *ctx;
    ptrset seen;
    mtk_named_module *items;
    int32_t count, cap;
} module_walk;

static bool walk_modules(module_walk *w, mtk_module *m, const char *name, int32_t depth)
{
    int added = nn_ptrset_add(&w->seen, m, NULL);
    if (added < 0) return false;
    if (added == 0) return true; /* a shared module: listed once */
    if (!nn_slots_reserve(w->ctx, (void **)&w->items, &w->cap, w->count + 1, sizeof *w->items))
        return false;
    w->items[w->count++] = (mtk_named_module){ name, m, depth };
    for (int32_t i = 0; i < m->children.count; i++) {
        char *child = nn_join_name(w->ctx, name, m->children.items[i].name);
        if (!child || !walk_modules(w, m->children.items[i].module, child, depth + 1)) return false;
    }
    return true;
}

int32_t mtk_module_named_modules(mtk_module *m, mtk_named_module **out)
{
    *out = NULL;
    if (!m) return -1;
    module_walk w = { .ctx = m->ctx };
    nn_ptrset_init(&w.seen, m->ctx);
    bool ok = walk_modules(&w, m, "", 0);
    nn_ptrset_free(&w.seen);
    if (!ok) return -1;
    *out = w.items;
    return w.count;
}

/* ------------------------------------------------------------ tensors */

/* Each tensor of the tree once, in torch's order: modules pre-order, each
 * module's own tensors in registration order. */
static int32_t named_tensors(mtk_module *m, bool params, mtk_named_tensor **out)
{
    *out = NULL;
    mtk_named_module *mods;
    int32_t nmods = mtk_module_named_modules(m, &mods);
    if (nmods < 0) return -1;
    ptrset seen;
    nn_ptrset_init(&seen, m->ctx);
    mtk_named_tensor *items = NULL;
    int32_t count = 0, cap = 0;
    bool ok = true;
    for (int32_t i = 0; ok && i < nmods; i++) {
        mtk_module *mod = mods[i].module;
        int32_t n = params ? mod->params.count : mod->buffers.count;
        for (int32_t k = 0; ok && k < n; k++) {
            const tensor_slot *s = params ? &mod->params.items[k] : &mod->buffers.items[k];
            int added = nn_ptrset_add(&seen, s->tensor, NULL);
            if (added <= 0) {
                ok = added == 0;
                continue;
            }
            char *name = nn_join_name(m->ctx, mods[i].name, s->name);
            ok = name && nn_slots_reserve(m->ctx, (void **)&items, &cap, count + 1, sizeof *items);
            if (ok) items[count++] = (mtk_named_tensor){ name, s->tensor, mod, s->persistent };
        }
    }
    nn_ptrset_free(&seen);
    if (!ok) return -1;
    *out = items;
    return count;
}

int32_t mtk_module_named_parameters(mtk_module *m, mtk_named_tensor **out)
{
    return named_tensors(m, true, out);
}

int32_t mtk_module_named_buffers(mtk_module *m, mtk_named_tensor **out)
{
    return named_tensors(m, false, out);
}

/* ---------------------------------------------------------------- stats */

bool nn_collect_stats(mtk_module *m, ptrset *seen, mtk_param_stats *st)
{
    int added = nn_ptrset_add(seen, m, NULL);
    if (added <= 0) return added == 0;
    bool lazy_module = false;
    for (int32_t i = 0; i < m->params.count + m->buffers.count; i++) {
        bool is_param = i < m->params.count;
        mtk_tensor *t = is_param ? m->params.items[i].tensor : m->buffers.items[i - m->params.count].tensor;
        int fresh = nn_ptrset_add(seen, t, NULL);
        if (fresh < 0) return false;
        if (t->flags & MTK_TENSOR_LAZY) lazy_module = true;
        if (!fresh) continue;
        if (!is_param) {
            if (!(t->flags & MTK_TENSOR_LAZY)) {
                st->buffer_elements += mtk_tensor_numel(t);
                st->buffer_bytes += (int64_t)mtk_tensor_nbytes(t);
            }
            continue;
        }
        st->tensors++;
        if (t->flags & MTK_TENSOR_LAZY) {
            st->uninitialized++;
            continue;
        }
        /* the values it stands for: packed 4-bit pairs count two, block scales none */
        int64_t n = t->flags & MTK_TENSOR_QUANT_SCALES ? 0
                    : mtk_tensor_numel(t) * (t->flags & MTK_TENSOR_PACKED_PAIRS ? 2 : 1);
        st->total += n;
        if (t->flags & MTK_TENSOR_REQUIRES_GRAD) st->trainable += n;
        else st->non_trainable += n;
        st->bytes += (int64_t)mtk_tensor_nbytes(t);
        st->bytes_by_dtype[t->dtype] += (int64_t)mtk_tensor_nbytes(t);
        st->count_by_dtype[t->dtype] += n;
    }
    if (lazy_module) st->lazy_modules++;
    for (int32_t i = 0; i < m->children.count; i++)
        if (!nn_collect_stats(m->children.items[i].module, seen, st)) return false;
    return true;
}

bool mtk_module_param_stats(mtk_module *m, mtk_param_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!m) return false;
    ptrset seen;
    nn_ptrset_init(&seen, m->ctx);
    bool ok = nn_collect_stats(m, &seen, out);
    nn_ptrset_free(&seen);
    return ok;
}

int64_t mtk_module_num_parameters(mtk_module *m, bool trainable_only)
{
    mtk_param_stats st;
    if (!mtk_module_param_stats(m, &st)) return -1;
    if (st.uninitialized) {
        mtk_named_tensor *params;
        int32_t n = mtk_module_named_parameters(m, &params);
        const char *first = "?";
        for (int32_t i = 0; i < n; i++)
            if (params[i].tensor->flags & MTK_TENSOR_LAZY) {
                first = params[i].name;
                break;
            }
        mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT,
                  "cannot count the parameters: %d parameter%s uninitialized (lazy, first: '%s', in "
                  "%d module%s) and %s no shape yet. Run a forward with an example input first "
                  "(mtk_module_forward on a meta tensor costs no memory; mtk summary --input SHAPE)",
                  (int)st.uninitialized, st.uninitialized == 1 ? " is" : "s are", first,
                  (int)st.lazy_modules, st.lazy_modules == 1 ? "" : "s",
                  st.uninitialized == 1 ? "has" : "have");
        return -1;
    }
    return trainable_only ? st.trainable : st.total;
}

/* ---------------------------------------------------------------- modes */

static void set_training(mtk_module *m, bool mode, int32_t depth)
{
    if (depth > 1000) return; /* a cycle would be a bug of the caller */
    m->training = mode;
    for (int32_t i = 0; i < m->children.count; i++) set_training(m->children.items[i].module, mode, depth + 1);
}

void mtk_module_train(mtk_module *m, bool mode)
{
    if (m) set_training(m, mode, 0);
}

bool mtk_module_is_training(const mtk_module *m) { return m && m->training; }

static void set_requires_grad(mtk_module *m, bool flag, int32_t depth)
{
    if (depth > 1000) return;
    for (int32_t i = 0; i < m->params.count; i++) {
        mtk_tensor *t = m->params.items[i].tensor;
        if (flag) t->flags |= MTK_TENSOR_REQUIRES_GRAD;
        else t->flags &= ~(uint32_t)MTK_TENSOR_REQUIRES_GRAD;
    }
    for (int32_t i = 0; i < m->children.count; i++)
        set_requires_grad(m->children.items[i].module, flag, depth + 1);
}

void mtk_module_requires_grad_(mtk_module *m, bool requires_grad)
{
    if (m) set_requires_grad(m, requires_grad, 0);
}
