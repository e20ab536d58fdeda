/* The thread count of the conv family's cpu kernels and a small
 * parallel-for over independent tasks (pthreads, one short-lived thread
 * per extra worker; tasks are handed out through an atomic counter). */
#include "ops/conv.h"
#include "mtk/ops/conv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAX_WORKERS 256

static atomic_int requested_threads; /* 0: the online cores */

void mtk_conv_set_num_threads(int32_t n) { atomic_store(&requested_threads, n > 0 ? n : 0); }

int32_t mtk_conv_num_threads(void)
{
    int32_t n = atomic_load(&requested_threads);
    if (n > 0) return n < MAX_WORKERS ? n : MAX_WORKERS;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    return cores < MAX_WORKERS ? (int32_t)cores : MAX_WORKERS;
}

int32_t mtk_conv_workers(int64_t ntasks)
{
    int32_t n = mtk_conv_num_threads();
    if (ntasks < n) n = ntasks > 0 ? (int32_t)ntasks : 1;
    return n;
}

typedef struct pool_state {
    atomic_llong next;
    int64_t ntasks;
    mtk_conv_task task;
    void *user;
} pool_state;

typedef struct worker_arg {
    pool_state *state;
    int32_t worker;
} worker_arg;

static void *run_worker(void *p)
{
    worker_arg *w = p;
    pool_state *s = w->state;
    for (;;) {
        int64_t i = atomic_fetch_add(&s->next, 1);
        if (i >= s->ntasks) break;
        s->task(i, w->worker, s->user);
    }
    return NULL;
}

void mtk_conv_parallel_for(int64_t ntasks, int32_t workers, mtk_conv_task task, void *user)
{
    if (ntasks <= 0) return;
    if (workers > MAX_WORKERS) workers = MAX_WORKERS;
    pool_state state;
    atomic_init(&state.next, 0);
    state.ntasks = ntasks;
    state.task = task;
    state.user = user;
    pthread_t threads[MAX_WORKERS];
    worker_arg args[MAX_WORKERS];
    int32_t started = 0;
    for (int32_t w = 1; w < workers; w++) {
        args[w].state = &state;
        args[w].worker = w;
        if (pthread_create(&threads[w], NULL, run_worker, &args[w]) != 0) break; /* fewer workers */
        started = w;
    }
    args[0].state = &state;
    args[0].worker = 0;
    run_worker(&args[0]);
    for (int32_t w = 1; w <= started; w++) pthread_join(threads[w], NULL);
}
