/* Writing safetensors files: the writer's entries and metadata, the header
 * laid out byte for byte as the reference writer lays it out, and the
 * data streamed into an atomic file. */
#include "io_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Conversions and strided gathers go through a buffer of this size. */
#define CHUNK_BYTES ((size_t)4 << 20)

static char *copy_string(mtk_ctx *ctx, const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = mtk_ctx_malloc(ctx, len);
    if (copy) memcpy(copy, s, len);
    return copy;
}

mtk_st_writer *mtk_st_writer_new(mtk_ctx *ctx)
{
    mtk_st_writer *w = mtk_ctx_malloc(ctx, sizeof *w);
    if (w) {
        memset(w, 0, sizeof *w);
        w->ctx = ctx;
    }
    return w;
}

void mtk_st_writer_free(mtk_st_writer *w)
{
    if (!w) return;
    for (int64_t i = 0; i < w->count; i++) mtk_ctx_mfree(w->ctx, w->entries[i].name);
    for (int64_t i = 0; i < w->meta_count; i++) {
        mtk_ctx_mfree(w->ctx, w->meta_keys[i]);
        mtk_ctx_mfree(w->ctx, w->meta_values[i]);
    }
    mtk_ctx_mfree(w->ctx, w->entries);
    mtk_ctx_mfree(w->ctx, w->meta_keys);
    mtk_ctx_mfree(w->ctx, w->meta_values);
    mtk_ctx_mfree(w->ctx, w);
}

/* A new entry at the end (name copied, shape and sizes checked), or NULL. */
static st_entry *add_entry(mtk_st_writer *w, const char *name, mtk_st_dtype dtype, const int64_t *shape,
                           int32_t ndim)
{
    if (!name || strcmp(name, "__metadata__") == 0)
        return mtk_error(w->ctx, MTK_ERR_INVALID_ARGUMENT, "st_writer: '%s' cannot name a tensor",
                         name ? name : "(null)"), NULL;
    if (mtk_st_dtype_size(dtype) == 0)
        return mtk_error(w->ctx, MTK_ERR_DTYPE, "st_writer: tensor '%s' has no safetensors dtype", name), NULL;
    int64_t numel;
    uint64_t nbytes;
    if (!mtk_shape_check(w->ctx, "st_writer", shape, ndim, &numel)) return NULL;
    if (__builtin_mul_overflow((uint64_t)numel, (uint64_t)mtk_st_dtype_size(dtype), &nbytes))
        return mtk_error(w->ctx, MTK_ERR_OVERFLOW, "st_writer: tensor '%s' is too large", name), NULL;
    if (w->count == w->cap) {
        int64_t cap = w->cap ? w->cap * 2 : 16;
        st_entry *grown = mtk_ctx_malloc(w->ctx, (size_t)cap * sizeof *grown);
        if (!grown) return NULL;
        if (w->count) memcpy(grown, w->entries, (size_t)w->count * sizeof *grown);
        mtk_ctx_mfree(w->ctx, w->entries);
        w->entries = grown;
        w->cap = cap;
    }
    st_entry *e = &w->entries[w->count];
    memset(e, 0, sizeof *e);
    if (!(e->name = copy_string(w->ctx, name))) return NULL;
    e->dtype = dtype;
    e->ndim = ndim;
    if (ndim > 0) memcpy(e->shape, shape, (size_t)ndim * sizeof *shape);
    e->nbytes = nbytes;
    w->count++;
    return e;
}

bool mtk_st_writer_add(mtk_st_writer *w, const char *name, const mtk_tensor *t)
{
    if (!w || !t) return false;
    if (mtk_tensor_is_meta(t) || !t->storage)
        return mtk_error(w->ctx, MTK_ERR_META_NO_DATA,
                         "Cannot copy out of meta tensor; no data! (st_writer: tensor '%s'; use to_empty or "
                         "load a checkpoint to give it data)", name ? name : "(null)");
    st_entry *e = add_entry(w, name, mtk_st_dtype_from_mtk(t->dtype), t->shape, t->ndim);
    if (!e) return false;
    e->kind = ENTRY_TENSOR;
    e->tensor = t;
    return true;
}

bool mtk_st_writer_add_bytes(mtk_st_writer *w, const char *name, mtk_st_dtype dtype, const int64_t *shape,
                             int32_t ndim, const void *bytes)
{
    if (!w) return false;
    st_entry *e = add_entry(w, name, dtype, shape, ndim);
    if (!e) return false;
    if (!bytes && e->nbytes > 0) {
        w->count--;
        mtk_ctx_mfree(w->ctx, e->name);
        return mtk_error(w->ctx, MTK_ERR_INVALID_ARGUMENT, "st_writer: tensor '%s' has no bytes", name);
    }
    e->kind = ENTRY_BYTES;
    e->bytes = bytes;
    return true;
}

bool mtk_st_writer_add_from(mtk_st_writer *w, const char *name, mtk_st_file *file, const mtk_st_info *info,
                            mtk_dtype dtype)
{
    if (!w || !file || !info) return false;
    mtk_st_dtype to = dtype == MTK_DTYPE_UNDEFINED ? info->dtype : mtk_st_dtype_from_mtk(dtype);
    if (to == MTK_ST_DTYPE_INVALID)
        return mtk_error(w->ctx, MTK_ERR_DTYPE, "st_writer: no safetensors dtype for %s", mtk_dtype_name(dtype));
    if (!st_check_conversion(w->ctx, info->name, info->dtype, to)) return false;
    st_entry *e = add_entry(w, name, to, info->shape, info->ndim);
    if (!e) return false;
    e->kind = ENTRY_FILE;
    e->file = file;
    e->info = info;
    return true;
}

/* Room for one more metadata entry. */
static bool grow_metadata(mtk_st_writer *w)
{
    if (w->meta_count < w->meta_cap) return true;
    int64_t cap = w->meta_cap ? w->meta_cap * 2 : 8;
    char **keys = mtk_ctx_malloc(w->ctx, (size_t)cap * sizeof *keys);
    char **values = mtk_ctx_malloc(w->ctx, (size_t)cap * sizeof *values);
    if (!keys || !values) {
        mtk_ctx_mfree(w->ctx, keys);
        mtk_ctx_mfree(w->ctx, values);
        return false;
    }
    if (w->meta_count) {
        memcpy(keys, w->meta_keys, (size_t)w->meta_count * sizeof *keys);
        memcpy(values, w->meta_values, (size_t)w->meta_count * sizeof *values);
    }
    mtk_ctx_mfree(w->ctx, w->meta_keys);
    mtk_ctx_mfree(w->ctx, w->meta_values);
    w->meta_keys = keys;
    w->meta_values = values;
    w->meta_cap = cap;
    return true;
}

bool mtk_st_writer_set_metadata(mtk_st_writer *w, const char *key, const char *value)
{
    if (!w) return false;
    if (!key || !value)
        return mtk_error(w->ctx, MTK_ERR_INVALID_ARGUMENT, "st_writer: metadata needs a key and a value");
    int64_t at = 0;
    while (at < w->meta_count && strcmp(w->meta_keys[at], key) < 0) at++;
    char *v = copy_string(w->ctx, value);
    if (!v) return false;
    if (at < w->meta_count && strcmp(w->meta_keys[at], key) == 0) {
        mtk_ctx_mfree(w->ctx, w->meta_values[at]);
        w->meta_values[at] = v;
        return true;
    }
    char *k = grow_metadata(w) ? copy_string(w->ctx, key) : NULL;
    if (!k) {
        mtk_ctx_mfree(w->ctx, v);
        return false;
    }
    memmove(w->meta_keys + at + 1, w->meta_keys + at, (size_t)(w->meta_count - at) * sizeof(char *));
    memmove(w->meta_values + at + 1, w->meta_values + at, (size_t)(w->meta_count - at) * sizeof(char *));
    w->meta_keys[at] = k;
    w->meta_values[at] = v;
    w->meta_count++;
    return true;
}

/* ------------------------------------------------------------ header */

static cJSON *raw_number(uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, value);
    return cJSON_CreateRaw(text); /* exact for any 64-bit value, unlike a double */
}

static bool add_item(cJSON *parent, const char *key, cJSON *item)
{
    bool ok = item && (key ? cJSON_AddItemToObject(parent, key, item) : cJSON_AddItemToArray(parent, item));
    if (!ok) cJSON_Delete(item);
    return ok;
}

/* {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} */
static cJSON *entry_json(const st_header_entry *e, uint64_t begin)
{
    cJSON *obj = cJSON_CreateObject();
    bool ok = obj && add_item(obj, "dtype", cJSON_CreateString(mtk_st_dtype_name(e->dtype)));
    cJSON *shape = ok ? cJSON_CreateArray() : NULL;
    ok = ok && add_item(obj, "shape", shape); /* owned by obj from here */
    for (int32_t i = 0; ok && i < e->ndim; i++) ok = add_item(shape, NULL, raw_number((uint64_t)e->shape[i]));
    cJSON *offsets = ok ? cJSON_CreateArray() : NULL;
    ok = ok && add_item(obj, "data_offsets", offsets) && add_item(offsets, NULL, raw_number(begin)) &&
         add_item(offsets, NULL, raw_number(begin + e->nbytes));
    if (ok) return obj;
    cJSON_Delete(obj);
    return NULL;
}

uint8_t *st_build_header(mtk_ctx *ctx, const st_header_entry *entries, int64_t count, const char *const *meta_keys,
                         const char *const *meta_values, int64_t meta_count, size_t *size_out)
{
    /* The reference writer's layout: compact JSON, __metadata__ first, the
     * tensors in file order with the keys dtype, shape, data_offsets. */
    cJSON *root = cJSON_CreateObject();
    bool ok = root != NULL;
    if (ok && meta_count > 0) {
        cJSON *meta = cJSON_CreateObject();
        ok = add_item(root, "__metadata__", meta);
        for (int64_t i = 0; ok && i < meta_count; i++)
            ok = add_item(meta, meta_keys[i], cJSON_CreateString(meta_values[i]));
    }
    uint64_t offset = 0;
    for (int64_t i = 0; ok && i < count; i++) {
        ok = add_item(root, entries[i].name, entry_json(&entries[i], offset));
        offset += entries[i].nbytes;
    }
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "st_writer: out of memory building the header");
        return NULL;
    }
    size_t len = strlen(json), padded = (len + 7) & ~(size_t)7; /* data starts 8-byte aligned */
    uint8_t *header = mtk_ctx_malloc(ctx, 8 + padded);
    if (header) {
        for (int i = 0; i < 8; i++) header[i] = (uint8_t)((uint64_t)padded >> (8 * i));
        memcpy(header + 8, json, len);
        memset(header + 8 + len, ' ', padded - len);
        *size_out = 8 + padded;
    }
    cJSON_free(json);
    return header;
}

/* ------------------------------------------------------------ data */

/* The file order: dtype descending in the format's order, then name. */
static int file_order(const void *a, const void *b)
{
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    if (x->dtype != y->dtype) return x->dtype > y->dtype ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int name_order(const void *a, const void *b)
{
    return strcmp((*(const st_entry *const *)a)->name, (*(const st_entry *const *)b)->name);
}

/* The error of a source that cannot be read while writing `out`. */
static bool source_error(mtk_ctx *ctx, const st_entry *e, const atomic_file *out, int err)
{
    if (e->kind == ENTRY_FILE)
        return mtk_error(ctx, MTK_ERR_IO, "%s: cannot read tensor '%s' to write %s: %s (was the file truncated "
                         "while it was read?)", e->file->path, e->info->name, out->path, strerror(err));
    return mtk_error(ctx, MTK_ERR_IO, "%s: cannot read the bytes of tensor '%s': %s (a view of a file that was "
                     "truncated?)", out->path, e->name, strerror(err));
}

/* Copies bytes of an open file: in the kernel (copy_file_range) where the
 * file systems allow, else through `buf` (CHUNK_BYTES), read out of the
 * mapping under st_guarded so that a file that shrinks is an error. */
static bool copy_file_bytes(mtk_ctx *ctx, const st_entry *e, atomic_file *out, uint64_t offset, uint64_t nbytes,
                            uint8_t *buf)
{
    const mtk_st_file *src = e->file;
    loff_t at = (loff_t)(src->data_start + offset);
    while (src->fd >= 0 && nbytes > 0 && io_atomic_room(ctx, out, nbytes < CHUNK_BYTES ? nbytes : CHUNK_BYTES)) {
        ssize_t n = copy_file_range(src->fd, &at, out->fd, NULL, nbytes < CHUNK_BYTES ? nbytes : CHUNK_BYTES, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* unsupported here, a short file, or a full disk: the slow path says which */
        out->written += (uint64_t)n;
        nbytes -= (uint64_t)n;
    }
    if (mtk_ctx_status(ctx) != MTK_OK) return false; /* past the file size limit */
    for (uint64_t done = (uint64_t)at - src->data_start; nbytes > 0;) {
        size_t n = nbytes < CHUNK_BYTES ? (size_t)nbytes : CHUNK_BYTES;
        int err = st_read_raw(src, done, buf, n);
        if (err) return source_error(ctx, e, out, err);
        if (!io_atomic_write(ctx, out, buf, n)) return false;
        done += n;
        nbytes -= n;
    }
    return true;
}

/* Elements of a strided cpu tensor, from element `first`, packed into dst. */
static void gather(const mtk_tensor *t, int64_t first, int64_t count, uint8_t *dst)
{
    int64_t index[MTK_MAX_DIMS] = { 0 }, rest = first;
    for (int32_t k = t->ndim - 1; k >= 0; k--) {
        index[k] = t->shape[k] ? rest % t->shape[k] : 0;
        rest = t->shape[k] ? rest / t->shape[k] : 0;
    }
    size_t esize = mtk_dtype_size(t->dtype);
    const uint8_t *base = mtk_storage_data(t->storage);
    for (int64_t i = 0; i < count; i++) {
        int64_t offset = t->storage_offset;
        for (int32_t k = 0; k < t->ndim; k++) offset += index[k] * t->stride[k];
        memcpy(dst + (size_t)i * esize, base + (size_t)offset * esize, esize);
        for (int32_t k = t->ndim - 1; k >= 0; k--) {
            if (++index[k] < t->shape[k]) break;
            index[k] = 0;
        }
    }
}

/* A strided gather of a tensor's elements, run under st_guarded (the
 * tensor may view a mapped file). */
typedef struct gathering {
    const mtk_tensor *t;
    int64_t first, count;
    uint8_t *dst;
} gathering;

static void run_gather(void *arg)
{
    const gathering *g = arg;
    gather(g->t, g->first, g->count, g->dst);
}

/* Writes caller memory (a tensor's or add_bytes'): a page that cannot be
 * read (EFAULT from write: a truncated mapping) names the tensor. */
static bool write_memory(mtk_ctx *ctx, const st_entry *e, atomic_file *out, const void *bytes)
{
    int err = io_atomic_write_errno(ctx, out, bytes, (size_t)e->nbytes);
    if (err == EFAULT) return source_error(ctx, e, out, err);
    return err == 0 || io_atomic_write_error(ctx, out, err);
}

static bool write_entry(mtk_st_writer *w, const st_entry *e, atomic_file *out, uint8_t **chunk)
{
    mtk_ctx *ctx = w->ctx;
    if (e->kind == ENTRY_BYTES) return write_memory(ctx, e, out, e->bytes);
    if (e->kind == ENTRY_TENSOR && mtk_tensor_is_contiguous(e->tensor))
        return write_memory(ctx, e, out, mtk_tensor_data(e->tensor));
    if (!*chunk && !(*chunk = mtk_ctx_malloc(ctx, CHUNK_BYTES))) return false;
    if (e->kind == ENTRY_FILE && e->dtype == e->info->dtype)
        return copy_file_bytes(ctx, e, out, e->info->begin, e->nbytes, *chunk);
    int64_t numel = e->kind == ENTRY_FILE ? e->info->numel : mtk_tensor_numel(e->tensor);
    size_t tsize = mtk_st_dtype_size(e->dtype);
    size_t per_chunk = CHUNK_BYTES / 8; /* elements: any dtype fits */
    for (int64_t first = 0; first < numel; first += (int64_t)per_chunk) {
        size_t n = (size_t)(numel - first) < per_chunk ? (size_t)(numel - first) : per_chunk;
        int err = 0;
        if (e->kind == ENTRY_FILE) {
            uint64_t offset = e->info->begin + (uint64_t)first * mtk_st_dtype_size(e->info->dtype);
            err = st_convert_mapped(e->file, offset, e->dtype, *chunk, e->info->dtype, n);
        } else {
            gathering g = { e->tensor, first, (int64_t)n, *chunk };
            err = st_guarded(run_gather, &g) ? 0 : EIO;
        }
        if (err) return source_error(ctx, e, out, err);
        if (!io_atomic_write(ctx, out, *chunk, n * tsize)) return false;
    }
    return true;
}

bool st_writer_check_names(mtk_st_writer *w)
{
    if (w->count < 2) return true;
    st_entry **sorted = mtk_ctx_malloc(w->ctx, (size_t)w->count * sizeof *sorted);
    if (!sorted) return false;
    for (int64_t i = 0; i < w->count; i++) sorted[i] = &w->entries[i];
    qsort(sorted, (size_t)w->count, sizeof *sorted, name_order);
    bool ok = true;
    for (int64_t i = 1; ok && i < w->count; i++)
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
            ok = mtk_error(w->ctx, MTK_ERR_INVALID_ARGUMENT, "st_writer: two tensors are named '%s'", sorted[i]->name);
    mtk_ctx_mfree(w->ctx, sorted);
    return ok;
}

bool st_writer_write_temp(mtk_st_writer *w, st_entry **subset, int64_t n, const char *path, atomic_file *out)
{
    mtk_ctx *ctx = w->ctx;
    qsort(subset, (size_t)n, sizeof *subset, file_order);
    st_header_entry *entries = mtk_ctx_malloc(ctx, (size_t)(n ? n : 1) * sizeof *entries);
    if (!entries) return false;
    for (int64_t i = 0; i < n; i++)
        entries[i] = (st_header_entry){ subset[i]->name, subset[i]->dtype, subset[i]->ndim, subset[i]->shape,
                                        subset[i]->nbytes };
    size_t header_size = 0;
    uint8_t *header = st_build_header(ctx, entries, n, (const char *const *)w->meta_keys,
                                      (const char *const *)w->meta_values, w->meta_count, &header_size);
    mtk_ctx_mfree(ctx, entries);
    if (!header) return false;
    uint8_t *chunk = NULL;
    bool ok = io_atomic_open(ctx, out, path);
    if (ok) {
        ok = io_atomic_write(ctx, out, header, header_size);
        st_guard_hold(); /* one install of the SIGBUS handler for every copy */
        for (int64_t i = 0; ok && i < n; i++) ok = write_entry(w, subset[i], out, &chunk);
        st_guard_release();
        ok = ok && io_atomic_finish(ctx, out);
        if (!ok) io_atomic_abandon(ctx, out);
    }
    mtk_ctx_mfree(ctx, chunk);
    mtk_ctx_mfree(ctx, header);
    return ok;
}

bool mtk_st_writer_write(mtk_st_writer *w, const char *path)
{
    if (!w) return false;
    if (!path) return mtk_error(w->ctx, MTK_ERR_INVALID_ARGUMENT, "st_writer: no path given");
    if (!st_writer_check_names(w)) return false;
    st_entry **all = mtk_ctx_malloc(w->ctx, (size_t)(w->count ? w->count : 1) * sizeof *all);
    if (!all) return false;
    for (int64_t i = 0; i < w->count; i++) all[i] = &w->entries[i];
    atomic_file out;
    bool ok = st_writer_write_temp(w, all, w->count, path, &out);
    mtk_ctx_mfree(w->ctx, all);
    if (!ok) return false;
    ok = io_atomic_commit(w->ctx, &out);
    io_atomic_abandon(w->ctx, &out);
    return ok;
}
