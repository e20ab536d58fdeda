/* The thread count of the conv family's cpu kernels and its parallel-for
 * (a thin layer over core/parallel.c). */
#include "ops/conv.h"
#include "mtk/ops/conv.h"
#include "core/parallel.h"

#include <stdatomic.h>

static atomic_int requested_threads; /* 0: the online cores */

void mtk_conv_set_num_threads(int32_t n) { atomic_store(&requested_threads, n > 0 ? n : 0); }

int32_t mtk_conv_num_threads(void) { return mtk_parallel_threads(atomic_load(&requested_threads)); }

int32_t mtk_conv_workers(int64_t ntasks)
{
    int32_t n = mtk_conv_num_threads();
    if (ntasks < n) n = ntasks > 0 ? (int32_t)ntasks : 1;
    return n;
}

void mtk_conv_parallel_for(int64_t ntasks, int32_t workers, mtk_conv_task task, void *user)
{
    mtk_parallel_tasks(ntasks, workers, task, user);
}
