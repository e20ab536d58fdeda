/*
 * mtk models: Hugging Face transformers models from their config.json.
 *
 * A MODEL is a built-in name ("llama-3-8b": `mtk models` lists them, each
 * an embedded copy of the model's published config.json), a config.json
 * path, or a directory holding one.  The class built is the config's
 * architectures[0] (the family's default class when absent), with
 * transformers' exact state-dict keys, shapes and parameter counts, in the
 * config's torch_dtype (float32 when absent) unless a dtype scope says
 * otherwise.  mtk_model_build_config builds per the context's scopes;
 * mtk_model_resolve builds on meta (no memory) unless the caller pushed a
 * device scope.
 *
 * Errors are values: NULL and the context's error, naming the config
 * (path or built-in name) and the field ("llama-3-8b: num_attention_heads
 * must be positive, got 0").
 */
#ifndef MTK_MODELS_H
#define MTK_MODELS_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtk_module mtk_module;

/* ============================================================== configs */

/* A parsed config.json.  The struct lives in the context's arena; the
 * parsed JSON it holds is the caller's to release with
 * mtk_model_config_free (once built, a model does not need its config). */
typedef struct mtk_model_config mtk_model_config;

/* Parses config.json text.  `origin` names it in messages (a path or a
 * built-in name; copied).  Errors: MTK_ERR_SYNTAX for bad JSON (with the
 * place) and for a key that appears twice in one object at any depth
 * (naming it: transformers would read the last value, so the file has no
 * one meaning), MTK_ERR_INVALID_ARGUMENT when the document is not an
 * object or has no string "model_type". */
MTK_API mtk_model_config *mtk_model_config_parse(mtk_ctx *ctx, const char *json_text, const char *origin);
/* Reads `path`: a config.json, or a directory holding one.  MTK_ERR_IO
 * when it cannot be read, is not a regular file (a FIFO is refused, not
 * waited on), or is a directory's config.json whose real path lies
 * outside the directory (a link to elsewhere; a Hugging Face hub
 * snapshot's link into its repo's blobs/ is allowed), then as
 * mtk_model_config_parse. */
MTK_API mtk_model_config *mtk_model_config_load(mtk_ctx *ctx, const char *path);
/* Frees the parsed JSON now (the context would at its end).  Accepts NULL. */
MTK_API void mtk_model_config_free(mtk_model_config *config);

/* "llama" */
MTK_API const char *mtk_model_config_model_type(const mtk_model_config *config);
/* The class that will be built: architectures[0], or the family's
 * default class ("LlamaForCausalLM"); NULL for an unknown model_type. */
MTK_API const char *mtk_model_config_architecture(const mtk_model_config *config);
/* The config's torch_dtype (or "dtype"), MTK_FLOAT32 when absent. */
MTK_API mtk_dtype mtk_model_config_dtype(const mtk_model_config *config);

/* Builds the model per the context's scopes (device, init mode) in
 * `dtype` (MTK_DTYPE_UNDEFINED: the config's torch_dtype).  Errors:
 * unknown model_type or architecture (listing the supported ones),
 * missing or nonsensical fields (naming them). */
MTK_API mtk_module *mtk_model_build_config(mtk_ctx *ctx, mtk_model_config *config, mtk_dtype dtype);

/* ============================================================= families */

/* What a family's forward takes. */
typedef enum mtk_model_input_kind {
    MTK_MODEL_INPUT_TENSOR = 0,  /* any tensor of the model's dtype (demo models) */
    MTK_MODEL_INPUT_TOKEN_IDS,   /* int64 (B, S) token ids                        */
    MTK_MODEL_INPUT_PIXELS,      /* (B, C, H, W) pixel values, the model's dtype  */
    MTK_MODEL_INPUT_SEQ2SEQ_IDS, /* encoder-decoders (t5): two inputs, the
                                    encoder's int64 (B, S) token ids and the
                                    decoder's (B, T); a class that has no
                                    decoder (T5EncoderModel) takes the first
                                    only, and its mtk_model_info says
                                    MTK_MODEL_INPUT_TOKEN_IDS                 */
    MTK_MODEL_INPUT_LATENTS      /* a diffusers component (UNet, VAE, DiT): its
                                    inputs follow from an image size (latents,
                                    timestep, prompt embeddings), as its
                                    pipeline calls it                        */
} mtk_model_input_kind;

/* One model family: a model_type of transformers and the classes mtk
 * builds for it. */
typedef struct mtk_model_family_info {
    const char *model_type;                /* "llama"                          */
    const char *const *architectures;      /* NULL-terminated class names      */
    const char *default_architecture;      /* built when a config lists none   */
    mtk_model_input_kind input;
    const char *const *no_split_modules;   /* NULL-terminated: transformers'
                                              _no_split_modules, the classes a
                                              device map keeps whole       */
} mtk_model_family_info;

MTK_API int32_t mtk_model_family_count(void);
/* The i-th family (NULL past the end). */
MTK_API const mtk_model_family_info *mtk_model_family_at(int32_t i);
/* By model_type; NULL (no error) when unknown. */
MTK_API const mtk_model_family_info *mtk_model_family_find(const char *model_type);

/* ============================================================ built-ins */

/* A built-in model: a name and the published config.json text. */
typedef struct mtk_builtin_model {
    const char *name;          /* "llama-3-8b"                          */
    const char *hf_id;         /* "meta-llama/Meta-Llama-3-8B"          */
    const char *config_json;   /* the embedded config.json              */
    const char *example_input; /* "1x2048"                              */
} mtk_builtin_model;

MTK_API int32_t mtk_builtin_model_count(void);
MTK_API const mtk_builtin_model *mtk_builtin_model_at(int32_t i);
/* By name; NULL (no error) when there is none. */
MTK_API const mtk_builtin_model *mtk_builtin_model_find(const char *name);

/* ========================================================== demo models */

/* A demo model: built by code from nn's layers rather than from a config
 * (simplenet, lazynet), with a one-line description and an example input
 * shape ("1x10") for documentation. */
typedef struct mtk_demo_model {
    const char *name;
    const char *description;
    mtk_module *(*build)(mtk_ctx *ctx, const void *config);
    const char *example_input;
} mtk_demo_model;

MTK_API int32_t mtk_demo_model_count(void);
/* The i-th demo model (NULL past the end). */
MTK_API const mtk_demo_model *mtk_demo_model_at(int32_t i);
/* By name; NULL (no error) when there is none. */
MTK_API const mtk_demo_model *mtk_demo_model_find(const char *name);

/* ============================================================ resolving */

/* How to build a MODEL argument. */
typedef struct mtk_model_resolve_options {
    mtk_dtype dtype;   /* UNDEFINED: the config's torch_dtype                */
    bool meta;         /* meta even under the caller's device scope          */
    const char *attention; /* "eager" or "sdpa": transformers'
                              attn_implementation for the families that
                              have both (the decoders); NULL: the config's
                              _attn_implementation, else the family's
                              default                                        */
    const char *experts;   /* "batched_mm" or "grouped_mm": transformers'
                              experts_implementation for the MoE families;
                              NULL: the config's _experts_implementation   */
} mtk_model_resolve_options;

/* What a MODEL argument resolved to (strings in the arena or static). */
typedef struct mtk_model_info {
    const char *name;          /* the argument as given                          */
    const char *source;        /* "built-in", "config.json", "demo"              */
    const char *family;        /* model_type ("llama"), "demo" for simplenet...  */
    const char *architecture;  /* "LlamaForCausalLM" (the type of the root)      */
    mtk_dtype dtype;           /* parameters' dtype                               */
    mtk_model_input_kind input;
    mtk_dtype input_dtype;     /* int64 for token ids, else the model's dtype   */
    const char *example_input; /* "1x2048", or NULL                              */
    const char *notes[4];      /* assumptions the summary must state (MoE routing) */
    int32_t nnotes;
    const char *ambiguity;     /* the name is both a built-in and a directory: which
                                  was used ("'gpt2' names both ..."); else NULL */
    int64_t active_params;     /* MoE: parameters a token reaches (a model
                                  card's "activated"); 0 for a dense model */
} mtk_model_info;

/* Builds the model a MODEL argument names: a built-in of the zoo, a demo
 * model (simplenet, lazynet: mtk_demo_model_find), a config.json, or a
 * directory holding one.
 *
 * Where: on meta (meta device and init mode: no parameter memory, as
 * torch.device('meta')) unless the caller has pushed a device scope
 * (mtk_ctx_push_device); then per the context's scopes, so
 * `push_device(cpu)` builds a real model in the context's init mode.
 * options->meta builds on meta even under such a scope.  The caller's
 * scopes are as they were on return.
 *
 * `options` may be NULL (the config's dtype, the placement above); `info`
 * may be NULL.  Errors: MTK_ERR_INVALID_ARGUMENT for an unknown name
 * (listing the built-in ones), MTK_ERR_IO for an unreadable path, then as
 * mtk_model_build_config. */
MTK_API mtk_module *mtk_model_resolve(mtk_ctx *ctx, const char *model, const mtk_model_resolve_options *options,
                                      mtk_model_info *info);

/* =========================================================== generation */

/* A KV cache as transformers 5's DynamicCache keeps it for a decoder model
 * of the zoo (llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, olmo2,
 * smollm3, granite, gemma, gemma2, gemma3, phi3, ...; not yet gpt2,
 * gpt_neox, phi): one layer per decoder layer.  A full-attention layer
 * (DynamicLayer) holds keys and values (B, kv_heads, T, head_dim), each
 * step's torch.cat of the past and the new tokens (a new tensor: old and
 * new live at once while it is made).  A sliding-window layer
 * (DynamicSlidingWindowLayer) holds a view of the last window - 1 tokens
 * of that concatenation, so it keeps the whole concatenated storage: all
 * S prompt tokens after the prefill, `window` tokens after a decode step.
 * Lives in the context's arena. */
typedef struct mtk_kv_cache mtk_kv_cache;

/* One cache layer. */
typedef struct mtk_kv_cache_layer {
    mtk_tensor *keys, *values;           /* as the layer holds them; NULL
                                            before the first step         */
    mtk_tensor *keys_base, *values_base; /* the tensors whose storage they
                                            keep (the step's torch.cat)   */
    int64_t window;                      /* sliding window, 0: full       */
} mtk_kv_cache_layer;

/* An empty cache for `model` (a decoder ForCausalLM or base model of the
 * zoo, gpt2, gpt_neox and phi included).  NULL with
 * MTK_ERR_INVALID_ARGUMENT for any other module. */
MTK_API mtk_kv_cache *mtk_kv_cache_new(mtk_module *model);
/* Whether the memory plans trace the cached forward of `cache`'s model:
 * true for the zoo's decoder layers; false for gpt2, gpt_neox and phi,
 * whose cached forward runs (generate) but whose liveness is not yet what
 * torch measures, so plans trace their plain forward (which holds the
 * DynamicCache it builds).  False for NULL. */
MTK_API bool mtk_kv_cache_plannable(const mtk_kv_cache *cache);
MTK_API int32_t mtk_kv_cache_layer_count(const mtk_kv_cache *cache);
/* The i-th layer, NULL past the end. */
MTK_API const mtk_kv_cache_layer *mtk_kv_cache_layer_at(const mtk_kv_cache *cache, int32_t i);
/* Tokens the cache has seen (get_seq_length). */
MTK_API int64_t mtk_kv_cache_length(const mtk_kv_cache *cache);
/* Bytes of storage the cache keeps alive (each layer's keys_base and
 * values_base), and the bytes of the tensors it exposes (keys, values:
 * what torch's tensor.nbytes says). */
MTK_API int64_t mtk_kv_cache_storage_bytes(const mtk_kv_cache *cache);
MTK_API int64_t mtk_kv_cache_tensor_bytes(const mtk_kv_cache *cache);

/* Sets the cache to what it holds after `length` tokens of `batch`
 * sequences when the last token came from a decode step (a step of one
 * token): full layers (B, kv_heads, length, head_dim); sliding layers the
 * concatenation of min(length, window) tokens, viewed as its last
 * window - 1.  The tensors are new meta tensors in the model's dtype, so
 * a plan can trace a late decode step without running the ones before
 * it.  False with MTK_ERR_INVALID_ARGUMENT for length < 1 or batch < 1. */
MTK_API bool mtk_kv_cache_assume(mtk_kv_cache *cache, int64_t batch, int64_t length);

/* How one cached forward is called. */
typedef struct mtk_lm_step {
    int64_t logits_to_keep; /* lm_head on the last k positions; 0: all    */
    bool attention_mask;    /* a 2-D attention_mask of ones is passed (as
                               generate does): the masks transformers
                               builds then carry the batch dim            */
    mtk_tensor *position_ids; /* (B, S) int64 as generate passes them
                               (from the attention_mask's cumsum); NULL:
                               cache_position[None], (1, S)               */
    mtk_tensor *padding_mask; /* a real 2-D attention_mask (B, P + S) of
                               0 / 1 (or bool) on the cpu, padding where
                               0: the masks carry it, and sdpa's is_causal
                               skip is taken only when it has no 0.  NULL:
                               `attention_mask` above decides            */
} mtk_lm_step;

/* model(input_ids, past_key_values=cache, logits_to_keep=k) under no_grad,
 * as transformers 5 runs it: ids (B, S) at positions length..length+S-1
 * of the cache; the masks the family builds (causal, sliding window; none
 * where sdpa can use is_causal); each layer's cache updated.  Returns the
 * logits (B, k or S, vocab) of a ForCausalLM, the last hidden states (B, S,
 * hidden) of a base model.  `step` may be NULL (all logits, no attention
 * mask).  On a real device (not meta) the tensors a layer makes are freed
 * as it ends, except its hidden state and the cache's tensors, as torch
 * frees them with their last reference: a module hook that keeps a
 * layer's intermediate tensors must copy them.  NULL with the context's
 * error (a batch other than the cache's, a model that is not the
 * cache's). */
MTK_API mtk_tensor *mtk_lm_forward_cached(mtk_module *model, mtk_tensor *input_ids, mtk_kv_cache *cache,
                                          const mtk_lm_step *step);


/* ==================================================== parallel plans */

/* transformers' tensor- and expert-parallel styles (the names of
 * transformers.distributed.tensor_parallel's ALL_PARALLEL_STYLES). */
typedef enum mtk_tp_style {
    MTK_TP_COLWISE = 0,            /* "colwise": weight and bias Shard(out)   */
    MTK_TP_COLWISE_GATHER_OUTPUT,  /* "colwise_gather_output": the same, the
                                      output all-gathered                     */
    MTK_TP_ROWWISE,                /* "rowwise": weight Shard(in), bias
                                      Replicate, output all-reduced          */
    MTK_TP_ROWWISE_SPLIT_INPUT,    /* "rowwise_split_input": the same on a
                                      replicated input                       */
    MTK_TP_EMBEDDING_ROWWISE,      /* "embedding_rowwise": vocab-parallel    */
    MTK_TP_REPLICATED_GRAD_ALLREDUCE, /* "replicated_with_grad_allreduce"    */
    MTK_TP_PACKED_COLWISE,         /* "packed_colwise": fused gate/up, each
                                      half sharded (_StridedShard(out, 2))   */
    MTK_TP_PACKED_ROWWISE,         /* "packed_rowwise"                       */
    MTK_TP_MOE_EXPERTS,            /* "moe_tp_experts": the experts module's
                                      partial outputs all-reduced            */
    MTK_TP_GROUPED_GEMM,           /* "grouped_gemm" (ep plan): experts
                                      Shard(0) over the expert group         */
    MTK_TP_EP_DISPATCH,            /* "ep_dispatch_experts" (ep plan): tokens
                                      sent to their experts' ranks           */
} mtk_tp_style;

/* One rule: a module or parameter path relative to the base model
 * ("layers.*.self_attn.q_proj", `*` a layer number), or, for the rules a
 * model class adds (`lm_head`), relative to the root. */
typedef struct mtk_tp_rule {
    const char *pattern;
    mtk_tp_style style;
    bool root;                     /* relative to the root, not the base    */
} mtk_tp_rule;

/* A family's plans as transformers 5.24 declares them: the config's
 * base_model_tp_plan and base_model_ep_plan, the class's _tp_plan, and
 * the input embeddings made vocab-parallel (init_parallel_plans). */
typedef struct mtk_tp_plan {
    const char *model_type;
    const mtk_tp_rule *tp;         /* NULL-pattern terminated                */
    const mtk_tp_rule *ep;         /* NULL-pattern terminated; NULL: none    */
} mtk_tp_plan;

/* The plan of a model_type; NULL (no error) for a family transformers
 * gives no tensor-parallel plan (gpt2, bert, t5, ...). */
MTK_API const mtk_tp_plan *mtk_model_tp_plan_find(const char *model_type);
/* transformers' name of a style ("colwise"). */
MTK_API const char *mtk_tp_style_name(mtk_tp_style style);
/* An integer field of the config, read from its text_config when the
 * top level lacks it (multimodal configs); `fallback` when neither has
 * it or it is not an integer. */
MTK_API int64_t mtk_model_config_int(const mtk_model_config *config, const char *key, int64_t fallback);

/* ========================================================== generation */

/* How mtk_lm_generate decodes (greedy, as generate(do_sample=False)). */
typedef struct mtk_generate_options {
    int64_t max_new_tokens;      /* >= 1                                    */
    mtk_tensor *attention_mask;  /* (B, S) of any integer or bool dtype on
                                    the cpu, 0 at padding (left padding, as
                                    a tokenizer with padding_side="left"
                                    makes); NULL: inferred as generate
                                    does: ids != pad_token_id when the pad
                                    token occurs in the ids and is not an
                                    eos token, else ones                   */
    const int64_t *eos_token_ids;/* a row is finished once it produced one  */
    int32_t n_eos;               /* 0: no eos (rows run to max_new_tokens)  */
    int64_t pad_token_id;        /* written after a row's eos; with has_pad */
    bool has_pad;                /* false: eos_token_ids[0], as transformers */
    int64_t decoder_start_token_id; /* an encoder-decoder's first decoder
                                    token, with has_decoder_start (as
                                    generation_config.json's)              */
    bool has_decoder_start;      /* false: the config's decoder_start_token_id
                                    (else pad_token_id)                    */
    bool output_logits;          /* keep each step's last logits in
                                    stats->logits (output_logits=True)     */
} mtk_generate_options;

/* What mtk_lm_generate did, and how fast. */
typedef struct mtk_generate_stats {
    int64_t prompt_tokens;       /* B * S, the prefill's tokens             */
    int64_t new_tokens;          /* steps taken (<= max_new_tokens)         */
    int64_t decode_tokens;       /* B * (new_tokens - 1): the decode steps' */
    double prefill_seconds;      /* the prefill forward and its argmax      */
    double decode_seconds;       /* every step after it                     */
    mtk_tensor *logits;          /* with output_logits: (n, B, vocab)
                                    float32, step i's logits of the last
                                    position, as generate's `logits`; NULL
                                    otherwise                              */
    bool encoder_decoder;        /* the sequences are the decoder's
                                    (decoder_start_token_id, then the new
                                    tokens), not the prompt's: an
                                    encoder-decoder (T5)                   */
} mtk_generate_stats;

/* model.generate(input_ids, attention_mask, do_sample=False,
 * max_new_tokens=N) as transformers 5 runs it for a decoder ForCausalLM of
 * the zoo (the families of mtk_kv_cache_new) with loaded weights on the
 * cpu: position_ids from the attention mask's cumsum (0 at padding), a
 * DynamicCache (mtk_lm_forward_cached), the prefill, then one token per
 * step, each the argmax of the last position's logits in float32 (the
 * first index among equal maxima); a row that produces an eos token is
 * finished and gets pad_token_id from then on; decoding stops after
 * max_new_tokens steps or when every row is finished (GPT2LMHeadModel,
 * GPTNeoXForCausalLM and PhiForCausalLM decode with the cache too).
 * `input_ids` is
 * (B, S) int64 on the cpu.  Returns a new int64 (B, S + n) cpu tensor, the
 * prompt then the n <= max_new_tokens generated tokens, and fills `stats`
 * (may be NULL).  A T5ForConditionalGeneration decodes as generate does an
 * encoder-decoder: the encoder once over input_ids with the attention_mask
 * as given (none is inferred from the pad token), then the decoder from
 * options->decoder_start_token_id where has_decoder_start, else the
 * config's decoder_start_token_id (else pad_token_id), with an
 * EncoderDecoderCache (self-attention keys and values grown per step, the
 * cross-attention's computed once); it returns (B, 1 + n), the start token
 * then the generated ones, as generate's sequences, and sets
 * stats->encoder_decoder.  Each step's activations and the cache it replaces are
 * freed as it ends, and their metadata given back to the context's arena
 * (mtk_ctx_arena_reset): the arena does not grow with the steps.  NULL with
 * the context's error: MTK_ERR_INVALID_ARGUMENT for a model that is not a
 * decoder language model of the zoo (naming its class), max_new_tokens
 * < 1, a model on meta (no weights: load a checkpoint); MTK_ERR_SHAPE for
 * ids or a mask of the wrong shape or dtype. */
MTK_API mtk_tensor *mtk_lm_generate(mtk_module *model, mtk_tensor *input_ids, const mtk_generate_options *options,
                                    mtk_generate_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* MTK_MODELS_H */
