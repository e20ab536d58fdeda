/* The op table, assembled from the family lists, and name lookup. */
#include "ops/registry.h"

#include <string.h>

static const mtk_op_def op_table[] = {
#define MTK_OP(ID, name, sig, meta, cpu, cost, flags, info) { name, sig, meta, cpu, cost, flags, info },
#include "ops/list_all.h"
#undef MTK_OP
    { NULL, NULL, NULL, NULL, NULL, 0, NULL } /* keeps the array non-empty */
};

_Static_assert(sizeof op_table / sizeof op_table[0] == (size_t)OPID_COUNT + 1,
               "op table and op id enum disagree");

int32_t mtk_op_count(void) { return (int32_t)OPID_COUNT; }

const mtk_op_def *mtk_op_at(int32_t i)
{
    return i >= 0 && i < (int32_t)OPID_COUNT ? &op_table[i] : NULL;
}

const mtk_op_def *mtk_op_by_id(mtk_op_id id) { return &op_table[id]; }

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
    for (int32_t i = 0; i < (int32_t)OPID_COUNT; i++)
        if (strcmp(op_table[i].name, name) == 0) return &op_table[i];
    return NULL;
}
