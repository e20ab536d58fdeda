/* JSON documents of eval values and errors (cJSON). */
#include "mtk/eval.h"
#include "core/scalar.h"
#include "eval/format.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A float as Python's json module writes it: repr digits (2.0 stays a
 * float), NaN / Infinity / -Infinity for the non-finite. */
static cJSON *json_float(double v)
{
    char buf[40];
    if (isnan(v)) return cJSON_CreateRaw("NaN");
    if (isinf(v)) return cJSON_CreateRaw(v < 0 ? "-Infinity" : "Infinity");
    mtk_format_float(v, buf, sizeof buf);
    return cJSON_CreateRaw(buf);
}

static cJSON *json_int_array(const int64_t *items, int32_t n)
{
    cJSON *array = cJSON_CreateArray();
    for (int32_t i = 0; array && i < n; i++) {
        cJSON *item = text_json_int(items[i]);
        if (!item || !cJSON_AddItemToArray(array, item)) {
            cJSON_Delete(item);
            cJSON_Delete(array);
            return NULL;
        }
    }
    return array;
}

/* The elements of a cpu tensor, flattened in logical (row-major) order. */
static cJSON *json_tensor_values(const mtk_tensor *t)
{
    cJSON *array = cJSON_CreateArray();
    if (!array) return NULL;
    int64_t numel = mtk_tensor_numel(t);
    const char *base = mtk_tensor_data(t);
    if (numel == 0 || !base) return array;
    mtk_dtype dtype = t->dtype;
    size_t esize = mtk_dtype_size(dtype);
    const mtk_dtype_info *info = mtk_dtype_get(dtype);
    int64_t index[MTK_MAX_DIMS] = { 0 };
    int64_t offset = 0; /* in elements, from the first element */
    for (int64_t k = 0; k < numel; k++) {
        const char *p = base + offset * (int64_t)esize;
        cJSON *item;
        if (info->kind == MTK_KIND_BOOL) item = cJSON_CreateBool(mtk_load_i64(dtype, p) != 0);
        else if (info->kind == MTK_KIND_FLOAT) item = json_float(mtk_load_f64(dtype, p));
        else item = text_json_int(mtk_load_i64(dtype, p));
        if (!item || !cJSON_AddItemToArray(array, item)) {
            cJSON_Delete(item);
            cJSON_Delete(array);
            return NULL;
        }
        /* odometer step over the dims, last dim fastest */
        for (int32_t d = t->ndim - 1; d >= 0; d--) {
            offset += t->stride[d];
            if (++index[d] < t->shape[d]) break;
            offset -= t->stride[d] * t->shape[d];
            index[d] = 0;
        }
    }
    return array;
}

static cJSON *json_tensor(const mtk_tensor *t, uint32_t flags)
{
    char device[32];
    cJSON *obj = cJSON_CreateObject();
    if (!obj) return NULL;
    bool ok = cJSON_AddItemToObject(obj, "shape", json_int_array(t->shape, t->ndim)) &&
              cJSON_AddStringToObject(obj, "dtype", mtk_dtype_name(t->dtype)) &&
              cJSON_AddItemToObject(obj, "stride", json_int_array(t->stride, t->ndim)) &&
              cJSON_AddItemToObject(obj, "storage_offset", text_json_int(t->storage_offset)) &&
              cJSON_AddStringToObject(obj, "device", mtk_device_str(t->device, device, sizeof device));
    if (ok && (flags & MTK_JSON_VALUES) && t->device == MTK_DEVICE_CPU && mtk_tensor_data(t))
        ok = cJSON_AddItemToObject(obj, "values", json_tensor_values(t));
    if (!ok) {
        cJSON_Delete(obj);
        return NULL;
    }
    return obj;
}

/* An object of one member {key: item}; takes item. */
static cJSON *json_wrap(const char *key, cJSON *item)
{
    cJSON *obj = item ? cJSON_CreateObject() : NULL;
    if (!obj || !cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(obj);
        cJSON_Delete(item);
        return NULL;
    }
    return obj;
}

static cJSON *json_value(const mtk_value *v, uint32_t flags)
{
    char buf[32];
    switch (v->kind) {
    case MTK_VALUE_NONE: return cJSON_CreateNull();
    case MTK_VALUE_BOOL: return json_wrap("scalar", cJSON_CreateBool(v->as.b));
    case MTK_VALUE_INT: return json_wrap("scalar", text_json_int(v->as.i));
    case MTK_VALUE_FLOAT: return json_wrap("scalar", json_float(v->as.f));
    case MTK_VALUE_STRING: return json_wrap("string", cJSON_CreateString(v->as.s ? v->as.s : ""));
    case MTK_VALUE_DTYPE: return json_wrap("dtype", cJSON_CreateString(mtk_dtype_name(v->as.dtype)));
    case MTK_VALUE_DEVICE:
        return json_wrap("device", cJSON_CreateString(mtk_device_str(v->as.device, buf, sizeof buf)));
    case MTK_VALUE_TENSOR: return v->as.tensor ? json_tensor(v->as.tensor, flags) : cJSON_CreateNull();
    case MTK_VALUE_LIST:
    case MTK_VALUE_TUPLE: {
        cJSON *array = cJSON_CreateArray();
        for (int32_t i = 0; array && i < v->as.list.count; i++) {
            cJSON *item = json_value(&v->as.list.items[i], flags);
            if (!item || !cJSON_AddItemToArray(array, item)) {
                cJSON_Delete(item);
                cJSON_Delete(array);
                array = NULL;
            }
        }
        return array;
    }
    }
    return cJSON_CreateNull();
}

/* Prints `doc` (deleting it) into the context's arena. */
static char *print_to_arena(mtk_ctx *ctx, cJSON *doc)
{
    char *printed = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    char *result = printed ? mtk_ctx_strdup(ctx, printed) : NULL;
    cJSON_free(printed);
    if (!result && mtk_ctx_status(ctx) == MTK_OK)
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory writing JSON");
    return result;
}

/* Elements that "values" would write for v (its nested tensors too),
 * counted up to just past the limit. */
static int64_t values_count(const mtk_value *v, int64_t limit)
{
    if (v->kind == MTK_VALUE_TENSOR && v->as.tensor && v->as.tensor->device == MTK_DEVICE_CPU)
        return mtk_tensor_numel(v->as.tensor);
    if (v->kind != MTK_VALUE_LIST && v->kind != MTK_VALUE_TUPLE) return 0;
    int64_t total = 0;
    for (int32_t i = 0; i < v->as.list.count && total <= limit; i++) /* nesting: eval's bounded depth */
        total += values_count(&v->as.list.items[i], limit - total);
    return total;
}

char *mtk_value_to_json(mtk_ctx *ctx, const mtk_value *value, uint32_t flags)
{
    if (flags & MTK_JSON_VALUES) {
        int64_t n = values_count(value, MTK_JSON_MAX_VALUES);
        if (n > MTK_JSON_MAX_VALUES) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "--values: the result has %lld elements, more than the limit of %lld that JSON "
                      "output writes (MTK_JSON_MAX_VALUES); slice it (x[:10]) or leave --values out",
                      (long long)n, (long long)MTK_JSON_MAX_VALUES);
            return NULL;
        }
    }
    return print_to_arena(ctx, json_value(value, flags));
}

char *mtk_error_to_json(mtk_ctx *ctx)
{
    cJSON *error = cJSON_CreateObject();
    if (error && (!cJSON_AddStringToObject(error, "code", mtk_status_name(mtk_ctx_status(ctx))) ||
                  !cJSON_AddStringToObject(error, "message", mtk_ctx_message(ctx)))) {
        cJSON_Delete(error);
        error = NULL;
    }
    return print_to_arena(ctx, json_wrap("error", error));
}
