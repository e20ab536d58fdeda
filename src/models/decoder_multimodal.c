/* The multimodal configs (gemma3, mistral3): the family of the
 * text_config builds the language model, the family's vision builder the
 * vision tower and projector, wrapped as transformers 5 nests
 * them in <Prefix>ForConditionalGeneration (model.vision_tower.*,
 * model.multi_modal_projector.*, model.language_model.*, lm_head), or in
 * <Prefix>ForSequenceClassification (model, score: the text model's pad
 * token pools each row, as get_text_config().pad_token_id does).  The
 * forward takes token ids; the summary says what is left out. */
#include "models/decoder.h"

#include <stdio.h>
#include <string.h>

static const char image_note[] =
    "image inputs are not modelled: the forward takes token ids and, as transformers without pixel_values, does not "
    "run the vision tower (its parameters are counted)";

mtk_module *models_decoder_build_multimodal(model_config *c, const char *architecture, const char *prefix,
                                            model_family_builder text_build, const char *text_type,
                                            const char *text_base, multimodal_vision_builder vision_build)
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
    /* an absent vision_config is the vision class's defaults */
    cJSON *vision_json = cJSON_GetObjectItemCaseSensitive(c->root, "vision_config");
    cJSON *empty = NULL;
    if (!vision_json || cJSON_IsNull(vision_json)) vision_json = empty = cJSON_CreateObject();
    if (!vision_json) return mtk_error(c->ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory"), NULL;
    if (!cJSON_IsObject(vision_json)) return models_cfg_fail(c, "vision_config", "expected an object"), NULL;
    n = strlen(c->origin) + 16;
    char *vision_origin = mtk_ctx_alloc(c->ctx, n);
    if (vision_origin) snprintf(vision_origin, n, "%s: vision_config", c->origin);
    model_config vision = { .ctx = c->ctx, .root = vision_json, .origin = vision_origin ? vision_origin : c->origin,
                            .dtype = c->dtype };
    decoder_parts parts;
    models_decoder_parts_of(language_model, &parts);
    const mtk_tensor *embed = mtk_module_param_at(parts.embed, 0, NULL); /* (vocab, hidden) */
    mtk_module *tower = NULL, *projector = NULL;
    bool ok = embed && vision_build(c, &vision, embed->shape[1], &tower, &projector);
    cJSON_Delete(empty);
    if (!ok) return NULL;
    models_cfg_note(c, image_note);
    mtk_module *model = models_decoder_wrap_text(c, language_model, tower, projector, prefix, architecture, tie);
    if (!model || !models_decoder_is_classifier(architecture)) return model;
    classifier_head head = { "model", embed->shape[1], parts.padding_idx, "score", true, 0.0 };
    return models_classifier(c, model, architecture, &head);
}
