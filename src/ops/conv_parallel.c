/* The thread count of the conv family's cpu kernels and its parallel-for
 * (a thin layer over core/parallel.c). */
#include "ops/conv.h"
#include "mtk/ops/conv.h"
#include "core/parallel.h"

#include <stdatomic.h>

int32_t conv_num_threads(void) { return mtk_parallel_threads(0); }

int32_t mtk_conv_workers(int64_t ntasks)
{
    int32_t n = conv_num_threads();
    if (ntasks < n) n = ntasks > 0 ? (int32_t)ntasks : 1;
    return n;
}

void mtk_conv_parallel_for(int64_t ntasks, int32_t workers, mtk_conv_task task, void *user)
{
    mtk_parallel_tasks(ntasks, workers, task, user);
}
