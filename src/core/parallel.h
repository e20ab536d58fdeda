/* The one parallel-for of mtk's cpu kernels (internal).  The calling
 * thread takes part 0; parts 1.. run on a pool of persistent worker
 * threads, started on first use, that spin a little after each job
 * before they sleep (see parallel.c for why); a call made while another
 * uses the pool runs its parts on new threads instead, and a part whose
 * thread cannot start runs on the caller, so a call never fails.  The
 * thread count is the context's (mtk_ctx_set_num_threads): the op
 * dispatcher puts it in scope (mtk_parallel_scope_begin) while a cpu
 * kernel runs, and the kernels ask mtk_parallel_threads(0). */
#ifndef MTK_CORE_PARALLEL_H
#define MTK_CORE_PARALLEL_H

#include <stdint.h>

/* The most threads one call uses. */
#define MTK_PARALLEL_MAX_THREADS 256

/* A thread-count setting made concrete: `requested` when > 0, else the
 * count in scope on this thread (mtk_parallel_scope_begin), else the
 * number of online cores; clamped to [1, MTK_PARALLEL_MAX_THREADS]. */
int32_t mtk_parallel_threads(int32_t requested);

/* Puts a context's setting (n <= 0: the default) in scope on the calling
 * thread and returns the previous one, for mtk_parallel_scope_end. */
int32_t mtk_parallel_scope_begin(int32_t n);
void mtk_parallel_scope_end(int32_t previous);

/* Runs fn(begin, end, part, user) over [0, n) split into `parts`
 * contiguous near-equal ranges (parts clamped to [1, n] and the
 * maximum), part numbering them from 0, one thread each; returns when
 * all are done.  Nothing runs when n <= 0. */
typedef void (*mtk_parallel_range_fn)(int64_t begin, int64_t end, int32_t part, void *user);
void mtk_parallel_range(int64_t n, int32_t parts, mtk_parallel_range_fn fn, void *user);

/* Runs fn(i, worker, user) for every task i in [0, ntasks) on `workers`
 * threads (clamped to [1, ntasks] and the maximum) that take tasks one
 * at a time from a shared counter (for tasks of uneven cost); worker is
 * in [0, workers), so callers can index per-worker scratch. */
typedef void (*mtk_parallel_task_fn)(int64_t i, int32_t worker, void *user);
void mtk_parallel_tasks(int64_t ntasks, int32_t workers, mtk_parallel_task_fn fn, void *user);

/* Sends the pool's idle workers to sleep now instead of spinning for
 * their next job: called before work on threads the pool does not own
 * (OpenBLAS's), which a spinning worker would take cores from.  The next
 * job wakes them as usual. */
void mtk_parallel_park(void);

/* Start of part t of [0, n) split into `parts` near-equal ranges. */
static inline int64_t mtk_parallel_split(int64_t n, int32_t t, int32_t parts)
{
    int64_t base = n / parts, extra = n % parts;
    return base * t + (t < extra ? t : extra);
}

#endif
