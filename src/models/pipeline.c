/* A diffusers pipeline on meta (mtk/diffusion.h): model_index.json's
 * model components built from their configs, each call of each
 * component traced at one image size. */
#include "models/pipeline.h"
#include "mtk/nn.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* model_index.json's entries that are not models (tokenizers, schedulers,
 * image processors) end in one of these */
static const char *const not_models[] = { "Tokenizer", "TokenizerFast", "Scheduler", "ImageProcessor",
                                          "FeatureExtractor", NULL };

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool mtk_pipeline_exists(const char *name)
{
    if (!name) return false;
    if (mtk_builtin_pipeline_find(name)) return true;
    char path[4096];
    snprintf(path, sizeof path, "%s/model_index.json", name);
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The whole of a regular file, NUL-terminated, in the arena. */
static char *read_text(mtk_ctx *ctx, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (100 << 20)) {
        mtk_error(ctx, MTK_ERR_IO, "%s: %s", path, errno ? strerror(errno) : "not a regular file");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    char *text = f ? mtk_ctx_alloc(ctx, (size_t)st.st_size + 1) : NULL;
    size_t got = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
    if (f) fclose(f);
    if (!text || got != (size_t)st.st_size) {
        mtk_error(ctx, MTK_ERR_IO, "%s: cannot read", path);
        return NULL;
    }
    text[got] = '\0';
    return text;
}

static const char *builtin_names(mtk_ctx *ctx)
{
    char buf[1024] = "";
    size_t len = 0;
    for (int32_t i = 0; i < mtk_builtin_pipeline_count() && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? ", " : "", mtk_builtin_pipeline_at(i)->name);
    return mtk_ctx_strdup(ctx, buf);
}

/* A class name is a model mtk builds: a family keyed by it (diffusers) or
 * listing it among its classes (transformers). */
static bool known_class(const char *class_name)
{
    for (int32_t i = 0; i < mtk_model_family_count(); i++) {
        const mtk_model_family_info *f = mtk_model_family_at(i);
        if (strcmp(f->model_type, class_name) == 0) return true;
        for (int32_t k = 0; f->architectures[k]; k++)
            if (strcmp(f->architectures[k], class_name) == 0) return true;
    }
    return false;
}

static bool not_a_model(const char *class_name)
{
    for (int32_t i = 0; not_models[i]; i++)
        if (ends_with(class_name, not_models[i])) return true;
    return false;
}

static void note(mtk_pipeline *p, mtk_ctx *ctx, const char *name, const char *class_name)
{
    if (p->nnotes == MTK_PIPELINE_MAX_NOTES) return;
    char buf[512];
    snprintf(buf, sizeof buf, "%s (%s): not modelled, left out", name, class_name);
    p->notes[p->nnotes++] = mtk_ctx_strdup(ctx, buf);
}

/* One model component's parsed config, before it is built. */
typedef struct pending {
    const char *name, *class_name;
    model_config *config;
    const diffusers_component *component;
} pending;

/* The config of component `name`: the built-in's text, or
 * DIR/name/config.json (the error names the missing folder or file). */
static model_config *component_config(mtk_ctx *ctx, const char *pipeline, const mtk_builtin_pipeline *b,
                                      const char *name, const char *class_name)
{
    char origin[4096];
    snprintf(origin, sizeof origin, "%s/%s", pipeline, name);
    if (b) {
        for (int32_t i = 0; i < MTK_PIPELINE_MAX_COMPONENTS && b->components[i].name; i++)
            if (strcmp(b->components[i].name, name) == 0)
                return mtk_model_config_parse(ctx, b->components[i].config_json, origin);
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: the built-in pipeline has no config for '%s'", pipeline, name);
        return NULL;
    }
    if (!is_directory(origin)) {
        mtk_error(ctx, MTK_ERR_IO, "%s: model_index.json lists component '%s' (%s) but there is no folder %s", pipeline,
                  name, class_name, origin);
        return NULL;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", origin);
    struct stat st;
    if (stat(path, &st) != 0) {
        mtk_error(ctx, MTK_ERR_IO, "%s: component '%s' (%s) has no config.json in %s", pipeline, name, class_name, origin);
        return NULL;
    }
    return mtk_model_config_load(ctx, origin);
}

/* The model_index.json entries that are models, as pending components
 * out[0..*count).  False with the error set. */
static bool read_index(mtk_ctx *ctx, mtk_pipeline *p, const mtk_builtin_pipeline *b, const cJSON *index,
                       pending *out, int32_t *count)
{
    int32_t *n = count;
    const cJSON *item;
    cJSON_ArrayForEach(item, index)
    {
        if (item->string[0] == '_' || !cJSON_IsArray(item)) continue; /* _class_name, options, null entries */
        const cJSON *cls = cJSON_GetArrayItem(item, 1);
        if (!cJSON_IsString(cls) || not_a_model(cls->valuestring)) continue;
        if (!known_class(cls->valuestring)) {
            note(p, ctx, item->string, cls->valuestring);
            continue;
        }
        if (*n == MTK_PIPELINE_MAX_COMPONENTS)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: more than %d model components", p->name,
                             MTK_PIPELINE_MAX_COMPONENTS);
        model_config *c = component_config(ctx, p->name, b, item->string, cls->valuestring);
        if (!c) return false;
        const diffusers_component *component = diffusers_component_of(models_family_lookup(c->model_type));
        if (!component) {
            note(p, ctx, item->string, c->architecture);
            mtk_model_config_free(c);
            continue;
        }
        out[(*n)++] = (pending){ mtk_ctx_strdup(ctx, item->string), mtk_ctx_strdup(ctx, cls->valuestring), c, component };
    }
    return true;
}

static const char *role_name(diffusers_role role)
{
    return role == DIFFUSERS_TEXT_ENCODER ? "text_encoder" : role == DIFFUSERS_DENOISER ? "denoiser" : "vae";
}

static int64_t kind_tokens(const pipeline_kind *kind, const char *component)
{
    for (int32_t i = 0; kind && i < MTK_PIPELINE_MAX_COMPONENTS && kind->tokens[i].component; i++)
        if (strcmp(kind->tokens[i].component, component) == 0) return kind->tokens[i].tokens;
    return 0;
}

/* Traces one call of the component's module. */
static bool trace_call(mtk_ctx *ctx, mtk_module *m, const diffusers_call *call, mtk_dtype dtype, mtk_pipeline_call *out)
{
    memset(out, 0, sizeof *out);
    out->method = call->method;
    out->per_image = call->per_image;
    out->nin = call->nin;
    for (int32_t i = 0; i < call->nin; i++) out->input_names[i] = call->in[i].name;
    if (!diffusers_call_tensors(ctx, call, dtype, out->inputs) || !diffusers_select_method(m, call->method))
        return false;
    mtk_module_io io = { .nin = call->nin };
    for (int32_t i = 0; i < call->nin; i++) io.in[i] = out->inputs[i];
    mtk_trace *trace = mtk_trace_begin(m);
    if (!trace) return false;
    bool ok = mtk_module_call(m, &io);
    mtk_trace_end(trace);
    out->flops = mtk_trace_flops(trace);
    mtk_trace_free(trace);
    diffusers_select_method(m, "forward");
    if (!ok) return false;
    out->nout = io.nout;
    for (int32_t i = 0; i < io.nout; i++) out->outputs[i] = io.out[i];
    return true;
}

/* The bytes of the KV cache a decoder text encoder's forward builds at
 * input_ids (B, S) when its config keeps use_cache (true by default):
 * transformers 5's DynamicCache(config=...), one layer per decoder layer
 * from the config's layer_types.  After one forward every layer keeps the
 * whole key and value states of the S tokens: a sliding layer's cache is
 * a view of the last window - 1 of them, which keeps their storage.  Sized
 * from the config alone (mtk_kv_cache_assume), never from data.  0 for an
 * encoder (CLIP, T5), which builds none. */
static bool text_cache_bytes(mtk_ctx *ctx, const pending *pc, mtk_pipeline_component *out)
{
    if (pc->component->role != DIFFUSERS_TEXT_ENCODER || out->ncalls == 0 || out->calls[0].nin < 1 ||
        !models_cfg_bool(pc->config, "use_cache", true))
        return models_cfg_ok(pc->config);
    const mtk_tensor *ids = out->calls[0].inputs[0];
    if (!ids || ids->ndim != 2) return true;
    mtk_kv_cache *cache = mtk_kv_cache_new(out->module);
    if (!mtk_kv_cache_plannable(cache)) { /* not a decoder of the zoo: no cache planned */
        mtk_ctx_clear_error(ctx);
        return true;
    }
    int64_t batch = ids->shape[0], seq = ids->shape[1];
    if (!mtk_kv_cache_assume(cache, batch, seq)) return false;
    for (int32_t i = 0; i < mtk_kv_cache_layer_count(cache); i++) {
        const mtk_kv_cache_layer *l = mtk_kv_cache_layer_at(cache, i);
        const mtk_tensor *kv[2] = { l->keys_base, l->values_base };
        for (int k = 0; k < 2; k++) {
            /* (B, kv_heads, T, head_dim): the prefill keeps all S tokens */
            if (!kv[k] || kv[k]->ndim != 4 || kv[k]->shape[2] <= 0) continue;
            int64_t per_token = mtk_tensor_numel(kv[k]) / kv[k]->shape[2] * (int64_t)mtk_dtype_size(kv[k]->dtype);
            out->cache_bytes += per_token * seq;
        }
    }
    return true;
}

/* Builds one component and traces its calls at `image`. */
static bool run_component(mtk_ctx *ctx, const pending *pc, const diffusers_image *image, mtk_dtype dtype,
                          mtk_pipeline_component *out)
{
    memset(out, 0, sizeof *out);
    out->name = pc->name;
    out->role = role_name(pc->component->role);
    diffusers_call calls[DIFFUSERS_MAX_CALLS];
    int32_t n = pc->component->calls(pc->config, image, calls, DIFFUSERS_MAX_CALLS);
    if (n < 0) return false;
    out->dtype = dtype != MTK_DTYPE_UNDEFINED ? dtype : pc->config->dtype;
    out->module = mtk_model_build_config(ctx, pc->config, dtype);
    if (!out->module) return false;
    out->class_name = mtk_module_type_name(out->module);
    mtk_param_stats stats;
    if (!mtk_module_param_stats(out->module, &stats)) return false;
    out->params = stats.total, out->param_bytes = stats.bytes, out->buffer_bytes = stats.buffer_bytes;
    for (int32_t i = 0; i < n && i < MTK_PIPELINE_MAX_CALLS; i++) {
        if (!trace_call(ctx, out->module, &calls[i], out->dtype, &out->calls[i])) return false;
        out->ncalls++;
        int64_t f;
        if (out->calls[i].flops == INT64_MAX || __builtin_mul_overflow(out->calls[i].flops, calls[i].per_image, &f) ||
            __builtin_add_overflow(out->flops_per_image, f, &out->flops_per_image))
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: the FLOPs per image pass 2^63 (a smaller image, "
                             "batch or fewer steps)", pc->name);
    }
    return text_cache_bytes(ctx, pc, out);
}

static mtk_pipeline *run_pending(mtk_ctx *ctx, mtk_pipeline *p, const mtk_pipeline_options *options, pending *pend,
                                 int32_t npend, bool zero_negative);

/* One component's config.json (or a directory holding one) called as its
 * pipeline would call it: a pipeline of that one component, the VAE
 * factor 8 (diffusers' default without a VAE) unless it is the VAE. */
static mtk_pipeline *single_component(mtk_ctx *ctx, const char *name, const mtk_pipeline_options *options,
                                      pending *pend, int32_t *npend)
{
    model_config *c = mtk_model_config_load(ctx, name);
    if (!c) return NULL;
    pend[0] = (pending){ "model", mtk_ctx_strdup(ctx, c->architecture), c, diffusers_component_of(models_family_lookup(c->model_type)) };
    *npend = 1;
    if (!pend[0].component) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: %s is not a diffusers pipeline component (--image takes a pipeline, "
                  "a UNet, VAE or DiT config, or a text encoder's)", name, c->architecture);
        return NULL;
    }
    pend[0].name = pend[0].component->role == DIFFUSERS_DENOISER ? "denoiser"
                   : pend[0].component->role == DIFFUSERS_VAE    ? "vae"
                                                                 : "text_encoder";
    mtk_pipeline *p = mtk_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->name = mtk_ctx_strdup(ctx, name);
    p->source = "config.json";
    p->class_name = mtk_ctx_strdup(ctx, c->architecture); /* the config is freed after the build */
    return run_pending(ctx, p, options, pend, 1, false);
}

static mtk_pipeline *resolve(mtk_ctx *ctx, const char *name, const mtk_pipeline_options *options, pending *pend,
                             int32_t *npend)
{
    const mtk_builtin_pipeline *b = mtk_builtin_pipeline_find(name);
    const char *text = NULL;
    char index_path[4096];
    snprintf(index_path, sizeof index_path, "%s/model_index.json", name);
    struct stat st;
    if (!b && (ends_with(name, ".json") || (is_directory(name) && stat(index_path, &st) != 0)))
        return single_component(ctx, name, options, pend, npend);
    if (b) {
        text = b->model_index_json;
    } else if (is_directory(name)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/model_index.json", name);
        errno = 0;
        text = read_text(ctx, path);
        if (!text) return NULL;
    } else {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "unknown pipeline '%s' (built-in pipelines: %s; or a directory holding model_index.json)", name,
                  builtin_names(ctx));
        return NULL;
    }
    mtk_pipeline *p = mtk_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->name = mtk_ctx_strdup(ctx, name);
    p->source = b ? "built-in" : "model_index.json";
    p->hf_id = b ? b->hf_id : NULL;
    cJSON *index = cJSON_Parse(text);
    if (!index || !cJSON_IsObject(index)) {
        cJSON_Delete(index);
        mtk_error(ctx, MTK_ERR_SYNTAX, "%s: model_index.json is not a JSON object", name);
        return NULL;
    }
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(index, "_class_name");
    p->class_name = mtk_ctx_strdup(ctx, cJSON_IsString(cls) ? cls->valuestring : "DiffusionPipeline");
    bool zero_negative = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(index, "force_zeros_for_empty_prompt"));
    bool ok = read_index(ctx, p, b, index, pend, npend);
    cJSON_Delete(index);
    if (!ok) return NULL;
    return run_pending(ctx, p, options, pend, *npend, zero_negative);
}

/* The image from the options and the configs, then each component built
 * and traced, text encoders first, then the denoiser, then the VAE. */
static mtk_pipeline *run_pending(mtk_ctx *ctx, mtk_pipeline *p, const mtk_pipeline_options *options, pending *pend,
                                 int32_t npend, bool zero_negative)
{
    /* the image: the VAE's factor, the denoiser's sample_size by default */
    p->scale_factor = 8;
    int64_t sample = 0;
    for (int32_t i = 0; i < npend; i++) {
        if (pend[i].component->role == DIFFUSERS_VAE) p->scale_factor = diffusers_vae_scale_factor(pend[i].config);
        if (pend[i].component->role == DIFFUSERS_DENOISER) sample = models_cfg_int(pend[i].config, "sample_size", 0);
        if (!models_cfg_ok(pend[i].config)) return NULL;
    }
    mtk_pipeline_options o = options ? *options : (mtk_pipeline_options){ 0 };
    if (o.height <= 0) o.height = sample > 0 ? sample * p->scale_factor : 512;
    if (o.width <= 0) o.width = sample > 0 ? sample * p->scale_factor : 512;
    if (o.batch <= 0) o.batch = 1;
    if (o.steps <= 0) o.steps = 50;
    p->options = o;

    if (zero_negative && o.guidance && p->nnotes < MTK_PIPELINE_MAX_NOTES)
        p->notes[p->nnotes++] = "force_zeros_for_empty_prompt: without a negative prompt its embeddings are zeros, "
                                "so the text encoders run once per image";
    const pipeline_kind *kind = pipeline_kind_find(p->class_name);
    for (int role = DIFFUSERS_TEXT_ENCODER; role <= DIFFUSERS_VAE; role++)
        for (int32_t i = 0; i < npend; i++) {
            if ((int)pend[i].component->role != role) continue;
            diffusers_image image = { .height = o.height, .width = o.width, .batch = o.batch, .steps = o.steps,
                                      .guidance = o.guidance, .scale_factor = p->scale_factor };
            /* SDXL's force_zeros_for_empty_prompt: with no negative prompt
               the negative embeddings are zeros, not encoded */
            if (role == DIFFUSERS_TEXT_ENCODER && zero_negative) image.guidance = false;
            image.tokens = kind_tokens(kind, role == DIFFUSERS_DENOISER ? "denoiser" : pend[i].name);
            mtk_pipeline_component *out = &p->components[p->ncomponents];
            if (!run_component(ctx, &pend[i], &image, o.dtype, out)) return NULL;
            p->ncomponents++;
            p->params += out->params;
            if (__builtin_add_overflow(p->flops_per_image, out->flops_per_image, &p->flops_per_image)) {
                mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: the FLOPs per image pass 2^63", p->name);
                return NULL;
            }
        }
    return p;
}

mtk_pipeline *mtk_pipeline_resolve(mtk_ctx *ctx, const char *pipeline, const mtk_pipeline_options *options)
{
    if (!pipeline || !*pipeline) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "no pipeline named");
        return NULL;
    }
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META)) return NULL;
    if (!mtk_ctx_push_init_mode(ctx, MTK_INIT_META)) {
        mtk_ctx_pop_device(ctx);
        return NULL;
    }
    pending pend[MTK_PIPELINE_MAX_COMPONENTS];
    int32_t npend = 0;
    mtk_pipeline *p = resolve(ctx, pipeline, options, pend, &npend);
    for (int32_t i = 0; i < npend; i++) mtk_model_config_free(pend[i].config);
    mtk_ctx_pop_init_mode(ctx);
    mtk_ctx_pop_device(ctx);
    return p;
}
