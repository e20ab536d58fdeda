/* The traced graph (mtk/plan.h): tensor ids, storages shared by views,
 * named parameters, arguments copied, module paths, and the autograd
 * column's saved entries of a few ops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/mtk.h"
#include "mtk/plan.h"
#include "nn_test_helpers.h"

/* The graph of f(ctx, x) run inside a trace of simplenet (ops outside its
 * modules go to the root). */
static const mtk_graph *graph_of(mtk_ctx *ctx, mtk_module *root, mtk_tensor *(*f)(mtk_ctx *, mtk_tensor *),
                                 mtk_tensor *x, mtk_device_kind kind)
{
    mtk_trace *tr = mtk_trace_begin(root);
    assert_non_null(tr);
    assert_non_null(f(ctx, x));
    mtk_trace_end(tr);
    const mtk_graph *g = mtk_graph_from_trace_on(tr, kind);
    assert_non_null(g);
    return g;
}

static const mtk_graph_tensor *tensor_of(const mtk_graph *g, const mtk_tensor *t)
{
    int32_t id = mtk_graph_tensor_id(g, t);
    assert_true(id >= 0);
    return mtk_graph_tensor_at(g, id);
}

static void graph_names_parameters_and_attributes_nodes_to_modules(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_trace *tr = mtk_trace_begin(net);
    mtk_tensor *x = meta_input(ctx, 2, SHAPE(3, 10));
    assert_non_null(mtk_module_forward(net, x));
    mtk_trace_end(tr);
    const mtk_graph *g = mtk_graph_from_trace(tr);
    assert_non_null(g);
    assert_int_equal(mtk_graph_node_count(g), 3);
    /* parameters first, by name, in their own storages */
    const mtk_graph_tensor *w0 = mtk_graph_tensor_at(g, 0);
    assert_string_equal(w0->name, "0.weight");
    assert_int_equal(mtk_graph_storage_at(g, w0->storage)->kind, MTK_STORAGE_PARAMETER);
    assert_int_equal(mtk_graph_storage_at(g, w0->storage)->nbytes, 20 * 10 * 4);
    assert_true(w0->requires_grad);
    /* the input: its own storage, not a parameter, no producer */
    const mtk_graph_tensor *in = tensor_of(g, x);
    assert_int_equal(mtk_graph_storage_at(g, in->storage)->kind, MTK_STORAGE_INPUT);
    assert_int_equal(mtk_graph_storage_at(g, in->storage)->nbytes, 3 * 10 * 4);
    assert_int_equal(in->producer, -1);
    assert_null(in->name);
    /* linear(x, w, b) in module "0", relu in "1" */
    const mtk_graph_node *lin = mtk_graph_node_at(g, 0), *relu = mtk_graph_node_at(g, 1);
    assert_string_equal(lin->op->name, "linear");
    assert_int_equal(lin->ninputs, 3);
    assert_int_equal(lin->inputs[0], mtk_graph_tensor_id(g, x));
    assert_string_equal(mtk_trace_module_at(mtk_graph_trace(g), lin->module)->name, "0");
    assert_string_equal(mtk_trace_module_at(mtk_graph_trace(g), relu->module)->name, "1");
    assert_int_equal(relu->inputs[0], lin->outputs[0]);
    const mtk_graph_tensor *h = mtk_graph_tensor_at(g, lin->outputs[0]);
    assert_int_equal(h->producer, 0);
    assert_true(h->requires_grad);
    assert_int_equal(mtk_graph_storage_at(g, h->storage)->kind, MTK_STORAGE_ACTIVATION);
    assert_int_equal(mtk_graph_storage_at(g, h->storage)->nbytes, 3 * 20 * 4);
    mtk_ctx_free(ctx);
}

/* transpose (a view), then reshape of the transposed tensor (a copy). */
static mtk_tensor *transpose_then_reshape(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_tensor *t = mtk_transpose(ctx, x, 0, 1);       /* (3, 2) view  */
    return mtk_reshape(ctx, t, SHAPE(6), 1);            /* (6) copy     */
}

static void views_share_their_base_storage_and_copies_do_not(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *x = meta_input(ctx, 2, SHAPE(2, 3));
    const mtk_graph *g = graph_of(ctx, net, transpose_then_reshape, x, MTK_DEVICE_KIND_CPU);
    assert_int_equal(mtk_graph_node_count(g), 2);
    const mtk_graph_node *tr = mtk_graph_node_at(g, 0), *rs = mtk_graph_node_at(g, 1);
    const mtk_graph_tensor *in = mtk_graph_tensor_at(g, tr->inputs[0]);
    const mtk_graph_tensor *t = mtk_graph_tensor_at(g, tr->outputs[0]);
    const mtk_graph_tensor *r = mtk_graph_tensor_at(g, rs->outputs[0]);
    assert_int_equal(t->view_of, tr->inputs[0]);
    assert_int_equal(t->storage, in->storage);
    assert_int_equal(r->view_of, -1);
    assert_int_not_equal(r->storage, in->storage);
    assert_int_equal(mtk_graph_storage_at(g, r->storage)->nbytes, 6 * 4);
    assert_int_equal(mtk_graph_storage_at(g, r->storage)->base, rs->outputs[0]);
    assert_int_equal(tr->module, -1); /* ran outside the root's call: the root */
    mtk_ctx_free(ctx);
}

static mtk_tensor *sum_over_dims(mtk_ctx *ctx, mtk_tensor *x)
{
    return mtk_sum(ctx, x, SHAPE(0, 2), 2, true, MTK_DTYPE_UNDEFINED);
}

static void node_arguments_are_copied_lists_included(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *x = meta_input(ctx, 3, SHAPE(2, 3, 4));
    const mtk_graph *g = graph_of(ctx, net, sum_over_dims, x, MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = mtk_graph_node_at(g, 0);
    assert_string_equal(n->op->name, "sum");
    assert_true(n->nargs >= 3);
    assert_int_equal(n->args[0].kind, MTK_VALUE_TENSOR);
    assert_ptr_equal(n->args[0].as.tensor, x);
    const mtk_value *dims = &n->args[1];
    assert_true(dims->kind == MTK_VALUE_LIST || dims->kind == MTK_VALUE_TUPLE);
    assert_int_equal(dims->as.list.count, 2);
    assert_int_equal(dims->as.list.items[0].as.i, 0);
    assert_int_equal(dims->as.list.items[1].as.i, 2);
    assert_int_equal(n->args[2].kind, MTK_VALUE_BOOL);
    assert_true(n->args[2].as.b);
    mtk_ctx_free(ctx);
}


/* ------------------------------------------------------ saved entries */

static mtk_tensor *grad_input(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_META);
    assert_non_null(t);
    t->flags |= MTK_TENSOR_REQUIRES_GRAD;
    return t;
}

static const mtk_graph_node *node_named(const mtk_graph *g, const char *op)
{
    for (int32_t i = 0; i < mtk_graph_node_count(g); i++)
        if (strcmp(mtk_graph_node_at(g, i)->op->name, op) == 0) return mtk_graph_node_at(g, i);
    fail_msg("no %s node", op);
    return NULL;
}

static mtk_tensor *softmax_of(mtk_ctx *ctx, mtk_tensor *x) { return mtk_softmax(ctx, x, -1, MTK_DTYPE_UNDEFINED); }

static void softmax_saves_its_output_and_nothing_without_grad(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    const mtk_graph *g = graph_of(ctx, net, softmax_of, grad_input(ctx, MTK_FLOAT32, 2, SHAPE(3, 5)),
                                  MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "softmax");
    assert_int_equal(n->nsaved, 1);
    assert_int_equal(n->saved[0].kind, MTK_SAVED_OUTPUT);
    assert_int_equal(mtk_graph_saved_entry_bytes(g, n, &n->saved[0]), 3 * 5 * 4);
    assert_int_equal(mtk_graph_saved_bytes(g, NULL), 60);
    /* the same on an input that does not require grad: no autograd node */
    g = graph_of(ctx, net, softmax_of, meta_input(ctx, 2, SHAPE(3, 5)), MTK_DEVICE_KIND_CPU);
    assert_int_equal(node_named(g, "softmax")->nsaved, 0);
    assert_int_equal(mtk_graph_saved_bytes(g, NULL), 0);
    mtk_ctx_free(ctx);
}

/* gpt_oss's combined_logits.max(dim=-1, keepdim=True): (3, 5) -> (3, 1) */
static mtk_tensor *max_over_last_dim(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_tensor *values = NULL, *indices = NULL;
    return mtk_max_dim(ctx, x, -1, true, &values, &indices) ? values : NULL;
}

static void max_over_a_dim_saves_only_its_indices(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    const mtk_graph *g = graph_of(ctx, net, max_over_last_dim, grad_input(ctx, MTK_FLOAT32, 2, SHAPE(3, 5)),
                                  MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "max");
    assert_int_equal(n->nsaved, 1);
    assert_int_equal(n->saved[0].kind, MTK_SAVED_OUTPUT);
    assert_int_equal(n->saved[0].index, 1);
    assert_int_equal(mtk_graph_saved_bytes(g, NULL), 3 * 1 * 8); /* int64 indices */
    mtk_ctx_free(ctx);
}

/* x (B, S, H) bf16 through rms_norm with a weight that requires grad */
static mtk_tensor *bf16_rms_norm(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_tensor *w = grad_input(ctx, MTK_BFLOAT16, 1, SHAPE(8));
    return mtk_rms_norm(ctx, x, SHAPE(8), 1, w, 1e-6);
}

static void rms_norm_saves_what_llama_rmsnorm_composition_keeps(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    const mtk_graph *g = graph_of(ctx, net, bf16_rms_norm, grad_input(ctx, MTK_BFLOAT16, 3, SHAPE(2, 3, 8)),
                                  MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "rms_norm");
    assert_int_equal(n->nsaved, 4);
    /* x.to(float32): new; rsqrt (2, 3, 1) float32; the product cast back
       (bf16, new); the weight (an input here, 16 bytes) */
    assert_int_equal(n->saved[0].kind, MTK_SAVED_NEW);
    assert_int_equal(n->saved[0].dtype, MTK_FLOAT32);
    assert_int_equal(mtk_graph_saved_entry_bytes(g, n, &n->saved[0]), 2 * 3 * 8 * 4);
    assert_int_equal(n->saved[1].ndim, 3);
    assert_int_equal(n->saved[1].shape[2], 1);
    assert_int_equal(mtk_graph_saved_entry_bytes(g, n, &n->saved[1]), 2 * 3 * 4);
    assert_int_equal(n->saved[2].dtype, MTK_BFLOAT16);
    assert_int_equal(n->saved[3].kind, MTK_SAVED_INPUT);
    assert_int_equal(mtk_graph_saved_bytes(g, NULL), 192 + 24 + 96 + 16);
    /* in float32 the float32 copy is x itself */
    g = graph_of(ctx, net, bf16_rms_norm, grad_input(ctx, MTK_FLOAT32, 3, SHAPE(2, 3, 8)), MTK_DEVICE_KIND_CPU);
    n = node_named(g, "rms_norm");
    assert_int_equal(n->saved[0].kind, MTK_SAVED_INPUT);
    assert_int_equal(n->saved[0].index, 0);
    mtk_ctx_free(ctx);
}

/* (B, S, H) -> heads -> sdpa (GQA) -> merged: the attention of a decoder */
static mtk_tensor *attention_block(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_tensor *q = mtk_transpose(ctx, mtk_view(ctx, x, SHAPE(2, 5, 4, 8), 4), 1, 2); /* (2, 4, 5, 8) */
    mtk_tensor *cos = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(1, 5, 8), 3, NULL, MTK_DEVICE_META);
    q = mtk_rope(ctx, q, cos, cos, false);
    mtk_tensor *k = grad_input(ctx, MTK_FLOAT32, 4, SHAPE(2, 2, 5, 8));
    mtk_tensor *attn = mtk_scaled_dot_product_attention(ctx, q, k, k, NULL, 0.0, true, 0.125, true);
    return mtk_reshape(ctx, mtk_transpose(ctx, attn, 1, 2), SHAPE(2, 5, 32), 3);
}

static void sdpa_saves_per_kernel_and_its_output_is_laid_out_like_the_query(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *x = grad_input(ctx, MTK_FLOAT32, 3, SHAPE(2, 5, 32));
    const mtk_graph *g = graph_of(ctx, net, attention_block, x, MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "scaled_dot_product_attention");
    /* cpu flash: q, k, v (k again: one storage), output, logsumexp
       (2, 4, 5) float32 */
    assert_int_equal(n->nsaved, 5);
    assert_int_equal(mtk_graph_saved_entry_storage(g, n, &n->saved[1]), mtk_graph_saved_entry_storage(g, n, &n->saved[2]));
    const mtk_saved *lse = &n->saved[4];
    assert_int_equal(lse->kind, MTK_SAVED_NEW);
    assert_int_equal(mtk_graph_saved_entry_bytes(g, n, lse), 2 * 4 * 5 * 4);
    /* rope's output takes x's (B, S, H, D) order, and so does sdpa's: the
       merge of the heads is a view of the attention's output */
    const mtk_graph_node *rs = node_named(g, "reshape");
    const mtk_graph_tensor *merged = mtk_graph_tensor_at(g, rs->outputs[0]);
    assert_int_equal(merged->storage, mtk_graph_tensor_at(g, n->outputs[0])->storage);
    /* cuda (float32: the efficient kernel, no GQA there: math) */
    g = graph_of(ctx, net, attention_block, x, MTK_DEVICE_KIND_CUDA);
    n = node_named(g, "scaled_dot_product_attention");
    rs = node_named(g, "reshape");
    assert_int_not_equal(mtk_graph_tensor_at(g, rs->outputs[0])->storage,
                         mtk_graph_tensor_at(g, n->outputs[0])->storage);
    bool softmax = false;
    for (int32_t i = 0; i < n->nsaved; i++)
        softmax = softmax || (n->saved[i].kind == MTK_SAVED_NEW && n->saved[i].ndim == 4 && n->saved[i].shape[3] == 5);
    assert_true(softmax);
    mtk_ctx_free(ctx);
}

static mtk_tensor *dropout_of(mtk_ctx *ctx, mtk_tensor *x) { return mtk_dropout(ctx, x, 0.1, true, false); }

static void dropout_keeps_a_float_noise_on_cpu_and_a_bool_mask_on_cuda(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *x = grad_input(ctx, MTK_BFLOAT16, 2, SHAPE(4, 6));
    const mtk_graph *g = graph_of(ctx, net, dropout_of, x, MTK_DEVICE_KIND_CPU);
    assert_int_equal(mtk_graph_saved_bytes(g, NULL), 4 * 6 * 2);
    g = graph_of(ctx, net, dropout_of, x, MTK_DEVICE_KIND_CUDA);
    assert_int_equal(mtk_graph_saved_bytes(g, NULL), 4 * 6);
    mtk_ctx_free(ctx);
}

/* x (3, 2, 4, 5) with its batch dims swapped, @ k (2, 3, 5, 6): the
 * batch (2, 3) of x cannot merge into one dim without a copy */
static mtk_tensor *matmul_of_transposed(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_tensor *k = grad_input(ctx, MTK_FLOAT32, 4, SHAPE(2, 3, 5, 6));
    return mtk_matmul(ctx, mtk_transpose(ctx, x, 0, 1), k);
}

static void matmul_saves_a_copy_where_the_batch_reshape_cannot_view(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *x = grad_input(ctx, MTK_FLOAT32, 4, SHAPE(3, 2, 4, 5));
    const mtk_graph *g = graph_of(ctx, net, matmul_of_transposed, x, MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "matmul");
    assert_int_equal(n->nsaved, 2);
    assert_int_equal(n->saved[0].kind, MTK_SAVED_NEW); /* (6, 4, 5), contiguous */
    assert_int_equal(mtk_graph_saved_entry_bytes(g, n, &n->saved[0]), 6 * 4 * 5 * 4);
    assert_int_equal(n->saved[1].kind, MTK_SAVED_INPUT); /* k folds: a view */
    assert_int_equal(mtk_graph_saved_bytes(g, NULL), 6 * 4 * 5 * 4 + 2 * 3 * 5 * 6 * 4);
    mtk_ctx_free(ctx);
}

/* rms_norm (x, weight (5)) and without a weight, and rope with cos/sin */
static mtk_tensor *rms_norm_weighted(mtk_ctx *ctx, mtk_tensor *x)
{
    int64_t shape[1] = { 5 };
    mtk_tensor *w = mtk_tensor_new(ctx, x->dtype, shape, 1, NULL, MTK_DEVICE_META);
    return mtk_rms_norm(ctx, x, shape, 1, w, 1e-6);
}

static mtk_tensor *rms_norm_plain(mtk_ctx *ctx, mtk_tensor *x)
{
    int64_t shape[1] = { 5 };
    return mtk_rms_norm(ctx, x, shape, 1, NULL, 1e-6);
}

static mtk_tensor *rope_of(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_tensor *cs = mtk_tensor_new(ctx, x->dtype, SHAPE(3, 4), 2, NULL, MTK_DEVICE_META);
    return mtk_rope(ctx, x, cs, cs, false);
}

static void fused_ops_report_the_transients_of_transformers_compositions(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    /* (3, 5): n = 15 elements, the reduced float32 variance 3 x 4 bytes */
    const mtk_graph *g = graph_of(ctx, net, rms_norm_weighted, grad_input(ctx, MTK_BFLOAT16, 2, SHAPE(3, 5)),
                                  MTK_DEVICE_KIND_CPU);
    /* without autograd: the float32 product and its bf16 cast beside the
     * output, the variance and rsqrt's result; recorded, the cast, h and
     * rsqrt's result are saved: the product and the variance beyond them */
    assert_int_equal(node_named(g, "rms_norm")->transient_nograd_bytes, 6 * 15 + 2 * 12);
    assert_int_equal(node_named(g, "rms_norm")->transient_bytes, 4 * 15 + 12);
    g = graph_of(ctx, net, rms_norm_weighted, grad_input(ctx, MTK_FLOAT32, 2, SHAPE(3, 5)), MTK_DEVICE_KIND_CPU);
    /* to(float32) of float32 is x itself; the cast is the product */
    assert_int_equal(node_named(g, "rms_norm")->transient_nograd_bytes, 4 * 15 + 12);
    assert_int_equal(node_named(g, "rms_norm")->transient_bytes, 12);
    g = graph_of(ctx, net, rms_norm_plain, grad_input(ctx, MTK_FLOAT32, 2, SHAPE(3, 5)), MTK_DEVICE_KIND_CPU);
    assert_int_equal(node_named(g, "rms_norm")->transient_nograd_bytes, 12);
    assert_int_equal(node_named(g, "rms_norm")->transient_bytes, 0);
    /* rope on (2, 3, 4) bf16: both products (2 x 48 bytes) beside the sum */
    g = graph_of(ctx, net, rope_of, grad_input(ctx, MTK_BFLOAT16, 3, SHAPE(2, 3, 4)), MTK_DEVICE_KIND_CPU);
    assert_int_equal(node_named(g, "rope")->transient_bytes, 2 * 24 * 2);
    assert_int_equal(node_named(g, "rope")->transient_nograd_bytes, 2 * 24 * 2);
    /* matmul (2, 3, 4) @ (3, 4, 5)^T-like: the transposed operand's batch
     * reshape copies; recorded, the copy is saved instead */
    g = graph_of(ctx, net, matmul_of_transposed, grad_input(ctx, MTK_FLOAT32, 4, SHAPE(3, 2, 4, 5)),
                 MTK_DEVICE_KIND_CPU);
    assert_int_equal(node_named(g, "matmul")->transient_nograd_bytes, 6 * 4 * 5 * 4);
    assert_int_equal(node_named(g, "matmul")->transient_bytes, 0);
    mtk_ctx_free(ctx);
}

/* layer_norm over the last dim (5) with a weight and a bias */
static mtk_tensor *layer_norm_of(mtk_ctx *ctx, mtk_tensor *x)
{
    int64_t shape[1] = { 5 };
    mtk_tensor *w = mtk_tensor_new(ctx, x->dtype, shape, 1, NULL, MTK_DEVICE_META);
    mtk_tensor *b = mtk_tensor_new(ctx, x->dtype, shape, 1, NULL, MTK_DEVICE_META);
    return mtk_layer_norm(ctx, x, shape, 1, w, b, 1e-5);
}

/* sdpa of x (1, 2, 3, 4) with itself and a (1, 1, 3, 3) bool mask */
static mtk_tensor *sdpa_bool_mask(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_tensor *mask = mtk_tensor_new(ctx, MTK_BOOL, SHAPE(1, 1, 3, 3), 4, NULL, MTK_DEVICE_META);
    return mtk_scaled_dot_product_attention(ctx, x, x, x, mask, 0.0, false, 0.5, false);
}

static void norms_and_masks_made_inside_an_op_are_its_workspace_or_saved(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    /* (3, 5) float32: native_layer_norm's mean and rstd (3 x 4 bytes each)
     * are saved when recorded, dropped on return under no_grad */
    const mtk_graph *g = graph_of(ctx, net, layer_norm_of, grad_input(ctx, MTK_FLOAT32, 2, SHAPE(3, 5)),
                                  MTK_DEVICE_KIND_CPU);
    assert_int_equal(node_named(g, "layer_norm")->transient_nograd_bytes, 2 * 3 * 4);
    assert_int_equal(node_named(g, "layer_norm")->transient_bytes, 0);
    /* a bool mask becomes an additive float32 one (9 x 4 bytes) and the
     * cpu flash kernel returns its logsumexp (1, 2, 3) float32: saved when
     * recorded, workspace under no_grad */
    g = graph_of(ctx, net, sdpa_bool_mask, grad_input(ctx, MTK_FLOAT32, 4, SHAPE(1, 2, 3, 4)), MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "scaled_dot_product_attention");
    int32_t masks = 0;
    for (int32_t i = 0; i < n->nsaved; i++)
        if (n->saved[i].kind == MTK_SAVED_NEW && mtk_graph_saved_entry_bytes(g, n, &n->saved[i]) == 9 * 4) masks++;
    assert_int_equal(masks, 1);
    assert_int_equal(n->transient_nograd_bytes - n->transient_bytes, 9 * 4 + 1 * 2 * 3 * 4);
    mtk_ctx_free(ctx);
}

static mtk_tensor *softmax_to_float(mtk_ctx *ctx, mtk_tensor *x) { return mtk_softmax(ctx, x, -1, MTK_FLOAT32); }

static void backward_column_gives_gradients_and_forward_workspace(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *x = grad_input(ctx, MTK_BFLOAT16, 2, SHAPE(3, 5));
    const mtk_graph *g = graph_of(ctx, net, softmax_to_float, x, MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "softmax");
    /* the bf16 input converted to float32 first, freed inside the op */
    assert_int_equal(n->transient_bytes, 3 * 5 * 4);
    /* the input's bf16 gradient, and SoftmaxBackward's float32 one before
     * ToCopyBackward casts it */
    assert_int_equal(n->nbackward, 2);
    assert_int_equal(n->backward[0].grad_of, 0);
    assert_int_equal(n->backward[0].nbytes, 3 * 5 * 2);
    assert_int_equal(n->backward[1].grad_of, -1);
    assert_int_equal(n->backward[1].nbytes, 3 * 5 * 4);
    /* without grad: the workspace stays, no backward */
    g = graph_of(ctx, net, softmax_to_float, meta_input(ctx, 2, SHAPE(3, 5)), MTK_DEVICE_KIND_CPU);
    n = node_named(g, "softmax");
    assert_int_equal(n->nbackward, 0);
    assert_int_equal(n->transient_bytes, 0); /* float32 already */
    mtk_ctx_free(ctx);
}

/* linear with a weight (7, 5) and a bias that require grad */
static mtk_tensor *linear_of(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_tensor *w = grad_input(ctx, x->dtype, 2, SHAPE(7, 5)), *b = grad_input(ctx, x->dtype, 1, SHAPE(7));
    return mtk_linear(ctx, x, w, b);
}

static void linear_gradients_are_views_where_torch_makes_them_by_t_and_reshape(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    /* (2, 3, 5) input: folded to (6, 5), its gradient reshaped back */
    const mtk_graph *g = graph_of(ctx, net, linear_of, grad_input(ctx, MTK_FLOAT32, 3, SHAPE(2, 3, 5)),
                                  MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "linear");
    assert_int_equal(n->nbackward, 3);
    for (int32_t k = 0; k < 3; k++) {
        int32_t i = n->backward[k].grad_of;
        static const int64_t bytes[3] = { 2 * 3 * 5 * 4, 7 * 5 * 4, 7 * 4 };
        assert_true(i >= 0 && i < 3);
        assert_int_equal(n->backward[k].nbytes, bytes[i]);
        /* the weight's: TBackward0's t(); the bias's: a sum of its own */
        assert_int_equal(n->backward[k].view, i != 2);
    }
    /* a (6, 5) input: addmm's gradient itself */
    g = graph_of(ctx, net, linear_of, grad_input(ctx, MTK_FLOAT32, 2, SHAPE(6, 5)), MTK_DEVICE_KIND_CPU);
    n = node_named(g, "linear");
    for (int32_t k = 0; k < n->nbackward; k++) assert_int_equal(n->backward[k].view, n->backward[k].grad_of == 1);
    mtk_ctx_free(ctx);
}

static mtk_tensor *transpose_of(mtk_ctx *ctx, mtk_tensor *x) { return mtk_transpose(ctx, x, 0, 1); }

static void transposes_gradient_is_the_incoming_one_as_a_view(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    const mtk_graph *g = graph_of(ctx, net, transpose_of, grad_input(ctx, MTK_FLOAT32, 2, SHAPE(3, 5)),
                                  MTK_DEVICE_KIND_CPU);
    const mtk_graph_node *n = node_named(g, "transpose");
    assert_int_equal(n->nbackward, 1);
    assert_int_equal(n->backward[0].nbytes, 0);
    assert_true(n->backward[0].view);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------- tracing a model */

static void plan_trace_model_traces_the_training_forward_with_its_loss(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_plan_trace_options o = { .batch = 2, .seq = 9, .dtype = MTK_BFLOAT16, .attention = "sdpa",
                                 .device_kind = MTK_DEVICE_KIND_CPU, .with_loss = true, .training = true };
    mtk_plan_model *p = mtk_plan_trace_model(ctx, "llama-3.2-1b", &o);
    assert_non_null(p);
    assert_non_null(p->loss);
    assert_int_equal(p->loss->ndim, 0);
    assert_int_equal(p->loss->dtype, MTK_FLOAT32);
    assert_int_equal(p->output->shape[2], 128256); /* logits (B, S, vocab) */
    assert_int_equal(p->nlayers, 16);             /* LlamaDecoderLayer x 16 */
    assert_string_equal(mtk_trace_module_at(p->trace, p->layers[0])->name, "model.layers.0");
    assert_string_equal(mtk_module_type_name(mtk_trace_module_at(p->trace, p->layers[15])->module),
                        "LlamaDecoderLayer");
    /* the loss runs after the root's call: cross_entropy is a node of no module */
    const mtk_graph_node *ce = node_named(p->graph, "cross_entropy");
    assert_int_equal(ce->module, -1);
    /* float32 log-probabilities of (B*S, vocab) are kept for backward */
    assert_int_equal(mtk_graph_saved_entry_bytes(p->graph, ce, &ce->saved[0]), 2 * 9 * 128256 * 4);
    /* its backward: nll's gradient (a temporary) alive beside the input's,
     * both float32 (B*S, vocab) */
    assert_int_equal(ce->nbackward, 2);
    assert_int_equal(ce->backward[0].grad_of, 0);
    assert_int_equal(ce->backward[0].nbytes, 2 * 9 * 128256 * 4);
    assert_int_equal(ce->backward[1].grad_of, -1);
    assert_int_equal(ce->backward[1].nbytes, 2 * 9 * 128256 * 4);
    /* eager attention: the softmax nodes appear instead of sdpa */
    o.attention = "eager";
    p = mtk_plan_trace_model(ctx, "llama-3.2-1b", &o);
    assert_non_null(p);
    node_named(p->graph, "softmax");
    mtk_ctx_free(ctx);
}

static void plan_trace_model_gives_masked_lms_their_loss(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_plan_trace_options o = { .batch = 2, .seq = 5, .dtype = MTK_DTYPE_UNDEFINED, .with_loss = true,
                                 .training = true };
    mtk_plan_model *p = mtk_plan_trace_model(ctx, "roberta-base", &o);
    assert_non_null(p);
    assert_non_null(p->loss);
    assert_int_equal(p->loss->ndim, 0);
    node_named(p->graph, "cross_entropy");
    mtk_ctx_free(ctx);
}

/* A forward that runs its "layers" (a ModuleList of 4 -> 4 linears, no
 * bias) in a loop: h = relu(x); for layer in layers: h = layer(h). */
static bool loop_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module *layers = mtk_module_child(m, "layers");
    mtk_tensor *h = mtk_relu(mtk_module_ctx(m), io->in[0]);
    for (int32_t i = 0; i < mtk_module_child_count(layers); i++)
        h = mtk_module_forward(mtk_module_child_at(layers, i, NULL), h);
    io->out[0] = h;
    io->nout = 1;
    return h != NULL;
}

static const mtk_module_type loop_type = { "Loop", loop_forward, NULL, NULL };

/* The inference peak of Loop over x (2, 4): relu's output is the layers'
 * first input. */
static int64_t loop_peak(bool frameless)
{
    mtk_ctx *ctx = meta_ctx();
    mtk_module *m = mtk_module_new(ctx, &loop_type, 0), *layers = mtk_nn_module_list(ctx);
    for (int i = 0; i < 3; i++) assert_true(mtk_nn_module_list_append(layers, mtk_nn_linear(ctx, 4, 4, false)));
    assert_true(mtk_module_add(m, "layers", layers));
    mtk_module_set_frameless(layers, frameless);
    assert_true(mtk_module_is_frameless(layers) == frameless);
    assert_true(mtk_module_is_frameless(mtk_module_child(mtk_module_copy_meta(m), "layers")) == frameless);
    assert_true(mtk_module_is_frameless(mtk_module_new_like(layers)) == frameless);
    mtk_trace *tr = mtk_trace_begin(m);
    assert_non_null(tr);
    mtk_tensor *x = meta_input(ctx, 2, SHAPE(2, 4));
    assert_non_null(mtk_module_forward(m, x));
    mtk_trace_end(tr);
    const mtk_graph *g = mtk_graph_from_trace(tr);
    assert_non_null(g);
    mtk_memory_options o;
    mtk_memory_options_init(&o);
    o.mode = MTK_MEMORY_INFERENCE;
    mtk_memory_plan *p = mtk_memory_plan_graph(ctx, g, &o);
    assert_non_null(p);
    int64_t peak = p->peak.peak_bytes - p->parameter_bytes;
    mtk_ctx_free(ctx);
    return peak;
}

static void a_frameless_container_does_not_keep_its_loops_first_input(void **state)
{
    (void)state;
    /* 32-byte tensors: x, relu's output (kept by the list's frame), then
       two layer outputs at a time */
    assert_int_equal(loop_peak(false), 4 * 32);
    assert_int_equal(loop_peak(true), 3 * 32); /* relu's output dies as layers.0 returns */
    assert_false(mtk_module_is_frameless(NULL));
    mtk_module_set_frameless(NULL, true); /* ignored */
}

static void plan_trace_model_refuses_what_it_does_not_model(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_plan_trace_options o = { .batch = 1, .seq = 4, .dtype = MTK_DTYPE_UNDEFINED, .attention = "eager",
                                 .with_loss = true };
    assert_null(mtk_plan_trace_model(ctx, "gpt2", &o));
    assert_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "eager attention is not modelled for gpt2");
    o.attention = NULL;
    assert_null(mtk_plan_trace_model(ctx, "vit-base-patch16-224", &o));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "causal and masked language models");
    o.batch = 0;
    assert_null(mtk_plan_trace_model(ctx, "gpt2", &o));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "positive batch");
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(graph_names_parameters_and_attributes_nodes_to_modules),
        cmocka_unit_test(plan_trace_model_gives_masked_lms_their_loss),
        cmocka_unit_test(views_share_their_base_storage_and_copies_do_not),
        cmocka_unit_test(node_arguments_are_copied_lists_included),
        cmocka_unit_test(softmax_saves_its_output_and_nothing_without_grad),
        cmocka_unit_test(max_over_a_dim_saves_only_its_indices),
        cmocka_unit_test(rms_norm_saves_what_llama_rmsnorm_composition_keeps),
        cmocka_unit_test(sdpa_saves_per_kernel_and_its_output_is_laid_out_like_the_query),
        cmocka_unit_test(norms_and_masks_made_inside_an_op_are_its_workspace_or_saved),
        cmocka_unit_test(dropout_keeps_a_float_noise_on_cpu_and_a_bool_mask_on_cuda),
        cmocka_unit_test(matmul_saves_a_copy_where_the_batch_reshape_cannot_view),
        cmocka_unit_test(backward_column_gives_gradients_and_forward_workspace),
        cmocka_unit_test(linear_gradients_are_views_where_torch_makes_them_by_t_and_reshape),
        cmocka_unit_test(transposes_gradient_is_the_incoming_one_as_a_view),
        cmocka_unit_test(fused_ops_report_the_transients_of_transformers_compositions),
        cmocka_unit_test(plan_trace_model_traces_the_training_forward_with_its_loss),
        cmocka_unit_test(plan_trace_model_refuses_what_it_does_not_model),
        cmocka_unit_test(a_frameless_container_does_not_keep_its_loops_first_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
