/* The safetensors header: a pre-scan of the raw bytes (UTF-8, nesting,
 * strings), the JSON parse, and every rule of the format, each failing
 * with its own message that names the tensor and the rule.  Nothing
 * outside the header is read here. */
#include "io_internal.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Integers above 2^53 are not exact in cJSON's doubles: refused. */
#define MAX_EXACT_INT 9007199254740992.0

/* Records "<path>: invalid safetensors file: <message>" and returns false. */
static bool bad(mtk_st_file *f, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static bool bad(mtk_st_file *f, const char *fmt, ...)
{
    char message[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return mtk_error(f->ctx, MTK_ERR_SYNTAX, "%s: invalid safetensors file: %s", f->path, message);
}

/* A name for messages: at most ~120 bytes (cut at a character boundary),
 * control characters shown as \xNN. */
static const char *show(const char *name, char *buf, size_t cap)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && n + 8 < cap; p++) {
        if (n >= 120 && (*p & 0xc0) != 0x80) {
            memcpy(buf + n, "...", 3);
            n += 3;
            break;
        }
        if (*p < 0x20 || *p == 0x7f) n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", *p);
        else buf[n++] = (char)*p;
    }
    buf[n] = '\0';
    return buf;
}

/* ------------------------------------------------------------ pre-scan */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_length(const uint8_t *s, size_t avail)
{
    uint8_t c = s[0];
    size_t len;
    uint32_t min, cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; min = 0x80; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; min = 0x800; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; min = 0x10000; cp = c & 0x07; }
    else return 0;
    if (avail < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

/* Checks what cJSON does not, before it runs: valid UTF-8, nesting depth
 * (so no input can make the parser recurse deeply), no raw control
 * characters or \u0000 in strings (C strings cannot hold a NUL), and an
 * object at the top. */
static bool prescan(mtk_st_file *f, const uint8_t *s, size_t n)
{
    size_t first = 0;
    while (first < n && (s[first] == ' ' || s[first] == '\t' || s[first] == '\n' || s[first] == '\r'))
        first++;
    if (first == n)
        return bad(f, "the header is empty (%zu byte%s of whitespace), not a JSON object", n, n == 1 ? "" : "s");
    if (s[first] != '{')
        return bad(f, "the header is not a JSON object (it starts with '%c')", s[first] < 0x20 || s[first] >= 0x7f ? '?' : s[first]);
    int32_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c >= 0x80) {
            size_t len = utf8_length(s + i, n - i);
            if (len == 0)
                return bad(f, "the header is not valid UTF-8 (byte 0x%02x at offset %zu of the header)", c, i);
            i += len;
            continue;
        }
        if (in_string) {
            if (c == '"') {
                in_string = false;
            } else if (c == '\\') {
                if (n - i >= 6 && memcmp(s + i + 1, "u0000", 5) == 0)
                    return bad(f, "a string in the header holds a NUL character (\\u0000 at offset %zu), "
                               "which mtk does not support in names", i);
                i += 2; /* the escaped character is never a quote that ends the string */
                continue;
            } else if (c < 0x20) {
                return bad(f, "a string in the header holds a raw control character 0x%02x at offset %zu "
                           "(JSON requires it escaped)", c, i);
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > MTK_ST_MAX_HEADER_DEPTH)
                return bad(f, "the header nests deeper than %d levels (at offset %zu)", MTK_ST_MAX_HEADER_DEPTH, i);
        } else if (c == '}' || c == ']') {
            depth--;
        }
        i++;
    }
    return true;
}

/* ------------------------------------------------------------ numbers */

static const char *json_type(const cJSON *item)
{
    if (cJSON_IsNull(item)) return "null";
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsArray(item)) return "an array";
    return "an object";
}

/* A non-negative integer that doubles hold exactly, or an error about
 * `what` ("shape[1]", "data_offsets[0]") of tensor `name`. */
static bool json_uint(mtk_st_file *f, const char *name, const char *what, const cJSON *item, uint64_t *out)
{
    char nb[160];
    if (!cJSON_IsNumber(item))
        return bad(f, "tensor '%s': %s is %s, not a non-negative integer", show(name, nb, sizeof nb), what,
                   json_type(item));
    double d = item->valuedouble;
    if (d < 0)
        return bad(f, "tensor '%s': %s is negative (%.17g); it must be a non-negative integer",
                   show(name, nb, sizeof nb), what, d);
    if (d > MAX_EXACT_INT)
        return bad(f, "tensor '%s': %s is too large (%.17g, above 2^53)", show(name, nb, sizeof nb), what, d);
    if ((double)(uint64_t)d != d)
        return bad(f, "tensor '%s': %s is %.17g, not an integer", show(name, nb, sizeof nb), what, d);
    *out = (uint64_t)d;
    return true;
}

/* ------------------------------------------------------------ entries */

/* One tensor entry {"dtype", "shape", "data_offsets"} into *info (name
 * set by the caller).  Other fields are ignored, as the reference reader
 * ignores them. */
static bool parse_entry(mtk_st_file *f, const cJSON *entry, mtk_st_info *info, uint64_t data_size)
{
    char nb[160], sb[400];
    const char *name = info->name;
    if (!cJSON_IsObject(entry))
        return bad(f, "tensor '%s': its entry is %s, not an object {\"dtype\", \"shape\", \"data_offsets\"}",
                   show(name, nb, sizeof nb), json_type(entry));
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
    for (const cJSON *field = entry->child; field; field = field->next) {
        const cJSON **slot = strcmp(field->string, "dtype") == 0          ? &dtype
                             : strcmp(field->string, "shape") == 0        ? &shape
                             : strcmp(field->string, "data_offsets") == 0 ? &offsets
                                                                         : NULL;
        if (!slot) continue;
        if (*slot) return bad(f, "tensor '%s': \"%s\" appears twice", show(name, nb, sizeof nb), field->string);
        *slot = field;
    }
    const char *missing = !dtype ? "dtype" : !shape ? "shape" : !offsets ? "data_offsets" : NULL;
    if (missing) return bad(f, "tensor '%s': no \"%s\"", show(name, nb, sizeof nb), missing);

    if (!cJSON_IsString(dtype))
        return bad(f, "tensor '%s': dtype is %s, not a string", show(name, nb, sizeof nb), json_type(dtype));
    info->dtype = mtk_st_dtype_from_name(dtype->valuestring);
    if (info->dtype == MTK_ST_DTYPE_INVALID) {
        char db[160];
        return bad(f, "tensor '%s': unknown dtype '%s' (known: BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, "
                   "F32, F64, I64, U64, F8_E4M3, F8_E5M2)", show(name, nb, sizeof nb),
                   show(dtype->valuestring, db, sizeof db));
    }

    if (!cJSON_IsArray(shape))
        return bad(f, "tensor '%s': shape is %s, not an array of sizes", show(name, nb, sizeof nb), json_type(shape));
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > MTK_MAX_DIMS)
        return bad(f, "tensor '%s': shape has %d dimensions; mtk supports at most %d", show(name, nb, sizeof nb),
                   ndim, MTK_MAX_DIMS);
    info->ndim = ndim;
    int32_t i = 0;
    for (const cJSON *dim = shape->child; dim; dim = dim->next, i++) {
        char what[32];
        uint64_t size;
        snprintf(what, sizeof what, "shape[%d]", (int)i);
        if (!json_uint(f, name, what, dim, &size)) return false;
        info->shape[i] = (int64_t)size;
    }

    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return bad(f, "tensor '%s': data_offsets must be [begin, end], got %s%s", show(name, nb, sizeof nb),
                   cJSON_IsArray(offsets) ? "an array of " : json_type(offsets),
                   cJSON_IsArray(offsets) ? (cJSON_GetArraySize(offsets) < 2 ? "fewer than 2" : "more than 2") : "");
    if (!json_uint(f, name, "data_offsets[0]", offsets->child, &info->begin) ||
        !json_uint(f, name, "data_offsets[1]", offsets->child->next, &info->end))
        return false;
    if (info->end < info->begin)
        return bad(f, "tensor '%s': data_offsets [%llu, %llu] are reversed (end before begin)",
                   show(name, nb, sizeof nb), (unsigned long long)info->begin, (unsigned long long)info->end);
    if (info->end > data_size)
        return bad(f, "tensor '%s': data_offsets [%llu, %llu] run past the end of the data (%llu byte%s)",
                   show(name, nb, sizeof nb), (unsigned long long)info->begin, (unsigned long long)info->end,
                   (unsigned long long)data_size, data_size == 1 ? "" : "s");

    uint64_t numel = 1, nbytes;
    for (i = 0; i < info->ndim; i++)
        if (__builtin_mul_overflow(numel, (uint64_t)info->shape[i], &numel)) break;
    if (i < info->ndim || numel > INT64_MAX ||
        __builtin_mul_overflow(numel, (uint64_t)mtk_st_dtype_size(info->dtype), &nbytes))
        return bad(f, "tensor '%s': shape %s of %s overflows: its size in bytes does not fit in 64 bits",
                   show(name, nb, sizeof nb), mtk_shape_list_str(info->shape, info->ndim, sb, sizeof sb),
                   mtk_st_dtype_name(info->dtype));
    info->numel = (int64_t)numel;
    if (nbytes != info->end - info->begin)
        return bad(f, "tensor '%s': shape %s of %s is %llu byte%s but data_offsets [%llu, %llu] hold %llu",
                   show(name, nb, sizeof nb), mtk_shape_list_str(info->shape, info->ndim, sb, sizeof sb),
                   mtk_st_dtype_name(info->dtype), (unsigned long long)nbytes, nbytes == 1 ? "" : "s",
                   (unsigned long long)info->begin,
                   (unsigned long long)info->end, (unsigned long long)(info->end - info->begin));
    return true;
}

/* ------------------------------------------------------------ layout */

static int by_offset(const void *a, const void *b)
{
    const mtk_st_info *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const mtk_st_info *const *)a)->name, (*(const mtk_st_info *const *)b)->name);
}

/* The tensors (sorted by offset) must tile the data exactly: from 0, each
 * beginning where the previous ends, the last ending at the data's end. */
static bool check_layout(mtk_st_file *f, uint64_t data_size)
{
    char nb[160], pb[160];
    uint64_t at = 0;
    const mtk_st_info *previous = NULL;
    for (int64_t i = 0; i < f->tensor_count; i++) {
        const mtk_st_info *t = &f->tensors[i];
        if (t->begin > at)
            return bad(f, "tensor '%s': data_offsets [%llu, %llu] leave a hole: bytes [%llu, %llu) belong to no "
                       "tensor", show(t->name, nb, sizeof nb), (unsigned long long)t->begin,
                       (unsigned long long)t->end, (unsigned long long)at, (unsigned long long)t->begin);
        if (t->begin < at)
            return bad(f, "tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' [%llu, %llu]",
                       show(t->name, nb, sizeof nb), (unsigned long long)t->begin, (unsigned long long)t->end,
                       show(previous->name, pb, sizeof pb), (unsigned long long)previous->begin,
                       (unsigned long long)previous->end);
        at = t->end;
        previous = t;
    }
    if (at != data_size)
        return bad(f, "%llu trailing byte%s after the last tensor: the tensors end at data offset %llu but "
                   "the data is %llu byte%s", (unsigned long long)(data_size - at), data_size - at == 1 ? "" : "s",
                   (unsigned long long)at, (unsigned long long)data_size, data_size == 1 ? "" : "s");
    return true;
}

/* Names sorted for lookup; two equal names (cJSON keeps both) are an error. */
static bool index_names(mtk_st_file *f)
{
    char nb[160];
    f->by_name = mtk_ctx_malloc(f->ctx, (size_t)f->tensor_count * sizeof *f->by_name);
    if (!f->by_name) return false;
    for (int64_t i = 0; i < f->tensor_count; i++) f->by_name[i] = &f->tensors[i];
    qsort(f->by_name, (size_t)f->tensor_count, sizeof *f->by_name, by_name);
    for (int64_t i = 1; i < f->tensor_count; i++)
        if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0)
            return bad(f, "tensor '%s' appears twice in the header", show(f->by_name[i]->name, nb, sizeof nb));
    return true;
}

static int by_item_key(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* __metadata__: null, or an object of string values with distinct keys. */
static bool parse_metadata(mtk_st_file *f, const cJSON *meta, char **strings)
{
    char kb[160];
    if (!meta || cJSON_IsNull(meta)) return true;
    if (!cJSON_IsObject(meta))
        return bad(f, "__metadata__ is %s; it must be an object of string values", json_type(meta));
    size_t count = 0;
    for (const cJSON *item = meta->child; item; item = item->next) {
        if (!cJSON_IsString(item))
            return bad(f, "__metadata__ value of '%s' is %s, not a string", show(item->string, kb, sizeof kb),
                       json_type(item));
        count++;
    }
    const cJSON **items = mtk_ctx_malloc(f->ctx, count * sizeof *items);
    f->meta_keys = mtk_ctx_malloc(f->ctx, count * 2 * sizeof(char *));
    if (!items || !f->meta_keys) {
        mtk_ctx_mfree(f->ctx, (void *)items);
        return false;
    }
    f->meta_values = f->meta_keys + count;
    count = 0;
    for (const cJSON *item = meta->child; item; item = item->next) items[count++] = item;
    qsort(items, count, sizeof *items, by_item_key);
    bool ok = true;
    for (size_t i = 0; ok && i < count; i++) {
        if (i > 0 && strcmp(items[i - 1]->string, items[i]->string) == 0) {
            ok = bad(f, "__metadata__ has the key '%s' twice", show(items[i]->string, kb, sizeof kb));
            break;
        }
        size_t klen = strlen(items[i]->string) + 1, vlen = strlen(items[i]->valuestring) + 1;
        memcpy(*strings, items[i]->string, klen);
        f->meta_keys[i] = *strings;
        *strings += klen;
        memcpy(*strings, items[i]->valuestring, vlen);
        f->meta_values[i] = *strings;
        *strings += vlen;
        f->meta_count++;
    }
    mtk_ctx_mfree(f->ctx, (void *)items);
    return ok;
}

/* Bytes needed to copy every key and string value of `root` (one level
 * down for __metadata__). */
static size_t string_bytes(const cJSON *root)
{
    size_t total = 1;
    for (const cJSON *item = root->child; item; item = item->next) {
        total += strlen(item->string) + 1;
        if (strcmp(item->string, "__metadata__") == 0 && cJSON_IsObject(item))
            for (const cJSON *m = item->child; m; m = m->next)
                total += strlen(m->string) + 1 + (cJSON_IsString(m) ? strlen(m->valuestring) + 1 : 0);
    }
    return total;
}

static bool parse_tree(mtk_st_file *f, const cJSON *root, uint64_t data_size)
{
    const cJSON *meta = NULL;
    int64_t count = 0;
    for (const cJSON *item = root->child; item; item = item->next) {
        if (strcmp(item->string, "__metadata__") != 0) {
            count++;
        } else if (meta) {
            return bad(f, "__metadata__ appears twice in the header");
        } else {
            meta = item;
        }
    }
    f->strings = mtk_ctx_malloc(f->ctx, string_bytes(root));
    f->tensors = mtk_ctx_malloc(f->ctx, (size_t)(count ? count : 1) * sizeof *f->tensors);
    if (!f->strings || !f->tensors) return false;
    char *strings = f->strings;
    if (!parse_metadata(f, meta, &strings)) return false;
    for (const cJSON *item = root->child; item; item = item->next) {
        if (item == meta) continue;
        mtk_st_info *info = &f->tensors[f->tensor_count++];
        memset(info, 0, sizeof *info);
        size_t len = strlen(item->string) + 1;
        memcpy(strings, item->string, len);
        info->name = strings;
        strings += len;
        if (!parse_entry(f, item, info, data_size)) return false;
    }
    /* sorted by offset before by_name points into the array */
    qsort(f->tensors, (size_t)f->tensor_count, sizeof *f->tensors, by_offset);
    return index_names(f) && check_layout(f, data_size);
}

bool st_parse_header(mtk_st_file *f)
{
    if (f->size < 8)
        return bad(f, f->size == 0 ? "the file is empty (%llu byte%s); a safetensors file starts with an 8-byte "
                                     "header length"
                                   : "the file is %llu byte%s, too short for the 8-byte header length",
                   (unsigned long long)f->size, f->size == 1 ? "" : "s");
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | f->bytes[i]; /* little-endian */
    if (n > MTK_ST_MAX_HEADER_BYTES)
        return bad(f, "the header length %llu is larger than the format's limit of %llu bytes",
                   (unsigned long long)n, (unsigned long long)MTK_ST_MAX_HEADER_BYTES);
    if (n > f->size - 8)
        return bad(f, "the header length %llu runs past the end of the file (%llu byte%s after the length)",
                   (unsigned long long)n, (unsigned long long)(f->size - 8), f->size - 8 == 1 ? "" : "s");
    f->header_size = n;
    f->data_start = 8 + n;
    const uint8_t *text = f->bytes + 8;
    if (!prescan(f, text, (size_t)n)) return false;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)text, (size_t)n, &end, false);
    if (!root) {
        if (!end || end < (const char *)text) end = (const char *)text;
        return bad(f, "the header is not valid JSON (error near byte %zu of the header)",
                   (size_t)(end - (const char *)text));
    }
    for (const char *p = end; p < (const char *)text + n; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            return bad(f, "the header has bytes after its JSON object (at byte %zu of the header; padding "
                       "must be spaces)", (size_t)(p - (const char *)text));
        }
    }
    bool ok = parse_tree(f, root, f->size - f->data_start);
    cJSON_Delete(root);
    return ok;
}

void st_file_free_tables(mtk_st_file *f)
{
    mtk_ctx_mfree(f->ctx, f->tensors);
    mtk_ctx_mfree(f->ctx, (void *)f->by_name);
    mtk_ctx_mfree(f->ctx, (void *)f->meta_keys);
    mtk_ctx_mfree(f->ctx, f->strings);
    f->tensors = NULL;
    f->by_name = NULL;
    f->meta_keys = f->meta_values = NULL;
    f->strings = NULL;
    f->tensor_count = f->meta_count = 0;
}
