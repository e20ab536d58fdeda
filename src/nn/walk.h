/* Traversal helpers shared inside src/nn. */
#ifndef MTK_NN_WALK_H
#define MTK_NN_WALK_H

#include "mtk/nn.h"
#include "nn/ptrset.h"

/* "prefix.name" (or "name" for an empty prefix) in the arena. */
char *nn_join_name(mtk_ctx *ctx, const char *prefix, const char *name);

/* Adds the tree under m to *st, each module and tensor once (`seen`
 * holds both). */
bool nn_collect_stats(mtk_module *m, ptrset *seen, mtk_param_stats *st);

#endif
