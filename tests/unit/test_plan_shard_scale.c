/* A shard analysis scaled to a larger micro-batch from the traces at 2
 * and 4 equals the analysis traced at that micro-batch, number for
 * number, and scaling is refused where the allocator's rounding would
 * make it wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/mtk.h"
#include "mtk/plan.h"
#include "plan/shard_internal.h"

static mtk_shard_analysis *analyze(mtk_ctx *ctx, const char *model, int64_t micro, int64_t seq, bool training,
                                   int32_t device_kind)
{
    mtk_shard_options o;
    mtk_shard_options_init(&o);
    o.micro_batch = micro, o.seq = seq, o.training = training, o.device_kind = device_kind;
    mtk_shard_analysis *a = mtk_shard_analyze(ctx, model, &o);
    assert_non_null(a);
    return a;
}

static void assert_same_bytes(shard_bytes x, shard_bytes y)
{
    assert_int_equal(x.replicated, y.replicated);
    assert_int_equal(x.sharded, y.sharded);
}

/* Every number the evaluation reads from an analysis. */
static void assert_same_points(const shard_point *x, int32_t nx, const shard_point *y, int32_t ny)
{
    assert_int_equal(nx, ny);
    for (int32_t i = 0; i < nx; i++) {
        assert_int_equal(x[i].unit, y[i].unit);
        assert_int_equal(x[i].phase, y[i].phase);
        assert_int_equal(x[i].saved, y[i].saved);
        assert_int_equal(x[i].other, y[i].other);
        assert_int_equal(x[i].grads, y[i].grads);
    }
}

static void assert_same_analysis(const mtk_shard_analysis *x, const mtk_shard_analysis *y)
{
    assert_int_equal(x->options.micro_batch, y->options.micro_batch);
    assert_int_equal(x->nlayers, y->nlayers);
    for (int32_t u = 0; u < x->nlayers + 2; u++) {
        assert_true(x->units[u].flops == y->units[u].flops); /* bit for bit */
        assert_same_bytes(x->units[u].saved, y->units[u].saved);
        assert_same_bytes(x->units[u].saved_attention, y->units[u].saved_attention);
        assert_same_bytes(x->units[u].transient, y->units[u].transient);
        assert_same_bytes(x->units[u].input, y->units[u].input);
    }
    assert_int_equal(x->nsites, y->nsites);
    for (int32_t i = 0; i < x->nsites; i++) {
        assert_int_equal(x->sites[i].in_bytes, y->sites[i].in_bytes);
        assert_int_equal(x->sites[i].out_bytes, y->sites[i].out_bytes);
    }
    assert_int_equal(x->boundary_bytes, y->boundary_bytes);
    assert_int_equal(x->kv_layer_bytes, y->kv_layer_bytes);
    assert_same_points(x->points, x->npoints, y->points, y->npoints);
    /* the replay with gradient checkpointing (full recompute) */
    assert_same_points(x->points_full, x->npoints_full, y->points_full, y->npoints_full);
}

static void check_scaling(const char *model, int64_t seq, bool training, int32_t device_kind)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_shard_analysis *a2 = analyze(ctx, model, 2, seq, training, device_kind);
    mtk_shard_analysis *a4 = analyze(ctx, model, 4, seq, training, device_kind);
    const mtk_shard_analysis *b1 = a2, *b2 = a4; /* the two before m */
    for (int64_t m = 8; m <= 32; m *= 2) {
        assert_true(shard_analyses_scale(a2, a4, b1, b2, m));
        mtk_shard_analysis *scaled = shard_analysis_at(ctx, b1, b2, m);
        assert_non_null(scaled);
        assert_same_analysis(scaled, analyze(ctx, model, m, seq, training, device_kind));
        b1 = b2, b2 = scaled;
    }
    mtk_ctx_free(ctx);
}

static void scaled_analysis_equals_traced_for_a_dense_model(void **state)
{
    (void)state;
    check_scaling("llama-3.2-1b", 512, true, MTK_DEVICE_KIND_CUDA);
}

static void scaled_analysis_equals_traced_for_moe_on_cpu_and_inference(void **state)
{
    (void)state;
    check_scaling("qwen3-30b-a3b", 128, true, MTK_DEVICE_KIND_CPU);
    check_scaling("qwen3-0.6b", 256, false, MTK_DEVICE_KIND_CUDA);
}

static void scaling_is_refused_where_rounding_is_not_affine(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* from micro-batch 1: a size-1 batch makes views that are copies at 2 */
    mtk_shard_analysis *a1 = analyze(ctx, "llama-3.2-1b", 1, 32, true, MTK_DEVICE_KIND_CUDA);
    mtk_shard_analysis *a2 = analyze(ctx, "llama-3.2-1b", 2, 32, true, MTK_DEVICE_KIND_CUDA);
    mtk_shard_analysis *b2 = analyze(ctx, "llama-3.2-1b", 2, 36, true, MTK_DEVICE_KIND_CUDA);
    mtk_shard_analysis *b4 = analyze(ctx, "llama-3.2-1b", 4, 36, true, MTK_DEVICE_KIND_CUDA);
    assert_false(shard_analyses_scale(a1, a2, a1, a2, 4));
    assert_false(shard_analyses_scale(a2, b4, a2, b4, 8)); /* two lengths */
    /* 1x36: the padded int64 labels (2 x 37 x 8 = 592 bytes, then 1184)
       grow by 592 bytes, not whole 512-byte blocks: their rounded size
       (1024, 1536, 2560, then 5120, not 4608) is not affine at 16 */
    assert_false(shard_analyses_scale(b2, b4, b2, b4, 16));
    mtk_ctx_free(ctx);
}

static void scaling_resumes_from_a_traced_micro_batch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* 1x4096: the padded int64 labels grow by 8 x 4097 bytes a sequence,
       8 bytes a sequence over whole blocks: affine from 2 and 4 up to 64,
       not at 128; 128 traced, 256 is scaled from 64 and 128 */
    mtk_shard_analysis *a2 = analyze(ctx, "llama-3.2-1b", 2, 4096, true, MTK_DEVICE_KIND_CUDA);
    mtk_shard_analysis *a4 = analyze(ctx, "llama-3.2-1b", 4, 4096, true, MTK_DEVICE_KIND_CUDA);
    const mtk_shard_analysis *b1 = a2, *b2 = a4;
    for (int64_t m = 8; m <= 64; m *= 2) {
        assert_true(shard_analyses_scale(a2, a4, b1, b2, m));
        mtk_shard_analysis *scaled = shard_analysis_at(ctx, b1, b2, m);
        assert_non_null(scaled);
        b1 = b2, b2 = scaled;
    }
    assert_false(shard_analyses_scale(a2, a4, b1, b2, 128));
    mtk_shard_analysis *t128 = analyze(ctx, "llama-3.2-1b", 128, 4096, true, MTK_DEVICE_KIND_CUDA);
    assert_true(shard_analyses_scale(a2, a4, b2, t128, 256));
    assert_same_analysis(shard_analysis_at(ctx, b2, t128, 256),
                         analyze(ctx, "llama-3.2-1b", 256, 4096, true, MTK_DEVICE_KIND_CUDA));
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scaled_analysis_equals_traced_for_a_dense_model),
        cmocka_unit_test(scaled_analysis_equals_traced_for_moe_on_cpu_and_inference),
        cmocka_unit_test(scaling_is_refused_where_rounding_is_not_affine),
        cmocka_unit_test(scaling_resumes_from_a_traced_micro_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
