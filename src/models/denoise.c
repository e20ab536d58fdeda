/* mtk_denoiser_run: one forward of a loaded diffusers denoiser on named
 * inputs (include/mtk/denoise.h).  The argument list is the one the
 * component's pipeline calls declare (diffusers.h), read at an image size
 * every patch size divides, so a class adds nothing here. */
#include "models/diffusers.h"
#include "mtk/denoise.h"
#include "mtk/ops.h"

#include <stdio.h>
#include <string.h>

/* 8 x 720720 pixels: a multiple of every VAE factor x patch size up to
 * 8 x 16; the calls only compute shapes from it. */
#define NAMES_IMAGE_SIDE (8LL * 720720LL)

/* The denoiser's forward call at a size every patch divides; false with
 * the error. */
static bool forward_call(model_config *c, diffusers_call *call)
{
    const model_family *f = models_family_lookup(c->model_type);
    const diffusers_component *component = f ? diffusers_component_of(f) : NULL;
    if (!component || component->role != DIFFUSERS_DENOISER)
        return mtk_error(c->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "denoise: %s is not a diffusers denoiser (SD3Transformer2DModel, FluxTransformer2DModel, "
                         "Lumina2Transformer2DModel, UNet2DConditionModel)",
                         c->architecture ? c->architecture : c->model_type);
    diffusers_image image = { .height = NAMES_IMAGE_SIDE, .width = NAMES_IMAGE_SIDE, .batch = 1, .steps = 1 };
    diffusers_call calls[DIFFUSERS_MAX_CALLS];
    int32_t n = component->calls(c, &image, calls, DIFFUSERS_MAX_CALLS);
    if (n < 1) return n == 0 ? mtk_error(c->ctx, MTK_ERR_INVALID_ARGUMENT, "denoise: %s has no call", c->model_type)
                             : false;
    for (int32_t i = 0; i < n; i++)
        if (strcmp(calls[i].method, "forward") == 0) {
            *call = calls[i];
            return true;
        }
    return mtk_error(c->ctx, MTK_ERR_INVALID_ARGUMENT, "denoise: %s has no forward call", c->model_type);
}

int32_t mtk_denoiser_input_names(mtk_model_config *config, const char **names, int32_t cap)
{
    diffusers_call call;
    if (!config || !forward_call(config, &call)) return -1;
    for (int32_t i = 0; i < call.nin && i < cap; i++) names[i] = call.in[i].name;
    return call.nin;
}

/* "a, b, c" of the call's argument names, in the arena. */
static const char *name_list(mtk_ctx *ctx, const diffusers_call *call)
{
    char buf[512] = "";
    size_t at = 0;
    for (int32_t i = 0; i < call->nin && at < sizeof buf; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", i ? ", " : "", call->in[i].name);
    return mtk_ctx_strdup(ctx, buf);
}

/* The first floating parameter's dtype: the model's. */
static mtk_dtype model_dtype(mtk_module *model)
{
    mtk_named_tensor *params = NULL;
    int32_t n = mtk_module_named_parameters(model, &params);
    for (int32_t i = 0; i < n; i++)
        if (mtk_dtype_is_floating(params[i].tensor->dtype)) return params[i].tensor->dtype;
    return MTK_FLOAT32;
}

/* An integer mask must be all ones (see the contract). */
static bool check_full_mask(mtk_ctx *ctx, const char *cls, const char *name, mtk_tensor *mask)
{
    mtk_tensor *m = mtk_contiguous(ctx, mtk_to_dtype(ctx, mask, MTK_INT64));
    const int64_t *v = m ? mtk_tensor_data(m) : NULL;
    if (!v) return false;
    int64_t n = mtk_tensor_numel(m), cols = m->ndim ? m->shape[m->ndim - 1] : 1;
    for (int64_t i = 0; i < n; i++)
        if (v[i] != 1)
            return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
                             "denoise: %s: %s holds %lld at row %lld, column %lld: mtk runs full masks only (every "
                             "caption token real; the padded layout is not built)",
                             cls, name, (long long)v[i], (long long)(i / cols), (long long)(i % cols));
    return true;
}

mtk_tensor *mtk_denoiser_run(mtk_module *model, mtk_model_config *config, const mtk_named_tensor *inputs,
                             int32_t count)
{
    if (!model || !config) return NULL;
    mtk_ctx *ctx = mtk_module_ctx(model);
    diffusers_call call;
    if (!forward_call(config, &call)) return NULL;
    const char *cls = mtk_module_type_name(model);
    mtk_dtype dtype = model_dtype(model);
    for (int32_t j = 0; j < count; j++) {
        bool known = false;
        for (int32_t i = 0; i < call.nin && !known; i++) known = strcmp(call.in[i].name, inputs[j].name) == 0;
        if (!known) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "denoise: %s takes no argument '%s' (its arguments: %s)", cls,
                      inputs[j].name, name_list(ctx, &call));
            return NULL;
        }
    }
    mtk_module_io io = { .nin = call.nin };
    for (int32_t i = 0; i < call.nin; i++) {
        const diffusers_input *want = &call.in[i];
        mtk_tensor *t = NULL;
        for (int32_t j = 0; j < count; j++) {
            if (strcmp(inputs[j].name, want->name) != 0) continue;
            if (t) {
                mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "denoise: %s: '%s' is given twice", cls, want->name);
                return NULL;
            }
            t = inputs[j].tensor;
        }
        if (!t) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "denoise: %s: the argument '%s' is missing (its arguments: %s)",
                      cls, want->name, name_list(ctx, &call));
            return NULL;
        }
        if (t->device != MTK_DEVICE_CPU) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "denoise: %s: '%s' must be on the cpu", cls, want->name);
            return NULL;
        }
        bool integral = mtk_dtype_is_integral(want->dtype, true);
        if (integral && !check_full_mask(ctx, cls, want->name, t)) return NULL;
        mtk_dtype to = want->dtype == MTK_DTYPE_UNDEFINED ? dtype : want->dtype;
        io.in[i] = integral ? t : mtk_to_dtype(ctx, t, to);
    }
    if (!mtk_module_call(model, &io) || io.nout < 1) return NULL;
    return io.out[0];
}
