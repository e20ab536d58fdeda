/* A set of pointers (open addressing), for "each tensor once" and "each
 * module once" traversals and for copy maps.  Memory from the context's
 * allocator; free with nn_ptrset_free. */
#ifndef MTK_NN_PTRSET_H
#define MTK_NN_PTRSET_H

#include "mtk/core.h"

typedef struct ptrset {
    mtk_ctx *ctx;
    const void **keys;
    void **values; /* parallel to keys: the map's values */
    size_t cap;    /* a power of two, 0 before the first insert */
    size_t count;
} ptrset;

void nn_ptrset_init(ptrset *set, mtk_ctx *ctx);
void nn_ptrset_free(ptrset *set);
/* Adds key (with value) unless present.  Returns 1 when added, 0 when it
 * was there, -1 on out of memory (error set). */
int nn_ptrset_add(ptrset *set, const void *key, void *value);
/* Sets key's value, adding key when absent.  Returns 1 when added, 0 when
 * its value was replaced, -1 on out of memory (error set). */
int nn_ptrset_put(ptrset *set, const void *key, void *value);
bool nn_ptrset_has(const ptrset *set, const void *key);
/* The value of key, NULL when absent. */
void *nn_ptrset_get(const ptrset *set, const void *key);

#endif
