/* mtk_component_run (include/mtk/run.h): one call of a loaded diffusers
 * component on the cpu with its named arguments, as diffusers calls it.
 * One table: per class and method, its arguments in diffusers' order and
 * the output fields.  A component whose forward takes other arguments
 * adds a row. */
#include "models/diffusers.h"
#include "mtk/ops.h"
#include "mtk/run.h"

#include <stdio.h>
#include <string.h>

#define MAX_ARGS 6

typedef struct component_call {
    const char *class_name, *method;
    const char *args[MAX_ARGS]; /* diffusers' names, in the forward's order */
    int32_t required;           /* the first `required` must be given       */
    const char *conditional;    /* a child whose presence makes every
                                   argument required (SDXL's add_embedding) */
    const char *outputs[2];     /* the output's fields                      */
} component_call;

static const component_call calls[] = {
    { "UNet2DConditionModel", "forward", { "sample", "timestep", "encoder_hidden_states", "text_embeds", "time_ids" }, 3,
      "add_embedding", { "sample" } },
    { "AutoencoderKL", "encode", { "x" }, 1, NULL, { "latent_dist.mean" } },
    { "AutoencoderKL", "decode", { "z" }, 1, NULL, { "sample" } },
    { "AutoencoderKL", "forward", { "sample" }, 1, NULL, { "sample" } },
};

static int32_t count_args(const component_call *c)
{
    int32_t n = 0;
    while (n < MAX_ARGS && c->args[n]) n++;
    return n;
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

/* Whether `model` has a direct child `name` (no error when not). */
static bool has_child(const mtk_module *model, const char *name)
{
    for (int32_t i = 0; i < mtk_module_child_count(model); i++) {
        const char *n;
        mtk_module_child_at(model, i, &n);
        if (strcmp(n, name) == 0) return true;
    }
    return false;
}

static int32_t required_of(const mtk_module *model, const component_call *c)
{
    return c->conditional && has_child(model, c->conditional) ? count_args(c) : c->required;
}

int32_t mtk_component_arguments(const mtk_module *model, const char *method, const char **names, int32_t cap,
                                int32_t *required)
{
    const component_call *c = find_call(model, method);
    if (!c) return -1;
    int32_t n = count_args(c);
    for (int32_t i = 0; i < n && i < cap; i++) names[i] = c->args[i];
    if (required) *required = required_of(model, c);
    return n;
}

/* "sample, timestep, ..." into buf. */
static const char *list_args(const component_call *c, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < count_args(c) && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", c->args[i]);
    return buf;
}

/* The methods `model`'s class has, "forward, encode, decode". */
static const char *list_methods(const mtk_module *model, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    const char *type = mtk_module_type_name(model);
    for (size_t i = 0; i < sizeof calls / sizeof *calls && len < cap; i++)
        if (strcmp(calls[i].class_name, type) == 0)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", calls[i].method);
    return buf;
}

/* in's tensors in the call's order into args[0..n); false with the error. */
static bool order_inputs(mtk_ctx *ctx, const mtk_module *model, const component_call *c,
                         const mtk_component_inputs *in, mtk_tensor **args, int32_t *nargs)
{
    char list[256];
    int32_t n = count_args(c), required = required_of(model, c);
    for (int32_t i = 0; i < n; i++) args[i] = NULL;
    if (in->count < 0 || in->count > MTK_COMPONENT_MAX_INPUTS)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %d inputs (at most %d)", (int)in->count,
                         MTK_COMPONENT_MAX_INPUTS);
    for (int32_t k = 0; k < in->count; k++) {
        int32_t at = -1;
        for (int32_t i = 0; i < n && at < 0; i++)
            if (in->names[k] && strcmp(in->names[k], c->args[i]) == 0) at = i;
        if (at < 0)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s.%s takes no argument '%s' (it takes %s)",
                             c->class_name, c->method, in->names[k] ? in->names[k] : "(null)",
                             list_args(c, list, sizeof list));
        if (args[at])
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s.%s: argument '%s' given twice", c->class_name,
                             c->method, c->args[at]);
        if (!in->tensors[k]) return false; /* an earlier error */
        if (in->tensors[k]->device != MTK_DEVICE_CPU)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s must be on the cpu", c->args[at]);
        args[at] = in->tensors[k];
    }
    *nargs = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!args[i] && i < required)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s.%s needs the argument '%s' (it takes %s%s)",
                             c->class_name, c->method, c->args[i], list_args(c, list, sizeof list),
                             required == n && n > c->required ? "; the config's added conditions need all" : "");
        if (args[i]) *nargs = i + 1;
    }
    for (int32_t i = 0; i < *nargs; i++)
        if (!args[i])
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s.%s: '%s' is given but '%s' is not",
                             c->class_name, c->method, c->args[*nargs - 1], c->args[i]);
    return true;
}

bool mtk_component_run(mtk_module *model, const mtk_component_inputs *in, mtk_model_outputs *out)
{
    if (!model || !in || !out) return false;
    mtk_ctx *ctx = mtk_module_ctx(model);
    memset(out, 0, sizeof *out);
    const char *method = in->method ? in->method : "forward";
    const component_call *c = find_call(model, method);
    char list[128];
    if (!c && !is_component(model))
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "run: %s is not a diffusers component mtk runs (UNet2DConditionModel, AutoencoderKL)",
                         mtk_module_type_name(model));
    if (!c)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s has no method '%s' (it has %s)",
                         mtk_module_type_name(model), method, list_methods(model, list, sizeof list));
    mtk_tensor *args[MAX_ARGS];
    int32_t nargs = 0;
    if (!order_inputs(ctx, model, c, in, args, &nargs)) return false;
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
