/*
 * mtk io: safetensors checkpoints.
 *
 * Reading maps a file (mtk_st_open) and validates its whole header against
 * the format's rules before any tensor byte is touched; tensors then come
 * out as zero-copy cpu views of the mapping (mtk_st_view), as copies with
 * an optional dtype conversion (mtk_st_load), or as slices along one
 * dimension that read only the bytes they need (mtk_st_load_slice).
 * A sharded checkpoint (model.safetensors.index.json, or a directory) is a
 * mtk_checkpoint: one name space over several files.  Writing is atomic
 * (temporary file in the same directory, fsync, rename, fsync of the
 * directory) and can split a checkpoint into shards with an index.
 *
 * Ownership: a mtk_st_file and a mtk_checkpoint belong to the context they
 * were opened in and must be closed before that context is freed.  The
 * mapping is reference-counted storage (MTK_STORAGE_MAPPED): tensors that
 * view it keep it alive after the file is closed, and it is unmapped when
 * the last of them goes.  The mapping is private and copy-on-write, so
 * writing into a view never changes the file.  Storage reference counts
 * are not atomic: use one file from one thread at a time.
 *
 * Errors are values, recorded on the context: MTK_ERR_SYNTAX for a file
 * that breaks the format (the message names the file, the tensor and the
 * rule), MTK_ERR_IO when the operating system refuses (a file truncated
 * while mtk copies out of its mapping included: a SIGBUS handler is
 * installed only around those copies and chains to the program's, see
 * docs/safetensors.md; a write past the file size limit, ulimit -f, is
 * refused before SIGXFSZ), MTK_ERR_DTYPE for a
 * conversion mtk cannot do, MTK_ERR_INDEX for a bad slice, MTK_ERR_OVERFLOW
 * for sizes that do not fit.
 */
#ifndef MTK_IO_H
#define MTK_IO_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest header a file may declare (the format's limit: 100 MB). */
#define MTK_ST_MAX_HEADER_BYTES 100000000ull
/* The deepest JSON nesting a header may have (a valid one needs 3). */
#define MTK_ST_MAX_HEADER_DEPTH 16

/* ------------------------------------------------------------------ dtypes */

/* The safetensors dtypes mtk reads, in the format's own order (its writer
 * sorts tensors by this order, descending, then by name).  U16, U32 and U64
 * have no mtk dtype: such tensors are validated, listed and copied byte
 * for byte, but cannot become mtk tensors or be converted. */
typedef enum mtk_st_dtype {
    MTK_ST_BOOL = 0,
    MTK_ST_U8,
    MTK_ST_I8,
    MTK_ST_F8_E5M2,
    MTK_ST_F8_E4M3,
    MTK_ST_I16,
    MTK_ST_U16,
    MTK_ST_F16,
    MTK_ST_BF16,
    MTK_ST_I32,
    MTK_ST_U32,
    MTK_ST_F32,
    MTK_ST_F64,
    MTK_ST_I64,
    MTK_ST_U64,
    MTK_ST_DTYPE_COUNT,
    MTK_ST_DTYPE_INVALID = -1
} mtk_st_dtype;

/* "F32", "BF16", ...; "invalid" for anything else. */
MTK_API const char *mtk_st_dtype_name(mtk_st_dtype dtype);
/* The dtype with exactly this safetensors name; MTK_ST_DTYPE_INVALID if none. */
MTK_API mtk_st_dtype mtk_st_dtype_from_name(const char *name);
/* Bytes per element; 0 for an invalid dtype. */
MTK_API size_t mtk_st_dtype_size(mtk_st_dtype dtype);
/* The mtk dtype of a safetensors dtype; MTK_DTYPE_UNDEFINED for U16, U32,
 * U64 and invalid ones. */
MTK_API mtk_dtype mtk_st_dtype_to_mtk(mtk_st_dtype dtype);
/* The safetensors dtype of an mtk dtype; MTK_ST_DTYPE_INVALID if none. */
MTK_API mtk_st_dtype mtk_st_dtype_from_mtk(mtk_dtype dtype);

/* --------------------------------------------------------------- reading */

/* One tensor of a file's header.  `begin` and `end` are its data_offsets:
 * bytes relative to the start of the data section (8 + header_size).
 * Shapes have at most MTK_MAX_DIMS dims (mtk rejects more). */
typedef struct mtk_st_info {
    const char *name;
    mtk_st_dtype dtype;
    int32_t ndim;
    int64_t shape[MTK_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end;
} mtk_st_info;

typedef struct mtk_st_file mtk_st_file;

/* Maps the file at `path` and validates its header (every rule of the
 * format; see docs/safetensors.md).  Returns NULL and sets an error that
 * starts with the path on failure.  Close it with mtk_st_close. */
MTK_API mtk_st_file *mtk_st_open(mtk_ctx *ctx, const char *path);

/* Same over a whole file image already in memory (`size` bytes, borrowed:
 * the caller keeps it alive and unchanged while the file or any view of it
 * is in use).  `label` names it in messages (NULL: "<memory>"). */
MTK_API mtk_st_file *mtk_st_open_memory(mtk_ctx *ctx, const void *bytes, size_t size, const char *label);

/* Closes the file (its mapping lives on while views use it).  Accepts NULL. */
MTK_API void mtk_st_close(mtk_st_file *file);

MTK_API const char *mtk_st_path(const mtk_st_file *file);     /* as given to open     */
MTK_API uint64_t mtk_st_file_size(const mtk_st_file *file);   /* bytes                */
MTK_API uint64_t mtk_st_header_size(const mtk_st_file *file); /* N, the JSON's bytes  */
MTK_API uint64_t mtk_st_data_size(const mtk_st_file *file);   /* bytes after header   */

/* Tensors in data-offset order (the order of their bytes in the file). */
MTK_API int64_t mtk_st_tensor_count(const mtk_st_file *file);
MTK_API const mtk_st_info *mtk_st_tensor_at(const mtk_st_file *file, int64_t index);
/* The tensor called `name`, or NULL (no error set) when there is none. */
MTK_API const mtk_st_info *mtk_st_find(const mtk_st_file *file, const char *name);
/* The tensor's bytes inside the mapping (read-only).  As with views, the
 * caller's loads from them raise SIGBUS if the file is truncated. */
MTK_API const void *mtk_st_tensor_bytes(const mtk_st_file *file, const mtk_st_info *info);

/* The `__metadata__` map, sorted by key. */
MTK_API int64_t mtk_st_metadata_count(const mtk_st_file *file);
MTK_API void mtk_st_metadata_at(const mtk_st_file *file, int64_t index, const char **key, const char **value);
/* The value of `key`, or NULL. */
MTK_API const char *mtk_st_metadata_get(const mtk_st_file *file, const char *key);

/* A zero-copy cpu tensor over the mapping, created in `ctx` (it holds a
 * reference to the mapping).  If the file is truncated while the view
 * lives, mtk's own copies out of it (the writer, mtk_st_* reads) report
 * MTK_ERR_IO, but the caller's loads from its pages, and ops run on it,
 * raise SIGBUS as with any mapping: copy it (mtk_st_load) when the file
 * may change.  When the tensor's bytes are not aligned to
 * its element size in memory (possible in files from other writers) the
 * result is a copy instead (owned storage).  Errors: no such tensor
 * (MTK_ERR_INVALID_ARGUMENT), a U16/U32/U64 tensor (MTK_ERR_DTYPE). */
MTK_API mtk_tensor *mtk_st_view(mtk_ctx *ctx, mtk_st_file *file, const char *name);

/* A copy of the tensor in new owned cpu storage, converted to `dtype`
 * (MTK_DTYPE_UNDEFINED: keep the file's dtype).  Conversions follow
 * PyTorch's Tensor.to (core/scalar.h).  Errors as mtk_st_view, and
 * MTK_ERR_OUT_OF_MEMORY. */
MTK_API mtk_tensor *mtk_st_load(mtk_ctx *ctx, mtk_st_file *file, const char *name, mtk_dtype dtype);

/* A copy of tensor[..., start:stop, ...] along `dim` (negative counts from
 * the end), converted to `dtype` as mtk_st_load does; only the bytes of
 * the slice are read.  Errors: 0-dim tensor, dim out of range, or not
 * 0 <= start <= stop <= size (MTK_ERR_INDEX). */
MTK_API mtk_tensor *mtk_st_load_slice(mtk_ctx *ctx, mtk_st_file *file, const char *name, int32_t dim,
                                      int64_t start, int64_t stop, mtk_dtype dtype);

/* Copies the tensor into `dst`, an existing cpu tensor of the same shape
 * and any dtype and strides, converting as needed (how a model's
 * parameters are filled).  Errors: shape mismatch (MTK_ERR_SHAPE, naming
 * both shapes), meta `dst`, dtypes as above. */
MTK_API bool mtk_st_read_into(mtk_ctx *ctx, mtk_st_file *file, const char *name, mtk_tensor *dst);

/* One read of a batch: tensor `name` of `file` into `dst` (as
 * mtk_st_read_into). */
typedef struct mtk_st_read {
    mtk_st_file *file;
    const char *name;
    mtk_tensor *dst;
} mtk_st_read;

/* Does every read of `reads` with `threads` worker threads (0: the
 * context's, mtk_ctx_set_num_threads: one per online cpu by default), splitting big tensors into chunks so the threads share the
 * bytes evenly: the fast way to fill a model.  Everything is checked
 * first, in the caller's thread (same errors as mtk_st_read_into, naming
 * the tensor); on a read error midway the first error is reported and the
 * destinations hold partial data.  The destinations' storage must not be
 * touched by other threads meanwhile. */
MTK_API bool mtk_st_read_into_many(mtk_ctx *ctx, const mtk_st_read *reads, int64_t count, int32_t threads);

/* ------------------------------------------------------ sharded reading */

typedef struct mtk_checkpoint mtk_checkpoint;

/* Opens a checkpoint: a .safetensors file, a *.safetensors.index.json
 * (weight_map name -> shard file, resolved in the index's directory; a
 * shard path that is absolute or has a ".." component is refused), or a
 * directory (its one *.safetensors.index.json, else every *.safetensors
 * in it, sorted by name).  Every file is opened and validated; every name
 * of the index must be in its shard, and no name may be in two files; an
 * index with a key twice at any depth is refused (MTK_ERR_SYNTAX naming
 * the key: Python's json would read the last value, cJSON the first).
 * Files named by a directory or an index are confined to it: one whose
 * real path (symbolic links resolved) lies outside is refused with
 * MTK_ERR_IO naming the link and its target, except that a Hugging Face
 * hub snapshot (<repo>/snapshots/<rev>/) may reach <repo>/blobs/.  A
 * FIFO or other non-regular file is refused, not waited on.
 * Close with mtk_checkpoint_close. */
MTK_API mtk_checkpoint *mtk_checkpoint_open(mtk_ctx *ctx, const char *path);
MTK_API void mtk_checkpoint_close(mtk_checkpoint *ckpt);

/* The index's path, or NULL when there is none. */
MTK_API const char *mtk_checkpoint_index_path(const mtk_checkpoint *ckpt);
MTK_API int64_t mtk_checkpoint_file_count(const mtk_checkpoint *ckpt);
MTK_API mtk_st_file *mtk_checkpoint_file_at(const mtk_checkpoint *ckpt, int64_t index);

/* Every tensor: files in order (sorted by path), each in data-offset
 * order (tensors a shard holds but the index does not list are left out). */
MTK_API int64_t mtk_checkpoint_tensor_count(const mtk_checkpoint *ckpt);
MTK_API const mtk_st_info *mtk_checkpoint_tensor_at(const mtk_checkpoint *ckpt, int64_t index,
                                                    mtk_st_file **file);
/* The tensor called `name` and its file, or NULL (no error). */
MTK_API const mtk_st_info *mtk_checkpoint_find(const mtk_checkpoint *ckpt, const char *name,
                                               mtk_st_file **file);

/* Metadata: an index's "metadata" object, or a single file's
 * __metadata__.  `value` is the text of a string, or the JSON text of any
 * other value (*is_string false), e.g. "total_size" -> "1234". */
MTK_API int64_t mtk_checkpoint_metadata_count(const mtk_checkpoint *ckpt);
MTK_API void mtk_checkpoint_metadata_at(const mtk_checkpoint *ckpt, int64_t index, const char **key,
                                        const char **value, bool *is_string);

/* --------------------------------------------------------------- writing */

typedef struct mtk_st_writer mtk_st_writer;

/* A writer collects tensors (by reference: nothing is copied until the
 * write) and metadata, then writes one file or a sharded set.  Belongs to
 * `ctx`; free it with mtk_st_writer_free.  NULL on out of memory. */
MTK_API mtk_st_writer *mtk_st_writer_new(mtk_ctx *ctx);
MTK_API void mtk_st_writer_free(mtk_st_writer *writer);

/* Adds a cpu tensor of any strides (written contiguous).  The tensor must
 * stay alive until the write.  Errors: meta tensor (no data), the reserved
 * name "__metadata__".  Two tensors of one name are refused by the write
 * (MTK_ERR_INVALID_ARGUMENT), so that adding stays O(1). */
MTK_API bool mtk_st_writer_add(mtk_st_writer *writer, const char *name, const mtk_tensor *tensor);

/* Adds contiguous raw bytes of any safetensors dtype (numel * size bytes,
 * kept alive by the caller until the write). */
MTK_API bool mtk_st_writer_add_bytes(mtk_st_writer *writer, const char *name, mtk_st_dtype dtype,
                                     const int64_t *shape, int32_t ndim, const void *bytes);

/* Adds a tensor of an open file, converted to `dtype` at write time
 * (MTK_DTYPE_UNDEFINED: its bytes as they are, any safetensors dtype).
 * The file must stay open until the write. */
MTK_API bool mtk_st_writer_add_from(mtk_st_writer *writer, const char *name, mtk_st_file *file,
                                    const mtk_st_info *info, mtk_dtype dtype);

/* Sets a __metadata__ entry (replacing an earlier value of `key`).  Keys
 * are written sorted. */
MTK_API bool mtk_st_writer_set_metadata(mtk_st_writer *writer, const char *key, const char *value);

/* Writes the file at `path` atomically (a file it replaces keeps its
 * permission bits; a new one gets 0666 less the umask): the tensors sorted as the
 * reference writer sorts them (dtype alignment descending, then name), the
 * header padded with spaces to a multiple of 8, so that a file written by
 * Python's safetensors with the same tensors and at most one metadata key
 * is byte-identical.  On any error no file is left behind (a previous
 * file at `path` is kept). */
MTK_API bool mtk_st_writer_write(mtk_st_writer *writer, const char *path);

/* Writes a sharded checkpoint into directory `dir` (created if missing),
 * as Hugging Face does: tensors in the order they were added go into
 * shards of at most `max_shard_bytes` of tensor data (a bigger tensor gets
 * a shard of its own); with one shard and !force_index, the file
 * `dir/weights_name` alone; otherwise `<stem>-00001-of-0000N.safetensors`
 * (stem: weights_name without ".safetensors") and
 * `<weights_name>.index.json` ({"metadata": {"total_size"}, "weight_map"}).
 * Every file is written to a temporary file first; nothing is renamed into
 * place until all are written, and on an error none is left.  *shards_out
 * (may be NULL) receives the number of shard files. */
MTK_API bool mtk_st_writer_write_sharded(mtk_st_writer *writer, const char *dir, const char *weights_name,
                                         uint64_t max_shard_bytes, bool force_index, int64_t *shards_out);

/* Removes the temporary file of every write in progress in this process
 * (each write then fails at its rename; files already renamed into place
 * stay).  For a program that is being interrupted: call it from a thread
 * that sigwait()s for SIGINT/SIGTERM, then die of the signal, so that an
 * interrupted write leaves no `.NAME.tmp-PID-N` behind.  Not
 * async-signal-safe (it takes a lock): do not call it from a handler. */
MTK_API void mtk_io_remove_temporaries(void);

/* Parses a size: an integer number of bytes, or a number with a unit B,
 * KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024), case
 * insensitive ("5GB", "500MiB", "1.5GB").  False (no error set) if it is
 * not one or is zero. */
MTK_API bool mtk_parse_size(const char *text, uint64_t *bytes_out);

#ifdef __cplusplus
}
#endif
#endif /* MTK_IO_H */
