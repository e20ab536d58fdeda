/* Internal interface of the model zoo (src/models): the parsed config with
 * its typed accessors, the family table and the families' builders.
 *
 * A family is one file, src/models/family_<model_type>.c, exporting one
 * builder (declared below) that reads the config through the cfg_*
 * accessors and builds the class `architecture` with transformers' exact
 * names.  Accessors follow one rule for errors: a field that is present
 * but of the wrong type or out of range sets the context's sticky error
 * naming the config and the field, and returns the default; the builder
 * checks models_cfg_ok() (or a NULL module) once before returning. */
#ifndef MTK_MODELS_CONFIG_H
#define MTK_MODELS_CONFIG_H

#include "mtk/models.h"
#include "mtk/nn.h"

#include <cjson/cJSON.h>

#define MODEL_MAX_NOTES 4

struct mtk_model_config {
    mtk_ctx *ctx;
    cJSON *root;                 /* owned; freed by mtk_model_config_free   */
    const char *origin;          /* path or built-in name, for messages     */
    const char *model_type;      /* "llama"                                 */
    const char *architecture;    /* architectures[0] or the family default  */
    mtk_dtype dtype;             /* torch_dtype, float32 when absent        */
    const char *notes[MODEL_MAX_NOTES]; /* added by the builder (models_cfg_note)  */
    int32_t nnotes;
    int64_t active_params;       /* MoE: parameters a token reaches (0: dense) */
    bool experts_input_major;    /* fused experts stored (E, in, out), used as x @ W
                                    (gpt_oss, llama4): quantized storage packs their
                                    transpose, as the published checkpoints do */
};

typedef mtk_model_config model_config;

/* --------------------------------------------------------------- limits
 * mtk's limits on the config fields that size a model, far above any
 * released model (today's largest: 126 layers (Llama 3.1 405B), 384
 * experts (Kimi K2), 128 heads, hidden 16,384 and intermediate 53,248,
 * a vocabulary of 262,144 (Gemma 3), 10M positions (Llama 4 Scout)) and
 * low enough that a typo or a hostile config is refused, naming the
 * field, its value and the limit, before memory is committed.  Modules
 * grow with the layers (about 10 and 11 KB of metadata per decoder
 * layer: 100,000 layers take about a gigabyte); experts are fused
 * tensors and cost no modules.  The table in config.c maps each field
 * name to its limit; every integer accessor checks it. */
#define MODEL_MAX_LAYERS 100000
#define MODEL_MAX_EXPERTS 65536
#define MODEL_MAX_HEADS 65536
#define MODEL_MAX_WIDTH ((int64_t)1 << 20)      /* hidden, intermediate, head_dim, patch, image */
#define MODEL_MAX_VOCAB ((int64_t)1 << 24)      /* vocab_size, type_vocab_size, num_labels       */
#define MODEL_MAX_POSITIONS ((int64_t)1 << 28)  /* max_position_embeddings, n_positions         */
/* All parameters together (elements, tied ones once): checked after the
 * build, which is metadata only on meta; 2^50 is ~500 times the largest
 * model and keeps every total of bytes and FLOPs inside int64. */
#define MODEL_MAX_PARAMETERS ((int64_t)1 << 50)

/* The limit of a top-level field (0: none) and what it counts ("layers"). */
int64_t models_cfg_limit_of(const char *key, const char **what);

/* ------------------------------------------------------------ accessors */

/* The raw item of a top-level field; NULL when absent or JSON null. */
const cJSON *models_cfg_get(const model_config *c, const char *key);
bool models_cfg_has(const model_config *c, const char *key);

/* An integer field (JSON number with no fraction).  Absent or null: `dflt`.
 * Wrong type: error, `dflt`. */
int64_t models_cfg_int(const model_config *c, const char *key, int64_t dflt);
/* A required integer field: error "missing required field 'key'" when
 * absent. */
int64_t models_cfg_int_required(const model_config *c, const char *key);
/* models_cfg_int / models_cfg_int_required that must be > 0 (error naming the field and
 * the value otherwise). */
int64_t models_cfg_positive(const model_config *c, const char *key, int64_t dflt);
int64_t models_cfg_positive_required(const model_config *c, const char *key);
/* A layer count read from `key`: false, with the error "must be a
 * non-negative integer" naming the field and the value, when no error is
 * set yet and `layers` is negative; true otherwise (an error already set
 * is left for the caller's models_cfg_ok). */
bool models_cfg_check_layers(const model_config *c, const char *key, int64_t layers);
/* A number field (int or float). */
double models_cfg_float(const model_config *c, const char *key, double dflt);
/* A boolean field. */
bool models_cfg_bool(const model_config *c, const char *key, bool dflt);
/* A string field (in the JSON; valid until the config is freed). */
const char *models_cfg_string(const model_config *c, const char *key, const char *dflt);
/* A list of integers; returns the count (at most `cap`), -1 when absent,
 * -1 with an error when not a list of integers. */
int32_t models_cfg_int_list(const model_config *c, const char *key, int64_t *out, int32_t cap);

/* Fields of a nested object (rope_scaling): the same rules, the message
 * naming "object.key".  `obj` may be NULL (every field absent). */
int64_t models_cfg_obj_int(const model_config *c, const cJSON *obj, const char *obj_name, const char *key, int64_t dflt);
double models_cfg_obj_float(const model_config *c, const cJSON *obj, const char *obj_name, const char *key, double dflt);
const char *models_cfg_obj_string(const model_config *c, const cJSON *obj, const char *obj_name, const char *key,
                           const char *dflt);

/* Sets an error about a field: "<origin>: <field>: <message>".  Returns
 * false. */
bool models_cfg_fail(const model_config *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether no error is set on the context. */
bool models_cfg_ok(const model_config *c);

/* Common derived sizes of attention configs, with transformers' defaults
 * and checks: hidden and heads required and > 0; kv heads (kv_key NULL:
 * none, = heads) > 0 dividing heads, `kv_default` when absent (0: heads);
 * head_dim (head_dim_key NULL: none) when present, else `head_dim_default`
 * when > 0 (gemma's 256), else hidden / heads (hidden must divide then).
 * Messages name the fields as given. */
typedef struct cfg_attention_dims {
    int64_t hidden;      /* hidden_size                         */
    int64_t heads;       /* num_attention_heads                 */
    int64_t kv_heads;    /* num_key_value_heads (default heads) */
    int64_t head_dim;    /* head_dim (default hidden / heads)   */
} cfg_attention_dims;
bool models_cfg_attention(const model_config *c, const char *hidden_key, const char *heads_key, const char *kv_key,
                   int64_t kv_default, const char *head_dim_key, int64_t head_dim_default,
                   cfg_attention_dims *out);

/* quant.c: the config's quantization_config (fp8, mxfp4) applied to the
 * built model m on meta: its weights replaced by the checkpoint's stored
 * tensors (names, shapes, dtypes), with a note.  An unknown quant_method
 * only adds a note.  False with the config's error set on a bad field. */
bool models_quant_apply(model_config *c, mtk_module *m);
/* The weight `name` of module m in `dtype` for its forward: the parameter
 * itself, or its quantized storage cast back (fp8 `name`, mxfp4
 * `name_blocks`, unpacked to (.., out, in), transposed to (.., in, out)
 * when `input_major`: the layout of a family with experts_input_major).
 * NULL with the error set when m has neither. */
mtk_tensor *models_quant_weight(mtk_module *m, const char *name, mtk_dtype dtype, bool input_major);

/* Adds a note the summary must show (a static or arena string). */
void models_cfg_note(model_config *c, const char *note);

/* ------------------------------------------------------------- families */

/* Builds class `architecture` of the family from the config, per the
 * context's scopes.  NULL with the error set. */
typedef mtk_module *(*model_family_builder)(model_config *c, const char *architecture);

struct diffusers_component;

typedef struct model_family {
    mtk_model_family_info info;
    model_family_builder build;
    const struct diffusers_component *diffusers; /* a diffusers component: how a
                                                    pipeline calls it (diffusers.h);
                                                    NULL for the others     */
} model_family;

/* The family table (src/models/families.c). */
const model_family *models_family_lookup(const char *model_type);
/* "llama, mistral, ..." in the arena (for error messages). */
const char *models_family_names(mtk_ctx *ctx);
/* "LlamaModel, LlamaForCausalLM" of one family, in the arena. */
const char *models_family_architectures(mtk_ctx *ctx, const model_family *f);

/* One builder per family file (src/models/family_<model_type>.c). */
mtk_module *models_family_llama_build(model_config *c, const char *architecture);
mtk_module *models_family_mistral_build(model_config *c, const char *architecture);
mtk_module *models_family_mixtral_build(model_config *c, const char *architecture);
mtk_module *models_family_qwen2_build(model_config *c, const char *architecture);
mtk_module *models_family_qwen2_moe_build(model_config *c, const char *architecture);
mtk_module *models_family_qwen3_build(model_config *c, const char *architecture);
mtk_module *models_family_qwen3_moe_build(model_config *c, const char *architecture);
mtk_module *models_family_olmo2_build(model_config *c, const char *architecture);
mtk_module *models_family_smollm3_build(model_config *c, const char *architecture);
mtk_module *models_family_granite_build(model_config *c, const char *architecture);
mtk_module *models_family_phi_build(model_config *c, const char *architecture);
mtk_module *models_family_gemma_build(model_config *c, const char *architecture);
mtk_module *models_family_gemma2_build(model_config *c, const char *architecture);
mtk_module *models_family_phi3_build(model_config *c, const char *architecture);
mtk_module *models_family_gpt2_build(model_config *c, const char *architecture);
mtk_module *models_family_gpt_neox_build(model_config *c, const char *architecture);
mtk_module *models_family_bert_build(model_config *c, const char *architecture);
mtk_module *models_family_vit_build(model_config *c, const char *architecture);
mtk_module *models_family_roberta_build(model_config *c, const char *architecture);
mtk_module *models_family_xlm_roberta_build(model_config *c, const char *architecture);
mtk_module *models_family_modernbert_build(model_config *c, const char *architecture);
mtk_module *models_family_t5_build(model_config *c, const char *architecture);
mtk_module *models_family_gpt_oss_build(model_config *c, const char *architecture);
mtk_module *models_family_llama4_text_build(model_config *c, const char *architecture);
mtk_module *models_family_llama4_build(model_config *c, const char *architecture);
mtk_module *models_family_deepseek_v3_build(model_config *c, const char *architecture);
mtk_module *models_family_gemma3_text_build(model_config *c, const char *architecture);
mtk_module *models_family_gemma3_build(model_config *c, const char *architecture);
mtk_module *models_family_mistral3_build(model_config *c, const char *architecture);
mtk_module *models_family_glm4_moe_build(model_config *c, const char *architecture);
/* diffusers components and the text encoders of their pipelines */
mtk_module *models_family_unet2d_condition_build(model_config *c, const char *architecture);
mtk_module *models_family_autoencoder_kl_build(model_config *c, const char *architecture);
mtk_module *models_family_clip_text_build(model_config *c, const char *architecture);
/* diffusers' transformer denoisers (src/models/diffusers_{sd3,flux,lumina2}.c) */
mtk_module *models_family_sd3_build(model_config *c, const char *architecture);
mtk_module *models_family_flux_build(model_config *c, const char *architecture);
mtk_module *models_family_lumina2_build(model_config *c, const char *architecture);

#endif
