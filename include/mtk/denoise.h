/*
 * Running a diffusers denoiser on the cpu as its pipeline calls it:
 * model(**inputs, return_dict=False)[0] under no_grad, with the forward's
 * arguments given by diffusers' names (hidden_states, timestep,
 * encoder_hidden_states, pooled_projections, img_ids, txt_ids, guidance,
 * encoder_attention_mask ...).  The argument list and its order are the
 * component's pipeline calls (src/models/diffusers.h): SD3Transformer2DModel,
 * FluxTransformer2DModel, Lumina2Transformer2DModel, and any other class
 * whose row there is a denoiser.
 */
#ifndef MTK_DENOISE_H
#define MTK_DENOISE_H

#include "mtk/core.h"
#include "mtk/models.h"
#include "mtk/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MTK_DENOISER_MAX_INPUTS 16

/* The names of the forward's arguments of the denoiser `config` describes,
 * in diffusers' order, into names[0..cap) (static strings); returns how
 * many.  -1 with the context's error: MTK_ERR_INVALID_ARGUMENT when the
 * class is not a diffusers denoiser (naming it), the config's own
 * errors. */
MTK_API int32_t mtk_denoiser_input_names(mtk_model_config *config, const char **names, int32_t cap);

/* Runs `model` (built from `config` and loaded on the cpu) on `inputs`
 * (`count` of them, each a cpu tensor named as diffusers' argument) and
 * returns the prediction ("sample", in the context).  Every argument of
 * mtk_denoiser_input_names must be given once and nothing else; floating
 * inputs are cast as the pipeline casts them (latents and embeddings to
 * the model's dtype, the timestep of SD3 / Lumina 2 to float32) and
 * integer masks kept.  Errors (NULL, the context's error):
 * MTK_ERR_INVALID_ARGUMENT for a missing, repeated or unknown argument
 * (naming it and the list), or a tensor not on the cpu;
 * MTK_ERR_NOT_IMPLEMENTED for an attention mask holding a 0 (the padded
 * caption layout of Lumina 2 is not built: every token is taken as
 * real); the forward's own errors (shapes). */
MTK_API mtk_tensor *mtk_denoiser_run(mtk_module *model, mtk_model_config *config, const mtk_named_tensor *inputs,
                                     int32_t count);

#ifdef __cplusplus
}
#endif
#endif /* MTK_DENOISE_H */
