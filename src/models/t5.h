/* The t5 family's internals shared by its files: family_t5.c builds the
 * modules and runs their plain forward, family_t5_generate.c decodes with
 * transformers' EncoderDecoderCache over the same modules. */
#ifndef MTK_MODELS_T5_H
#define MTK_MODELS_T5_H

#include "models/config.h"
#include "mtk/models.h"

/* The config of a T5ForConditionalGeneration, T5Model, ... module. */
typedef struct t5_spec {
    int64_t vocab, d_model, d_kv, d_ff, heads, layers, decoder_layers, buckets, max_distance, labels;
    int64_t eos, decoder_start; /* T5ForSequenceClassification's pooling and shift right; generate's start */
    double dropout, eps, classifier_dropout;
    const char *act;   /* dense_act_fn */
    bool gated;        /* is_gated_act */
    bool scale_output; /* scale_decoder_outputs */
} t5_spec;

/* The config of a T5Attention module. */
typedef struct t5_attention_config {
    int64_t heads, d_kv, buckets, max_distance;
    double dropout;     /* dropout_rate: sdpa's dropout_p in training     */
    bool relative_bias; /* has_relative_attention_bias: child 4          */
    bool decoder;       /* causal buckets; causal self-attention         */
    bool cross;         /* attends over the encoder's hidden states      */
} t5_attention_config;

/* torch.finfo(dtype).min */
double models_t5_dtype_min(mtk_dtype dtype);

/* T5Attention.compute_bias of `attention` (one with a relative attention
 * bias): the bias (1, H, Q, K) of queries at positions past..past+Q-1
 * over keys 0..K-1, on `like`'s device.  NULL with the context's error. */
mtk_tensor *models_t5_position_bias(mtk_module *attention, int64_t q_len, int64_t k_len, int64_t past,
                                    const mtk_tensor *like);

/* The encoder's padding as the decoder's cross-attention applies it:
 * where(mask, zeros(1, H, T, S), finfo.min) of the 2-D attention_mask (B,
 * S), (B, H, T, S) in `dtype` on `like`'s device.  NULL with *failed false
 * when the mask holds no padding. */
mtk_tensor *models_t5_cross_padding_bias(mtk_ctx *ctx, mtk_tensor *attention_mask, int64_t heads, int64_t t_len,
                                         mtk_dtype dtype, const mtk_tensor *like, bool *failed);

/* Whether `model` is a T5ForConditionalGeneration (models_t5_generate
 * decodes it). */
bool models_t5_generates(const mtk_module *model);

/* mtk_lm_generate for a T5ForConditionalGeneration with loaded weights:
 * transformers 5's generate(input_ids, attention_mask, do_sample=False)
 * for an encoder-decoder (see mtk/models.h).  The caller has checked the
 * options, the ids and that the weights are not on meta. */
mtk_tensor *models_t5_generate(mtk_module *model, mtk_tensor *input_ids, const mtk_generate_options *o,
                               mtk_generate_stats *stats);

/* One decoder layer's EncoderDecoderCache entries, (B, H, T or S, d_kv). */
typedef struct t5_layer_cache {
    mtk_tensor *self_k, *self_v;   /* the decoded tokens', grown each step */
    mtk_tensor *cross_k, *cross_v; /* the encoder output's, made once       */
} t5_layer_cache;

/* generate's encoder pass of a T5ForConditionalGeneration: the encoder's
 * output (B, S, D) of ids (B, S) and the cross-attention bias (1 or B, H,
 * 1, S) of the attention_mask (NULL: none; a mask must be on the cpu).
 * On the device of the context's scope (meta for the planner).  False
 * with the context's error. */
bool models_t5_encode(mtk_module *model, mtk_tensor *ids, mtk_tensor *mask, mtk_tensor **encoded,
                      mtk_tensor **cross_bias);

/* The cross-attention keys and values (B, H, S, d_kv) of each of the `nl`
 * decoder layers of `blocks` (the decoder's ModuleList) from the encoder's
 * output (B, S, D), into cache[i].cross_k/v.  False with the error. */
bool models_t5_fill_cross(mtk_ctx *ctx, mtk_module *blocks, mtk_tensor *encoded, t5_layer_cache *cache, int32_t nl);

/* One decoder forward of a T5ForConditionalGeneration on ids (B, 1) at
 * position `past` over the cache (self keys and values of `past` tokens,
 * NULL at 0; the cross ones filled): logits (B, 1, V); each layer's self
 * keys and values become the concatenation with the new token's.  NULL
 * with the context's error. */
mtk_tensor *models_t5_decoder_step(mtk_module *model, mtk_tensor *ids, int64_t past, t5_layer_cache *cache, int32_t nl,
                                   mtk_tensor *cross_bias);

#endif
