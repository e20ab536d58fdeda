/* The thread-count setting of the reduce family's cpu kernels and its
 * range split (a thin layer over core/parallel.c). */
#include "ops/reduce_kernel.h"
#include "mtk/ops/reduce.h"
#include "core/parallel.h"

#include <stdatomic.h>

static atomic_int configured_threads; /* 0: online cores */

void mtk_reduce_set_num_threads(int32_t n) { atomic_store(&configured_threads, n > 0 ? n : 0); }

int32_t red_num_threads(void) { return mtk_parallel_threads(atomic_load(&configured_threads)); }

int32_t mtk_reduce_num_threads(void) { return red_num_threads(); }

void red_parallel(int64_t n, int32_t nthreads, red_task_fn fn, void *user)
{
    mtk_parallel_range(n, nthreads, fn, user);
}
