/* Sliding-window attention of the decoder families: which layers slide
 * (transformers 5's layer_types, or each family's rule when a config lists
 * none) and over how many tokens. */
#include "models/decoder.h"

#include <string.h>

static bool layer_slides(window_rule rule, int64_t i, bool use_sliding, int64_t max_window_layers, int64_t pattern)
{
    switch (rule) {
    case WINDOW_ALL: return true;
    case WINDOW_FROM: return use_sliding && i >= max_window_layers;
    case WINDOW_EVEN_BELOW: return use_sliding && i % 2 == 0 && i < max_window_layers;
    case WINDOW_EVEN: return i % 2 == 0;
    case WINDOW_PATTERN: return (i + 1) % pattern != 0;
    }
    return false;
}

bool models_decoder_read_windows(model_config *c, decoder_spec *spec, window_rule rule, int64_t default_window)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(c->root, "sliding_window");
    int64_t window = item && cJSON_IsNull(item) ? 0 : models_cfg_int(c, "sliding_window", default_window);
    bool use_sliding = models_cfg_bool(c, "use_sliding_window", false);
    int64_t max_window_layers = models_cfg_int(c, "max_window_layers", 28);
    int64_t pattern = rule == WINDOW_PATTERN ? models_cfg_positive(c, "sliding_window_pattern", 6) : 1;
    if (!models_cfg_ok(c)) return false;
    if (window < 0) return models_cfg_fail(c, "sliding_window", "must be positive or null, got %lld", (long long)window);
    /* qwen2 turns the window off unless use_sliding_window */
    if ((rule == WINDOW_FROM || rule == WINDOW_EVEN_BELOW) && !use_sliding) window = 0;
    /* the masks the model's forward builds: mistral's one kind, qwen2's
     * full one and a sliding one when a layer slides, both always for
     * qwen2_moe and gemma2 (qwen2_moe's window 0 without
     * use_sliding_window) */
    spec->mask_window = window;
    if (rule == WINDOW_ALL) spec->masks = window ? DECODER_MASK_SLIDING : DECODER_MASK_FULL;
    else if (rule == WINDOW_FROM) spec->masks = DECODER_MASK_FULL;
    else spec->masks = DECODER_MASK_FULL | DECODER_MASK_SLIDING;
    spec->layer_window = NULL;
    if (window == 0 || spec->layers == 0) return true;
    int64_t *w = mtk_ctx_alloc(c->ctx, (size_t)spec->layers * sizeof *w);
    if (!w) return false;
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(c->root, "layer_types");
    if (types && !cJSON_IsNull(types)) {
        if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != spec->layers)
            return models_cfg_fail(c, "layer_types", "must be a list of num_hidden_layers=%lld strings",
                            (long long)spec->layers);
        for (int64_t i = 0; i < spec->layers; i++) {
            const cJSON *t = cJSON_GetArrayItem(types, (int)i);
            if (!cJSON_IsString(t))
                return models_cfg_fail(c, "layer_types", "item %lld is not a string", (long long)i);
            w[i] = strcmp(t->valuestring, "sliding_attention") == 0 ? window : 0;
        }
    } else {
        for (int64_t i = 0; i < spec->layers; i++)
            w[i] = layer_slides(rule, i, use_sliding, max_window_layers, pattern) ? window : 0;
    }
    spec->layer_window = w;
    for (int64_t i = 0; i < spec->layers; i++)
        if (w[i]) spec->masks |= DECODER_MASK_SLIDING;
    return true;
}
