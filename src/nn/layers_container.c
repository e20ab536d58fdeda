/* Containers: Sequential, ModuleList, ModuleDict. */
#include "nn/layers.h"

#include <string.h>

/* Children named "0", "1", ...: the next index is the child count. */
static bool append_indexed(mtk_module *list, mtk_module *m)
{
    if (!list || !m) return false;
    char name[24];
    snprintf(name, sizeof name, "%d", (int)mtk_module_child_count(list));
    return mtk_module_add(list, name, m);
}

/* Each child's outputs are the next child's inputs. */
static bool sequential_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *cur[MTK_MODULE_MAX_IO];
    int32_t ncur = io->nin;
    memcpy(cur, io->in, sizeof cur);
    for (int32_t i = 0; i < mtk_module_child_count(m); i++) {
        mtk_module_io step = { .nin = ncur };
        memcpy(step.in, cur, sizeof step.in);
        if (!mtk_module_call(mtk_module_child_at(m, i, NULL), &step)) return false;
        ncur = step.nout;
        memcpy(cur, step.out, sizeof cur);
    }
    memcpy(io->out, cur, sizeof io->out);
    io->nout = ncur;
    return true;
}

static const mtk_module_type sequential_type = { "Sequential", sequential_forward, NULL, NULL };

mtk_module *mtk_nn_sequential(mtk_ctx *ctx, int32_t n, mtk_module *const *modules)
{
    for (int32_t i = 0; i < n; i++)
        if (!modules[i]) return NULL; /* a failed constructor: its error is set */
    mtk_module *seq = mtk_module_new(ctx, &sequential_type, 0);
    for (int32_t i = 0; seq && i < n; i++)
        if (!append_indexed(seq, modules[i])) return NULL;
    return seq;
}

static bool check_kind(mtk_module *m, const mtk_module_type *type, const char *what)
{
    if (!m) return false;
    if (mtk_module_type_of(m) == type) return true;
    return mtk_error(mtk_module_ctx(m), MTK_ERR_INVALID_ARGUMENT, "%s: the module is a %s, not a %s", what,
                     mtk_module_type_name(m), type->name);
}

bool mtk_nn_sequential_append(mtk_module *seq, mtk_module *m)
{
    return check_kind(seq, &sequential_type, "sequential_append") && append_indexed(seq, m);
}

/* ModuleList and ModuleDict have no forward: calling one is an error. */
static const mtk_module_type module_list_type = { "ModuleList", NULL, NULL, NULL };
static const mtk_module_type module_dict_type = { "ModuleDict", NULL, NULL, NULL };

mtk_module *mtk_nn_module_list(mtk_ctx *ctx) { return mtk_module_new(ctx, &module_list_type, 0); }

bool mtk_nn_module_list_append(mtk_module *list, mtk_module *m)
{
    return check_kind(list, &module_list_type, "module_list_append") && append_indexed(list, m);
}

mtk_module *mtk_nn_module_dict(mtk_ctx *ctx) { return mtk_module_new(ctx, &module_dict_type, 0); }

bool mtk_nn_module_dict_set(mtk_module *dict, const char *key, mtk_module *m)
{
    return check_kind(dict, &module_dict_type, "module_dict_set") && m && mtk_module_add(dict, key, m);
}
