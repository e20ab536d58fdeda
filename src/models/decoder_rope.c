/* Rotary position embedding of the decoder families: the rope settings of
 * a config, and the <Prefix>RotaryEmbedding module whose non-persistent
 * float32 buffers inv_freq and original_inv_freq are computed as
 * transformers computes them (in float32 arithmetic) whenever the module
 * gets memory. */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- settings */

static const struct {
    const char *name;
    rope_kind kind;
} rope_kinds[] = {
    { "default", ROPE_DEFAULT }, { "linear", ROPE_LINEAR }, { "dynamic", ROPE_DYNAMIC }, { "llama3", ROPE_LLAMA3 },
    { "yarn", ROPE_YARN },       { "longrope", ROPE_LONGROPE },
};

#define ROPE_KIND_COUNT (sizeof rope_kinds / sizeof rope_kinds[0])

bool models_decoder_read_rope(model_config *c, decoder_spec *spec, double default_theta)
{
    rope_spec *r = &spec->rope;
    memset(r, 0, sizeof *r);
    /* transformers 5 writes rope_parameters; older configs rope_scaling
     * (or nothing) with rope_theta beside it */
    const char *obj_name = models_cfg_has(c, "rope_parameters") ? "rope_parameters" : "rope_scaling";
    const cJSON *obj = models_cfg_get(c, obj_name);
    if (obj && !cJSON_IsObject(obj)) return models_cfg_fail(c, obj_name, "expected an object or null");
    double theta = models_cfg_float(c, "rope_theta", default_theta);
    r->theta = models_cfg_obj_float(c, obj, obj_name, "rope_theta", theta);
    double partial = models_cfg_float(c, "partial_rotary_factor",
                                      spec->partial_rotary_default > 0 ? spec->partial_rotary_default : 1.0);
    partial = models_cfg_obj_float(c, obj, obj_name, "partial_rotary_factor", partial);
    const char *type = models_cfg_obj_string(c, obj, obj_name, "type", "default");
    type = models_cfg_obj_string(c, obj, obj_name, "rope_type", type);
    if (!models_cfg_ok(c)) return false;
    if (!(r->theta > 0)) return models_cfg_fail(c, "rope_theta", "must be positive, got %g", r->theta);
    if (!(partial > 0 && partial <= 1)) return models_cfg_fail(c, "partial_rotary_factor", "must be in (0, 1], got %g", partial);
    if (spec->rope_longrope_aliases && (strcmp(type, "su") == 0 || strcmp(type, "yarn") == 0)) type = "longrope";
    bool known = false;
    for (size_t i = 0; i < ROPE_KIND_COUNT; i++)
        if (strcmp(rope_kinds[i].name, type) == 0) r->kind = rope_kinds[i].kind, known = true;
    if (!known) {
        char field[64], names[160] = "";
        snprintf(field, sizeof field, "%s.rope_type", obj_name);
        for (size_t i = 0, at = 0; i < ROPE_KIND_COUNT && at < sizeof names; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", rope_kinds[i].name);
        return mtk_error(c->ctx, MTK_ERR_NOT_IMPLEMENTED, "%s: field '%s': rope type '%s' is not supported (supported: %s)",
                         c->origin, field, type, names);
    }
    r->max_position = models_cfg_positive(c, "max_position_embeddings", 2048);
    r->dim = (int64_t)((double)spec->attn.head_dim * partial);
    if (r->dim < 2 || r->dim % 2 != 0)
        return models_cfg_fail(c, "partial_rotary_factor", "gives %lld rotary dims of head_dim %lld; they must be even and >= 2",
                        (long long)r->dim, (long long)spec->attn.head_dim);
    r->attention_factor = 1.0;
    if (r->kind == ROPE_DEFAULT) return models_cfg_ok(c);
    if (r->kind == ROPE_YARN || r->kind == ROPE_LONGROPE) return models_decoder_read_rope_scaling(c, spec, obj, obj_name);
    const cJSON *factor = obj ? cJSON_GetObjectItemCaseSensitive(obj, "factor") : NULL;
    if (!factor || cJSON_IsNull(factor)) {
        char field[64];
        snprintf(field, sizeof field, "%s.factor", obj_name);
        return models_cfg_fail(c, NULL, "missing required field '%s' (rope type '%s')", field, type);
    }
    r->factor = models_cfg_obj_float(c, obj, obj_name, "factor", 1.0);
    if (models_cfg_ok(c) && !(r->factor >= 1.0) && r->kind != ROPE_LINEAR)
        return models_cfg_fail(c, obj_name, "factor must be >= 1, got %g", r->factor);
    if (models_cfg_ok(c) && !(r->factor > 0)) return models_cfg_fail(c, obj_name, "factor must be positive, got %g", r->factor);
    if (r->kind == ROPE_LLAMA3) {
        r->low_freq_factor = models_cfg_obj_float(c, obj, obj_name, "low_freq_factor", NAN);
        r->high_freq_factor = models_cfg_obj_float(c, obj, obj_name, "high_freq_factor", NAN);
        /* a top-level original_max_position_embeddings wins (Phi-3 style) */
        int64_t original = models_cfg_obj_int(c, obj, obj_name, "original_max_position_embeddings", r->max_position);
        r->original_max_position = models_cfg_int(c, "original_max_position_embeddings", original);
        if (!models_cfg_ok(c)) return false;
        if (isnan(r->low_freq_factor) || isnan(r->high_freq_factor))
            return models_cfg_fail(c, NULL, "missing required field '%s.%s' (rope type 'llama3')", obj_name,
                            isnan(r->low_freq_factor) ? "low_freq_factor" : "high_freq_factor");
        /* equal factors (Llama 4 Scout: 1 and 1) leave no medium band */
        if (!(r->high_freq_factor >= r->low_freq_factor) || !(r->low_freq_factor > 0))
            return models_cfg_fail(c, obj_name, "llama3 rope needs 0 < low_freq_factor <= high_freq_factor, got %g and %g",
                            r->low_freq_factor, r->high_freq_factor);
        if (r->original_max_position <= 0)
            return models_cfg_fail(c, "original_max_position_embeddings", "must be positive");
    }
    return models_cfg_ok(c);
}

/* --------------------------------------------------------------- inv_freq */

/* Fills out[dim / 2] as transformers' rope init functions do, in float32
 * arithmetic: 1 / theta ** (arange(0, dim, 2) / dim), then the type's
 * scaling. */
static void compute_inv_freq(const rope_spec *r, float *out)
{
    if (r->kind == ROPE_YARN || r->kind == ROPE_LONGROPE) {
        models_decoder_rope_scaled_inv_freq(r, false, out);
        return;
    }
    int64_t half = r->dim / 2;
    double base = r->theta;
    if (r->kind == ROPE_DYNAMIC) {
        /* at construction seq_len = max_position_embeddings */
        double dim = (double)r->dim;
        double seq = (double)r->max_position;
        base = base * pow(r->factor * seq / (double)r->max_position - (r->factor - 1.0), dim / (dim - 2.0));
    }
    for (int64_t i = 0; i < half; i++) {
        float exponent = (float)(2 * i) / (float)r->dim;
        out[i] = 1.0f / powf((float)base, exponent);
    }
    if (r->kind == ROPE_LINEAR)
        for (int64_t i = 0; i < half; i++) out[i] /= (float)r->factor;
    if (r->kind == ROPE_LLAMA3) {
        float factor = (float)r->factor, low = (float)r->low_freq_factor, high = (float)r->high_freq_factor;
        float old_len = (float)r->original_max_position;
        float low_wavelen = (float)((double)r->original_max_position / r->low_freq_factor);
        float high_wavelen = (float)((double)r->original_max_position / r->high_freq_factor);
        for (int64_t i = 0; i < half; i++) {
            float wavelen = (float)(2.0 * M_PI) / out[i];
            float llama = wavelen > low_wavelen ? out[i] / factor : out[i];
            float smooth = high > low ? (old_len / wavelen - low) / (high - low) : 0.0f;
            float smoothed = (1.0f - smooth) * llama / factor + smooth * llama;
            bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
            out[i] = medium ? smoothed : llama;
        }
    }
}

/* ----------------------------------------------------------------- module */

/* One rope per layer type (gemma3: full_attention, then sliding_attention,
 * those the layers use), each with two buffers; one for the others. */
typedef struct rotary_config {
    rope_spec rope[2];
    int32_t nropes;
} rotary_config;

/* Recomputes the buffers (cpu); meta ones have nothing to fill. */
static bool rotary_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    const rotary_config *cfg = mtk_module_config(m);
    for (int32_t i = 0; i < mtk_module_buffer_count(m); i++) {
        mtk_tensor *t = mtk_module_buffer_at(m, i, NULL, NULL);
        if (!t || mtk_tensor_is_meta(t) || t->dtype != MTK_FLOAT32 || !mtk_tensor_is_contiguous(t)) continue;
        compute_inv_freq(&cfg->rope[i / 2], mtk_tensor_data(t));
    }
    return true;
}

static bool rope_cos_sin(mtk_module *m, const rope_spec *rope, mtk_tensor *inv_freq, mtk_module_io *io,
                         mtk_tensor **cos_out, mtk_tensor **sin_out);

/* forward(x (B, S, hidden)[, positions (1, S) int64]) -> cos, sin (1, S,
 * dim) in x's dtype (float32 with keep_float32), for the positions (0..S-1
 * when not given); with two ropes (gemma3) the full layers' cos, sin, then
 * the sliding layers' (half_width, gpt_oss: dim / 2).  An interleaved
 * rope (llama4) gives its float32
 * freqs_cis (1, S, dim/2, 2) (rope_complex's) in both slots. */
static bool rotary_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    if (x->ndim < 2)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: expected hidden states (B, S, hidden), got %d dim%s",
                         mtk_module_type_name(m), (int)x->ndim, x->ndim == 1 ? "" : "s");
    const rotary_config *cfg = mtk_module_config(m);
    io->nout = 2 * cfg->nropes;
    for (int32_t j = 0; j < cfg->nropes; j++)
        if (!rope_cos_sin(m, &cfg->rope[j], mtk_module_buffer_at(m, 2 * j, NULL, NULL), io, &io->out[2 * j],
                          &io->out[2 * j + 1]))
            return false;
    return true;
}

/* cos, sin of one rope with its inv_freq buffer. */
static bool rope_cos_sin(mtk_module *m, const rope_spec *rope, mtk_tensor *inv_freq, mtk_module_io *io,
                         mtk_tensor **cos_out, mtk_tensor **sin_out)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    int64_t seq = x->shape[x->ndim - 2];
    if (rope->kind == ROPE_LONGROPE && seq > rope->original_max_position) {
        /* longer than pretraining: the long factors (transformers swaps them into inv_freq) */
        int64_t half = rope->dim / 2;
        if (!mtk_ctx_push_device(ctx, inv_freq->device)) return false;
        inv_freq = mtk_empty(ctx, &half, 1, MTK_FLOAT32);
        mtk_ctx_pop_device(ctx);
        if (!inv_freq) return false;
        if (!mtk_tensor_is_meta(inv_freq)) models_decoder_rope_scaled_inv_freq(rope, true, mtk_tensor_data(inv_freq));
    }
    mtk_tensor *positions;
    if (io->nin > 1) {
        positions = mtk_to_dtype(ctx, io->in[1], MTK_FLOAT32); /* (1, S) */
    } else {
        /* positions on x's device, as torch.arange(..., device=x.device) */
        if (!mtk_ctx_push_device(ctx, x->device)) return false;
        positions = mtk_arange_int(ctx, 0, seq, 1, MTK_INT64);                    /* (S)     */
        mtk_ctx_pop_device(ctx);
        positions = mtk_to_dtype(ctx, mtk_unsqueeze(ctx, positions, 0), MTK_FLOAT32); /* (1, S) */
    }
    mtk_tensor *freqs = mtk_mul(ctx, mtk_unsqueeze(ctx, positions, -1), inv_freq);  /* (1, S, dim/2) */
    if (rope->interleaved) {
        /* llama4: freqs_cis = polar(ones_like(freqs), freqs) * attention_scaling,
           complex64 (1, S, dim/2) whatever x's dtype, as its real view (one
           storage of cos, sin pairs); the local freqs lives until it returns */
        mtk_tensor *parts[2] = { mtk_cos(ctx, freqs), mtk_sin(ctx, freqs) };
        mtk_tensor *cis = mtk_stack(ctx, parts, 2, -1);                          /* (1, S, dim/2, 2) */
        cis = mtk_mul_scalar(ctx, cis, mtk_value_float(rope->attention_factor));
        *cos_out = *sin_out = cis;
        return cis && models_blocks_held_until_here(ctx, freqs);
    }
    mtk_tensor *both[2] = { freqs, freqs };
    mtk_tensor *emb = rope->half_width ? freqs : mtk_cat(ctx, both, 2, -1);      /* (1, S, dim)  */
    mtk_tensor *cos = mtk_cos(ctx, emb), *sin = mtk_sin(ctx, emb);
    if (rope->attention_factor != 1.0) {
        /* yarn, longrope: cos and sin times the attention factor, in float32 */
        cos = mtk_mul_scalar(ctx, cos, mtk_value_float(rope->attention_factor));
        sin = mtk_mul_scalar(ctx, sin, mtk_value_float(rope->attention_factor));
    }
    *cos_out = rope->keep_float32 ? cos : mtk_to_dtype(ctx, cos, x->dtype);
    *sin_out = rope->keep_float32 ? sin : mtk_to_dtype(ctx, sin, x->dtype);
    return *cos_out && *sin_out;
}

const mtk_module_type models_decoder_rotary_base = { "RotaryEmbedding", rotary_forward, rotary_reset, NULL };

mtk_module *models_decoder_rotary(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec)
{
    mtk_module *m = mtk_module_new(ctx, &t->rotary, sizeof(rotary_config));
    if (!m) return NULL;
    rotary_config *cfg = mtk_module_config(m);
    if (!spec->local_rope_on) {
        cfg->rope[cfg->nropes++] = spec->rope;
        int64_t half = spec->rope.dim / 2;
        if (!mtk_module_new_buffer(m, "inv_freq", &half, 1, MTK_FLOAT32, false) ||
            !mtk_module_new_buffer(m, "original_inv_freq", &half, 1, MTK_FLOAT32, false))
            return NULL;
        return mtk_module_finish(m);
    }
    /* gemma3: <layer_type>_inv_freq, <layer_type>_original_inv_freq per
       layer type present, in sorted order */
    static const char *const names[2][2] = { { "full_attention_inv_freq", "full_attention_original_inv_freq" },
                                             { "sliding_attention_inv_freq",
                                               "sliding_attention_original_inv_freq" } };
    for (int32_t kind = 0; kind < 2; kind++) {
        if (!(spec->rope_types & (kind == 0 ? DECODER_MASK_FULL : DECODER_MASK_SLIDING))) continue;
        const rope_spec *rope = kind == 0 ? &spec->rope : &spec->local_rope;
        cfg->rope[cfg->nropes++] = *rope;
        int64_t half = rope->dim / 2;
        if (!mtk_module_new_buffer(m, names[kind][0], &half, 1, MTK_FLOAT32, false) ||
            !mtk_module_new_buffer(m, names[kind][1], &half, 1, MTK_FLOAT32, false))
            return NULL;
    }
    return mtk_module_finish(m);
}
