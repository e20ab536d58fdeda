/* Pointer set/map with linear probing. */
#include "nn/ptrset.h"

#include <string.h>

void nn_ptrset_init(ptrset *set, mtk_ctx *ctx)
{
    memset(set, 0, sizeof *set);
    set->ctx = ctx;
}

void nn_ptrset_free(ptrset *set)
{
    mtk_ctx_mfree(set->ctx, set->keys);
    mtk_ctx_mfree(set->ctx, set->values);
    set->keys = NULL;
    set->values = NULL;
    set->cap = set->count = 0;
}

static size_t slot_of(const void *key, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 17) & (cap - 1);
}

static size_t find(const ptrset *set, const void *key)
{
    size_t i = slot_of(key, set->cap);
    while (set->keys[i] && set->keys[i] != key) i = (i + 1) & (set->cap - 1);
    return i;
}

static bool grow(ptrset *set)
{
    size_t cap = set->cap ? set->cap * 2 : 64;
    const void **keys = mtk_ctx_malloc(set->ctx, cap * sizeof *keys);
    void **values = keys ? mtk_ctx_malloc(set->ctx, cap * sizeof *values) : NULL;
    if (!values) {
        mtk_ctx_mfree(set->ctx, keys);
        return false;
    }
    memset(keys, 0, cap * sizeof *keys);
    ptrset bigger = { set->ctx, keys, values, cap, 0 };
    for (size_t i = 0; i < set->cap; i++) {
        if (!set->keys[i]) continue;
        size_t j = find(&bigger, set->keys[i]);
        bigger.keys[j] = set->keys[i];
        bigger.values[j] = set->values[i];
        bigger.count++;
    }
    nn_ptrset_free(set);
    *set = bigger;
    return true;
}

int nn_ptrset_add(ptrset *set, const void *key, void *value)
{
    if ((set->count + 1) * 2 > set->cap && !grow(set)) return -1;
    size_t i = find(set, key);
    if (set->keys[i]) return 0;
    set->keys[i] = key;
    set->values[i] = value;
    set->count++;
    return 1;
}

int nn_ptrset_put(ptrset *set, const void *key, void *value)
{
    if (set->cap) {
        size_t i = find(set, key);
        if (set->keys[i]) {
            set->values[i] = value;
            return 0;
        }
    }
    return nn_ptrset_add(set, key, value);
}

bool nn_ptrset_has(const ptrset *set, const void *key)
{
    return set->cap && set->keys[find(set, key)] == key;
}

void *nn_ptrset_get(const ptrset *set, const void *key)
{
    if (!set->cap) return NULL;
    size_t i = find(set, key);
    return set->keys[i] == key ? set->values[i] : NULL;
}
