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

#endif
