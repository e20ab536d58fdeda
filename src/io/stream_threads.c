/* Weight streaming's thread policy: how a step's streamed layers come in
 * when the forward's threads take every core.
 *
 * A decode step (a few rows: batch x new tokens) runs each layer in a few
 * milliseconds.  With the forward on every core, the prefetch thread takes
 * a core from a pool worker and every parallel kernel's end waits for the
 * descheduled worker: measured on 2 cores (100m float32, bench_stream.py,
 * the checkpoint in large folios), in RAM 46 tokens/s, streamed with the
 * prefetch thread 31, with it and one compute thread fewer 28 (two
 * threads beat one: a decode here is not bound by memory bandwidth alone),
 * and 35-39 when each layer is brought in by the forward's own threads,
 * in parallel, just before it runs, and dropped by them just after (with
 * 4 KiB folios 17, 18 and 20).  Nothing overlaps then, but no core was
 * idle to overlap on.  So a step of few rows on every core brings its
 * layers in inline; a prefill (long layers, where the thread's work is
 * small beside them) and a forward that leaves a core free keep the
 * prefetch thread. */
#include "io/stream_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int32_t stream_threads_setting(const char *text)
{
    if (!text || !*text || strcmp(text, "auto") == 0) return STREAM_THREADS_AUTO;
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 0 || v > 1024) return STREAM_THREADS_AUTO;
    return (int32_t)v;
}

int64_t stream_io_rows(const mtk_module_io *io)
{
    if (!io || io->nin < 1 || !io->in[0] || io->in[0]->ndim < 1) return 0;
    const mtk_tensor *x = io->in[0];
    int64_t rows = 1;
    for (int32_t d = 0; d + 1 < x->ndim; d++) rows *= x->shape[d];
    return rows;
}

stream_step_plan stream_step_plan_for(int32_t threads, int32_t cores, int64_t rows, int32_t setting)
{
    if (threads < 1) threads = 1;
    if (rows > STREAM_FEW_ROWS || setting == 0) return (stream_step_plan){ threads, false };
    if (setting > 0) return (stream_step_plan){ setting, false };
    return (stream_step_plan){ threads, threads >= cores }; /* no core free for the prefetch thread: inline */
}
