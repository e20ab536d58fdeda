/* What autograd keeps for the nn ops: norms, attention, rope, losses and
 * dropout.  rms_norm and rope are fused ops of mtk that transformers
 * computes as compositions (LlamaRMSNorm: to(float32), pow, mean, add,
 * rsqrt, mul, to(dtype), mul by the weight; apply_rotary_pos_emb with
 * rotate_half); they report what those compositions keep, since that is
 * what torch holds for the models users train. */
#include "ops/autograd.h"
#include "ops/view.h"

#include <string.h>

/* x.shape[:ndim - n] + [1] * n */
static int32_t reduced_shape(const mtk_tensor *x, int32_t n, int64_t *shape)
{
    for (int32_t d = 0; d < x->ndim; d++) shape[d] = d < x->ndim - n ? x->shape[d] : 1;
    return x->ndim;
}

static int32_t list_count(const mtk_autograd_query *q, int32_t arg)
{
    if (arg >= q->nargs) return 1;
    const mtk_value *v = &q->args[arg];
    return v->kind == MTK_VALUE_LIST || v->kind == MTK_VALUE_TUPLE ? v->as.list.count : 1;
}

/* native_layer_norm: input, weight, bias, and its mean and rstd
 * (input.shape[:axis] + [1] * n): in the input's dtype on cpu (unless the
 * weight's dtype differs), float32 for half inputs on cuda. */
enum { LN_INPUT, LN_SHAPE, LN_WEIGHT, LN_BIAS };

/* The dtype and shape of native_layer_norm's mean and rstd; returns the
 * shape's dims. */
static int32_t layer_norm_stats(const mtk_autograd_query *q, const mtk_tensor *x, mtk_dtype *dtype, int64_t *shape)
{
    const mtk_tensor *w = ag_arg(q, LN_WEIGHT);
    bool half = x->dtype == MTK_FLOAT16 || x->dtype == MTK_BFLOAT16;
    *dtype = half && (q->device_kind == MTK_DEVICE_KIND_CUDA || (w && w->dtype != x->dtype)) ? MTK_FLOAT32 : x->dtype;
    return reduced_shape(x, list_count(q, LN_SHAPE), shape);
}

void ag_saved_layer_norm(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    const mtk_tensor *x = ag_arg(q, LN_INPUT);
    if (!x) return;
    ag_save_arg(q, r, LN_INPUT);
    ag_save_arg(q, r, LN_WEIGHT);
    ag_save_arg(q, r, LN_BIAS);
    mtk_dtype stats;
    int64_t shape[MTK_MAX_DIMS];
    int32_t n = layer_norm_stats(q, x, &stats, shape);
    ag_save_new(r, stats, shape, n); /* mean */
    ag_save_new(r, stats, shape, n); /* rstd */
}

/* A gradient per input; without autograd (no_grad), native_layer_norm
 * still makes its mean and rstd beside the output, and layer_norm drops
 * them on return: the forward's workspace. */
void ag_backward_layer_norm(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_backward_grads(q, r);
    const mtk_tensor *x = ag_arg(q, LN_INPUT);
    if (!x || ag_rg(q, LN_INPUT) || ag_rg(q, LN_WEIGHT) || ag_rg(q, LN_BIAS)) return;
    mtk_dtype stats;
    int64_t shape[MTK_MAX_DIMS], numel = 1;
    int32_t n = layer_norm_stats(q, x, &stats, shape);
    for (int32_t d = 0; d < n; d++) numel *= shape[d];
    r->transient_bytes = 2 * numel * (int64_t)mtk_dtype_size(stats);
}

/* LlamaRMSNorm's composition: x in float32 (x itself when it is float32)
 * for pow and mul, rsqrt's result (float32, the normalized dims reduced),
 * and with a weight the normalized x cast back to x's dtype (a new
 * tensor) and the weight.  Without a weight (Gemma's _norm on x.float())
 * the product is the op's output, which its consumer saves. */
void ag_saved_rms_norm(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    enum { INPUT, SHAPE, WEIGHT };
    const mtk_tensor *x = ag_arg(q, INPUT);
    if (!x) return;
    if (x->dtype == MTK_FLOAT32) ag_save_arg(q, r, INPUT);
    else ag_save_new(r, MTK_FLOAT32, x->shape, x->ndim);
    int64_t shape[MTK_MAX_DIMS];
    int32_t n = reduced_shape(x, list_count(q, SHAPE), shape);
    ag_save_new(r, MTK_FLOAT32, shape, n);
    if (ag_arg(q, WEIGHT)) {
        ag_save_new(r, x->dtype, x->shape, x->ndim);
        ag_save_arg(q, r, WEIGHT);
    }
}

/* x * cos + rotate_half(x) * sin: cos and sin for x's gradient (x too
 * when they require grad). */
void ag_saved_rope(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    enum { X, COS, SIN };
    if (ag_rg(q, X)) {
        ag_save_arg(q, r, COS);
        ag_save_arg(q, r, SIN);
    }
    if (ag_rg(q, COS) || ag_rg(q, SIN)) ag_save_arg(q, r, X);
}

/* view_as_complex(x) * freqs_cis: complex mul saves each factor for the
 * other's gradient, freqs_cis (one complex64 storage) for x's. */
void ag_saved_rope_complex(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    enum { X, FREQS };
    if (ag_rg(q, X)) ag_save_arg(q, r, FREQS);
    if (ag_rg(q, FREQS)) ag_save_arg(q, r, X);
}

enum { SDPA_Q, SDPA_K, SDPA_V, SDPA_MASK, SDPA_DROPOUT, SDPA_CAUSAL, SDPA_SCALE, SDPA_GQA };

/* torch 2.13's choice: on cpu the flash kernel for 4-D inputs without
 * dropout (GQA included) whose q, k and v have one head_dim (deepseek's
 * MLA has a smaller v), else math; on cuda flash for half inputs without
 * a mask and one head_dim <= 256, else the efficient kernel without GQA
 * (q and k of one head_dim), else math. */
ag_sdpa_kernel ag_sdpa_kernel_of(const mtk_autograd_query *q)
{
    const mtk_tensor *qt = ag_arg(q, SDPA_Q), *k = ag_arg(q, SDPA_K), *v = ag_arg(q, SDPA_V);
    if (!qt || !k || !v || qt->ndim != 4 || k->ndim != 4 || v->ndim != 4) return AG_SDPA_MATH;
    double dropout = q->nargs > SDPA_DROPOUT ? q->args[SDPA_DROPOUT].as.f : 0.0;
    bool gqa = qt->shape[1] != k->shape[1];
    bool mask = ag_arg(q, SDPA_MASK) != NULL;
    bool qk_dims = qt->shape[3] == k->shape[3], one_dim = qk_dims && v->shape[3] == qt->shape[3];
    if (q->device_kind == MTK_DEVICE_KIND_CPU) return dropout > 0 || !one_dim ? AG_SDPA_MATH : AG_SDPA_FLASH;
    bool half = qt->dtype == MTK_FLOAT16 || qt->dtype == MTK_BFLOAT16;
    if (half && !mask && one_dim && qt->shape[3] <= 256) return AG_SDPA_FLASH;
    if (!gqa && qk_dims && qt->dtype != MTK_FLOAT64) return AG_SDPA_EFFICIENT;
    return AG_SDPA_MATH;
}

/* flash/efficient: q, k, v (and the mask: a bool one as sdpa turns it
 * into an additive one in q's dtype, a new tensor), the output and the logsumexp
 * (B, H, L) float32 (cuda's efficient kernel pads L to a multiple of 32);
 * cuda kernels add their rng seed and offset (0-dim int64).  math: the
 * composition's scaled q and k^T, the softmax (B, H, L, S) and v (heads
 * repeated for GQA). */
void ag_saved_sdpa(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    const mtk_tensor *qt = ag_arg(q, SDPA_Q), *k = ag_arg(q, SDPA_K), *v = ag_arg(q, SDPA_V);
    if (!qt || !k || !v) return;
    ag_sdpa_kernel kernel = ag_sdpa_kernel_of(q);
    if (kernel != AG_SDPA_MATH) {
        ag_save_arg(q, r, SDPA_Q);
        ag_save_arg(q, r, SDPA_K);
        ag_save_arg(q, r, SDPA_V);
        const mtk_tensor *mask = ag_arg(q, SDPA_MASK);
        if (mask && mask->dtype == MTK_BOOL) ag_save_new(r, qt->dtype, mask->shape, mask->ndim);
        else ag_save_arg(q, r, SDPA_MASK);
        ag_save_output(r, 0);
        int64_t L = qt->shape[2];
        if (kernel == AG_SDPA_EFFICIENT) L = (L + 31) / 32 * 32;
        int64_t lse[3] = { qt->shape[0], qt->shape[1], L };
        ag_save_new(r, MTK_FLOAT32, lse, 3);
        if (q->device_kind == MTK_DEVICE_KIND_CUDA) {
            ag_save_new(r, MTK_INT64, NULL, 0);
            ag_save_new(r, MTK_INT64, NULL, 0);
        }
        return;
    }
    /* math: q * sqrt(scale) and (k^T) * sqrt(scale) go to matmul as new
       tensors; the softmax; with dropout its noise and the dropped
       weights; v as bmm takes it (a copy unless it folds to 3 dims) */
    int32_t n = qt->ndim;
    int64_t kshape[MTK_MAX_DIMS], attn[MTK_MAX_DIMS], vshape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    memcpy(kshape, k->shape, (size_t)k->ndim * sizeof *kshape);
    memcpy(vshape, v->shape, (size_t)v->ndim * sizeof *vshape);
    bool repeated = n >= 3 && k->ndim == n && k->shape[n - 3] != qt->shape[n - 3];
    if (repeated) kshape[n - 3] = vshape[n - 3] = qt->shape[n - 3];
    memcpy(attn, qt->shape, (size_t)n * sizeof *attn);
    attn[n - 1] = k->shape[k->ndim - 2];
    /* on cpu, half inputs are computed in float32 (q, k, v converted) */
    bool half = qt->dtype == MTK_FLOAT16 || qt->dtype == MTK_BFLOAT16;
    mtk_dtype acc = half && q->device_kind == MTK_DEVICE_KIND_CPU ? MTK_FLOAT32 : qt->dtype;
    ag_save_new(r, acc, qt->shape, n);              /* q * sqrt(scale)     */
    ag_save_new(r, acc, kshape, k->ndim);           /* k^T * sqrt(scale)   */
    ag_save_new(r, acc, attn, n);                   /* softmax             */
    double dropout = q->nargs > SDPA_DROPOUT ? q->args[SDPA_DROPOUT].as.f : 0.0;
    if (dropout > 0) {
        ag_save_new(r, acc, attn, n);               /* the noise           */
        ag_save_new(r, acc, attn, n);               /* the dropped weights */
    }
    int64_t batch = 1;
    for (int32_t d = 0; d < v->ndim - 2; d++) batch *= vshape[d];
    int64_t v3[3] = { batch, vshape[v->ndim - 2], vshape[v->ndim - 1] };
    if (!repeated && acc == v->dtype && v->ndim >= 2 && mtk_view_strides(v, v3, 3, stride)) ag_save_arg(q, r, SDPA_V);
    else ag_save_new(r, acc, vshape, v->ndim);
}

/* The cpu flash kernel's forward buffers (FlashAttentionKernel.cpp): per
 * thread, qk (qSplit x kvSplit), qk_max and qk_sum (qSplit) and dst
 * (qSplit x head_dim of v) in float32, and for half inputs qk again in the
 * input's dtype; qSplit is 32, 64 from 192 query positions, 256 from 768,
 * kvSplit 512, each at most the length.  Modelled for one thread
 * (torch.set_num_threads(1)); every thread has its own. */
static int64_t sdpa_cpu_flash_buffers(const mtk_tensor *q, const mtk_tensor *k, const mtk_tensor *v)
{
    int64_t q_len = q->shape[2], kv_len = k->shape[2], dv = v->shape[3];
    int64_t q_split = q_len >= 768 ? 256 : q_len >= 192 ? 64 : 32;
    if (q_split > q_len) q_split = q_len;
    int64_t kv_split = kv_len < 512 ? kv_len : 512;
    bool half = q->dtype == MTK_FLOAT16 || q->dtype == MTK_BFLOAT16;
    int64_t acc = 4 * (q_split * kv_split + 2 * q_split + q_split * dv);
    return acc + (half ? q_split * kv_split * (int64_t)mtk_dtype_size(q->dtype) : 0);
}

/* sdpa's gradients, and its forward's workspace: a bool mask turned into
 * an additive one in q's dtype (where(mask, 0, -inf), alive through the
 * kernel; what the fused kernels save when autograd records them), and the
 * cpu flash kernel's per-thread buffers (and its logsumexp without
 * autograd). */
void ag_backward_sdpa(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_backward_grads(q, r);
    const mtk_tensor *qt = ag_arg(q, SDPA_Q), *k = ag_arg(q, SDPA_K), *v = ag_arg(q, SDPA_V);
    const mtk_tensor *mask = ag_arg(q, SDPA_MASK);
    if (!qt || !k || !v) return;
    bool recorded = ag_rg(q, SDPA_Q) || ag_rg(q, SDPA_K) || ag_rg(q, SDPA_V);
    if (mask && mask->dtype == MTK_BOOL && !(recorded && ag_sdpa_kernel_of(q) != AG_SDPA_MATH))
        r->transient_bytes += mtk_tensor_numel(mask) * (int64_t)mtk_dtype_size(qt->dtype);
    if (q->device_kind == MTK_DEVICE_KIND_CPU && ag_sdpa_kernel_of(q) == AG_SDPA_FLASH) {
        r->transient_bytes += sdpa_cpu_flash_buffers(qt, k, v);
        /* the cpu flash kernel returns its logsumexp (B, H, L) float32 even
           when autograd does not record it (then dropped at once) */
        if (!recorded) r->transient_bytes += qt->shape[0] * qt->shape[1] * qt->shape[2] * 4;
    }
}

enum { CE_INPUT, CE_TARGET, CE_WEIGHT };

/* cross_entropy = nll_loss(log_softmax(input, 1)): the log-probabilities
 * (input's shape and dtype), the target, the class weights, and nll's
 * total_weight (0-dim, input's dtype). */
void ag_saved_cross_entropy(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    const mtk_tensor *x = ag_arg(q, CE_INPUT);
    if (!x) return;
    ag_save_new(r, x->dtype, x->shape, x->ndim);
    ag_save_arg(q, r, CE_TARGET);
    ag_save_arg(q, r, CE_WEIGHT);
    const mtk_tensor *t = ag_arg(q, CE_TARGET);
    if (t && !mtk_dtype_is_floating(t->dtype)) ag_save_new(r, x->dtype, NULL, 0);
}

/* nll_loss: self, target, weight and total_weight. */
void ag_saved_nll_loss(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    const mtk_tensor *x = ag_arg(q, CE_INPUT);
    if (!x) return;
    ag_save_arg(q, r, CE_INPUT);
    ag_save_arg(q, r, CE_TARGET);
    ag_save_arg(q, r, CE_WEIGHT);
    ag_save_new(r, x->dtype, NULL, 0);
}

/* dropout in training with 0 < p: on cpu input * noise keeps the noise
 * (the input's dtype; (N, C, 1, ...) for the feature dropouts); cuda's
 * fused kernel keeps a bool mask. */
void ag_saved_dropout(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    const mtk_tensor *x = ag_arg(q, 0);
    double p = q->nargs > 1 ? q->args[1].as.f : 0.5;
    bool training = q->nargs > 2 && q->args[2].kind == MTK_VALUE_BOOL ? q->args[2].as.b : true;
    if (!x || p == 0.0 || !training || mtk_tensor_numel(x) == 0) return;
    bool feature = strcmp(q->op->name, "dropout") != 0;
    if (!feature && q->device_kind == MTK_DEVICE_KIND_CUDA && p < 1.0) {
        ag_save_new(r, MTK_BOOL, x->shape, x->ndim);
        return;
    }
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    if (feature)
        for (int32_t d = 2; d < x->ndim; d++) shape[d] = 1;
    ag_save_new(r, x->dtype, shape, x->ndim);
}

/* convolution (one formula for all inputs): input and weight. */
void ag_saved_conv(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_save_arg(q, r, 0);
    ag_save_arg(q, r, 1);
}

/* max_pool (run with indices when grad is needed): input and the int64
 * indices of the output's shape. */
void ag_saved_max_pool(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_save_arg(q, r, 0);
    if (q->noutputs > 1) ag_save_output(r, 1);
    else if (q->noutputs == 1) ag_save_new(r, MTK_INT64, q->outputs[0]->shape, q->outputs[0]->ndim);
}

/* ------------------------------------------------------- backward column */

void ag_backward_grads(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    for (int32_t i = 0; i < q->ninputs && r->nbackward < MTK_MAX_SAVED; i++)
        if (q->input_requires_grad[i])
            r->backward[r->nbackward++] = (mtk_backward_alloc){
                .grad_of = i, .nbytes = mtk_tensor_numel(q->inputs[i]) * (int64_t)mtk_dtype_size(q->inputs[i]->dtype) };
}

/* transpose, swapaxes, swapdims, t: the gradient is the incoming one
 * transposed back, a view (TransposeBackward0), so nothing is allocated. */
void ag_backward_passthrough(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    for (int32_t i = 0; i < q->ninputs && r->nbackward < MTK_MAX_SAVED; i++)
        if (q->input_requires_grad[i])
            r->backward[r->nbackward++] = (mtk_backward_alloc){ .grad_of = i, .nbytes = 0, .view = true };
}

/* LlamaRMSNorm's forward beyond its output, at its highest (n: x's
 * elements, r: the float32 reduced tensor's bytes).  Without autograd:
 * - with a weight, x in a half dtype: h = x.to(float32) (4n) and pow's
 *   result (4n) with mean's (r), then h, the variance, rsqrt's result and
 *   the product (4n) before h goes; at the end the product, its cast back
 *   (2n) and the variance beside the output: 6n + 2r above the output;
 * - with a weight, x float32: to() returns x itself and the cast is the
 *   product, so the product (4n) and the variance stay beside the output:
 *   4n + r;
 * - without one (Gemma's _norm on x.float()): pow's result with mean's
 *   before the output (4n + r, less the output's 4n), rsqrt's (r) beside
 *   it: r.
 * Recorded, h, rsqrt's result and the cast are saved (ag_saved_rms_norm):
 * beyond them the product in half dtypes (4n) and the variance stay, the
 * variance alone in float32 (the cast is the product), nothing without a
 * weight. */
void ag_backward_rms_norm(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    enum { INPUT, SHAPE, WEIGHT };
    ag_backward_grads(q, r);
    const mtk_tensor *x = ag_arg(q, INPUT);
    if (!x) return;
    int64_t n = mtk_tensor_numel(x), shape[MTK_MAX_DIMS];
    int32_t nd = reduced_shape(x, list_count(q, SHAPE), shape);
    int64_t red = 4;
    for (int32_t d = 0; d < nd; d++) red *= shape[d];
    bool half = x->dtype != MTK_FLOAT32, weight = ag_arg(q, WEIGHT) != NULL;
    if (ag_rg(q, INPUT) || ag_rg(q, WEIGHT)) {
        r->transient_bytes = !weight ? 0 : half ? 4 * n + red : red;
        return;
    }
    if (!weight) r->transient_bytes = red;
    else if (!half) r->transient_bytes = 4 * n + red;
    else r->transient_bytes = (4 + (int64_t)mtk_dtype_size(x->dtype)) * n + 2 * red;
}

/* cross_entropy's backward is NllLossBackward then LogSoftmaxBackward:
 * nll's gradient (the input's size and dtype, zeros but the targets')
 * stays alive while log_softmax's backward makes the input's gradient
 * from it, then goes. */
void ag_backward_cross_entropy(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_backward_grads(q, r);
    const mtk_tensor *x = ag_arg(q, CE_INPUT);
    if (!x || !ag_rg(q, CE_INPUT) || r->nbackward >= MTK_MAX_SAVED) return;
    r->backward[r->nbackward++] = (mtk_backward_alloc){
        .grad_of = -1, .nbytes = mtk_tensor_numel(x) * (int64_t)mtk_dtype_size(x->dtype) };
}

/* apply_rotary_pos_emb's x * cos + rotate_half(x) * sin (n: x's bytes):
 * x * cos (n), then rotate_half's neg (n / 2) and cat (n) at once, the
 * neg freed, the cat times sin (n), the cat freed, and the sum (the
 * output) beside both products: 2n above the output.  The interleaved
 * form is counted as a complex product that writes its output and nothing
 * else (llama4 runs rope_complex, no family of the zoo this form). */
void ag_backward_rope(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_backward_grads(q, r);
    const mtk_tensor *x = ag_arg(q, 0);
    bool interleaved = q->nargs > 3 && q->args[3].kind == MTK_VALUE_BOOL && q->args[3].as.b;
    const mtk_tensor *cos = ag_arg(q, 1);
    if (!x || interleaved) return;
    int64_t n = mtk_tensor_numel(x) * (int64_t)mtk_dtype_size(x->dtype);
    /* half-width cos (gpt_oss's _apply_rotary_emb): x1 * cos - x2 * sin and
       x2 * cos + x1 * sin, n / 2 each, both beside the output their cat writes */
    bool half = cos && cos->ndim > 0 && 2 * cos->shape[cos->ndim - 1] == x->shape[x->ndim - 1];
    r->transient_bytes = half ? n : 2 * n;
}

/* softmax(x, dtype=d) with d not x's dtype converts x first: a temporary
 * of x's size in d.  Its backward is SoftmaxBackward (the gradient in d,
 * a temporary) then the conversion's ToCopyBackward (x's gradient in x's
 * dtype). */
void ag_backward_softmax(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_backward_grads(q, r);
    const mtk_tensor *x = ag_arg(q, 0);
    if (!x || q->noutputs < 1 || q->outputs[0]->dtype == x->dtype) return;
    int64_t converted = mtk_tensor_numel(x) * (int64_t)mtk_dtype_size(q->outputs[0]->dtype);
    r->transient_bytes = converted;
    if (ag_rg(q, 0) && r->nbackward < MTK_MAX_SAVED)
        r->backward[r->nbackward++] = (mtk_backward_alloc){ .grad_of = -1, .nbytes = converted };
}
