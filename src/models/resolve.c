/* Building a model from a config, and resolving a MODEL argument: a
 * built-in of the zoo, a demo model (demos.c), a config.json or
 * a directory holding one. */
#include "models/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Whether m's parameters (tied ones once) stay within
 * MODEL_MAX_PARAMETERS elements; the error names the total and the limit. */
static bool parameters_within_limit(model_config *c, mtk_module *m)
{
    mtk_named_tensor *params = NULL;
    int32_t n = mtk_module_named_parameters(m, &params);
    if (n < 0) return false;
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t numel = params[i].tensor->flags & MTK_TENSOR_LAZY ? 0 : mtk_tensor_numel(params[i].tensor);
        if (__builtin_add_overflow(total, numel, &total) || total > MODEL_MAX_PARAMETERS)
            return models_cfg_fail(c, NULL, "the model has more than %lld parameters, mtk's limit (far above any released "
                            "model; at '%s')", (long long)MODEL_MAX_PARAMETERS, params[i].name);
    }
    return true;
}

mtk_module *mtk_model_build_config(mtk_ctx *ctx, mtk_model_config *c, mtk_dtype dtype)
{
    if (!c) return NULL;
    if (!c->root) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: the config was freed before the build", c->origin);
        return NULL;
    }
    const model_family *f = models_family_lookup(c->model_type);
    if (!f) {
        models_cfg_fail(c, "model_type", "unknown model_type '%s' (supported: %s)", c->model_type, models_family_names(ctx));
        return NULL;
    }
    bool known = false;
    for (int32_t i = 0; f->info.architectures[i] && !known; i++)
        known = strcmp(f->info.architectures[i], c->architecture) == 0;
    if (!known) {
        models_cfg_fail(c, "architectures", "unsupported architecture '%s' for model_type '%s' (supported: %s)",
                 c->architecture, c->model_type, models_family_architectures(ctx, f));
        return NULL;
    }
    if (dtype == MTK_DTYPE_UNDEFINED) dtype = c->dtype;
    if (!mtk_ctx_push_dtype(ctx, dtype)) return NULL;
    mtk_module *m = f->build(c, c->architecture);
    mtk_ctx_pop_dtype(ctx);
    if (m && (!models_cfg_ok(c) || !parameters_within_limit(c, m) || !models_quant_apply(c, m))) m = NULL;
    if (!m && models_cfg_ok(c))
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: building %s failed", c->origin, c->architecture);
    return m;
}

/* ------------------------------------------------------------ resolving */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Every name a MODEL may be, for the unknown-name error. */
static const char *known_names(mtk_ctx *ctx)
{
    size_t cap = 64;
    for (int32_t i = 0; i < mtk_builtin_model_count(); i++) cap += strlen(mtk_builtin_model_at(i)->name) + 2;
    for (int32_t i = 0; i < mtk_demo_model_count(); i++) cap += strlen(mtk_demo_model_at(i)->name) + 2;
    char *out = mtk_ctx_alloc(ctx, cap);
    if (!out) return "";
    size_t len = 0;
    for (int32_t i = 0; i < mtk_demo_model_count(); i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "", mtk_demo_model_at(i)->name);
    for (int32_t i = 0; i < mtk_builtin_model_count(); i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "", mtk_builtin_model_at(i)->name);
    return out;
}

/* Whether m has a direct child called `name` (no error when not). */
static bool has_child(const mtk_module *m, const char *name)
{
    for (int32_t i = 0; i < mtk_module_child_count(m); i++) {
        const char *child;
        if (mtk_module_child_at(m, i, &child) && strcmp(child, name) == 0) return true;
    }
    return false;
}

/* Builds from a parsed config (which it frees) and fills the info. */
static mtk_module *build_and_describe(mtk_ctx *ctx, mtk_model_config *c, const mtk_model_resolve_options *opt,
                                      mtk_model_info *info)
{
    if (!c) return NULL;
    mtk_dtype dtype = opt && opt->dtype != MTK_DTYPE_UNDEFINED ? opt->dtype : c->dtype;
    if (opt && opt->attention) {
        if (strcmp(opt->attention, "eager") != 0 && strcmp(opt->attention, "sdpa") != 0) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "attention implementation '%s': expected eager or sdpa",
                      opt->attention);
            mtk_model_config_free(c);
            return NULL;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(c->root, "_attn_implementation");
        if (!cJSON_AddStringToObject(c->root, "_attn_implementation", opt->attention)) {
            mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory");
            mtk_model_config_free(c);
            return NULL;
        }
    }
    if (opt && opt->experts) {
        if (strcmp(opt->experts, "batched_mm") != 0 && strcmp(opt->experts, "grouped_mm") != 0) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "experts implementation '%s': expected batched_mm or grouped_mm",
                      opt->experts);
            mtk_model_config_free(c);
            return NULL;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(c->root, "_experts_implementation");
        if (!cJSON_AddStringToObject(c->root, "_experts_implementation", opt->experts)) {
            mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory");
            mtk_model_config_free(c);
            return NULL;
        }
    }
    mtk_module *m = mtk_model_build_config(ctx, c, dtype);
    if (m && info) {
        const model_family *f = models_family_lookup(c->model_type);
        info->family = f->info.model_type;
        info->architecture = mtk_module_type_name(m);
        info->dtype = dtype;
        info->input = f->info.input;
        /* an encoder-decoder family's encoder-only classes take one input */
        if (info->input == MTK_MODEL_INPUT_SEQ2SEQ_IDS && !has_child(m, "decoder"))
            info->input = MTK_MODEL_INPUT_TOKEN_IDS;
        info->input_dtype =
            info->input == MTK_MODEL_INPUT_TOKEN_IDS || info->input == MTK_MODEL_INPUT_SEQ2SEQ_IDS ? MTK_INT64 : dtype;
        for (int32_t i = 0; i < c->nnotes && i < 4; i++) info->notes[info->nnotes++] = c->notes[i];
        info->active_params = c->active_params;
    }
    mtk_model_config_free(c);
    return m;
}

/* 1 when `name` is a directory holding a config.json (or is a .json
 * file), -1 when it is a directory without one, 0 when there is none. */
static int local_config(const char *name)
{
    struct stat st;
    if (stat(name, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) return ends_with(name, ".json") ? 1 : 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", name);
    return stat(path, &st) == 0 ? 1 : -1;
}

/* info->ambiguity, in the arena. */
static void set_ambiguity(mtk_ctx *ctx, mtk_model_info *info, const char *model, bool directory)
{
    char buf[512];
    if (directory)
        snprintf(buf, sizeof buf, "'%s' names both a built-in model and the directory ./%s: the directory's "
                 "config.json was used", model, model);
    else
        snprintf(buf, sizeof buf, "'%s' is the built-in model: the directory ./%s holds no config.json", model, model);
    info->ambiguity = mtk_ctx_strdup(ctx, buf);
}

static mtk_module *resolve(mtk_ctx *ctx, const char *model, const mtk_model_resolve_options *opt,
                           mtk_model_info *info)
{
    const mtk_builtin_model *b = mtk_builtin_model_find(model);
    int local = b ? local_config(model) : 0;
    if (b && local > 0) { /* a directory of that name wins, as from_pretrained's local path does */
        if (info) set_ambiguity(ctx, info, model, true), info->source = "config.json";
        return build_and_describe(ctx, mtk_model_config_load(ctx, model), opt, info);
    }
    if (b && local < 0 && info) set_ambiguity(ctx, info, model, false);
    if (b) {
        if (info) info->source = "built-in", info->example_input = b->example_input;
        return build_and_describe(ctx, mtk_model_config_parse(ctx, b->config_json, b->name), opt, info);
    }
    const mtk_demo_model *demo = mtk_demo_model_find(model);
    if (demo) {
        mtk_dtype dtype = opt && opt->dtype != MTK_DTYPE_UNDEFINED ? opt->dtype : mtk_ctx_dtype(ctx);
        if (!mtk_ctx_push_dtype(ctx, dtype)) return NULL;
        mtk_module *m = demo->build(ctx, NULL);
        mtk_ctx_pop_dtype(ctx);
        if (m && info) {
            info->source = "demo", info->family = "demo";
            info->architecture = mtk_module_type_name(m);
            info->dtype = info->input_dtype = dtype;
            info->input = MTK_MODEL_INPUT_TENSOR;
            info->example_input = demo->example_input;
        }
        return m;
    }
    struct stat st;
    if (stat(model, &st) == 0) {
        if (!S_ISDIR(st.st_mode) && !ends_with(model, ".json")) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "%s: not a config.json (a MODEL is a built-in name, a config.json or a directory holding one)",
                      model);
            return NULL;
        }
        if (info) info->source = "config.json";
        return build_and_describe(ctx, mtk_model_config_load(ctx, model), opt, info);
    }
    if (strchr(model, '/') || ends_with(model, ".json")) {
        mtk_error(ctx, MTK_ERR_IO, "%s: %s", model, strerror(errno));
        return NULL;
    }
    mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
              "unknown model '%s' (built-in models: %s; or a config.json path or a directory holding one)", model,
              known_names(ctx));
    return NULL;
}

mtk_module *mtk_model_resolve(mtk_ctx *ctx, const char *model, const mtk_model_resolve_options *options,
                              mtk_model_info *info)
{
    if (info) memset(info, 0, sizeof *info);
    if (!model || !*model) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "no model named");
        return NULL;
    }
    if (info) info->name = model;
    /* a model without its data unless the caller scoped a device */
    bool meta = (options && options->meta) || mtk_ctx_device_scopes(ctx) == 0;
    if (meta && !mtk_ctx_push_device(ctx, MTK_DEVICE_META)) return NULL;
    if (meta && !mtk_ctx_push_init_mode(ctx, MTK_INIT_META)) {
        mtk_ctx_pop_device(ctx);
        return NULL;
    }
    mtk_module *m = resolve(ctx, model, options, info);
    if (meta) mtk_ctx_pop_init_mode(ctx), mtk_ctx_pop_device(ctx);
    return m;
}
