/* OpenBLAS opened on first use, with a probe for its buffers (blas.h). */
#include "ops/blas.h"
#include "core/parallel.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* What one OpenBLAS thread allocates (its BUFFER_SIZE, 128 MiB on x86-64,
 * plus its page of bookkeeping), with some slack. */
#define BLAS_THREAD_BUFFER (((size_t)128 << 20) + ((size_t)64 << 10))
#define BLAS_MAX_PROBED 256

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, int, float,
                         const float *, int, const float *, int, float, float *, int);
typedef void (*sgemv_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, int, double,
                         const double *, int, const double *, int, double, double *, int);

/* Fortran ABI: the lengths of the character arguments come last. */
typedef void (*dgesvd_fn)(const char *, const char *, const int *, const int *, double *, const int *, double *,
                          double *, const int *, double *, const int *, double *, const int *, int *, size_t, size_t);

static struct {
    pthread_once_t once;
    dgesvd_fn dgesvd;
    void *handle;
    sgemm_fn sgemm;
    sgemv_fn sgemv;
    dgemm_fn dgemm;
    int (*get_threads)(void);
    void (*set_threads)(int);
    mtk_status status;  /* MTK_OK once loaded */
    char message[256];
} blas = { .once = PTHREAD_ONCE_INIT, .status = MTK_ERR_NOT_IMPLEMENTED };

/* The threads OpenBLAS will start: its environment, else the cores. */
static long expected_threads(void)
{
    const char *names[] = { "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS" };
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        if (v && atol(v) > 0) return atol(v);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n;
}

/* Whether `n` thread buffers can be had now (reserved, never touched). */
static bool buffers_fit(long n)
{
    void *held[BLAS_MAX_PROBED];
    long got = 0;
    if (n > BLAS_MAX_PROBED) n = BLAS_MAX_PROBED;
    while (got < n && (held[got] = malloc(BLAS_THREAD_BUFFER)) != NULL) got++;
    for (long i = 0; i < got; i++) free(held[i]);
    return got == n;
}

static void load(void)
{
    long threads = expected_threads();
    if (!buffers_fit(threads)) {
        if (!buffers_fit(1)) {
            blas.status = MTK_ERR_OUT_OF_MEMORY;
            snprintf(blas.message, sizeof blas.message,
                     "out of memory: OpenBLAS needs a buffer of %zu bytes per thread and cannot get one",
                     BLAS_THREAD_BUFFER);
            return;
        }
        /* one thread's buffer fits: start the pool that small */
        if (!getenv("OPENBLAS_NUM_THREADS")) setenv("OPENBLAS_NUM_THREADS", "1", 1);
    }
    static const char *const names[] = { "libopenblas.so.0", "libopenblas.so" };
    for (size_t i = 0; i < sizeof names / sizeof *names && !blas.handle; i++)
        blas.handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!blas.handle) {
        snprintf(blas.message, sizeof blas.message, "cannot load OpenBLAS (libopenblas.so.0): %s", dlerror());
        return;
    }
    blas.sgemm = (sgemm_fn)dlsym(blas.handle, "cblas_sgemm");
    blas.dgemm = (dgemm_fn)dlsym(blas.handle, "cblas_dgemm");
    blas.sgemv = (sgemv_fn)dlsym(blas.handle, "cblas_sgemv");
    blas.get_threads = (int (*)(void))dlsym(blas.handle, "openblas_get_num_threads");
    blas.set_threads = (void (*)(int))dlsym(blas.handle, "openblas_set_num_threads");
    blas.dgesvd = (dgesvd_fn)dlsym(blas.handle, "dgesvd_");
    if (!blas.sgemm || !blas.sgemv || !blas.dgemm || !blas.dgesvd) {
        snprintf(blas.message, sizeof blas.message, "OpenBLAS has no cblas_sgemm, cblas_sgemv, cblas_dgemm or dgesvd_");
        return;
    }
    blas.status = MTK_OK;
}

bool ops_blas_ready(mtk_ctx *ctx)
{
    pthread_once(&blas.once, load);
    if (blas.status == MTK_OK) return true;
    return mtk_error(ctx, blas.status, "%s", blas.message);
}

bool ops_blas_loaded(void) { return blas.status == MTK_OK; }

void ops_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, int n, int k,
               float alpha, const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    mtk_parallel_park(); /* OpenBLAS's threads take the cores */
    blas.sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void ops_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, int m, int n, float alpha, const float *a, int lda,
               const float *x, int incx, float beta, float *y, int incy)
{
    mtk_parallel_park(); /* OpenBLAS's threads take the cores */
    blas.sgemv(order, ta, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

void ops_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, int n, int k,
               double alpha, const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc)
{
    mtk_parallel_park(); /* OpenBLAS's threads take the cores */
    blas.dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void ops_dgesvd(const char *jobu, const char *jobvt, const int *m, const int *n, double *a, const int *lda,
                double *s, double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
                int *info)
{
    blas.dgesvd(jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, info, 1, 1);
}

int ops_blas_threads(void) { return blas.get_threads ? blas.get_threads() : 1; }

void ops_blas_set_threads(int n)
{
    if (blas.set_threads) blas.set_threads(n);
}

/* OpenBLAS runs single-threaded while mtk's own workers each call it
 * (its threads would only queue behind each other, and spin on the cores
 * the workers need); the first of overlapping callers saves the setting,
 * the last restores it (process-wide: a product running beside them
 * meanwhile runs on one thread too). */
static pthread_mutex_t single_lock = PTHREAD_MUTEX_INITIALIZER;
static int single_users, single_saved_threads;

void ops_blas_single_begin(void)
{
    pthread_mutex_lock(&single_lock);
    if (single_users++ == 0) {
        single_saved_threads = ops_blas_threads();
        if (single_saved_threads > 1) ops_blas_set_threads(1);
    }
    pthread_mutex_unlock(&single_lock);
}

void ops_blas_single_end(void)
{
    pthread_mutex_lock(&single_lock);
    if (--single_users == 0 && single_saved_threads > 1) ops_blas_set_threads(single_saved_threads);
    pthread_mutex_unlock(&single_lock);
}
