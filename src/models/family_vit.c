/* PLACEHOLDER written by the zoo infrastructure so the family table links;
 * the vit family's engineer replaces this file. */
#include "models/config.h"

mtk_module *family_vit_build(model_config *c, const char *architecture)
{
    mtk_error(c->ctx, MTK_ERR_NOT_IMPLEMENTED, "%s: the vit family (%s) is not built yet", c->origin, architecture);
    return NULL;
}
