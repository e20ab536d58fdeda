/* Duplicate keys in parsed JSON (internal).  cJSON keeps every member of
 * an object, and its lookups answer the first of two equal keys, while
 * Python's json keeps the last: the same config.json or index would be
 * two different documents.  mtk refuses such documents instead. */
#ifndef MTK_CORE_JSON_KEYS_H
#define MTK_CORE_JSON_KEYS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* Finds a key that appears twice in one object anywhere in `root` (every
 * depth).  Returns false when there is none; true with the duplicated
 * key's place written into `where` (cap bytes, truncated to fit), as a
 * path of keys and list indexes ("rope_scaling.factor", "layers[2].x"),
 * on the first duplicate found.  O(n log n) in the members of each
 * object; on out of memory it checks that object pairwise instead. */
bool json_find_duplicate_key(const cJSON *root, char *where, size_t cap);

#endif
