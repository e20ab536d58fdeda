/* The parallel planner's library API: DTensor's uneven chunks, the
 * families' tensor-parallel table, and one analysis evaluated for many
 * configurations without tracing again (what a search reuses). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/mtk.h"
#include "mtk/plan.h"
#include "plan/shard_internal.h"

static void chunks_split_like_torch_chunk(void **state)
{
    (void)state;
    int64_t want[4][2] = { { 0, 23 }, { 23, 23 }, { 46, 23 }, { 69, 21 } }, off, len;
    for (int i = 0; i < 4; i++) {
        shard_chunk(90, 4, i, &off, &len);
        assert_int_equal(off, want[i][0]);
        assert_int_equal(len, want[i][1]);
    }
    /* torch.chunk(5 rows, 4) makes 2, 2, 1: the last rank's shard is empty */
    shard_chunk(5, 4, 3, &off, &len);
    assert_int_equal(off, 5);
    assert_int_equal(len, 0);
}

static void tp_plan_table_has_transformers_styles(void **state)
{
    (void)state;
    const mtk_tp_plan *llama = mtk_model_tp_plan_find("llama");
    assert_non_null(llama);
    bool head = false, embed = false;
    for (const mtk_tp_rule *r = llama->tp; r->pattern; r++) {
        if (strcmp(r->pattern, "lm_head") == 0) head = r->root && r->style == MTK_TP_COLWISE_GATHER_OUTPUT;
        if (strcmp(r->pattern, "embed_tokens") == 0) embed = r->style == MTK_TP_EMBEDDING_ROWWISE;
    }
    assert_true(head && embed);
    assert_null(llama->ep);
    assert_non_null(mtk_model_tp_plan_find("mixtral")->ep);
    assert_null(mtk_model_tp_plan_find("gpt2"));
    assert_string_equal(mtk_tp_style_name(MTK_TP_ROWWISE_SPLIT_INPUT), "rowwise_split_input");
}

static void one_analysis_evaluates_many_configurations(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_shard_options o;
    mtk_shard_options_init(&o);
    o.micro_batch = 1, o.seq = 16;
    mtk_shard_analysis *a = mtk_shard_analyze(ctx, "llama-3.2-1b", &o);
    assert_non_null(a);
    int64_t params_tp1 = 0;
    for (int32_t tp = 1; tp <= 4; tp *= 2) {
        for (int32_t pp = 1; pp <= 4; pp *= 2) {
            o.tp = tp, o.pp = pp, o.dp = 2, o.global_batch = 8;
            mtk_shard_plan *plan = mtk_shard_evaluate(ctx, a, &o);
            assert_non_null(plan);
            assert_int_equal(plan->world_size, tp * pp * 2);
            assert_int_equal(plan->micro_batches, 4);
            assert_int_equal(plan->stage_first_layer[0], 0);
            assert_int_equal(plan->stage_first_layer[pp], 16);
            int64_t params = 0; /* one tensor-parallel group's share, all stages */
            for (int32_t s = 0; s < pp; s++)
                for (int32_t t = 0; t < tp; t++) params += plan->ranks[s * tp * 2 + t].memory.parameters;
            if (tp == 1 && pp == 1) params_tp1 = params;
            /* each element once, but the replicated norms tp times and
               the tied embedding again on the last stage */
            assert_true(params >= params_tp1);
            if (pp == 1) assert_true(params - params_tp1 < params_tp1 / 1000);
            else assert_true(params - params_tp1 > params_tp1 / 10);
        }
    }
    /* without slices: the same costs */
    o.tp = 2, o.pp = 2, o.zero = 3;
    mtk_shard_plan *full = mtk_shard_evaluate(ctx, a, &o);
    o.without_slices = true;
    mtk_shard_plan *lean = mtk_shard_evaluate(ctx, a, &o);
    assert_non_null(full);
    assert_non_null(lean);
    assert_int_equal(lean->params[0].nslices, 0);
    assert_true(full->params[0].nslices > 0);
    for (int32_t r = 0; r < full->world_size; r++)
        assert_int_equal(lean->ranks[r].peak_bytes, full->ranks[r].peak_bytes);
    assert_int_equal(lean->ncomms, full->ncomms);
    /* another micro-batch needs another analysis */
    o.tp = o.pp = 1, o.micro_batch = 2;
    assert_null(mtk_shard_evaluate(ctx, a, &o));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_free(ctx);
}

/* The search's stage sums, split once into what every rank holds alike
 * and the parameters whose chunks differ by tp index (deepseek-v3 at tp
 * 32: some dims torch.chunk splits unevenly), equal each rank's own walk
 * for every rank, stage and mesh, including the tied and expert ones;
 * so do the bytes and layer runs its data-parallel collectives move. */
static void split_stage_sums_equal_each_ranks_own_walk(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_shard_options o;
    mtk_shard_options_init(&o);
    o.micro_batch = 1, o.seq = 16;
    mtk_shard_analysis *a = mtk_shard_analyze(ctx, "deepseek-v3", &o);
    assert_non_null(a);
    static const int32_t meshes[][4] = { { 1, 1, 2, 1 }, { 32, 2, 1, 1 }, { 32, 3, 2, 64 }, { 8, 4, 4, 32 } };
    int32_t varying = 0;
    for (size_t m = 0; m < sizeof meshes / sizeof meshes[0]; m++) {
        o.tp = meshes[m][0], o.pp = meshes[m][1], o.dp = meshes[m][2], o.ep = meshes[m][3];
        o.global_batch = o.dp, o.without_slices = true;
        for (int32_t z = 0; z <= 4; z++) {
            o.zero = z < 4 ? z : 0, o.fsdp = z == 4;
            mtk_shard_plan *plan = mtk_shard_evaluate(ctx, a, &o);
            assert_non_null(plan);
            shard_stage_index *ix = shard_stage_index_build(ctx, a, plan);
            assert_non_null(ix);
            for (int32_t s = 0; s < o.pp; s++) {
                shard_stage_sums ss;
                assert_true(shard_stage_sums_split(ctx, a, plan, ix, s, &ss));
                varying += ss.nvary > 0;
                int64_t walk[2];
                shard_stage_dp_walk(a, plan, NULL, s, walk);
                assert_int_equal(ss.dp_walk[0], walk[0]);
                assert_int_equal(ss.dp_walk[1], walk[1]);
                for (int32_t d = 0; d < o.dp; d++)
                    for (int32_t t = 0; t < o.tp; t++) {
                        shard_state_sums want, got;
                        shard_state_sums_of(a, plan, NULL, t, d, s, &want);
                        shard_stage_sums_at(plan, &ss, t, d, &got);
                        assert_memory_equal(&got, &want, sizeof want);
                        /* a stage without varying parameters: one sum */
                        if (!ss.vary_t && !ss.vary_e) {
                            shard_state_sums first;
                            shard_state_sums_of(a, plan, ix, 0, 0, s, &first);
                            assert_memory_equal(&got, &first, sizeof first);
                        }
                    }
            }
        }
    }
    assert_true(varying > 0); /* the per-rank part was exercised */
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunks_split_like_torch_chunk),
        cmocka_unit_test(tp_plan_table_has_transformers_styles),
        cmocka_unit_test(one_analysis_evaluates_many_configurations),
        cmocka_unit_test(split_stage_sums_equal_each_ranks_own_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
