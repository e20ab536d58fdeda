/* The parallel-for shared by the cpu kernels: contiguous ranges or
 * dynamically handed-out tasks, on a pool of persistent threads. */
#include "core/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

static _Thread_local int32_t scoped_threads; /* 0: the online cores */

int32_t mtk_parallel_scope_begin(int32_t n)
{
    int32_t previous = scoped_threads;
    scoped_threads = n > 0 ? n : 0;
    return previous;
}

void mtk_parallel_scope_end(int32_t previous) { scoped_threads = previous; }

int32_t mtk_parallel_threads(int32_t requested)
{
    long n = requested > 0 ? requested : scoped_threads;
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

/* Runs shares[0 .. count): 1.. on new threads, 0 here, then joins (the
 * path of calls the pool cannot take). */
static void run_on_new_threads(share *shares, int32_t count)
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

/* ------------------------------------------------------------ the pool
 *
 * Worker threads started on first use and kept for the process.  A call
 * publishes its shares and bumps `generation`; worker w runs share w.
 * After a job a worker spins (yielding the cpu on each turn) for
 * POOL_SPIN_NS before it sleeps, so
 * back-to-back kernels find it awake: starting a thread (or waking a
 * sleeping one) measured 30-70 us at the median and milliseconds at the
 * 90th percentile on this project's virtual 2-core machine, where an idle
 * vCPU is descheduled -- as long as a whole small kernel.  The caller,
 * done with its own share, spins as long for the workers', then sleeps
 * until the last one signals.  One call uses the pool at a time; a call
 * made meanwhile (another thread's, or one nested in a task) falls back
 * to new threads. */

#define POOL_SPIN_NS 200000

static pthread_mutex_t pool_use = PTHREAD_MUTEX_INITIALIZER;   /* held by the call using the pool */
static pthread_mutex_t pool_sleep = PTHREAD_MUTEX_INITIALIZER; /* guards sleepers, with pool_wake */
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;   /* a job for sleeping workers */
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;   /* the last worker finished */
static bool caller_waiting;       /* under pool_sleep */
static int32_t pool_size;         /* workers started (under pool_use) */
static int32_t pool_sleepers;     /* under pool_sleep */
/* The job word: a sequence number above JOB_COUNT_BITS bits of the
 * job's share count, so one load tells a worker whether it takes part
 * (it never reads job_shares otherwise). */
#define JOB_COUNT_BITS 16
static atomic_ullong generation;
static share *job_shares;         /* published by the generation bump */
static atomic_int job_pending;    /* workers still running their share */
static atomic_bool pool_parked;   /* mtk_parallel_park: spin no more until
                                     the next job */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One turn of a spin-wait: the cpu goes to any other runnable thread
 * (none on an idle machine, where this returns at once).  With `pause`
 * instead, on this project's loaded 2-core machine a worker and a caller
 * waiting for each other burnt their time slices while the thread they
 * waited for queued behind them: a float32 decode step at 2 threads took
 * 67-72 ms of cpu per token (110M llama), 35-38 ms with the yield. */
static inline void spin_turn(void) { sched_yield(); }

/* Waits until the job word moves past `seen`: spinning a while, then
 * asleep.  Returns the new word. */
static unsigned long long wait_for_job(unsigned long long seen)
{
    uint64_t start = now_ns();
    for (int32_t i = 0;; i++) {
        unsigned long long g = atomic_load_explicit(&generation, memory_order_acquire);
        if (g != seen) return g;
        if (atomic_load_explicit(&pool_parked, memory_order_relaxed)) break;
        spin_turn();
        if ((i & 7) == 7 && now_ns() - start > POOL_SPIN_NS) break;
    }
    pthread_mutex_lock(&pool_sleep);
    pool_sleepers++;
    unsigned long long g;
    while ((g = atomic_load_explicit(&generation, memory_order_acquire)) == seen)
        pthread_cond_wait(&pool_wake, &pool_sleep);
    pool_sleepers--;
    pthread_mutex_unlock(&pool_sleep);
    return g;
}

/* The job word each worker starts from: the one before the job it was
 * started for (written before pthread_create, which orders it). */
static unsigned long long worker_first_seen[MTK_PARALLEL_MAX_THREADS];

static void *pool_worker(void *arg)
{
    int32_t index = (int32_t)(intptr_t)arg;
    unsigned long long seen = worker_first_seen[index];
    for (;;) {
        seen = wait_for_job(seen);
        int32_t count = (int32_t)(seen & ((1u << JOB_COUNT_BITS) - 1));
        if (index < count) {
            run_share(&job_shares[index]);
            if (atomic_fetch_sub_explicit(&job_pending, 1, memory_order_acq_rel) == 1) {
                pthread_mutex_lock(&pool_sleep);
                if (caller_waiting) pthread_cond_signal(&pool_done);
                pthread_mutex_unlock(&pool_sleep);
            }
        }
    }
    return NULL;
}

void mtk_parallel_park(void) { atomic_store_explicit(&pool_parked, true, memory_order_relaxed); }

/* After fork() the child has no workers: start again from none. */
static void pool_after_fork(void)
{
    pthread_mutex_init(&pool_use, NULL);
    pthread_mutex_init(&pool_sleep, NULL);
    pthread_cond_init(&pool_wake, NULL);
    pthread_cond_init(&pool_done, NULL);
    caller_waiting = false;
    pool_size = 0;
    pool_sleepers = 0;
}

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static void pool_init(void) { pthread_atfork(NULL, NULL, pool_after_fork); }

/* Runs shares[0 .. count): 1.. on the pool's workers, 0 here; returns
 * when all are done. */
static void run_shares(share *shares, int32_t count)
{
    pthread_once(&pool_once, pool_init);
    if (pthread_mutex_trylock(&pool_use) != 0) {
        run_on_new_threads(shares, count);
        return;
    }
    /* workers are numbered 1..pool_size, as the shares they run */
    while (pool_size < count - 1) {
        pthread_t id;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        worker_first_seen[pool_size + 1] = atomic_load_explicit(&generation, memory_order_relaxed);
        bool started = pthread_create(&id, &attr, pool_worker, (void *)(intptr_t)(pool_size + 1)) == 0;
        pthread_attr_destroy(&attr);
        if (!started) break;
        pool_size++;
    }
    int32_t pooled = count - 1 < pool_size ? count - 1 : pool_size;
    job_shares = shares;
    atomic_store_explicit(&pool_parked, false, memory_order_relaxed);
    atomic_store_explicit(&job_pending, pooled, memory_order_relaxed);
    unsigned long long seq = (atomic_load_explicit(&generation, memory_order_relaxed) >> JOB_COUNT_BITS) + 1;
    atomic_store_explicit(&generation, seq << JOB_COUNT_BITS | (unsigned long long)(pooled + 1), memory_order_release);
    pthread_mutex_lock(&pool_sleep);
    if (pool_sleepers > 0) pthread_cond_broadcast(&pool_wake);
    pthread_mutex_unlock(&pool_sleep);
    run_share(&shares[0]);
    for (int32_t t = pooled + 1; t < count; t++) run_share(&shares[t]); /* threads that could not start */
    /* the workers' shares: spin a while, then sleep until the last is done */
    uint64_t start = now_ns();
    for (int32_t i = 0; atomic_load_explicit(&job_pending, memory_order_acquire) > 0; i++) {
        spin_turn();
        if ((i & 7) != 7 || now_ns() - start <= POOL_SPIN_NS) continue;
        pthread_mutex_lock(&pool_sleep);
        caller_waiting = true;
        while (atomic_load_explicit(&job_pending, memory_order_acquire) > 0) pthread_cond_wait(&pool_done, &pool_sleep);
        caller_waiting = false;
        pthread_mutex_unlock(&pool_sleep);
    }
    pthread_mutex_unlock(&pool_use);
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
