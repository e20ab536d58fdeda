/* The Pixtral vision tower (PixtralVisionModel, inside mistral3) and
 * Mistral 3's multi-modal projector, with transformers 5's keys, shapes
 * and buffers:
 *   patch_conv (Conv2d, stride = patch, no bias), ln_pre (PixtralRMSNorm);
 *   transformer.layers.N: attention_norm, feed_forward (PixtralMLP:
 *     gate/up/down_proj), attention (k/v/q/o_proj, no bias), ffn_norm;
 *   patch_positional_embedding: inv_freq, original_inv_freq (axial 2-D
 *     rope: head_dim / 2 frequencies, even ones then odd ones; float32,
 *     non-persistent);
 *   Mistral3MultiModalProjector: norm, patch_merger.merging_layer,
 *     linear_1, act, linear_2.
 * Only the parameters and buffers are modelled: image inputs (Pixtral's
 * 2-D rope over variable image sizes, the patch merger) are not, and these
 * modules' forwards say so.  The model's forward takes token ids and does
 * not run them, as transformers without pixel_values. */
#include "models/blocks.h"
#include "models/decoder.h"

#include <math.h>

static bool not_modelled(mtk_module *m, mtk_module_io *io)
{
    (void)io;
    return mtk_error(mtk_module_ctx(m), MTK_ERR_NOT_IMPLEMENTED, "%s: image inputs are not modelled",
                     mtk_module_type_name(m));
}

static const mtk_module_type model_type = { "PixtralVisionModel", not_modelled, NULL, NULL };
static const mtk_module_type transformer_type = { "PixtralTransformer", not_modelled, NULL, NULL };
static const mtk_module_type layer_type = { "PixtralAttentionLayer", not_modelled, NULL, NULL };
static const mtk_module_type attention_type = { "PixtralAttention", not_modelled, NULL, NULL };
static const mtk_module_type projector_type = { "Mistral3MultiModalProjector", not_modelled, NULL, NULL };
static const mtk_module_type merger_type = { "Mistral3PatchMerger", not_modelled, NULL, NULL };

typedef struct rope_config {
    double theta;
    int64_t head_dim;
} rope_config;

/* inv_freq = 1 / theta ** (arange(0, D, 2) / D), its even entries then
 * its odd ones (float32 arithmetic) */
static bool rope_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    const rope_config *c = mtk_module_config(m);
    int64_t half = c->head_dim / 2;
    for (int32_t i = 0; i < mtk_module_buffer_count(m); i++) {
        mtk_tensor *t = mtk_module_buffer_at(m, i, NULL, NULL);
        if (!t || mtk_tensor_is_meta(t) || t->dtype != MTK_FLOAT32 || !mtk_tensor_is_contiguous(t)) continue;
        float *out = mtk_tensor_data(t);
        for (int64_t k = 0, at = 0; k < 2; k++)
            for (int64_t j = k; j < half; j += 2)
                out[at++] = 1.0f / powf((float)c->theta, (float)(2 * j) / (float)c->head_dim);
    }
    return true;
}

static const mtk_module_type rope_type = { "PixtralVisionRotaryEmbedding", not_modelled, rope_reset, NULL };

mtk_module *models_pixtral_vision(model_config *c)
{
    mtk_ctx *ctx = c->ctx;
    int64_t hidden = models_cfg_positive(c, "hidden_size", 1024);
    int64_t intermediate = models_cfg_positive(c, "intermediate_size", 4096);
    int64_t layers = models_cfg_int(c, "num_hidden_layers", 24);
    int64_t heads = models_cfg_positive(c, "num_attention_heads", 16);
    int64_t head_dim = models_cfg_positive(c, "head_dim", hidden / (heads ? heads : 1));
    int64_t channels = models_cfg_positive(c, "num_channels", 3);
    int64_t patch = models_cfg_positive(c, "patch_size", 16);
    const char *act = models_cfg_string(c, "hidden_act", "gelu");
    const cJSON *rope = models_cfg_get(c, "rope_parameters");
    double theta = models_cfg_obj_float(c, rope, "rope_parameters", "rope_theta", models_cfg_float(c, "rope_theta", 10000.0));
    if (!models_cfg_ok(c) || !models_cfg_check_layers(c, "num_hidden_layers", layers)) return NULL;
    if (head_dim < 2 || head_dim % 2)
        return models_cfg_fail(c, "head_dim", "must be even and >= 2, got %lld", (long long)head_dim), NULL;
    decoder_types *t = mtk_ctx_alloc(ctx, sizeof *t);
    if (!t || !models_decoder_types_init(ctx, t, "Pixtral")) return NULL;
    decoder_spec spec = { .hidden = hidden, .eps = 1e-5, .act = act };
    mtk_conv_options conv = mtk_conv_defaults();
    conv.stride[0] = conv.stride[1] = patch;
    conv.bias = false;
    int64_t kernel[2] = { patch, patch }, half = head_dim / 2;
    mtk_module *m = mtk_module_new(ctx, &model_type, 0), *transformer = mtk_module_new(ctx, &transformer_type, 0);
    mtk_module *list = mtk_nn_module_list(ctx), *pos = mtk_module_new(ctx, &rope_type, sizeof(rope_config));
    if (!m || !transformer || !list || !pos) return NULL;
    *(rope_config *)mtk_module_config(pos) = (rope_config){ theta, head_dim };
    int64_t q_size = hidden; /* the projections are hidden x hidden, whatever head_dim */
    for (int64_t i = 0; i < layers; i++) {
        mtk_module *layer = mtk_module_new(ctx, &layer_type, 0), *attn = mtk_module_new(ctx, &attention_type, 0);
        bool ok = layer && attn && mtk_module_add(attn, "k_proj", mtk_nn_linear(ctx, hidden, q_size, false)) &&
                  mtk_module_add(attn, "v_proj", mtk_nn_linear(ctx, hidden, q_size, false)) &&
                  mtk_module_add(attn, "q_proj", mtk_nn_linear(ctx, hidden, q_size, false)) &&
                  mtk_module_add(attn, "o_proj", mtk_nn_linear(ctx, q_size, hidden, false)) &&
                  mtk_module_add(layer, "attention_norm", models_decoder_norm(ctx, t, &spec)) &&
                  mtk_module_add(layer, "feed_forward", models_decoder_mlp(ctx, t, &spec, intermediate)) &&
                  mtk_module_add(layer, "attention", mtk_module_finish(attn)) &&
                  mtk_module_add(layer, "ffn_norm", models_decoder_norm(ctx, t, &spec));
        if (!ok || !mtk_nn_module_list_append(list, mtk_module_finish(layer))) return NULL;
    }
    bool ok = mtk_module_new_buffer(pos, "inv_freq", &half, 1, MTK_FLOAT32, false) &&
              mtk_module_new_buffer(pos, "original_inv_freq", &half, 1, MTK_FLOAT32, false) &&
              mtk_module_add(m, "patch_conv", mtk_nn_conv(ctx, 2, channels, hidden, kernel, &conv)) &&
              mtk_module_add(m, "ln_pre", models_decoder_norm(ctx, t, &spec)) &&
              mtk_module_add(transformer, "layers", list) && mtk_module_add(m, "transformer", mtk_module_finish(transformer)) &&
              mtk_module_add(m, "patch_positional_embedding", mtk_module_finish(pos));
    return ok ? mtk_module_finish(m) : NULL;
}

mtk_module *models_mistral3_projector(model_config *c, model_config *vision, int64_t text_hidden, double text_eps)
{
    mtk_ctx *ctx = c->ctx;
    int64_t hidden = models_cfg_positive(vision, "hidden_size", 1024);
    int64_t merge = models_cfg_positive(c, "spatial_merge_size", 2);
    bool bias = models_cfg_bool(c, "multimodal_projector_bias", false);
    const char *act = models_cfg_string(c, "projector_hidden_act", "gelu");
    const cJSON *feature = models_cfg_get(c, "vision_feature_layer");
    int64_t features = cJSON_IsArray(feature) ? cJSON_GetArraySize(feature) : 1;
    if (!models_cfg_ok(c)) return NULL;
    if (features < 1) return models_cfg_fail(c, "vision_feature_layer", "must name at least one layer"), NULL;
    decoder_types *t = mtk_ctx_alloc(ctx, sizeof *t);
    if (!t || !models_decoder_types_init(ctx, t, "Mistral3")) return NULL;
    decoder_spec norm = { .hidden = hidden, .eps = text_eps };
    mtk_module *m = mtk_module_new(ctx, &projector_type, 0), *merger = mtk_module_new(ctx, &merger_type, 0);
    bool ok = m && merger &&
              mtk_module_add(merger, "merging_layer", mtk_nn_linear(ctx, hidden * merge * merge, hidden, false)) &&
              mtk_module_add(m, "norm", models_decoder_norm(ctx, t, &norm)) &&
              mtk_module_add(m, "patch_merger", mtk_module_finish(merger)) &&
              mtk_module_add(m, "linear_1", mtk_nn_linear(ctx, hidden * features, text_hidden, bias)) &&
              mtk_module_add(m, "act", mtk_nn_activation(ctx, act)) &&
              mtk_module_add(m, "linear_2", mtk_nn_linear(ctx, text_hidden, text_hidden, bias));
    return ok ? mtk_module_finish(m) : NULL;
}
