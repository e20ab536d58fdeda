/* The growing string of core/text.h. */
#include "core/text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Room for `more` bytes and the NUL; false (and `failed`) when none. */
static bool reserve(mtk_text *t, size_t more)
{
    if (t->failed) return false;
    if (t->data && more < t->cap - t->len) return true; /* len + more + 1 <= cap */
    if (more > SIZE_MAX / 2 - t->len) {
        t->failed = true;
        return false;
    }
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + more + 1) {
        if (cap > SIZE_MAX / 2) {
            t->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *grown = mtk_ctx_malloc(t->ctx, cap);
    if (!grown) {
        t->failed = true;
        return false;
    }
    if (t->len) memcpy(grown, t->data, t->len);
    grown[t->len] = '\0';
    mtk_ctx_mfree(t->ctx, t->data);
    t->data = grown;
    t->cap = cap;
    return true;
}

void mtk_text_put(mtk_text *t, const char *s, size_t n)
{
    if (!reserve(t, n)) return;
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

void mtk_text_puts(mtk_text *t, const char *s) { mtk_text_put(t, s, strlen(s)); }

void mtk_text_printf(mtk_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    if (!reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

char *mtk_text_finish(mtk_text *t)
{
    char *s = t->failed ? NULL : mtk_ctx_strdup(t->ctx, t->data ? t->data : "");
    mtk_text_free(t);
    return s;
}

void mtk_text_free(mtk_text *t)
{
    mtk_ctx_mfree(t->ctx, t->data);
    t->data = NULL;
    t->len = t->cap = 0;
}
