/* The gpt2, gpt_neox, bert and vit families of the zoo: transformers'
 * keys, shapes, ties, buffers and counts of their built-ins, forward shapes
 * and FLOPs (transformers 5 under torch 2.13's FlopCounterMode on meta),
 * computed buffers on materialization, and config errors naming fields.
 * tests/models/ compares every key of many more configs with transformers
 * itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/mtk.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static mtk_module *build_meta(mtk_ctx *ctx, const char *model, mtk_model_info *info)
{
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_module *m = mtk_model_resolve(ctx, model, &options, info);
    if (!m) fail_msg("%s: %s", model, mtk_ctx_message(ctx));
    return m;
}

static void assert_shape(const mtk_tensor *t, int32_t ndim, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(t->ndim, ndim);
    for (int32_t d = 0; d < ndim; d++) assert_int_equal(t->shape[d], shape[d]);
}

static void assert_contains(const char *text, const char *part)
{
    assert_non_null(text);
    if (!strstr(text, part)) fail_msg("text lacks '%s':\n%s", part, text);
}

/* A traced forward on a meta input; returns the output, FLOPs in *flops. */
static mtk_tensor *traced_forward(mtk_ctx *ctx, mtk_module *m, mtk_dtype dtype, int32_t ndim, const int64_t *shape,
                                  int64_t *flops)
{
    mtk_tensor *x = mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_META);
    mtk_trace *trace = mtk_trace_begin(m);
    mtk_tensor *y = mtk_module_forward(m, x);
    mtk_trace_end(trace);
    if (!y) fail_msg("forward: %s", mtk_ctx_message(ctx));
    *flops = mtk_trace_flops(trace);
    mtk_trace_free(trace);
    return y;
}

static void gpt2_has_conv1d_weights_and_a_tied_head(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_info info;
    mtk_module *m = build_meta(ctx, "gpt2", &info);
    assert_string_equal(mtk_module_type_name(m), "GPT2LMHeadModel");
    assert_int_equal(info.input_dtype, MTK_INT64);
    assert_int_equal(mtk_module_num_parameters(m, false), 124439808); /* published */
    assert_int_equal(mtk_state_dict_count(mtk_module_state_dict(m)), 149);
    /* Conv1D stores (in, out) */
    assert_shape(mtk_module_tensor(m, "transformer.h.0.attn.c_attn.weight"), 2, SHAPE(768, 2304));
    assert_shape(mtk_module_tensor(m, "transformer.h.11.mlp.c_proj.weight"), 2, SHAPE(3072, 768));
    assert_ptr_equal(mtk_module_tensor(m, "lm_head.weight"), mtk_module_tensor(m, "transformer.wte.weight"));
    /* no attn.bias mask buffers in transformers 5 */
    mtk_named_tensor *buffers;
    assert_int_equal(mtk_module_named_buffers(m, &buffers), 0);
    int64_t flops;
    mtk_tensor *logits = traced_forward(ctx, m, MTK_INT64, 2, SHAPE(1, 1024), &flops);
    assert_shape(logits, 3, SHAPE(1, 1024, 50257));
    assert_int_equal(flops, 291648307200); /* FlopCounterMode */
    mtk_ctx_free(ctx);
}

static void bert_masked_lm_ties_decoder_weight_and_bias(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build_meta(ctx, "bert-base-uncased", NULL);
    assert_string_equal(mtk_module_type_name(m), "BertForMaskedLM");
    assert_int_equal(mtk_module_num_parameters(m, false), 109514298); /* published */
    assert_ptr_equal(mtk_module_tensor(m, "cls.predictions.decoder.weight"),
                     mtk_module_tensor(m, "bert.embeddings.word_embeddings.weight"));
    assert_ptr_equal(mtk_module_tensor(m, "cls.predictions.decoder.bias"), mtk_module_tensor(m, "cls.predictions.bias"));
    /* position_ids and token_type_ids: int64 (1, 512), not in the state dict */
    mtk_named_tensor *buffers;
    assert_int_equal(mtk_module_named_buffers(m, &buffers), 2);
    assert_string_equal(buffers[0].name, "bert.embeddings.position_ids");
    assert_string_equal(buffers[1].name, "bert.embeddings.token_type_ids");
    for (int i = 0; i < 2; i++) {
        assert_false(buffers[i].persistent);
        assert_int_equal(buffers[i].tensor->dtype, MTK_INT64);
        assert_shape(buffers[i].tensor, 2, SHAPE(1, 512));
    }
    assert_null(mtk_state_dict_get(mtk_module_state_dict(m), "bert.embeddings.position_ids"));
    int64_t flops;
    mtk_tensor *scores = traced_forward(ctx, m, MTK_INT64, 2, SHAPE(1, 128), &flops);
    assert_shape(scores, 3, SHAPE(1, 128, 30522));
    assert_int_equal(flops, 28499116032); /* FlopCounterMode */
    mtk_ctx_free(ctx);
}

static void bert_buffers_are_computed_when_materialized(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_config *c = mtk_model_config_parse(
        ctx,
        "{\"model_type\": \"bert\", \"vocab_size\": 30, \"hidden_size\": 8, \"num_attention_heads\": 2,"
        " \"num_hidden_layers\": 1, \"intermediate_size\": 16, \"max_position_embeddings\": 6}",
        "tiny-bert");
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED); /* cpu, init mode */
    mtk_model_config_free(c);
    assert_non_null(m);
    assert_string_equal(mtk_module_type_name(m), "BertModel");
    const int64_t *positions = mtk_tensor_data(mtk_module_tensor(m, "embeddings.position_ids"));
    const int64_t *types = mtk_tensor_data(mtk_module_tensor(m, "embeddings.token_type_ids"));
    for (int64_t i = 0; i < 6; i++) {
        assert_int_equal(positions[i], i);
        assert_int_equal(types[i], 0);
    }
    /* a real forward: last hidden state and pooler output */
    mtk_tensor *ids = mtk_zeros(ctx, SHAPE(2, 5), 2, MTK_INT64);
    mtk_module_io io = { .in = { ids }, .nin = 1 };
    assert_true(mtk_module_call(m, &io));
    assert_int_equal(io.nout, 2);
    assert_shape(io.out[0], 3, SHAPE(2, 5, 8));
    assert_shape(io.out[1], 2, SHAPE(2, 8));
    mtk_ctx_free(ctx);
}

static void vit_patch_embedding_and_classifier(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_info info;
    mtk_module *m = build_meta(ctx, "vit-base-patch16-224", &info);
    assert_string_equal(mtk_module_type_name(m), "ViTForImageClassification");
    assert_int_equal(info.input_dtype, MTK_FLOAT32);
    assert_int_equal(mtk_module_num_parameters(m, false), 86567656);
    assert_shape(mtk_module_tensor(m, "vit.embeddings.cls_token"), 3, SHAPE(1, 1, 768));
    assert_shape(mtk_module_tensor(m, "vit.embeddings.position_embeddings"), 3, SHAPE(1, 197, 768));
    assert_shape(mtk_module_tensor(m, "vit.embeddings.patch_embeddings.projection.weight"), 4, SHAPE(768, 3, 16, 16));
    assert_shape(mtk_module_tensor(m, "vit.layers.11.attention.o_proj.weight"), 2, SHAPE(768, 768));
    int64_t flops;
    mtk_tensor *logits = traced_forward(ctx, m, MTK_FLOAT32, 4, SHAPE(2, 3, 224, 224), &flops);
    assert_shape(logits, 2, SHAPE(2, 1000));
    assert_int_equal(flops, 70255312896); /* FlopCounterMode */
    /* another image size: transformers' words */
    mtk_module *again = build_meta(ctx, "vit-base-patch16-224", NULL);
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(1, 3, 200, 200), 4, NULL, MTK_DEVICE_META);
    assert_null(mtk_module_forward(again, x));
    assert_contains(mtk_ctx_message(ctx), "Input image size (200*200) doesn't match model (224*224).");
    mtk_ctx_free(ctx);
}

static void pythia_has_an_untied_head_and_partial_rotary(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build_meta(ctx, "pythia-160m", NULL);
    assert_string_equal(mtk_module_type_name(m), "GPTNeoXForCausalLM");
    assert_int_equal(mtk_module_num_parameters(m, false), 162322944); /* the Pythia paper's total */
    assert_ptr_not_equal(mtk_module_tensor(m, "lm_head.weight"), mtk_module_tensor(m, "gpt_neox.embed_in.weight"));
    assert_int_equal(mtk_module_tensor(m, "gpt_neox.embed_in.weight")->dtype, MTK_FLOAT16); /* torch_dtype */
    /* rotary_pct 0.25 of 64: 16 rotated dims, 8 frequencies in float32 */
    mtk_tensor *inv_freq = mtk_module_tensor(m, "gpt_neox.rotary_emb.inv_freq");
    assert_shape(inv_freq, 1, SHAPE(8));
    assert_int_equal(inv_freq->dtype, MTK_FLOAT32);
    assert_shape(mtk_module_tensor(m, "gpt_neox.layers.0.attention.query_key_value.weight"), 2, SHAPE(2304, 768));
    int64_t flops;
    mtk_tensor *logits = traced_forward(ctx, m, MTK_INT64, 2, SHAPE(1, 4096), &flops);
    assert_shape(logits, 3, SHAPE(1, 4096, 50304)); /* rotary: no position limit */
    assert_int_equal(logits->dtype, MTK_FLOAT16);
    mtk_ctx_free(ctx);
}

static void bad_configs_name_the_field(void **state)
{
    (void)state;
    static const struct {
        const char *json, *message;
    } cases[] = {
        { "{\"model_type\": \"gpt2\", \"n_embd\": 10, \"n_head\": 3}",
          "bad: field 'n_embd': n_embd=10 is not divisible by n_head=3" },
        { "{\"model_type\": \"gpt2\", \"activation_function\": \"swiglu\"}", "bad: field 'activation_function': " },
        { "{\"model_type\": \"gpt_neox\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"rotary_pct\": 0.1}",
          "bad: field 'rotary_pct': rotary_pct=0.1 of the head size 16 gives 1 rotary dims" },
        { "{\"model_type\": \"bert\", \"vocab_size\": 10, \"pad_token_id\": 10}",
          "bad: field 'pad_token_id': 10 is not a row of the embedding (vocab_size 10)" },
        { "{\"model_type\": \"vit\", \"image_size\": [224], \"patch_size\": 16}",
          "bad: field 'image_size': expected an integer or a list of two integers" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_ctx_push_device(ctx, MTK_DEVICE_META);
        mtk_model_config *c = mtk_model_config_parse(ctx, cases[i].json, "bad");
        assert_non_null(c);
        assert_null(mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED));
        assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
        assert_contains(mtk_ctx_message(ctx), cases[i].message);
        mtk_model_config_free(c);
        mtk_ctx_free(ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpt2_has_conv1d_weights_and_a_tied_head),
        cmocka_unit_test(bert_masked_lm_ties_decoder_weight_and_bias),
        cmocka_unit_test(bert_buffers_are_computed_when_materialized),
        cmocka_unit_test(vit_patch_embedding_and_classifier),
        cmocka_unit_test(pythia_has_an_untied_head_and_partial_rotary),
        cmocka_unit_test(bad_configs_name_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
