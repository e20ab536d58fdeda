/* The parallel-plan search: its cheap path gives mtk_shard_evaluate's
 * numbers, its best plans equal a brute force over every configuration
 * through mtk_shard_evaluate, nothing over memory is returned, and a
 * world no mesh fits is a clear error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mtk/mtk.h"
#include "mtk/plan.h"

#define MODEL "llama-3.2-1b"

static void search_options(mtk_shard_search_options *so)
{
    mtk_shard_search_options_init(so);
    so->gpus = 8, so->seq = 64, so->global_batch = 16, so->max_micro_batch = 2, so->top = 6;
    so->gpu.memory_gib = 4.0; /* some configurations fit, some do not */
    so->margin_bytes = 0;
}

/* Every configuration the search tries, in its order, through
 * mtk_shard_evaluate and mtk_shard_plan_estimate. */
static int32_t brute_force(mtk_ctx *ctx, const char *model, const mtk_shard_search_options *so,
                           mtk_shard_estimate *all, int32_t cap, int64_t *feasible)
{
    int32_t n = 0;
    *feasible = 0;
    for (int64_t mb = 1; mb <= so->max_micro_batch; mb *= 2) {
        mtk_shard_options o;
        mtk_shard_options_init(&o);
        o.micro_batch = mb, o.seq = so->seq, o.global_batch = so->global_batch;
        mtk_shard_analysis *a = mtk_shard_analyze(ctx, model, &o);
        assert_non_null(a);
        for (int32_t tp = 1; tp <= so->gpus; tp++)
        for (int32_t pp = 1; tp * pp <= so->gpus; pp++) {
            if (so->gpus % (tp * pp)) continue;
            int32_t dp = so->gpus / (tp * pp);
            for (int32_t ep = 1; ep <= tp * dp; ep++)
            for (int32_t z = 0; z < 5; z++)
            for (int32_t sp = 0; sp <= (tp > 1); sp++)
            for (int32_t rc = 0; rc < 3; rc++) {
                if (dp == 1 && z > 0) continue;
                /* transformers' expert mesh: ep a multiple of tp dividing tp x dp */
                if (ep > 1 && (ep % tp || (tp * dp) % ep)) break;
                o.tp = tp, o.pp = pp, o.dp = dp, o.ep = ep;
                o.zero = z < 4 ? z : 0, o.fsdp = z == 4, o.sp = sp, o.recompute = (mtk_shard_recompute)rc;
                o.without_slices = true;
                mtk_shard_plan *plan = mtk_shard_evaluate(ctx, a, &o);
                if (!plan) {
                    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
                    mtk_ctx_clear_error(ctx);
                    break; /* the mesh cannot work: none of its variants */
                }
                assert_true(n < cap);
                assert_true(mtk_shard_plan_estimate(ctx, plan, so, &all[n]));
                *feasible += all[n].fits;
                n++;
            }
        }
    }
    return n;
}

static bool same_configuration(const mtk_shard_options *a, const mtk_shard_options *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && a->ep == b->ep && a->zero == b->zero &&
           a->fsdp == b->fsdp && a->sp == b->sp && a->recompute == b->recompute && a->micro_batch == b->micro_batch;
}

static void check_against_brute_force(const char *model, const mtk_shard_search_options *base, bool want_ep,
                                      int32_t want_scaled)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_shard_search_options so = *base;
    mtk_shard_search_result *r = mtk_shard_search(ctx, model, &so);
    assert_non_null(r);
    assert_int_equal(r->scaled, want_scaled);
    enum { CAP = 4096 };
    mtk_shard_estimate *all = calloc(CAP, sizeof *all);
    int64_t feasible;
    int32_t n = brute_force(ctx, model, &so, all, CAP, &feasible);
    assert_int_equal(r->searched, n);
    assert_int_equal(r->feasible, feasible);
    assert_true(feasible > 0 && feasible < n);
    assert_true(r->nplans == so.top);
    /* the brute force's fastest that fit (equals: the smaller peak, then
       the first) */
    bool *taken = calloc((size_t)n, sizeof *taken);
    for (int32_t k = 0; k < r->nplans; k++) {
        int32_t best = -1;
        for (int32_t i = 0; i < n; i++)
            if (all[i].fits && !taken[i] &&
                (best < 0 || all[i].step_seconds < all[best].step_seconds ||
                 (all[i].step_seconds == all[best].step_seconds && all[i].peak_bytes < all[best].peak_bytes)))
                best = i;
        taken[best] = true;
        const mtk_shard_estimate *e = &r->plans[k];
        assert_true(e->fits && e->peak_bytes <= e->budget_bytes);
        assert_true(same_configuration(&e->options, &all[best].options));
        assert_true(e->step_seconds == all[best].step_seconds);
        assert_int_equal(e->peak_bytes, all[best].peak_bytes);
    }
    bool ep = false;
    for (int32_t k = 0; k < r->nplans; k++) ep |= r->plans[k].options.ep > 1;
    assert_true(ep == want_ep);
    free(taken);
    free(all);
    mtk_ctx_free(ctx);
}

static void search_best_equals_brute_force_over_evaluate(void **state)
{
    (void)state;
    mtk_shard_search_options so;
    search_options(&so);
    check_against_brute_force(MODEL, &so, false, 0);
}

static void moe_search_with_expert_parallel_equals_brute_force(void **state)
{
    (void)state;
    mtk_shard_search_options so;
    search_options(&so);
    so.gpus = 8, so.seq = 32, so.max_micro_batch = 1, so.top = 40;
    so.gpu.memory_gib = 110.0; /* mixtral-8x7b: only well-sharded plans fit */
    check_against_brute_force("mixtral-8x7b", &so, true, 0);
}

static void large_dense_search_with_scaled_micro_batches_equals_brute_force(void **state)
{
    (void)state;
    mtk_shard_search_options so;
    mtk_shard_search_options_init(&so);
    /* llama-3-8b on 64 GPUs at 1x4096: micro-batches 8 and 16 scaled from
       the traces at 2 and 4, the brute force traces each */
    so.gpus = 64, so.seq = 4096, so.global_batch = 1024, so.max_micro_batch = 16, so.top = 20;
    so.gpu.memory_gib = 40.0;
    check_against_brute_force("llama-3-8b", &so, false, 2);
}

/* Every plan the search keeps (top: all of them) has the numbers of the
 * brute force's plan of the same configuration, and the search keeps
 * exactly the brute force's plans that fit: what the search shares
 * between configurations (stages across micro-batches, replays across
 * variants) and what it skips (replays and step times of variants over
 * memory) changes no number. */
static void check_every_plan(const char *model, const mtk_shard_search_options *base)
{
    mtk_ctx *ctx = mtk_ctx_new();
    enum { CAP = 8192 };
    mtk_shard_search_options so = *base;
    so.top = CAP;
    mtk_shard_search_result *r = mtk_shard_search(ctx, model, &so);
    assert_non_null(r);
    mtk_shard_estimate *all = calloc(CAP, sizeof *all);
    int64_t feasible;
    int32_t n = brute_force(ctx, model, &so, all, CAP, &feasible);
    assert_int_equal(r->searched, n);
    assert_int_equal(r->feasible, feasible);
    assert_int_equal(r->nplans, feasible);
    int32_t matched = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!all[i].fits) continue;
        const mtk_shard_estimate *want = &all[i], *got = NULL;
        for (int32_t k = 0; k < r->nplans && !got; k++)
            if (same_configuration(&r->plans[k].options, &want->options)) got = &r->plans[k];
        assert_non_null(got);
        assert_int_equal(got->peak_bytes, want->peak_bytes);
        assert_int_equal(got->micro_batches, want->micro_batches);
        assert_int_equal(got->bottleneck_stage, want->bottleneck_stage);
        assert_true(got->step_seconds == want->step_seconds && got->compute_seconds == want->compute_seconds);
        assert_true(got->communication_seconds == want->communication_seconds);
        assert_true(got->bubble_seconds == want->bubble_seconds && got->mfu == want->mfu);
        matched++;
    }
    assert_int_equal(matched, r->nplans);
    free(all);
    mtk_ctx_free(ctx);
}

static void every_plan_of_a_search_equals_its_own_evaluation(void **state)
{
    (void)state;
    mtk_shard_search_options so;
    mtk_shard_search_options_init(&so);
    /* 16 GPUs: tp 1-8 meet the same pp, micro-batches 1-8 the same
       stages; first every configuration fits, then about half */
    so.gpus = 16, so.seq = 64, so.global_batch = 64, so.max_micro_batch = 8;
    so.gpu.memory_gib = 1000.0;
    check_every_plan(MODEL, &so);
    so.gpu.memory_gib = 3.0, so.margin_bytes = 0;
    check_every_plan(MODEL, &so);
}

static void search_returns_nothing_over_memory(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_shard_search_options so;
    search_options(&so);
    so.gpu.memory_gib = 0.01; /* nothing fits */
    mtk_shard_search_result *r = mtk_shard_search(ctx, MODEL, &so);
    assert_non_null(r);
    assert_true(r->searched > 0);
    assert_int_equal(r->feasible, 0);
    assert_int_equal(r->nplans, 0);
    mtk_ctx_free(ctx);
}

static void search_of_world_no_mesh_fits_names_the_numbers(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_shard_search_options so;
    search_options(&so);
    so.gpus = 17, so.global_batch = 32; /* 32 heads, 16 layers, 32 sequences */
    assert_null(mtk_shard_search(ctx, MODEL, &so));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    const char *msg = mtk_ctx_message(ctx);
    assert_non_null(strstr(msg, "--gpus 17"));
    assert_non_null(strstr(msg, "num_attention_heads"));
    assert_non_null(strstr(msg, "16 layers"));
    mtk_ctx_free(ctx);
}

static void gpu_table_has_sourced_specs(void **state)
{
    (void)state;
    int32_t n;
    const mtk_gpu_spec *s = mtk_gpu_specs(&n);
    assert_true(n >= 8);
    for (int32_t i = 0; i < n; i++) {
        assert_true(s[i].tflops > 0 && s[i].memory_gib > 0 && s[i].nvlink_gbps > 0 && s[i].ib_gbps > 0);
        assert_true(strlen(s[i].source) > 10);
        assert_ptr_equal(mtk_gpu_spec_find(s[i].name), &s[i]);
    }
    assert_true(mtk_gpu_spec_find("h100-80gb")->tflops == 989.0);
    assert_null(mtk_gpu_spec_find("h100"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(search_best_equals_brute_force_over_evaluate),
        cmocka_unit_test(moe_search_with_expert_parallel_equals_brute_force),
        cmocka_unit_test(large_dense_search_with_scaled_micro_batches_equals_brute_force),
        cmocka_unit_test(every_plan_of_a_search_equals_its_own_evaluation),
        cmocka_unit_test(search_returns_nothing_over_memory),
        cmocka_unit_test(search_of_world_no_mesh_fits_names_the_numbers),
        cmocka_unit_test(gpu_table_has_sourced_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
