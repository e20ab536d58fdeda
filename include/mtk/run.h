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

#ifdef __cplusplus
}
#endif
#endif /* MTK_RUN_H */
