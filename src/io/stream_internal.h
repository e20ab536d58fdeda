/* Internal to weight streaming (src/io/load_stream.c, stream_run.c). */
#ifndef MTK_IO_STREAM_INTERNAL_H
#define MTK_IO_STREAM_INTERNAL_H

#include "mtk/nn.h"
#include "mtk/stream.h"

/* A page-aligned range of the mapped checkpoint. */
typedef struct stream_range {
    void *start;
    size_t length;
} stream_range;

/* One streamed layer: its module and the pages of its mapped tensors. */
typedef struct stream_unit {
    mtk_module *module;
    stream_range *ranges;
    int32_t nranges;
    uint64_t bytes;
    bool kept; /* stays resident once brought in (set by stream_start) */
} stream_unit;

/* Starts streaming `count` units (arrays in the context's arena):
 * marks the units the budget keeps resident, installs the module observer
 * and, when stats->prefetch, the prefetch thread.  NULL on out of memory or a thread that cannot start. */
mtk_stream *stream_start(mtk_ctx *ctx, stream_unit *units, int32_t count, const mtk_stream_stats *stats);

/* CLOCK_MONOTONIC seconds. */
double stream_now(void);

#endif
