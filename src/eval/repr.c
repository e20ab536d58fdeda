/* Python's repr of eval values: numbers as Python prints them, tuples and
 * lists with their items' reprs, tensors through mtk_tensor_repr. */
#include "mtk/eval.h"
#include "mtk/print.h"
#include "eval/format.h"
#include "core/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python's repr(str): single quotes unless the text has ' and no ". */
static void put_string(mtk_text *t, const char *s)
{
    char quote = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    mtk_text_put(t, &quote, 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        if (*c == '\\' || *c == (unsigned char)quote) { esc[0] = '\\'; esc[1] = (char)*c; mtk_text_put(t, esc, 2); }
        else if (*c == '\n') mtk_text_puts(t, "\\n");
        else if (*c == '\r') mtk_text_puts(t, "\\r");
        else if (*c == '\t') mtk_text_puts(t, "\\t");
        else if (*c < 0x20 || *c == 0x7f) { snprintf(esc, sizeof esc, "\\x%02x", *c); mtk_text_puts(t, esc); }
        else mtk_text_put(t, (const char *)c, 1);
    }
    mtk_text_put(t, &quote, 1);
}

static void put_value(mtk_text *t, const mtk_value *v)
{
    char buf[64];
    switch (v->kind) {
    case MTK_VALUE_NONE: mtk_text_puts(t, "None"); break;
    case MTK_VALUE_BOOL: mtk_text_puts(t, v->as.b ? "True" : "False"); break;
    case MTK_VALUE_INT: snprintf(buf, sizeof buf, "%lld", (long long)v->as.i); mtk_text_puts(t, buf); break;
    case MTK_VALUE_FLOAT: mtk_format_float(v->as.f, buf, sizeof buf); mtk_text_puts(t, buf); break;
    case MTK_VALUE_STRING: put_string(t, v->as.s ? v->as.s : ""); break;
    case MTK_VALUE_DTYPE:
        mtk_text_puts(t, "torch.");
        mtk_text_puts(t, mtk_dtype_name(v->as.dtype));
        break;
    case MTK_VALUE_DEVICE:
        if (v->as.device >= MTK_DEVICE_CUDA(0))
            snprintf(buf, sizeof buf, "device(type='cuda', index=%d)", (int)(v->as.device - MTK_DEVICE_CUDA(0)));
        else
            snprintf(buf, sizeof buf, "device(type='%s')", mtk_device_str(v->as.device, buf + 32, 32));
        mtk_text_puts(t, buf);
        break;
    case MTK_VALUE_TENSOR: {
        char *r = v->as.tensor ? mtk_tensor_repr(t->ctx, v->as.tensor) : NULL;
        if (!r) t->failed = true;
        else mtk_text_puts(t, r);
        break;
    }
    case MTK_VALUE_LIST:
    case MTK_VALUE_TUPLE: {
        bool tuple = v->kind == MTK_VALUE_TUPLE, size = tuple && v->as.list.is_size;
        if (size) {
            mtk_text_puts(t, "torch.Size([");
            for (int32_t i = 0; i < v->as.list.count; i++) {
                if (i) mtk_text_puts(t, ", ");
                put_value(t, &v->as.list.items[i]);
            }
            mtk_text_puts(t, "])");
            break;
        }
        mtk_text_puts(t, tuple ? "(" : "[");
        for (int32_t i = 0; i < v->as.list.count; i++) {
            if (i) mtk_text_puts(t, ", ");
            put_value(t, &v->as.list.items[i]);
        }
        if (tuple && v->as.list.count == 1) mtk_text_puts(t, ",");
        mtk_text_puts(t, tuple ? ")" : "]");
        break;
    }
    }
}

char *mtk_value_repr(mtk_ctx *ctx, const mtk_value *value)
{
    mtk_text t = { .ctx = ctx };
    put_value(&t, value);
    char *result = mtk_text_finish(&t);
    if (!result && mtk_ctx_status(ctx) == MTK_OK)
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory printing a value");
    return result;
}
