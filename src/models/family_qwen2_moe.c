/* placeholder until the qwen2_moe family lands */
#include "models/config.h"

mtk_module *family_qwen2_moe_build(model_config *c, const char *architecture)
{
    mtk_error(c->ctx, MTK_ERR_NOT_IMPLEMENTED, "%s: the qwen2_moe family (%s) is not built yet", c->origin, architecture);
    return NULL;
}
