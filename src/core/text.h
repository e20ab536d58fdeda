/* A growing NUL-terminated string (internal), for the code that prints
 * reprs, tables and JSON: its buffer comes from the context's allocator
 * (mtk_ctx_malloc).  Start from `mtk_text t = { .ctx = ctx };`.  Out of
 * memory sets `failed`, and later appends do nothing, so a printer
 * appends freely and checks once at the end. */
#ifndef MTK_CORE_TEXT_H
#define MTK_CORE_TEXT_H

#include "mtk/core.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mtk_text {
    mtk_ctx *ctx;
    char *data; /* NULL until something is appended */
    size_t len, cap;
    bool failed;
} mtk_text;

/* Appends n bytes of s / the string s / printf-formatted text. */
void mtk_text_put(mtk_text *t, const char *s, size_t n);
void mtk_text_puts(mtk_text *t, const char *s);
void mtk_text_printf(mtk_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text as a string in the context's arena ("" when nothing was
 * appended) and the buffer freed; NULL when an append or the copy failed. */
char *mtk_text_finish(mtk_text *t);

/* Frees the buffer (the text is empty again). */
void mtk_text_free(mtk_text *t);

/* ------------------------------------------------ numbers as text, once
 * Every count and size mtk prints goes through these, so `summary`,
 * `inspect`, `load` and `models` show them alike.  Each writes into buf
 * (TEXT_NUMBER_CAP bytes always suffice) and returns it. */
#define TEXT_NUMBER_CAP 32

/* A count with thousands separators: 8030261248 -> "8,030,261,248",
 * -1234 -> "-1,234". */
const char *text_grouped(int64_t v, char *buf, size_t cap);

/* A size in binary units with one decimal: 964 -> "964 B", 1536 ->
 * "1.5 KiB", 16060522496 -> "15.0 GiB" (KiB, MiB, GiB, TiB, PiB, EiB). */
const char *text_bytes(uint64_t bytes, char *buf, size_t cap);

/* An int64 as an exact JSON number (cJSON keeps numbers as doubles, which
 * lose digits past 2^53, so it is raw text).  NULL on out of memory. */
struct cJSON *text_json_int(int64_t v);

#endif
