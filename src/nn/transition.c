/* Transitions of a whole tree: to(device), to(dtype), to_empty,
 * materialize, reset_parameters; templates, meta copies and meta
 * factories.  Each tensor is rewritten in place (nn_tensor_assign), once,
 * so tied parameters stay tied. */
#include "nn/module_internal.h"
#include "nn/ptrset.h"
#include "mtk/ops/convert.h"

#include <string.h>

/* ------------------------------------------------------ gather tensors */

typedef struct tensor_list {
    mtk_tensor **items;
    int32_t count, cap;
} tensor_list;

static bool gather(mtk_module *m, ptrset *seen, tensor_list *out)
{
    int added = nn_ptrset_add(seen, m, NULL);
    if (added <= 0) return added == 0;
    for (int32_t i = 0; i < m->params.count + m->buffers.count; i++) {
        mtk_tensor *t = i < m->params.count ? m->params.items[i].tensor
                                            : m->buffers.items[i - m->params.count].tensor;
        int fresh = nn_ptrset_add(seen, t, NULL);
        if (fresh < 0) return false;
        if (!fresh) continue;
        if (!nn_slots_reserve(m->ctx, (void **)&out->items, &out->cap, out->count + 1, sizeof *out->items))
            return false;
        out->items[out->count++] = t;
    }
    for (int32_t i = 0; i < m->children.count; i++)
        if (!gather(m->children.items[i].module, seen, out)) return false;
    return true;
}

/* Every tensor of the tree once (arena array). */
static bool all_tensors(mtk_module *m, tensor_list *out)
{
    memset(out, 0, sizeof *out);
    ptrset seen;
    nn_ptrset_init(&seen, m->ctx);
    bool ok = gather(m, &seen, out);
    nn_ptrset_free(&seen);
    return ok;
}

static void set_init_mode(mtk_module *m, mtk_init_mode mode, int32_t depth)
{
    if (depth > 1000) return;
    m->init_mode = mode;
    for (int32_t i = 0; i < m->children.count; i++) set_init_mode(m->children.items[i].module, mode, depth + 1);
}

static bool check_device(mtk_module *m, const char *what, mtk_device device)
{
    if (device == MTK_DEVICE_CPU || device == MTK_DEVICE_META) return true;
    char d[32];
    return mtk_error(m->ctx, MTK_ERR_DEVICE, "%s: device '%s' is not available: this build of mtk runs "
                     "on cpu and meta", what, mtk_device_str(device, d, sizeof d));
}

/* The full name of tensor t in m's tree, for messages ("?" if none). */
static const char *name_of(mtk_module *m, const mtk_tensor *t)
{
    mtk_named_tensor *list;
    for (int pass = 0; pass < 2; pass++) {
        int32_t n = pass == 0 ? mtk_module_named_parameters(m, &list) : mtk_module_named_buffers(m, &list);
        for (int32_t i = 0; i < n; i++)
            if (list[i].tensor == t) return list[i].name;
    }
    return "?";
}

/* ------------------------------------------------------------ to(device) */

bool mtk_module_to_device(mtk_module *m, mtk_device device)
{
    if (!m) return false;
    if (!check_device(m, "Module.to", device)) return false;
    tensor_list ts;
    if (!all_tensors(m, &ts)) return false;
    /* refuse before changing anything */
    for (int32_t i = 0; i < ts.count; i++) {
        const mtk_tensor *t = ts.items[i];
        if (device != MTK_DEVICE_META && t->device == MTK_DEVICE_META && !(t->flags & MTK_TENSOR_LAZY))
            return mtk_error(m->ctx, MTK_ERR_META_NO_DATA,
                             "Module.to: Cannot copy out of meta tensor; no data! ('%s' is on meta.) "
                             "Please use to_empty() instead of to() when moving a module from meta to a "
                             "different device: mtk_module_to_empty(module, device) gives uninitialized "
                             "memory, mtk_module_materialize(module, device, seed) initializes it, or load "
                             "a state dict into the meta module",
                             name_of(m, t));
    }
    for (int32_t i = 0; i < ts.count; i++) {
        mtk_tensor *t = ts.items[i];
        if (t->device == device) continue;
        if (t->flags & MTK_TENSOR_LAZY) {
            t->device = device;
            continue;
        }
        /* cpu -> meta: the same metadata without data */
        mtk_tensor *moved = mtk_to_empty(m->ctx, t, device);
        if (!moved || !nn_tensor_assign(t, moved)) return false;
    }
    if (device == MTK_DEVICE_META) set_init_mode(m, MTK_INIT_META, 0);
    return true;
}

/* ------------------------------------------------------------- to(dtype) */

bool mtk_module_to_dtype(mtk_module *m, mtk_dtype dtype)
{
    if (!m) return false;
    if (!mtk_dtype_is_floating(dtype)) /* float8 included, as torch.Tensor.is_floating_point says */
        return mtk_error(m->ctx, MTK_ERR_DTYPE,
                         "Module.to only accepts floating point dtypes, but got desired dtype=%s",
                         mtk_dtype_name(dtype));
    tensor_list ts;
    if (!all_tensors(m, &ts)) return false;
    for (int32_t i = 0; i < ts.count; i++) {
        mtk_tensor *t = ts.items[i];
        if (!mtk_dtype_is_floating(t->dtype) || t->dtype == dtype) continue;
        if (t->flags & MTK_TENSOR_LAZY) {
            t->dtype = dtype;
            continue;
        }
        mtk_tensor *converted = mtk_to_dtype(m->ctx, t, dtype);
        if (!converted || !nn_tensor_assign(t, converted)) return false;
    }
    return true;
}

/* ------------------------------------------------------------- to_empty */

bool mtk_module_to_empty(mtk_module *m, mtk_device device) { return mtk_module_to_empty_except(m, device, NULL, 0); }

bool mtk_module_to_empty_except(mtk_module *m, mtk_device device, mtk_tensor *const *keep, int32_t nkeep)
{
    if (!m) return false;
    if (!check_device(m, "Module.to_empty", device)) return false;
    if (nkeep < 0 || (nkeep > 0 && !keep))
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "Module.to_empty: no tensors to keep given");
    tensor_list ts;
    if (!all_tensors(m, &ts)) return false;
    ptrset kept;
    nn_ptrset_init(&kept, m->ctx);
    for (int32_t i = 0; i < nkeep; i++)
        if (nn_ptrset_add(&kept, keep[i], NULL) < 0) {
            nn_ptrset_free(&kept);
            return false;
        }
    for (int32_t i = 0; i < ts.count; i++) {
        mtk_tensor *t = ts.items[i];
        if (nkeep > 0 && nn_ptrset_has(&kept, t)) continue;
        if (t->flags & MTK_TENSOR_LAZY) {
            t->device = device;
            continue;
        }
        mtk_tensor *fresh = mtk_to_empty(m->ctx, t, device);
        if (!fresh || !nn_tensor_assign(t, fresh)) {
            nn_ptrset_free(&kept);
            return false;
        }
    }
    nn_ptrset_free(&kept);
    set_init_mode(m, device == MTK_DEVICE_META ? MTK_INIT_META : MTK_INIT_EMPTY, 0);
    return true;
}

bool mtk_module_assign_tensor(mtk_tensor *t, const mtk_tensor *src)
{
    if (!t || !src) return false;
    return nn_tensor_assign(t, src);
}

/* ----------------------------------------------------------- materialize */

static bool reset_unique(mtk_module *m, mtk_rng *rng, ptrset *seen)
{
    int added = nn_ptrset_add(seen, m, NULL);
    if (added <= 0) return added == 0;
    for (int32_t i = 0; i < m->children.count; i++)
        if (!reset_unique(m->children.items[i].module, rng, seen)) return false;
    /* children first: a parent's overrides (MultiheadAttention zeroing
     * out_proj.bias) win, as at construction */
    return nn_reset_own(m, rng);
}

bool nn_reset_tree(mtk_module *m, mtk_rng *rng)
{
    ptrset seen;
    nn_ptrset_init(&seen, m->ctx);
    bool ok = reset_unique(m, rng, &seen);
    nn_ptrset_free(&seen);
    return ok;
}

bool mtk_module_reset_parameters(mtk_module *m, uint64_t seed)
{
    if (!m) return false;
    mtk_rng rng;
    mtk_rng_seed(&rng, seed);
    return nn_reset_tree(m, &rng);
}

bool mtk_module_materialize(mtk_module *m, mtk_device device, uint64_t seed)
{
    if (!m) return false;
    if (!mtk_module_to_empty(m, device)) return false;
    if (device != MTK_DEVICE_META) set_init_mode(m, MTK_INIT_INIT, 0);
    return mtk_module_reset_parameters(m, seed);
}

/* ------------------------------------------------------------- templates */

bool mtk_module_set_template(mtk_module *m, const char *name, mtk_module *tmpl)
{
    if (!m || !tmpl) return false;
    if (!name || !*name)
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "a template needs a name");
    for (int32_t i = 0; i < m->templates.count; i++)
        if (strcmp(m->templates.items[i].name, name) == 0) {
            m->templates.items[i].module = tmpl;
            return true;
        }
    if (!nn_slots_reserve(m->ctx, (void **)&m->templates.items, &m->templates.cap, m->templates.count + 1,
                          sizeof *m->templates.items))
        return false;
    const char *copy = mtk_ctx_strdup(m->ctx, name);
    if (!copy) return false;
    m->templates.items[m->templates.count++] = (module_slot){ copy, tmpl };
    return true;
}

mtk_module *mtk_module_template(const mtk_module *m, const char *name)
{
    if (!m || !name) return NULL;
    for (int32_t i = 0; i < m->templates.count; i++)
        if (strcmp(m->templates.items[i].name, name) == 0) return m->templates.items[i].module;
    return NULL;
}

/* ------------------------------------------------------------ meta copy */

typedef struct copy_maps {
    ptrset modules; /* original -> copy */
    ptrset tensors;
} copy_maps;

static mtk_tensor *copy_tensor(mtk_ctx *ctx, copy_maps *maps, mtk_tensor *t)
{
    mtk_tensor *done = nn_ptrset_get(&maps->tensors, t);
    if (done) return done;
    mtk_tensor *c = mtk_tensor_new(ctx, t->dtype, t->shape, t->ndim, t->stride, MTK_DEVICE_META);
    if (!c) return NULL;
    c->storage_offset = t->storage_offset;
    c->flags = t->flags;
    return nn_ptrset_add(&maps->tensors, t, c) < 0 ? NULL : c;
}

static bool copy_slots(mtk_ctx *ctx, copy_maps *maps, tensor_slot **dst, int32_t *cap,
                       const tensor_slot *src, int32_t count)
{
    if (!count) return true;
    *dst = mtk_ctx_alloc(ctx, (size_t)count * sizeof **dst);
    if (!*dst) return false;
    *cap = count;
    for (int32_t i = 0; i < count; i++) {
        (*dst)[i] = src[i];
        (*dst)[i].tensor = copy_tensor(ctx, maps, src[i].tensor);
        if (!(*dst)[i].tensor) return false;
    }
    return true;
}

static mtk_module *copy_module(copy_maps *maps, mtk_module *m, int32_t depth)
{
    mtk_module *done = nn_ptrset_get(&maps->modules, m);
    if (done) return done; /* shared stays shared */
    mtk_ctx *ctx = m->ctx;
    if (depth > 1000) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "copy_meta: the module tree is too deep (a cycle?)");
        return NULL;
    }
    mtk_module *c = mtk_module_new(ctx, m->type, m->config_size);
    if (!c) return NULL;
    if (m->config_size) memcpy(c->config, m->config, m->config_size);
    c->training = m->training;
    c->frameless = m->frameless;
    c->init_mode = MTK_INIT_META;
    if (nn_ptrset_add(&maps->modules, m, c) < 0) return NULL;
    if (!copy_slots(ctx, maps, &c->params.items, &c->params.cap, m->params.items, m->params.count) ||
        !copy_slots(ctx, maps, &c->buffers.items, &c->buffers.cap, m->buffers.items, m->buffers.count))
        return NULL;
    c->params.count = m->params.count;
    c->buffers.count = m->buffers.count;
    if (m->children.count) {
        c->children.items = mtk_ctx_alloc(ctx, (size_t)m->children.count * sizeof *c->children.items);
        if (!c->children.items) return NULL;
        c->children.cap = m->children.count;
        for (int32_t i = 0; i < m->children.count; i++) {
            mtk_module *child = copy_module(maps, m->children.items[i].module, depth + 1);
            if (!child) return NULL;
            c->children.items[i] = (module_slot){ m->children.items[i].name, child };
        }
        c->children.count = m->children.count;
    }
    /* templates are shared: they are read-only patterns */
    if (m->templates.count) {
        c->templates.items = mtk_ctx_alloc(ctx, (size_t)m->templates.count * sizeof *c->templates.items);
        if (!c->templates.items) return NULL;
        memcpy(c->templates.items, m->templates.items, (size_t)m->templates.count * sizeof *c->templates.items);
        c->templates.count = c->templates.cap = m->templates.count;
    }
    return c;
}

mtk_module *mtk_module_copy_meta(mtk_module *m)
{
    if (!m) return NULL;
    copy_maps maps;
    nn_ptrset_init(&maps.modules, m->ctx);
    nn_ptrset_init(&maps.tensors, m->ctx);
    mtk_module *c = copy_module(&maps, m, 0);
    nn_ptrset_free(&maps.modules);
    nn_ptrset_free(&maps.tensors);
    return c;
}

mtk_module *mtk_module_build_meta(mtk_ctx *ctx, mtk_module_builder build, const void *config)
{
    if (!build) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "build_meta: no builder");
        return NULL;
    }
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META)) return NULL;
    if (!mtk_ctx_push_init_mode(ctx, MTK_INIT_META)) {
        mtk_ctx_pop_device(ctx);
        return NULL;
    }
    mtk_module *m = build(ctx, config);
    mtk_ctx_pop_init_mode(ctx);
    mtk_ctx_pop_device(ctx);
    if (!m && mtk_ctx_status(ctx) == MTK_OK)
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "build_meta: the builder returned no module");
    return m;
}
