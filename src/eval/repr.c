/* Python's repr of eval values: numbers as Python prints them, tuples and
 * lists with their items' reprs, tensors through mtk_tensor_repr. */
#include "mtk/eval.h"
#include "mtk/print.h"
#include "eval/format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing string in the context's allocator, copied to the arena at the
 * end. */
typedef struct text {
    mtk_ctx *ctx;
    char *data;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *s, size_t n)
{
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + n + 1) {
            if (cap > SIZE_MAX / 2) { t->failed = true; return; }
            cap *= 2;
        }
        char *data = mtk_ctx_malloc(t->ctx, cap);
        if (!data) { t->failed = true; return; }
        if (t->len) memcpy(data, t->data, t->len);
        mtk_ctx_mfree(t->ctx, t->data);
        t->data = data;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

static void puts_text(text *t, const char *s) { put(t, s, strlen(s)); }

/* Python's repr(str): single quotes unless the text has ' and no ". */
static void put_string(text *t, const char *s)
{
    char quote = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    put(t, &quote, 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        if (*c == '\\' || *c == (unsigned char)quote) { esc[0] = '\\'; esc[1] = (char)*c; put(t, esc, 2); }
        else if (*c == '\n') puts_text(t, "\\n");
        else if (*c == '\r') puts_text(t, "\\r");
        else if (*c == '\t') puts_text(t, "\\t");
        else if (*c < 0x20 || *c == 0x7f) { snprintf(esc, sizeof esc, "\\x%02x", *c); puts_text(t, esc); }
        else put(t, (const char *)c, 1);
    }
    put(t, &quote, 1);
}

static void put_value(text *t, const mtk_value *v)
{
    char buf[64];
    switch (v->kind) {
    case MTK_VALUE_NONE: puts_text(t, "None"); break;
    case MTK_VALUE_BOOL: puts_text(t, v->as.b ? "True" : "False"); break;
    case MTK_VALUE_INT: snprintf(buf, sizeof buf, "%lld", (long long)v->as.i); puts_text(t, buf); break;
    case MTK_VALUE_FLOAT: mtk_format_float(v->as.f, buf, sizeof buf); puts_text(t, buf); break;
    case MTK_VALUE_STRING: put_string(t, v->as.s ? v->as.s : ""); break;
    case MTK_VALUE_DTYPE:
        puts_text(t, "torch.");
        puts_text(t, mtk_dtype_name(v->as.dtype));
        break;
    case MTK_VALUE_DEVICE:
        if (v->as.device >= MTK_DEVICE_CUDA(0))
            snprintf(buf, sizeof buf, "device(type='cuda', index=%d)", (int)(v->as.device - MTK_DEVICE_CUDA(0)));
        else
            snprintf(buf, sizeof buf, "device(type='%s')", mtk_device_str(v->as.device, buf + 32, 32));
        puts_text(t, buf);
        break;
    case MTK_VALUE_TENSOR: {
        char *r = v->as.tensor ? mtk_tensor_repr(t->ctx, v->as.tensor) : NULL;
        if (!r) t->failed = true;
        else puts_text(t, r);
        break;
    }
    case MTK_VALUE_LIST:
    case MTK_VALUE_TUPLE: {
        bool tuple = v->kind == MTK_VALUE_TUPLE;
        puts_text(t, tuple ? "(" : "[");
        for (int32_t i = 0; i < v->as.list.count; i++) {
            if (i) puts_text(t, ", ");
            put_value(t, &v->as.list.items[i]);
        }
        if (tuple && v->as.list.count == 1) puts_text(t, ",");
        puts_text(t, tuple ? ")" : "]");
        break;
    }
    }
}

char *mtk_value_repr(mtk_ctx *ctx, const mtk_value *value)
{
    text t = { ctx, NULL, 0, 0, false };
    put_value(&t, value);
    char *result = NULL;
    if (!t.failed && t.data) result = mtk_ctx_strdup(ctx, t.data);
    else if (!t.failed) result = mtk_ctx_strdup(ctx, "");
    mtk_ctx_mfree(ctx, t.data);
    if (!result && mtk_ctx_status(ctx) == MTK_OK)
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory printing a value");
    return result;
}
