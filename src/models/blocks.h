/* Shared pieces of the gpt2, gpt_neox, bert and vit families (the
 * decoder-only LLMs have theirs in decoder.h): config fields with their
 * legacy aliases, the number of labels of a classification head, an
 * activation named by a config field, and the attention plumbing of
 * multi-head attention on (B, S, heads * head_dim) tensors. */
#ifndef MTK_MODELS_BLOCKS_H
#define MTK_MODELS_BLOCKS_H

#include "models/config.h"

/* An integer field that transformers also accepts under another name
 * (GPT2's n_embd / hidden_size): `key` when present, else `alias`, else
 * `dflt`; must be positive.  The message names the field that was read. */
int64_t models_blocks_positive_alias(const model_config *c, const char *key, const char *alias, int64_t dflt);

/* num_labels as transformers derives it: the size of id2label when the
 * config has one, else num_labels, else 2.  Must be >= 0. */
int64_t models_blocks_num_labels(const model_config *c);

/* ACT2FN[name] as a module, the error naming the config field when the
 * activation is unknown. */
mtk_module *models_blocks_activation(const model_config *c, const char *field, const char *name);

/* A dropout probability field: in [0, 1]. */
double models_blocks_dropout(const model_config *c, const char *key, double dflt);

/* A layer_norm_eps-like field: positive. */
double models_blocks_eps(const model_config *c, const char *key, double dflt);

/* The i-th child of m (registration order). */
static inline mtk_module *blocks_child(mtk_module *m, int32_t i) { return mtk_module_child_at(m, i, NULL); }

/* (B, S, n * head_dim) -> (B, n, S, head_dim) */
mtk_tensor *models_blocks_split_heads(mtk_ctx *ctx, mtk_tensor *x, int64_t n, int64_t head_dim);
/* (B, n, S, head_dim) -> (B, S, n * head_dim) */
mtk_tensor *models_blocks_merge_heads(mtk_ctx *ctx, mtk_tensor *x);

/* Multi-head attention with separate projections, as bert's and vit's
 * self-attention compute it: children 0, 1, 2 of m are the query, key
 * and value linears applied to x; softmax(q k^T / sqrt(head_dim)) v over
 * all positions (causal when asked; sdpa's dropout_p `dropout`; `mask`
 * (B, 1, S, S) bool, keys seen where true, or NULL), heads merged back.
 * (B, S, heads * head_dim) -> (B, S, heads * head_dim); NULL on error. */
mtk_tensor *models_blocks_qkv_attention(mtk_module *m, mtk_tensor *x, int64_t heads, int64_t head_dim, bool causal,
                                 double dropout, mtk_tensor *mask);

/* torch.arange(n, device=like.device) as int64: positions 0..n-1 on the
 * device of the tensor they go with (not the context's default). */
mtk_tensor *models_blocks_positions(mtk_ctx *ctx, int64_t n, const mtk_tensor *like);

/* h through each child of `layers` (a ModuleList) in turn; NULL when h
 * is or a layer fails (the context's error). */
mtk_tensor *models_blocks_run_layers(mtk_module *layers, mtk_tensor *h);

/* The forward of an encoder module whose child 0 is its layers' ModuleList
 * (BertEncoder, SiglipEncoder): in[0] through each layer in turn. */
bool models_blocks_encoder_forward(mtk_module *m, mtk_module_io *io);

/* *out = *base named prefix + base->name (the name in the arena): a
 * family's class names ("Gemma3" + "DecoderLayer").  False with the
 * context's error when out of memory. */
bool models_blocks_named_type(mtk_ctx *ctx, mtk_module_type *out, const mtk_module_type *base, const char *prefix);

/* A Python local (or an object such as a DynamicCache) holds t until
 * here: a zero-width view of it records that use, as the memory plan
 * frees a storage after the last node that reads it.  NULL t: nothing to
 * hold, true.  False on error. */
bool models_blocks_held_until_here(mtk_ctx *ctx, mtk_tensor *t);

/* Checks a language model's input: (B, S) token ids of an integer dtype,
 * S at most `max_positions` (0: no limit; `field` names that limit in the
 * message).  False with the error set. */
bool models_blocks_check_token_ids(mtk_module *m, const mtk_tensor *ids, int64_t max_positions, const char *field);

/* create_bidirectional_mask for sdpa: the 2-D attention_mask (B, S) of
 * 0 / 1 on the cpu as bool (B, 1, S, S), key j seen where mask[b, j]; NULL
 * with *failed false when it has no 0 (transformers passes no mask then),
 * NULL with *failed and the context's error on an error. */
mtk_tensor *models_blocks_bidirectional_mask(mtk_ctx *ctx, mtk_tensor *mask, bool *failed);

/* The mask masking_utils' create_causal_mask gives sdpa for a forward
 * without a past: (B, 1, S, S) bool, key j seen by query i when j <= i,
 * j > i - window (window 0: none) and attention_mask[b, j] (a 2-D 0 / 1
 * mask on the cpu).  NULL with *failed false when sdpa's is_causal does
 * the same (no 0 in the mask, the window not shorter than S); NULL with
 * *failed and the context's error on an error.  (decoder_cache.c: the
 * same builder as the cached forward's masks.) */
mtk_tensor *models_padded_causal_mask(mtk_ctx *ctx, mtk_tensor *attention_mask, int64_t window, bool *failed);

#endif
