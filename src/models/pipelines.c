/* The built-in pipelines (one row each: name, Hub id, model_index.json and
 * each component's config.json text) and the pipeline classes' token
 * lengths.  Add rows at the end of each table. */
#include "models/pipeline.h"

#include <string.h>

static const mtk_builtin_pipeline builtins[] = {
    { "sd-1.5", "runwayml/stable-diffusion-v1-5", pipeline_sd15_model_index,
      { { "text_encoder", pipeline_sd15_text_encoder }, { "unet", pipeline_sd15_unet }, { "vae", pipeline_sd15_vae } } },
    { "sdxl-base", "stabilityai/stable-diffusion-xl-base-1.0", pipeline_sdxl_model_index,
      { { "text_encoder", pipeline_sdxl_text_encoder }, { "text_encoder_2", pipeline_sdxl_text_encoder_2 },
        { "unet", pipeline_sdxl_unet }, { "vae", pipeline_sdxl_vae } } },
};

#define BUILTIN_COUNT ((int32_t)(sizeof builtins / sizeof builtins[0]))

int32_t mtk_builtin_pipeline_count(void) { return BUILTIN_COUNT; }

const mtk_builtin_pipeline *mtk_builtin_pipeline_at(int32_t i)
{
    return i >= 0 && i < BUILTIN_COUNT ? &builtins[i] : NULL;
}

const mtk_builtin_pipeline *mtk_builtin_pipeline_find(const char *name)
{
    for (int32_t i = 0; name && i < BUILTIN_COUNT; i++)
        if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
    return NULL;
}

/* CLIP's tokenizers pad to 77 tokens, the prompt embeddings the UNet
 * attends to */
static const pipeline_kind kinds[] = {
    { "StableDiffusionPipeline", { { "text_encoder", 77 }, { "denoiser", 77 } } },
    { "StableDiffusionXLPipeline", { { "text_encoder", 77 }, { "text_encoder_2", 77 }, { "denoiser", 77 } } },
};

const pipeline_kind *pipeline_kind_find(const char *class_name)
{
    for (size_t i = 0; class_name && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].class_name, class_name) == 0) return &kinds[i];
    return NULL;
}
