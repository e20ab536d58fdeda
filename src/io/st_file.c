/* Opening safetensors files: the mapping (reference-counted storage),
 * validation, lookups, and zero-copy views. */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void unmap_release(void *data, size_t nbytes, void *user)
{
    (void)user;
    munmap(data, nbytes);
}

static mtk_st_file *file_new(mtk_ctx *ctx, const char *label)
{
    mtk_st_file *f = mtk_ctx_malloc(ctx, sizeof *f);
    if (!f) return NULL;
    memset(f, 0, sizeof *f);
    f->ctx = ctx;
    f->fd = -1;
    size_t len = strlen(label) + 1;
    f->path = mtk_ctx_malloc(ctx, len);
    if (!f->path) {
        mtk_ctx_mfree(ctx, f);
        return NULL;
    }
    memcpy(f->path, label, len);
    return f;
}

void mtk_st_close(mtk_st_file *f)
{
    if (!f) return;
    st_file_free_tables(f);
    mtk_storage_release(f->mapping);
    if (f->fd >= 0) close(f->fd);
    mtk_ctx_mfree(f->ctx, f->path);
    mtk_ctx_mfree(f->ctx, f);
}

/* Parses the header of a mapped file out of a copy of its first bytes,
 * made under st_guarded (via st_read_raw, before data_start is known):
 * truncated after the mapping was made, the file's header pages are gone
 * too, and the parser must not fault (nor be jumped out of, which would
 * leak its JSON tree). */
static bool parse_mapped_header(mtk_st_file *f)
{
    uint8_t length[8];
    size_t prefix = f->size < 8 ? (size_t)f->size : 8;
    int e = st_read_raw(f, 0, length, prefix);
    uint64_t n = 0;
    for (int i = 7; e == 0 && prefix == 8 && i >= 0; i--) n = (n << 8) | length[i]; /* little-endian */
    if (e == 0 && prefix == 8 && n <= MTK_ST_MAX_HEADER_BYTES && n <= f->size - 8) prefix = 8 + (size_t)n;
    uint8_t *copy = e == 0 ? mtk_ctx_malloc(f->ctx, prefix ? prefix : 1) : NULL;
    if (e == 0 && !copy) return false;
    if (e == 0) e = st_read_raw(f, 0, copy, prefix);
    if (e) {
        mtk_ctx_mfree(f->ctx, copy);
        return mtk_error(f->ctx, MTK_ERR_IO, "%s: cannot read the header: %s (was the file truncated while it was "
                         "read?)", f->path, strerror(e));
    }
    const uint8_t *mapped = f->bytes;
    f->bytes = copy; /* the parser reads only the first `prefix` bytes; the sizes stay the file's */
    bool ok = st_parse_header(f);
    f->bytes = mapped;
    mtk_ctx_mfree(f->ctx, copy);
    return ok;
}

/* Validates the image and wraps it in storage; closes `f` on failure. */
static mtk_st_file *finish_open(mtk_st_file *f, void *mapped)
{
    bool parsed = mapped ? parse_mapped_header(f) : st_parse_header(f);
    if (!parsed) {
        if (mapped) munmap(mapped, (size_t)f->size);
        mtk_st_close(f);
        return NULL;
    }
    f->mapping = mapped ? mtk_storage_wrap(f->ctx, MTK_STORAGE_MAPPED, mapped, (size_t)f->size, unmap_release, NULL)
                        : mtk_storage_borrow(f->ctx, (void *)f->bytes, (size_t)f->size);
    if (!f->mapping) {
        if (mapped) munmap(mapped, (size_t)f->size);
        mtk_st_close(f);
        return NULL;
    }
    return f;
}

mtk_st_file *st_open_path(mtk_ctx *ctx, const char *open_path, const char *path, bool no_follow)
{
    mtk_st_file *f = file_new(ctx, path);
    if (!f) return NULL;
    struct stat st;
    /* NONBLOCK: a FIFO named like a checkpoint must fail the regular-file
     * check below, not block the open; it changes nothing for files. */
    f->fd = open(open_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (no_follow ? O_NOFOLLOW : 0));
    if (f->fd < 0 || fstat(f->fd, &st) != 0) {
        mtk_error(ctx, MTK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        mtk_st_close(f);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        mtk_error(ctx, MTK_ERR_IO, "%s: not a regular file%s", path,
                  S_ISDIR(st.st_mode) ? " (a directory: open it as a checkpoint)" : "");
        mtk_st_close(f);
        return NULL;
    }
    f->size = (uint64_t)st.st_size;
    if (f->size < 8 || f->size > SIZE_MAX) return finish_open(f, NULL); /* fails with the size rule */
    /* Private and writable: writes into views are copy-on-write and never
     * reach the file; NORESERVE keeps a huge file from counting as commit. */
    void *mapped = mmap(NULL, (size_t)f->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, f->fd, 0);
    f->writable = mapped != MAP_FAILED;
    if (mapped == MAP_FAILED) mapped = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, f->fd, 0);
    if (mapped == MAP_FAILED) {
        mtk_error(ctx, MTK_ERR_IO, "%s: cannot map %llu bytes: %s", path, (unsigned long long)f->size,
                  strerror(errno));
        mtk_st_close(f);
        return NULL;
    }
    f->bytes = mapped;
    return finish_open(f, mapped);
}

mtk_st_file *mtk_st_open(mtk_ctx *ctx, const char *path)
{
    if (!path) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "st_open: no path given");
        return NULL;
    }
    return st_open_path(ctx, path, path, false);
}

mtk_st_file *mtk_st_open_memory(mtk_ctx *ctx, const void *bytes, size_t size, const char *label)
{
    if (!bytes && size > 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "st_open_memory: NULL bytes");
        return NULL;
    }
    mtk_st_file *f = file_new(ctx, label ? label : "<memory>");
    if (!f) return NULL;
    f->bytes = bytes;
    f->size = size;
    return finish_open(f, NULL);
}

const char *mtk_st_path(const mtk_st_file *f) { return f->path; }
uint64_t mtk_st_file_size(const mtk_st_file *f) { return f->size; }
uint64_t mtk_st_header_size(const mtk_st_file *f) { return f->header_size; }
uint64_t mtk_st_data_size(const mtk_st_file *f) { return f->size - f->data_start; }
int64_t mtk_st_tensor_count(const mtk_st_file *f) { return f->tensor_count; }
int64_t mtk_st_metadata_count(const mtk_st_file *f) { return f->meta_count; }

const mtk_st_info *mtk_st_tensor_at(const mtk_st_file *f, int64_t index)
{
    return index >= 0 && index < f->tensor_count ? &f->tensors[index] : NULL;
}

static int name_vs_info(const void *key, const void *item)
{
    return strcmp(key, (*(const mtk_st_info *const *)item)->name);
}

const mtk_st_info *mtk_st_find(const mtk_st_file *f, const char *name)
{
    if (!name || f->tensor_count == 0) return NULL;
    const mtk_st_info *const *hit =
        bsearch(name, f->by_name, (size_t)f->tensor_count, sizeof *f->by_name, name_vs_info);
    return hit ? *hit : NULL;
}

const void *mtk_st_tensor_bytes(const mtk_st_file *f, const mtk_st_info *info)
{
    return f->bytes + f->data_start + info->begin;
}

void mtk_st_metadata_at(const mtk_st_file *f, int64_t index, const char **key, const char **value)
{
    bool ok = index >= 0 && index < f->meta_count;
    if (key) *key = ok ? f->meta_keys[index] : NULL;
    if (value) *value = ok ? f->meta_values[index] : NULL;
}

const char *mtk_st_metadata_get(const mtk_st_file *f, const char *key)
{
    int64_t lo = 0, hi = f->meta_count;
    while (key && lo < hi) { /* keys are sorted */
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, f->meta_keys[mid]);
        if (c == 0) return f->meta_values[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

mtk_tensor *mtk_st_view(mtk_ctx *ctx, mtk_st_file *f, const char *name)
{
    if (!f) return NULL;
    const mtk_st_info *info = mtk_st_find(f, name);
    if (!info) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: no tensor named '%s'", f->path, name ? name : "(null)");
        return NULL;
    }
    mtk_dtype dtype = mtk_st_dtype_to_mtk(info->dtype);
    if (!st_check_readable(ctx, info->name, info->dtype)) return NULL;
    uint64_t offset = f->data_start + info->begin;
    size_t esize = mtk_dtype_size(dtype);
    if (offset % esize != 0 || (uintptr_t)f->bytes % esize != 0) return mtk_st_load(ctx, f, name, dtype);
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, info->shape, info->ndim, NULL, MTK_DEVICE_CPU);
    if (!t) return NULL;
    t->storage_offset = (int64_t)(offset / esize);
    return mtk_tensor_set_storage(t, f->mapping) ? t : NULL;
}
