/* Weight streaming, the running half: which layers the budget keeps, the
 * module observer that brackets each layer's forward, and the thread that
 * drops finished layers and makes the next streamed one resident while the
 * current one runs.
 *
 * Where the time goes (measured on a 64 MiB f32 layer, bench/bench_stream.py):
 * the weights are never copied (the tensors are views of the mapping), so a
 * layer's cost is its page tables: mapping the pages in and MADV_DONTNEED,
 * about 1 ms and 0.1 ms per 64 MiB when the page cache holds the file in
 * large folios (ext4, PMD-mapped), 4-6 ms and 3 ms with 4 KiB folios
 * (which a page cache under pressure holds), against about 6-10 ms of a
 * one-thread decode step's matrix-vector products over the same bytes.  Hence: layers the budget holds stay
 * (no page-table work at all for them), both the populate and the drop
 * run on the prefetch thread, and the forward's thread never sleeps on
 * that thread (on a loaded machine a wake-up costs a time slice): when the
 * layer it needs is not ready it brings it in itself, alongside.  With 4
 * KiB folios the read fill (stream_fill.c: slots) costs the same cpu and
 * leaves the forward warm huge pages; pick_fill measures which applies. */
#include "io/stream_internal.h"
#include "core/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The kernel's default fault-around window (fault_around_bytes). */
#define STREAM_TOUCH ((size_t)64 * 1024)

/* Per unit, under the lock. */
typedef struct unit_state {
    bool ready;    /* resident since its last release (read fill: its
                      slot is filled) */
    bool dropping; /* a release is queued for the thread */
    int32_t slot;  /* read fill: the slot it is in or read into; -1 */
} unit_state;

/* A read fill beats the mapping when its cpu seconds per layer are below
 * the mapping's (map in, drop) times this: the forward then reads warm
 * huge pages, not 4 KiB page-cache pages (measured: 10-25% faster
 * matrix-vector products). */
#define READ_OVER_MAP 1.25

/* The most threads reading one slot (MTK_STREAM_READERS, default 1: the
 * prefetch thread, and the forward's when it finds its layer not ready). */
#define STREAM_MAX_READERS 4

struct mtk_stream {
    mtk_ctx *ctx;
    stream_unit *units;
    unit_state *state;
    int32_t count;
    mtk_module_hook previous_hook; /* restored by mtk_stream_free */
    void *previous_user;
    /* everything below under `lock` once the thread runs */
    mtk_stream_stats stats;
    pthread_t thread;
    bool has_thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a request, a release, or stop */
    int32_t requested;   /* unit to bring in; -1: none     */
    int32_t drops;       /* units with `dropping` set      */
    int32_t releasing;   /* unit the thread drops now; -1  */
    bool stop;
    /* the read fill (reads true): streamed units go through the slots */
    bool reads;
    stream_slot slots[2];
    int32_t nslots;
    stream_file *files;
    int32_t nfiles;
    /* reader threads beside the prefetch thread (MTK_STREAM_READERS - 1):
       each fill begun is announced to them, and they claim its chunks too */
    pthread_t helpers[STREAM_MAX_READERS];
    int32_t nhelpers;
    pthread_cond_t announce;
    uint32_t fills_begun;
    int32_t fill_slot, fill_unit;
    uint32_t fill_gen;
    /* the thread policy (stream_threads.c), the forward's thread only:
       `shares` when some layers are streamed (not kept) */
    bool shares;
    int32_t cores;        /* online cpus                                  */
    int32_t setting;      /* MTK_STREAM_COMPUTE_THREADS                   */
    int32_t base_threads; /* the context's setting, the caller's          */
    int32_t set_threads;  /* what the stream last put there; 0: nothing  */
    bool inline_fill;     /* this step's layers come in on the forward's threads */
    int32_t inline_parts; /* that many                                    */
};

double stream_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The calling thread's cpu seconds. */
static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Makes every page of `u` resident in the process: read ahead (a file not
 * in the page cache comes in in large reads), then one read per 64 KiB,
 * the kernel's fault-around window, whose fault maps the whole window (or
 * the page cache's large folio).  Measured per 64 MiB with 4 KiB page-cache
 * pages: 4.4 ms, against 6.5 ms for MADV_POPULATE_READ, which takes each
 * page on its own.  A page left out (a smaller window) is faulted in by the
 * forward.  Safe to run on two threads at once.  Its cpu seconds. */
static double bring_in(const stream_unit *u)
{
    double t0 = thread_cpu();
    unsigned char sum = 0;
    for (int32_t i = 0; i < u->nranges; i++) {
        const stream_range *r = &u->ranges[i];
        (void)madvise(r->start, r->length, MADV_WILLNEED);
        volatile const unsigned char *p = r->start;
        for (size_t at = 0; at < r->length; at += STREAM_TOUCH) sum ^= p[at];
        sum ^= p[r->length - 1];
    }
    (void)sum;
    return thread_cpu() - t0;
}

/* One part of a unit's pages brought in or dropped by the pool's threads
 * (unit_pages): the unit's ranges as one sequence of STREAM_TOUCH
 * windows, split in near-equal parts. */
typedef struct pages_job {
    const stream_unit *u;
    bool drop;
    double cpu[64]; /* each part's cpu seconds */
} pages_job;

static void pages_part(int64_t begin, int64_t end, int32_t part, void *user)
{
    pages_job *job = user;
    double t0 = thread_cpu();
    unsigned char sum = 0;
    int64_t base = 0;
    for (int32_t i = 0; i < job->u->nranges && base < end; i++) {
        const stream_range *r = &job->u->ranges[i];
        int64_t n = (int64_t)((r->length + STREAM_TOUCH - 1) / STREAM_TOUCH);
        int64_t k0 = begin > base ? begin - base : 0, k1 = end - base < n ? end - base : n;
        base += n;
        if (k0 >= k1) continue;
        size_t from = (size_t)k0 * STREAM_TOUCH, to = (size_t)k1 * STREAM_TOUCH;
        to = to < r->length ? to : r->length;
        unsigned char *p = (unsigned char *)r->start;
        if (job->drop) {
            (void)madvise(p + from, to - from, MADV_DONTNEED);
            continue;
        }
        (void)madvise(p + from, to - from, MADV_WILLNEED);
        volatile const unsigned char *v = p;
        for (size_t at = from; at < to; at += STREAM_TOUCH) sum ^= v[at];
        sum ^= v[to - 1];
    }
    (void)sum;
    job->cpu[part] = thread_cpu() - t0;
}

/* bring_in (drop: release) of `u` on `parts` of the pool's threads; the
 * cpu seconds of all. */
static double unit_pages(const stream_unit *u, bool drop, int32_t parts)
{
    pages_job job = { .u = u, .drop = drop };
    int64_t windows = 0;
    for (int32_t i = 0; i < u->nranges; i++)
        windows += (int64_t)((u->ranges[i].length + STREAM_TOUCH - 1) / STREAM_TOUCH);
    parts = parts < 1 ? 1 : parts > 64 ? 64 : parts;
    mtk_parallel_range(windows, parts, pages_part, &job);
    double cpu = 0;
    for (int32_t k = 0; k < parts; k++) cpu += job.cpu[k];
    return cpu;
}

/* Drops `u`'s pages from the process; the page cache keeps them.  Its cpu
 * seconds. */
static double release(const stream_unit *u)
{
    double t0 = thread_cpu();
    for (int32_t i = 0; i < u->nranges; i++) (void)madvise(u->ranges[i].start, u->ranges[i].length, MADV_DONTNEED);
    return thread_cpu() - t0;
}

/* Whether unit i goes through a slot. */
static bool reads_unit(const mtk_stream *s, int32_t i)
{
    return s->reads && s->stats.releases && !s->units[i].kept;
}

/* With the lock held: a slot for unit i (none in use by a forward, free
 * or holding a filled unit not running), or -1. */
static int32_t pick_slot(mtk_stream *s)
{
    int32_t best = -1;
    for (int32_t k = 0; k < s->nslots; k++) {
        const stream_slot *sl = &s->slots[k];
        if (sl->in_use || (sl->unit >= 0 && !sl->filled)) continue;
        if (sl->unit < 0) return k;
        best = k;
    }
    return best;
}

/* With the lock held: marks slot k's fill `gen` complete (once, by
 * whichever thread gets here first, and not when the slot has moved on
 * while this thread was away: the unit ran and left it). */
static void fill_done(mtk_stream *s, int32_t k, int32_t i, uint32_t gen)
{
    if (s->slots[k].filled || s->slots[k].gen != gen) return;
    s->slots[k].filled = true;
    s->state[i].ready = true;
    s->stats.brought_in++;
}

/* stream_slot_fill on several of the pool's threads (slot_fill_on). */
typedef struct slot_job {
    stream_slot *slot;
    const stream_unit *u;
    uint32_t gen;
    double cpu[64];
} slot_job;

static void slot_part(int64_t begin, int64_t end, int32_t part, void *user)
{
    (void)begin;
    (void)end;
    slot_job *job = user;
    job->cpu[part] = stream_slot_fill(job->slot, job->u, job->gen);
}

/* Reads the chunks of `slot`'s fill `gen` left to claim on `parts` of the
 * pool's threads; their cpu seconds. */
static double slot_fill_on(stream_slot *slot, const stream_unit *u, uint32_t gen, int32_t parts)
{
    if (parts <= 1) return stream_slot_fill(slot, u, gen);
    slot_job job = { .slot = slot, .u = u, .gen = gen };
    parts = parts > 64 ? 64 : parts;
    mtk_parallel_range(parts, parts, slot_part, &job);
    double cpu = 0;
    for (int32_t k = 0; k < parts; k++) cpu += job.cpu[k];
    return cpu;
}

/* With the lock held (released while reading): reads unit i into a slot,
 * or, when another thread is reading it already (`help`), reads its
 * remaining chunks alongside; returns when every chunk is in.  The
 * forward's thread spins (yielding) for a slot or for the other thread's
 * last chunk, never sleeps. */
static void fill_unit(mtk_stream *s, int32_t i, bool help)
{
    int32_t k = s->state[i].slot;
    if (k < 0) {
        if (help && s->requested == i) s->requested = -1; /* not started: do it here */
        while ((k = pick_slot(s)) < 0 && s->has_thread) {
            pthread_mutex_unlock(&s->lock);
            sched_yield();
            pthread_mutex_lock(&s->lock);
        }
        stream_slot *sl = &s->slots[k];
        if (sl->unit >= 0) { /* a unit filled and not run: read again when needed */
            s->state[sl->unit].ready = false;
            s->state[sl->unit].slot = -1;
        }
        sl->unit = i;
        sl->filled = false;
        sl->gen++;
        atomic_store(&sl->next, (uint64_t)sl->gen << 32);
        atomic_store(&sl->done, 0);
        s->state[i].slot = k;
        if (s->nhelpers > 0) {
            s->fills_begun++;
            s->fill_slot = k;
            s->fill_unit = i;
            s->fill_gen = sl->gen;
            pthread_cond_broadcast(&s->announce);
        }
    }
    stream_slot *sl = &s->slots[k];
    const stream_unit *u = &s->units[i];
    uint32_t gen = sl->gen;
    int32_t parts = help && s->inline_fill ? s->inline_parts : 1; /* the forward's threads, inline */
    if (s->has_thread) pthread_mutex_unlock(&s->lock);
    double cpu = slot_fill_on(sl, u, gen, parts);
    while (atomic_load(&sl->done) < u->nchunks) sched_yield();
    if (s->has_thread) pthread_mutex_lock(&s->lock);
    s->stats.bring_in_seconds += cpu;
    fill_done(s, k, i, gen);
}

/* A reader thread: reads chunks of each fill announced, until stop. */
static void *reader_main(void *arg)
{
    mtk_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    uint32_t seen = s->fills_begun;
    for (;;) {
        while (!s->stop && seen == s->fills_begun) pthread_cond_wait(&s->announce, &s->lock);
        if (s->stop) break;
        seen = s->fills_begun;
        int32_t k = s->fill_slot, i = s->fill_unit;
        uint32_t gen = s->fill_gen;
        pthread_mutex_unlock(&s->lock);
        double cpu = stream_slot_fill(&s->slots[k], &s->units[i], gen); /* nothing when it is over */
        pthread_mutex_lock(&s->lock);
        s->stats.bring_in_seconds += cpu;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* The thread: queued releases first (so the resident set shrinks before it
 * grows), then the requested bring-in. */
static void *prefetch_main(void *arg)
{
    mtk_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && s->requested < 0 && s->drops == 0) pthread_cond_wait(&s->wake, &s->lock);
        if (s->stop) break;
        for (int32_t i = 0; i < s->count && s->drops > 0; i++) {
            if (!s->state[i].dropping) continue;
            s->state[i].dropping = false;
            s->drops--;
            s->releasing = i;
            pthread_mutex_unlock(&s->lock);
            double cpu = release(&s->units[i]);
            pthread_mutex_lock(&s->lock);
            s->releasing = -1;
            s->stats.release_seconds += cpu;
        }
        int32_t j = s->requested;
        if (j < 0) continue;
        s->requested = -1;
        if (s->state[j].ready) continue;
        if (reads_unit(s, j)) {
            if (s->state[j].slot < 0) fill_unit(s, j, false);
            continue;
        }
        pthread_mutex_unlock(&s->lock);
        double cpu = bring_in(&s->units[j]);
        pthread_mutex_lock(&s->lock);
        s->stats.bring_in_seconds += cpu;
        if (!s->state[j].ready) s->stats.brought_in++; /* the forward's thread did not, alongside */
        if (!s->state[j].dropping) s->state[j].ready = true;
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

/* The unit to bring in while layer `i` runs: the first one after it,
 * cyclically, not resident (a streamed layer since its release, a kept one
 * before its first forward), looking past kept layers only: never beyond
 * the next streamed layer, which would hold a third one.  -1: none. */
static int32_t next_needed(const mtk_stream *s, int32_t i)
{
    for (int32_t k = 1; k < s->count; k++) {
        int32_t j = (i + k) % s->count;
        if (!s->state[j].ready) return j;
        if (!s->units[j].kept) return -1;
    }
    return -1;
}

/* With the lock held: drops here what the thread has not dropped yet (a
 * thread without cpu time must not let the resident set grow). */
static void drop_pending(mtk_stream *s)
{
    for (int32_t k = 0; k < s->count; k++) {
        if (!s->state[k].dropping && s->releasing != k) continue;
        if (s->state[k].dropping) s->drops--;
        s->state[k].dropping = false;
        s->stats.release_seconds += release(&s->units[k]);
    }
}

/* With the lock held, before a layer's forward: the plan of the step
 * whose hidden states `io` brings (stream_step_plan_for), its threads put
 * in the context until the next layer's call (so the step's lm_head runs
 * on them too) or mtk_stream_free.  A setting found there that the stream did not
 * put is the caller's and becomes the base. */
static void step_threads(mtk_stream *s, const mtk_module_io *io)
{
    int64_t rows = stream_io_rows(io);
    if (rows < 1) return;
    int32_t now = mtk_ctx_num_threads(s->ctx);
    if (s->set_threads == 0 || now != s->set_threads) s->base_threads = now;
    stream_step_plan plan = { s->base_threads, false };
    if (s->shares) plan = stream_step_plan_for(s->base_threads, s->cores, rows, s->setting);
    int32_t want = plan.threads;
    s->inline_fill = plan.inline_fill;
    s->inline_parts = want;
    if (want != now) mtk_ctx_set_num_threads(s->ctx, want);
    s->set_threads = want;
    if (rows <= STREAM_FEW_ROWS) {
        s->stats.decode_threads = want;
        s->stats.decode_calls++;
        s->stats.decode_inline = plan.inline_fill;
    } else {
        s->stats.prefill_threads = want;
    }
}

/* Before layer i: bring it in unless it is ready (the thread's work, or a
 * kept layer; when the thread is behind, pending drops first), then ask
 * the thread for the next layer not resident.  After a
 * streamed layer: queue its release (the thread's, or here without one). */
static bool on_call(void *user, mtk_module *m, const mtk_module_io *io, bool after)
{
    mtk_stream *s = user;
    bool ok = true;
    if (s->previous_hook) ok = s->previous_hook(s->previous_user, m, io, after);
    int32_t i = unit_of(s, m);
    if (i < 0) return ok;
    bool streamed = s->stats.releases && !s->units[i].kept;
    if (s->has_thread) pthread_mutex_lock(&s->lock);
    if (after && streamed && reads_unit(s, i) && s->state[i].slot >= 0) { /* back to the mapping; slot free */
        stream_unit_point(&s->units[i], NULL, false);
        stream_slot *sl = &s->slots[s->state[i].slot];
        sl->in_use = sl->filled = false;
        sl->unit = -1;
        sl->gen++; /* a thread still finishing this fill must not mark it */
        s->state[i].slot = -1;
        s->state[i].ready = false;
        if (s->has_thread) pthread_mutex_unlock(&s->lock);
        return ok;
    }
    if (after) {
        if (streamed && s->inline_fill) {
            s->state[i].ready = false;
            s->stats.release_seconds += unit_pages(&s->units[i], true, s->inline_parts);
        } else if (streamed && s->has_thread) {
            s->state[i].ready = false;
            if (!s->state[i].dropping) s->drops++;
            s->state[i].dropping = true;
            pthread_cond_signal(&s->wake);
        } else if (streamed) {
            s->state[i].ready = false;
            s->stats.release_seconds += release(&s->units[i]);
        }
        if (s->has_thread) pthread_mutex_unlock(&s->lock);
        return ok;
    }
    double t0 = stream_now();
    s->stats.layer_calls++;
    step_threads(s, io);
    if (s->state[i].dropping) { /* not dropped yet: keep it */
        s->state[i].dropping = false;
        s->drops--;
    }
    bool ready = s->state[i].ready;
    if (ready) s->stats.prefetched++;
    if (streamed && reads_unit(s, i)) {
        if (!ready) fill_unit(s, i, true);
        stream_slot *sl = &s->slots[s->state[i].slot];
        sl->in_use = true;
        stream_unit_point(&s->units[i], sl, true);
        ready = true;
    }
    if (s->requested == i) s->requested = -1; /* not started: do it here */
    if (!ready && s->has_thread) drop_pending(s);
    if (s->has_thread) pthread_mutex_unlock(&s->lock);
    double cpu = ready ? 0.0 : s->inline_fill ? unit_pages(&s->units[i], false, s->inline_parts) : bring_in(&s->units[i]);
    if (s->has_thread) pthread_mutex_lock(&s->lock);
    if (!ready) {
        s->stats.bring_in_seconds += cpu;
        if (!s->state[i].ready) s->stats.brought_in++; /* the thread did not, alongside */
        s->state[i].ready = true;
    }
    if (s->has_thread && !s->inline_fill) {
        int32_t j = next_needed(s, i);
        if (j >= 0 && !s->state[j].ready) {
            s->requested = j;
            pthread_cond_signal(&s->wake);
        }
    }
    s->stats.wait_seconds += stream_now() - t0;
    if (s->has_thread) pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Marks the units the budget keeps resident: the first ones that fit
 * beside the outside tensors and the streamed slots (two with prefetch,
 * one without) of the largest layer. */
static int32_t keep_units(stream_unit *units, int32_t count, const mtk_stream_stats *st)
{
    if (!st->releases) {
        for (int32_t i = 0; i < count; i++) units[i].kept = true;
        return count;
    }
    uint64_t used = st->fixed_bytes + (st->prefetch ? 2 : 1) * st->layer_bytes;
    int32_t kept = 0;
    for (int32_t i = 0; i < count && used <= st->budget; i++) {
        if (units[i].bytes > st->budget - used) break;
        used += units[i].bytes;
        units[i].kept = true;
        kept++;
    }
    return kept;
}

/* The descriptor of the file whose mapping is `mapping`, or -1. */
static int fd_of(void *user, const mtk_storage *mapping)
{
    const mtk_stream *s = user;
    for (int32_t i = 0; i < s->nfiles; i++)
        if (s->files[i].mapping == mapping) return s->files[i].fd;
    return -1;
}

/* Picks the fill of the streamed units and makes the slots of a read
 * fill.  MTK_STREAM_FILL=read or map decides; otherwise the first
 * streamed unit is brought in both ways, one after the other (never both
 * resident: a budget of one layer holds either), and the cheaper in cpu
 * seconds wins, the read by READ_OVER_MAP.  False: out of memory. */
static bool pick_fill(mtk_stream *s)
{
    int32_t first = -1;
    size_t slot_bytes = 0;
    for (int32_t i = 0; i < s->count; i++) {
        stream_unit *u = &s->units[i];
        if (u->kept) continue;
        if (!stream_unit_pieces(s->ctx, u, fd_of, s)) return false;
        if (u->npieces == 0 && u->nranges > 0) return true; /* a unit cannot be read: the mapping */
        if (first < 0) first = i;
        slot_bytes = u->slot_bytes > slot_bytes ? u->slot_bytes : slot_bytes;
    }
    if (first < 0 || slot_bytes == 0) return true;
    const char *env = getenv("MTK_STREAM_FILL");
    if (env && strcmp(env, "map") == 0) return true;
    bool probe = !env || strcmp(env, "read") != 0;
    double map = probe ? bring_in(&s->units[first]) + release(&s->units[first]) : 0.0; /* before the slots */
    s->nslots = s->stats.prefetch && s->count > 1 ? 2 : 1;
    for (int32_t k = 0; k < s->nslots; k++)
        if (!stream_slot_init(s->ctx, &s->slots[k], slot_bytes)) return false;
    s->reads = true;
    if (!probe) return true;
    stream_slot *sl = &s->slots[0];
    sl->unit = first;
    double read = stream_slot_fill(sl, &s->units[first], 0);
    *sl = (stream_slot){ .data = sl->data, .size = sl->size, .storage = sl->storage, .unit = -1 };
    s->stats.map_probe_seconds = map;
    s->stats.read_probe_seconds = read;
    if (read <= READ_OVER_MAP * map) return true;
    for (int32_t k = 0; k < s->nslots; k++) stream_slot_fini(&s->slots[k]);
    s->nslots = 0;
    s->reads = false;
    return true;
}

mtk_stream *stream_start(mtk_ctx *ctx, stream_unit *units, int32_t count, const mtk_stream_stats *stats,
                         stream_file *files, int32_t nfiles)
{
    mtk_stream *s = calloc(1, sizeof *s);
    unit_state *state = calloc((size_t)(count ? count : 1), sizeof *state);
    if (!s || !state) {
        free(s);
        free(state);
        for (int32_t i = 0; i < nfiles; i++) close(files[i].fd);
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "stream: out of memory");
        return NULL;
    }
    s->ctx = ctx;
    s->units = units;
    s->state = state;
    s->count = count;
    s->files = files;
    s->nfiles = nfiles;
    s->stats = *stats;
    s->stats.kept_layers = keep_units(units, count, &s->stats);
    s->requested = s->releasing = -1;
    for (int32_t i = 0; i < count; i++) state[i].slot = -1;
    for (int32_t k = 0; k < 2; k++) s->slots[k].unit = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->announce, NULL);
    if (s->stats.releases && !pick_fill(s)) {
        mtk_stream_free(s);
        return NULL;
    }
    s->stats.fill = s->reads ? "read" : "map";
    if (stats->prefetch && count > 1) {
        int rc = pthread_create(&s->thread, NULL, prefetch_main, s);
        if (rc != 0) {
            mtk_error(ctx, MTK_ERR_IO, "stream: cannot start the prefetch thread: %s", strerror(rc));
            mtk_stream_free(s);
            return NULL;
        }
        s->has_thread = true;
        const char *env = getenv("MTK_STREAM_READERS");
        int32_t readers = env ? atoi(env) : 1;
        readers = readers < 1 ? 1 : readers > STREAM_MAX_READERS ? STREAM_MAX_READERS : readers;
        for (int32_t h = 0; s->reads && h < readers - 1; h++) {
            if (pthread_create(&s->helpers[h], NULL, reader_main, s) != 0) break; /* fewer readers */
            s->nhelpers++;
        }
        pthread_mutex_lock(&s->lock);
        s->requested = 0; /* the first layer, while the embeddings run */
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
    }
    s->stats.prefetch = s->has_thread;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s->cores = cores < 1 ? 1 : cores > 1024 ? 1024 : (int32_t)cores;
    s->setting = stream_threads_setting(getenv("MTK_STREAM_COMPUTE_THREADS"));
    s->shares = s->stats.releases && s->stats.kept_layers < count; /* streamed layers */
    s->previous_hook = mtk_ctx_module_hook(ctx, &s->previous_user);
    mtk_ctx_set_module_hook(ctx, on_call, s);
    return s;
}

void mtk_stream_get_stats(const mtk_stream *s, mtk_stream_stats *out)
{
    if (!s || !out) return;
    /* the thread adds its seconds under the lock: a copy under it too */
    mtk_stream *w = (mtk_stream *)s;
    if (w->has_thread) pthread_mutex_lock(&w->lock);
    *out = s->stats;
    if (w->has_thread) pthread_mutex_unlock(&w->lock);
}

void mtk_stream_free(mtk_stream *s)
{
    if (!s) return;
    void *user;
    if (mtk_ctx_module_hook(s->ctx, &user) == on_call && user == s)
        mtk_ctx_set_module_hook(s->ctx, s->previous_hook, s->previous_user);
    if (s->set_threads > 0 && mtk_ctx_num_threads(s->ctx) == s->set_threads) /* the caller's setting back */
        mtk_ctx_set_num_threads(s->ctx, s->base_threads);
    if (s->has_thread) {
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_signal(&s->wake);
        pthread_cond_broadcast(&s->announce);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        for (int32_t h = 0; h < s->nhelpers; h++) pthread_join(s->helpers[h], NULL);
    }
    for (int32_t i = 0; i < s->count; i++)
        if (s->state[i].slot >= 0 && s->slots[s->state[i].slot].in_use) stream_unit_point(&s->units[i], NULL, false);
    for (int32_t k = 0; k < s->nslots; k++) stream_slot_fini(&s->slots[k]);
    for (int32_t i = 0; i < s->nfiles; i++) close(s->files[i].fd);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->announce);
    pthread_mutex_destroy(&s->lock);
    free(s->state);
    free(s);
}
