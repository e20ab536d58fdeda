/* What autograd keeps for the element-wise, reduction and linear-algebra
 * ops (torch 2.13's derivatives.yaml), and the helpers every saved column
 * shares.  A gradient formula needs an input only when the *other*
 * operand requires grad (mul saves `other` for the gradient of `self`),
 * so most entries depend on which inputs require grad. */
#include "ops/autograd.h"
#include "ops/view.h"

#include <string.h>

/* ------------------------------------------------------------- helpers */

const mtk_tensor *ag_arg(const mtk_autograd_query *q, int32_t arg)
{
    if (arg < 0 || arg >= q->nargs || q->arg_input[arg] < 0) return NULL;
    return q->inputs[q->arg_input[arg]];
}

bool ag_rg(const mtk_autograd_query *q, int32_t arg)
{
    return arg >= 0 && arg < q->nargs && q->arg_input[arg] >= 0 && q->input_requires_grad[q->arg_input[arg]];
}

static mtk_saved *next(mtk_autograd_result *r)
{
    if (r->nsaved >= MTK_MAX_SAVED) return NULL;
    mtk_saved *s = &r->saved[r->nsaved++];
    memset(s, 0, sizeof *s);
    return s;
}

void ag_save_arg(const mtk_autograd_query *q, mtk_autograd_result *r, int32_t arg)
{
    if (!ag_arg(q, arg)) return;
    for (int32_t i = 0; i < r->nsaved; i++) /* once per tensor */
        if (r->saved[i].kind == MTK_SAVED_INPUT && r->saved[i].index == q->arg_input[arg]) return;
    mtk_saved *s = next(r);
    if (s) {
        s->kind = MTK_SAVED_INPUT;
        s->index = q->arg_input[arg];
    }
}

void ag_save_output(mtk_autograd_result *r, int32_t index)
{
    mtk_saved *s = next(r);
    if (s) {
        s->kind = MTK_SAVED_OUTPUT;
        s->index = index;
    }
}

void ag_save_new(mtk_autograd_result *r, mtk_dtype dtype, const int64_t *shape, int32_t ndim)
{
    mtk_saved *s = next(r);
    if (!s) return;
    s->kind = MTK_SAVED_NEW;
    s->index = -1;
    s->dtype = dtype;
    s->ndim = ndim;
    if (ndim > 0) memcpy(s->shape, shape, (size_t)ndim * sizeof *shape);
}

void ag_save_wrapped(const mtk_autograd_query *q, mtk_autograd_result *r, int32_t arg)
{
    /* a Python number is wrapped in a 0-dim cpu tensor that autograd keeps
       but saved_tensors_hooks never see (8 bytes, not on the device):
       only tensors count */
    if (arg < q->nargs && q->args[arg].kind == MTK_VALUE_TENSOR) ag_save_arg(q, r, arg);
}

/* Whether argument `arg` (a tensor or a number) requires grad. */
static bool operand_rg(const mtk_autograd_query *q, int32_t arg) { return ag_rg(q, arg); }

/* --------------------------------------------------------- element-wise */

void ag_saved_input(const mtk_autograd_query *q, mtk_autograd_result *r) { ag_save_arg(q, r, 0); }

void ag_saved_result(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    (void)q;
    ag_save_output(r, 0);
}

void ag_saved_input_result(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_save_arg(q, r, 0);
    ag_save_output(r, 0);
}

/* max / min: over a dim, the indices (value_selecting_reduction_backward
 * needs only them and self's sizes); of the whole tensor, self and the
 * result (evenly_distribute_backward); against a tensor (maximum /
 * minimum), self and other. */
void ag_saved_extreme(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    enum { SELF, DIM, KEEPDIM, OTHER };
    const mtk_tensor *other = ag_arg(q, DIM) ? ag_arg(q, DIM) : ag_arg(q, OTHER);
    if (other) {
        ag_save_arg(q, r, SELF);
        ag_save_arg(q, r, ag_arg(q, DIM) ? DIM : OTHER);
    } else if (q->nargs > DIM && q->args[DIM].kind == MTK_VALUE_INT) {
        ag_save_output(r, 1);
    } else {
        ag_saved_input_result(q, r);
    }
}

/* mul: self's gradient needs other, other's needs self. */
void ag_saved_mul(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    if (operand_rg(q, 0)) ag_save_wrapped(q, r, 1);
    if (operand_rg(q, 1)) ag_save_wrapped(q, r, 0);
}

/* div: self's gradient needs other; other's needs self and other. */
void ag_saved_div(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    if (operand_rg(q, 0) || operand_rg(q, 1)) ag_save_wrapped(q, r, 1);
    if (operand_rg(q, 1)) ag_save_wrapped(q, r, 0);
}

/* pow(self, Scalar): self.  pow(self, Tensor): self and exponent, and the
 * result for the exponent's gradient. */
void ag_saved_pow(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    bool tensor_exponent = q->nargs > 1 && q->args[1].kind == MTK_VALUE_TENSOR;
    if (!tensor_exponent) {
        ag_save_arg(q, r, 0);
        return;
    }
    ag_save_wrapped(q, r, 0);
    ag_save_arg(q, r, 1);
    if (operand_rg(q, 1)) ag_save_output(r, 0);
}

/* --------------------------------------------------------- linear algebra */

/* mm/bmm/dot/mv: self for mat2's gradient, mat2 for self's. */
void ag_saved_mm(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    if (ag_rg(q, 1)) ag_save_arg(q, r, 0);
    if (ag_rg(q, 0)) ag_save_arg(q, r, 1);
}

/* _grouped_mm: as mm, and the offsets whenever it is recorded. */
void ag_saved_grouped_mm(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    if (ag_rg(q, 1)) ag_save_arg(q, r, 0);
    if (ag_rg(q, 0)) ag_save_arg(q, r, 1);
    ag_save_arg(q, r, 2);
}

/* Saves `t` reshaped to shape[n] as torch's reshape makes it: t's storage
 * when a view exists (geometry given by shape/stride of t, which may be
 * an expanded or transposed form of argument `arg`), else a new
 * contiguous tensor. */
static void save_reshaped(const mtk_autograd_query *q, mtk_autograd_result *r, int32_t arg, const mtk_tensor *t,
                          const int64_t *shape, int32_t n)
{
    int64_t stride[MTK_MAX_DIMS];
    if (mtk_view_strides(t, shape, n, stride)) ag_save_arg(q, r, arg);
    else ag_save_new(r, t->dtype, shape, n);
}

/* A copy of t's geometry with its last two dims swapped (mT). */
static mtk_tensor swapped_last(const mtk_tensor *t)
{
    mtk_tensor s = *t;
    if (t->ndim >= 2) {
        int32_t a = t->ndim - 2, b = t->ndim - 1;
        s.shape[a] = t->shape[b], s.shape[b] = t->shape[a];
        s.stride[a] = t->stride[b], s.stride[b] = t->stride[a];
    }
    return s;
}

/* torch's matmul as it decomposes: dot/mv/mm for 1-2 dims; the larger
 * operand folded into a matrix (reshape(-1, k), a copy when no view
 * exists) and mm when the other has at most 2 dims; else both expanded
 * to the broadcast batch and reshaped to 3 dims for bmm.  Fills, per
 * operand, the geometry its reshape reads (`geom`, the shape it takes in
 * `shape`/`ndim`) and whether it is reshaped at all; false for the mm
 * forms that reshape nothing. */
typedef struct matmul_form {
    bool reshaped[2];
    mtk_tensor geom[2];
    int64_t shape[2][3];
    int32_t ndim[2];
} matmul_form;

static bool matmul_form_of(const mtk_tensor *a, const mtk_tensor *b, matmul_form *f)
{
    memset(f, 0, sizeof *f);
    int32_t d1 = a->ndim, d2 = b->ndim;
    if (d1 <= 2 && d2 <= 2) return false;
    bool fold = (d1 >= 3 && d2 <= 2) || (d2 >= 3 && d1 <= 2);
    if (fold && d1 == 3 && d2 == 2 && a->stride[2] != 1 && a->stride[0] == a->shape[1] * a->shape[2])
        fold = false; /* permute(0, 2, 1)-like: bmm with each product transposed */
    if (fold) {
        int32_t k = d2 > d1; /* the larger operand, transposed when it is the second */
        mtk_tensor t1 = k ? swapped_last(b) : *a;
        int64_t rows = 1;
        for (int32_t d = 0; d < t1.ndim - 1; d++) rows *= t1.shape[d];
        f->reshaped[k] = true;
        f->geom[k] = t1;
        f->shape[k][0] = rows;
        f->shape[k][1] = t1.shape[t1.ndim - 1];
        f->ndim[k] = 2;
        return true;
    }
    /* batched: (P, n, m1) @ (P, m2, p) */
    int32_t nb1 = d1 - 2 > 0 ? d1 - 2 : 0, nb2 = d2 - 2 > 0 ? d2 - 2 : 0;
    int32_t nb = nb1 > nb2 ? nb1 : nb2;
    int64_t batch[MTK_MAX_DIMS], product = 1;
    for (int32_t i = 0; i < nb; i++) {
        int32_t i1 = i - (nb - nb1), i2 = i - (nb - nb2);
        int64_t s1 = i1 >= 0 ? a->shape[i1] : 1, s2 = i2 >= 0 ? b->shape[i2] : 1;
        batch[i] = s1 == 1 ? s2 : s1;
        product *= batch[i];
    }
    /* each operand expanded to the batch (stride 0 where it broadcasts) */
    const mtk_tensor *ops[2] = { a, b };
    for (int32_t k = 0; k < 2; k++) {
        const mtk_tensor *t = ops[k];
        if (t->ndim < 2) continue; /* a vector operand: used as given */
        mtk_tensor e = *t;
        int32_t nbk = t->ndim - 2;
        e.ndim = nb + 2;
        for (int32_t i = 0; i < nb; i++) {
            int32_t src = i - (nb - nbk);
            e.shape[i] = batch[i];
            e.stride[i] = src >= 0 && t->shape[src] == batch[i] ? t->stride[src] : 0;
        }
        for (int32_t i = 0; i < 2; i++) {
            e.shape[nb + i] = t->shape[nbk + i];
            e.stride[nb + i] = t->stride[nbk + i];
        }
        f->reshaped[k] = true;
        f->geom[k] = e;
        f->shape[k][0] = product;
        f->shape[k][1] = e.shape[nb];
        f->shape[k][2] = e.shape[nb + 1];
        f->ndim[k] = 3;
    }
    return true;
}

/* What matmul saves: each operand as its reshape made it (a view of the
 * argument or a new contiguous copy) for the other's gradient. */
void ag_saved_matmul(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    const mtk_tensor *a = ag_arg(q, 0), *b = ag_arg(q, 1);
    if (!a || !b) return;
    matmul_form f;
    if (!matmul_form_of(a, b, &f)) {
        ag_saved_mm(q, r);
        return;
    }
    bool save[2] = { ag_rg(q, 1), ag_rg(q, 0) };
    for (int32_t k = 0; k < 2; k++) {
        if (!save[k]) continue;
        if (f.reshaped[k]) save_reshaped(q, r, k, &f.geom[k], f.shape[k], f.ndim[k]);
        else ag_save_arg(q, r, k);
    }
}

/* matmul's forward workspace: the reshape copies of the operands that no
 * view can fold, alive with the product and freed after it unless saved
 * for backward (then they are saved entries, counted there). */
void ag_backward_matmul(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_backward_grads(q, r);
    const mtk_tensor *a = ag_arg(q, 0), *b = ag_arg(q, 1);
    matmul_form f;
    if (!a || !b || !matmul_form_of(a, b, &f)) return;
    bool saved[2] = { ag_rg(q, 1), ag_rg(q, 0) };
    for (int32_t k = 0; k < 2; k++) {
        int64_t stride[MTK_MAX_DIMS], numel = 1;
        if (!f.reshaped[k] || saved[k] || mtk_view_strides(&f.geom[k], f.shape[k], f.ndim[k], stride)) continue;
        for (int32_t d = 0; d < f.ndim[k]; d++) numel *= f.shape[k][d];
        r->transient_bytes += numel * (int64_t)mtk_dtype_size(f.geom[k].dtype);
    }
}

/* linear: a gradient per input that requires it, as matmul(input,
 * weight.t()) makes them.  The weight's is TBackward0's t() of the mm's
 * result, a view; so is the input's when the input has 3 or more dims
 * (matmul folds it to a matrix and ViewBackward0 reshapes the gradient
 * back).  The bias's is a sum, a tensor of its own. */
void ag_backward_linear(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_backward_grads(q, r);
    const mtk_tensor *x = ag_arg(q, 0);
    for (int32_t k = 0; k < r->nbackward; k++) {
        int32_t i = r->backward[k].grad_of;
        r->backward[k].view = i == 1 || (i == 0 && x && x->ndim >= 3);
    }
}

/* linear: the input as a matrix (a view when it folds, else a copy), for
 * the weight's gradient; the weight for the input's. */
void ag_saved_linear(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    const mtk_tensor *x = ag_arg(q, 0);
    if (!x) return;
    if (ag_rg(q, 1)) {
        if (x->ndim <= 2) {
            ag_save_arg(q, r, 0);
        } else {
            int64_t rows = 1;
            for (int32_t d = 0; d < x->ndim - 1; d++) rows *= x->shape[d];
            int64_t folded[2] = { rows, x->shape[x->ndim - 1] };
            save_reshaped(q, r, 0, x, folded, 2);
        }
    }
    if (ag_rg(q, 0)) ag_save_arg(q, r, 1);
}

/* embedding: the indices. */
void ag_saved_indices(const mtk_autograd_query *q, mtk_autograd_result *r) { ag_save_arg(q, r, 0); }

/* index_select: the index, for self's gradient (zeros of self's shape
 * with the rows added back). */
void ag_saved_index_select(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    if (ag_rg(q, 0)) ag_save_arg(q, r, 2);
}

/* gather: self and the index (GatherBackward0's self_ and index_), for
 * self's gradient. */
void ag_saved_gather(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    if (!ag_rg(q, 0)) return;
    ag_save_arg(q, r, 0);
    ag_save_arg(q, r, 2);
}

/* topk: the indices (output 1), where self's gradient scatters to. */
void ag_saved_topk(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    if (ag_rg(q, 0)) ag_save_output(r, 1);
}

/* masked_fill: the mask, for self's gradient (and a tensor value's). */
void ag_saved_masked_fill(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    if (ag_rg(q, 0) || ag_rg(q, 2)) ag_save_arg(q, r, 1);
}

/* clamp: self (which elements were clipped), and tensor bounds. */
void ag_saved_clamp(const mtk_autograd_query *q, mtk_autograd_result *r)
{
    ag_save_arg(q, r, 0);
    ag_save_wrapped(q, r, 1);
    ag_save_wrapped(q, r, 2);
}
