/* The growing string of core/text.h. */
#include "core/text.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
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

/* The decimal digits of |v|, ending at end (NUL written); returns the first. */
static char *digits_of(int64_t v, char *end)
{
    uint64_t magnitude = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    *--end = '\0';
    do {
        *--end = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    return end;
}

const char *text_grouped(int64_t v, char *buf, size_t cap)
{
    if (cap == 0) return buf;
    char tmp[24];
    const char *digits = digits_of(v, tmp + sizeof tmp);
    size_t n = strlen(digits), len = 0;
    if (v < 0 && len + 1 < cap) buf[len++] = '-';
    for (size_t i = 0; i < n && len + 1 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0) {
            buf[len++] = ',';
            if (len + 1 >= cap) break;
        }
        buf[len++] = digits[i];
    }
    buf[len] = '\0';
    return buf;
}

const char *text_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1023.95 && u < 5) v /= 1024.0, u++; /* 1023.97 KiB prints as 1.0 MiB, not 1024.0 KiB */
    snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}

struct cJSON *text_json_int(int64_t v)
{
    char buf[24];
    char *p = digits_of(v, buf + sizeof buf);
    if (v < 0) *--p = '-';
    return cJSON_CreateRaw(p);
}
