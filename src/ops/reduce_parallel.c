/* The thread helper of the reduce family's cpu kernels: a range split in
 * contiguous parts, one pthread per part, and the thread-count setting. */
#include "ops/reduce_kernel.h"
#include "mtk/ops/reduce.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAX_THREADS 256

static atomic_int configured_threads; /* 0: online cores */

void mtk_reduce_set_num_threads(int32_t n) { atomic_store(&configured_threads, n > 0 ? n : 0); }

int32_t red_num_threads(void)
{
    int32_t n = atomic_load(&configured_threads);
    if (n <= 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        n = online > 0 ? (int32_t)online : 1;
    }
    return n > MAX_THREADS ? MAX_THREADS : n;
}

int32_t mtk_reduce_num_threads(void) { return red_num_threads(); }

typedef struct part {
    red_task_fn fn;
    void *user;
    int64_t begin, end;
    int32_t worker;
} part;

static void *run_part(void *arg)
{
    part *p = arg;
    p->fn(p->begin, p->end, p->worker, p->user);
    return NULL;
}

/* Start of part t of [0, n) in `parts` near-equal parts (no overflow). */
static int64_t split_point(int64_t n, int32_t t, int32_t parts)
{
    int64_t base = n / parts, extra = n % parts;
    return base * t + (t < extra ? t : extra);
}

void red_parallel(int64_t n, int32_t nthreads, red_task_fn fn, void *user)
{
    if (n <= 0) return;
    if (nthreads > MAX_THREADS) nthreads = MAX_THREADS;
    if (nthreads > n) nthreads = (int32_t)n;
    if (nthreads <= 1) {
        fn(0, n, 0, user);
        return;
    }
    part parts[MAX_THREADS];
    pthread_t threads[MAX_THREADS];
    bool started[MAX_THREADS] = { false };
    for (int32_t t = 0; t < nthreads; t++) {
        parts[t].fn = fn;
        parts[t].user = user;
        parts[t].worker = t;
        parts[t].begin = split_point(n, t, nthreads);
        parts[t].end = split_point(n, t + 1, nthreads);
    }
    for (int32_t t = 1; t < nthreads; t++)
        started[t] = pthread_create(&threads[t], NULL, run_part, &parts[t]) == 0;
    run_part(&parts[0]);
    for (int32_t t = 1; t < nthreads; t++) {
        if (started[t]) pthread_join(threads[t], NULL);
        else run_part(&parts[t]); /* no thread: run its part here */
    }
}
