/* Token ids (and masks, token types) as the commands that run a model take
 * them: "1,2,3;4,5,6" (one row per sequence), a .safetensors file (tensor
 * `what`, else its only tensor) or a .npy file (integer or bool, 2-D, or
 * 1-D for one row).  Always an int64 (B, S) cpu tensor. */
#include "cli/cli.h"
#include "mtk/mtk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest .npy header accepted (numpy writes 128-byte multiples). */
#define NPY_MAX_HEADER 65536

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A new int64 (rows, cols) cpu tensor. */
static mtk_tensor *new_ids(mtk_ctx *ctx, int64_t rows, int64_t cols)
{
    int64_t shape[2] = { rows, cols };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_CPU);
    return t && mtk_tensor_alloc_storage(t) ? t : NULL;
}

/* Prefixes the context's error with the option's name ("--input-ids: "). */
static void ids_fail_ctx(mtk_ctx *ctx, const char *what)
{
    char message[512];
    snprintf(message, sizeof message, "%s", mtk_ctx_message(ctx));
    mtk_status status = mtk_ctx_status(ctx);
    mtk_ctx_clear_error(ctx);
    mtk_error(ctx, status, "--%s: %s", what, message);
}

/* "1,2,3;4,5,6": rows split by ';', values by ',' (spaces allowed). */
static mtk_tensor *parse_text(mtk_ctx *ctx, const char *spec, const char *what)
{
    int64_t rows = 1, cols = -1, total = 0;
    for (const char *p = spec; *p; p++) rows += *p == ';';
    int64_t *lengths = mtk_ctx_alloc(ctx, (size_t)rows * sizeof *lengths);
    int64_t *values = mtk_ctx_alloc(ctx, (strlen(spec) / 2 + 1) * sizeof *values);
    if (!lengths || !values) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    const char *p = spec;
    for (int64_t r = 0; r < rows; r++) {
        lengths[r] = 0;
        for (;;) {
            while (*p == ' ') p++;
            char *end;
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (end == p || errno) {
                mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                          "--%s: '%s' is not a list of integers: expected 'I,I,...;I,I,...' (row %lld, near "
                          "'%.12s')", what, spec, (long long)r, p);
                return NULL;
            }
            values[total++] = v;
            lengths[r]++;
            p = end;
            while (*p == ' ') p++;
            if (*p == ',') { p++; continue; }
            if (*p == ';' || !*p) break;
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "--%s: unexpected '%c' in '%s' (values are separated by ',', rows by ';')", what, *p, spec);
            return NULL;
        }
        if (*p == ';') p++;
    }
    bool ragged = false;
    for (int64_t r = 0; r < rows; r++) ragged = ragged || lengths[r] != lengths[0];
    if (ragged) {
        char list[512];
        size_t len = 0;
        for (int64_t r = 0; r < rows && len < sizeof list - 32; r++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", r ? ", " : "", (long long)lengths[r]);
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "--%s: rows have different lengths (%s tokens): pad them to one length and pass "
                  "--attention-mask with 0 on the padding", what, list);
        return NULL;
    }
    cols = lengths[0];
    mtk_tensor *t = new_ids(ctx, rows, cols);
    if (!t) {
        ids_fail_ctx(ctx, what);
        return NULL;
    }
    memcpy(mtk_tensor_data(t), values, (size_t)total * sizeof *values);
    return t;
}

/* 1-D (S) becomes (1, S); integers and bool become int64. */
static mtk_tensor *as_ids(mtk_ctx *ctx, mtk_tensor *t, const char *path, const char *what)
{
    if (!t) return NULL;
    if (!mtk_dtype_is_integral(t->dtype, true)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "--%s: %s holds %s: expected integers", what, path, mtk_dtype_name(t->dtype));
        return NULL;
    }
    if (t->ndim == 1) {
        int64_t shape[2] = { 1, t->shape[0] };
        t = mtk_reshape(ctx, t, shape, 2);
    }
    if (t && t->ndim != 2) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "--%s: %s holds a tensor of %d dims: expected (batch, sequence)", what, path, (int)t->ndim);
        return NULL;
    }
    t = mtk_contiguous(ctx, mtk_to_dtype(ctx, t, MTK_INT64));
    if (!t) ids_fail_ctx(ctx, what);
    return t;
}

/* Tensor `wanted` of a .safetensors file, else its only tensor. */
static mtk_tensor *load_safetensors(mtk_ctx *ctx, const char *path, const char *wanted, const char *what)
{
    mtk_st_file *f = mtk_st_open(ctx, path);
    if (!f) {
        ids_fail_ctx(ctx, what);
        return NULL;
    }
    const char *name = NULL;
    if (mtk_st_find(f, wanted)) name = wanted;
    else if (mtk_st_tensor_count(f) == 1) name = mtk_st_tensor_at(f, 0)->name;
    mtk_tensor *t = NULL;
    if (!name) mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
              "--%s: %s holds %lld tensors and none is named '%s'", what, path,
                         (long long)mtk_st_tensor_count(f), wanted);
    else if (!(t = mtk_st_load(ctx, f, name, MTK_DTYPE_UNDEFINED))) ids_fail_ctx(ctx, what);
    mtk_st_close(f);
    return t;
}

static mtk_tensor *read_safetensors(mtk_ctx *ctx, const char *path, const char *what)
{
    char wanted[64];
    snprintf(wanted, sizeof wanted, "%s", what);
    for (char *c = wanted; *c; c++)
        if (*c == '-') *c = '_';
    return as_ids(ctx, load_safetensors(ctx, path, wanted, what), path, what);
}

/* The dtype of a .npy descr ('<i8', '|b1', '<f4', ...), UNDEFINED when
 * not one mtk reads. */
static mtk_dtype npy_dtype(const char *descr)
{
    static const struct { const char *descr; mtk_dtype dtype; } table[] = {
        { "<i8", MTK_INT64 }, { "<i4", MTK_INT32 }, { "<i2", MTK_INT16 }, { "|i1", MTK_INT8 },
        { "|u1", MTK_UINT8 }, { "|b1", MTK_BOOL }, { "<f4", MTK_FLOAT32 }, { "<f8", MTK_FLOAT64 },
        { "<f2", MTK_FLOAT16 },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(descr, table[i].descr) == 0) return table[i].dtype;
    return MTK_DTYPE_UNDEFINED;
}

/* The numpy format (NEP 1): magic, version, little-endian header length,
 * a Python dict literal {'descr', 'fortran_order', 'shape'}, the data.
 * Any rank up to MTK_MAX_DIMS (0-d: '()'). */
static mtk_tensor *load_npy(mtk_ctx *ctx, const char *path, const char *what)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "--%s: %s: %s", what, path, strerror(errno));
        return NULL;
    }
    unsigned char pre[10];
    char *header = NULL;
    mtk_tensor *t = NULL;
    const char *why = NULL;
    size_t hlen = 0;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) why = "not a .npy file (no \\x93NUMPY magic)";
    else if (pre[6] == 1) hlen = fread(pre + 8, 1, 2, f) == 2 ? (size_t)pre[8] | (size_t)pre[9] << 8 : 0;
    else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char l[4];
        hlen = fread(l, 1, 4, f) == 4 ? (size_t)l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24 : 0;
    } else why = "an unknown .npy version";
    if (!why && (hlen == 0 || hlen > NPY_MAX_HEADER)) why = "a .npy header of a bad length";
    if (!why && !(header = mtk_ctx_alloc(ctx, hlen + 1))) why = "out of memory";
    if (!why && fread(header, 1, hlen, f) != hlen) why = "a truncated .npy header";
    char descr[16] = "";
    int64_t shape[MTK_MAX_DIMS] = { 0 };
    int32_t ndim = 0;
    if (!why) {
        header[hlen] = '\0';
        const char *d = strstr(header, "'descr':"), *fo = strstr(header, "'fortran_order':"), *s = strstr(header, "'shape':");
        if (!d || !fo || !s || sscanf(d + 8, " '%15[^']'", descr) != 1) why = "a .npy header without descr or shape";
        else if (strncmp(fo + 16, " True", 5) == 0) why = "a Fortran-ordered .npy array (save it C-ordered)";
        else {
            /* 'shape': (B, S), (S,) or () */
            const char *p = strchr(s, '(');
            const char *close = p ? strchr(p, ')') : NULL;
            for (p = p ? p + 1 : NULL; p && close && p < close && ndim <= MTK_MAX_DIMS;) {
                char *end;
                long long v = strtoll(p, &end, 10);
                if (end == p || v < 0) break;
                if (ndim < MTK_MAX_DIMS) shape[ndim] = v;
                ndim++;
                p = end;
                while (*p == ' ' || *p == ',') p++;
            }
            while (p && close && p < close && *p == ' ') p++;
            if (!close || p != close) why = "a .npy header whose shape is not a tuple of sizes";
            else if (ndim > MTK_MAX_DIMS) why = "a .npy array of more dims than mtk has";
        }
    }
    mtk_dtype dtype = why ? MTK_DTYPE_UNDEFINED : npy_dtype(descr);
    if (!why && dtype == MTK_DTYPE_UNDEFINED)
        why = "a .npy dtype other than int64, int32, int16, int8, uint8, bool, float64, float32 or float16";
    if (!why) {
        t = mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_CPU);
        if (!t || !mtk_tensor_alloc_storage(t)) why = "out of memory", t = NULL;
        else if (fread(mtk_tensor_data(t), 1, mtk_tensor_nbytes(t), f) != mtk_tensor_nbytes(t))
            why = "a truncated .npy file", t = NULL;
    }
    fclose(f);
    if (why) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "--%s: %s: %s", what, path, why);
        return NULL;
    }
    return t;
}

static mtk_tensor *read_npy(mtk_ctx *ctx, const char *path, const char *what)
{
    return as_ids(ctx, load_npy(ctx, path, what), path, what);
}

mtk_tensor *cli_tensor_read(mtk_ctx *ctx, const char *path, const char *name, const char *what)
{
    if (ends_with(path, ".safetensors")) return load_safetensors(ctx, path, name, what);
    if (ends_with(path, ".npy")) return load_npy(ctx, path, what);
    mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "--%s: '%s' is not a .safetensors or .npy file", what, path);
    return NULL;
}

mtk_tensor *cli_ids_read(mtk_ctx *ctx, const char *spec, const char *what)
{
    if (!spec || !*spec) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "--%s: empty", what);
        return NULL;
    }
    mtk_tensor *t;
    if (ends_with(spec, ".safetensors")) t = read_safetensors(ctx, spec, what);
    else if (ends_with(spec, ".npy")) t = read_npy(ctx, spec, what);
    else t = parse_text(ctx, spec, what);
    if (t && (t->shape[0] < 1 || t->shape[1] < 1)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "--%s: (%lld, %lld): no tokens", what, (long long)t->shape[0], (long long)t->shape[1]);
        return NULL;
    }
    return t;
}
