/* State dicts: an ordered name -> tensor map, a module's state_dict(), and
 * load_state_dict with every bad key reported in one error. */
#include "nn/module_internal.h"
#include "nn/walk.h"
#include "nn/ptrset.h"
#include "mtk/ops/convert.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct mtk_state_dict {
    mtk_ctx *ctx;
    const char **names;
    mtk_tensor **tensors;
    int32_t count, names_cap, tensors_cap;
    int32_t *slots;    /* open addressing: 1 + index into names, 0 empty */
    size_t slots_cap;  /* a power of two, at least twice count; 0: none */
};

mtk_state_dict *mtk_state_dict_new(mtk_ctx *ctx)
{
    mtk_state_dict *sd = mtk_ctx_alloc(ctx, sizeof *sd);
    if (sd) sd->ctx = ctx;
    return sd;
}

/* FNV-1a, folded */
static size_t hash_of(const char *name)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (; *name; name++) h = (h ^ (unsigned char)*name) * UINT64_C(1099511628211);
    h ^= h >> 32; /* multiplying carries upward only: fold the high bits into the slot */
    return (size_t)h;
}

/* The slot of `name` in the table: where it is, or the empty slot where
 * it would go. */
static size_t slot_of(const mtk_state_dict *sd, const char *name)
{
    size_t mask = sd->slots_cap - 1, i = hash_of(name) & mask;
    while (sd->slots[i] && strcmp(sd->names[sd->slots[i] - 1], name) != 0) i = (i + 1) & mask;
    return i;
}

static int32_t find_key(const mtk_state_dict *sd, const char *name)
{
    if (!sd->slots_cap) return -1;
    size_t i = slot_of(sd, name);
    return sd->slots[i] - 1;
}

/* Makes room in the table for one more key (keys are looked up in
 * constant time: a model's state dict has ~10 keys per layer). */
static bool reserve_slot(mtk_state_dict *sd)
{
    if ((size_t)(sd->count + 1) * 2 <= sd->slots_cap) return true;
    size_t cap = sd->slots_cap ? sd->slots_cap * 2 : 64;
    int32_t *slots = mtk_ctx_alloc(sd->ctx, cap * sizeof *slots); /* zeroed; the old table stays in the arena */
    if (!slots) return false;
    sd->slots = slots;
    sd->slots_cap = cap;
    for (int32_t k = 0; k < sd->count; k++) sd->slots[slot_of(sd, sd->names[k])] = k + 1;
    return true;
}

bool mtk_state_dict_set(mtk_state_dict *sd, const char *name, mtk_tensor *t)
{
    if (!sd || !t) return false;
    if (!name) return mtk_error(sd->ctx, MTK_ERR_INVALID_ARGUMENT, "state dict: a NULL key");
    int32_t i = find_key(sd, name);
    if (i >= 0) {
        sd->tensors[i] = t;
        return true;
    }
    if (!nn_slots_reserve(sd->ctx, (void **)&sd->names, &sd->names_cap, sd->count + 1, sizeof *sd->names) ||
        !nn_slots_reserve(sd->ctx, (void **)&sd->tensors, &sd->tensors_cap, sd->count + 1, sizeof *sd->tensors) ||
        !reserve_slot(sd))
        return false;
    const char *copy = mtk_ctx_strdup(sd->ctx, name);
    if (!copy) return false;
    sd->names[sd->count] = copy;
    sd->slots[slot_of(sd, copy)] = sd->count + 1;
    sd->tensors[sd->count++] = t;
    return true;
}

mtk_tensor *mtk_state_dict_get(const mtk_state_dict *sd, const char *name)
{
    int32_t i = sd && name ? find_key(sd, name) : -1;
    return i >= 0 ? sd->tensors[i] : NULL;
}

int32_t mtk_state_dict_count(const mtk_state_dict *sd) { return sd ? sd->count : 0; }

mtk_tensor *mtk_state_dict_at(const mtk_state_dict *sd, int32_t i, const char **name_out)
{
    if (!sd || i < 0 || i >= sd->count) return NULL;
    if (name_out) *name_out = sd->names[i];
    return sd->tensors[i];
}

/* ------------------------------------------------------------ state_dict */

/* torch's order: a module's parameters, then its persistent buffers, then
 * each child under its prefix.  Shared modules and tied tensors appear
 * under every name. */
static bool save(mtk_module *m, const char *prefix, mtk_state_dict *sd, int32_t depth)
{
    if (depth > 1000) return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "state_dict: the tree is too deep");
    for (int32_t i = 0; i < m->params.count; i++) {
        char *name = nn_join_name(m->ctx, prefix, m->params.items[i].name);
        if (!name || !mtk_state_dict_set(sd, name, m->params.items[i].tensor)) return false;
    }
    for (int32_t i = 0; i < m->buffers.count; i++) {
        if (!m->buffers.items[i].persistent) continue;
        char *name = nn_join_name(m->ctx, prefix, m->buffers.items[i].name);
        if (!name || !mtk_state_dict_set(sd, name, m->buffers.items[i].tensor)) return false;
    }
    for (int32_t i = 0; i < m->children.count; i++) {
        char *name = nn_join_name(m->ctx, prefix, m->children.items[i].name);
        if (!name || !save(m->children.items[i].module, name, sd, depth + 1)) return false;
    }
    return true;
}

mtk_state_dict *mtk_module_state_dict(mtk_module *m)
{
    if (!m) return NULL;
    mtk_state_dict *sd = mtk_state_dict_new(m->ctx);
    return sd && save(m, "", sd, 0) ? sd : NULL;
}

/* --------------------------------------------------------- the message */

typedef struct message {
    char text[4096];
    size_t len;
    bool truncated;
} message;

static void add(message *msg, const char *fmt, ...)
{
    if (msg->truncated) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg->text + msg->len, sizeof msg->text - msg->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof msg->text - msg->len) {
        msg->truncated = true;
        msg->text[msg->len] = '\0';
        return;
    }
    msg->len += (size_t)n;
}

static void add_key_list(message *msg, const char *what, const char **keys, int32_t n)
{
    if (!n) return;
    add(msg, "\n\t%s key(s) in state_dict: ", what);
    for (int32_t i = 0; i < n; i++) add(msg, "%s\"%s\"", i ? ", " : "", keys[i]);
    add(msg, ". ");
}

/* ------------------------------------------------------- load_state_dict */

static bool push_key(mtk_ctx *ctx, const char ***list, int32_t *count, int32_t *cap, const char *key)
{
    if (!nn_slots_reserve(ctx, (void **)list, cap, *count + 1, sizeof **list)) return false;
    (*list)[(*count)++] = key;
    return true;
}

static bool same_shape(const mtk_tensor *a, const mtk_tensor *b)
{
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) == 0;
}

/* Loads one entry (checks already done). */
static bool load_one(mtk_module *m, mtk_tensor *target, mtk_tensor *source, const mtk_load_options *o)
{
    mtk_ctx *ctx = m->ctx;
    bool lazy = target->flags & MTK_TENSOR_LAZY;
    if (lazy && !o->assign && target->device != MTK_DEVICE_META) {
        /* a lazy tensor on a real device: memory of the loaded shape, then a copy */
        if (!mtk_module_materialize_lazy(m, target, source->shape, source->ndim)) return false;
        return mtk_copy_(ctx, target, source) != NULL;
    }
    if (o->assign || target->device == MTK_DEVICE_META || lazy) {
        if (source->dtype != target->dtype && !lazy) {
            source = mtk_to_dtype(ctx, source, target->dtype);
            if (!source) return false;
        }
        return nn_tensor_assign(target, source);
    }
    return mtk_copy_(ctx, target, source) != NULL;
}

bool mtk_module_load_state_dict(mtk_module *m, const mtk_state_dict *sd, const mtk_load_options *options,
                                mtk_load_report *report)
{
    mtk_load_report local;
    if (!report) report = &local;
    memset(report, 0, sizeof *report);
    if (!m || !sd) return false;
    mtk_ctx *ctx = m->ctx;
    mtk_load_options o = options ? *options : (mtk_load_options){ .strict = true };
    mtk_state_dict *own = mtk_module_state_dict(m);
    if (!own) return false;

    int32_t cap_missing = 0, cap_unexpected = 0, cap_mismatched = 0;
    message msg = { .len = 0 };
    char mismatch_text[2048] = "";
    size_t mismatch_len = 0;
    const char *meta_source = NULL;
    bool *loaded = mtk_ctx_alloc(ctx, (size_t)(own->count ? own->count : 1) * sizeof *loaded);
    if (!loaded) return false;

    for (int32_t i = 0; i < own->count; i++) {
        const char *key = own->names[i];
        mtk_tensor *target = own->tensors[i];
        mtk_tensor *source = mtk_state_dict_get(sd, key);
        if (!source) continue;
        bool lazy = target->flags & MTK_TENSOR_LAZY;
        char a[160], b[160];
        if (!lazy && !same_shape(source, target)) {
            if (!push_key(ctx, &report->mismatched, &report->nmismatched, &cap_mismatched, key)) return false;
            int n = snprintf(mismatch_text + mismatch_len, sizeof mismatch_text - mismatch_len,
                             "\n\tsize mismatch for %s: copying a param with shape torch.Size(%s) from "
                             "checkpoint, the shape in current model is torch.Size(%s).",
                             key, mtk_shape_list_str(source->shape, source->ndim, a, sizeof a),
                             mtk_shape_list_str(target->shape, target->ndim, b, sizeof b));
            if (n > 0 && (size_t)n < sizeof mismatch_text - mismatch_len) mismatch_len += (size_t)n;
            continue;
        }
        if (!lazy && source->dtype != target->dtype && !o.convert_dtype) {
            if (!push_key(ctx, &report->mismatched, &report->nmismatched, &cap_mismatched, key)) return false;
            int n = snprintf(mismatch_text + mismatch_len, sizeof mismatch_text - mismatch_len,
                             "\n\tdtype mismatch for %s: copying a param with dtype torch.%s from "
                             "checkpoint, the dtype in current model is torch.%s (set convert_dtype to "
                             "convert it).",
                             key, mtk_dtype_name(source->dtype), mtk_dtype_name(target->dtype));
            if (n > 0 && (size_t)n < sizeof mismatch_text - mismatch_len) mismatch_len += (size_t)n;
            continue;
        }
        if (!o.assign && target->device != MTK_DEVICE_META && source->device == MTK_DEVICE_META &&
            !meta_source)
            meta_source = key;
        loaded[i] = true;
    }
    /* a tied tensor loaded under one of its names is not missing */
    ptrset loaded_tensors;
    nn_ptrset_init(&loaded_tensors, ctx);
    bool listed = true;
    for (int32_t i = 0; i < own->count && listed; i++)
        if (loaded[i]) listed = nn_ptrset_add(&loaded_tensors, own->tensors[i], NULL) >= 0;
    for (int32_t i = 0; i < own->count && listed; i++) {
        if (loaded[i] || mtk_state_dict_get(sd, own->names[i]) || nn_ptrset_has(&loaded_tensors, own->tensors[i])) continue;
        listed = push_key(ctx, &report->missing, &report->nmissing, &cap_missing, own->names[i]);
    }
    nn_ptrset_free(&loaded_tensors);
    if (!listed) return false;
    for (int32_t i = 0; i < sd->count; i++)
        if (find_key(own, sd->names[i]) < 0 &&
            !push_key(ctx, &report->unexpected, &report->nunexpected, &cap_unexpected, sd->names[i]))
            return false;

    bool bad_keys = o.strict && (report->nmissing || report->nunexpected);
    if (bad_keys || report->nmismatched) {
        add(&msg, "Error(s) in loading state_dict for %s:", m->type->name);
        if (o.strict) {
            add_key_list(&msg, "Missing", report->missing, report->nmissing);
            add_key_list(&msg, "Unexpected", report->unexpected, report->nunexpected);
        }
        add(&msg, "%s", mismatch_text);
        if (msg.truncated)
            snprintf(msg.text + (msg.len > 40 ? msg.len - 40 : 0), 41, " ... (more: see the load report)");
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s", msg.text);
    }
    if (meta_source)
        return mtk_error(ctx, MTK_ERR_META_NO_DATA,
                         "load_state_dict: Cannot copy out of meta tensor; no data! ('%s' in the state "
                         "dict is a meta tensor and the module's is real.) Load a real checkpoint, or set "
                         "assign to make the module take the meta tensors",
                         meta_source);
    for (int32_t i = 0; i < own->count; i++) {
        if (!loaded[i]) continue;
        if (!load_one(m, own->tensors[i], mtk_state_dict_get(sd, own->names[i]), &o)) return false;
    }
    return true;
}
