/* Internal layout of io's objects, shared by src/io's files only. */
#ifndef MTK_IO_INTERNAL_H
#define MTK_IO_INTERNAL_H

#include "mtk/io.h"

struct mtk_st_file {
    mtk_ctx *ctx;
    char *path;              /* as given to open (or the memory label)       */
    int fd;                  /* open for pread; -1 for a memory image        */
    const uint8_t *bytes;    /* the whole file image (the mapping)           */
    uint64_t size;           /* bytes in the image                           */
    uint64_t header_size;    /* N: the JSON header's length                  */
    uint64_t data_start;     /* 8 + N                                        */
    mtk_storage *mapping;    /* one reference held by the file               */
    bool writable;           /* mapped private and writable: writes into
                                views are copy-on-write (else read-only)     */

    mtk_st_info *tensors;    /* by data offset                               */
    int64_t tensor_count;
    const mtk_st_info **by_name; /* the same, sorted by name (bsearch)       */
    const char **meta_keys;  /* __metadata__, sorted by key                  */
    const char **meta_values;
    int64_t meta_count;
    char *strings;           /* one block holding every name, key and value  */
};

/* mtk_st_open of the file at `open_path`, named `path` (its label in
 * messages and mtk_st_path); no_follow: refuse a symbolic link as the
 * last component (the path was resolved and confined already). */
mtk_st_file *st_open_path(mtk_ctx *ctx, const char *open_path, const char *path, bool no_follow);

/* Parses and validates the header of file->bytes (file->size bytes) and
 * fills header_size, data_start, tensors, by_name and the metadata.  On a
 * violation sets MTK_ERR_SYNTAX ("<path>: ...") and returns false; what
 * was allocated is freed by st_file_free_tables. */
bool st_parse_header(mtk_st_file *file);
void st_file_free_tables(mtk_st_file *file);

/* Converts `count` elements from src (safetensors dtype `from`) to dst
 * (`to`), or copies them when the dtypes are equal.  The caller checked
 * that a conversion exists (st_check_conversion). */
void st_convert(mtk_st_dtype to, void *dst, mtk_st_dtype from, const void *src, size_t count);

/* True when a tensor of `dtype` can become an mtk tensor (it has an mtk
 * dtype); else sets MTK_ERR_DTYPE naming the tensor `name`. */
bool st_check_readable(mtk_ctx *ctx, const char *name, mtk_st_dtype dtype);

/* True when `from` can become `to`: equal dtypes always; otherwise both
 * must have an mtk dtype.  Else sets MTK_ERR_DTYPE naming `name`. */
bool st_check_conversion(mtk_ctx *ctx, const char *name, mtk_st_dtype from, mtk_st_dtype to);

/* Runs copy(arg) so that a SIGBUS it raises in this thread (a page of a
 * mapped file that was truncated) makes st_guarded return false instead
 * of killing the process; true when the copy ran to its end.  Safe in
 * worker threads; the handler is installed only while a copy runs and
 * chains to the host's (st_guard.c says why and what it costs). */
bool st_guarded(void (*copy)(void *arg), void *arg);
/* Keeps the handler installed from hold to release (counted, any thread),
 * so that a batch of guarded copies installs it once. */
void st_guard_hold(void);
void st_guard_release(void);

/* Converts (or copies) `count` elements of the file's data at byte
 * offset `offset` (dtype `from`) into dst (`to`), out of the mapping:
 * 0, or EIO when the file shrank under the copy.  No context touched. */
int st_convert_mapped(const mtk_st_file *file, uint64_t offset, mtk_st_dtype to, void *dst, mtk_st_dtype from,
                      size_t count);

/* st_convert_mapped by pread instead of through the mapping (a memory
 * image: through it): the file's pages go through the page cache into
 * dst (float data converted from a 1 MiB buffer) and never become the
 * process's, so a whole-model load peaks at the model's size, not twice
 * it.  0, EIO when the file ends early, ENOMEM, or read's errno. */
int st_convert_read(const mtk_st_file *file, uint64_t offset, mtk_st_dtype to, void *dst, mtk_st_dtype from,
                    size_t count);

/* st_convert_mapped without faulting pages in first: for the many short
 * runs of one region, whose source (st_populate) and destination
 * (st_populate_write) pages the caller faulted in once. */
int st_convert_mapped_run(const mtk_st_file *file, uint64_t offset, mtk_st_dtype to, void *dst, mtk_st_dtype from,
                          size_t count);
/* Faults in the whole pages of [dst, dst + nbytes) for writing, in one
 * call (an optimization: nothing happens on an old kernel). */
void st_populate_write(void *dst, size_t nbytes);

/* Faults in the mapped pages of [offset, offset + nbytes) of the data in
 * one call; 0, or EIO where the file was truncated under us (touching
 * those bytes would raise SIGBUS), or another errno (an old kernel without
 * MADV_POPULATE_READ: EINVAL).  A memory image answers 0.  An
 * optimization only: the file may shrink right after it. */
int st_populate(const mtk_st_file *file, uint64_t offset, size_t nbytes);
/* Reads `nbytes` at data offset `offset` of the file into dst
 * (st_convert_mapped of bytes): st_read_raw touches no context (safe in
 * worker threads) and returns 0 or an errno; st_read_bytes sets
 * MTK_ERR_IO naming the file. */
int st_read_raw(const mtk_st_file *file, uint64_t offset, void *dst, size_t nbytes);
bool st_read_bytes(mtk_ctx *ctx, const mtk_st_file *file, uint64_t offset, void *dst, size_t nbytes);

/* mtk_st_read_into_many where reads[i] with mapped[i] true are views of
 * their own file tensor (the mapping itself): those are checked as the
 * others, then only faulted in (st_populate, by the same workers), so
 * that the first use of the model finds its pages and a file truncated
 * under the load is an io error here, not a SIGBUS later.  mapped may be
 * NULL (every read a copy). */
bool st_read_many(mtk_ctx *ctx, const mtk_st_read *reads, int64_t count, int32_t threads, const bool *mapped);

/* The checks of mtk_st_read_into: the tensor exists, dst is a real tensor
 * of the same shape and a dtype it converts to (*to). */
bool st_check_read(mtk_ctx *ctx, mtk_st_file *file, const char *name, mtk_tensor *dst, const mtk_st_info **info,
                   mtk_st_dtype *to);
/* Scatters the tensor `info` of the file (its dtype, t's shape) into t's
 * strides, converting to `to`: 0, or EIO when the file shrank under the
 * copy.  No context touched. */
int st_scatter_strided(const mtk_st_file *file, const mtk_st_info *info, mtk_tensor *t, mtk_st_dtype to);

/* Atomic files: a temporary file next to `path`, renamed over it by
 * io_atomic_commit after an fsync.  io_atomic_abandon removes the temporary. */
typedef struct atomic_file {
    int fd;
    char *path;       /* the final path (owned)       */
    char *tmp_path;   /* the temporary's path (owned) */
    uint64_t written; /* bytes written so far         */
    struct atomic_file *next_live; /* the live temporaries (mtk_io_remove_temporaries) */
} atomic_file;

/* Creates the temporary (mode: the replaced file's, else 0666 & ~umask). */
bool io_atomic_open(mtk_ctx *ctx, atomic_file *f, const char *path);
/* Writes all of buf, retrying short writes and EINTR; any failure (EFBIG,
 * ENOSPC, EIO, a write that makes no progress) is MTK_ERR_IO naming the
 * final path. */
bool io_atomic_write(mtk_ctx *ctx, atomic_file *f, const void *buf, size_t nbytes);
/* The same, answering 0 or the errno (an error is set on the context only
 * for the file size limit); io_atomic_write_error sets the error for it. */
int io_atomic_write_errno(mtk_ctx *ctx, atomic_file *f, const void *buf, size_t nbytes);
bool io_atomic_write_error(mtk_ctx *ctx, atomic_file *f, int err);
/* True when nbytes more fit under the file size limit (RLIMIT_FSIZE,
 * which would otherwise raise SIGXFSZ); else MTK_ERR_IO naming it. */
bool io_atomic_room(mtk_ctx *ctx, atomic_file *f, uint64_t nbytes);
/* fsyncs and closes the temporary (it stays under its temporary name). */
bool io_atomic_finish(mtk_ctx *ctx, atomic_file *f);
/* Renames the finished temporary over the final path, then fsyncs the
 * directory. */
bool io_atomic_commit(mtk_ctx *ctx, atomic_file *f);
/* Closes and removes the temporary if it is still there; frees names. */
void io_atomic_abandon(mtk_ctx *ctx, atomic_file *f);

/* Builds the header bytes of a file with these tensors, already in file
 * order, and metadata (sorted by key): the compact JSON padded with spaces
 * to a multiple of 8, preceded by its 8-byte length.  Returns a buffer
 * from mtk_ctx_malloc (*size_out bytes), or NULL with an error. */
typedef struct st_header_entry {
    const char *name;
    mtk_st_dtype dtype;
    int32_t ndim;
    const int64_t *shape;
    uint64_t nbytes;
} st_header_entry;

uint8_t *st_build_header(mtk_ctx *ctx, const st_header_entry *entries, int64_t count,
                         const char *const *meta_keys, const char *const *meta_values,
                         int64_t meta_count, size_t *size_out);

#endif

/* ------------------------------------------------------------ the writer */

typedef enum st_entry_kind { ENTRY_TENSOR, ENTRY_BYTES, ENTRY_FILE } st_entry_kind;

/* One tensor to write and where its bytes come from. */
typedef struct st_entry {
    char *name;
    st_entry_kind kind;
    mtk_st_dtype dtype; /* as written                 */
    int32_t ndim;
    int64_t shape[MTK_MAX_DIMS];
    uint64_t nbytes;    /* as written                 */
    const mtk_tensor *tensor;  /* ENTRY_TENSOR        */
    const void *bytes;         /* ENTRY_BYTES         */
    mtk_st_file *file;         /* ENTRY_FILE          */
    const mtk_st_info *info;   /* ENTRY_FILE          */
} st_entry;

struct mtk_st_writer {
    mtk_ctx *ctx;
    st_entry *entries; /* in the order they were added */
    int64_t count, cap;
    char **meta_keys, **meta_values; /* kept sorted by key */
    int64_t meta_count, meta_cap;
};

/* Checks the writer's names are distinct (MTK_ERR_INVALID_ARGUMENT). */
bool st_writer_check_names(mtk_st_writer *w);

/* Writes the entries `subset` (n of them, pointers into w->entries;
 * reordered in place into file order) with the writer's metadata to a
 * finished temporary file for `path` (*out: commit or abandon it). */
bool st_writer_write_temp(mtk_st_writer *w, st_entry **subset, int64_t n, const char *path, atomic_file *out);
