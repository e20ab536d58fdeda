/* Modules: creation, registration of children, parameters and buffers,
 * lazy tensors, and lookup by dotted name. */
#include "nn/module_internal.h"
#include "mtk/ops.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- creation */

mtk_module *mtk_module_new(mtk_ctx *ctx, const mtk_module_type *type, size_t config_size)
{
    if (!type || !type->name) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "mtk_module_new: a module type needs a name");
        return NULL;
    }
    mtk_module *m = mtk_ctx_alloc(ctx, sizeof *m);
    if (!m) return NULL;
    m->ctx = ctx;
    m->type = type;
    m->training = true;
    m->init_mode = mtk_ctx_init_mode(ctx);
    if (config_size) {
        m->config = mtk_ctx_alloc(ctx, config_size);
        if (!m->config) return NULL;
        m->config_size = config_size;
    }
    return m;
}

mtk_module *mtk_module_new_like(mtk_module *m)
{
    if (!m) return NULL;
    mtk_module *c = mtk_module_new(m->ctx, m->type, m->config_size);
    if (c && m->config_size) memcpy(c->config, m->config, m->config_size);
    if (c) {
        c->training = m->training;
        c->frameless = m->frameless;
    }
    return c;
}

mtk_ctx *mtk_module_ctx(const mtk_module *m) { return m ? m->ctx : NULL; }
const mtk_module_type *mtk_module_type_of(const mtk_module *m) { return m ? m->type : NULL; }
const char *mtk_module_type_name(const mtk_module *m) { return m ? m->type->name : "(null)"; }
void *mtk_module_config(const mtk_module *m) { return m ? m->config : NULL; }
void mtk_module_set_type(mtk_module *m, const mtk_module_type *type)
{
    if (m && type) m->type = type;
}
mtk_init_mode mtk_module_init_mode(const mtk_module *m) { return m ? m->init_mode : MTK_INIT_META; }
void mtk_module_set_frameless(mtk_module *m, bool frameless)
{
    if (m) m->frameless = frameless;
}
bool mtk_module_is_frameless(const mtk_module *m) { return m && m->frameless; }

bool nn_slots_reserve(mtk_ctx *ctx, void **items, int32_t *cap, int32_t need, size_t item_size)
{
    if (need <= *cap) return true;
    int32_t new_cap = *cap ? *cap * 2 : 4;
    while (new_cap < need) new_cap *= 2;
    void *grown = mtk_ctx_alloc(ctx, (size_t)new_cap * item_size);
    if (!grown) return false;
    if (*items) memcpy(grown, *items, (size_t)*cap * item_size);
    *items = grown;
    *cap = new_cap;
    return true;
}

#define RESERVE(ctx, list, need) \
    nn_slots_reserve((ctx), (void **)&(list).items, &(list).cap, (need), sizeof *(list).items)

mtk_device nn_new_tensor_device(mtk_ctx *ctx)
{
    if (mtk_ctx_init_mode(ctx) == MTK_INIT_META) return MTK_DEVICE_META;
    return mtk_ctx_device(ctx);
}

bool nn_alloc_if_real(mtk_tensor *t)
{
    if (t->device == MTK_DEVICE_META || t->storage) return true;
    return mtk_tensor_alloc_storage(t);
}

/* ---------------------------------------------------------- registration */

static bool name_taken(mtk_module *m, const char *name)
{
    nn_name_kind kind;
    int32_t index;
    return nn_names_find(m, name, strlen(name), &kind, &index);
}

/* torch's rules for attribute names of parameters, buffers and modules. */
static bool check_name(mtk_module *m, const char *what, const char *name)
{
    if (!name || !*name)
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "%s name can't be empty string \"\"", what);
    if (strchr(name, '.'))
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "%s name can't contain \".\", got: %s", what,
                         name);
    if (name_taken(m, name))
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "attribute '%s' already exists in %s (a child, parameter or buffer)", name,
                         m->type->name);
    return true;
}

bool mtk_module_add(mtk_module *m, const char *name, mtk_module *child)
{
    if (!m || !child) return false;
    if (!check_name(m, "module", name)) return false;
    if (!RESERVE(m->ctx, m->children, m->children.count + 1)) return false;
    const char *copy = mtk_ctx_strdup(m->ctx, name);
    if (!copy) return false;
    m->children.items[m->children.count++] = (module_slot){ copy, child };
    return nn_names_added(m, NN_NAME_CHILD, m->children.count - 1);
}

bool mtk_module_replace_child(mtk_module *m, int32_t index, mtk_module *child)
{
    if (!m || !child) return false;
    if (index < 0 || index >= m->children.count)
        return mtk_error(m->ctx, MTK_ERR_INDEX, "replace_child: %s has no child %d (it has %d)",
                         m->type ? m->type->name : "module", (int)index, (int)m->children.count);
    m->children.items[index].module = child; /* the name, and so the name index, stay */
    return true;
}

static bool add_tensor_slot(mtk_module *m, bool is_param, const char *name, mtk_tensor *t,
                            bool persistent)
{
    if (!check_name(m, is_param ? "parameter" : "buffer", name)) return false;
    const char *copy = mtk_ctx_strdup(m->ctx, name);
    if (!copy) return false;
    if (is_param) {
        if (!RESERVE(m->ctx, m->params, m->params.count + 1)) return false;
        m->params.items[m->params.count++] = (tensor_slot){ copy, t, true };
        return nn_names_added(m, NN_NAME_PARAM, m->params.count - 1);
    }
    if (!RESERVE(m->ctx, m->buffers, m->buffers.count + 1)) return false;
    m->buffers.items[m->buffers.count++] = (tensor_slot){ copy, t, persistent };
    return nn_names_added(m, NN_NAME_BUFFER, m->buffers.count - 1);
}

bool mtk_module_register_parameter(mtk_module *m, const char *name, mtk_tensor *t)
{
    if (!m || !t) return false;
    if (t->flags & MTK_TENSOR_BUFFER)
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "cannot register a buffer as parameter '%s'", name ? name : "");
    if (!add_tensor_slot(m, true, name, t, true)) return false;
    if (!(t->flags & MTK_TENSOR_PARAMETER)) t->flags |= MTK_TENSOR_PARAMETER | MTK_TENSOR_REQUIRES_GRAD;
    return true;
}

bool mtk_module_register_buffer(mtk_module *m, const char *name, mtk_tensor *t, bool persistent)
{
    if (!m || !t) return false;
    if (t->flags & MTK_TENSOR_PARAMETER)
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "cannot register a parameter as buffer '%s'", name ? name : "");
    if (!add_tensor_slot(m, false, name, t, persistent)) return false;
    t->flags |= MTK_TENSOR_BUFFER;
    return true;
}

static mtk_tensor *new_tensor(mtk_module *m, const int64_t *shape, int32_t ndim, mtk_dtype dtype,
                              bool lazy)
{
    mtk_ctx *ctx = m->ctx;
    if (dtype == MTK_DTYPE_UNDEFINED) dtype = mtk_ctx_dtype(ctx);
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, lazy ? 0 : ndim, NULL, nn_new_tensor_device(ctx));
    if (!t) return NULL;
    if (lazy) t->flags |= MTK_TENSOR_LAZY;
    else if (!nn_alloc_if_real(t)) return NULL;
    return t;
}

mtk_tensor *mtk_module_new_parameter(mtk_module *m, const char *name, const int64_t *shape,
                                     int32_t ndim)
{
    if (!m) return NULL;
    mtk_tensor *t = new_tensor(m, shape, ndim, MTK_DTYPE_UNDEFINED, false);
    return t && mtk_module_register_parameter(m, name, t) ? t : NULL;
}

mtk_tensor *mtk_module_new_lazy_parameter(mtk_module *m, const char *name)
{
    if (!m) return NULL;
    mtk_tensor *t = new_tensor(m, NULL, 0, MTK_DTYPE_UNDEFINED, true);
    return t && mtk_module_register_parameter(m, name, t) ? t : NULL;
}

mtk_tensor *mtk_module_new_buffer(mtk_module *m, const char *name, const int64_t *shape,
                                  int32_t ndim, mtk_dtype dtype, bool persistent)
{
    if (!m) return NULL;
    mtk_tensor *t = new_tensor(m, shape, ndim, dtype, false);
    return t && mtk_module_register_buffer(m, name, t, persistent) ? t : NULL;
}

mtk_tensor *mtk_module_new_lazy_buffer(mtk_module *m, const char *name, mtk_dtype dtype, bool persistent)
{
    if (!m) return NULL;
    mtk_tensor *t = new_tensor(m, NULL, 0, dtype, true);
    return t && mtk_module_register_buffer(m, name, t, persistent) ? t : NULL;
}

/* ------------------------------------------------- metadata replacement */

bool nn_tensor_assign(mtk_tensor *t, const mtk_tensor *src)
{
    uint32_t keep = t->flags & (MTK_TENSOR_PARAMETER | MTK_TENSOR_BUFFER | MTK_TENSOR_REQUIRES_GRAD);
    mtk_ctx *ctx = t->ctx;
    mtk_tensor copy = *src;
    copy.ctx = ctx;
    copy.storage = NULL;
    copy.flags = keep | (src->flags & ~(uint32_t)(MTK_TENSOR_PARAMETER | MTK_TENSOR_BUFFER |
                                                  MTK_TENSOR_REQUIRES_GRAD | MTK_TENSOR_LAZY |
                                                  MTK_TENSOR_WRAPPED_NUMBER));
    if (src->storage) {
        /* take this context's own reference before touching t */
        mtk_tensor probe = copy;
        if (!mtk_tensor_set_storage(&probe, src->storage)) return false;
        copy.storage = probe.storage;
    }
    *t = copy;
    return true;
}

bool mtk_module_materialize_lazy(mtk_module *m, mtk_tensor *t, const int64_t *shape, int32_t ndim)
{
    if (!m || !t) return false;
    if (!(t->flags & MTK_TENSOR_LAZY))
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "%s: materialize of a tensor that already has a shape", m->type->name);
    mtk_tensor *fresh = mtk_tensor_new(m->ctx, t->dtype, shape, ndim, NULL, t->device);
    if (!fresh || !nn_alloc_if_real(fresh)) return false;
    return nn_tensor_assign(t, fresh);
}

bool nn_module_has_lazy(const mtk_module *m)
{
    for (int32_t i = 0; i < m->params.count; i++)
        if (m->params.items[i].tensor->flags & MTK_TENSOR_LAZY) return true;
    for (int32_t i = 0; i < m->buffers.count; i++)
        if (m->buffers.items[i].tensor->flags & MTK_TENSOR_LAZY) return true;
    return false;
}

/* Whether m has a tensor with real memory to initialize. */
static bool has_real_tensor(const mtk_module *m)
{
    for (int32_t i = 0; i < m->params.count; i++)
        if (m->params.items[i].tensor->device != MTK_DEVICE_META) return true;
    for (int32_t i = 0; i < m->buffers.count; i++)
        if (m->buffers.items[i].tensor->device != MTK_DEVICE_META) return true;
    return false;
}

bool nn_reset_own(mtk_module *m, mtk_rng *rng)
{
    if (!m->type->reset_parameters || !has_real_tensor(m) || nn_module_has_lazy(m)) return true;
    return m->type->reset_parameters(m, rng);
}

mtk_module *mtk_module_finish(mtk_module *m)
{
    if (!m) return NULL;
    if (m->init_mode != MTK_INIT_INIT) return m;
    mtk_rng rng;
    mtk_rng_seed(&rng, mtk_ctx_next_seed(m->ctx));
    return nn_reset_own(m, &rng) ? m : NULL;
}

bool mtk_module_finish_lazy(mtk_module *m, const mtk_module_type *eager_type)
{
    if (!m) return false;
    if (eager_type) m->type = eager_type;
    if (m->init_mode != MTK_INIT_INIT) return true;
    mtk_rng rng;
    mtk_rng_seed(&rng, mtk_ctx_next_seed(m->ctx));
    return nn_reset_own(m, &rng);
}

/* ---------------------------------------------------------------- lookup */

/* The direct child named name[0..len). */
static mtk_module *child_named(mtk_module *m, const char *name, size_t len)
{
    nn_name_kind kind;
    int32_t i;
    return nn_names_find(m, name, len, &kind, &i) && kind == NN_NAME_CHILD ? m->children.items[i].module : NULL;
}

/* Walks the module part of a dotted path: returns the module holding the
 * last component and points *last at it.  NULL (no error) if a part is
 * missing; *missing then points at it. */
static mtk_module *walk(mtk_module *m, const char *path, const char **last, const char **missing)
{
    const char *p = path;
    for (;;) {
        const char *dot = strchr(p, '.');
        if (!dot) {
            *last = p;
            return m;
        }
        mtk_module *next = child_named(m, p, (size_t)(dot - p));
        if (!next) {
            *missing = p;
            return NULL;
        }
        m = next;
        p = dot + 1;
    }
}

mtk_module *mtk_module_child(mtk_module *m, const char *path)
{
    if (!m) return NULL;
    if (!path || !*path) return m;
    const char *last = NULL, *missing = NULL;
    mtk_module *owner = walk(m, path, &last, &missing);
    mtk_module *found = owner ? child_named(owner, last, strlen(last)) : NULL;
    if (!found)
        mtk_error(m->ctx, MTK_ERR_INDEX, "%s has no submodule '%s' (no '%s')", m->type->name, path,
                  missing ? missing : last);
    return found;
}

static mtk_tensor *own_tensor(mtk_module *m, const char *name)
{
    nn_name_kind kind;
    int32_t i;
    if (!nn_names_find(m, name, strlen(name), &kind, &i)) return NULL;
    return kind == NN_NAME_PARAM ? m->params.items[i].tensor
         : kind == NN_NAME_BUFFER ? m->buffers.items[i].tensor
                                  : NULL;
}

mtk_tensor *mtk_module_find_tensor(mtk_module *m, const char *path)
{
    if (!m || !path) return NULL;
    const char *last = NULL, *missing = NULL;
    mtk_module *owner = walk(m, path, &last, &missing);
    return owner ? own_tensor(owner, last) : NULL;
}

mtk_tensor *mtk_module_tensor(mtk_module *m, const char *path)
{
    if (!m) return NULL;
    mtk_tensor *t = mtk_module_find_tensor(m, path);
    if (!t) {
        char names[512] = "";
        size_t len = 0;
        const char *last = NULL, *missing = NULL;
        mtk_module *owner = path ? walk(m, path, &last, &missing) : NULL;
        for (int32_t i = 0; owner && i < owner->params.count + owner->buffers.count; i++) {
            const char *n = i < owner->params.count ? owner->params.items[i].name
                                                    : owner->buffers.items[i - owner->params.count].name;
            int w = snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", n);
            if (w < 0 || (size_t)w >= sizeof names - len) break;
            len += (size_t)w;
        }
        mtk_error(m->ctx, MTK_ERR_INDEX, "%s has no parameter or buffer '%s' (%s%s)", m->type->name,
                  path ? path : "(null)", owner ? "it has: " : "no such submodule",
                  owner ? (len ? names : "none") : "");
    }
    return t;
}

int32_t mtk_module_child_count(const mtk_module *m) { return m ? m->children.count : 0; }
int32_t mtk_module_param_count(const mtk_module *m) { return m ? m->params.count : 0; }
int32_t mtk_module_buffer_count(const mtk_module *m) { return m ? m->buffers.count : 0; }

mtk_module *mtk_module_child_at(const mtk_module *m, int32_t i, const char **name_out)
{
    if (!m || i < 0 || i >= m->children.count) return NULL;
    if (name_out) *name_out = m->children.items[i].name;
    return m->children.items[i].module;
}

mtk_tensor *mtk_module_param_at(const mtk_module *m, int32_t i, const char **name_out)
{
    if (!m || i < 0 || i >= m->params.count) return NULL;
    if (name_out) *name_out = m->params.items[i].name;
    return m->params.items[i].tensor;
}

mtk_tensor *mtk_module_buffer_at(const mtk_module *m, int32_t i, const char **name_out,
                                 bool *persistent_out)
{
    if (!m || i < 0 || i >= m->buffers.count) return NULL;
    if (name_out) *name_out = m->buffers.items[i].name;
    if (persistent_out) *persistent_out = m->buffers.items[i].persistent;
    return m->buffers.items[i].tensor;
}

/* The slot of the parameter at a dotted path, NULL when there is none. */
static tensor_slot *param_slot(mtk_module *m, const char *path)
{
    const char *last = NULL, *missing = NULL;
    mtk_module *owner = walk(m, path, &last, &missing);
    nn_name_kind kind;
    int32_t i;
    if (owner && nn_names_find(owner, last, strlen(last), &kind, &i) && kind == NN_NAME_PARAM)
        return &owner->params.items[i];
    return NULL;
}

mtk_tensor *mtk_module_untie(mtk_module *m, const char *path)
{
    if (!m) return NULL;
    tensor_slot *slot = param_slot(m, path);
    if (!slot) {
        mtk_error(m->ctx, MTK_ERR_INDEX, "untie: %s has no parameter '%s'", m->type->name, path);
        return NULL;
    }
    mtk_tensor *old = slot->tensor, *t;
    if (old->device == MTK_DEVICE_META || (old->flags & MTK_TENSOR_LAZY)) {
        t = mtk_tensor_new(m->ctx, old->dtype, old->shape, old->ndim, NULL, old->device);
    } else {
        if (!mtk_ctx_push_device(m->ctx, old->device)) return NULL;
        t = mtk_clone(m->ctx, old);
        mtk_ctx_pop_device(m->ctx);
    }
    if (!t) return NULL;
    t->flags = old->flags;
    slot->tensor = t;
    return t;
}

bool mtk_module_tie(mtk_module *m, const char *path, const char *source_path)
{
    if (!m) return false;
    mtk_tensor *source = mtk_module_tensor(m, source_path);
    if (!source) return false;
    const char *last = NULL, *missing = NULL;
    mtk_module *owner = walk(m, path, &last, &missing);
    tensor_slot *slot = NULL;
    nn_name_kind kind;
    int32_t i;
    if (owner && nn_names_find(owner, last, strlen(last), &kind, &i) && kind == NN_NAME_PARAM)
        slot = &owner->params.items[i];
    if (!slot)
        return mtk_error(m->ctx, MTK_ERR_INDEX, "tie: %s has no parameter '%s'", m->type->name, path);
    if (!(source->flags & MTK_TENSOR_PARAMETER))
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "tie: '%s' is a buffer, not a parameter",
                         source_path);
    const mtk_tensor *old = slot->tensor;
    bool lazy = (old->flags | source->flags) & MTK_TENSOR_LAZY;
    if (!lazy && (old->ndim != source->ndim ||
                  memcmp(old->shape, source->shape, (size_t)old->ndim * sizeof *old->shape) != 0)) {
        char a[128], b[128];
        return mtk_error(m->ctx, MTK_ERR_SHAPE, "tie: '%s' has shape %s but '%s' has shape %s", path,
                         mtk_shape_list_str(old->shape, old->ndim, a, sizeof a), source_path,
                         mtk_shape_list_str(source->shape, source->ndim, b, sizeof b));
    }
    slot->tensor = source;
    return true;
}
