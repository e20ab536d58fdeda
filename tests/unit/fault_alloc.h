/* A fault-injecting allocator for out-of-memory tests: it fails the
 * fail_at-th allocation (1-based; 0 fails none), and with `persistent` every
 * one after it too, and counts live blocks so a test can prove that nothing
 * leaked.  Use: injector in = { .fail_at = n };
 *              mtk_allocator a = { inject_alloc, inject_free, &in }; */
#ifndef MTK_TEST_FAULT_ALLOC_H
#define MTK_TEST_FAULT_ALLOC_H

#include <stdbool.h>
#include <stdlib.h>

typedef struct injector {
    long count;      /* allocations attempted so far                   */
    long fail_at;    /* the allocation that fails (1-based), 0: none    */
    bool persistent; /* also fail every allocation after fail_at        */
    long failures;   /* how many were refused                          */
    long live;       /* blocks handed out and not yet freed            */
} injector;

static inline void *inject_alloc(size_t size, void *user)
{
    injector *in = user;
    in->count++;
    if (in->fail_at && (in->count == in->fail_at || (in->persistent && in->count > in->fail_at))) {
        in->failures++;
        return NULL;
    }
    void *p = malloc(size);
    if (p) in->live++;
    return p;
}

static inline void inject_free(void *ptr, void *user)
{
    injector *in = user;
    if (!ptr) return;
    in->live--;
    free(ptr);
}

#endif
