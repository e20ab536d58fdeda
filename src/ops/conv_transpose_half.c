/* Float16 and bfloat16 transposed convolutions on cpu, rounded where
 * torch 2.13's slow kernels (slow_conv_transpose2d / 3d, with oneDNN off
 * as the oracle runs torch) round, so that mtk's values are torch's bit
 * for bit.  Per (batch, group) block those kernels
 *
 *   1. compute the columns, col (og*K x L) = W_g^T (og*K x cg) @ x (cg x L),
 *      with cpublas::gemm's reference kernels: every element a float sum
 *      of products (exact in float), rounded once to the half dtype.  The contiguous
 *      layout calls gemm_transb_, which adds the cg products in order; the
 *      channels-last layout calls gemm_notrans_, whose dot product keeps
 *      four partial sums (product c goes to sum c % 4; products past the
 *      last multiple of 4 go to sum 0) and adds them as ((s0+s1)+s2)+s3;
 *   2. scatter the columns into the zeroed output (col2im / col2vol),
 *      every addition rounded to the half dtype (the output is that
 *      dtype).  Contiguous: column row by column row (oc, kd, kh, kw),
 *      each over the input positions; channels-last: input position by
 *      input position, each over the kernel offsets, all channels at once;
 *   3. add the bias, rounded (output.add_ in the half dtype; store_block
 *      in conv_cpu.c does it).
 *
 * Only 2-D (and 1-D, which torch runs as 2-D) kernels take the
 * channels-last layout; 3-D ones are always contiguous.  Evidence: a
 * float32 emulation of exactly these steps equals torch's cpu output on
 * thousands of random float16/bfloat16 conv_transpose1d/2d/3d calls
 * (layouts, groups, stride, dilation, padding, output_padding, bias);
 * a float32 GEMM in another order, or the contiguous kernel's order on
 * channels-last calls, misses by an ulp or more on a few percent. */
#include "ops/conv.h"
#include "ops/creation.h"
#include "ops/op_util.h"
#include "core/scalar.h"

#include <string.h>

/* ---------------------------------------------------------- one block */

/* x rounded to float16 / bfloat16 */
static float round_half(mtk_dtype dtype, float x)
{
    return dtype == MTK_FLOAT16 ? mtk_f16_to_f32(mtk_f32_to_f16(x)) : mtk_bf16_to_f32(mtk_f32_to_bf16(x));
}

size_t mtk_conv_transposed_half_scratch(const mtk_conv_plan *p)
{
    int64_t rows = p->out_channels / p->groups * p->kernel[0] * p->kernel[1] * p->kernel[2];
    int64_t in_vol = p->in_size[0] * p->in_size[1] * p->in_size[2];
    return (size_t)((rows + 4) * in_vol);
}

/* col (rows x L) = W^T (rows x cg) @ x (cg x L), w (cg x rows), each
 * element a float sum of exact products.  In order c = 0, 1, ...
 * (gemm_transb_), or with `four_sums` as gemm_notrans_'s dot product:
 * product c into partial sum c % 4 (c past the last multiple of 4 into
 * sum 0), then ((s0 + s1) + s2) + s3.  Row by row, so that a row's sums
 * stay in cache while the input streams by; `sums` holds 4 rows of L. */
static void columns(int64_t cg, int64_t rows, int64_t in_vol, const float *w, const float *x, bool four_sums,
                    float *col, float *sums)
{
    int64_t main_end = four_sums ? cg - cg % 4 : 0;
    for (int64_t r = 0; r < rows; r++) {
        float *dst = col + r * in_vol;
        float *acc = four_sums ? sums : dst;
        memset(acc, 0, (size_t)((four_sums ? 4 : 1) * in_vol) * sizeof *acc);
        for (int64_t c = 0; c < cg; c++) {
            float *s = acc + (c < main_end ? c % 4 : 0) * in_vol;
            float wv = w[c * rows + r];
            const float *src = x + c * in_vol;
            for (int64_t l = 0; l < in_vol; l++) s[l] += wv * src[l];
        }
        if (four_sums)
            for (int64_t l = 0; l < in_vol; l++)
                dst[l] = ((sums[l] + sums[in_vol + l]) + sums[2 * in_vol + l]) + sums[3 * in_vol + l];
    }
}

/* The output position of input position i and kernel offset k along
 * spatial dim d, or -1 outside the output. */
static int64_t out_pos(const mtk_conv_plan *p, int d, int64_t i, int64_t k)
{
    int64_t o = i * p->stride[d] - p->pad[d] + k * p->dilation[d];
    return o >= 0 && o < p->out_size[d] ? o : -1;
}

/* col2im / col2vol, column row by column row (the contiguous kernels). */
static void scatter_by_row(const mtk_conv_plan *p, mtk_dtype half, int64_t og, const float *col, float *out)
{
    const int64_t *is = p->in_size, *os = p->out_size, *k = p->kernel;
    int64_t in_vol = is[0] * is[1] * is[2];
    const float *row = col;
    for (int64_t oc = 0; oc < og; oc++)
        for (int64_t kd = 0; kd < k[0]; kd++)
            for (int64_t kh = 0; kh < k[1]; kh++)
                for (int64_t kw = 0; kw < k[2]; kw++, row += in_vol)
                    for (int64_t id = 0; id < is[0]; id++) {
                        int64_t od = out_pos(p, 0, id, kd);
                        for (int64_t ih = 0; od >= 0 && ih < is[1]; ih++) {
                            int64_t oh = out_pos(p, 1, ih, kh);
                            if (oh < 0) continue;
                            float *dst = out + ((oc * os[0] + od) * os[1] + oh) * os[2];
                            const float *src = row + (id * is[1] + ih) * is[2];
                            for (int64_t iw = 0; iw < is[2]; iw++) {
                                int64_t ow = out_pos(p, 2, iw, kw);
                                if (ow >= 0) dst[ow] = round_half(half, dst[ow] + src[iw]);
                            }
                        }
                    }
}

/* col2im input position by input position, each over the kernel
 * offsets and then the channels (the channels-last kernel). */
static void scatter_by_position(const mtk_conv_plan *p, mtk_dtype half, int64_t og, const float *col, float *out)
{
    const int64_t *is = p->in_size, *os = p->out_size, *k = p->kernel;
    int64_t in_vol = is[0] * is[1] * is[2], kvol = k[0] * k[1] * k[2], out_vol = os[0] * os[1] * os[2];
    for (int64_t l = 0; l < in_vol; l++) {
        int64_t id = l / (is[1] * is[2]), ih = l / is[2] % is[1], iw = l % is[2];
        for (int64_t kd = 0; kd < k[0]; kd++)
            for (int64_t kh = 0; kh < k[1]; kh++)
                for (int64_t kw = 0; kw < k[2]; kw++) {
                    int64_t od = out_pos(p, 0, id, kd), oh = out_pos(p, 1, ih, kh), ow = out_pos(p, 2, iw, kw);
                    if (od < 0 || oh < 0 || ow < 0) continue;
                    int64_t at = (od * os[1] + oh) * os[2] + ow, r = (kd * k[1] + kh) * k[2] + kw;
                    for (int64_t oc = 0; oc < og; oc++)
                        out[oc * out_vol + at] = round_half(half, out[oc * out_vol + at] + col[(oc * kvol + r) * in_vol + l]);
                }
    }
}

void mtk_conv_transposed_half_block(const mtk_conv_plan *p, mtk_dtype half, bool channels_last, const float *x,
                                    const float *w, float *scratch, float *out)
{
    int64_t cg = p->in_channels / p->groups, og = p->out_channels / p->groups;
    int64_t rows = og * p->kernel[0] * p->kernel[1] * p->kernel[2];
    int64_t in_vol = p->in_size[0] * p->in_size[1] * p->in_size[2];
    int64_t out_vol = p->out_size[0] * p->out_size[1] * p->out_size[2];
    float *col = scratch; /* (og*K, L), then 4 rows of partial sums */
    columns(cg, rows, in_vol, w, x, channels_last, col, col + rows * in_vol);
    for (int64_t i = 0; i < rows * in_vol; i++) col[i] = round_half(half, col[i]);
    memset(out, 0, (size_t)(og * out_vol) * sizeof *out);
    if (channels_last) scatter_by_position(p, half, og, col, out);
    else scatter_by_row(p, half, og, col, out);
}
