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
    { "sd-3.5-medium", "stabilityai/stable-diffusion-3.5-medium", pipeline_sd35m_model_index,
      { { "text_encoder", pipeline_sd35m_text_encoder }, { "text_encoder_2", pipeline_sd35m_text_encoder_2 },
        { "text_encoder_3", pipeline_sd35m_text_encoder_3 }, { "transformer", pipeline_sd35m_transformer },
        { "vae", pipeline_sd35m_vae } } },
    { "flux.1-dev", "black-forest-labs/FLUX.1-dev", pipeline_flux1dev_model_index,
      { { "text_encoder", pipeline_flux1dev_text_encoder }, { "text_encoder_2", pipeline_flux1dev_text_encoder_2 },
        { "transformer", pipeline_flux1dev_transformer }, { "vae", pipeline_flux1dev_vae } } },
    { "lumina-image-2.0", "Alpha-VLLM/Lumina-Image-2.0", pipeline_lumina2_model_index,
      { { "text_encoder", pipeline_lumina2_text_encoder }, { "transformer", pipeline_lumina2_transformer },
        { "vae", pipeline_lumina2_vae } } },
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
    /* SD3: CLIP-L and CLIP-G at 77, T5 at max_sequence_length 256, the
       transformer on their concatenation along the sequence */
    { "StableDiffusion3Pipeline",
      { { "text_encoder", 77 }, { "text_encoder_2", 77 }, { "text_encoder_3", 256 }, { "denoiser", 77 + 256 } } },
    /* FLUX: CLIP-L's pooled output only, T5 at max_sequence_length 512 */
    { "FluxPipeline", { { "text_encoder", 77 }, { "text_encoder_2", 512 }, { "denoiser", 512 } } },
    /* Lumina 2: Gemma-2 on the system prompt + prompt, padded to 256 */
    { "Lumina2Pipeline", { { "text_encoder", 256 }, { "denoiser", 256 } } },
};

const pipeline_kind *pipeline_kind_find(const char *class_name)
{
    for (size_t i = 0; class_name && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].class_name, class_name) == 0) return &kinds[i];
    return NULL;
}
