/* gemma3_text and gemma3: Gemma 3 (Gemma3TextModel, Gemma3ForCausalLM,
 * Gemma3TextForSequenceClassification; Gemma3Model,
 * Gemma3ForConditionalGeneration and Gemma3ForSequenceClassification
 * around the text model): Gemma 2's layers
 * (four norms, x * (1 + w)) with an RMSNorm over head_dim on every query
 * and key head, attention scaled by query_pre_attn_scalar^-0.5 (no score
 * soft-capping: transformers 5 keeps attn_logit_softcapping but does not
 * apply it), five sliding layers to one full by default
 * (sliding_window_pattern, or layer_types), and one rope per layer type:
 * full layers rope_theta (1e6) with rope_scaling (linear x8 on 4B..27B),
 * sliding layers rope_local_base_freq (1e4).  Final logits are soft-capped
 * when final_logit_softcapping is set (Gemma3ForCausalLM only). */
#include "models/decoder.h"

#include <math.h>
#include <string.h>

static bool is_null(const model_config *c, const char *key)
{
    return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c->root, key));
}

/* The rope of one layer type, as Gemma3TextConfig standardizes it:
 * rope_parameters.<type> when given (else the default type), the full
 * layers' updated with rope_scaling, rope_theta defaulting to the
 * top-level rope_theta (full) or rope_local_base_freq (sliding). */
static bool read_type_rope(model_config *c, const decoder_spec *spec, bool full, rope_spec *out)
{
    const char *type = full ? "full_attention" : "sliding_attention";
    const cJSON *params = models_cfg_get(c, "rope_parameters");
    const cJSON *nested = cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, type) : NULL;
    if (nested && !cJSON_IsNull(nested) && !cJSON_IsObject(nested))
        return models_cfg_fail(c, "rope_parameters", "'%s' must be an object", type);
    cJSON *root = cJSON_CreateObject();
    cJSON *obj = cJSON_IsObject(nested) ? cJSON_Duplicate(nested, true) : cJSON_CreateObject();
    if (!root || !obj || !cJSON_AddItemToObject(root, "rope_parameters", obj)) {
        cJSON_Delete(root);
        if (!root) cJSON_Delete(obj);
        return mtk_error(c->ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory");
    }
    const cJSON *scaling = models_cfg_get(c, "rope_scaling");
    bool ok = true;
    if (full && scaling) {
        if (!cJSON_IsObject(scaling)) ok = models_cfg_fail(c, "rope_scaling", "expected an object or null");
        for (const cJSON *item = ok ? scaling->child : NULL; item; item = item->next) {
            cJSON_DeleteItemFromObjectCaseSensitive(obj, item->string);
            ok = ok && cJSON_AddItemToObject(obj, item->string, cJSON_Duplicate(item, true));
        }
    }
    if (ok && !cJSON_GetObjectItemCaseSensitive(obj, "rope_theta")) {
        double theta = full ? models_cfg_float(c, "rope_theta", 1000000.0)
                            : models_cfg_float(c, "rope_local_base_freq", 10000.0);
        ok = cJSON_AddNumberToObject(obj, "rope_theta", theta) != NULL;
    }
    const cJSON *max_pos = cJSON_GetObjectItemCaseSensitive(c->root, "max_position_embeddings");
    if (ok && max_pos) ok = cJSON_AddItemToObject(root, "max_position_embeddings", cJSON_Duplicate(max_pos, true));
    if (ok && models_cfg_ok(c)) {
        model_config sub = *c;
        sub.root = root;
        decoder_spec s = *spec;
        ok = models_decoder_read_rope(&sub, &s, 10000.0);
        *out = s.rope;
    } else if (models_cfg_ok(c)) {
        ok = mtk_error(c->ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory");
    }
    cJSON_Delete(root);
    return ok && models_cfg_ok(c);
}

/* Gemma3TextConfig's defaults for the sizes a config may leave out (the
 * text_config of the published 4B..27B configs has no vocab_size), added
 * to the config so that the common reader finds them. */
static bool fill_class_defaults(model_config *c)
{
    static const struct {
        const char *key;
        double value;
    } sizes[] = { { "vocab_size", 262208 },       { "hidden_size", 2304 },        { "intermediate_size", 9216 },
                  { "num_hidden_layers", 26 },    { "num_attention_heads", 8 } };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!cJSON_GetObjectItemCaseSensitive(c->root, sizes[i].key) &&
            !cJSON_AddNumberToObject(c->root, sizes[i].key, sizes[i].value))
            return mtk_error(c->ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory");
    return true;
}

mtk_module *models_family_gemma3_text_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 4, .head_dim = 256, .eps = 1e-6, .tie_embeddings = true,
                                               .act = "gelu_pytorch_tanh", .pad_token_id = 0,
                                               .rope_theta = 1000000.0 };
    decoder_spec spec;
    if (!fill_class_defaults(c) || !models_decoder_read_common(c, &spec, "Gemma3", &defaults)) return NULL;
    if (models_cfg_bool(c, "use_bidirectional_attention", false))
        return mtk_error(c->ctx, MTK_ERR_NOT_IMPLEMENTED,
                         "%s: field 'use_bidirectional_attention': bidirectional attention is not modelled",
                         c->origin),
               NULL;
    if (is_null(c, "sliding_window"))
        return models_cfg_fail(c, "sliding_window", "must be set: Gemma 3's sliding layers need a window"), NULL;
    if (!models_decoder_read_windows(c, &spec, WINDOW_PATTERN, 4096)) return NULL;
    spec.act = models_cfg_string(c, "hidden_activation", "gelu_pytorch_tanh");
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.norm_plus_one = true;
    spec.scaled_embedding = true;
    spec.sandwich_norms = true;
    spec.qk_norm = true;
    spec.model_name = "Gemma3TextModel";
    double scalar = models_cfg_float(c, "query_pre_attn_scalar", 256);
    spec.final_softcap = models_cfg_float(c, "final_logit_softcapping", 0);
    if (!models_cfg_ok(c)) return NULL;
    if (!(scalar > 0)) return models_cfg_fail(c, "query_pre_attn_scalar", "must be positive, got %g", scalar), NULL;
    if (spec.final_softcap < 0)
        return models_cfg_fail(c, "final_logit_softcapping", "must be positive or null, got %g", spec.final_softcap),
               NULL;
    spec.attn_scale = 1.0 / sqrt(scalar);
    /* the layer types present, each with its rope (full first, as sorted) */
    spec.local_rope_on = true;
    for (int64_t i = 0; i < spec.layers; i++)
        spec.rope_types |= spec.layer_window && spec.layer_window[i] ? DECODER_MASK_SLIDING : DECODER_MASK_FULL;
    if (!read_type_rope(c, &spec, true, &spec.rope) || !read_type_rope(c, &spec, false, &spec.local_rope))
        return NULL;
    return models_decoder_build(c, &spec, architecture);
}

/* gemma3's vision parts: a SigLIP tower (a siglip_vision_model
 * vision_config) and Gemma3MultiModalProjector. */
static bool gemma3_vision(model_config *c, model_config *vision, int64_t text_hidden, mtk_module **tower,
                          mtk_module **projector)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(vision->root, "model_type");
    if (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "siglip_vision_model") == 0))
        return models_cfg_fail(c, "vision_config.model_type", "expected 'siglip_vision_model'");
    *tower = models_siglip_vision(vision);
    *projector = *tower ? models_gemma3_projector(c, vision, text_hidden) : NULL;
    return *projector != NULL;
}

mtk_module *models_family_gemma3_build(model_config *c, const char *architecture)
{
    return models_decoder_build_multimodal(c, architecture, "Gemma3", models_family_gemma3_text_build, "gemma3_text",
                                           "Gemma3TextModel", gemma3_vision);
}
