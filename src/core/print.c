/* PyTorch's repr of a tensor (torch/_tensor_str.py with default print
 * options: precision 4, threshold 1000, edgeitems 3, linewidth 80).
 *
 * A formatter is fitted to every element that will be shown (only the
 * edges when the tensor is summarized): integer-valued floats print as
 * "1.", others with 4 decimals, and scientific notation is used when the
 * magnitudes span more than 1000x, pass 1e8 or go below 1e-4.  Every
 * element is right-aligned to the widest. */
#include "mtk/print.h"
#include "mtk/core.h"
#include "core/scalar.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { PRECISION = 4, THRESHOLD = 1000, EDGEITEMS = 3, LINEWIDTH = 80, SUFFIX_CAP = 48 + 24 * MTK_MAX_DIMS };

/* ------------------------------------------------------- growing string */

typedef struct strbuf {
    mtk_ctx *ctx;
    char *data;
    size_t len, cap;
    bool failed;
} strbuf;

static void sb_reserve(strbuf *sb, size_t extra)
{
    if (sb->failed || sb->len + extra + 1 <= sb->cap) return;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) cap *= 2;
    char *data = mtk_ctx_malloc(sb->ctx, cap);
    if (!data) {
        sb->failed = true;
        return;
    }
    if (sb->data) memcpy(data, sb->data, sb->len + 1);
    mtk_ctx_mfree(sb->ctx, sb->data);
    sb->data = data;
    sb->cap = cap;
}

static void sb_append(strbuf *sb, const char *s, size_t n)
{
    sb_reserve(sb, n);
    if (sb->failed) return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

static void sb_puts(strbuf *sb, const char *s) { sb_append(sb, s, strlen(s)); }

static void sb_repeat(strbuf *sb, char c, int n)
{
    for (int i = 0; i < n; i++) sb_append(sb, &c, 1);
}

/* ------------------------------------------------------------- elements */

/* t[i] along dim 0, as a view struct (no arena allocation). */
static mtk_tensor select0(const mtk_tensor *t, int64_t i)
{
    mtk_tensor s = *t;
    s.ndim = t->ndim - 1;
    s.storage_offset = t->storage_offset + i * t->stride[0];
    memmove(s.shape, t->shape + 1, (size_t)s.ndim * sizeof *s.shape);
    memmove(s.stride, t->stride + 1, (size_t)s.ndim * sizeof *s.stride);
    return s;
}

static double load_double(const mtk_tensor *t) { return mtk_load_f64(t->dtype, mtk_tensor_data(t)); }

/* Indices shown along a dim of `size`: all, or the edges when summarizing. */
static bool edges_only(bool summarize, int64_t size) { return summarize && size > 2 * EDGEITEMS; }

typedef void (*element_fn)(const mtk_tensor *element, void *user);

/* Visits the elements torch's get_summarized_data keeps, in order. */
static void visit_shown(const mtk_tensor *t, bool summarize, element_fn fn, void *user)
{
    if (t->ndim == 0) {
        fn(t, user);
        return;
    }
    int64_t n = t->shape[0];
    bool edges = edges_only(summarize, n);
    for (int64_t i = 0; i < n; i++) {
        if (edges && i == EDGEITEMS) i = n - EDGEITEMS;
        mtk_tensor s = select0(t, i);
        visit_shown(&s, summarize, fn, user);
    }
}

/* ------------------------------------------------------------ formatter */

typedef struct formatter {
    mtk_dtype dtype;
    bool floating;
    bool int_mode, sci_mode;
    int max_width;
    /* fitting state over nonzero finite values */
    bool any;
    double min_abs, max_abs;
} formatter;

static int format_plain(const formatter *f, double v, char *buf, size_t cap)
{
    if (isnan(v)) return snprintf(buf, cap, "nan"); /* Python never prints -nan */
    if (f->sci_mode) return snprintf(buf, cap, "%.*e", PRECISION, v);
    if (f->int_mode) return snprintf(buf, cap, isinf(v) ? "%.0f" : "%.0f.", v);
    return snprintf(buf, cap, "%.*f", PRECISION, v);
}

static int format_integer(const mtk_tensor *t, char *buf, size_t cap)
{
    const void *p = mtk_tensor_data(t);
    if (t->dtype == MTK_BOOL) return snprintf(buf, cap, "%s", mtk_load_i64(t->dtype, p) ? "True" : "False");
    return snprintf(buf, cap, "%lld", (long long)mtk_load_i64(t->dtype, p));
}

static void fit_range(const mtk_tensor *e, void *user)
{
    formatter *f = user;
    if (!f->floating) {
        char buf[64];
        int w = format_integer(e, buf, sizeof buf);
        if (w > f->max_width) f->max_width = w;
        return;
    }
    double v = load_double(e);
    if (!isfinite(v) || v == 0.0) return;
    double a = fabs(v);
    if (!f->any || a < f->min_abs) f->min_abs = a;
    if (!f->any || a > f->max_abs) f->max_abs = a;
    if (v != ceil(v)) f->int_mode = false;
    f->any = true;
}

static void fit_width(const mtk_tensor *e, void *user)
{
    formatter *f = user;
    double v = load_double(e);
    if (!isfinite(v) || v == 0.0) return;
    char buf[512];
    int w;
    if (f->sci_mode) w = snprintf(buf, sizeof buf, "%.*e", PRECISION, v);
    else if (f->int_mode) w = snprintf(buf, sizeof buf, "%.0f", v) + 1; /* room for the '.' */
    else w = snprintf(buf, sizeof buf, "%.*f", PRECISION, v);
    if (w > f->max_width) f->max_width = w;
}

static formatter fit_formatter(const mtk_tensor *t, bool summarize)
{
    formatter f = { t->dtype, mtk_dtype_is_floating(t->dtype), true, false, 1, false, 0, 0 };
    visit_shown(t, summarize, fit_range, &f);
    if (!f.floating || !f.any) return f;
    f.sci_mode = f.max_abs / f.min_abs > 1000.0 || f.max_abs > 1.0e8 || f.min_abs < 1.0e-4;
    visit_shown(t, summarize, fit_width, &f);
    return f;
}

/* One element, right-aligned to the formatter's width. */
static void put_element(strbuf *sb, const formatter *f, const mtk_tensor *e)
{
    char buf[512];
    int w = f->floating ? format_plain(f, load_double(e), buf, sizeof buf) : format_integer(e, buf, sizeof buf);
    if (w >= (int)sizeof buf) w = (int)sizeof buf - 1;
    sb_repeat(sb, ' ', f->max_width - w);
    sb_append(sb, buf, (size_t)w);
}

/* ------------------------------------------------------------- layout */

static void put_vector(strbuf *sb, const formatter *f, const mtk_tensor *t, int indent, bool summarize)
{
    int element_length = f->max_width + 2;
    int per_line = (LINEWIDTH - indent) / element_length;
    if (per_line < 1) per_line = 1;
    int64_t n = t->shape[0];
    bool edges = edges_only(summarize, n);
    int64_t shown = edges ? 2 * EDGEITEMS + 1 : n; /* " ..." counts as an element */
    sb_puts(sb, "[");
    for (int64_t k = 0; k < shown; k++) {
        if (k > 0) {
            if (k % per_line == 0) {
                sb_puts(sb, ",\n");
                sb_repeat(sb, ' ', indent + 1);
            } else {
                sb_puts(sb, ", ");
            }
        }
        if (edges && k == EDGEITEMS) {
            sb_puts(sb, " ...");
            continue;
        }
        int64_t i = edges && k > EDGEITEMS ? n - (2 * EDGEITEMS + 1 - k) : k;
        mtk_tensor e = select0(t, i);
        put_element(sb, f, &e);
    }
    sb_puts(sb, "]");
}

static void put_tensor(strbuf *sb, const formatter *f, const mtk_tensor *t, int indent, bool summarize)
{
    if (t->ndim == 0) {
        put_element(sb, f, t);
        return;
    }
    if (t->ndim == 1) {
        put_vector(sb, f, t, indent, summarize);
        return;
    }
    int64_t n = t->shape[0];
    bool edges = edges_only(summarize, n);
    int64_t shown = edges ? 2 * EDGEITEMS + 1 : n;
    sb_puts(sb, "[");
    for (int64_t k = 0; k < shown; k++) {
        if (k > 0) {
            sb_puts(sb, ",");
            sb_repeat(sb, '\n', t->ndim - 1);
            sb_repeat(sb, ' ', indent + 1);
        }
        if (edges && k == EDGEITEMS) {
            sb_puts(sb, "...");
            continue;
        }
        int64_t i = edges && k > EDGEITEMS ? n - (2 * EDGEITEMS + 1 - k) : k;
        mtk_tensor s = select0(t, i);
        put_tensor(sb, f, &s, indent + 1, summarize);
    }
    sb_puts(sb, "]");
}

/* ------------------------------------------------------------ the repr */

/* Appends ", suffix" or, past the line width, ",\n<indent>suffix", as
 * torch's _add_suffixes (including its line-length arithmetic). */
static void put_suffixes(strbuf *sb, char suffixes[][SUFFIX_CAP], int count, int indent)
{
    /* torch: len(s) - s.rfind("\n") + 1, where rfind gives -1 for none */
    const char *nl = sb->failed ? NULL : strrchr(sb->data, '\n');
    size_t last_line_len = sb->failed ? 0 : nl ? sb->len - (size_t)(nl - sb->data) + 1 : sb->len + 2;
    for (int i = 0; i < count; i++) {
        size_t n = strlen(suffixes[i]);
        if (last_line_len + n + 2 > LINEWIDTH) {
            sb_puts(sb, ",\n");
            sb_repeat(sb, ' ', indent);
            last_line_len = (size_t)indent + n;
        } else {
            sb_puts(sb, ", ");
            last_line_len += n + 2;
        }
        sb_puts(sb, suffixes[i]);
    }
    sb_puts(sb, ")");
}

char *mtk_tensor_repr(mtk_ctx *ctx, const mtk_tensor *t)
{
    if (!t) return NULL;
    strbuf sb = { ctx, NULL, 0, 0, false };
    const int indent = 7; /* strlen("tensor(") */
    char suffixes[4][SUFFIX_CAP];
    int nsuffix = 0;
    if (t->device != MTK_DEVICE_CPU) {
        char d[32];
        snprintf(suffixes[nsuffix++], sizeof suffixes[0], "device='%s'", mtk_device_str(t->device, d, sizeof d));
    }
    bool default_dtype = t->dtype == mtk_ctx_dtype(ctx);
    bool shows_dtype_by_values = default_dtype || t->dtype == MTK_INT64 || t->dtype == MTK_BOOL;
    bool show_size = false, show_dtype = false;
    int64_t numel = mtk_tensor_numel(t);
    sb_puts(&sb, "tensor(");
    if (t->device == MTK_DEVICE_META || !t->storage) {
        show_size = true;
        show_dtype = !default_dtype;
        sb_puts(&sb, "...");
    } else if (numel == 0) {
        show_size = t->ndim != 1;
        show_dtype = !default_dtype;
        sb_puts(&sb, "[]");
    } else {
        show_dtype = !shows_dtype_by_values;
        bool summarize = numel > THRESHOLD;
        formatter f = fit_formatter(t, summarize);
        put_tensor(&sb, &f, t, indent, summarize);
    }
    if (show_size) {
        memcpy(suffixes[nsuffix], "size=", 5);
        mtk_shape_str(t->shape, t->ndim, suffixes[nsuffix] + 5, sizeof suffixes[0] - 5);
        nsuffix++;
    }
    if (show_dtype) snprintf(suffixes[nsuffix++], sizeof suffixes[0], "dtype=torch.%s", mtk_dtype_name(t->dtype));
    if (t->flags & MTK_TENSOR_REQUIRES_GRAD) snprintf(suffixes[nsuffix++], sizeof suffixes[0], "requires_grad=True");
    put_suffixes(&sb, suffixes, nsuffix, indent);

    char *out = NULL;
    if (!sb.failed) {
        out = mtk_ctx_alloc(ctx, sb.len + 1);
        if (out) memcpy(out, sb.data, sb.len + 1);
    } else {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "repr: out of memory");
    }
    mtk_ctx_mfree(ctx, sb.data);
    return out;
}
