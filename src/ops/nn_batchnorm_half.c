/* batch_norm's cpu arithmetic for float16 and bfloat16 inputs, bit for
 * bit as torch 2.13's dense cpu kernels compute it (checked against
 * torch on about 5,000 random float16/bfloat16 cases, training and eval).
 *
 * Statistics (training).  Sums run in float.  torch's "plane" kernel (x
 * contiguous, more than one element per (sample, channel)) walks each
 * sample's plane in blocks of 16 elements that feed 8 float lanes (lane
 * k takes elements k and 8 + k of a block), leftovers go to a scalar
 * accumulator, and the lanes are added to it in order at the end; the
 * variance sum does the same with (x - mean)^2 about the float mean,
 * products rounded before adding.  Its channels-last kernel (every other
 * dense layout, and contiguous inputs with one element per plane) splits
 * the rows into `threads` equal chunks, sums each chunk in order and
 * adds the chunk sums; its variance uses fused multiply-adds about the
 * mean as stored (rounded to bfloat16 for bfloat16 parameters).
 *
 * With bfloat16 parameters the mean and the variance sum are stored in
 * bfloat16, the variance is their bfloat16 quotient by the count (itself
 * rounded to bfloat16) and invstd = 1 / sqrt(var + eps), computed in
 * double, is stored in bfloat16.  With float16 parameters everything
 * stays float until mean and invstd are stored in float16.  With float
 * parameters they stay float.
 *
 * Transform: alpha = invstd * weight and beta = bias - mean * alpha in
 * float (one fused multiply-add for beta, except float16 parameters: two
 * roundings); y = fma(x, alpha, beta) rounded to the dtype. */
#include "ops/nn_batchnorm_half.h"
#include "ops/nn.h"

#include <math.h>

/* lanes[0] + lanes[1] + ... in order, in float */
static float lane_total(const float *lanes)
{
    float total = lanes[0];
    for (int k = 1; k < 8; k++) total += lanes[k];
    return total;
}

/* Plane kernel: float sum of group g, or of its squared deviations from
 * `center` when `squares`. */
static float plane_sum(const bn_half_job *job, int64_t g, bool squares, float center)
{
    int64_t inner = job->inner, body = inner - inner % 16;
    float lanes[8] = { 0 }, rest = 0.0f;
    for (int64_t o = 0; o < job->outer; o++) {
        const double *v = job->values + (o * job->groups + g) * inner;
        int64_t d = 0;
        for (; d < body; d += 16)
            for (int64_t k = 0; k < 16; k++) {
                float x = (float)v[d + k];
                if (squares) {
                    float dev = x - center, sq = dev * dev;
                    lanes[k % 8] += sq;
                } else {
                    lanes[k % 8] += x;
                }
            }
        for (; d < inner; d++) {
            float x = (float)v[d];
            if (squares) {
                float dev = x - center, sq = dev * dev;
                rest += sq;
            } else {
                rest += x;
            }
        }
    }
    return rest + lane_total(lanes);
}

/* Channels-last kernel: group g's rows (o, i) in order, split into
 * `threads` chunks summed separately, then added. */
static float chunked_sum(const bn_half_job *job, int64_t g, bool squares, float center)
{
    int64_t count = job->outer * job->inner;
    int64_t parts = job->threads > 1 ? job->threads : 1;
    if (parts > count) parts = count;
    int64_t chunk = (count + parts - 1) / parts;
    float total = 0.0f;
    for (int64_t p = 0; p < parts; p++) {
        float part = 0.0f;
        int64_t end = (p + 1) * chunk < count ? (p + 1) * chunk : count;
        for (int64_t r = p * chunk; r < end; r++) {
            int64_t o = r / job->inner, i = r % job->inner;
            float x = (float)job->values[(o * job->groups + g) * job->inner + i];
            if (squares) {
                float dev = x - center;
                part = fmaf(dev, dev, part);
            } else {
                part += x;
            }
        }
        total += part;
    }
    return total;
}

typedef struct stats_task {
    const bn_half_job *job;
    double *mean, *invstd;
} stats_task;

static void batch_stats_range(int64_t begin, int64_t end, void *user)
{
    const stats_task *t = user;
    const bn_half_job *job = t->job;
    bool bf16 = job->dtype == MTK_BFLOAT16 && !job->mixed;
    int64_t count = job->outer * job->inner;
    for (int64_t g = begin; g < end; g++) {
        float mean, var_sum;
        if (job->plane_kernel) {
            mean = plane_sum(job, g, false, 0.0f) / (float)count;
            var_sum = plane_sum(job, g, true, mean);
            if (bf16) mean = (float)nn_rounded(MTK_BFLOAT16, mean);
        } else {
            mean = chunked_sum(job, g, false, 0.0f) / (float)count;
            if (bf16) mean = (float)nn_rounded(MTK_BFLOAT16, mean);
            var_sum = chunked_sum(job, g, true, mean);
        }
        float var;
        if (bf16) {
            float stored = (float)nn_rounded(MTK_BFLOAT16, var_sum);
            var = (float)nn_rounded(MTK_BFLOAT16, stored / (float)nn_rounded(MTK_BFLOAT16, (double)count));
        } else {
            var = var_sum / (float)count;
        }
        float invstd = var != 0.0f || job->eps != 0.0 ? (float)(1.0 / sqrt((double)var + job->eps)) : 0.0f;
        t->mean[g] = mean;
        t->invstd[g] = invstd;
        if (!job->mixed) {
            t->mean[g] = nn_rounded(job->dtype, t->mean[g]);
            t->invstd[g] = nn_rounded(job->dtype, t->invstd[g]);
        }
    }
}

void nn_bn_half_batch_stats(const bn_half_job *job, double *mean, double *invstd)
{
    stats_task t = { job, mean, invstd };
    nn_parallel(job->groups, 1 + 4096 / (job->outer * job->inner + 1), batch_stats_range, &t);
}

void nn_bn_half_running_stats(const bn_half_job *job, double *mean, double *invstd)
{
    for (int64_t g = 0; g < job->groups; g++) {
        int64_t c = g % job->channels;
        mean[g] = (float)job->running_mean[c];
        invstd[g] = 1.0f / sqrtf((float)job->running_var[c] + (float)job->eps);
    }
}

typedef struct transform_task {
    const bn_half_job *job;
    const double *mean, *invstd;
} transform_task;

static void transform_range(int64_t begin, int64_t end, void *user)
{
    const transform_task *t = user;
    const bn_half_job *job = t->job;
    for (int64_t row = begin; row < end; row++) {
        int64_t g = row % job->groups, c = g % job->channels;
        float mean = (float)t->mean[g];
        float weight = job->weight ? (float)job->weight[c] : 1.0f, bias = job->bias ? (float)job->bias[c] : 0.0f;
        float alpha = (float)t->invstd[g] * weight, beta;
        if (job->mixed || job->dtype == MTK_BFLOAT16) {
            beta = fmaf(-mean, alpha, bias);
        } else {
            float shift = mean * alpha;
            beta = bias - shift;
        }
        double *v = job->values + row * job->inner;
        for (int64_t i = 0; i < job->inner; i++) v[i] = fmaf((float)v[i], alpha, beta);
    }
}

void nn_bn_half_transform(const bn_half_job *job, const double *mean, const double *invstd)
{
    transform_task t = { job, mean, invstd };
    nn_parallel(job->outer * job->groups, 1 + 4096 / (job->inner + 1), transform_range, &t);
}
