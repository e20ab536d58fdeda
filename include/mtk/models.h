/*
 * mtk models: Hugging Face transformers models from their config.json.
 *
 * A MODEL is a built-in name ("llama-3-8b": `mtk models` lists them, each
 * an embedded copy of the model's published config.json), a config.json
 * path, or a directory holding one.  The class built is the config's
 * architectures[0] (the family's default class when absent), with
 * transformers' exact state-dict keys, shapes and parameter counts, in the
 * config's torch_dtype (float32 when absent) unless a dtype scope says
 * otherwise, per the context's scopes (use a meta device scope to build it
 * without memory: mtk_model_resolve does so when asked).
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
 * place), MTK_ERR_INVALID_ARGUMENT when the document is not an object or
 * has no string "model_type". */
mtk_model_config *mtk_model_config_parse(mtk_ctx *ctx, const char *json_text, const char *origin);
/* Reads `path`: a config.json, or a directory holding one.  MTK_ERR_IO
 * when it cannot be read, then as mtk_model_config_parse. */
mtk_model_config *mtk_model_config_load(mtk_ctx *ctx, const char *path);
/* Frees the parsed JSON now (the context would at its end).  Accepts NULL. */
void mtk_model_config_free(mtk_model_config *config);

/* "llama" */
const char *mtk_model_config_model_type(const mtk_model_config *config);
/* The class that will be built: architectures[0], or the family's
 * default class ("LlamaForCausalLM"); NULL for an unknown model_type. */
const char *mtk_model_config_architecture(const mtk_model_config *config);
/* The config's torch_dtype (or "dtype"), MTK_FLOAT32 when absent. */
mtk_dtype mtk_model_config_dtype(const mtk_model_config *config);

/* Builds the model per the context's scopes (device, init mode) in
 * `dtype` (MTK_DTYPE_UNDEFINED: the config's torch_dtype).  Errors:
 * unknown model_type or architecture (listing the supported ones),
 * missing or nonsensical fields (naming them). */
mtk_module *mtk_model_build_config(mtk_ctx *ctx, mtk_model_config *config, mtk_dtype dtype);

/* ============================================================= families */

/* What a family's forward takes. */
typedef enum mtk_model_input_kind {
    MTK_MODEL_INPUT_TENSOR = 0,  /* any tensor of the model's dtype (demo models) */
    MTK_MODEL_INPUT_TOKEN_IDS,   /* int64 (B, S) token ids                        */
    MTK_MODEL_INPUT_PIXELS       /* (B, C, H, W) pixel values, the model's dtype  */
} mtk_model_input_kind;

/* One model family: a model_type of transformers and the classes mtk
 * builds for it. */
typedef struct mtk_model_family_info {
    const char *model_type;                /* "llama"                          */
    const char *const *architectures;      /* NULL-terminated class names      */
    const char *default_architecture;      /* built when a config lists none   */
    mtk_model_input_kind input;
} mtk_model_family_info;

int32_t mtk_model_family_count(void);
/* The i-th family (NULL past the end). */
const mtk_model_family_info *mtk_model_family_at(int32_t i);
/* By model_type; NULL (no error) when unknown. */
const mtk_model_family_info *mtk_model_family_find(const char *model_type);

/* ============================================================ built-ins */

/* A built-in model: a name and the published config.json text. */
typedef struct mtk_builtin_model {
    const char *name;          /* "llama-3-8b"                          */
    const char *hf_id;         /* "meta-llama/Meta-Llama-3-8B"          */
    const char *config_json;   /* the embedded config.json              */
    const char *example_input; /* "1x2048"                              */
} mtk_builtin_model;

int32_t mtk_builtin_model_count(void);
const mtk_builtin_model *mtk_builtin_model_at(int32_t i);
/* By name; NULL (no error) when there is none. */
const mtk_builtin_model *mtk_builtin_model_find(const char *name);

/* ============================================================ resolving */

/* How to build a MODEL argument. */
typedef struct mtk_model_resolve_options {
    mtk_dtype dtype;   /* UNDEFINED: the config's torch_dtype          */
    bool meta;         /* build under a meta device + meta init scope  */
    const char *attention; /* "eager" or "sdpa": transformers'
                              attn_implementation for the families that
                              have both (the decoders); NULL: the config's
                              _attn_implementation, else the family's
                              default                                  */
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
} mtk_model_info;

/* Builds the model a MODEL argument names: a built-in of the zoo, a demo
 * model of the nn registry (simplenet, lazynet), a config.json, or a
 * directory holding one.  `options` may be NULL (config dtype, the
 * context's scopes); `info` may be NULL.  Errors: MTK_ERR_INVALID_ARGUMENT
 * for an unknown name (listing the built-in ones), MTK_ERR_IO for an
 * unreadable path, then as mtk_model_build_config. */
mtk_module *mtk_model_resolve(mtk_ctx *ctx, const char *model, const mtk_model_resolve_options *options,
                              mtk_model_info *info);

#ifdef __cplusplus
}
#endif
#endif /* MTK_MODELS_H */
