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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(graph_names_parameters_and_attributes_nodes_to_modules),
        cmocka_unit_test(views_share_their_base_storage_and_copies_do_not),
        cmocka_unit_test(node_arguments_are_copied_lists_included),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
