/* Weight streaming, the running half: the module observer that brackets
 * each layer's forward, and the thread that makes the next layer resident
 * while the current one runs. */
#include "io/stream_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

struct mtk_stream {
    mtk_ctx *ctx;
    stream_unit *units;
    int32_t count;
    mtk_stream_stats stats;
    mtk_module_hook previous_hook; /* restored by mtk_stream_free */
    void *previous_user;
    /* the prefetch thread's mailbox, under `lock` */
    pthread_t thread;
    bool has_thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a request, or stop        */
    pthread_cond_t done; /* the request was carried out */
    int32_t requested;   /* unit to bring in; -1: none */
    int32_t working;     /* unit being brought in; -1  */
    int32_t resident;    /* last unit brought in; -1   */
    bool stop;
};

double stream_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Makes every page of `u` resident in the process: populated page tables
 * (a kernel without MADV_POPULATE_READ: read ahead, then touch a byte
 * per page). */
static void bring_in(const stream_unit *u)
{
    for (int32_t i = 0; i < u->nranges; i++) {
        const stream_range *r = &u->ranges[i];
        if (madvise(r->start, r->length, MADV_POPULATE_READ) == 0) continue;
        (void)madvise(r->start, r->length, MADV_WILLNEED);
        volatile const unsigned char *p = r->start;
        unsigned char sum = 0;
        for (size_t at = 0; at < r->length; at += 4096) sum ^= p[at];
        (void)sum;
    }
}

/* Drops `u`'s pages from the process; the page cache keeps them. */
static void release(const stream_unit *u)
{
    for (int32_t i = 0; i < u->nranges; i++) (void)madvise(u->ranges[i].start, u->ranges[i].length, MADV_DONTNEED);
}

static void *prefetch_main(void *arg)
{
    mtk_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && s->requested < 0) pthread_cond_wait(&s->wake, &s->lock);
        if (s->stop) break;
        s->working = s->requested;
        s->requested = -1;
        pthread_mutex_unlock(&s->lock);
        bring_in(&s->units[s->working]);
        pthread_mutex_lock(&s->lock);
        s->resident = s->working;
        s->working = -1;
        pthread_cond_broadcast(&s->done);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static int32_t unit_of(const mtk_stream *s, const mtk_module *m)
{
    for (int32_t i = 0; i < s->count; i++)
        if (s->units[i].module == m) return i;
    return -1;
}

/* Before layer i: wait for its prefetch (or bring it in here), then ask
 * for layer i + 1.  After layer i: release it. */
static bool on_call(void *user, mtk_module *m, bool after)
{
    mtk_stream *s = user;
    bool ok = true;
    if (s->previous_hook) ok = s->previous_hook(s->previous_user, m, after);
    int32_t i = unit_of(s, m);
    if (i < 0) return ok;
    if (after) {
        if (s->stats.releases) release(&s->units[i]);
        return ok;
    }
    s->stats.layer_calls++;
    double t0 = stream_now();
    if (s->has_thread) {
        pthread_mutex_lock(&s->lock);
        if (s->requested == i) s->requested = -1; /* not started: do it here */
        while (s->working == i) pthread_cond_wait(&s->done, &s->lock);
        bool ready = s->resident == i;
        pthread_mutex_unlock(&s->lock);
        if (ready) s->stats.prefetched++;
        else bring_in(&s->units[i]);
        pthread_mutex_lock(&s->lock);
        s->resident = -1;
        s->requested = (i + 1) % s->count;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
    } else {
        bring_in(&s->units[i]);
    }
    s->stats.wait_seconds += stream_now() - t0;
    return ok;
}

mtk_stream *stream_start(mtk_ctx *ctx, stream_unit *units, int32_t count, const mtk_stream_stats *stats)
{
    mtk_stream *s = calloc(1, sizeof *s);
    if (!s) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "stream: out of memory");
        return NULL;
    }
    s->ctx = ctx;
    s->units = units;
    s->count = count;
    s->stats = *stats;
    s->requested = s->working = s->resident = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->done, NULL);
    if (stats->prefetch && count > 1) {
        int rc = pthread_create(&s->thread, NULL, prefetch_main, s);
        if (rc != 0) {
            mtk_error(ctx, MTK_ERR_IO, "stream: cannot start the prefetch thread: %s", strerror(rc));
            mtk_stream_free(s);
            return NULL;
        }
        s->has_thread = true;
        pthread_mutex_lock(&s->lock);
        s->requested = 0; /* the first layer, while the embeddings run */
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
    }
    s->stats.prefetch = s->has_thread;
    s->previous_hook = mtk_ctx_module_hook(ctx, &s->previous_user);
    mtk_ctx_set_module_hook(ctx, on_call, s);
    return s;
}

void mtk_stream_get_stats(const mtk_stream *s, mtk_stream_stats *out)
{
    if (s && out) *out = s->stats;
}

void mtk_stream_free(mtk_stream *s)
{
    if (!s) return;
    void *user;
    if (mtk_ctx_module_hook(s->ctx, &user) == on_call && user == s)
        mtk_ctx_set_module_hook(s->ctx, s->previous_hook, s->previous_user);
    if (s->has_thread) {
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
    }
    pthread_cond_destroy(&s->done);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
