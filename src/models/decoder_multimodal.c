/* The text model inside a multimodal config (gemma3, mistral3): the
 * family of its text_config builds the language model, wrapped as
 * transformers 5 nests it in <Prefix>ForConditionalGeneration
 * (model.language_model.*, lm_head).  The vision tower and the
 * multi-modal projector are not built; the summary says so. */
#include "models/decoder.h"

#include <stdio.h>
#include <string.h>

static const char vision_note[] =
    "the vision tower and multi-modal projector (vision_config) are not modelled: parameters, FLOPs and memory are "
    "the text model's (model.language_model, lm_head)";

mtk_module *models_decoder_build_multimodal(model_config *c, const char *architecture, const char *prefix,
                                            model_family_builder text_build, const char *text_type,
                                            const char *text_base)
{
    cJSON *text = cJSON_GetObjectItemCaseSensitive(c->root, "text_config");
    if (!text || cJSON_IsNull(text)) return models_cfg_fail(c, NULL, "missing required field 'text_config'"), NULL;
    if (!cJSON_IsObject(text)) return models_cfg_fail(c, "text_config", "expected an object"), NULL;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(text, "model_type");
    if (type && !(cJSON_IsString(type) && strcmp(type->valuestring, text_type) == 0))
        return models_cfg_fail(c, "text_config.model_type", "expected '%s'", text_type), NULL;
    /* the attention implementation asked of the whole model is the text model's */
    const cJSON *attn = cJSON_GetObjectItemCaseSensitive(c->root, "_attn_implementation");
    if (cJSON_IsString(attn)) {
        cJSON_DeleteItemFromObjectCaseSensitive(text, "_attn_implementation");
        if (!cJSON_AddStringToObject(text, "_attn_implementation", attn->valuestring))
            return mtk_error(c->ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory"), NULL;
    }
    size_t n = strlen(c->origin) + 16;
    char *origin = mtk_ctx_alloc(c->ctx, n);
    if (!origin) return NULL;
    snprintf(origin, n, "%s: text_config", c->origin);
    model_config sub = { .ctx = c->ctx, .root = text, .origin = origin, .model_type = text_type,
                         .architecture = text_base, .dtype = c->dtype };
    mtk_module *language_model = text_build(&sub, text_base);
    for (int32_t i = 0; i < sub.nnotes; i++) models_cfg_note(c, sub.notes[i]);
    bool tie = models_cfg_bool(c, "tie_word_embeddings", true);
    if (!language_model || !models_cfg_ok(c)) return NULL;
    models_cfg_note(c, vision_note);
    return models_decoder_wrap_text(c, language_model, prefix, architecture, tie);
}
