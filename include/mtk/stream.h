/*
 * Running a model larger than a RAM budget: the weights stay mapped from
 * the safetensors checkpoint (zero-copy views, mtk_st_view) and only the
 * decoder layers about to run are resident.
 *
 * The model's "layers" are the children of its heaviest ModuleList
 * (model.layers, transformer.h, encoder.layer).  A module call observer
 * (mtk_ctx_set_module_hook) brackets each layer's forward: before it, the
 * layer's pages are made resident (read ahead, then faulted in) unless a prefetch
 * thread already did, and the thread is asked to bring in the next layer
 * (cyclically: after the last, the first, for the next decode step);
 * after it, the layer's pages are dropped from the process
 * (MADV_DONTNEED: they stay in the page cache, not in the resident set).
 * Everything outside the layers (embeddings, final norm, lm_head, computed
 * buffers) stays resident once touched.  The forward itself is the one of
 * the in-RAM model, so its results are the same bit for bit.
 *
 * The resident weights are then at most `fixed` + 2 x the largest layer
 * with prefetch (when the budget holds that), `fixed` + 1 layer without,
 * plus the layers the rest of the budget keeps: those (the first ones that
 * fit) stay resident once brought in, so that a decode step brings in
 * only the others again.  A budget that holds the whole model keeps every
 * layer.  Dropping a finished layer's pages is the prefetch thread's work
 * too (before it brings in the next), so the forward's thread only waits
 * when the thread is behind, and then brings the layer in itself.
 *
 * That is the map fill.  The read fill instead reads a streamed layer's
 * tensors (pread) into one of two reused, pre-faulted huge-page slots and
 * points the tensors at the slot for the layer's forward (back at the
 * mapping after): no page tables change per layer, one copy per byte.
 * The stream picks the cheaper by measuring one layer both ways when it
 * starts (the mapping wins when the page cache holds the file in large
 * folios); MTK_STREAM_FILL=map|read forces one, MTK_STREAM_READERS=N
 * reads a slot on N threads.  Either way the resident weights are the
 * same and the outputs are the in-RAM run's.
 *
 * Threads: a step of at most 8 rows (batch x tokens: a decode step)
 * whose threads (mtk_ctx_set_num_threads) take every core does without
 * the prefetch thread, which would take a core from the forward's (whose
 * kernels then wait for it): each streamed layer is brought in by the
 * forward's own threads, in parallel, just before it runs, and dropped by
 * them just after (so too under a budget too small for the prefetch
 * thread).  A prefill, and a forward that leaves a core free, keep the
 * prefetch thread.  MTK_STREAM_COMPUTE_THREADS=N runs such
 * steps on N threads beside the prefetch thread (the stream puts N in the
 * context before each layer and gives the caller's setting back in
 * mtk_stream_free), 0 on the context's threads beside it.  The kernels'
 * results do not depend on their thread count, so no bit of the outputs
 * changes.
 */
#ifndef MTK_STREAM_H
#define MTK_STREAM_H

#include "mtk/core.h"
#include "mtk/load.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtk_stream mtk_stream;

/* What a stream holds and did. */
typedef struct mtk_stream_stats {
    uint64_t budget;       /* the max_ram given, bytes                       */
    uint64_t total_bytes;  /* every parameter and buffer of the model        */
    uint64_t fixed_bytes;  /* those outside the layers (always resident)     */
    uint64_t layer_bytes;  /* the largest layer                              */
    const char *layers;    /* the layers' module path ("model.layers")       */
    int32_t layer_count;
    bool prefetch;         /* the budget holds two layers: a thread prefetches */
    bool releases;         /* layers are dropped after their forward: false
                              when the budget holds the whole model       */
    int64_t layer_calls;   /* layer forwards seen                            */
    int64_t prefetched;    /* of them, found resident (prefetched, or kept) */
    double wait_seconds;   /* time the forward waited for pages              */
    int32_t kept_layers;   /* layers kept resident across forwards (the
                              budget holds them besides the streamed ones) */
    int64_t brought_in;    /* layers made resident (by either thread, once
                              when both did it at the same time)         */
    double bring_in_seconds; /* cpu seconds making pages resident, both
                                threads (read ahead and fault in)          */
    double release_seconds;  /* cpu seconds dropping them (MADV_DONTNEED) */
    const char *fill;        /* how streamed layers come in: "map" (their
                                pages mapped in, dropped after) or "read"
                                (read into two reused slots)             */
    double map_probe_seconds;  /* the measure that picked it: cpu seconds */
    double read_probe_seconds; /* of one layer mapped + dropped, and read;
                                  0 when MTK_STREAM_FILL chose            */
    int32_t prefill_threads; /* the threads the layers of the latest step of
                                more than 8 rows (batch x tokens: a
                                prefill) ran on: the context's; 0: none  */
    int32_t decode_threads;  /* those of the latest step of at most 8 rows
                                (a decode step); 0: none ran.  The
                                context's, or MTK_STREAM_COMPUTE_THREADS */
    int64_t decode_calls;    /* layer forwards of such steps              */
    bool decode_inline;      /* the latest such step brought its streamed
                                layers in on its own threads, just before
                                each ran (no prefetch: its threads take
                                every core)                               */
} mtk_stream_stats;

/* Loads `model` (on meta, from mtk_model_resolve) from the open
 * checkpoint `ckpt` as mapped views, keys matched as mtk_load_module
 * matches them (a mismatch: the same error, `result` listing the keys),
 * and starts streaming it under `max_ram` bytes.  The model is on the cpu
 * and runs through any forward; mtk_stream_free ends the streaming (call
 * it before freeing the context; the model stays usable, its pages then
 * come in on demand).  `ckpt` may be closed after the call.  Errors (NULL,
 * the context's error): MTK_ERR_INVALID_ARGUMENT when the model has no
 * ModuleList of layers, when a tensor must be converted (another dtype:
 * stream in the checkpoint's dtype) or fused from per-expert tensors, and
 * MTK_ERR_OUT_OF_MEMORY "... --max-ram N cannot hold ..." naming the
 * bytes outside the layers, the largest layer and the least budget that
 * runs, when max_ram < fixed + one layer. */
MTK_API mtk_stream *mtk_stream_load(mtk_ctx *ctx, mtk_module *model, mtk_checkpoint *ckpt, const mtk_load_spec *spec,
                                    uint64_t max_ram, mtk_load_result *result);

/* mtk_model_load's counterpart: resolves MODEL on meta, opens `weights`,
 * loads it with the family's key rules into a stream (mtk_stream_load).
 * The model in *model_out; NULL with the context's error. */
MTK_API mtk_stream *mtk_model_load_streamed(mtk_ctx *ctx, const char *model, const char *weights,
                                            const mtk_model_resolve_options *options, const mtk_load_spec *spec,
                                            uint64_t max_ram, mtk_model_info *info, mtk_load_result *result,
                                            mtk_module **model_out);

/* The stream's figures so far. */
MTK_API void mtk_stream_get_stats(const mtk_stream *stream, mtk_stream_stats *out);

/* Stops the prefetch thread, removes the module observer and frees the
 * stream (not the model).  NULL is a no-op. */
MTK_API void mtk_stream_free(mtk_stream *stream);

#ifdef __cplusplus
}
#endif
#endif /* MTK_STREAM_H */
