/* The name index of a module: its children's, parameters' and buffers'
 * names looked up in constant time.
 *
 * Modules with a few names (nearly all) are scanned; once a module holds
 * NAMES_INDEXED_MIN names it gets an open-addressing table in the arena,
 * so that registering or finding the 20,000th layer of a ModuleList does
 * not compare 20,000 strings.  The table is a cache of the three lists:
 * it records how many slots of each list it holds, and is rebuilt when a
 * list was filled without it (mtk_module_copy_meta sets lists whole).
 * Names are never removed or renamed, so counts say whether it is
 * current. */
#include "nn/module_internal.h"

#include <string.h>

#define NAMES_INDEXED_MIN 16

/* An entry: 0 empty, else ((uint64_t)kind << 32 | index) + 1. */
static uint64_t entry_of(nn_name_kind kind, int32_t index) { return ((uint64_t)kind << 32 | (uint32_t)index) + 1; }

static const char *entry_name(const mtk_module *m, uint64_t entry)
{
    nn_name_kind kind = (nn_name_kind)((entry - 1) >> 32);
    int32_t i = (int32_t)(uint32_t)(entry - 1);
    switch (kind) {
    case NN_NAME_CHILD: return m->children.items[i].name;
    case NN_NAME_PARAM: return m->params.items[i].name;
    default: return m->buffers.items[i].name;
    }
}

/* FNV-1a of name[0..len), folded */
static uint64_t hash_of(const char *name, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * UINT64_C(1099511628211);
    h ^= h >> 32; /* multiplying carries upward only: fold the high bits into the slot */
    return h;
}

static bool same_name(const char *stored, const char *name, size_t len)
{
    return strncmp(stored, name, len) == 0 && stored[len] == '\0';
}

static int64_t total_names(const mtk_module *m)
{
    return (int64_t)m->children.count + m->params.count + m->buffers.count;
}

static bool index_current(const mtk_module *m)
{
    const nn_name_index *ix = &m->names;
    return ix->entries && ix->children == m->children.count && ix->params == m->params.count &&
           ix->buffers == m->buffers.count;
}

static void put(nn_name_index *ix, const mtk_module *m, uint64_t entry)
{
    const char *name = entry_name(m, entry);
    size_t mask = ix->cap - 1, i = (size_t)hash_of(name, strlen(name)) & mask;
    while (ix->entries[i]) i = (i + 1) & mask;
    ix->entries[i] = entry;
    ix->used++;
}

/* (Re)builds the table for every slot of m, with room to grow. */
static bool rebuild(mtk_module *m)
{
    int64_t n = total_names(m);
    size_t cap = 64;
    while ((int64_t)cap < 2 * (n + 1)) cap *= 2;
    uint64_t *entries = mtk_ctx_alloc(m->ctx, cap * sizeof *entries); /* zeroed */
    if (!entries) return false;
    nn_name_index *ix = &m->names;
    *ix = (nn_name_index){ .entries = entries, .cap = cap };
    for (int32_t i = 0; i < m->children.count; i++) put(ix, m, entry_of(NN_NAME_CHILD, i));
    for (int32_t i = 0; i < m->params.count; i++) put(ix, m, entry_of(NN_NAME_PARAM, i));
    for (int32_t i = 0; i < m->buffers.count; i++) put(ix, m, entry_of(NN_NAME_BUFFER, i));
    ix->children = m->children.count;
    ix->params = m->params.count;
    ix->buffers = m->buffers.count;
    return true;
}

bool nn_names_added(mtk_module *m, nn_name_kind kind, int32_t index)
{
    nn_name_index *ix = &m->names;
    if (!ix->entries) return total_names(m) < NAMES_INDEXED_MIN || rebuild(m);
    /* the table held every slot but the new one: add it, growing first
     * when it would be more than half full */
    int32_t *count = kind == NN_NAME_CHILD ? &ix->children : kind == NN_NAME_PARAM ? &ix->params : &ix->buffers;
    if (*count != index || (int64_t)ix->children + ix->params + ix->buffers + 1 != total_names(m)) return rebuild(m);
    if (2 * (ix->used + 1) > ix->cap) return rebuild(m);
    put(ix, m, entry_of(kind, index));
    (*count)++;
    return true;
}

bool nn_names_find(mtk_module *m, const char *name, size_t len, nn_name_kind *kind, int32_t *index)
{
    if (total_names(m) < NAMES_INDEXED_MIN) {
        for (int32_t i = 0; i < m->children.count; i++)
            if (same_name(m->children.items[i].name, name, len)) {
                *kind = NN_NAME_CHILD, *index = i;
                return true;
            }
        for (int32_t i = 0; i < m->params.count; i++)
            if (same_name(m->params.items[i].name, name, len)) {
                *kind = NN_NAME_PARAM, *index = i;
                return true;
            }
        for (int32_t i = 0; i < m->buffers.count; i++)
            if (same_name(m->buffers.items[i].name, name, len)) {
                *kind = NN_NAME_BUFFER, *index = i;
                return true;
            }
        return false;
    }
    if (!index_current(m) && !rebuild(m)) return false;
    const nn_name_index *ix = &m->names;
    size_t mask = ix->cap - 1, i = (size_t)hash_of(name, len) & mask;
    for (; ix->entries[i]; i = (i + 1) & mask) {
        if (!same_name(entry_name(m, ix->entries[i]), name, len)) continue;
        *kind = (nn_name_kind)((ix->entries[i] - 1) >> 32);
        *index = (int32_t)(uint32_t)(ix->entries[i] - 1);
        return true;
    }
    return false;
}
