/* How a pipeline calls its components: the calls' inputs from an image
 * size (diffusers.h), the text encoders' calls, and the method a root
 * module runs. */
#include "models/diffusers.h"

#include <string.h>

int64_t diffusers_scale_factor(const diffusers_image *image)
{
    return image->scale_factor > 0 ? image->scale_factor : 8;
}

int64_t diffusers_denoiser_batch(const diffusers_image *image)
{
    return image->guidance ? 2 * image->batch : image->batch;
}

int64_t diffusers_tokens(const diffusers_image *image, int64_t dflt)
{
    return image->tokens > 0 ? image->tokens : dflt;
}

bool diffusers_check_image(model_config *c, const diffusers_image *image, int64_t multiple)
{
    if (image->height <= 0 || image->width <= 0 || image->batch <= 0)
        return models_cfg_fail(c, NULL, "%s: the image must be a positive size and batch, got %lldx%lld, batch %lld",
                               c->architecture, (long long)image->height, (long long)image->width,
                               (long long)image->batch);
    if (image->height % multiple != 0 || image->width % multiple != 0)
        return models_cfg_fail(c, NULL, "%s: the image %lldx%lld is not a multiple of %lld pixels (the VAE's factor %lld "
                               "times the component's own downsampling)",
                               c->architecture, (long long)image->height, (long long)image->width, (long long)multiple,
                               (long long)diffusers_scale_factor(image));
    return true;
}

diffusers_call *diffusers_call_add(model_config *c, diffusers_call *out, int32_t cap, int32_t *n, const char *method,
                                   int64_t per_image)
{
    if (*n >= cap) {
        models_cfg_fail(c, NULL, "%s: more than %d calls", c->architecture, (int)cap);
        return NULL;
    }
    diffusers_call *call = &out[(*n)++];
    memset(call, 0, sizeof *call);
    call->method = method;
    call->per_image = per_image;
    return call;
}

bool diffusers_input_add(model_config *c, diffusers_call *call, const char *name, mtk_dtype dtype, int32_t ndim,
                         const int64_t *shape)
{
    if (!call) return false;
    if (call->nin >= DIFFUSERS_MAX_INPUTS || ndim < 0 || ndim > MTK_MAX_DIMS)
        return models_cfg_fail(c, NULL, "%s.%s: too many inputs or dims at '%s'", c->architecture, call->method, name);
    diffusers_input *in = &call->in[call->nin++];
    in->name = name;
    in->dtype = dtype;
    in->ndim = ndim;
    for (int32_t i = 0; i < ndim; i++) in->shape[i] = shape[i];
    return true;
}

int32_t diffusers_text_encoder_calls(model_config *c, const diffusers_image *image, diffusers_call *out, int32_t cap)
{
    if (image->batch <= 0) {
        models_cfg_fail(c, NULL, "%s: the batch must be positive, got %lld", c->architecture, (long long)image->batch);
        return -1;
    }
    /* the tokenizer pads to model_max_length, the encoder's positions
       (CLIP 77); t5 has none: the pipeline names its max_sequence_length */
    int64_t positions = models_cfg_has(c, "max_position_embeddings") ? models_cfg_positive(c, "max_position_embeddings", 77)
                        : models_cfg_has(c, "n_positions")           ? models_cfg_positive(c, "n_positions", 77)
                                                                     : 77;
    int64_t tokens = diffusers_tokens(image, positions);
    int32_t n = 0;
    /* the prompt, and the negative prompt with guidance: two calls of B */
    diffusers_call *call = diffusers_call_add(c, out, cap, &n, "forward", image->guidance ? 2 : 1);
    diffusers_input_add(c, call, "input_ids", MTK_INT64, 2, (int64_t[]){ image->batch, tokens });
    return models_cfg_ok(c) ? n : -1;
}

static const diffusers_component text_encoder = { DIFFUSERS_TEXT_ENCODER, diffusers_text_encoder_calls, NULL };

const diffusers_component *diffusers_component_of(const model_family *f)
{
    if (!f) return NULL;
    if (f->diffusers) return f->diffusers;
    if (f->info.input == MTK_MODEL_INPUT_TOKEN_IDS || f->info.input == MTK_MODEL_INPUT_SEQ2SEQ_IDS) return &text_encoder;
    return NULL;
}

bool diffusers_call_tensors(mtk_ctx *ctx, const diffusers_call *call, mtk_dtype dtype, mtk_tensor **in)
{
    for (int32_t i = 0; i < call->nin; i++) {
        const diffusers_input *x = &call->in[i];
        in[i] = mtk_tensor_new(ctx, x->dtype == MTK_DTYPE_UNDEFINED ? dtype : x->dtype, x->shape, x->ndim, NULL,
                               MTK_DEVICE_META);
        if (!in[i]) return false;
    }
    return true;
}

bool diffusers_select_method(mtk_module *root, const char *method)
{
    if (!method || strcmp(method, "forward") == 0) {
        const model_family *f = models_family_lookup(mtk_module_type_name(root));
        if (f && f->diffusers && f->diffusers->methods) ((diffusers_root *)mtk_module_config(root))->method = NULL;
        return true;
    }
    const model_family *f = models_family_lookup(mtk_module_type_name(root));
    for (int32_t i = 0; f && f->diffusers && f->diffusers->methods && f->diffusers->methods[i]; i++)
        if (strcmp(f->diffusers->methods[i], method) == 0) {
            ((diffusers_root *)mtk_module_config(root))->method = f->diffusers->methods[i];
            return true;
        }
    return mtk_error(mtk_module_ctx(root), MTK_ERR_INVALID_ARGUMENT, "%s has no method '%s'",
                     mtk_module_type_name(root), method);
}
