/* OpenBLAS, bound on first use (src/ops/blas.c).
 *
 * mtk does not link OpenBLAS: OpenBLAS starts its thread pool when it is
 * loaded, so a command that does no matrix product (meta evaluation, a
 * summary, checkpoint I/O) would start BLAS threads for nothing, and under
 * a memory limit (ulimit -v) a worker that cannot get its ~128 MB buffer
 * retries forever and the process never exits.  The cpu ops that multiply
 * matrices call ops_blas_ready() first; it opens the library once, sized
 * to the memory there is. */
#ifndef MTK_OPS_BLAS_H
#define MTK_OPS_BLAS_H

#include "mtk/core.h"

#include <cblas.h>

/* Loads OpenBLAS if it is not loaded (thread-safe, once).  Before loading,
 * it reserves (and frees) the buffers OpenBLAS's threads will ask for:
 * when that fails it starts OpenBLAS on one thread (unless
 * OPENBLAS_NUM_THREADS is set), and when even one buffer cannot be had it
 * fails, as it does when the library cannot be opened: false with
 * MTK_ERR_OUT_OF_MEMORY or MTK_ERR_NOT_IMPLEMENTED on ctx. */
bool ops_blas_ready(mtk_ctx *ctx);

/* Whether a BLAS library was loaded by this process (for tests). */
bool ops_blas_loaded(void);

/* cblas_sgemm / cblas_dgemm of the loaded library (ops_blas_ready first). */
void ops_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, int n, int k,
               float alpha, const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
void ops_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, int n, int k,
               double alpha, const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc);

/* cblas_sgemv of the loaded library (ops_blas_ready first): OpenBLAS
 * 0.3.21's sgemm packs the whole of b even for one row of a. */
void ops_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, int m, int n, float alpha, const float *a, int lda,
               const float *x, int incx, float beta, float *y, int incy);

/* LAPACK's dgesvd (OpenBLAS bundles it), Fortran ABI. */
void ops_dgesvd(const char *jobu, const char *jobvt, const int *m, const int *n, double *a, const int *lda,
                double *s, double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
                int *info);

/* openblas_get_num_threads / openblas_set_num_threads (1 and no-op for a
 * BLAS without them). */
int ops_blas_threads(void);
void ops_blas_set_threads(int n);

/* OpenBLAS on one thread from the first begin to the last end, for
 * kernels whose own workers (mtk's pool) each call it; nests and
 * overlaps across threads. */
void ops_blas_single_begin(void);
void ops_blas_single_end(void);

#endif
