/* Internal interface of the diffusers pipelines (pipeline.c, pipelines.c,
 * pipeline_configs_*.c): the published configs of the built-in pipelines,
 * and what each pipeline class fixes for its components. */
#ifndef MTK_MODELS_PIPELINE_H
#define MTK_MODELS_PIPELINE_H

#include "models/diffusers.h"
#include "mtk/diffusion.h"

/* pipeline_configs_sd.c */
extern const char pipeline_sd15_model_index[], pipeline_sd15_text_encoder[], pipeline_sd15_unet[],
    pipeline_sd15_vae[];
extern const char pipeline_sdxl_model_index[], pipeline_sdxl_text_encoder[], pipeline_sdxl_text_encoder_2[],
    pipeline_sdxl_unet[], pipeline_sdxl_vae[];
/* pipeline_configs_dit.c */
extern const char pipeline_sd35m_model_index[], pipeline_sd35m_text_encoder[], pipeline_sd35m_text_encoder_2[],
    pipeline_sd35m_text_encoder_3[], pipeline_sd35m_transformer[], pipeline_sd35m_vae[];
extern const char pipeline_flux1dev_model_index[], pipeline_flux1dev_text_encoder[], pipeline_flux1dev_text_encoder_2[],
    pipeline_flux1dev_transformer[], pipeline_flux1dev_vae[];
extern const char pipeline_lumina2_model_index[], pipeline_lumina2_text_encoder[], pipeline_lumina2_transformer[],
    pipeline_lumina2_vae[];

/* What a pipeline class (model_index.json's _class_name) fixes for its
 * components: the token length each text encoder is called with and the
 * denoiser sees (the pipelines' max_sequence_length, or the tokenizer's
 * model_max_length; 0: the component's max_position_embeddings, 77 for a
 * denoiser).  A class without a row gets those defaults. */
typedef struct pipeline_tokens {
    const char *component;  /* "text_encoder_2", or "denoiser" */
    int64_t tokens;
} pipeline_tokens;

typedef struct pipeline_kind {
    const char *class_name;
    pipeline_tokens tokens[MTK_PIPELINE_MAX_COMPONENTS];
} pipeline_kind;

/* The row of a pipeline class (pipelines.c); NULL when none. */
const pipeline_kind *pipeline_kind_find(const char *class_name);

#endif
