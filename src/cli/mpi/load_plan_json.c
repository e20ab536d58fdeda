/* The parallel plan `mtk load --plan` reads: {"world_size", "parameters":
 * [{"name", "shape", "dtype", "placement", "slices": [{"rank", "offset",
 * "shape"[, "parts": [{"offset", "shape"}]]}]}]} (docs/sharding.md; a
 * slice's parts are boxes of its own, held and verified one by one), parsed with cJSON and checked against
 * the model built on meta.  Every check depends only on the plan and the
 * model, so every rank finds the same error. */
#include "cli/cli.h"
#include "cli/load_plan.h"
#include "mtk/nn.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A plan bigger than this is refused (a plan of 1,000 ranks of a model of
 * 10,000 tensors, each slice ~80 bytes, is 800 MB). */
#define PLAN_MAX_BYTES (1ull << 30)

static char *read_text(mtk_ctx *ctx, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mtk_error(ctx, MTK_ERR_IO, "load: cannot open the plan '%s': %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 65536 * 2;
            char *grown = cap > PLAN_MAX_BYTES ? NULL : realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                mtk_error(ctx, MTK_ERR_IO, "load: the plan '%s' is larger than %llu bytes", path,
                          (unsigned long long)PLAN_MAX_BYTES);
                return NULL;
            }
            text = grown;
        }
        size_t got = fread(text + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        mtk_error(ctx, MTK_ERR_IO, "load: cannot read the plan '%s'", path);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

/* A non-negative integer member that fits int64, or false with an error
 * naming `what`. */
static bool json_int(mtk_ctx *ctx, const char *path, const cJSON *item, const char *what, int64_t *out)
{
    if (!cJSON_IsNumber(item) || item->valuedouble < 0 || item->valuedouble > 9.0e15 ||
        item->valuedouble != (double)(int64_t)item->valuedouble)
        return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': %s is not a non-negative integer", path, what);
    *out = (int64_t)item->valuedouble;
    return true;
}

/* A list of at most MTK_MAX_DIMS non-negative integers. */
static bool json_dims(mtk_ctx *ctx, const char *path, const cJSON *item, const char *what, int64_t *dims,
                      int32_t *ndim)
{
    if (!cJSON_IsArray(item))
        return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': %s is not a list of sizes", path, what);
    int n = cJSON_GetArraySize(item);
    if (n > MTK_MAX_DIMS)
        return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': %s has %d dims (at most %d)", path, what, n,
                         MTK_MAX_DIMS);
    int32_t d = 0;
    for (const cJSON *v = item->child; v; v = v->next, d++)
        if (!json_int(ctx, path, v, what, &dims[d])) return false;
    *ndim = d;
    return true;
}

static bool read_slice(mtk_ctx *ctx, const char *path, const char *name, const cJSON *s, plan_slice *out)
{
    char what[320];
    snprintf(what, sizeof what, "a slice of '%s'", name);
    if (!cJSON_IsObject(s)) return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': %s is not an object", path, what);
    int64_t rank = 0;
    int32_t ndim_offset = 0, ndim_shape = 0;
    snprintf(what, sizeof what, "\"rank\" of a slice of '%s'", name);
    if (!json_int(ctx, path, cJSON_GetObjectItemCaseSensitive(s, "rank"), what, &rank)) return false;
    if (rank > INT32_MAX) return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': %s is too large", path, what);
    snprintf(what, sizeof what, "\"offset\" of a slice of '%s'", name);
    if (!json_dims(ctx, path, cJSON_GetObjectItemCaseSensitive(s, "offset"), what, out->offset, &ndim_offset))
        return false;
    snprintf(what, sizeof what, "\"shape\" of a slice of '%s'", name);
    if (!json_dims(ctx, path, cJSON_GetObjectItemCaseSensitive(s, "shape"), what, out->shape, &ndim_shape))
        return false;
    if (ndim_offset != ndim_shape)
        return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': a slice of '%s' has an offset of %d dims and a "
                         "shape of %d", path, name, ndim_offset, ndim_shape);
    out->rank = (int32_t)rank;
    out->ndim = ndim_shape;
    return true;
}

static bool read_param(mtk_ctx *ctx, const char *path, const cJSON *p, plan_param *out)
{
    if (!cJSON_IsObject(p))
        return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': an entry of \"parameters\" is not an object", path);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
    if (!cJSON_IsString(name) || !*name->valuestring)
        return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': a parameter has no \"name\"", path);
    out->name = mtk_ctx_strdup(ctx, name->valuestring);
    out->ndim = -1;
    out->dtype = MTK_DTYPE_UNDEFINED;
    char what[320];
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(p, "shape");
    snprintf(what, sizeof what, "\"shape\" of '%s'", out->name);
    if (shape && !json_dims(ctx, path, shape, what, out->shape, &out->ndim)) return false;
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(p, "dtype");
    if (dtype) {
        out->dtype = cJSON_IsString(dtype) ? cli_dtype_from_name(dtype->valuestring) : MTK_DTYPE_UNDEFINED;
        if (out->dtype == MTK_DTYPE_UNDEFINED)
            return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': \"dtype\" of '%s' is not a dtype", path,
                             out->name);
    }
    const cJSON *placement = cJSON_GetObjectItemCaseSensitive(p, "placement");
    char *ptext = placement ? (cJSON_IsString(placement) ? NULL : cJSON_PrintUnformatted(placement)) : NULL;
    out->placement = mtk_ctx_strdup(ctx, cJSON_IsString(placement) ? placement->valuestring : ptext ? ptext : "");
    cJSON_free(ptext);
    const cJSON *slices = cJSON_GetObjectItemCaseSensitive(p, "slices");
    if (!cJSON_IsArray(slices))
        return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': '%s' has no \"slices\" list", path, out->name);
    /* a slice with "parts" (mtk shard's packed gate/up halves) is held as
       one box per part, each read and verified on its own */
    out->nslices = 0;
    for (const cJSON *s = slices->child; s; s = s->next) {
        const cJSON *parts = cJSON_IsObject(s) ? cJSON_GetObjectItemCaseSensitive(s, "parts") : NULL;
        int32_t n = cJSON_IsArray(parts) ? cJSON_GetArraySize(parts) : 0;
        out->nslices += n > 0 ? n : 1;
    }
    out->slices = mtk_ctx_alloc(ctx, sizeof *out->slices * (size_t)(out->nslices ? out->nslices : 1));
    if (!out->name || !out->placement || !out->slices) return false;
    int32_t i = 0;
    for (const cJSON *s = slices->child; s; s = s->next) {
        plan_slice whole;
        if (!read_slice(ctx, path, out->name, s, &whole)) return false;
        const cJSON *parts = cJSON_GetObjectItemCaseSensitive(s, "parts");
        if (!cJSON_IsArray(parts) || cJSON_GetArraySize(parts) == 0) {
            out->slices[i++] = whole;
            continue;
        }
        for (const cJSON *part = parts->child; part; part = part->next) {
            if (!cJSON_IsObject(part))
                return mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': a part of a slice of '%s' is not an object",
                                 path, out->name);
            cJSON *box = cJSON_Duplicate(part, true); /* {offset, shape} and the slice's rank */
            if (!box || !cJSON_AddNumberToObject(box, "rank", whole.rank)) {
                cJSON_Delete(box);
                return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "load: plan '%s': out of memory", path);
            }
            bool ok = read_slice(ctx, path, out->name, box, &out->slices[i++]);
            cJSON_Delete(box);
            if (!ok) return false;
        }
    }
    return true;
}

bool plan_read(mtk_ctx *ctx, const char *path, parallel_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->path = path;
    char *text = read_text(ctx, path);
    if (!text) return false;
    cJSON *doc = cJSON_Parse(text);
    free(text);
    if (!doc) return mtk_error(ctx, MTK_ERR_SYNTAX, "load: the plan '%s' is not JSON", path);
    bool ok = true;
    int64_t world = 0;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(doc, "parameters");
    if (!cJSON_IsObject(doc))
        ok = mtk_error(ctx, MTK_ERR_SYNTAX, "load: the plan '%s' is not a JSON object", path);
    else if (!json_int(ctx, path, cJSON_GetObjectItemCaseSensitive(doc, "world_size"), "\"world_size\"", &world))
        ok = false;
    else if (world < 1 || world > INT32_MAX)
        ok = mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s': \"world_size\" %lld is not 1 or more", path,
                       (long long)world);
    else if (!cJSON_IsArray(params))
        ok = mtk_error(ctx, MTK_ERR_SYNTAX, "load: plan '%s' has no \"parameters\" list", path);
    if (ok) {
        plan->world_size = (int32_t)world;
        plan->nparams = cJSON_GetArraySize(params);
        plan->params = mtk_ctx_alloc(ctx, sizeof *plan->params * (size_t)(plan->nparams ? plan->nparams : 1));
        ok = plan->params != NULL;
        int32_t i = 0;
        for (const cJSON *p = ok ? params->child : NULL; ok && p; p = p->next, i++)
            ok = read_param(ctx, path, p, &plan->params[i]);
    }
    cJSON_Delete(doc);
    return ok;
}

static bool check_param(mtk_ctx *ctx, const parallel_plan *plan, const plan_param *p, mtk_state_dict *sd,
                        const char *model_class)
{
    char a[MTK_MAX_DIMS * 24 + 2], b[MTK_MAX_DIMS * 24 + 2];
    mtk_tensor *t = mtk_state_dict_get(sd, p->name);
    if (!t)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "load: plan '%s' names '%s', which %s does not have",
                         plan->path, p->name, model_class);
    if (p->ndim >= 0 && (p->ndim != t->ndim || memcmp(p->shape, t->shape, sizeof *t->shape * (size_t)t->ndim)))
        return mtk_error(ctx, MTK_ERR_SHAPE, "load: plan '%s': '%s' has shape %s in the plan but %s in the model",
                         plan->path, p->name, mtk_shape_list_str(p->shape, p->ndim, a, sizeof a),
                         mtk_shape_list_str(t->shape, t->ndim, b, sizeof b));
    if (p->dtype != MTK_DTYPE_UNDEFINED && p->dtype != t->dtype)
        return mtk_error(ctx, MTK_ERR_DTYPE, "load: plan '%s': '%s' is %s in the plan but %s in the model",
                         plan->path, p->name, mtk_dtype_name(p->dtype), mtk_dtype_name(t->dtype));
    for (int32_t i = 0; i < p->nslices; i++) {
        const plan_slice *s = &p->slices[i];
        if (s->rank >= plan->world_size)
            return mtk_error(ctx, MTK_ERR_INDEX, "load: plan '%s': a slice of '%s' is on rank %d of a world of %d",
                             plan->path, p->name, s->rank, plan->world_size);
        if (s->ndim != t->ndim)
            return mtk_error(ctx, MTK_ERR_SHAPE, "load: plan '%s': a slice of '%s' has %d dims, the tensor %d (%s)",
                             plan->path, p->name, s->ndim, t->ndim, mtk_shape_list_str(t->shape, t->ndim, b, sizeof b));
        for (int32_t d = 0; d < t->ndim; d++)
            if (s->offset[d] > t->shape[d] || s->shape[d] > t->shape[d] - s->offset[d])
                return mtk_error(ctx, MTK_ERR_INDEX,
                                 "load: plan '%s': the slice of '%s' on rank %d is out of bounds: dim %d offset "
                                 "%lld + size %lld > %lld (tensor shape %s)",
                                 plan->path, p->name, s->rank, d, (long long)s->offset[d], (long long)s->shape[d],
                                 (long long)t->shape[d], mtk_shape_list_str(t->shape, t->ndim, b, sizeof b));
    }
    return true;
}

bool plan_check(mtk_ctx *ctx, const parallel_plan *plan, mtk_module *model, int32_t world)
{
    if (plan->world_size != world)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "load: plan '%s' is for a world of %d rank%s, but %d rank%s (mpirun -np %d)", plan->path,
                         plan->world_size, plan->world_size == 1 ? "" : "s", world, world == 1 ? " runs" : "s run",
                         plan->world_size);
    mtk_state_dict *sd = mtk_module_state_dict(model);
    if (!sd) return false;
    for (int32_t i = 0; i < plan->nparams; i++) {
        for (int32_t j = 0; j < i; j++)
            if (strcmp(plan->params[j].name, plan->params[i].name) == 0)
                return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "load: plan '%s' lists '%s' twice", plan->path,
                                 plan->params[i].name);
        if (!check_param(ctx, plan, &plan->params[i], sd, mtk_module_type_name(model))) return false;
    }
    return true;
}
