/* Real routing of the MoE blocks on the cpu (decoder_moe_dispatch.c)
 * against a plain C loop over tokens and experts: a tiny mixtral block
 * (softmax, top-k, renormalised) and qwen3_moe without norm_topk_prob, on
 * few tokens over many experts so that some experts get none.  The
 * families' whole forwards are checked against transformers in
 * tests/models/test_zoo_cpu_forward.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"

enum { HIDDEN = 6, INTER = 5, EXPERTS = 8, TOKENS = 3 };

/* Fills t (float32) with values of a fixed sequence in [-scale, scale). */
static void fill(mtk_tensor *t, uint32_t *seed, double scale)
{
    float *data = mtk_tensor_data(t);
    for (int64_t i = 0; i < mtk_tensor_numel(t); i++) {
        *seed = *seed * 1664525u + 1013904223u;
        data[i] = (float)(scale * ((*seed >> 8) / 8388608.0 - 1.0));
    }
}

static double silu(double v) { return v / (1.0 + exp(-v)); }

/* The block's output for x (T, H) by loops: route each token, run its
 * top-k experts, sum their outputs times the (renormalised) weights. */
static void reference(const float *x, const float *router, const float *gate_up, const float *down, int top_k,
                      bool renormalise, double *out)
{
    for (int t = 0; t < TOKENS; t++) {
        double prob[EXPERTS], max = -INFINITY, total = 0.0;
        for (int e = 0; e < EXPERTS; e++) {
            prob[e] = 0.0;
            for (int h = 0; h < HIDDEN; h++) prob[e] += (double)router[e * HIDDEN + h] * x[t * HIDDEN + h];
            if (prob[e] > max) max = prob[e];
        }
        for (int e = 0; e < EXPERTS; e++) total += prob[e] = exp(prob[e] - max);
        for (int e = 0; e < EXPERTS; e++) prob[e] /= total;
        int chosen[EXPERTS];
        bool taken[EXPERTS] = { false };
        double kept = 0.0;
        for (int j = 0; j < top_k; j++) {
            int best = -1;
            for (int e = 0; e < EXPERTS; e++)
                if (!taken[e] && (best < 0 || prob[e] > prob[best])) best = e;
            taken[best] = true, chosen[j] = best, kept += prob[best];
        }
        for (int h = 0; h < HIDDEN; h++) out[t * HIDDEN + h] = 0.0;
        for (int j = 0; j < top_k; j++) {
            int e = chosen[j];
            double act[INTER];
            for (int i = 0; i < INTER; i++) {
                double g = 0.0, u = 0.0;
                for (int h = 0; h < HIDDEN; h++) {
                    g += (double)gate_up[(e * 2 * INTER + i) * HIDDEN + h] * x[t * HIDDEN + h];
                    u += (double)gate_up[(e * 2 * INTER + INTER + i) * HIDDEN + h] * x[t * HIDDEN + h];
                }
                act[i] = silu(g) * u;
            }
            double w = renormalise ? prob[e] / kept : prob[e];
            for (int h = 0; h < HIDDEN; h++) {
                double y = 0.0;
                for (int i = 0; i < INTER; i++) y += (double)down[(e * HIDDEN + h) * INTER + i] * act[i];
                out[t * HIDDEN + h] += w * y;
            }
        }
    }
}

/* Builds `json` on the cpu, runs its layer 0 MoE block on random tokens
 * and compares with the loops. */
static void check_block(const char *json, const char *router_name, int top_k, bool renormalise)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_config *c = mtk_model_config_parse(ctx, json, "test.json");
    assert_non_null(c);
    mtk_ctx_push_device(ctx, MTK_DEVICE_CPU);
    mtk_module *model = mtk_model_build_config(ctx, c, MTK_FLOAT32);
    mtk_model_config_free(c);
    if (!model) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_module *block = mtk_module_child(model, "layers.0.mlp");
    assert_non_null(block);
    mtk_tensor *router = mtk_module_find_tensor(block, router_name);
    mtk_tensor *gate_up = mtk_module_find_tensor(block, "experts.gate_up_proj");
    mtk_tensor *down = mtk_module_find_tensor(block, "experts.down_proj");
    assert_non_null(router), assert_non_null(gate_up), assert_non_null(down);
    uint32_t seed = 7;
    fill(router, &seed, 2.0), fill(gate_up, &seed, 0.5), fill(down, &seed, 0.5);
    int64_t shape[3] = { 1, TOKENS, HIDDEN };
    mtk_tensor *x = mtk_empty(ctx, shape, 3, MTK_FLOAT32);
    fill(x, &seed, 1.0);
    mtk_tensor *y = mtk_contiguous(ctx, mtk_module_forward(block, x));
    if (!y) fail_msg("%s", mtk_ctx_message(ctx));
    assert_int_equal(y->ndim, 3);
    double want[TOKENS * HIDDEN];
    reference(mtk_tensor_data(x), mtk_tensor_data(router), mtk_tensor_data(gate_up), mtk_tensor_data(down), top_k,
              renormalise, want);
    const float *got = mtk_tensor_data(y);
    for (int i = 0; i < TOKENS * HIDDEN; i++)
        if (fabs(got[i] - want[i]) > 1e-5) fail_msg("element %d: got %.7g, want %.7g", i, got[i], want[i]);
    mtk_ctx_free(ctx);
}

#define TINY                                                                                                  \
    "\"hidden_size\": 6, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 4, "            \
    "\"num_hidden_layers\": 1, \"vocab_size\": 11"

/* 3 tokens, 2 experts each, 8 experts: at least 2 get none. */
static void mixtral_block_routes_each_token_to_its_renormalised_top_k(void **state)
{
    (void)state;
    check_block("{\"model_type\": \"mixtral\", " TINY ", \"intermediate_size\": 5, \"num_local_experts\": 8, "
                "\"num_experts_per_tok\": 2}",
                "gate.weight", 2, true);
}

static void qwen3_moe_block_keeps_softmax_weights_without_norm_topk_prob(void **state)
{
    (void)state;
    check_block("{\"model_type\": \"qwen3_moe\", " TINY ", \"intermediate_size\": 7, \"moe_intermediate_size\": 5, "
                "\"num_experts\": 8, \"num_experts_per_tok\": 3, \"norm_topk_prob\": false}",
                "gate.weight", 3, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mixtral_block_routes_each_token_to_its_renormalised_top_k),
        cmocka_unit_test(qwen3_moe_block_keeps_softmax_weights_without_norm_topk_prob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
