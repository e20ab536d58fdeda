/* Hugging Face config.json: reading, parsing, typed field accessors with
 * transformers' defaults, and errors that name the config and the field. */
#include "models/config.h"
#include "core/fs_confine.h"
#include "core/json_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Config files are small; anything past this is not a config.json. */
#define CONFIG_MAX_BYTES (16u << 20)

/* ------------------------------------------------------------- errors */

bool models_cfg_fail(const model_config *c, const char *field, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (field) return mtk_error(c->ctx, MTK_ERR_INVALID_ARGUMENT, "%s: field '%s': %s", c->origin, field, msg);
    return mtk_error(c->ctx, MTK_ERR_INVALID_ARGUMENT, "%s: %s", c->origin, msg);
}

bool models_cfg_ok(const model_config *c) { return mtk_ctx_status(c->ctx) == MTK_OK; }

void models_cfg_note(model_config *c, const char *note)
{
    for (int32_t i = 0; i < c->nnotes; i++)
        if (strcmp(c->notes[i], note) == 0) return;
    if (c->nnotes < MODEL_MAX_NOTES) c->notes[c->nnotes++] = note;
}

/* ---------------------------------------------------------- accessors */

static const cJSON *obj_get(const cJSON *obj, const char *key)
{
    const cJSON *item = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    return item && !cJSON_IsNull(item) ? item : NULL;
}

const cJSON *models_cfg_get(const model_config *c, const char *key) { return obj_get(c->root, key); }

bool models_cfg_has(const model_config *c, const char *key) { return models_cfg_get(c, key) != NULL; }

/* "rope_scaling.factor" or "factor" into buf. */
static const char *field_name(const char *obj_name, const char *key, char *buf, size_t cap)
{
    if (!obj_name) return key;
    snprintf(buf, cap, "%s.%s", obj_name, key);
    return buf;
}

/* The fields that size a model and their limits (config.h).  A field
 * missing here is not a size (eps, token ids) or is bounded by one that is
 * (num_experts_per_tok <= experts). */
static const struct {
    const char *field;
    int64_t max;
    const char *what;
} size_limits[] = {
    { "num_hidden_layers", MODEL_MAX_LAYERS, "layers" },
    { "n_layer", MODEL_MAX_LAYERS, "layers" },
    { "num_layers", MODEL_MAX_LAYERS, "layers" },
    { "num_local_experts", MODEL_MAX_EXPERTS, "experts" },
    { "num_experts", MODEL_MAX_EXPERTS, "experts" },
    { "n_routed_experts", MODEL_MAX_EXPERTS, "experts" },
    { "num_attention_heads", MODEL_MAX_HEADS, "heads" },
    { "n_head", MODEL_MAX_HEADS, "heads" },
    { "num_key_value_heads", MODEL_MAX_HEADS, "heads" },
    { "hidden_size", MODEL_MAX_WIDTH, "features" },
    { "n_embd", MODEL_MAX_WIDTH, "features" },
    { "intermediate_size", MODEL_MAX_WIDTH, "features" },
    { "n_inner", MODEL_MAX_WIDTH, "features" },
    { "moe_intermediate_size", MODEL_MAX_WIDTH, "features" },
    { "shared_expert_intermediate_size", MODEL_MAX_WIDTH, "features" },
    { "head_dim", MODEL_MAX_WIDTH, "features" },
    { "pooler_output_size", MODEL_MAX_WIDTH, "features" },
    { "num_channels", MODEL_MAX_WIDTH, "channels" },
    { "image_size", MODEL_MAX_WIDTH, "pixels" },
    { "patch_size", MODEL_MAX_WIDTH, "pixels" },
    { "vocab_size", MODEL_MAX_VOCAB, "tokens" },
    { "type_vocab_size", MODEL_MAX_VOCAB, "token types" },
    { "num_labels", MODEL_MAX_VOCAB, "labels" },
    { "max_position_embeddings", MODEL_MAX_POSITIONS, "positions" },
    { "n_positions", MODEL_MAX_POSITIONS, "positions" },
    { "original_max_position_embeddings", MODEL_MAX_POSITIONS, "positions" },
    { "num_decoder_layers", MODEL_MAX_LAYERS, "layers" },
    { "num_heads", MODEL_MAX_HEADS, "heads" },
    { "d_model", MODEL_MAX_WIDTH, "features" },
    { "d_kv", MODEL_MAX_WIDTH, "features" },
    { "d_ff", MODEL_MAX_WIDTH, "features" },
    { "relative_attention_num_buckets", MODEL_MAX_WIDTH, "buckets" },
    { "relative_attention_max_distance", MODEL_MAX_POSITIONS, "positions" },
    { "q_lora_rank", MODEL_MAX_WIDTH, "features" },
    { "kv_lora_rank", MODEL_MAX_WIDTH, "features" },
    { "qk_nope_head_dim", MODEL_MAX_WIDTH, "features" },
    { "qk_rope_head_dim", MODEL_MAX_WIDTH, "features" },
    { "v_head_dim", MODEL_MAX_WIDTH, "features" },
    { "n_shared_experts", MODEL_MAX_EXPERTS, "experts" },
    { "n_group", MODEL_MAX_EXPERTS, "expert groups" },
    { "topk_group", MODEL_MAX_EXPERTS, "expert groups" },
    /* diffusers components (lists are checked entry by entry) */
    { "block_out_channels", MODEL_MAX_WIDTH, "channels" },
    { "in_channels", MODEL_MAX_WIDTH, "channels" },
    { "out_channels", MODEL_MAX_WIDTH, "channels" },
    { "latent_channels", MODEL_MAX_WIDTH, "channels" },
    { "norm_num_groups", MODEL_MAX_WIDTH, "groups" },
    { "cross_attention_dim", MODEL_MAX_WIDTH, "features" },
    { "attention_head_dim", MODEL_MAX_HEADS, "heads" },
    { "addition_time_embed_dim", MODEL_MAX_WIDTH, "features" },
    { "projection_class_embeddings_input_dim", MODEL_MAX_WIDTH, "features" },
    { "time_embedding_dim", MODEL_MAX_WIDTH, "features" },
    { "projection_dim", MODEL_MAX_WIDTH, "features" },
    { "layers_per_block", MODEL_MAX_LAYERS, "layers" },
    { "transformer_layers_per_block", MODEL_MAX_LAYERS, "layers" },
    { "conv_in_kernel", MODEL_MAX_WIDTH, "pixels" },
    { "conv_out_kernel", MODEL_MAX_WIDTH, "pixels" },
    /* diffusers' transformer denoisers (diffusers_{sd3,flux,lumina2}.c) */
    { "num_single_layers", MODEL_MAX_LAYERS, "layers" },
    { "num_refiner_layers", MODEL_MAX_LAYERS, "layers" },
    { "num_kv_heads", MODEL_MAX_HEADS, "heads" },
    { "joint_attention_dim", MODEL_MAX_WIDTH, "features" },
    { "caption_projection_dim", MODEL_MAX_WIDTH, "features" },
    { "pooled_projection_dim", MODEL_MAX_WIDTH, "features" },
    { "cap_feat_dim", MODEL_MAX_WIDTH, "features" },
    { "multiple_of", MODEL_MAX_WIDTH, "features" },
    { "pos_embed_max_size", MODEL_MAX_WIDTH, "patches" },
    { "sample_size", MODEL_MAX_WIDTH, "latent pixels" },
};

int64_t models_cfg_limit_of(const char *key, const char **what)
{
    for (size_t i = 0; key && i < sizeof size_limits / sizeof *size_limits; i++)
        if (strcmp(size_limits[i].field, key) == 0) {
            if (what) *what = size_limits[i].what;
            return size_limits[i].max;
        }
    return 0;
}

/* An error when `v` passes the field's limit; v or dflt. */
static int64_t within_limit(const model_config *c, const char *field, int64_t v, int64_t dflt)
{
    const char *what = NULL;
    int64_t max = models_cfg_limit_of(field, &what);
    if (max == 0 || v <= max) return v;
    models_cfg_fail(c, field, "%lld is over mtk's limit of %lld %s (far above any released model; refused before "
             "building)", (long long)v, (long long)max, what);
    return dflt;
}

static int64_t item_int(const model_config *c, const cJSON *item, const char *field, int64_t dflt)
{
    if (!item) return dflt;
    if (cJSON_IsBool(item)) {
        models_cfg_fail(c, field, "expected an integer, got %s", cJSON_IsTrue(item) ? "true" : "false");
        return dflt;
    }
    if (!cJSON_IsNumber(item)) {
        models_cfg_fail(c, field, "expected an integer, got %s", cJSON_IsString(item) ? "a string" : "a list or object");
        return dflt;
    }
    double v = item->valuedouble;
    if (v != floor(v) || !(fabs(v) < 9.0e15)) {
        models_cfg_fail(c, field, "expected an integer, got %g", v);
        return dflt;
    }
    return within_limit(c, field, (int64_t)v, dflt);
}

static double item_float(const model_config *c, const cJSON *item, const char *field, double dflt)
{
    if (!item) return dflt;
    if (!cJSON_IsNumber(item)) {
        models_cfg_fail(c, field, "expected a number");
        return dflt;
    }
    return item->valuedouble;
}

static const char *item_string(const model_config *c, const cJSON *item, const char *field, const char *dflt)
{
    if (!item) return dflt;
    if (!cJSON_IsString(item)) {
        models_cfg_fail(c, field, "expected a string");
        return dflt;
    }
    return item->valuestring;
}

int64_t models_cfg_int(const model_config *c, const char *key, int64_t dflt)
{
    return item_int(c, models_cfg_get(c, key), key, dflt);
}

int64_t models_cfg_int_required(const model_config *c, const char *key)
{
    const cJSON *item = models_cfg_get(c, key);
    if (!item) {
        models_cfg_fail(c, NULL, "missing required field '%s'", key);
        return 0;
    }
    return item_int(c, item, key, 0);
}

static int64_t check_positive(const model_config *c, const char *key, int64_t v)
{
    if (v <= 0 && models_cfg_ok(c)) {
        models_cfg_fail(c, key, "must be a positive integer, got %lld", (long long)v);
        return 0;
    }
    return v;
}

int64_t models_cfg_positive(const model_config *c, const char *key, int64_t dflt)
{
    return check_positive(c, key, models_cfg_int(c, key, dflt));
}

int64_t models_cfg_positive_required(const model_config *c, const char *key)
{
    return check_positive(c, key, models_cfg_int_required(c, key));
}

bool models_cfg_check_layers(const model_config *c, const char *key, int64_t layers)
{
    if (models_cfg_ok(c) && layers < 0)
        return models_cfg_fail(c, key, "must be a non-negative integer, got %lld", (long long)layers);
    return true;
}

double models_cfg_float(const model_config *c, const char *key, double dflt)
{
    return item_float(c, models_cfg_get(c, key), key, dflt);
}

bool models_cfg_bool(const model_config *c, const char *key, bool dflt)
{
    const cJSON *item = models_cfg_get(c, key);
    if (!item) return dflt;
    if (!cJSON_IsBool(item)) {
        models_cfg_fail(c, key, "expected true or false");
        return dflt;
    }
    return cJSON_IsTrue(item);
}

const char *models_cfg_string(const model_config *c, const char *key, const char *dflt)
{
    return item_string(c, models_cfg_get(c, key), key, dflt);
}

int32_t models_cfg_int_list(const model_config *c, const char *key, int64_t *out, int32_t cap)
{
    const cJSON *item = models_cfg_get(c, key);
    if (!item) return -1;
    if (!cJSON_IsArray(item)) {
        models_cfg_fail(c, key, "expected a list of integers");
        return -1;
    }
    int32_t n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, item)
    {
        int64_t v = item_int(c, e, key, 0);
        if (!models_cfg_ok(c)) return -1;
        if (n < cap) out[n] = v;
        n++;
    }
    return n < cap ? n : cap;
}

int64_t models_cfg_obj_int(const model_config *c, const cJSON *obj, const char *obj_name, const char *key, int64_t dflt)
{
    char buf[128];
    return item_int(c, obj_get(obj, key), field_name(obj_name, key, buf, sizeof buf), dflt);
}

double models_cfg_obj_float(const model_config *c, const cJSON *obj, const char *obj_name, const char *key, double dflt)
{
    char buf[128];
    return item_float(c, obj_get(obj, key), field_name(obj_name, key, buf, sizeof buf), dflt);
}

const char *models_cfg_obj_string(const model_config *c, const cJSON *obj, const char *obj_name, const char *key,
                           const char *dflt)
{
    char buf[128];
    return item_string(c, obj_get(obj, key), field_name(obj_name, key, buf, sizeof buf), dflt);
}

bool models_cfg_attention(const model_config *c, const char *hidden_key, const char *heads_key, const char *kv_key,
                   int64_t kv_default, const char *head_dim_key, int64_t head_dim_default,
                   cfg_attention_dims *out)
{
    memset(out, 0, sizeof *out);
    out->hidden = models_cfg_positive_required(c, hidden_key);
    out->heads = models_cfg_positive_required(c, heads_key);
    if (!models_cfg_ok(c)) return false;
    out->kv_heads = kv_key ? models_cfg_positive(c, kv_key, kv_default > 0 ? kv_default : out->heads) : out->heads;
    if (!models_cfg_ok(c)) return false;
    if (out->heads % out->kv_heads != 0)
        return models_cfg_fail(c, kv_key, "%s=%lld must divide %s=%lld", kv_key, (long long)out->kv_heads, heads_key,
                        (long long)out->heads);
    if (head_dim_key && models_cfg_has(c, head_dim_key)) {
        out->head_dim = models_cfg_positive(c, head_dim_key, 0);
        return models_cfg_ok(c);
    }
    if (head_dim_default > 0) {
        out->head_dim = head_dim_default;
        return true;
    }
    if (out->hidden % out->heads != 0)
        return models_cfg_fail(c, hidden_key, "%s=%lld is not divisible by %s=%lld (and no %s is given)", hidden_key,
                        (long long)out->hidden, heads_key, (long long)out->heads,
                        head_dim_key ? head_dim_key : "head_dim");
    out->head_dim = out->hidden / out->heads;
    return true;
}

/* ------------------------------------------------------------ parsing */

/* "line L, column C" of byte offset `at` in text. */
static void where(const char *text, size_t at, int *line, int *col)
{
    *line = 1, *col = 1;
    for (size_t i = 0; i < at && text[i]; i++) {
        if (text[i] == '\n') (*line)++, *col = 1;
        else (*col)++;
    }
}

mtk_model_config *mtk_model_config_parse(mtk_ctx *ctx, const char *json_text, const char *origin)
{
    if (!json_text) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "config: no JSON text");
        return NULL;
    }
    mtk_model_config *c = mtk_ctx_alloc(ctx, sizeof *c);
    if (!c) return NULL;
    c->ctx = ctx;
    c->origin = mtk_ctx_strdup(ctx, origin ? origin : "config.json");
    if (!c->origin) return NULL;
    const char *end = NULL;
    c->root = cJSON_ParseWithOpts(json_text, &end, true);
    if (!c->root) {
        size_t at = end ? (size_t)(end - json_text) : 0;
        int line, col;
        where(json_text, at, &line, &col);
        mtk_error(ctx, MTK_ERR_SYNTAX, "%s: bad JSON at line %d, column %d", c->origin, line, col);
        return NULL;
    }
    char dup[256];
    if (json_find_duplicate_key(c->root, dup, sizeof dup)) {
        /* cJSON answers the first of two equal keys, Python's json the last */
        mtk_error(ctx, MTK_ERR_SYNTAX,
                  "%s: the key '%s' appears twice; transformers would read the last value and mtk the first, "
                  "so remove one", c->origin, dup);
        mtk_model_config_free(c);
        return NULL;
    }
    if (!cJSON_IsObject(c->root)) {
        models_cfg_fail(c, NULL, "not a config.json: expected a JSON object");
        mtk_model_config_free(c);
        return NULL;
    }
    /* a diffusers component names its class in "_class_name" and has no
     * model_type: the family table keys it by that class name */
    const char *type_key = models_cfg_get(c, "model_type") || !models_cfg_get(c, "_class_name")
                               ? "model_type" : "_class_name";
    c->model_type = models_cfg_string(c, type_key, NULL);
    if (!c->model_type) {
        if (models_cfg_ok(c)) models_cfg_fail(c, NULL, "missing required field 'model_type' (supported: %s)", models_family_names(ctx));
        mtk_model_config_free(c);
        return NULL;
    }
    const model_family *family = models_family_lookup(c->model_type);
    if (!family) {
        models_cfg_fail(c, type_key, "unknown %s '%s' (supported: %s)", type_key, c->model_type, models_family_names(ctx));
        mtk_model_config_free(c);
        return NULL;
    }
    /* the class: architectures[0], or the family's default */
    const cJSON *archs = models_cfg_get(c, "architectures");
    c->architecture = family->info.default_architecture;
    if (archs) {
        const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
        if (!cJSON_IsArray(archs) || (first && !cJSON_IsString(first))) {
            models_cfg_fail(c, "architectures", "expected a list of class names");
            mtk_model_config_free(c);
            return NULL;
        }
        if (first) c->architecture = first->valuestring;
    }
    /* torch_dtype (transformers < 5) or dtype (>= 5) */
    c->dtype = MTK_FLOAT32;
    const char *dtype_key = models_cfg_has(c, "torch_dtype") ? "torch_dtype" : "dtype";
    const char *dtype = models_cfg_string(c, dtype_key, NULL);
    if (dtype) {
        mtk_dtype d = mtk_dtype_from_name(dtype);
        if (!mtk_dtype_is_floating(d) || mtk_dtype_is_float8(d)) {
            if (strcmp(dtype, "auto") != 0) {
                models_cfg_fail(c, dtype_key, "'%s' is not a floating dtype (float32, float16, bfloat16, float64)", dtype);
                mtk_model_config_free(c);
                return NULL;
            }
        } else {
            c->dtype = d;
        }
    }
    if (!models_cfg_ok(c)) {
        mtk_model_config_free(c);
        return NULL;
    }
    return c;
}

mtk_model_config *mtk_model_config_load(mtk_ctx *ctx, const char *path)
{
    if (!path) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "config: no path");
        return NULL;
    }
    char joined[4096], resolved[PATH_MAX];
    struct stat st;
    const char *file = path, *open_path = path;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        int n = snprintf(joined, sizeof joined, "%s/config.json", path);
        if (n < 0 || (size_t)n >= sizeof joined) {
            mtk_error(ctx, MTK_ERR_IO, "%s: path too long", path);
            return NULL;
        }
        file = joined;
        if (stat(file, &st) != 0) {
            mtk_error(ctx, MTK_ERR_IO, "%s: a directory without a config.json", path);
            return NULL;
        }
        /* the directory's config.json must be inside it (a hub snapshot's
         * link into its blobs is; a link to /etc/passwd is not) */
        fs_root root;
        if (!fs_root_init(ctx, &root, path) || !fs_confined(ctx, &root, file, resolved)) return NULL;
        open_path = resolved;
    }
    /* NONBLOCK: a FIFO fails the regular-file check instead of blocking */
    int fd = open(open_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (f || fd < 0) mtk_error(ctx, MTK_ERR_IO, "%s: %s", file, f ? "not a regular file" : strerror(errno));
        else mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "%s: out of memory", file);
        if (f) fclose(f);
        else if (fd >= 0) close(fd);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 16384;
            if (cap > CONFIG_MAX_BYTES) {
                free(text);
                fclose(f);
                mtk_error(ctx, MTK_ERR_IO, "%s: larger than %u MiB; not a config.json", file, CONFIG_MAX_BYTES >> 20);
                return NULL;
            }
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "%s: out of memory", file);
                return NULL;
            }
            text = grown;
        }
        size_t got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    bool read_error = ferror(f);
    fclose(f);
    if (read_error) {
        free(text);
        mtk_error(ctx, MTK_ERR_IO, "%s: read error", file);
        return NULL;
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        free(text);
        mtk_error(ctx, MTK_ERR_SYNTAX, "%s: bad JSON (a NUL byte in the file)", file);
        return NULL;
    }
    mtk_model_config *c = mtk_model_config_parse(ctx, text, file);
    free(text);
    return c;
}

void mtk_model_config_free(mtk_model_config *config)
{
    if (!config) return;
    cJSON_Delete(config->root);
    config->root = NULL;
}

const char *mtk_model_config_model_type(const mtk_model_config *config) { return config ? config->model_type : NULL; }

const char *mtk_model_config_architecture(const mtk_model_config *config)
{
    return config ? config->architecture : NULL;
}

mtk_dtype mtk_model_config_dtype(const mtk_model_config *config)
{
    return config ? config->dtype : MTK_DTYPE_UNDEFINED;
}
