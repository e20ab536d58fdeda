/* The thread-count setting of the reduce family's cpu kernels and its
 * range split (a thin layer over core/parallel.c). */
#include "ops/reduce_kernel.h"
#include "mtk/ops/reduce.h"
#include "core/parallel.h"

#include <stdatomic.h>

int32_t red_num_threads(void) { return mtk_parallel_threads(0); }

void red_parallel(int64_t n, int32_t nthreads, red_task_fn fn, void *user)
{
    mtk_parallel_range(n, nthreads, fn, user);
}
