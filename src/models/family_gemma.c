/* placeholder until the gemma family lands */
#include "models/config.h"

mtk_module *family_gemma_build(model_config *c, const char *architecture)
{
    mtk_error(c->ctx, MTK_ERR_NOT_IMPLEMENTED, "%s: the gemma family (%s) is not built yet", c->origin, architecture);
    return NULL;
}
