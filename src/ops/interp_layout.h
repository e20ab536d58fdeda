/* The output layout of F.interpolate (interp_layout.c), shared by
 * interp.c's plan. */
#ifndef MTK_OPS_INTERP_LAYOUT_H
#define MTK_OPS_INTERP_LAYOUT_H

#include "ops/conv.h"

/* The strides torch gives F.interpolate's result on the call's device,
 * for every mode but 'area' (which is adaptive_avg_pool's).  `p` has its
 * mode, spatial, antialias, out_ndim and out_shape set; writes
 * p->out_stride.  On cpu: a fresh tensor in input.suggest_memory_format()
 * (torch's cpu upsample kernels).  On meta: torch's meta functions of the
 * nearest and antialias ops (a fresh tensor in that format), or the
 * replay of its decompositions of the linear and cubic modes (gathers,
 * element-wise arithmetic, .contiguous(format)). */
void mtk_interp_output_strides(const mtk_tensor *input, bool for_cpu, mtk_interp_plan *p);

#endif
