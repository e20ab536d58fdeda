/* The memory planner's liveness on hand-built graphs: every number below
 * is worked out by hand from torch's rules (a storage freed after its last
 * use, views keeping it alive, saved tensors held until their backward,
 * gradients stolen into .grad, the optimizers' states and temporaries). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "mtk/mtk.h"
#include "mtk/plan.h"
#include "plan/memory_internal.h"

/* ----------------------------------------------------- a graph by hand */

typedef struct hg {
    mtk_graph_node nodes[32];
    int32_t nn;
    mtk_graph_tensor tensors[64];
    int32_t nt;
    mtk_graph_storage storages[64];
    int32_t ns;
    int32_t ids[256];
    int32_t nids;
    mtk_saved saved[64];
    int32_t nsaved;
    mtk_backward_alloc bw[64];
    int32_t nbw;
    const char *names[16];
    int32_t depths[16];
    int32_t nm;
    int32_t keep[4];
    int32_t nkeep;
    mem_graph g;
} hg;

static int32_t tensor(hg *h, mtk_graph_storage_kind kind, int64_t bytes, int32_t producer, bool rg, const char *name)
{
    int32_t t = h->nt++, s = h->ns++;
    h->storages[s] = (mtk_graph_storage){ .nbytes = bytes, .kind = kind, .base = t };
    h->tensors[t] = (mtk_graph_tensor){ .storage = s, .view_of = -1, .producer = producer, .requires_grad = rg,
                                        .name = name };
    return t;
}

static int32_t param(hg *h, int64_t bytes, const char *name)
{
    return tensor(h, MTK_STORAGE_PARAMETER, bytes, -1, true, name);
}

static int32_t input(hg *h, int64_t bytes) { return tensor(h, MTK_STORAGE_INPUT, bytes, -1, false, NULL); }

static int32_t module(hg *h, const char *name, int32_t depth)
{
    h->names[h->nm] = name;
    h->depths[h->nm] = depth;
    return h->nm++;
}

/* A node of `module` over inputs; its one output is fresh (`bytes`) or,
 * with bytes < 0, a view of its first input.  Returns the node. */
static int32_t node(hg *h, int32_t mod, int64_t bytes, int32_t nin, const int32_t *in)
{
    int32_t n = h->nn++;
    bool rg = false;
    int32_t *ins = &h->ids[h->nids];
    for (int32_t i = 0; i < nin; i++) {
        ins[i] = in[i];
        rg = rg || h->tensors[in[i]].requires_grad;
    }
    h->nids += nin;
    int32_t out;
    if (bytes >= 0) {
        out = tensor(h, MTK_STORAGE_ACTIVATION, bytes, n, rg, NULL);
    } else {
        out = h->nt++;
        h->tensors[out] = (mtk_graph_tensor){ .storage = h->tensors[in[0]].storage, .view_of = in[0], .producer = n,
                                              .requires_grad = rg };
    }
    h->ids[h->nids] = out;
    h->nodes[n] = (mtk_graph_node){ .inputs = ins, .ninputs = nin, .outputs = &h->ids[h->nids], .noutputs = 1,
                                    .module = mod };
    h->nids++;
    return n;
}

static int32_t out_of(const hg *h, int32_t n) { return h->nodes[n].outputs[0]; }

static void save(hg *h, int32_t n, mtk_saved_kind kind, int32_t index, int64_t new_bytes)
{
    mtk_graph_node *nd = &h->nodes[n];
    if (!nd->saved) nd->saved = &h->saved[h->nsaved];
    h->saved[h->nsaved++] = (mtk_saved){ .kind = kind, .index = index, .dtype = MTK_UINT8, .ndim = 1,
                                         .shape = { new_bytes } };
    nd->nsaved++;
}

static void grad(hg *h, int32_t n, int32_t grad_of, int64_t bytes)
{
    mtk_graph_node *nd = &h->nodes[n];
    if (!nd->backward) nd->backward = &h->bw[h->nbw];
    h->bw[h->nbw++] = (mtk_backward_alloc){ .grad_of = grad_of, .nbytes = bytes };
    nd->nbackward++;
}

/* A gradient for input grad_of that reaches it as a view of its buffer
 * (linear's weight gradient, TBackward0's t()). */
static void grad_view(hg *h, int32_t n, int32_t grad_of, int64_t bytes)
{
    grad(h, n, grad_of, bytes);
    h->bw[h->nbw - 1].view = true;
}

static const mem_graph *finish(hg *h, int32_t loss)
{
    h->g = (mem_graph){ .nodes = h->nodes, .nnodes = h->nn, .tensors = h->tensors, .ntensors = h->nt,
                        .storages = h->storages, .nstorages = h->ns, .module_names = h->names,
                        .module_depths = h->depths, .nmodules = h->nm, .loss = loss, .keep = h->keep,
                        .nkeep = h->nkeep };
    return &h->g;
}

/* The default options with `mode` and `opt` chosen. */
static mtk_memory_options options_of(mtk_memory_mode mode, mtk_optimizer_kind opt)
{
    mtk_memory_options o;
    mtk_memory_options_init(&o);
    o.mode = mode;
    o.optimizer = opt;
    return o;
}

static mtk_memory_plan plan_of(mtk_ctx *ctx, const mem_graph *g, mtk_memory_mode mode, mtk_optimizer_kind opt)
{
    mtk_memory_options o = options_of(mode, opt);
    mtk_memory_plan p = { 0 };
    assert_true(mem_replay(ctx, g, &o, &p));
    return p;
}

/* ------------------------------------------------------------ inference */

static void inference_frees_each_storage_after_its_last_use(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 100);
    int32_t a = node(&h, -1, 1000, 1, &x);
    int32_t b = node(&h, -1, 2000, 1, (int32_t[]){ out_of(&h, a) });
    int32_t c = node(&h, -1, 500, 1, (int32_t[]){ out_of(&h, b) });
    h.keep[h.nkeep++] = out_of(&h, c);
    mtk_memory_plan p = plan_of(ctx, finish(&h, -1), MTK_MEMORY_INFERENCE, MTK_OPTIMIZER_SGD);
    assert_int_equal(p.peak.peak_bytes, 100 + 1000 + 2000); /* a and b at b */
    assert_int_equal(p.peak.peak_at.node, b);
    assert_int_equal(p.ntimeline, 3);
    assert_int_equal(p.timeline[0].live_bytes, 1100);
    assert_int_equal(p.timeline[1].live_bytes, 2100); /* a freed after b */
    assert_int_equal(p.timeline[2].live_bytes, 600);  /* c kept */
    assert_int_equal(p.peak.breakdown.transient_at_peak, 3100);
    mtk_ctx_free(ctx);
}

static void inference_views_keep_their_storage_alive(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 100);
    int32_t a = node(&h, -1, 1000, 1, &x);
    int32_t v = node(&h, -1, -1, 1, (int32_t[]){ out_of(&h, a) }); /* a view of a */
    int32_t b = node(&h, -1, 2000, 1, &x);
    int32_t c = node(&h, -1, 10, 2, (int32_t[]){ out_of(&h, v), out_of(&h, b) });
    mtk_memory_plan p = plan_of(ctx, finish(&h, -1), MTK_MEMORY_INFERENCE, MTK_OPTIMIZER_SGD);
    /* a's storage lives through its view's last use: 100 + 1000 + 2000 + 10 */
    assert_int_equal(p.peak.peak_bytes, 3110);
    assert_int_equal(p.peak.peak_at.node, c);
    assert_int_equal(p.timeline[b].live_bytes, 3100);
    mtk_ctx_free(ctx);
}

/* root: a = f(x); module "m" (called once): b = g(a), c = h(b); then
 * d = k(c).  a's last use is b, but the caller's frame passed it to m and
 * holds it until m returns, so it lives through c. */
static void inference_a_module_calls_arguments_live_until_it_returns(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t root = module(&h, "", 0), m = module(&h, "m", 1);
    int32_t x = input(&h, 100);
    int32_t a = node(&h, root, 1000, 1, &x);
    int32_t b = node(&h, m, 2000, 1, (int32_t[]){ out_of(&h, a) });
    int32_t c = node(&h, m, 3000, 1, (int32_t[]){ out_of(&h, b) });
    int32_t d = node(&h, root, 10, 1, (int32_t[]){ out_of(&h, c) });
    h.keep[h.nkeep++] = out_of(&h, d);
    mtk_memory_plan p = plan_of(ctx, finish(&h, -1), MTK_MEMORY_INFERENCE, MTK_OPTIMIZER_SGD);
    /* at c: x, a (held by the caller), b (c's input) and c */
    assert_int_equal(p.peak.peak_bytes, 100 + 1000 + 2000 + 3000);
    assert_int_equal(p.peak.peak_at.node, c);
    assert_int_equal(p.timeline[b].live_bytes, 3100);
    assert_int_equal(p.timeline[c].live_bytes, 3100); /* a and b freed as m returns */
    mtk_ctx_free(ctx);
}

/* layer "l": module "l.a" (once) makes o (used) and w (its second output,
 * used by nothing: `o, _ = self.a(x)`), then the layer runs e = f(o) and
 * g = h(e).  w stays bound in the layer's frame until the layer returns. */
static void inference_an_unused_module_output_lives_until_its_caller_returns(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    module(&h, "", 0);
    int32_t l = module(&h, "l", 1), a = module(&h, "l.a", 2);
    int32_t x = input(&h, 100);
    int32_t w = node(&h, a, 700, 1, &x);
    int32_t o = node(&h, a, 1000, 1, &x);
    int32_t e = node(&h, l, 2000, 1, (int32_t[]){ out_of(&h, o) });
    int32_t g = node(&h, l, 10, 1, (int32_t[]){ out_of(&h, e) });
    h.keep[h.nkeep++] = out_of(&h, g);
    static const int32_t start[4] = { 0, 0, 0, 2 };
    int32_t outs[2] = { out_of(&h, o), out_of(&h, w) };
    mem_graph *mg = (mem_graph *)finish(&h, -1);
    mg->module_out_start = start;
    mg->module_out = outs;
    mtk_memory_plan p = plan_of(ctx, mg, MTK_MEMORY_INFERENCE, MTK_OPTIMIZER_SGD);
    assert_int_equal(p.timeline[w].live_bytes, 800);
    assert_int_equal(p.timeline[e].live_bytes, 2800); /* x, w, e (o freed) */
    assert_int_equal(p.timeline[g].live_bytes, 110);  /* w freed as l returns */
    assert_int_equal(p.peak.peak_bytes, 100 + 700 + 1000 + 2000);
    mtk_ctx_free(ctx);
}

/* root: a = f(x); container "blocks" (never called) runs "blocks.0":
 * b = g(a) and "blocks.1": c = h(b); then d = k(c).  By default the
 * container is a frame that keeps a (its first input) through blocks.1;
 * frameless, a dies as blocks.0 returns. */
static mtk_memory_plan loop_over_a_container(mtk_ctx *ctx, hg *h, bool frameless, int32_t *c)
{
    memset(h, 0, sizeof *h);
    int32_t root = module(h, "", 0), blocks = module(h, "blocks", 1);
    int32_t b0 = module(h, "blocks.0", 2), b1 = module(h, "blocks.1", 2);
    int32_t x = input(h, 100);
    int32_t a = node(h, root, 1000, 1, &x);
    int32_t b = node(h, b0, 2000, 1, (int32_t[]){ out_of(h, a) });
    *c = node(h, b1, 3000, 1, (int32_t[]){ out_of(h, b) });
    int32_t d = node(h, root, 10, 1, (int32_t[]){ out_of(h, *c) });
    h->keep[h->nkeep++] = out_of(h, d);
    static const int32_t calls[4] = { 1, 0, 1, 1 };
    static bool marks[4];
    memset(marks, 0, sizeof marks);
    marks[blocks] = frameless;
    mem_graph *mg = (mem_graph *)finish(h, -1);
    mg->module_calls = calls;
    mg->module_frameless = marks;
    return plan_of(ctx, mg, MTK_MEMORY_INFERENCE, MTK_OPTIMIZER_SGD);
}

static void inference_a_container_keeps_its_first_input_unless_frameless(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    int32_t c;
    mtk_memory_plan held = loop_over_a_container(ctx, &h, false, &c);
    assert_int_equal(held.peak.peak_bytes, 100 + 1000 + 2000 + 3000); /* x, a (the loop's), b, c */
    assert_int_equal(held.peak.peak_at.node, c);
    mtk_memory_plan frameless = loop_over_a_container(ctx, &h, true, &c);
    assert_int_equal(frameless.peak.peak_bytes, 100 + 2000 + 3000); /* a freed as blocks.0 returned */
    assert_int_equal(frameless.timeline[c - 1].live_bytes, 100 + 2000);
    mtk_ctx_free(ctx);
}

static void an_ops_workspace_adds_to_the_peak_inside_it(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 100);
    int32_t a = node(&h, -1, 1000, 1, &x);
    h.nodes[a].transient_bytes = 3000;        /* with autograd recording it */
    h.nodes[a].transient_nograd_bytes = 5000; /* without: inference's */
    mtk_memory_plan p = plan_of(ctx, finish(&h, -1), MTK_MEMORY_INFERENCE, MTK_OPTIMIZER_SGD);
    assert_int_equal(p.peak.peak_bytes, 6100);
    assert_int_equal(p.peak.breakdown.transient_at_peak, 6100);
    assert_int_equal(p.timeline[0].live_bytes, 100); /* a is dead after it: nothing uses it */
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------- training */

/* x (100) -> h = mm(x, W) (800, saves x) -> a = relu(h) (800, saves a)
 * -> loss = sum(a) (4); W is 400 bytes. */
static const mem_graph *mlp(hg *h, int32_t *nodes)
{
    memset(h, 0, sizeof *h);
    int32_t x = input(h, 100), w = param(h, 400, "w");
    int32_t mm = node(h, -1, 800, 2, (int32_t[]){ x, w });
    save(h, mm, MTK_SAVED_INPUT, 0, 0);
    save(h, mm, MTK_SAVED_INPUT, 1, 0); /* the parameter: always live */
    grad(h, mm, 1, 400);
    int32_t relu = node(h, -1, 800, 1, (int32_t[]){ out_of(h, mm) });
    save(h, relu, MTK_SAVED_OUTPUT, 0, 0);
    grad(h, relu, 0, 800);
    int32_t sum = node(h, -1, 4, 1, (int32_t[]){ out_of(h, relu) });
    grad(h, sum, 0, 800);
    h->keep[h->nkeep++] = out_of(h, sum);
    if (nodes) nodes[0] = mm, nodes[1] = relu, nodes[2] = sum;
    return finish(h, out_of(h, sum));
}

static void training_holds_saved_tensors_until_their_backward(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    int32_t n[3];
    const mem_graph *g = mlp(&h, n);
    mtk_memory_plan p = plan_of(ctx, g, MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    /* forward: 500 + h 800 + a 800 = 2100 at relu, h freed (not saved);
     * backward of relu: x 100 + W 400 + a 800 (saved) + grad_a 800 +
     * grad_h 800 + loss 4 = 2904 */
    assert_int_equal(p.peak.peak_bytes, 2904);
    assert_int_equal(p.peak.peak_at.node, n[1]);
    assert_int_equal(p.peak.peak_at.phase, MTK_PHASE_BACKWARD);
    assert_int_equal(p.peak.breakdown.parameters, 400);
    assert_int_equal(p.peak.breakdown.activations_saved, 900); /* a, and x held by mm */
    assert_int_equal(p.peak.breakdown.transient_at_peak, 1604);
    assert_int_equal(p.peak.breakdown.gradients, 0);
    assert_int_equal(p.activations_saved_forward, 900);
    /* after backward W's gradient is stolen into .grad; zero_grad frees it */
    bool saw_grad = false;
    for (int32_t i = 0; i < p.ntimeline; i++)
        if (p.timeline[i].phase == MTK_PHASE_BACKWARD && p.timeline[i].node == n[0])
            saw_grad = p.timeline[i].live_bytes == 100 + 400 + 400 + 4;
    assert_true(saw_grad);
    assert_int_equal(p.timeline[p.ntimeline - 1].phase, MTK_PHASE_ZERO_GRAD);
    assert_int_equal(p.timeline[p.ntimeline - 1].live_bytes, 500);
    mtk_ctx_free(ctx);
}

static void adamw_states_exist_before_the_second_step(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    mtk_memory_plan p = plan_of(ctx, mlp(&h, NULL), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_ADAMW);
    /* second step: exp_avg, exp_avg_sq (400 each) and the step scalar (4) */
    assert_int_equal(p.peak.peak_bytes, 2904 + 804);
    assert_int_equal(p.peak.breakdown.optimizer_states, 804);
    /* first step: the states appear in the step, after backward's peak */
    assert_int_equal(p.first_step.peak_bytes, 2904);
    mtk_ctx_free(ctx);
}

/* Parameters large, activations tiny: the optimizer step is the peak. */
static const mem_graph *big_params(hg *h)
{
    memset(h, 0, sizeof *h);
    int32_t x = input(h, 8), w1 = param(h, 1000, "w1"), w2 = param(h, 3000, "w2");
    int32_t a = node(h, -1, 8, 2, (int32_t[]){ x, w1 });
    grad(h, a, 1, 1000);
    int32_t b = node(h, -1, 8, 2, (int32_t[]){ out_of(h, a), w2 });
    grad(h, b, 0, 8);
    grad(h, b, 1, 3000);
    return finish(h, out_of(h, b));
}

static void single_tensor_adam_keeps_the_previous_denom_while_making_the_next(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    mtk_memory_plan p = plan_of(ctx, big_params(&h), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_ADAM);
    /* steady: x 8 + params 4000 + grads 4000 + states 8008 + the loss 8
     * (alive until the step function returns); w2's update holds w1's
     * denom (1000) while sqrt and quotient of w2 (3000 each) */
    int64_t base = 8 + 4000 + 4000 + 8008 + 8;
    assert_int_equal(p.peak.peak_bytes, base + 1000 + 6000);
    assert_int_equal(p.peak.peak_at.phase, MTK_PHASE_OPTIMIZER);
    assert_string_equal(p.peak.peak_at.op, "adam.step");
    assert_int_equal(p.peak.breakdown.gradients, 4000);
    assert_int_equal(p.peak.breakdown.transient_at_peak, 8 + 8 + 7000);
    mtk_ctx_free(ctx);
}

static void foreach_adam_on_cuda_allocates_all_square_roots_at_once(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    mtk_memory_options o = options_of(MTK_MEMORY_TRAINING, MTK_OPTIMIZER_ADAMW);
    o.device_kind = MTK_DEVICE_KIND_CUDA;
    o.constants.cublas_workspace_bytes = 4096;
    mtk_memory_plan p = { 0 };
    assert_true(mem_replay(ctx, big_params(&h), &o, &p));
    /* every allocation rounded up to 512 bytes: 8 -> 512, 1000 -> 1024,
     * 3000 -> 3072; states on the device without the cpu step scalars;
     * cuBLAS's workspace from the start */
    int64_t params = 1024 + 3072, base = 4096 + 512 + 512 + params + params + 2 * params;
    assert_int_equal(p.peak.peak_bytes, base + params);
    assert_int_equal(p.peak.breakdown.optimizer_states, 2 * params);
    assert_int_equal(p.peak.breakdown.transient_at_peak, 4096 + 512 + 512 + params); /* + ids, loss */
    mtk_ctx_free(ctx);
}

static void momentum_clones_gradients_on_the_first_step_only(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    mtk_memory_plan p = plan_of(ctx, big_params(&h), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_MOMENTUM);
    assert_int_equal(p.first_step.peak_bytes, 8 + 4000 + 4000 + 4000 + 8);
    assert_int_equal(p.first_step.peak_at.phase, MTK_PHASE_OPTIMIZER);
    assert_int_equal(p.peak.breakdown.optimizer_states, 4000);
    mtk_memory_plan sgd = plan_of(ctx, big_params(&h), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    assert_int_equal(sgd.peak.breakdown.optimizer_states, 0);
    assert_int_equal(sgd.peak.peak_bytes, sgd.first_step.peak_bytes);
    mtk_ctx_free(ctx);
}

static void a_tied_parameter_gets_one_grad_buffer(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 8), w = param(&h, 1000, "w");
    int32_t a = node(&h, -1, 8, 2, (int32_t[]){ x, w });
    grad(&h, a, 1, 1000);
    int32_t b = node(&h, -1, 8, 2, (int32_t[]){ out_of(&h, a), w });
    grad(&h, b, 0, 8);
    grad(&h, b, 1, 1000);
    mtk_memory_plan p = plan_of(ctx, finish(&h, out_of(&h, b)), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    /* b's backward: .grad stolen (1000); a's: a second 1000 added in place
     * then freed.  At a's backward: x, w, .grad, the new one, grad of a,
     * the loss (b) */
    assert_int_equal(p.peak.peak_bytes, 8 + 1000 + 1000 + 1000 + 8 + 8);
    for (int32_t i = 0; i < p.ntimeline; i++)
        if (p.timeline[i].phase == MTK_PHASE_BACKWARD && p.timeline[i].node == a)
            assert_int_equal(p.timeline[i].live_bytes, 8 + 1000 + 1000 + 8);
    mtk_ctx_free(ctx);
}

/* A tied weight read by an embedding-like node a, then by a linear-like
 * node b whose weight gradient is a view: b's backward runs first, and
 * its view waits in the weight's AccumulateGrad's InputBuffer; a's fresh
 * gradient cannot be added into a view (nor does torch add into the
 * incoming one), so old + new is a third 1000 while both live, and the
 * sum is stolen into .grad when a's edge, the last, reports. */
static void a_tied_weight_whose_first_gradient_is_a_view_is_summed_out_of_place(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 8), w = param(&h, 1000, "w");
    int32_t a = node(&h, -1, 8, 2, (int32_t[]){ x, w });
    grad(&h, a, 1, 1000);
    int32_t b = node(&h, -1, 8, 2, (int32_t[]){ out_of(&h, a), w });
    grad(&h, b, 0, 8);
    grad_view(&h, b, 1, 1000);
    mtk_memory_plan p = plan_of(ctx, finish(&h, out_of(&h, b)), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    /* at a's backward, its incoming gradient gone: x, w, the view, a's
     * new gradient, their sum, the loss (b) */
    assert_int_equal(p.peak.peak_bytes, 8 + 1000 + 1000 + 1000 + 1000 + 8);
    assert_int_equal(p.peak.peak_at.node, a);
    assert_int_equal(p.peak.peak_at.phase, MTK_PHASE_BACKWARD);
    /* and the gradient counts as .grad only once it is stolen */
    assert_int_equal(p.peak.breakdown.gradients, 0);
    for (int32_t i = 0; i < p.ntimeline; i++)
        if (p.timeline[i].phase == MTK_PHASE_OPTIMIZER) assert_int_equal(p.timeline[i].grad_bytes, 1000);
    mtk_ctx_free(ctx);
}

/* The same weight read twice through fresh gradients (two embeddings):
 * the first waits in the InputBuffer and the second is added into it in
 * place, so no third buffer. */
static void a_tied_weight_whose_first_gradient_is_its_own_is_summed_in_place(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 8), w = param(&h, 1000, "w");
    int32_t a = node(&h, -1, 8, 2, (int32_t[]){ x, w });
    grad(&h, a, 1, 1000);
    int32_t b = node(&h, -1, 8, 2, (int32_t[]){ out_of(&h, a), w });
    grad(&h, b, 0, 8);
    grad(&h, b, 1, 1000);
    mtk_memory_plan p = plan_of(ctx, finish(&h, out_of(&h, b)), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    assert_int_equal(p.peak.peak_bytes, 8 + 1000 + 1000 + 1000 + 8 + 8);
    mtk_ctx_free(ctx);
}

/* With gradient accumulation the second micro-batch's first gradient of
 * a tied weight waits in the InputBuffer beside the existing .grad until
 * the last edge reports (torch does not add it to .grad on arrival): at
 * a's backward .grad, the view, a's gradient and their sum are live. */
static void a_tied_weights_gradients_wait_beside_an_existing_grad(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 8), w = param(&h, 1000, "w");
    int32_t a = node(&h, -1, 8, 2, (int32_t[]){ x, w });
    grad(&h, a, 1, 1000);
    int32_t b = node(&h, -1, 8, 2, (int32_t[]){ out_of(&h, a), w });
    grad(&h, b, 0, 8);
    grad_view(&h, b, 1, 1000);
    mtk_memory_options o = options_of(MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    o.grad_accum = 2;
    mtk_memory_plan p = { 0 };
    assert_true(mem_replay(ctx, finish(&h, out_of(&h, b)), &o, &p));
    /* x, w, .grad, the view, a's gradient, the sum and the loss (the
     * first micro-batch's went when the second forward replaced it) */
    assert_int_equal(p.peak.peak_bytes, 8 + 1000 + 1000 + 1000 + 1000 + 1000 + 8);
    assert_int_equal(p.peak.breakdown.gradients, 1000);
    mtk_ctx_free(ctx);
}

static void a_passed_through_gradient_shared_by_two_inputs_is_summed_out_of_place(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 8), w = param(&h, 400, "w");
    int32_t a = node(&h, -1, 400, 2, (int32_t[]){ x, w }); /* a = x * w */
    grad(&h, a, 1, 400);
    int32_t c = node(&h, -1, 400, 2, (int32_t[]){ out_of(&h, a), out_of(&h, a) }); /* c = a + a */
    grad(&h, c, 0, 0);
    grad(&h, c, 1, 0); /* add's backward passes the gradient through to both */
    mtk_memory_plan p = plan_of(ctx, finish(&h, out_of(&h, c)), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    /* c's backward: both gradients of a are the seed (400) itself, so the
     * InputBuffer cannot add in place: seed + seed is a new 400 while the
     * seed lives: x 8 + w 400 + c 400 (the loss) + seed + sum */
    assert_int_equal(p.peak.peak_bytes, 8 + 400 + 400 + 400 + 400);
    assert_int_equal(p.peak.peak_at.node, c);
    assert_int_equal(p.timeline[p.ntimeline - 1].live_bytes, 408);
    mtk_ctx_free(ctx);
}

/* Two numbered layers, each x -> u = f(x) (saves x, 1000) -> y = g(u)
 * (saves u), then the loss. */
static const mem_graph *layers(hg *h, int32_t *first_layer_nodes)
{
    memset(h, 0, sizeof *h);
    module(h, "", 0);
    int32_t list = module(h, "layers", 1);
    (void)list;
    int32_t l0 = module(h, "layers.0", 2), l1 = module(h, "layers.1", 2);
    int32_t w = param(h, 40, "layers.0.w");
    int32_t x = input(h, 8);
    int32_t e = node(h, 0, 100, 2, (int32_t[]){ x, w }); /* embedding-ish: requires grad */
    grad(h, e, 1, 40);
    int32_t cur = out_of(h, e);
    for (int32_t l = 0; l < 2; l++) {
        int32_t m = l ? l1 : l0;
        int32_t u = node(h, m, 1000, 1, &cur);
        save(h, u, MTK_SAVED_INPUT, 0, 0);
        grad(h, u, 0, 100);
        int32_t y = node(h, m, 100, 1, (int32_t[]){ out_of(h, u) });
        save(h, y, MTK_SAVED_INPUT, 0, 0);
        save(h, y, MTK_SAVED_NEW, 0, 50);
        grad(h, y, 0, 1000);
        if (l == 0 && first_layer_nodes) first_layer_nodes[0] = u, first_layer_nodes[1] = y;
        cur = out_of(h, y);
    }
    int32_t loss = node(h, 0, 4, 1, &cur);
    grad(h, loss, 0, 100);
    return finish(h, out_of(h, loss));
}

static void checkpointing_keeps_layer_inputs_and_recomputes_in_backward(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    mtk_memory_options o = options_of(MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    mtk_memory_plan full = { 0 }, ck = { 0 };
    o.constants.cpu_rng_state_bytes = 0; /* the rng state: its own test */
    assert_true(mem_replay(ctx, layers(&h, NULL), &o, &full));
    o.checkpointing = true;
    assert_true(mem_replay(ctx, layers(&h, NULL), &o, &ck));
    /* saved per layer without: x (100) + u (1000) + new (50) */
    assert_int_equal(full.activations_saved_forward, 2 * 1150);
    /* with: each layer keeps only its input (100) */
    assert_int_equal(ck.activations_saved_forward, 2 * 100);
    bool recomputed = false;
    for (int32_t i = 0; i < ck.ntimeline; i++) recomputed = recomputed || ck.timeline[i].phase == MTK_PHASE_RECOMPUTE;
    assert_true(recomputed);
    assert_true(ck.peak.peak_bytes < full.peak.peak_bytes);
    /* full: backward of layers.1's g: w 40, x 8, .. worked: the forward
     * ends with e, u0, y0 (input of layer 1), u1 saved, y1 freed? (y1 is
     * the loss's input, saved by nothing: freed at the loss) */
    assert_string_equal(full.modules[2].name, "layers.0");
    assert_int_equal(full.modules[2].activations_saved, 1150);
    assert_int_equal(full.modules[1].activations_saved, 2300);
    assert_int_equal(full.modules[2].parameters, 40);
    assert_int_equal(full.modules[0].parameters, 40);
    mtk_ctx_free(ctx);
}

/* Checkpointing with preserve_rng_state on the cpu: each layer keeps
 * torch.get_rng_state() from its forward to the end of its backward, and
 * fork_rng holds one more while a layer recomputes; none on CUDA. */
static void checkpointing_keeps_each_layers_rng_state_on_the_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    mtk_memory_options o = options_of(MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    o.checkpointing = true;
    o.constants.cpu_rng_state_bytes = 0;
    mtk_memory_plan none = { 0 }, rng = { 0 };
    assert_true(mem_replay(ctx, layers(&h, NULL), &o, &none));
    o.constants.cpu_rng_state_bytes = 5056;
    assert_true(mem_replay(ctx, layers(&h, NULL), &o, &rng));
    assert_int_equal(none.ntimeline, rng.ntimeline);
    int32_t last_forward = -1, first_recompute = -1;
    for (int32_t i = 0; i < rng.ntimeline; i++) {
        if (rng.timeline[i].phase == MTK_PHASE_FORWARD) last_forward = i;
        if (rng.timeline[i].phase == MTK_PHASE_RECOMPUTE && first_recompute < 0) first_recompute = i;
    }
    assert_true(last_forward >= 0 && first_recompute > last_forward);
    /* both layers' states at the end of the forward */
    assert_int_equal(rng.timeline[last_forward].live_bytes - none.timeline[last_forward].live_bytes, 2 * 5056);
    /* layer 1 recomputes first: its state, layer 0's and fork_rng's */
    assert_int_equal(rng.timeline[first_recompute].live_bytes - none.timeline[first_recompute].live_bytes,
                     3 * 5056);
    /* all of them gone when the step ends */
    assert_int_equal(rng.timeline[rng.ntimeline - 1].live_bytes, none.timeline[none.ntimeline - 1].live_bytes);
    o.device_kind = MTK_DEVICE_KIND_CUDA;
    mtk_memory_plan cuda = { 0 }, cuda0 = { 0 };
    assert_true(mem_replay(ctx, layers(&h, NULL), &o, &cuda));
    o.constants.cpu_rng_state_bytes = 0;
    assert_true(mem_replay(ctx, layers(&h, NULL), &o, &cuda0));
    assert_int_equal(cuda.peak.peak_bytes, cuda0.peak.peak_bytes);
    mtk_ctx_free(ctx);
}

/* A layer where an op returns its input (to() of the same dtype: the
 * same tensor is the output of two nodes): its recompute makes one copy,
 * and every step ends where it began. */
static void a_recompute_allocates_a_tensor_named_twice_once(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    module(&h, "", 0);
    module(&h, "layers", 1);
    int32_t l0 = module(&h, "layers.0", 2);
    int32_t w = param(&h, 40, "layers.0.w"), x = input(&h, 8);
    int32_t e = node(&h, 0, 100, 2, (int32_t[]){ x, w });
    grad(&h, e, 1, 40);
    int32_t sm = node(&h, l0, 1000, 1, (int32_t[]){ out_of(&h, e) }); /* softmax */
    save(&h, sm, MTK_SAVED_OUTPUT, 0, 0);
    grad(&h, sm, 0, 100);
    int32_t to = node(&h, l0, 0, 1, (int32_t[]){ out_of(&h, sm) }); /* to(): returns its input */
    h.ids[h.nids - 1] = out_of(&h, sm);
    h.nt--, h.ns--;
    grad(&h, to, 0, 0);
    int32_t y = node(&h, l0, 100, 1, (int32_t[]){ out_of(&h, sm) });
    save(&h, y, MTK_SAVED_INPUT, 0, 0);
    grad(&h, y, 0, 1000);
    int32_t loss = node(&h, 0, 4, 1, (int32_t[]){ out_of(&h, y) });
    grad(&h, loss, 0, 100);
    mtk_memory_options o = options_of(MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    o.checkpointing = true;
    o.constants.cpu_rng_state_bytes = 0;
    mtk_memory_plan p = { 0 };
    assert_true(mem_replay(ctx, finish(&h, out_of(&h, loss)), &o, &p));
    assert_int_equal(p.timeline[p.ntimeline - 1].live_bytes, 48);
    assert_int_equal(p.first_step.peak_bytes, p.peak.peak_bytes);
    int64_t most = 0;
    for (int32_t i = 0; i < p.ntimeline; i++)
        if (p.timeline[i].phase == MTK_PHASE_RECOMPUTE && p.timeline[i].live_bytes > most) most = p.timeline[i].live_bytes;
    /* w, x, e (kept by the checkpoint), y's gradient 100, the loss 4, the
     * seed's 4 are gone; the recompute: softmax 1000 once, y 100 */
    assert_true(most < 48 + 100 + 1000 + 1000);
    mtk_ctx_free(ctx);
}

static void gradient_accumulation_peaks_with_the_gradients_present(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    mtk_memory_options o = options_of(MTK_MEMORY_TRAINING, MTK_OPTIMIZER_SGD);
    mtk_memory_plan one = { 0 }, four = { 0 };
    assert_true(mem_replay(ctx, mlp(&h, NULL), &o, &one));
    o.grad_accum = 4;
    assert_true(mem_replay(ctx, mlp(&h, NULL), &o, &four));
    /* the second micro-batch's backward at relu sees W's .grad (400) */
    assert_int_equal(four.peak.peak_bytes, one.peak.peak_bytes + 400);
    assert_int_equal(four.peak.breakdown.gradients, 400);
    mtk_ctx_free(ctx);
}

/* Mixed precision (fp32 masters of a 16-bit trace): parameters, .grad and
 * Adam's states in float32 (twice the traced bytes), and each weight's
 * 16-bit copy held from its first matmul to that matmul's backward. */
static void mixed_precision_keeps_float32_masters_and_16_bit_copies(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 8), w = param(&h, 1000, "w"); /* 1000 bytes of bfloat16 */
    int32_t a = node(&h, -1, 8, 2, (int32_t[]){ x, w });
    grad(&h, a, 1, 1000);
    h.keep[h.nkeep++] = out_of(&h, a);
    const mem_graph *g = finish(&h, out_of(&h, a));
    h.g.master_scale = 2;
    mtk_memory_options o = options_of(MTK_MEMORY_TRAINING, MTK_OPTIMIZER_ADAM);
    o.mixed_precision = MTK_MIXED_BF16;
    mtk_memory_plan p = { 0 };
    assert_true(mem_replay(ctx, g, &o, &p));
    assert_int_equal(p.parameter_bytes, 1000); /* the traced tree's */
    assert_int_equal(p.peak.breakdown.parameters, 2000);
    assert_int_equal(p.peak.breakdown.optimizer_states, 2 * 2000 + 4);
    assert_int_equal(p.activations_saved_forward, 1000); /* the bf16 copy */
    int64_t at_a = -1;
    for (int32_t i = 0; i < p.ntimeline; i++)
        if (p.timeline[i].phase == MTK_PHASE_BACKWARD && p.timeline[i].node == a) at_a = p.timeline[i].live_bytes;
    /* after a's backward: x, w (fp32), states, the loss, .grad in fp32;
     * the copy and the bf16 gradient gone */
    assert_int_equal(at_a, 8 + 2000 + 4004 + 8 + 2000);
    /* the step: w's update makes sqrt and quotient (2000 each) */
    assert_int_equal(p.peak.peak_bytes, 8 + 2000 + 4004 + 8 + 2000 + 4000);
    mtk_ctx_free(ctx);
}

static void training_without_a_loss_is_an_error(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    memset(&h, 0, sizeof h);
    int32_t x = input(&h, 100);
    node(&h, -1, 1000, 1, &x);
    mtk_memory_options o;
    mtk_memory_options_init(&o);
    o.mode = MTK_MEMORY_TRAINING;
    mtk_memory_plan p = { 0 };
    assert_false(mem_replay(ctx, finish(&h, -1), &o, &p));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mtk_ctx_message(ctx), "loss"));
    mtk_ctx_free(ctx);
}

static void json_has_the_documented_keys(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static hg h;
    mtk_memory_plan p = plan_of(ctx, layers(&h, NULL), MTK_MEMORY_TRAINING, MTK_OPTIMIZER_ADAMW);
    char *json = mtk_memory_plan_json(ctx, &p);
    assert_non_null(json);
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    assert_int_equal((int64_t)cJSON_GetObjectItem(root, "peak_bytes")->valuedouble, p.peak.peak_bytes);
    const char *keys[] = { "parameters", "gradients", "optimizer_states", "activations_saved", "kv_cache",
                           "transient_at_peak" };
    cJSON *b = cJSON_GetObjectItem(root, "breakdown");
    int64_t sum = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        assert_non_null(cJSON_GetObjectItem(b, keys[i]));
        sum += (int64_t)cJSON_GetObjectItem(b, keys[i])->valuedouble;
    }
    assert_int_equal(sum, p.peak.peak_bytes);
    cJSON *at = cJSON_GetObjectItem(root, "peak_at");
    assert_non_null(cJSON_GetObjectItem(at, "op"));
    assert_non_null(cJSON_GetObjectItem(at, "module"));
    assert_string_equal(cJSON_GetObjectItem(at, "phase")->valuestring, "backward");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "timeline")), p.ntimeline);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "modules")), 4);
    cJSON_Delete(root);
    char *text = mtk_memory_plan_text(ctx, &p, 3);
    assert_non_null(strstr(text, "layers.0-1 (2 x)"));
    assert_non_null(strstr(text, "peak at: backward"));
    mtk_ctx_free(ctx);
}

static void constants_are_one_table_and_overridable(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_memory_constants c;
    mtk_memory_constants_default(&c);
    assert_int_equal(c.cuda_block_bytes, 512);
    assert_true(mtk_memory_constant_count() >= 4);
    for (int32_t i = 0; i < mtk_memory_constant_count(); i++) assert_non_null(mtk_memory_constant_at(i)->source);
    assert_true(mtk_memory_constants_set(ctx, &c, "cuda_context_bytes", 123));
    assert_int_equal(c.cuda_context_bytes, 123);
    assert_false(mtk_memory_constants_set(ctx, &c, "no_such", 1));
    assert_non_null(strstr(mtk_ctx_message(ctx), "cuda_block_bytes"));
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inference_frees_each_storage_after_its_last_use),
        cmocka_unit_test(inference_views_keep_their_storage_alive),
        cmocka_unit_test(inference_a_module_calls_arguments_live_until_it_returns),
        cmocka_unit_test(inference_an_unused_module_output_lives_until_its_caller_returns),
        cmocka_unit_test(inference_a_container_keeps_its_first_input_unless_frameless),
        cmocka_unit_test(an_ops_workspace_adds_to_the_peak_inside_it),
        cmocka_unit_test(training_holds_saved_tensors_until_their_backward),
        cmocka_unit_test(adamw_states_exist_before_the_second_step),
        cmocka_unit_test(single_tensor_adam_keeps_the_previous_denom_while_making_the_next),
        cmocka_unit_test(foreach_adam_on_cuda_allocates_all_square_roots_at_once),
        cmocka_unit_test(momentum_clones_gradients_on_the_first_step_only),
        cmocka_unit_test(a_tied_parameter_gets_one_grad_buffer),
        cmocka_unit_test(a_tied_weight_whose_first_gradient_is_a_view_is_summed_out_of_place),
        cmocka_unit_test(a_tied_weight_whose_first_gradient_is_its_own_is_summed_in_place),
        cmocka_unit_test(a_tied_weights_gradients_wait_beside_an_existing_grad),
        cmocka_unit_test(a_passed_through_gradient_shared_by_two_inputs_is_summed_out_of_place),
        cmocka_unit_test(checkpointing_keeps_layer_inputs_and_recomputes_in_backward),
        cmocka_unit_test(checkpointing_keeps_each_layers_rng_state_on_the_cpu),
        cmocka_unit_test(a_recompute_allocates_a_tensor_named_twice_once),
        cmocka_unit_test(gradient_accumulation_peaks_with_the_gradients_present),
        cmocka_unit_test(mixed_precision_keeps_float32_masters_and_16_bit_copies),
        cmocka_unit_test(training_without_a_loss_is_an_error),
        cmocka_unit_test(json_has_the_documented_keys),
        cmocka_unit_test(constants_are_one_table_and_overridable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
