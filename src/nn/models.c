/* The model registry: built-in demo models by name, and the resolution of
 * a MODEL argument (built-in name | config.json | directory with one).
 *
 * The model zoo (src/models) extends this in two places, marked HOOK:
 * rows of `builtin_models` for named models, and build_from_config_json()
 * for Hugging Face configs.  Since models/ sits above nn/, the zoo may
 * rather move MODEL resolution up into src/models (a function that tries
 * its configs, then mtk_model_find) and have the CLI call that. */
#include "mtk/nn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* simplenet: the network of PyTorch's meta-tensor guide. */
mtk_module *mtk_model_simplenet(mtk_ctx *ctx, const void *config)
{
    (void)config;
    mtk_module *layers[3] = { mtk_nn_linear(ctx, 10, 20, true), mtk_nn_activation(ctx, "ReLU"),
                              mtk_nn_linear(ctx, 20, 1, true) };
    return mtk_nn_sequential(ctx, 3, layers);
}

/* lazynet: a convolution whose flattened output size LazyLinear learns
 * from the first input. */
mtk_module *mtk_model_lazynet(mtk_ctx *ctx, const void *config)
{
    (void)config;
    mtk_module *layers[4] = { mtk_nn_conv2d(ctx, 3, 8, 3), mtk_nn_activation(ctx, "ReLU"),
                              mtk_nn_flatten(ctx, 1, -1), mtk_nn_lazy_linear(ctx, 10, true) };
    return mtk_nn_sequential(ctx, 4, layers);
}

/* HOOK (model zoo): one row per built-in model. */
static const mtk_model_entry builtin_models[] = {
    { "simplenet", "Linear(10, 20) -> ReLU -> Linear(20, 1): 241 parameters (PyTorch's meta-tensor guide)",
      mtk_model_simplenet, "1x10" },
    { "lazynet", "Conv2d(3, 8, 3) -> ReLU -> Flatten -> LazyLinear(10): 224 parameters before an input, "
      "72,234 with 1x3x32x32", mtk_model_lazynet, "1x3x32x32" },
};

#define MODEL_COUNT ((int32_t)(sizeof builtin_models / sizeof builtin_models[0]))

int32_t mtk_model_count(void) { return MODEL_COUNT; }

const mtk_model_entry *mtk_model_at(int32_t i) { return i >= 0 && i < MODEL_COUNT ? &builtin_models[i] : NULL; }

const mtk_model_entry *mtk_model_find(const char *name)
{
    for (int32_t i = 0; name && i < MODEL_COUNT; i++)
        if (strcmp(builtin_models[i].name, name) == 0) return &builtin_models[i];
    return NULL;
}

/* HOOK (model zoo): build the model a Hugging Face config.json describes. */
static mtk_module *build_from_config_json(mtk_ctx *ctx, const char *path)
{
    mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
              "%s: Hugging Face configs are built by the model zoo, which sits above nn: use "
              "mtk_model_resolve (mtk/models.h), as 'mtk summary' does",
              path);
    return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

mtk_module *mtk_model_build(mtk_ctx *ctx, const char *model)
{
    if (!model || !*model) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "no model named");
        return NULL;
    }
    const mtk_model_entry *entry = mtk_model_find(model);
    if (entry) return entry->build(ctx, NULL);
    struct stat st;
    if (stat(model, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            char path[4096];
            int n = snprintf(path, sizeof path, "%s/config.json", model);
            if (n < 0 || (size_t)n >= sizeof path || stat(path, &st) != 0) {
                mtk_error(ctx, MTK_ERR_IO, "%s: a directory without a config.json", model);
                return NULL;
            }
            return build_from_config_json(ctx, path);
        }
        if (ends_with(model, ".json")) return build_from_config_json(ctx, model);
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: not a config.json (a MODEL is a built-in name, a "
                  "config.json or a directory holding one)", model);
        return NULL;
    }
    if (strchr(model, '/') || ends_with(model, ".json")) {
        mtk_error(ctx, MTK_ERR_IO, "%s: %s", model, strerror(errno));
        return NULL;
    }
    char names[256] = "";
    size_t len = 0;
    for (int32_t i = 0; i < MODEL_COUNT && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", builtin_models[i].name);
    mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "unknown model '%s' (built-in models: %s; or a config.json path "
              "or a directory holding one)", model, names);
    return NULL;
}
