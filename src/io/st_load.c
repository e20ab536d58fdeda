/* Copies out of a safetensors file: whole tensors (copied straight out of the mapping into the
 * destination when no conversion is needed), dtype conversion, slices
 * along one dimension, and filling an existing tensor. */
#include "io_internal.h"
#include "core/bf16_round.h"
#include "core/scalar.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ /* Linux 5.14; older kernels answer EINVAL and we fall back */
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/* glibc answers from a cached value: cheap, and safe in worker threads */
static uintptr_t page_size(void) { return (uintptr_t)sysconf(_SC_PAGESIZE); }

/* The page-aligned part of [p, p + n), or false if it has no whole page. */
static bool inner_pages(const void *p, size_t n, uint8_t **start, size_t *len)
{
    uintptr_t page = page_size();
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    if (b <= a) return false;
    *start = (uint8_t *)a;
    *len = (size_t)(b - a);
    return true;
}

int st_populate(const mtk_st_file *f, uint64_t offset, size_t nbytes)
{
    if (f->fd < 0 || nbytes == 0) return 0; /* a memory image: nothing to fault in */
    uintptr_t page = page_size();
    uintptr_t at = (uintptr_t)(f->bytes + f->data_start + offset);
    uintptr_t from = at & ~(page - 1); /* the mapping starts on a page: round out */
    if (madvise((void *)from, at + nbytes - from, MADV_POPULATE_READ) == 0) return 0;
    return errno == EFAULT ? EIO : errno; /* EFAULT: past the end of a truncated file */
}

/* One copy or conversion out of the mapping, run under st_guarded. */
typedef struct mapped_copy {
    mtk_st_dtype to, from;
    void *dst;
    const uint8_t *src;
    size_t count; /* elements */
} mapped_copy;

static void run_copy(void *arg)
{
    const mapped_copy *c = arg;
    st_convert(c->to, c->dst, c->from, c->src, c->count);
}

int st_convert_mapped(const mtk_st_file *f, uint64_t offset, mtk_st_dtype to, void *dst, mtk_st_dtype from,
                      size_t count)
{
    if (count == 0) return 0;
    mapped_copy c = { to, from, dst, f->bytes + f->data_start + offset, count };
    if (f->fd < 0) { /* a memory image: the caller keeps it whole */
        run_copy(&c);
        return 0;
    }
    /* Fault the source pages in with one call (a file already short says
     * EIO here), and the destination's: fresh pages faulted in one by one
     * cost more than the copy itself.  Populating is only an optimization:
     * the file can still shrink before the copy, which st_guarded catches. */
    int e = st_populate(f, offset, count * mtk_st_dtype_size(from));
    if (e == EIO) return EIO;
    uint8_t *start;
    size_t len;
    if (inner_pages(dst, count * mtk_st_dtype_size(to), &start, &len)) (void)madvise(start, len, MADV_POPULATE_WRITE);
    return st_guarded(run_copy, &c) ? 0 : EIO;
}

int st_convert_mapped_run(const mtk_st_file *f, uint64_t offset, mtk_st_dtype to, void *dst, mtk_st_dtype from,
                          size_t count)
{
    if (count == 0) return 0;
    mapped_copy c = { to, from, dst, f->bytes + f->data_start + offset, count };
    if (f->fd < 0) {
        run_copy(&c);
        return 0;
    }
    return st_guarded(run_copy, &c) ? 0 : EIO;
}

/* Bytes read per pread when converting: the bounce buffer's size. */
#define PREAD_BOUNCE_BYTES ((size_t)1 << 20)

/* n bytes of the file at absolute offset `at` into dst; 0 or an errno
 * (EIO for a file that ends early). */
static int pread_all(int fd, uint8_t *dst, size_t n, uint64_t at)
{
    while (n > 0) {
        ssize_t got = pread(fd, dst, n, (off_t)at);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return errno;
        if (got == 0) return EIO;
        dst += got, n -= (size_t)got, at += (uint64_t)got;
    }
    return 0;
}

int st_convert_read(const mtk_st_file *f, uint64_t offset, mtk_st_dtype to, void *dst, mtk_st_dtype from,
                    size_t count)
{
    if (count == 0) return 0;
    if (f->fd < 0) return st_convert_mapped(f, offset, to, dst, from, count);
    size_t fsize = mtk_st_dtype_size(from), tsize = mtk_st_dtype_size(to);
    uint64_t at = f->data_start + offset;
    st_populate_write(dst, count * tsize);
    if (to == from) return pread_all(f->fd, dst, count * fsize, at);
    size_t per = PREAD_BOUNCE_BYTES / fsize;
    uint8_t *bounce = malloc(per * fsize);
    if (!bounce) return ENOMEM;
    int e = 0;
    for (size_t done = 0; done < count && e == 0; done += per) {
        size_t n = count - done < per ? count - done : per;
        e = pread_all(f->fd, bounce, n * fsize, at + done * fsize);
        if (e == 0) st_convert(to, (uint8_t *)dst + done * tsize, from, bounce, n);
    }
    free(bounce);
    return e;
}

void st_populate_write(void *dst, size_t nbytes)
{
    uint8_t *start;
    size_t len;
    if (inner_pages(dst, nbytes, &start, &len)) (void)madvise(start, len, MADV_POPULATE_WRITE);
}

int st_read_raw(const mtk_st_file *f, uint64_t offset, void *dst, size_t nbytes)
{
    return st_convert_mapped(f, offset, MTK_ST_U8, dst, MTK_ST_U8, nbytes);
}

bool st_read_bytes(mtk_ctx *ctx, const mtk_st_file *f, uint64_t offset, void *dst, size_t nbytes)
{
    int e = st_read_raw(f, offset, dst, nbytes);
    if (e == 0) return true;
    return mtk_error(ctx, MTK_ERR_IO, "%s: cannot read %zu bytes at data offset %llu: %s", f->path, nbytes,
                     (unsigned long long)offset, strerror(e));
}

bool st_check_readable(mtk_ctx *ctx, const char *name, mtk_st_dtype dtype)
{
    if (mtk_st_dtype_to_mtk(dtype) != MTK_DTYPE_UNDEFINED) return true;
    return mtk_error(ctx, MTK_ERR_DTYPE,
                     "tensor '%s' is %s, which mtk has no dtype for: it can be listed and copied as it is, "
                     "not read as a tensor or converted",
                     name, mtk_st_dtype_name(dtype));
}

bool st_check_conversion(mtk_ctx *ctx, const char *name, mtk_st_dtype from, mtk_st_dtype to)
{
    if (from == to && from != MTK_ST_DTYPE_INVALID) return true;
    return st_check_readable(ctx, name, from) && st_check_readable(ctx, name, to);
}

/* ------------------------------------------------------------ conversion */

static uint16_t load_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static float load_f32(const uint8_t *p) { float v; memcpy(&v, p, 4); return v; }

/* Element i of a float16-like source as float32 (exact). */
static bool load_as_f32(mtk_st_dtype from, const uint8_t *src, size_t i, float *out)
{
    switch (from) {
    case MTK_ST_BF16: *out = mtk_bf16_to_f32(load_u16(src + 2 * i)); return true;
    case MTK_ST_F16: *out = mtk_f16_to_f32(load_u16(src + 2 * i)); return true;
    case MTK_ST_F8_E4M3: *out = mtk_f8e4m3fn_to_f32(src[i]); return true;
    case MTK_ST_F8_E5M2: *out = mtk_f8e5m2_to_f32(src[i]); return true;
    case MTK_ST_F32: *out = load_f32(src + 4 * i); return true;
    default: return false;
    }
}

void st_convert(mtk_st_dtype to, void *dst, mtk_st_dtype from, const void *src, size_t count)
{
    const uint8_t *in = src;
    uint8_t *out = dst;
    if (to == from) {
        if (count) memcpy(dst, src, count * mtk_st_dtype_size(to));
        return;
    }
    float f;
    /* The common float paths, one call per element instead of a switch. */
    if (to == MTK_ST_F32 && load_as_f32(from, in, 0, &f)) {
        for (size_t i = 0; i < count; i++) {
            load_as_f32(from, in, i, &f);
            memcpy(out + 4 * i, &f, 4);
        }
        return;
    }
    if (from == MTK_ST_F32 && to == MTK_ST_BF16) {
        /* vectorized (a per-element conversion was a third of a float32
         * -> bfloat16 load's cpu): NaN -> the canonical quiet NaN, else
         * round to nearest even */
        bf16_round_f32(out, in, count);
        return;
    }
    if (from == MTK_ST_F32 && to == MTK_ST_F16) {
        for (size_t i = 0; i < count; i++) {
            uint16_t h = mtk_f32_to_f16(load_f32(in + 4 * i));
            memcpy(out + 2 * i, &h, 2);
        }
        return;
    }
    mtk_dtype mto = mtk_st_dtype_to_mtk(to), mfrom = mtk_st_dtype_to_mtk(from);
    size_t tsize = mtk_dtype_size(mto), fsize = mtk_dtype_size(mfrom);
    /* mtk_convert_element reads and writes through typed pointers: go
     * through aligned locals, as the file's bytes may be unaligned. */
    for (size_t i = 0; i < count; i++) {
        uint64_t a, b;
        memcpy(&a, in + i * fsize, fsize);
        mtk_convert_element(mto, &b, mfrom, &a);
        memcpy(out + i * tsize, &b, tsize);
    }
}

/* ------------------------------------------------------------ tensors */

static const mtk_st_info *lookup(mtk_ctx *ctx, mtk_st_file *f, const char *name)
{
    if (!f) return NULL;
    const mtk_st_info *info = mtk_st_find(f, name);
    if (!info) mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: no tensor named '%s'", f->path, name ? name : "(null)");
    return info;
}

/* The safetensors dtype a load converts to (`dtype` undefined: the file's). */
static bool target_dtype(mtk_ctx *ctx, const mtk_st_info *info, mtk_dtype dtype, mtk_st_dtype *out)
{
    *out = dtype == MTK_DTYPE_UNDEFINED ? info->dtype : mtk_st_dtype_from_mtk(dtype);
    if (dtype != MTK_DTYPE_UNDEFINED && *out == MTK_ST_DTYPE_INVALID)
        return mtk_error(ctx, MTK_ERR_DTYPE, "tensor '%s': cannot convert to dtype %d", info->name, (int)dtype);
    return st_check_readable(ctx, info->name, info->dtype);
}

/* Copies `count` elements at byte offset `offset` of the data into dst,
 * converting; a plain copy when no conversion is needed. */
static bool copy_out(mtk_ctx *ctx, const mtk_st_file *f, mtk_st_dtype from, uint64_t offset, mtk_st_dtype to,
                     void *dst, size_t count)
{
    int e = st_convert_mapped(f, offset, to, dst, from, count);
    if (e == 0) return true;
    return mtk_error(ctx, MTK_ERR_IO, "%s: cannot read %zu bytes at data offset %llu: %s (the file shrank while it "
                     "was read)", f->path, count * mtk_st_dtype_size(from), (unsigned long long)offset, strerror(e));
}

mtk_tensor *mtk_st_load(mtk_ctx *ctx, mtk_st_file *f, const char *name, mtk_dtype dtype)
{
    const mtk_st_info *info = lookup(ctx, f, name);
    mtk_st_dtype to;
    if (!info || !target_dtype(ctx, info, dtype, &to)) return NULL;
    mtk_tensor *t = mtk_tensor_new(ctx, mtk_st_dtype_to_mtk(to), info->shape, info->ndim, NULL, MTK_DEVICE_CPU);
    if (!t || !mtk_tensor_alloc_storage(t)) return NULL;
    if (!copy_out(ctx, f, info->dtype, info->begin, to, mtk_tensor_data(t), (size_t)info->numel)) return NULL;
    return t;
}

mtk_tensor *mtk_st_load_slice(mtk_ctx *ctx, mtk_st_file *f, const char *name, int32_t dim, int64_t start,
                              int64_t stop, mtk_dtype dtype)
{
    const mtk_st_info *info = lookup(ctx, f, name);
    mtk_st_dtype to;
    if (!info || !target_dtype(ctx, info, dtype, &to)) return NULL;
    if (info->ndim == 0) {
        mtk_error(ctx, MTK_ERR_INDEX, "load_slice: tensor '%s' is 0-dim: it has no dimension to slice", name);
        return NULL;
    }
    int32_t d = mtk_wrap_dim(ctx, dim, info->ndim);
    if (d < 0) return NULL;
    if (start < 0 || stop < start || stop > info->shape[d]) {
        mtk_error(ctx, MTK_ERR_INDEX,
                  "load_slice: [%lld:%lld] is out of range for dim %d of tensor '%s' (size %lld); "
                  "need 0 <= start <= stop <= size",
                  (long long)start, (long long)stop, (int)d, name, (long long)info->shape[d]);
        return NULL;
    }
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, info->shape, sizeof shape);
    shape[d] = stop - start;
    mtk_tensor *t = mtk_tensor_new(ctx, mtk_st_dtype_to_mtk(to), shape, info->ndim, NULL, MTK_DEVICE_CPU);
    if (!t || !mtk_tensor_alloc_storage(t)) return NULL;
    /* (outer, size, inner) -> (outer, stop - start, inner): one block per outer index */
    int64_t outer = 1, inner = 1;
    for (int32_t i = 0; i < d; i++) outer *= info->shape[i];
    for (int32_t i = d + 1; i < info->ndim; i++) inner *= info->shape[i];
    size_t block = (size_t)((stop - start) * inner), fsize = mtk_st_dtype_size(info->dtype);
    size_t tsize = mtk_st_dtype_size(to);
    uint8_t *out = mtk_tensor_data(t);
    for (int64_t o = 0; block > 0 && o < outer; o++) {
        uint64_t offset = info->begin + (uint64_t)((o * info->shape[d] + start) * inner) * fsize;
        if (!copy_out(ctx, f, info->dtype, offset, to, out + (size_t)o * block * tsize, block)) return NULL;
    }
    return t;
}

/* A strided scatter out of the mapping, run under st_guarded. */
typedef struct scatter {
    mtk_tensor *t;
    mtk_st_dtype to, from;
    const uint8_t *src; /* contiguous, t's shape */
} scatter;

static void run_scatter(void *arg)
{
    const scatter *s = arg;
    mtk_tensor *t = s->t;
    int64_t index[MTK_MAX_DIMS] = { 0 };
    int64_t numel = mtk_tensor_numel(t);
    size_t fsize = mtk_st_dtype_size(s->from), tsize = mtk_st_dtype_size(s->to);
    uint8_t *base = (uint8_t *)mtk_storage_data(t->storage);
    for (int64_t i = 0; i < numel; i++) {
        int64_t offset = t->storage_offset;
        for (int32_t k = 0; k < t->ndim; k++) offset += index[k] * t->stride[k];
        st_convert(s->to, base + (size_t)offset * tsize, s->from, s->src + (size_t)i * fsize, 1);
        for (int32_t k = t->ndim - 1; k >= 0; k--) {
            if (++index[k] < t->shape[k]) break;
            index[k] = 0;
        }
    }
}

int st_scatter_strided(const mtk_st_file *f, const mtk_st_info *info, mtk_tensor *t, mtk_st_dtype to)
{
    scatter s = { t, to, info->dtype, f->bytes + f->data_start + info->begin };
    if (f->fd < 0) {
        run_scatter(&s);
        return 0;
    }
    return st_guarded(run_scatter, &s) ? 0 : EIO;
}

bool st_check_read(mtk_ctx *ctx, mtk_st_file *f, const char *name, mtk_tensor *dst, const mtk_st_info **info_out,
                   mtk_st_dtype *to)
{
    const mtk_st_info *info = lookup(ctx, f, name);
    if (!info) return false;
    if (!dst) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "read_into: no destination for tensor '%s'", name);
    if (mtk_tensor_is_meta(dst) || !dst->storage)
        return mtk_error(ctx, MTK_ERR_META_NO_DATA,
                         "read_into: tensor '%s' would be read into a tensor without data (meta); "
                         "use to_empty(device='cpu') first",
                         name);
    if (!target_dtype(ctx, info, dst->dtype, to)) return false;
    bool same = info->ndim == dst->ndim;
    for (int32_t i = 0; same && i < info->ndim; i++) same = info->shape[i] == dst->shape[i];
    if (!same) {
        char a[256], b[256];
        return mtk_error(ctx, MTK_ERR_SHAPE, "read_into: tensor '%s' has shape %s in %s but the destination is %s",
                         name, mtk_shape_list_str(info->shape, info->ndim, a, sizeof a), f->path,
                         mtk_shape_list_str(dst->shape, dst->ndim, b, sizeof b));
    }
    *info_out = info;
    return true;
}

bool mtk_st_read_into(mtk_ctx *ctx, mtk_st_file *f, const char *name, mtk_tensor *dst)
{
    const mtk_st_info *info;
    mtk_st_dtype to;
    if (!f || !st_check_read(ctx, f, name, dst, &info, &to)) return false;
    if (mtk_tensor_is_contiguous(dst))
        return copy_out(ctx, f, info->dtype, info->begin, to, mtk_tensor_data(dst), (size_t)info->numel);
    int e = st_scatter_strided(f, info, dst, to);
    if (e == 0) return true;
    return mtk_error(ctx, MTK_ERR_IO, "%s: cannot read tensor '%s': %s (was the file truncated while it was read?)", f->path,
                     name, strerror(e));
}
