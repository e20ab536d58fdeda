/* The parallel-for shared by the cpu kernels: contiguous ranges or
 * dynamically handed-out tasks, on short-lived pthreads. */
#include "core/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

static atomic_int default_threads; /* 0: the online cores */

void mtk_parallel_set_default_threads(int32_t n) { atomic_store(&default_threads, n > 0 ? n : 0); }

int32_t mtk_parallel_threads(int32_t requested)
{
    long n = requested > 0 ? requested : atomic_load(&default_threads);
    if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > MTK_PARALLEL_MAX_THREADS ? MTK_PARALLEL_MAX_THREADS : (int32_t)n;
}

/* One thread's share of a call: a range (tasks == NULL) or a worker of
 * the task counter. */
typedef struct share {
    mtk_parallel_range_fn range_fn;
    mtk_parallel_task_fn task_fn;
    void *user;
    int64_t begin, end;     /* range; for tasks, end is ntasks */
    atomic_llong *next;     /* tasks: the shared counter */
    int32_t index;          /* part or worker number */
} share;

static void *run_share(void *arg)
{
    share *s = arg;
    if (!s->next) {
        s->range_fn(s->begin, s->end, s->index, s->user);
        return NULL;
    }
    for (;;) {
        int64_t i = atomic_fetch_add(s->next, 1);
        if (i >= s->end) break;
        s->task_fn(i, s->index, s->user);
    }
    return NULL;
}

/* Runs shares[0 .. count): 1.. on new threads, 0 here, then joins. */
static void run_shares(share *shares, int32_t count)
{
    pthread_t ids[MTK_PARALLEL_MAX_THREADS];
    bool started[MTK_PARALLEL_MAX_THREADS];
    for (int32_t t = 1; t < count; t++) started[t] = pthread_create(&ids[t], NULL, run_share, &shares[t]) == 0;
    run_share(&shares[0]);
    for (int32_t t = 1; t < count; t++) {
        if (started[t]) pthread_join(ids[t], NULL);
        else run_share(&shares[t]); /* no thread: its part runs here */
    }
}

static int32_t clamp_count(int64_t n, int32_t count)
{
    if (count > MTK_PARALLEL_MAX_THREADS) count = MTK_PARALLEL_MAX_THREADS;
    if (count > n) count = (int32_t)n;
    return count < 1 ? 1 : count;
}

void mtk_parallel_range(int64_t n, int32_t parts, mtk_parallel_range_fn fn, void *user)
{
    if (n <= 0) return;
    parts = clamp_count(n, parts);
    if (parts == 1) {
        fn(0, n, 0, user);
        return;
    }
    share shares[MTK_PARALLEL_MAX_THREADS];
    for (int32_t t = 0; t < parts; t++)
        shares[t] = (share){ .range_fn = fn, .user = user, .begin = mtk_parallel_split(n, t, parts),
                             .end = mtk_parallel_split(n, t + 1, parts), .index = t };
    run_shares(shares, parts);
}

void mtk_parallel_tasks(int64_t ntasks, int32_t workers, mtk_parallel_task_fn fn, void *user)
{
    if (ntasks <= 0) return;
    workers = clamp_count(ntasks, workers);
    if (workers == 1) {
        for (int64_t i = 0; i < ntasks; i++) fn(i, 0, user);
        return;
    }
    atomic_llong next;
    atomic_init(&next, 0);
    share shares[MTK_PARALLEL_MAX_THREADS];
    for (int32_t w = 0; w < workers; w++)
        shares[w] = (share){ .task_fn = fn, .user = user, .end = ntasks, .next = &next, .index = w };
    run_shares(shares, workers);
}
