/* Internal to weight streaming (src/io/load_stream.c, stream_run.c). */
#ifndef MTK_IO_STREAM_INTERNAL_H
#define MTK_IO_STREAM_INTERNAL_H

#include "mtk/nn.h"
#include "mtk/stream.h"

#include <stdatomic.h>

/* A page-aligned range of the mapped checkpoint. */
typedef struct stream_range {
    void *start;
    size_t length;
} stream_range;

/* One mapped tensor of a layer, as a read fills a slot with it: where its
 * bytes are in the checkpoint file and in the slot, and the mapping view
 * the tensor goes back to after the layer's forward. */
typedef struct stream_piece {
    mtk_tensor *tensor;
    mtk_storage *mapped;   /* the tensor's storage in the mapping          */
    int64_t mapped_offset; /* and its storage_offset there (elements)      */
    int fd;                /* the checkpoint file, open for pread          */
    uint64_t file_offset;  /* the tensor's first byte in the file          */
    size_t bytes;
    size_t slot_offset;    /* where it goes in a slot (64-byte aligned)    */
    int32_t first_chunk;   /* its first chunk of the unit's reads          */
} stream_piece;

/* One streamed layer: its module and the pages of its mapped tensors. */
typedef struct stream_unit {
    mtk_module *module;
    stream_range *ranges;
    int32_t nranges;
    uint64_t bytes;
    bool kept; /* stays resident once brought in (set by stream_start) */
    stream_piece *pieces; /* its mapped tensors, for filling a slot     */
    int32_t npieces;
    int32_t nchunks;      /* reads of at most STREAM_CHUNK bytes        */
    size_t slot_bytes;    /* the slot size its pieces need              */
} stream_unit;

/* The most bytes one pread of a slot fill asks for: the unit of work the
 * prefetch thread and the forward's thread share out. */
#define STREAM_CHUNK ((size_t)4 << 20)

/* A layer-sized buffer that streamed layers are read into (the read
 * fill): anonymous memory, 2 MiB aligned, MADV_HUGEPAGE, faulted in once
 * and reused, so the forward reads warm memory through few TLB entries
 * and the page tables never change.  `storage` wraps it (the stream holds
 * a reference; the last one unmaps it). */
typedef struct stream_slot {
    void *data;
    size_t size;
    mtk_storage *storage;
    int32_t unit;          /* the unit it holds or is filled with; -1 free */
    bool in_use;           /* the unit's forward runs on it               */
    bool filled;           /* every chunk read                            */
    uint32_t gen;          /* counts the fills begun (under the lock)     */
    _Atomic uint64_t next; /* gen << 32 | the next chunk to claim: a claim
                              of an older fill fails                     */
    _Atomic int32_t done;  /* chunks read                                 */
} stream_slot;

/* A new slot of `size` bytes, faulted in; NULL and the context's error on
 * out of memory. */
bool stream_slot_init(mtk_ctx *ctx, stream_slot *slot, size_t size);

/* Drops the stream's reference on the slot's memory (unmapped with the
 * last one). */
void stream_slot_fini(stream_slot *slot);

/* Claims and reads chunks of `slot`'s fill `gen` (of unit `u`) until
 * none is left; safe on two threads at once.  The cpu seconds it took. */
double stream_slot_fill(stream_slot *slot, const stream_unit *u, uint32_t gen);

/* Points `u`'s tensors at their bytes in `slot` (true) or back at the
 * mapping (false).  The forward's thread only, between forwards. */
void stream_unit_point(const stream_unit *u, const stream_slot *slot, bool at_slot);

/* Fills u's pieces and slot layout from its mapped tensors; `fd_of` gives
 * the open file descriptor of a mapping's storage. */
bool stream_unit_pieces(mtk_ctx *ctx, stream_unit *u, int (*fd_of)(void *user, const mtk_storage *mapping),
                        void *user);

/* A checkpoint file's mapping and a descriptor of the file for preads. */
typedef struct stream_file {
    const mtk_storage *mapping;
    int fd;
} stream_file;

/* Starts streaming `count` units (arrays in the context's arena):
 * marks the units the budget keeps resident, picks the fill (reads into
 * slots or the mapping; MTK_STREAM_FILL=read|map, else measured on the
 * first streamed unit), installs the module observer and, when
 * stats->prefetch, the prefetch thread.  Takes the `nfiles` descriptors
 * (closed by mtk_stream_free, or here on failure).  NULL on out of memory
 * or a thread that cannot start. */
mtk_stream *stream_start(mtk_ctx *ctx, stream_unit *units, int32_t count, const mtk_stream_stats *stats,
                         stream_file *files, int32_t nfiles);

/* CLOCK_MONOTONIC seconds. */
double stream_now(void);

/* The thread policy of a streamed forward (stream_threads.c).  A step of
 * at most STREAM_FEW_ROWS rows (batch x tokens: a decode step, whose
 * products take the matrix-vector path) whose threads take every core
 * brings each streamed layer in on the forward's own threads just before
 * it runs and drops it just after (inline), instead of leaving that to
 * the prefetch thread, which would take a core from the forward; a bigger
 * step (a prefill) and one leaving a core free keep the prefetch thread. */
#define STREAM_FEW_ROWS 8

/* MTK_STREAM_COMPUTE_THREADS: unset, empty or "auto": the policy above
 * (STREAM_THREADS_AUTO); N in 1..1024: steps of few rows on N threads
 * beside the prefetch thread; 0: on the context's threads beside the
 * prefetch thread (never inline).  Anything else: auto. */
#define STREAM_THREADS_AUTO (-1)
int32_t stream_threads_setting(const char *text);

/* The rows of a module call's first input (every dimension but the
 * last: batch x tokens of a layer's hidden states); 0 without one. */
int64_t stream_io_rows(const mtk_module_io *io);

/* How a step runs its streamed layers: on `threads` threads, inline or
 * beside the prefetch thread. */
typedef struct stream_step_plan {
    int32_t threads;
    bool inline_fill;
} stream_step_plan;

/* The plan of a step of `rows` rows given the context's `threads`, the
 * online `cores` and the `setting` (stream_threads_setting): the
 * context's threads with prefetch for more than STREAM_FEW_ROWS rows or
 * setting 0; the setting's threads with prefetch when > 0; else the
 * context's threads, inline when they take every core. */
stream_step_plan stream_step_plan_for(int32_t threads, int32_t cores, int64_t rows, int32_t setting);

#endif
