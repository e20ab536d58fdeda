/* mtk_component_run (include/mtk/run.h): one call of a loaded diffusers
 * component on the cpu with its named arguments, as diffusers calls it
 * (the UNet and VAE of the SD pipelines, the SD3 / FLUX / Lumina 2
 * transformers).  One table: per class and method, its arguments in the
 * order of the root module's inputs (diffusers' forward signature), how
 * each is cast as the pipeline casts it, and the output fields.  A
 * component whose forward takes other arguments adds a row. */
#include "models/diffusers.h"
#include "mtk/ops.h"
#include "mtk/run.h"

#include <stdio.h>
#include <string.h>

#define MAX_ARGS 7

/* How an argument reaches the module. */
typedef enum arg_cast {
    CAST_MODEL = 0, /* floating: the model's dtype (latents, embeddings) */
    CAST_NONE,      /* as given (the UNet's timestep: any real dtype)      */
    CAST_FLOAT32,   /* floating: float32 (the schedulers' timesteps)       */
    CAST_FULL_MASK  /* integers, all ones (the padded layout is not built) */
} arg_cast;

typedef struct component_arg {
    const char *name; /* diffusers' name */
    arg_cast cast;
} component_arg;

typedef struct component_call {
    const char *class_name, *method;
    component_arg args[MAX_ARGS]; /* in the forward's order              */
    int32_t required;             /* the first `required` must be given  */
    const char *conditional;      /* a child (dotted path) whose presence
                                     makes every argument required (SDXL's
                                     add_embedding, FLUX.1-dev's guidance
                                     embedder)                           */
    bool absent_without;          /* without that child the arguments past
                                     `required` are not taken (FLUX's
                                     guidance); else they are optional  */
    const char *outputs[2];       /* the output's fields                 */
} component_call;

/* an argument in the model's dtype */
#define ARG(name) { name, CAST_MODEL }

static const component_call calls[] = {
    { "UNet2DConditionModel", "forward",
      { ARG("sample"), { "timestep", CAST_NONE }, ARG("encoder_hidden_states"), ARG("text_embeds"), ARG("time_ids") },
      3, "add_embedding", false, { "sample" } },
    { "AutoencoderKL", "encode", { ARG("x") }, 1, NULL, false, { "latent_dist.mean" } },
    { "AutoencoderKL", "decode", { ARG("z") }, 1, NULL, false, { "sample" } },
    { "AutoencoderKL", "forward", { ARG("sample") }, 1, NULL, false, { "sample" } },
    { "SD3Transformer2DModel", "forward",
      { ARG("hidden_states"), ARG("encoder_hidden_states"), ARG("pooled_projections"), { "timestep", CAST_FLOAT32 } },
      4, NULL, false, { "sample" } },
    { "FluxTransformer2DModel", "forward",
      { ARG("hidden_states"), ARG("encoder_hidden_states"), ARG("pooled_projections"), ARG("timestep"),
        ARG("img_ids"), ARG("txt_ids"), { "guidance", CAST_FLOAT32 } },
      6, "time_text_embed.guidance_embedder", true, { "sample" } },
    { "Lumina2Transformer2DModel", "forward",
      { ARG("hidden_states"), { "timestep", CAST_FLOAT32 }, ARG("encoder_hidden_states"),
        { "encoder_attention_mask", CAST_FULL_MASK } },
      4, NULL, false, { "sample" } },
};

/* The module at a dotted path under `model`, NULL (no error) when none. */
static const mtk_module *find_child(const mtk_module *model, const char *path)
{
    const mtk_module *m = model;
    while (m && *path) {
        const char *dot = strchr(path, '.');
        size_t len = dot ? (size_t)(dot - path) : strlen(path);
        const mtk_module *next = NULL;
        for (int32_t i = 0; i < mtk_module_child_count(m) && !next; i++) {
            const char *n;
            mtk_module *c = mtk_module_child_at(m, i, &n);
            if (strlen(n) == len && strncmp(n, path, len) == 0) next = c;
        }
        m = next;
        path = dot ? dot + 1 : path + len;
    }
    return m;
}

static bool has_conditional(const mtk_module *model, const component_call *c)
{
    return c->conditional && find_child(model, c->conditional);
}

/* How many arguments `model`'s call takes. */
static int32_t count_args(const mtk_module *model, const component_call *c)
{
    int32_t n = 0;
    while (n < MAX_ARGS && c->args[n].name) n++;
    return c->absent_without && !has_conditional(model, c) ? c->required : n;
}

static int32_t required_of(const mtk_module *model, const component_call *c)
{
    return has_conditional(model, c) ? count_args(model, c) : c->required;
}

static const component_call *find_call(const mtk_module *model, const char *method)
{
    if (!model) return NULL;
    if (!method) method = "forward";
    const char *type = mtk_module_type_name(model);
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
        if (strcmp(calls[i].class_name, type) == 0 && strcmp(calls[i].method, method) == 0) return &calls[i];
    return NULL;
}

static bool is_component(const mtk_module *model)
{
    const char *type = mtk_module_type_name(model);
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
        if (strcmp(calls[i].class_name, type) == 0) return true;
    return false;
}

int32_t mtk_component_arguments(const mtk_module *model, const char *method, const char **names, int32_t cap,
                                int32_t *required)
{
    const component_call *c = find_call(model, method);
    if (!c) return -1;
    int32_t n = count_args(model, c);
    for (int32_t i = 0; i < n && i < cap; i++) names[i] = c->args[i].name;
    if (required) *required = required_of(model, c);
    return n;
}

/* "sample, timestep, ..." into buf. */
static const char *list_args(const mtk_module *model, const component_call *c, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < count_args(model, c) && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", c->args[i].name);
    return buf;
}

/* The methods `model`'s class has ("forward, encode, decode"), or with
 * NULL every class of the table ("UNet2DConditionModel, ..."). */
static const char *list_rows(const mtk_module *model, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof calls / sizeof *calls && len < cap; i++) {
        if (model && strcmp(calls[i].class_name, mtk_module_type_name(model)) != 0) continue;
        if (!model && i && strcmp(calls[i].class_name, calls[i - 1].class_name) == 0) continue;
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "",
                                model ? calls[i].method : calls[i].class_name);
    }
    return buf;
}

/* in's tensors in the call's order into args[0..n); false with the error. */
static bool order_inputs(mtk_ctx *ctx, const mtk_module *model, const component_call *c,
                         const mtk_component_inputs *in, mtk_tensor **args, int32_t *nargs)
{
    char list[256];
    int32_t n = count_args(model, c), required = required_of(model, c);
    for (int32_t i = 0; i < n; i++) args[i] = NULL;
    if (in->count < 0 || in->count > MTK_COMPONENT_MAX_INPUTS)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %d inputs (at most %d)", (int)in->count,
                         MTK_COMPONENT_MAX_INPUTS);
    for (int32_t k = 0; k < in->count; k++) {
        int32_t at = -1;
        for (int32_t i = 0; i < n && at < 0; i++)
            if (in->names[k] && strcmp(in->names[k], c->args[i].name) == 0) at = i;
        if (at < 0)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s.%s takes no argument '%s' (it takes %s)",
                             c->class_name, c->method, in->names[k] ? in->names[k] : "(null)",
                             list_args(model, c, list, sizeof list));
        if (args[at])
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s.%s: argument '%s' given twice", c->class_name,
                             c->method, c->args[at].name);
        if (!in->tensors[k]) return false; /* an earlier error */
        if (in->tensors[k]->device != MTK_DEVICE_CPU)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s must be on the cpu", c->args[at].name);
        args[at] = in->tensors[k];
    }
    *nargs = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!args[i] && i < required)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s.%s needs the argument '%s' (it takes %s%s)",
                             c->class_name, c->method, c->args[i].name, list_args(model, c, list, sizeof list),
                             required == n && n > c->required ? "; the config's added conditions need all" : "");
        if (args[i]) *nargs = i + 1;
    }
    for (int32_t i = 0; i < *nargs; i++)
        if (!args[i])
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s.%s: '%s' is given but '%s' is not",
                             c->class_name, c->method, c->args[*nargs - 1].name, c->args[i].name);
    return true;
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

/* A mask must be all ones (see the contract); false with the error. */
static bool check_full_mask(mtk_ctx *ctx, const component_call *c, const char *name, mtk_tensor *mask)
{
    mtk_tensor *m = mtk_contiguous(ctx, mtk_to_dtype(ctx, mask, MTK_INT64));
    const int64_t *v = m ? mtk_tensor_data(m) : NULL;
    if (!v) return false;
    int64_t n = mtk_tensor_numel(m), cols = m->ndim && m->shape[m->ndim - 1] ? m->shape[m->ndim - 1] : 1;
    for (int64_t i = 0; i < n; i++)
        if (v[i] != 1)
            return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
                             "run: %s: %s holds %lld at row %lld, column %lld: mtk runs full masks only (every "
                             "caption token real; the padded layout is not built)",
                             c->class_name, name, (long long)v[i], (long long)(i / cols), (long long)(i % cols));
    return true;
}

/* args cast as the pipeline casts them; false with the error. */
static bool cast_inputs(mtk_module *model, const component_call *c, mtk_tensor **args, int32_t nargs)
{
    mtk_ctx *ctx = mtk_module_ctx(model);
    mtk_dtype dtype = model_dtype(model);
    for (int32_t i = 0; i < nargs; i++) {
        mtk_tensor *t = args[i];
        switch (c->args[i].cast) {
        case CAST_MODEL:
            if (mtk_dtype_is_floating(t->dtype)) t = mtk_contiguous(ctx, mtk_to_dtype(ctx, t, dtype));
            break;
        case CAST_FLOAT32: t = mtk_to_dtype(ctx, t, MTK_FLOAT32); break;
        case CAST_FULL_MASK:
            if (!check_full_mask(ctx, c, c->args[i].name, t)) return false;
            break;
        case CAST_NONE: break;
        }
        if (!(args[i] = t)) return false;
    }
    return true;
}

bool mtk_component_run(mtk_module *model, const mtk_component_inputs *in, mtk_model_outputs *out)
{
    if (!model || !in || !out) return false;
    mtk_ctx *ctx = mtk_module_ctx(model);
    memset(out, 0, sizeof *out);
    const char *method = in->method ? in->method : "forward";
    const component_call *c = find_call(model, method);
    char list[256];
    if (!c && !is_component(model))
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s is not a diffusers component mtk runs (%s)",
                         mtk_module_type_name(model), list_rows(NULL, list, sizeof list));
    if (!c)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s has no method '%s' (it has %s)",
                         mtk_module_type_name(model), method, list_rows(model, list, sizeof list));
    mtk_tensor *args[MAX_ARGS];
    int32_t nargs = 0;
    if (!order_inputs(ctx, model, c, in, args, &nargs) || !cast_inputs(model, c, args, nargs)) return false;
    if (!diffusers_select_method(model, method)) return false;
    bool was_training = mtk_module_is_training(model);
    mtk_module_train(model, false);
    mtk_module_io io = { .nin = nargs };
    for (int32_t i = 0; i < nargs; i++) io.in[i] = args[i];
    bool ok = mtk_module_call(model, &io);
    mtk_module_train(model, was_training);
    diffusers_select_method(model, "forward");
    if (!ok) return false;
    for (int32_t i = 0; i < io.nout && i < 2 && c->outputs[i]; i++) {
        out->names[out->count] = c->outputs[i];
        out->tensors[out->count++] = io.out[i];
    }
    return out->count > 0;
}
