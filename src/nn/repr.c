/* PyTorch's module repr: "Type(extra_repr)" for a leaf, and for a module
 * with children "Type(\n  (name): child repr\n)" with children indented
 * by two spaces, extra_repr first on its own line when there is one.
 * Also the Python-style number formatting the layers' extra_repr use. */
#include "nn/module_internal.h"
#include "core/text.h"
#include "nn/repr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *nn_py_float(double v, char *buf, size_t cap)
{
    if (isnan(v)) return snprintf(buf, cap, "nan"), buf;
    if (isinf(v)) return snprintf(buf, cap, v > 0 ? "inf" : "-inf"), buf;
    /* the shortest digits that read back the same, as Python's repr */
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        if (strtod(tmp, NULL) == v) break;
    }
    /* tmp is [-]d.ddde[+-]XX: split into sign, digits and exponent */
    char *e = strchr(tmp, 'e');
    int exp10 = atoi(e + 1);
    *e = '\0';
    bool neg = tmp[0] == '-';
    char digits[24];
    int nd = 0;
    for (const char *p = tmp + neg; *p; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    size_t len = 0;
    char out[64];
    if (neg) out[len++] = '-';
    if (exp10 >= -4 && exp10 < 16) { /* Python's plain notation range */
        if (exp10 < 0) {
            out[len++] = '0';
            out[len++] = '.';
            for (int i = -1; i > exp10; i--) out[len++] = '0';
            for (int i = 0; i < nd; i++) out[len++] = digits[i];
        } else {
            for (int i = 0; i <= exp10; i++) out[len++] = i < nd ? digits[i] : '0';
            out[len++] = '.';
            if (nd > exp10 + 1)
                for (int i = exp10 + 1; i < nd; i++) out[len++] = digits[i];
            else
                out[len++] = '0';
        }
        out[len] = '\0';
    } else {
        snprintf(out + len, sizeof out - len, "%c%s%se%c%02d", digits[0], nd > 1 ? "." : "",
                 nd > 1 ? digits + 1 : "", exp10 < 0 ? '-' : '+', abs(exp10));
    }
    snprintf(buf, cap, "%s", out);
    return buf;
}

const char *nn_py_tuple(const int64_t *v, int32_t n, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "(");
    for (int32_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (len < cap) snprintf(buf + len, cap - len, n == 1 ? ",)" : ")");
    return buf;
}

/* Appends s with every line after the first indented by `indent` spaces. */
static void put_indented(mtk_text *t, const char *s, int indent)
{
    for (const char *p = s; *p; p++) {
        mtk_text_put(t, p, 1);
        if (*p == '\n')
            for (int i = 0; i < indent; i++) mtk_text_put(t, " ", 1);
    }
}

static bool repr_into(mtk_module *m, mtk_text *out, int32_t depth)
{
    if (depth > 200) return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "repr: the module tree is too deep");
    char extra[1024] = "";
    if (m->type->extra_repr) m->type->extra_repr(m, extra, sizeof extra);
    mtk_text_puts(out, m->type->name);
    mtk_text_puts(out, "(");
    if (m->children.count == 0) {
        mtk_text_puts(out, extra);
        mtk_text_puts(out, ")");
        return !out->failed;
    }
    if (*extra) {
        mtk_text_puts(out, "\n  ");
        put_indented(out, extra, 2);
    }
    for (int32_t i = 0; i < m->children.count; i++) {
        mtk_text child = { .ctx = m->ctx };
        bool ok = repr_into(m->children.items[i].module, &child, depth + 1);
        if (ok) {
            mtk_text_puts(out, "\n  (");
            mtk_text_puts(out, m->children.items[i].name);
            mtk_text_puts(out, "): ");
            put_indented(out, child.data ? child.data : "", 2);
        }
        mtk_text_free(&child);
        if (!ok) return false;
    }
    mtk_text_puts(out, "\n)");
    return !out->failed;
}

char *mtk_module_repr(mtk_module *m)
{
    if (!m) return NULL;
    mtk_text out = { .ctx = m->ctx };
    if (!repr_into(m, &out, 0)) {
        mtk_text_free(&out);
        return NULL;
    }
    return mtk_text_finish(&out);
}
