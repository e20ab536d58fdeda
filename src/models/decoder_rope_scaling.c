/* The rope scalings with an attention factor: yarn (YaRN: a ramp between
 * interpolated and extrapolated frequencies, Qwen2.5's long context) and
 * longrope (LongRoPE: per-frequency factors, short ones up to the
 * pretraining length and long ones past it: Phi-3.5, Phi-4-mini).  Both
 * scale cos and sin by an attention factor, the config's or the one
 * transformers derives from the scaling factor. */
#include "models/decoder.h"

#include <math.h>
#include <stdio.h>

/* The original (pretraining) length: a top-level
 * original_max_position_embeddings wins (Phi-3 keeps it there, and its
 * config class has one by default), then the rope object's, then
 * max_position_embeddings. */
static int64_t original_length(model_config *c, const decoder_spec *spec, const cJSON *obj, const char *obj_name)
{
    int64_t in_obj = models_cfg_obj_int(c, obj, obj_name, "original_max_position_embeddings", spec->rope.max_position);
    int64_t dflt = spec->rope_original_max > 0 ? spec->rope_original_max : in_obj;
    return models_cfg_int(c, "original_max_position_embeddings", dflt);
}

/* factor when given, else max_position / original (both types accept a
 * null factor that way). */
static double scaling_factor(model_config *c, const rope_spec *r, const cJSON *obj, const char *obj_name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, "factor");
    if (!f || cJSON_IsNull(f)) return (double)r->max_position / (double)r->original_max_position;
    return models_cfg_obj_float(c, obj, obj_name, "factor", 1.0);
}

/* A list of dim / 2 numbers, as floats in the arena. */
static const float *factor_list(model_config *c, const cJSON *obj, const char *obj_name, const char *key, int64_t n)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!list || cJSON_IsNull(list))
        return models_cfg_fail(c, NULL, "missing required field '%s.%s' (rope type 'longrope')", obj_name, key), NULL;
    char field[64];
    snprintf(field, sizeof field, "%s.%s", obj_name, key);
    if (!cJSON_IsArray(list)) return models_cfg_fail(c, field, "expected a list of numbers"), NULL;
    if (cJSON_GetArraySize(list) != n)
        return models_cfg_fail(c, field, "has %d values; the rotary embedding has %lld frequencies", cJSON_GetArraySize(list),
                        (long long)n),
               NULL;
    float *out = mtk_ctx_alloc(c->ctx, sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!out) return NULL;
    int64_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, list)
    {
        if (!cJSON_IsNumber(item) || !(item->valuedouble > 0))
            return models_cfg_fail(c, field, "value %lld must be a positive number", (long long)i), NULL;
        out[i++] = (float)item->valuedouble;
    }
    return out;
}

static double yarn_mscale(double scale, double mscale)
{
    return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

bool models_decoder_read_rope_scaling(model_config *c, decoder_spec *spec, const cJSON *obj, const char *obj_name)
{
    rope_spec *r = &spec->rope;
    r->original_max_position = original_length(c, spec, obj, obj_name);
    if (!models_cfg_ok(c)) return false;
    if (r->original_max_position <= 0) return models_cfg_fail(c, "original_max_position_embeddings", "must be positive");
    if (r->kind == ROPE_YARN) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, "factor");
        if (!f) return models_cfg_fail(c, NULL, "missing required field '%s.factor' (rope type 'yarn')", obj_name);
    }
    r->factor = scaling_factor(c, r, obj, obj_name);
    double attention = models_cfg_obj_float(c, obj, obj_name, "attention_factor", NAN);
    if (!models_cfg_ok(c)) return false;
    if (!(r->factor > 0)) return models_cfg_fail(c, obj_name, "factor must be positive, got %g", r->factor);
    if (!isnan(attention) && !(attention > 0))
        return models_cfg_fail(c, obj_name, "attention_factor must be positive, got %g", attention);
    if (r->kind == ROPE_YARN) {
        double mscale = models_cfg_obj_float(c, obj, obj_name, "mscale", 0.0);
        double mscale_all_dim = models_cfg_obj_float(c, obj, obj_name, "mscale_all_dim", 0.0);
        /* null or 0 means the default, as `or` does in transformers */
        r->beta_fast = models_cfg_obj_float(c, obj, obj_name, "beta_fast", 0.0);
        r->beta_slow = models_cfg_obj_float(c, obj, obj_name, "beta_slow", 0.0);
        if (r->beta_fast == 0) r->beta_fast = 32;
        if (r->beta_slow == 0) r->beta_slow = 1;
        const cJSON *truncate = cJSON_GetObjectItemCaseSensitive(obj, "truncate");
        r->truncate = !(truncate && cJSON_IsFalse(truncate));
        if (isnan(attention))
            attention = mscale != 0 && mscale_all_dim != 0
                            ? yarn_mscale(r->factor, mscale) / yarn_mscale(r->factor, mscale_all_dim)
                            : yarn_mscale(r->factor, 1.0);
    } else {
        r->short_factor = factor_list(c, obj, obj_name, "short_factor", r->dim / 2);
        r->long_factor = r->short_factor ? factor_list(c, obj, obj_name, "long_factor", r->dim / 2) : NULL;
        if (!r->long_factor) return false;
        if (isnan(attention))
            attention = r->factor <= 1.0 ? 1.0
                                         : sqrt(1.0 + log(r->factor) / log((double)r->original_max_position));
    }
    r->attention_factor = attention;
    return models_cfg_ok(c);
}

/* yarn's correction dimension for `rotations` full turns over the original
 * length. */
static double correction_dim(double rotations, double dim, double base, double length)
{
    return dim * log(length / (rotations * 2 * M_PI)) / (2 * log(base));
}

void models_decoder_rope_scaled_inv_freq(const rope_spec *r, bool long_factors, float *out)
{
    int64_t half = r->dim / 2;
    if (r->kind == ROPE_LONGROPE) {
        const float *ext = long_factors ? r->long_factor : r->short_factor;
        for (int64_t i = 0; i < half; i++) {
            float exponent = (float)(2 * i) / (float)r->dim;
            out[i] = 1.0f / (ext[i] * powf((float)r->theta, exponent));
        }
        return;
    }
    /* yarn */
    double dim = (double)r->dim, length = (double)r->original_max_position;
    double low = correction_dim(r->beta_fast, dim, r->theta, length);
    double high = correction_dim(r->beta_slow, dim, r->theta, length);
    if (r->truncate) low = floor(low), high = ceil(high);
    if (low < 0) low = 0;
    if (high > dim - 1) high = dim - 1;
    if (low == high) high += 0.001; /* no singularity */
    float factor = (float)r->factor;
    for (int64_t i = 0; i < half; i++) {
        float pos_freq = powf((float)r->theta, (float)(2 * i) / (float)r->dim);
        float extrapolation = 1.0f / pos_freq, interpolation = 1.0f / (factor * pos_freq);
        float ramp = ((float)i - (float)low) / (float)(high - low);
        ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
        float keep = 1.0f - ramp; /* the extrapolated share */
        out[i] = interpolation * (1.0f - keep) + extrapolation * keep;
    }
}
