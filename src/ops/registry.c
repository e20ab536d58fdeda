/* The op table, assembled from the family lists, and name lookup (binary
 * search over the names, sorted once). */
#include "ops/registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const mtk_op_def op_table[] = {
#define MTK_OP(ID, ...) { __VA_ARGS__ },
#include "ops/list_all.h"
#undef MTK_OP
    { .name = NULL } /* keeps the array non-empty */
};

_Static_assert(sizeof op_table / sizeof op_table[0] == (size_t)OPID_COUNT + 1,
               "op table and op id enum disagree");

int32_t mtk_op_count(void) { return (int32_t)OPID_COUNT; }

const mtk_op_def *mtk_op_at(int32_t i)
{
    return i >= 0 && i < (int32_t)OPID_COUNT ? &op_table[i] : NULL;
}

const mtk_op_def *mtk_op_by_id(mtk_op_id id) { return &op_table[id]; }

/* Row indices sorted by name, built once (thread-safe) for binary search. */
static int32_t by_name[OPID_COUNT + 1];
static pthread_once_t by_name_once = PTHREAD_ONCE_INIT;

static int compare_rows(const void *a, const void *b)
{
    return strcmp(op_table[*(const int32_t *)a].name, op_table[*(const int32_t *)b].name);
}

static void sort_names(void)
{
    for (int32_t i = 0; i < (int32_t)OPID_COUNT; i++) by_name[i] = i;
    qsort(by_name, (size_t)OPID_COUNT, sizeof *by_name, compare_rows);
}

const mtk_op_def *mtk_op_find(const char *name)
{
    static const char *const prefixes[] = { "torch.nn.functional.", "torch.", "F.", "nn.functional." };
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
        size_t n = strlen(prefixes[p]);
        if (strncmp(name, prefixes[p], n) == 0) {
            name += n;
            break;
        }
    }
    pthread_once(&by_name_once, sort_names);
    size_t lo = 0, hi = (size_t)OPID_COUNT;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, op_table[by_name[mid]].name);
        if (c == 0) return &op_table[by_name[mid]];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}
