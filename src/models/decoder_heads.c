/* The classification heads of the decoder families, as transformers'
 * generic ones build them:
 *   <Prefix>ForSequenceClassification: model, score (Linear(hidden,
 *     num_labels, bias=False)); the scores of each sequence's last token
 *     that is not pad_token_id (the last token when there is no pad token,
 *     which then allows batch 1 only).
 *   <Prefix>ForTokenClassification: model, dropout (classifier_dropout,
 *     else hidden_dropout, else 0.1), score (Linear(hidden, num_labels,
 *     bias=token_classification_bias, true by default)); scores per token.
 *   <Prefix>ForQuestionAnswering: model (transformer for Llama, Qwen2,
 *     Qwen3, Qwen3Moe, SmolLM3), qa_outputs (Linear(hidden, 2)); start and
 *     end logits (B, S) each.
 * models_classifier builds the same two heads under other names, for the
 * families whose classes name the base model and the token head apart
 * (gpt2's transformer / classifier, gpt_neox's gpt_neox / classifier). */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <stdio.h>
#include <string.h>

typedef struct classifier_config {
    bool per_token, span; /* span: question answering's start and end logits */
    int64_t pad; /* MTK_NN_NO_PADDING_IDX: none */
} classifier_config;

/* The index of the last non-pad token of row b of ids (B, S) on the cpu
 * (0 when every token is padding, as argmax of zeros). */
static int64_t last_non_pad(const mtk_tensor *ids, int64_t b, int64_t pad)
{
    int64_t seq = ids->shape[1], best = 0;
    for (int64_t i = 0; i < seq; i++) {
        const char *at = (const char *)mtk_tensor_data(ids) +
                         (b * ids->stride[0] + i * ids->stride[1]) * (int64_t)mtk_dtype_size(ids->dtype);
        int64_t v = ids->dtype == MTK_INT64 ? *(const int64_t *)at : *(const int32_t *)at;
        if (v != pad) best = i;
    }
    return best;
}

/* forward(ids (B, S)[, attention_mask (B, S)[, position_ids (B or 1,
 * S)]]) -> (B, num_labels) or (B, S, num_labels); the mask and positions go
 * to the base model as they come */
static bool classifier_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const classifier_config *c = mtk_module_config(m);
    mtk_tensor *ids = io->in[0];
    mtk_module_io base = { .in = { ids, io->nin > 1 ? io->in[1] : NULL, io->nin > 2 ? io->in[2] : NULL },
                           .nin = io->nin < 3 ? io->nin : 3 };
    if (!mtk_module_call(mtk_module_child_at(m, 0, NULL), &base)) return false;
    mtk_tensor *h = base.out[0]; /* (B, S, hidden) */
    if (c->span) {
        mtk_tensor *logits = mtk_module_forward(mtk_module_child_at(m, 1, NULL), h); /* (B, S, 2) */
        io->out[0] = mtk_contiguous(ctx, mtk_select(ctx, logits, -1, 0));          /* (B, S) */
        io->out[1] = mtk_contiguous(ctx, mtk_select(ctx, logits, -1, 1));          /* (B, S) */
        io->nout = 2;
        return io->out[0] && io->out[1];
    }
    if (c->per_token) {
        io->out[0] = mtk_module_forward(mtk_module_child_at(m, 2, NULL),
                                        mtk_module_forward(mtk_module_child_at(m, 1, NULL), h));
        io->nout = 1;
        return io->out[0] != NULL;
    }
    mtk_tensor *logits = mtk_module_forward(mtk_module_child_at(m, 1, NULL), h); /* (B, S, L) */
    if (!logits) return false;
    int64_t batch = logits->shape[0], seq = logits->shape[1];
    if (c->pad == MTK_NN_NO_PADDING_IDX && batch != 1)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "%s: Cannot handle batch sizes > 1 if no padding token is defined (batch %lld)",
                         mtk_module_type_name(m), (long long)batch);
    if (batch > 4096)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: at most 4096 sequences, got %lld",
                         mtk_module_type_name(m), (long long)batch);
    mtk_tensor *rows[4096];
    bool known = c->pad != MTK_NN_NO_PADDING_IDX && !mtk_tensor_is_meta(ids) &&
                 (ids->dtype == MTK_INT64 || ids->dtype == MTK_INT32);
    for (int64_t b = 0; b < batch; b++) {
        /* which token is data: on meta, the last one stands for it */
        int64_t at = known ? last_non_pad(ids, b, c->pad) : seq - 1;
        rows[b] = mtk_select(ctx, mtk_select(ctx, logits, 0, b), 0, at); /* (L) */
    }
    io->out[0] = mtk_stack(ctx, rows, (int32_t)batch, 0); /* (B, L) */
    io->nout = 1;
    return io->out[0] != NULL;
}

static bool is_question_answering(const char *architecture)
{
    size_t n = strlen(architecture);
    return n > 20 && strcmp(architecture + n - 20, "ForQuestionAnswering") == 0;
}

bool models_classifier_is(const mtk_module *m)
{
    const mtk_module_type *type = m ? mtk_module_type_of(m) : NULL;
    return type && type->forward == classifier_forward;
}

bool models_decoder_is_classifier(const char *architecture)
{
    size_t n = strlen(architecture);
    return (n > 25 && strcmp(architecture + n - 25, "ForSequenceClassification") == 0) ||
           (n > 22 && strcmp(architecture + n - 22, "ForTokenClassification") == 0) ||
           is_question_answering(architecture);
}

double models_classifier_dropout(model_config *c)
{
    if (models_cfg_has(c, "classifier_dropout")) return models_blocks_dropout(c, "classifier_dropout", 0.1);
    if (models_cfg_has(c, "hidden_dropout")) return models_blocks_dropout(c, "hidden_dropout", 0.1);
    return 0.1;
}

int64_t models_classifier_pad(model_config *c)
{
    const cJSON *pad = models_cfg_get(c, "pad_token_id");
    return !pad || cJSON_IsNull(pad) ? MTK_NN_NO_PADDING_IDX : models_cfg_int(c, "pad_token_id", 0);
}

mtk_module *models_classifier(model_config *c, mtk_module *model, const char *architecture, const classifier_head *head)
{
    mtk_ctx *ctx = c->ctx;
    size_t n = strlen(architecture);
    bool per_token = n > 22 && strcmp(architecture + n - 22, "ForTokenClassification") == 0;
    bool span = is_question_answering(architecture);
    int64_t labels = span ? 2 : models_blocks_num_labels(c);
    if (!model || !models_cfg_ok(c)) return NULL;
    mtk_module_type *type = mtk_ctx_alloc(ctx, sizeof *type);
    char *name = mtk_ctx_alloc(ctx, n + 1);
    if (!type || !name) return NULL;
    memcpy(name, architecture, n + 1);
    *type = (mtk_module_type){ name, classifier_forward, NULL, NULL };
    mtk_module *m = mtk_module_new(ctx, type, sizeof(classifier_config));
    if (!m) return NULL;
    *(classifier_config *)mtk_module_config(m) = (classifier_config){ per_token, span, head->pad };
    bool ok = mtk_module_add(m, head->base_name, model);
    if (ok && span)
        ok = mtk_module_add(m, "qa_outputs", mtk_nn_linear(ctx, head->hidden, 2, true));
    else if (ok && per_token)
        ok = mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, head->token_dropout)) &&
             mtk_module_add(m, head->token_linear, mtk_nn_linear(ctx, head->hidden, labels, head->token_bias));
    else if (ok)
        ok = mtk_module_add(m, "score", mtk_nn_linear(ctx, head->hidden, labels, false));
    return ok ? mtk_module_finish(m) : NULL;
}

mtk_module *models_decoder_classifier(model_config *c, const decoder_spec *spec, mtk_module *model, const char *architecture)
{
    /* these question-answering classes keep the older attribute name */
    static const char *const transformer_named[] = { "LlamaForQuestionAnswering", "Qwen2ForQuestionAnswering",
                                                     "Qwen3ForQuestionAnswering", "Qwen3MoeForQuestionAnswering",
                                                     "SmolLM3ForQuestionAnswering" };
    const char *base_name = "model";
    for (size_t i = 0; i < sizeof transformer_named / sizeof transformer_named[0]; i++)
        if (strcmp(architecture, transformer_named[i]) == 0) base_name = "transformer";
    classifier_head head = { base_name, spec->hidden, spec->padding_idx, "score",
                             models_cfg_bool(c, "token_classification_bias", true), models_classifier_dropout(c) };
    return models_classifier(c, model, architecture, &head);
}
