/*
 * Running a loaded model on the cpu as transformers 5 calls it:
 * model(input_ids, attention_mask=..., position_ids=..., token_type_ids=...)
 * under no_grad, in eval mode.
 *
 * Decoder families of the zoo run through the cached forward
 * (mtk_lm_forward_cached) with a fresh cache, so their masks are the ones
 * masking_utils builds: causal, sliding window, and the padding of the
 * 2-D attention_mask; so do gpt2, gpt_neox, phi and the decoders'
 * classification heads (ForSequenceClassification scores each row's last
 * token that is not pad_token_id).  The BERT-like encoders take the padding and token
 * types.  Other models run their plain forward, which refuses an
 * attention_mask holding a 0 (it would be ignored).
 */
#ifndef MTK_RUN_H
#define MTK_RUN_H

#include "mtk/core.h"
#include "mtk/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one forward takes.  Every tensor is on the cpu. */
typedef struct mtk_model_inputs {
    mtk_tensor *input_ids;      /* (B, S) integers, required                  */
    mtk_tensor *attention_mask; /* (B, S) 0 / 1 (any integer or bool dtype);
                                   NULL: every token attends                  */
    mtk_tensor *position_ids;   /* (B or 1, S) integers; NULL: 0..S-1 (decoder
                                   families, their classification heads,
                                   gpt2, gpt_neox and phi included)           */
    mtk_tensor *token_type_ids; /* (B, S) integers; NULL: zeros (encoders)    */
    mtk_tensor *decoder_input_ids; /* (B, T) integers: the decoder's ids of an
                                   encoder-decoder (T5Model,
                                   T5ForConditionalGeneration), which needs
                                   them; NULL for any other model        */
} mtk_model_inputs;

#define MTK_MODEL_MAX_OUTPUTS 4

/* What it gives, named as transformers' ModelOutput fields: "logits", or
 * "last_hidden_state" [and "pooler_output"]. */
typedef struct mtk_model_outputs {
    const char *names[MTK_MODEL_MAX_OUTPUTS];
    mtk_tensor *tensors[MTK_MODEL_MAX_OUTPUTS];
    int32_t count;
} mtk_model_outputs;

/* Runs `model` (a module of the zoo on the cpu, loaded) on `in` and fills
 * `out` (tensors in the context).  Errors (false, the context's error):
 * MTK_ERR_SHAPE for inputs of the wrong rank or shapes that disagree with
 * input_ids (the message names both), MTK_ERR_INDEX for a token id outside
 * the vocabulary (naming it and the size), MTK_ERR_NOT_IMPLEMENTED for an
 * input the model's family does not take (padding of a family whose
 * forward has no mask, an encoder-decoder's padding), and the forward's
 * own errors.  An encoder-decoder gives the decoder's output ("logits" or
 * "last_hidden_state"), then "encoder_last_hidden_state". */
MTK_API bool mtk_model_run(mtk_module *model, const mtk_model_inputs *in, mtk_model_outputs *out);

/* ------------------------------------------------- diffusers components */

#define MTK_COMPONENT_MAX_INPUTS 8

/* What one call of a diffusers component takes: its named arguments as
 * diffusers names them, in any order (UNet2DConditionModel: "sample",
 * "timestep", "encoder_hidden_states" [, SDXL's "text_embeds",
 * "time_ids"]; AutoencoderKL: "x" to encode, "z" to decode, "sample" for
 * forward; SD3Transformer2DModel: "hidden_states",
 * "encoder_hidden_states", "pooled_projections", "timestep";
 * FluxTransformer2DModel: the same plus "img_ids", "txt_ids" [,
 * "guidance" when the config has guidance_embeds];
 * Lumina2Transformer2DModel: "hidden_states", "timestep",
 * "encoder_hidden_states", "encoder_attention_mask").  Every tensor is on
 * the cpu. */
typedef struct mtk_component_inputs {
    const char *method; /* "forward" (NULL too), "encode", "decode"      */
    const char *names[MTK_COMPONENT_MAX_INPUTS];
    mtk_tensor *tensors[MTK_COMPONENT_MAX_INPUTS];
    int32_t count;
} mtk_component_inputs;

/* The arguments `method` of `model` (a diffusers component's root) takes,
 * in diffusers' order, into names[0..cap) (static strings); *required
 * gets how many of them must be given (SDXL's added conditions and
 * FLUX.1-dev's guidance are required when the config has them).  Returns
 * how many, or -1 when the model is no component mtk runs or has no such
 * method (no error is set: mtk_component_run says why). */
MTK_API int32_t mtk_component_arguments(const mtk_module *model, const char *method, const char **names, int32_t cap,
                                        int32_t *required);

/* Runs `method` of `model` (a loaded diffusers component on the cpu) on
 * `in` under no_grad and eval, as diffusers calls it
 * (model(**inputs, return_dict=False)), and fills `out` with the output's
 * fields ("sample"; encode: "latent_dist.mean", the mode of the latent
 * distribution).  Inputs are cast as the pipelines cast them: floating
 * latents, embeddings and ids to the model's dtype, the transformers'
 * timestep and guidance to float32, the UNet's timestep kept (a 0-d or
 * (B,) tensor of any real dtype), Lumina 2's integer caption mask kept.
 * Errors (false, the context's error): MTK_ERR_INVALID_ARGUMENT for a
 * model that is no component (listing the classes mtk runs), an unknown
 * method, an argument the call does not take, a repeated or a missing one
 * (naming them and listing the call's arguments), a tensor not on the
 * cpu; MTK_ERR_NOT_IMPLEMENTED for a caption mask holding a 0 (the padded
 * layout of Lumina 2 is not built: naming the row and column);
 * MTK_ERR_SHAPE from the forward for shapes that disagree. */
MTK_API bool mtk_component_run(mtk_module *model, const mtk_component_inputs *in, mtk_model_outputs *out);

#ifdef __cplusplus
}
#endif
#endif /* MTK_RUN_H */
