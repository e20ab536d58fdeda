/* Quantized storage: a config's `quantization_config` applied to the built
 * model, so that its parameters are the tensors of the published
 * checkpoint (names, shapes, dtypes) and their bytes are the download's.
 *
 * One row per quant_method:
 *
 *   fp8    block-wise float8 as DeepSeek-V3 ships it (transformers'
 *          FineGrainedFP8): every nn.Linear's weight (out, in) becomes
 *          float8_e4m3fn with a float32 `weight_scale_inv` of
 *          (ceil(out / b0), ceil(in / b1)) right after it; fused experts'
 *          matrices P (E, out, in) likewise with `P_scale_inv` (E,
 *          ceil(out / b0), ceil(in / b1)).  weight_block_size [b0, b1]
 *          (default [128, 128]).
 *   mxfp4  MXFP4 as gpt-oss ships it: fused experts' matrices P (E, out,
 *          in) become `P_blocks` uint8 (E, out, in / 32, 16) (two 4-bit
 *          values a byte, 32 a block along the input) and `P_scales` uint8
 *          (E, out, in / 32) (one power-of-two exponent a block); other
 *          layers stay as they are.  A family whose experts are input-major
 *          (experts_input_major: gpt_oss's (E, in, out), used as x @ W) has
 *          the transpose packed, as its checkpoints store it.  Parameter
 *          counts count the packed values (two a byte) and not the scales,
 *          as the model cards count them (gpt-oss-20b's 20.9B); the bytes
 *          are the download's.
 *
 * Left as they are, as transformers' quantizers leave them: embeddings,
 * norms, routers (not nn.Linear), biases, every module matching
 * modules_to_not_convert (a pattern matches a module path from its start
 * up to a dot or the end, as a regular expression, or as a suffix), and,
 * when the config gives no such list, transformers' default skips: the
 * output embeddings (lm_head) and the module of the model's last
 * parameter when that is a weight (a sequence classifier's score; a
 * token classifier's score ends with its bias, and is converted).
 * Matrices are taken as (out, in): the last dim is the input (nn.Linear's
 * layout and most of transformers 5's fused experts'), unless the family
 * says its experts are input-major.
 *
 * Storage only: the converted modules' forward uses the weight cast back
 * to the compute dtype, mxfp4 unpacked to the dense layout the forward
 * wants (shapes, dtypes and FLOPs as the dense model; a plan counts that
 * cast as a transient, like transformers' dequantizing fallback), so
 * quantization is applied to meta builds only. */
#include "core/text.h"
#include "models/config.h"
#include "mtk/ops.h"

#include <regex.h>
#include <stdio.h>
#include <string.h>

typedef enum quant_kind { QUANT_FP8, QUANT_MXFP4 } quant_kind;

typedef struct quant_scheme {
    const char *method;   /* quant_method                                   */
    quant_kind kind;
    bool linears;         /* converts nn.Linear weights (else experts only) */
} quant_scheme;

static const quant_scheme schemes[] = {
    { "fp8", QUANT_FP8, true },
    { "mxfp4", QUANT_MXFP4, false },
};

#define SCHEME_COUNT ((int32_t)(sizeof schemes / sizeof schemes[0]))
#define MXFP4_BLOCK 32
#define MAX_SKIP 64
#define NOTE_CAP 320

typedef struct quant_plan {
    model_config *c;
    const quant_scheme *scheme;
    int64_t block[2];               /* fp8 weight_block_size */
    const char *skip[MAX_SKIP];     /* modules_to_not_convert */
    regex_t re[MAX_SKIP];
    bool compiled[MAX_SKIP];
    bool literal[MAX_SKIP]; /* no regex metacharacter: the regex is a plain comparison */
    int32_t nskip;
    bool explicit_skip;             /* modules_to_not_convert given (not null) */
    char last_weight[256];          /* default skip: the module of the last parameter if a .weight */
    int64_t converted;
    int64_t scale_params;           /* fp8: elements of the *_scale_inv tensors */
} quant_plan;

/* ------------------------------------------------------------- patterns */

/* transformers' should_convert_module, negated: pattern i as a regex
 * (compiled once, anchored) matching path[0:e] where e ends a module
 * name, or as a suffix. */
static bool pattern_matches(const quant_plan *p, int32_t i, const char *path)
{
    const char *pattern = p->skip[i];
    size_t n = strlen(path), k = strlen(pattern);
    if (n >= k && strcmp(path + n - k, pattern) == 0) return true;
    if (!p->compiled[i]) return false;
    if (p->literal[i]) /* "^(lm_head)$" matches the one prefix that is lm_head */
        return n >= k && strncmp(path, pattern, k) == 0 && (k == n || path[k] == '.' || (k > 0 && path[k - 1] == '.'));
    char prefix[512];
    for (size_t e = 0; e <= n && e < sizeof prefix; e++) {
        bool boundary = e == n || path[e] == '.' || (e > 0 && path[e - 1] == '.');
        if (!boundary) continue;
        memcpy(prefix, path, e);
        prefix[e] = '\0';
        if (regexec(&p->re[i], prefix, 0, NULL, 0) == 0) return true;
    }
    return false;
}

static bool skipped(const quant_plan *p, const char *path)
{
    for (int32_t i = 0; i < p->nskip; i++)
        if (pattern_matches(p, i, path)) return true;
    return false;
}

/* Adds a modules_to_not_convert pattern (compiled as "^(pattern)$"; one
 * that does not compile still matches as a suffix). */
static bool add_skip(quant_plan *p, const char *pattern)
{
    if (p->nskip == MAX_SKIP)
        return models_cfg_fail(p->c, "quantization_config.modules_to_not_convert", "more than %d names", MAX_SKIP);
    char anchored[512];
    int32_t i = p->nskip++;
    p->skip[i] = pattern;
    p->compiled[i] = snprintf(anchored, sizeof anchored, "^(%s)$", pattern) < (int)sizeof anchored &&
                     regcomp(&p->re[i], anchored, REG_EXTENDED | REG_NOSUB) == 0;
    p->literal[i] = pattern[strcspn(pattern, ".[]()*+?{}|^$\\")] == '\0';
    return true;
}

static void free_skips(quant_plan *p)
{
    for (int32_t i = 0; i < p->nskip; i++)
        if (p->compiled[i]) regfree(&p->re[i]);
}

/* ------------------------------------------------------------- forwards */

static bool is_fp8(mtk_dtype d) { return d == MTK_FLOAT8_E4M3FN || d == MTK_FLOAT8_E5M2; }

mtk_tensor *models_quant_weight(mtk_module *m, const char *name, mtk_dtype dtype, bool input_major)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *w = mtk_module_find_tensor(m, name);
    if (w && !is_fp8(w->dtype)) return w;
    if (w) return mtk_to_dtype(ctx, w, dtype); /* fp8: (.., out, in) */
    char blocks_name[96];
    snprintf(blocks_name, sizeof blocks_name, "%s_blocks", name);
    mtk_tensor *blocks = mtk_module_find_tensor(m, blocks_name);
    if (!blocks) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: no weight '%s'", mtk_module_type_name(m), name);
        return NULL;
    }
    /* mxfp4: (.., rows, cols / 32, 16) bytes of two values -> (.., rows, cols) */
    int32_t nd = blocks->ndim;
    int64_t pairs[MTK_MAX_DIMS], dense[MTK_MAX_DIMS];
    for (int32_t i = 0; i < nd - 2; i++) pairs[i] = dense[i] = blocks->shape[i];
    int64_t half = blocks->shape[nd - 2] * blocks->shape[nd - 1];
    pairs[nd - 2] = half, pairs[nd - 1] = 2;
    dense[nd - 2] = 2 * half;
    mtk_tensor *flat = mtk_reshape(ctx, blocks, pairs, nd - 1);
    mtk_tensor *both = mtk_expand(ctx, mtk_unsqueeze(ctx, flat, -1), pairs, nd);
    mtk_tensor *w_dense = mtk_to_dtype(ctx, mtk_reshape(ctx, both, dense, nd - 1), dtype); /* (.., out, in) */
    /* input-major: (.., in, out), contiguous as transformers' dequantized weight */
    return input_major ? mtk_contiguous(ctx, mtk_transpose(ctx, w_dense, -1, -2)) : w_dense;
}

/* FP8Linear: linear(x, weight cast to x's dtype, bias) */
static bool fp8_linear_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    mtk_tensor *w = models_quant_weight(m, "weight", x->dtype, false);
    io->out[0] = mtk_linear(ctx, x, w, mtk_module_find_tensor(m, "bias"));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type fp8_linear_type = { "FP8Linear", fp8_linear_forward, NULL, NULL };

/* ------------------------------------------------------------ conversion */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* A new meta parameter of q (its dtype need not be a default dtype):
 * contiguous, as mtk_empty on meta makes it, without a trip through the
 * op dispatcher (a fp8 DeepSeek-V3 stores 1,208 of them). */
static mtk_tensor *stored(mtk_module *q, const char *name, const int64_t *shape, int32_t nd, mtk_dtype dtype)
{
    mtk_tensor *t = mtk_tensor_new(mtk_module_ctx(q), dtype, shape, nd, NULL, MTK_DEVICE_META);
    if (!t || !mtk_module_register_parameter(q, name, t)) return NULL;
    if (!mtk_dtype_is_floating(dtype)) t->flags &= ~MTK_TENSOR_REQUIRES_GRAD; /* as torch: integers cannot */
    return t;
}

/* The stored tensors of matrix `w` named `name` into module q; mxfp4
 * packs w's transpose when `input_major` (w is (.., in, out)). */
static bool convert_matrix(quant_plan *p, mtk_module *q, const char *name, const mtk_tensor *w, bool input_major)
{
    int32_t nd = w->ndim;
    int64_t shape[MTK_MAX_DIMS + 1], scale[MTK_MAX_DIMS];
    memcpy(shape, w->shape, (size_t)nd * sizeof *shape);
    memcpy(scale, w->shape, (size_t)nd * sizeof *scale);
    char scale_name[96];
    if (p->scheme->kind == QUANT_FP8) {
        scale[nd - 2] = ceil_div(w->shape[nd - 2], p->block[0]);
        scale[nd - 1] = ceil_div(w->shape[nd - 1], p->block[1]);
        snprintf(scale_name, sizeof scale_name, "%s_scale_inv", name);
        mtk_tensor *t = stored(q, name, shape, nd, MTK_FLOAT8_E4M3FN) ? stored(q, scale_name, scale, nd, MTK_FLOAT32)
                                                                         : NULL;
        if (t) p->scale_params += mtk_tensor_numel(t);
        return t != NULL;
    }
    int64_t rows = w->shape[nd - (input_major ? 1 : 2)], cols = w->shape[nd - (input_major ? 2 : 1)];
    if (cols % MXFP4_BLOCK != 0)
        return models_cfg_fail(p->c, "quantization_config", "mxfp4 packs blocks of %d values; '%s' has %lld %s",
                               MXFP4_BLOCK, name, (long long)cols, input_major ? "rows (its input)" : "columns");
    shape[nd - 2] = scale[nd - 2] = rows;
    shape[nd - 1] = scale[nd - 1] = cols / MXFP4_BLOCK;
    shape[nd] = MXFP4_BLOCK / 2;
    char blocks_name[96];
    snprintf(blocks_name, sizeof blocks_name, "%s_blocks", name);
    snprintf(scale_name, sizeof scale_name, "%s_scales", name);
    mtk_tensor *blocks = stored(q, blocks_name, shape, nd + 1, MTK_UINT8);
    mtk_tensor *scales = blocks ? stored(q, scale_name, scale, nd, MTK_UINT8) : NULL;
    if (!scales) return false;
    blocks->flags |= MTK_TENSOR_PACKED_PAIRS; /* counted as the values it packs */
    scales->flags |= MTK_TENSOR_QUANT_SCALES; /* bytes, not parameters         */
    return true;
}

/* The scale of q's fp8 matrix `name`, after q's other parameters. */
static bool convert_scale_only(quant_plan *p, mtk_module *q, const char *name)
{
    const mtk_tensor *w = mtk_module_find_tensor(q, name);
    int32_t nd = w->ndim;
    int64_t scale[MTK_MAX_DIMS];
    memcpy(scale, w->shape, (size_t)nd * sizeof *scale);
    scale[nd - 2] = ceil_div(w->shape[nd - 2], p->block[0]);
    scale[nd - 1] = ceil_div(w->shape[nd - 1], p->block[1]);
    char scale_name[96];
    snprintf(scale_name, sizeof scale_name, "%s_scale_inv", name);
    mtk_tensor *t = stored(q, scale_name, scale, nd, MTK_FLOAT32);
    if (t) p->scale_params += mtk_tensor_numel(t);
    return t != NULL;
}

/* A copy of `m` (same type and config unless `type`) with its matrices
 * (`only` names one of ndim >= 2; else those of ndim >= 3) stored
 * quantized; its other parameters, buffers and children are m's.  Fused experts hold each scale after its
 * matrix; an FP8Linear (`only`: nn.Linear's subclass) keeps weight and
 * bias first, as nn.Linear registered them, and adds the scale after. */
static mtk_module *convert_module(quant_plan *p, mtk_module *m, const mtk_module_type *type, const char *only,
                                  bool input_major)
{
    mtk_module *q = mtk_module_new_like(m);
    if (!q) return NULL;
    for (int32_t i = 0; i < mtk_module_param_count(m); i++) {
        const char *name;
        mtk_tensor *w = mtk_module_param_at(m, i, &name);
        /* a fused experts' matrix is (E, .., ..): their biases (E, n) stay */
        bool matrix = w->ndim >= (only ? 2 : 3) && (!only || strcmp(only, name) == 0);
        if (matrix && only) {
            if (!stored(q, name, w->shape, w->ndim, MTK_FLOAT8_E4M3FN)) return NULL;
        } else if (!(matrix ? convert_matrix(p, q, name, w, input_major)
                            : mtk_module_register_parameter(q, name, w))) {
            return NULL;
        }
    }
    if (only && !convert_scale_only(p, q, only)) return NULL;
    for (int32_t i = 0; i < mtk_module_buffer_count(m); i++) {
        const char *name;
        bool persistent;
        mtk_tensor *b = mtk_module_buffer_at(m, i, &name, &persistent);
        if (!mtk_module_register_buffer(q, name, b, persistent)) return NULL;
    }
    for (int32_t i = 0; i < mtk_module_child_count(m); i++) {
        const char *name;
        mtk_module *child = mtk_module_child_at(m, i, &name);
        if (!mtk_module_add(q, name, child)) return NULL;
    }
    if (type) mtk_module_set_type(q, type);
    p->converted++;
    return mtk_module_finish(q);
}

/* Converts the modules under m (path `prefix`, "" at the root). */
static bool convert_tree(quant_plan *p, mtk_module *m, const char *prefix)
{
    for (int32_t i = 0; i < mtk_module_child_count(m); i++) {
        const char *name;
        mtk_module *child = mtk_module_child_at(m, i, &name);
        char path[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", name);
        bool linear = p->scheme->linears && strcmp(mtk_module_type_name(child), "Linear") == 0;
        bool experts = !linear && strcmp(name, "experts") == 0 && mtk_module_param_count(child) > 0;
        mtk_module *q = NULL;
        if (!linear && !experts) {
            if (!convert_tree(p, child, path)) return false;
            continue;
        }
        /* a pattern naming a parent ("model.layers.*.self_attn") matches here too */
        if (strcmp(path, p->last_weight) == 0 || skipped(p, path)) continue;
        q = convert_module(p, child, linear ? &fp8_linear_type : NULL, linear ? "weight" : NULL,
                           experts && p->c->experts_input_major);
        if (q && !mtk_module_replace_child(m, i, q)) return false;
        if (!q && !models_cfg_ok(p->c)) return false;
    }
    return true;
}

static bool read_plan(model_config *c, const cJSON *qc, quant_plan *p)
{
    const char *method = models_cfg_obj_string(c, qc, "quantization_config", "quant_method", NULL);
    if (!models_cfg_ok(c)) return false;
    for (int32_t i = 0; method && i < SCHEME_COUNT; i++)
        if (strcmp(schemes[i].method, method) == 0) p->scheme = &schemes[i];
    if (!p->scheme) {
        char names[128] = "";
        for (int32_t i = 0, at = 0; i < SCHEME_COUNT; i++)
            at += snprintf(names + at, sizeof names - (size_t)at, "%s%s", i ? ", " : "", schemes[i].method);
        char *note = mtk_ctx_alloc(c->ctx, 256);
        if (note) {
            snprintf(note, 256, "quantization_config: quant_method '%s' is not modelled (supported: %s); weights are "
                     "counted in the model's dtype", method ? method : "(none)", names);
            models_cfg_note(c, note);
        }
        return false;
    }
    p->block[0] = p->block[1] = 128;
    const cJSON *block = cJSON_GetObjectItemCaseSensitive(qc, "weight_block_size");
    if (block && !cJSON_IsNull(block)) {
        if (!cJSON_IsArray(block) || cJSON_GetArraySize(block) != 2 ||
            !cJSON_IsNumber(cJSON_GetArrayItem(block, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(block, 1)) ||
            cJSON_GetArrayItem(block, 0)->valuedouble < 1 || cJSON_GetArrayItem(block, 1)->valuedouble < 1)
            return models_cfg_fail(c, "quantization_config.weight_block_size", "expected two positive integers");
        p->block[0] = (int64_t)cJSON_GetArrayItem(block, 0)->valuedouble;
        p->block[1] = (int64_t)cJSON_GetArrayItem(block, 1)->valuedouble;
    }
    const cJSON *skip = cJSON_GetObjectItemCaseSensitive(qc, "modules_to_not_convert");
    p->explicit_skip = skip && !cJSON_IsNull(skip);
    if (skip && !cJSON_IsNull(skip) && !cJSON_IsArray(skip))
        return models_cfg_fail(c, "quantization_config.modules_to_not_convert", "expected a list of module names");
    const cJSON *item;
    cJSON_ArrayForEach(item, skip)
    {
        if (!cJSON_IsString(item))
            return models_cfg_fail(c, "quantization_config.modules_to_not_convert", "expected a list of module names");
        if (!add_skip(p, item->valuestring)) return false;
    }
    return true;
}

/* Reads the plan into p (compiling its patterns) and converts m. */
static bool apply(model_config *c, mtk_module *m, const cJSON *qc, quant_plan *p)
{
    if (!read_plan(c, qc, p)) return models_cfg_ok(c);
    mtk_tensor *first = mtk_module_param_count(m) ? mtk_module_param_at(m, 0, NULL) : NULL;
    mtk_named_tensor *params = NULL;
    int32_t count = mtk_module_named_parameters(m, &params);
    if (count < 0) return false;
    if (!first && count > 0) first = params[0].tensor;
    if (first && !mtk_tensor_is_meta(first)) {
        models_cfg_note(c, "quantization_config: quantized storage is modelled on the meta device only; these "
                           "weights are in the model's dtype");
        return true;
    }
    if (!p->explicit_skip) {
        /* get_keys_to_not_convert: the output embeddings (lm_head, tied or
           not) and the module of the last parameter when it is a weight
           (score without a bias; a token classifier's score.bias is not) */
        if (!add_skip(p, "lm_head")) return false;
        const char *last = count ? params[count - 1].name : "";
        size_t len = strlen(last);
        if (len > 7 && strcmp(last + len - 7, ".weight") == 0 && len - 7 < sizeof p->last_weight)
            snprintf(p->last_weight, sizeof p->last_weight, "%.*s", (int)(len - 7), last);
    }
    if (!convert_tree(p, m, "")) return false;
    char *note = mtk_ctx_alloc(c->ctx, NOTE_CAP);
    mtk_param_stats st;
    if (note && !mtk_module_param_stats(m, &st)) return false;
    if (note) {
        if (p->scheme->kind == QUANT_FP8)
            snprintf(note, NOTE_CAP, "quantization_config: %lld modules store fp8 (float8_e4m3fn) weights with float32 "
                     "scales per %lldx%lld block (the parameters count %lld scales the dense model has not)",
                     (long long)p->converted, (long long)p->block[0], (long long)p->block[1],
                     (long long)p->scale_params);
        else {
            /* the download's bytes against the dense model's */
            char params[32], bytes[32], dense[32];
            snprintf(note, NOTE_CAP, "quantization_config: %lld expert modules store mxfp4 weights (uint8 blocks of "
                     "32 4-bit values and a uint8 scale: 4.25 bits a weight): %s parameters (unpacked values) in %s "
                     "bytes, not the %s of %s", (long long)p->converted, text_grouped(st.total, params, sizeof params),
                     text_grouped(st.bytes, bytes, sizeof bytes),
                     text_grouped(st.total * (int64_t)mtk_dtype_size(c->dtype), dense, sizeof dense),
                     mtk_dtype_name(c->dtype));
        }
        models_cfg_note(c, note);
    }
    return models_cfg_ok(c);
}

bool models_quant_apply(model_config *c, mtk_module *m)
{
    const cJSON *qc = cJSON_GetObjectItemCaseSensitive(c->root, "quantization_config");
    if (!m || !qc || cJSON_IsNull(qc)) return m != NULL;
    if (!cJSON_IsObject(qc)) return models_cfg_fail(c, "quantization_config", "expected an object");
    quant_plan *p = mtk_ctx_alloc(c->ctx, sizeof *p);
    if (!p) return false;
    memset(p, 0, sizeof *p);
    p->c = c;
    bool ok = apply(c, m, qc, p);
    free_skips(p);
    return ok;
}
