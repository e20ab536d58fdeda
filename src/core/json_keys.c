/* Duplicate keys in parsed JSON: each object's member names are sorted
 * and neighbours compared, then every member is searched in turn. */
#include "core/json_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_key(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The first key of `obj`'s own members that appears twice, or NULL. */
static const char *duplicate_member(const cJSON *obj)
{
    size_t n = 0;
    for (const cJSON *m = obj->child; m; m = m->next) n++;
    if (n < 2) return NULL;
    const cJSON **sorted = malloc(n * sizeof *sorted);
    if (!sorted) { /* out of memory: pairwise, slower but still an answer */
        for (const cJSON *a = obj->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (strcmp(a->string, b->string) == 0) return a->string;
        return NULL;
    }
    size_t i = 0;
    for (const cJSON *m = obj->child; m; m = m->next) sorted[i++] = m;
    qsort(sorted, n, sizeof *sorted, by_key);
    const char *dup = NULL;
    for (i = 1; !dup && i < n; i++)
        if (strcmp(sorted[i - 1]->string, sorted[i]->string) == 0) dup = sorted[i]->string;
    free(sorted);
    return dup;
}

/* Appends ".key" ("key" at the start), or "[index]" when key is NULL, to
 * where[0..len); returns the new length (truncated to fit). */
static size_t append(char *where, size_t cap, size_t len, const char *key, int index)
{
    if (len + 1 >= cap) return len;
    int n = key ? snprintf(where + len, cap - len, "%s%s", len ? "." : "", key)
                : snprintf(where + len, cap - len, "[%d]", index);
    size_t added = n > 0 ? (size_t)n : 0;
    return len + added < cap ? len + added : cap - 1;
}

/* Depth-first; cJSON's parser bounds the depth (CJSON_NESTING_LIMIT). */
static bool find(const cJSON *node, char *where, size_t cap, size_t len)
{
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node)) return false;
    if (cJSON_IsObject(node)) {
        const char *dup = duplicate_member(node);
        if (dup) {
            append(where, cap, len, dup, 0);
            return true;
        }
    }
    int index = 0;
    for (const cJSON *child = node->child; child; child = child->next, index++) {
        size_t at = append(where, cap, len, cJSON_IsObject(node) ? child->string : NULL, index);
        if (find(child, where, cap, at)) return true;
        where[len] = '\0';
    }
    return false;
}

bool json_find_duplicate_key(const cJSON *root, char *where, size_t cap)
{
    if (cap == 0) return false;
    where[0] = '\0';
    return root && find(root, where, cap, 0);
}
