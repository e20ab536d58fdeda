/* batch_norm's cpu arithmetic for float16 / bfloat16 inputs, rounding as
 * torch's cpu kernels do (see nn_batchnorm_half.c). */
#ifndef MTK_OPS_NN_BATCHNORM_HALF_H
#define MTK_OPS_NN_BATCHNORM_HALF_H

#include "mtk/core.h"

#include <stdbool.h>
#include <stdint.h>

/* One batch_norm over x viewed as (outer, groups, inner); weight, bias,
 * running mean and var (NULL when absent) hold one entry per channel,
 * group g taking entry g % channels. */
typedef struct bn_half_job {
    double *values; /* x in logical order; the outputs replace it */
    int64_t outer, groups, inner, channels;
    const double *weight, *bias, *running_mean, *running_var;
    mtk_dtype dtype;    /* the input's: MTK_FLOAT16 or MTK_BFLOAT16    */
    bool mixed;         /* float32 parameters                          */
    bool plane_kernel;  /* torch's contiguous statistics kernel (x
                         * contiguous with inner > 1); else its
                         * channels-last one                          */
    int32_t threads;    /* torch's thread count (channels-last sums)   */
    double eps;
} bn_half_job;

/* Batch statistics of a dense half input as torch's cpu kernel keeps
 * them: mean[g] and invstd[g] (per group) get the values its transform
 * uses (float, or rounded to the input's dtype without mixed
 * parameters). */
void nn_bn_half_batch_stats(const bn_half_job *job, double *mean, double *invstd);

/* Evaluation statistics: mean[g] = running_mean, invstd[g] =
 * 1 / sqrt(running_var + eps) in float, as torch's dense kernel. */
void nn_bn_half_running_stats(const bn_half_job *job, double *mean, double *invstd);

/* The dense kernel's transform y = x * alpha + beta (one fused
 * multiply-add in float) with alpha = invstd * weight and beta = bias -
 * mean * alpha; values end float, to be rounded to the input's dtype. */
void nn_bn_half_transform(const bn_half_job *job, const double *mean, const double *invstd);

#endif
