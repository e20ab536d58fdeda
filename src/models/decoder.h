/* The decoder-only LLMs of the zoo (llama, mistral, mixtral, qwen2,
 * qwen2_moe, gemma, gemma2, phi3) are one architecture with switches:
 * RMSNorm, rotary embedding, (grouped-query) causal attention, a gated MLP
 * or a mixture of experts.  A family file reads its config into a
 * decoder_spec and calls models_decoder_build, which builds transformers' module
 * tree with the family's class names ("LlamaDecoderLayer") and exact
 * state-dict keys.
 *
 *   decoder_rope.c     rope settings (rope_parameters / rope_scaling) and
 *                      the rotary embedding module (inv_freq buffers)
 *   decoder_blocks.c   RMSNorm, scaled embedding, attention, MLP
 *   decoder_moe.c      routers, experts and the sparse MoE blocks
 *   decoder_mla.c      multi-head latent attention (deepseek_v3)
 *   decoder_model.c    decoder layer, base model, causal LM, the common
 *                      config fields */
#ifndef MTK_MODELS_DECODER_H
#define MTK_MODELS_DECODER_H

#include "models/config.h"

typedef enum rope_kind { ROPE_DEFAULT, ROPE_LINEAR, ROPE_DYNAMIC, ROPE_LLAMA3, ROPE_YARN, ROPE_LONGROPE } rope_kind;

/* Rotary embedding settings, as transformers' rope init functions read
 * them. */
typedef struct rope_spec {
    rope_kind kind;
    double theta;                 /* rope_theta                                   */
    double factor;                /* linear, dynamic, llama3                      */
    double low_freq_factor;       /* llama3                                       */
    double high_freq_factor;      /* llama3                                       */
    int64_t original_max_position;/* llama3: original_max_position_embeddings     */
    int64_t max_position;         /* max_position_embeddings (dynamic)            */
    int64_t dim;                  /* rotated dims: int(head_dim * partial_rotary_factor) */
    double attention_factor;      /* yarn, longrope: cos and sin are scaled by it (else 1) */
    double beta_fast, beta_slow;  /* yarn                                         */
    bool truncate;                /* yarn: correction range rounded outwards      */
    const float *short_factor;    /* longrope: dim / 2 values (arena)             */
    const float *long_factor;     /* longrope: used past original_max_position    */
    bool interleaved;             /* llama4: pairs (x[2i], x[2i+1]) rotate (complex
                                     multiplication, rope_complex by freqs_cis) */
    bool half_width;              /* gpt_oss: cos and sin (1, S, dim / 2), each
                                     frequency once (_apply_rotary_emb's halves) */
    bool keep_float32;            /* olmo2: cos and sin stay float32 (the rotated
                                     q and k are cast back to their dtype)      */
    bool always_cat;              /* glm4_moe: the rotated dims are concatenated
                                     with the passed-through ones even when none
                                     pass (a new contiguous tensor)             */
} rope_spec;

typedef enum moe_kind {
    MOE_NONE,
    MOE_MIXTRAL,   /* gate (router), experts                                     */
    MOE_QWEN2,     /* gate, experts, shared_expert, shared_expert_gate           */
    MOE_QWEN3,     /* experts, gate (no shared expert)                          */
    MOE_GPT_OSS,   /* router (weight, bias), experts with biases, stored (E, H, 2I)
                      with gate/up interleaved, clamped swiglu (decoder_moe_fused.c) */
    MOE_LLAMA4,    /* experts (E, H, 2I), router (sigmoid of the top-k), shared
                      expert; every expert runs on every token, pre-scaled by its
                      score (decoder_moe_fused.c)                                */
    MOE_DEEPSEEK   /* deepseek_v3, glm4_moe: experts, gate (sigmoid scores,
                      grouped top-k, score correction bias), shared_experts
                      (an MLP added without a gate)                            */
} moe_kind;

/* Multi-head latent attention (deepseek_v3): low-rank q (q_lora_rank, 0:
 * a plain q_proj) and a compressed kv latent of kv_lora_rank shared by
 * every head, plus one rotary key of qk_rope_dim shared by every head. */
typedef struct mla_dims {
    int64_t q_lora_rank, kv_lora_rank;
    int64_t qk_nope_dim, qk_rope_dim, v_head_dim;
    bool interleave;             /* rope_interleave: pairs (x0, x1), (x2, x3)... */
} mla_dims;

#define DECODER_MAX_MLP_ONLY 256

struct decoder_types;
struct decoder_spec;
/* A family's own decoder layer (olmo2, smollm3); see models_decoder_layer. */
typedef mtk_module *(*decoder_layer_builder)(mtk_ctx *ctx, const struct decoder_types *t,
                                             const struct decoder_spec *spec, int64_t index);

typedef struct decoder_spec {
    const char *prefix;          /* class name prefix: "Llama" -> LlamaModel, ... */
    int64_t vocab, hidden, layers, intermediate;
    cfg_attention_dims attn;
    bool qkv_bias, o_bias, mlp_bias;
    bool fused_qkv;              /* phi3: qkv_proj (registered after o_proj)      */
    bool fused_gate_up;          /* phi3: gate_up_proj, activation_fn             */
    const char *act;             /* hidden_act ("silu")                           */
    double eps;                  /* rms_norm_eps                                  */
    bool norm_plus_one;          /* gemma: weight starts at 0, x * (1 + w)        */
    bool scaled_embedding;       /* gemma: <Prefix>TextScaledWordEmbedding        */
    bool sandwich_norms;         /* gemma2: pre/post_feedforward_layernorm        */
    bool eager_attention;        /* gemma2: matmul-softmax-matmul (softcapping)   */
    bool experts_batched_mm;     /* _experts_implementation batched_mm: per-pair
                                    weight gathers and bmm (decoder_moe.c)      */
    bool experts_grouped_mm;     /* grouped_mm (the default): sorted pairs and
                                    _grouped_mm (decoder_moe_grouped.c)         */
    double attn_scale;           /* head_dim^-0.5 unless the family says         */
    double attn_softcap;         /* 0: none                                       */
    double final_softcap;        /* 0: none                                       */
    double resid_dropout;        /* phi3: resid_attn/mlp_dropout children; < 0 none */
    int64_t padding_idx;         /* pad_token_id or MTK_NN_NO_PADDING_IDX         */
    bool tie_embeddings;
    double initializer_range;
    rope_spec rope;
    moe_kind moe;
    int64_t experts, top_k, moe_intermediate, shared_intermediate;
    bool norm_topk_prob;
    int64_t sparse_step;         /* qwen2_moe decoder_sparse_step                 */
    int64_t mlp_only[DECODER_MAX_MLP_ONLY];
    int32_t n_mlp_only;
    bool qk_norm;                /* qwen3: q_norm, k_norm (RMSNorm over head_dim) */
    bool moe_experts_first;      /* qwen3_moe: experts registered before gate    */
    bool rope_longrope_aliases;  /* phi3: rope types "su" and "yarn" mean longrope */
    int64_t rope_original_max;   /* phi3: its config's original_max_position_embeddings
                                    default (4096, wins over the rope object's); 0: none */
    bool qk_norm_whole;          /* olmo2: q_norm/k_norm over the whole projection
                                    (heads * head_dim), before the heads split   */
    bool norm_weight_float32;    /* olmo2: RMSNorm's weight times the float32
                                    normalized x, then cast back              */
    decoder_layer_builder layer_builder; /* NULL: models_decoder_layer                  */
    const void *layer_data;      /* the layer_builder's (smollm3: rope per layer) */
    double embedding_multiplier; /* granite: embeddings times it (0 or 1: none)   */
    double logits_scaling;       /* granite: logits divided by it (0 or 1: none)  */
    const int64_t *layer_window; /* per layer: sliding window, 0: full
                                    attention (NULL: every layer full)   */
    uint8_t masks;               /* DECODER_MASK_*: the masks the model's
                                    forward builds (0: the full one)      */
    int64_t mask_window;         /* the sliding mask's window             */
    const int64_t *layer_chunk;  /* llama4: per layer, attention_chunk_size of a
                                    chunked_attention layer, 0: none (NULL: none) */
    bool attn_sinks;             /* gpt_oss: self_attn.sinks (heads), a learned
                                    logit per head in the softmax's denominator */
    double swiglu_alpha, swiglu_limit; /* gpt_oss experts: clamped swiglu      */
    const char *mlp_name;        /* the layer's MLP child (NULL: "mlp"; llama4:
                                    "feed_forward")                           */
    bool qk_l2_norm;             /* llama4: queries and keys L2-normalized (no
                                    weight) after rope, on layers with rope, by
                                    the attention's qk_norm child             */
    bool mlp_activation_fn;      /* llama4: the MLP's activation child is named
                                    activation_fn (else act_fn)               */
    double temperature_floor;    /* llama4 attn_temperature_tuning on layers
                                    without rope: queries times
                                    1 + attn_scale * log1p(floor((pos + 1) /
                                    floor_scale)); 0: none                    */
    double temperature_scale;
    const char *causal_lm_class; /* NULL: <Prefix>ForCausalLM (llama4:
                                    Llama4ForCausalLM over Llama4TextModel)   */
    bool mla;                    /* deepseek_v3: <Prefix>Attention is MLA (mla) */
    mla_dims mla_dims;
    int64_t first_dense;         /* deepseek_v3, glm4_moe first_k_dense_replace:
                                    layers below it are dense                  */
    int64_t n_group, topk_group; /* MOE_DEEPSEEK: expert groups, groups kept  */
    double routed_scaling;       /* MOE_DEEPSEEK: routed_scaling_factor       */
    const char *model_name;      /* the base model's class (gemma3: Gemma3TextModel);
                                    NULL: <Prefix>Model                   */
    bool local_rope_on;          /* gemma3: sliding layers rotate with local_rope */
    rope_spec local_rope;        /* gemma3: rope_parameters.sliding_attention */
    uint8_t rope_types;          /* gemma3: DECODER_MASK_* bits of the layer types
                                    present (which rope buffers exist)   */
    int64_t window_pattern;      /* WINDOW_PATTERN: every window_pattern-th
                                    layer is full                         */
    double partial_rotary_default; /* glm4_moe: 0.5; 0: 1.0               */
} decoder_spec;

/* The attention masks a family's model forward builds every call (with a
 * KV cache), whether or not a layer uses them, as transformers 5 does. */
enum { DECODER_MASK_FULL = 1, DECODER_MASK_SLIDING = 2, DECODER_MASK_CHUNKED = 4 };

/* Which layers of a family slide, as transformers 5's configs say when
 * they list no layer_types. */
typedef enum window_rule {
    WINDOW_ALL,        /* mistral, mixtral, phi3: every layer when
                          sliding_window is set                          */
    WINDOW_FROM,       /* qwen2: layers >= max_window_layers when
                          use_sliding_window                              */
    WINDOW_EVEN_BELOW, /* qwen2_moe: even layers < max_window_layers when
                          use_sliding_window                              */
    WINDOW_EVEN,       /* gemma2: even layers (sliding, full, ...)        */
    WINDOW_PATTERN     /* gemma3: layer i slides unless (i + 1) %
                          sliding_window_pattern == 0 (default 6)         */
} window_rule;

/* Reads the per-layer sliding windows into spec->layer_window: an explicit
 * layer_types list ("sliding_attention" / "full_attention") wins, else
 * `rule`; the window is sliding_window (`default_window` when absent, none
 * when null).  Needs spec->layers.  False with the error naming the
 * field. */
/* Whether token is one of o's eos ids (generate stops a row there). */
bool models_generate_is_eos(const mtk_generate_options *o, int64_t token);

/* The ids of each row's argmax over the last position of logits (B, k,
 * vocab), in float32 (transformers' logits.to(float32)): the first of
 * equal maxima, NaN above everything (torch.argmax); each row's float32
 * logits into `keep` (B x vocab) when given.  False on an error. */
bool models_generate_last_argmax(mtk_ctx *ctx, mtk_tensor *logits, int64_t *out, float *keep);

bool models_decoder_read_windows(model_config *c, decoder_spec *spec, window_rule rule, int64_t default_window);

/* The routing keys the Qwen MoE families (qwen2_moe, qwen3_moe) share,
 * read after their expert sizes: norm_topk_prob, decoder_sparse_step and
 * mlp_only_layers; then checks num_experts (non-negative) and
 * num_experts_per_tok (at most num_experts), and with no experts makes
 * every layer dense (moe = MOE_NONE). False, with the config's error set,
 * when a key is off. */
bool models_decoder_read_qwen_moe(model_config *c, decoder_spec *spec);

/* Whether layer `index` of the spec has a sparse MoE block. */
bool models_decoder_layer_is_sparse(const decoder_spec *spec, int64_t index);

/* Notes the parameters active per token of a MoE model `m` built from
 * `spec` (the experts a token does not reach: num_experts - top_k of each
 * sparse layer's) and records them in c->active_params.  No-op for NULL
 * or a dense spec. */
void models_decoder_note_active(model_config *c, const decoder_spec *spec, mtk_module *m);

/* Family defaults for the fields models_decoder_read_common reads. */
typedef struct decoder_defaults {
    int64_t kv_heads;            /* 0: num_attention_heads                       */
    int64_t head_dim;            /* 0: hidden_size / num_attention_heads         */
    double eps;
    bool tie_embeddings;
    const char *act;
    int64_t pad_token_id;        /* MTK_NN_NO_PADDING_IDX: None                  */
    double rope_theta;
    bool longrope_aliases;       /* phi3: "su" and "yarn" are longrope           */
    int64_t original_max_position; /* phi3: 4096; 0: the config class has none   */
    double partial_rotary;       /* glm4_moe: 0.5; 0: 1.0                       */
} decoder_defaults;

/* Reads what every family shares: vocab_size, hidden_size,
 * intermediate_size, num_hidden_layers, num_attention_heads (required),
 * num_key_value_heads, head_dim, rms_norm_eps, hidden_act,
 * tie_word_embeddings, pad_token_id, initializer_range, and the rope
 * settings (models_decoder_read_rope).  Sets attn_scale = head_dim^-0.5, no
 * biases, no MoE.  False with the error naming the field. */
bool models_decoder_read_common(model_config *c, decoder_spec *spec, const char *prefix, const decoder_defaults *d);

/* rope_parameters (transformers 5) or rope_scaling + rope_theta (older
 * configs), partial_rotary_factor; rope types default, linear, dynamic,
 * llama3, yarn, longrope (others: an error listing these).  Needs
 * spec->attn.head_dim. */
bool models_decoder_read_rope(model_config *c, decoder_spec *spec, double default_theta);

/* yarn and longrope (decoder_rope_scaling.c): reads the type's fields of
 * `obj` (the rope_parameters / rope_scaling object named obj_name) into
 * spec->rope, whose theta, dim, max_position and kind are set; the
 * original length from the object or the top level as transformers
 * standardizes it.  False with the error naming the field. */
bool models_decoder_read_rope_scaling(model_config *c, decoder_spec *spec, const cJSON *obj, const char *obj_name);
/* inv_freq of a yarn or longrope spec (longrope: the long factors when
 * `long_factors`), in float32 arithmetic as transformers computes it. */
void models_decoder_rope_scaled_inv_freq(const rope_spec *r, bool long_factors, float *out);

/* The sparse MoE blocks whose experts are stored (E, H, 2I) and (E, I, H)
 * (decoder_moe_fused.c): GptOssMLP (MOE_GPT_OSS) and Llama4TextMoe
 * (MOE_LLAMA4).  NULL with the error set. */
struct decoder_types;
mtk_module *models_decoder_moe_fused(mtk_ctx *ctx, const struct decoder_types *t, const decoder_spec *spec);

/* One expert's output for its rows (n, H) -> (n, H); NULL with the error set. */
typedef mtk_tensor *(*models_moe_expert_fn)(mtk_module *m, int64_t expert, mtk_tensor *rows);
/* Real routing (decoder_moe_dispatch.c): x (T, H), the router's indices
 * (T, k) into `experts` and weights (T, k) -> (T, H) in x's dtype, the sum
 * over each token's k experts of weight * expert(x) (scale_input: of
 * expert(weight * x), llama4's pre-scaled input), each expert run by
 * `expert` on exactly its tokens, experts without tokens skipped.  Needs
 * data (not meta).  NULL with the error set (an index out of range
 * included). */
mtk_tensor *models_moe_dispatch(mtk_module *m, mtk_tensor *x, mtk_tensor *indices, mtk_tensor *weights,
                                int64_t experts, bool scale_input, models_moe_expert_fn expert);

/* The experts' weights as transformers' grouped_mm takes them, and their
 * gated activation. */
typedef struct models_moe_grouped_weights {
    mtk_tensor *gate_up, *down;             /* (E, H, 2I) and (E, I, H), views  */
    mtk_tensor *gate_up_bias, *down_bias;   /* (E, 2I) and (E, H), or NULL      */
    mtk_tensor *(*gate)(mtk_module *m, mtk_tensor *h); /* (S, 2I) -> (S, I)     */
} models_moe_grouped_weights;
/* transformers' grouped_mm experts op by op, for the meta trace
 * (decoder_moe_grouped.c): x (T, H), indices (T, k), weights (T, k) ->
 * (T, H) in x's dtype; sizes set by T * k and E whatever the routing.
 * NULL with the error set. */
mtk_tensor *models_moe_grouped(mtk_module *m, mtk_tensor *x, mtk_tensor *indices, mtk_tensor *weights,
                               const models_moe_grouped_weights *w);

/* Builds <Prefix>Model or <Prefix>ForCausalLM (architecture) from the spec.
 * MoE specs add the balanced-routing note to the config. */
mtk_module *models_decoder_build(model_config *c, const decoder_spec *spec, const char *architecture);

/* Whether `architecture` is a <Prefix>ForSequenceClassification,
 * <Prefix>ForTokenClassification or <Prefix>ForQuestionAnswering
 * (decoder_heads.c). */
bool models_decoder_is_classifier(const char *architecture);
/* Whether `m` is one of those heads (models_classifier's); its forward
 * takes (ids[, attention_mask[, position_ids]]) and hands them to its base
 * model. */
bool models_classifier_is(const mtk_module *m);
/* That head over the base model `model` (NULL propagates): model, score
 * (sequence) or model, dropout, score (token), num_labels from id2label /
 * num_labels.  NULL with the error set. */
mtk_module *models_decoder_classifier(model_config *c, const decoder_spec *spec, mtk_module *model, const char *architecture);

/* How a family names and sizes its classification heads. */
typedef struct classifier_head {
    const char *base_name;    /* the base model's attribute: "model", "transformer" */
    int64_t hidden;           /* the base model's output features                  */
    int64_t pad;              /* pad_token_id or MTK_NN_NO_PADDING_IDX              */
    const char *token_linear; /* the token head's Linear: "score", "classifier"     */
    bool token_bias;          /* that Linear's bias                                 */
    double token_dropout;     /* the token head's dropout p                         */
} classifier_head;
/* <X>ForSequenceClassification (base, score: Linear(hidden, num_labels,
 * bias=False), pooled at each row's last non-pad token) or
 * <X>ForTokenClassification (base, dropout, token_linear) over `model`
 * (NULL propagates), as `head` names them.  NULL with the error set. */
mtk_module *models_classifier(model_config *c, mtk_module *model, const char *architecture, const classifier_head *head);
/* transformers' token-head dropout rule: classifier_dropout, else
 * hidden_dropout, else 0.1. */
double models_classifier_dropout(model_config *c);
/* pad_token_id, MTK_NN_NO_PADDING_IDX when absent or null. */
int64_t models_classifier_pad(model_config *c);

/* ---------------------------------------------------------- internals */

/* The family's module types, named "<Prefix>DecoderLayer" etc., made once
 * per build in the arena. */
typedef struct decoder_types {
    mtk_module_type causal_lm, model, layer, attention, mlp, norm, rotary, embedding;
    mtk_module_type moe_block, router, experts;
} decoder_types;

bool models_decoder_types_init(mtk_ctx *ctx, decoder_types *t, const char *prefix);

/* The family's <Prefix>DecoderLayer number `index`: self_attn, mlp,
 * input_layernorm, post_attention_layernorm (+ gemma2's, phi3's extras),
 * forward (h, cos, sin) -> h.  A layer_builder may call it (with an
 * adjusted spec: rope.dim 0 is a layer without rope). */
mtk_module *models_decoder_layer(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t index);

/* Builders of the pieces (decoder_rope.c, decoder_blocks.c, models_decoder_moe.c);
 * NULL with the error set. */
mtk_module *models_decoder_rotary(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec);
mtk_module *models_decoder_norm(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec);
mtk_module *models_decoder_embedding(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec);
mtk_module *models_decoder_attention(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t layer);
mtk_module *models_decoder_mlp(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t intermediate);
mtk_module *models_decoder_moe(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec);

/* The body of a rotary decoder model after its embeddings: `rotary` on h
 * gives (cos, sin); each child of `layers` maps (h, cos, sin) to the next
 * h; `norm` ends it.  (B, S, hidden) -> (B, S, hidden); NULL on error. */
mtk_tensor *models_decoder_run_layers(mtk_module *rotary, mtk_module *layers, mtk_module *norm, mtk_tensor *h);
/* The same with a mask (B, 1, S, S) bool given to each layer as its fourth
 * input (h, cos, sin, mask): gpt_neox's and phi's layers, which pass it to
 * their attention.  `positions` (B or 1, S) integers are the rotary's
 * position_ids (NULL: 0..S-1).  NULL mask and positions:
 * models_decoder_run_layers. */
mtk_tensor *models_decoder_run_layers_masked(mtk_module *rotary, mtk_module *layers, mtk_module *norm, mtk_tensor *h,
                                             mtk_tensor *mask, mtk_tensor *positions);

/* The (cos, sin) pair of `layer` among the rotary outputs: (out[0],
 * out[1]), or with two rope types (gemma3: full, then sliding) out[2],
 * out[3] for a layer whose attention slides. */
void models_decoder_layer_rope(const mtk_module_io *cos_sin, mtk_module *layer, mtk_tensor **cos, mtk_tensor **sin);

/* Whether layer `index` of the spec has a sparse MoE block. */
bool models_decoder_layer_is_sparse(const decoder_spec *spec, int64_t index);

/* Adds the note "active parameters per token: N of M (k of E experts in
 * each of L MoE layers)" for model m of the spec: each sparse layer's
 * (E - k) idle experts are not active. */
void models_decoder_note_active(model_config *c, const decoder_spec *spec, mtk_module *m);

/* A multimodal family's vision parts: from the config and its
 * vision_config (`vision`, an empty object when absent), the tower and the
 * projector to the text model's hidden size.  False with the error set. */
typedef bool (*multimodal_vision_builder)(model_config *c, model_config *vision, int64_t text_hidden,
                                          mtk_module **tower, mtk_module **projector);

/* The multimodal wrappers (gemma3, mistral3; decoder_multimodal.c):
 * builds the text model of the config's text_config with `text_build`
 * (its base class `text_base`), the vision tower and projector with
 * `vision_build`, and wraps them as
 * transformers 5 does: <prefix>Model (vision_tower, multi_modal_projector,
 * language_model) and <prefix>ForConditionalGeneration (model, lm_head
 * tied to model.language_model.embed_tokens when the top-level
 * tie_word_embeddings, default true).  NULL with the error set. */
mtk_module *models_decoder_build_multimodal(model_config *c, const char *architecture, const char *prefix,
                                            model_family_builder text_build, const char *text_type,
                                            const char *text_base, multimodal_vision_builder vision_build);

/* The wrapping itself (decoder_model.c): <prefix>Model with `tower` and
 * `projector` (both NULL: none) and `text` (a decoder base model, the
 * last child) as language_model; for an architecture ending in
 * ForConditionalGeneration also the LM over it (model, lm_head, tied when
 * `tie`).  The forward runs the language model on token ids.  NULL
 * (propagated) with the error set. */
mtk_module *models_decoder_wrap_text(model_config *c, mtk_module *text, mtk_module *tower, mtk_module *projector,
                                     const char *prefix, const char *architecture, bool tie);

/* SigLIP's vision tower (SiglipVisionModel) of a siglip_vision_model
 * config, and Gemma 3's multi-modal projector (vision_siglip.c).  NULL
 * with the error set. */
mtk_module *models_siglip_vision(model_config *vision);
mtk_module *models_gemma3_projector(model_config *c, model_config *vision, int64_t text_hidden);

/* Pixtral's vision tower (PixtralVisionModel) and Mistral 3's projector,
 * parameters and buffers only (vision_pixtral.c).  NULL with the error
 * set. */
mtk_module *models_pixtral_vision(model_config *vision);
mtk_module *models_mistral3_projector(model_config *c, model_config *vision, int64_t text_hidden, double text_eps);

/* MOE_GROUPED's class names (decoder_moe.c): <Prefix>MoE, <Prefix>TopkRouter. */

/* The pieces of a decoder model of the zoo: a <Prefix>ForCausalLM (lm_head
 * set) or a <Prefix>Model (lm_head NULL), and of the families with layer
 * stacks of their own (gpt2, gpt_neox, phi: see own_layers).  False (no
 * error) for any other module.
 *
 * With a cache, layer i of `layers` is called as the decoder layer is:
 * (h, cos, sin, past_k, past_v[, mask]) -> (h, keys, values), where keys
 * and values are the past concatenated with this step's; without rotary
 * (gpt2) as (h, past_k, past_v[, mask]). */
struct decoder_cache_shape;
typedef struct decoder_parts {
    mtk_module *embed, *layers, *norm, *rotary, *lm_head;
    mtk_module *positions;       /* gpt2: wpe, added to the token embeddings at
                                    the position ids (NULL: none; then rotary) */
    double final_softcap;
    double embedding_multiplier; /* granite: embeddings times it; 1: none  */
    double logits_scaling;       /* granite: logits divided by it; 1: none */
    uint8_t masks;
    int64_t mask_window;
    /* own layers: the cache shape of layer `layer` (full attention, sdpa);
       NULL: the zoo's <Prefix>Attention, the layer's first child */
    void (*own_layers)(mtk_module *layer, struct decoder_cache_shape *out);
    int64_t padding_idx; /* the text model's pad_token_id or MTK_NN_NO_PADDING_IDX */
} decoder_parts;

bool models_decoder_parts_of(mtk_module *m, decoder_parts *out);

/* The same for each family with its own layers (family_gpt2.c,
 * family_gpt_neox.c, family_phi.c); models_decoder_parts_of asks them. */
bool models_gpt2_parts_of(mtk_module *m, decoder_parts *out);
bool models_gpt_neox_parts_of(mtk_module *m, decoder_parts *out);
bool models_phi_parts_of(mtk_module *m, decoder_parts *out);

/* The tensor fields of layer `layer` of `cache` (which: 0 keys_base, 1
 * values_base, 2 keys, 3 values), for generate to keep them across an
 * arena reset (mtk_ctx_arena_reset); NULL out of range. */
struct mtk_kv_cache;
mtk_tensor **models_kv_cache_slot(struct mtk_kv_cache *cache, int32_t layer, int32_t which);

/* What the KV cache needs of a layer's <Prefix>Attention module: the
 * cached keys are (B, kv_heads, T, key_dim), the values (B, kv_heads, T,
 * value_dim).  MLA caches its latents instead, as transformers 5 does:
 * "keys" the normed kv latent (B, 1, T, kv_lora_rank), "values" the
 * rotated shared key (B, 1, T, qk_rope_dim). */
typedef struct decoder_cache_shape {
    int64_t kv_heads, key_dim, value_dim, window;
    bool eager;
} decoder_cache_shape;

void models_decoder_attention_shape(const mtk_module *attn, decoder_cache_shape *out);

/* The attention core the zoo's attention modules share: without a cache
 * causal sdpa (or eager matmul-softmax-matmul), with one (`cached`) sdpa
 * or eager under `mask` (NULL: is_causal when S > 1).  q (B, H, S, D), k
 * (B, KV, T, D), v (B, KV, T, Dv) -> (B, H, S, Dv). */
typedef struct decoder_attend {
    int64_t heads, kv_heads, head_dim;
    double scale, softcap;
    bool eager;
    int64_t window, chunk; /* without a cache: the sliding / chunked mask
                              when the sequence is longer (0: none)     */
    mtk_tensor *sinks;     /* gpt_oss: a logit per head in the softmax's
                              denominator (eager), else NULL            */
} decoder_attend;

/* `weights` (may be NULL): eager's attention weights, the softmax's
 * output, which a module returns as its last output (Python holds it
 * until the layer returns); NULL for sdpa. */
mtk_tensor *models_decoder_attend(mtk_ctx *ctx, const decoder_attend *a, mtk_tensor *q, mtk_tensor *k, mtk_tensor *v,
                                  mtk_tensor *mask, bool cached, mtk_tensor **weights);

/* MLA (decoder_mla.c): <Prefix>Attention of an mla spec, with the same
 * forward contract as models_decoder_attention (cos, sin of qk_rope_dim). */
mtk_module *models_decoder_mla(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t layer);
/* Whether `attn` is an MLA module; then fills `out`. */
bool models_decoder_mla_shape(const mtk_module *attn, decoder_cache_shape *out);

/* A layer's attention_chunk_size (llama4's chunked_attention layers; 0:
 * none).  Such a layer caches as a sliding one of that window
 * (models_decoder_attention_shape), its mask is the chunked one. */
int64_t models_decoder_attention_chunk(const mtk_module *attn);

/* Module type callbacks defined in the piece files, for models_decoder_types_init. */
extern const mtk_module_type models_decoder_rotary_base, models_decoder_norm_base, models_decoder_embedding_base,
    models_decoder_attention_base, models_decoder_mlp_base, models_decoder_moe_block_base, models_decoder_router_base,
    models_decoder_experts_base, models_decoder_mla_base, models_decoder_grouped_router_base;

#endif
