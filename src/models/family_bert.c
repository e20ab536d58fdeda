/* PLACEHOLDER written by the zoo infrastructure so the family table links;
 * the bert family's engineer replaces this file. */
#include "models/config.h"

mtk_module *family_bert_build(model_config *c, const char *architecture)
{
    mtk_error(c->ctx, MTK_ERR_NOT_IMPLEMENTED, "%s: the bert family (%s) is not built yet", c->origin, architecture);
    return NULL;
}
