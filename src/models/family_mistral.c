/* placeholder until the mistral family lands */
#include "models/config.h"

mtk_module *family_mistral_build(model_config *c, const char *architecture)
{
    mtk_error(c->ctx, MTK_ERR_NOT_IMPLEMENTED, "%s: the mistral family (%s) is not built yet", c->origin, architecture);
    return NULL;
}
