/* The roberta and xlm-roberta families: BERT's encoder (models/bert.h)
 * with RoBERTa's positions (counted from pad_token_id + 1 over the non-pad
 * tokens; position_embeddings has padding_idx) and RoBERTa's heads:
 *
 *   <Prefix>Model                      embeddings, encoder, pooler
 *   <Prefix>ForMaskedLM                roberta (no pooler), lm_head: dense,
 *                                      gelu, layer_norm, decoder (weight tied
 *                                      to the word embeddings, bias to
 *                                      lm_head.bias when tie_word_embeddings)
 *   <Prefix>ForSequenceClassification  roberta (no pooler), classifier:
 *                                      dense, tanh, out_proj on the first
 *                                      token (dropout around the dense)
 *   <Prefix>ForTokenClassification     roberta (no pooler), dropout,
 *                                      classifier
 *
 * XLM-RoBERTa is the same model under its own class names; its masked-LM
 * and sequence classification classes register the head before the
 * encoder, which orders their parameters.
 *
 * Config fields are BERT's (family_bert.c) with RobertaConfig's defaults:
 * pad_token_id 1 (vocab_size 50265 for roberta, 30522 for xlm-roberta). */
#include "models/bert.h"
#include "mtk/ops.h"

#include <stdio.h>
#include <string.h>

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

typedef struct head_order {
    int32_t encoder, head; /* child indices of the base model and the head */
} head_order;

/* ----------------------------------------------------------- RobertaLMHead */

/* decoder(layer_norm(gelu(dense(h)))): (B, S, H) -> (B, S, vocab).  The
 * activation is always exact gelu, whatever hidden_act says. */
static bool lm_head_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *h = mtk_gelu(ctx, mtk_module_forward(child(m, 0), io->in[0]), "none");
    io->out[0] = mtk_module_forward(child(m, 2), mtk_module_forward(child(m, 1), h));
    io->nout = 1;
    return io->out[0] != NULL;
}

/* lm_head.bias: zeros, as transformers creates it. */
static bool lm_head_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    return mtk_init_zeros_(mtk_module_find_tensor(m, "bias"));
}

static const mtk_module_type lm_head_base = { "LMHead", lm_head_forward, lm_head_reset, NULL };

/* -------------------------------------------- RobertaClassificationHead */

/* out_proj(dropout(tanh(dense(dropout(h[:, 0]))))): (B, S, H) -> (B, labels) */
static bool classification_head_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = mtk_module_forward(child(m, 1), mtk_select(ctx, io->in[0], 1, 0)); /* (B, H) */
    x = mtk_tanh(ctx, mtk_module_forward(child(m, 0), x));
    x = mtk_module_forward(child(m, 1), x);
    io->out[0] = mtk_module_forward(child(m, 2), x);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type classification_head_base = { "ClassificationHead", classification_head_forward, NULL,
                                                          NULL };

/* ------------------------------------------------------------ the models */

typedef struct roberta_types {
    mtk_module_type lm_head, classification_head, masked_lm, sequence_classification;
} roberta_types;

/* base model, then head (children in `order`): out = head(base(ids)[0]) */
static bool head_over_base_forward(mtk_module *m, mtk_module_io *io)
{
    const head_order *o = mtk_module_config(m);
    mtk_module_io base = *io; /* input_ids[, attention_mask[, token_type_ids]] */
    if (!mtk_module_call(child(m, o->encoder), &base)) return false;
    io->out[0] = mtk_module_forward(child(m, o->head), base.out[0]);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type masked_lm_base = { "ForMaskedLM", head_over_base_forward, NULL, NULL };
static const mtk_module_type sequence_classification_base = { "ForSequenceClassification", head_over_base_forward,
                                                              NULL, NULL };

/* `roberta` and the head `head_name`, in the class's registration order
 * (XLM-RoBERTa: head first). */
static mtk_module *head_over_base(mtk_ctx *ctx, const mtk_module_type *type, const bert_spec *s, bool head_first,
                                  mtk_module *base, const char *head_name, mtk_module *head)
{
    mtk_module *m = mtk_module_new(ctx, type, sizeof(head_order));
    if (!m) return NULL;
    *(head_order *)mtk_module_config(m) = head_first ? (head_order){ 1, 0 } : (head_order){ 0, 1 };
    bool ok = head_first ? mtk_module_add(m, head_name, head) && mtk_module_add(m, s->base_name, base)
                         : mtk_module_add(m, s->base_name, base) && mtk_module_add(m, head_name, head);
    return ok ? m : NULL;
}

static mtk_module *masked_lm(const model_config *c, const bert_spec *s, const roberta_types *t, bool head_first)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *head = mtk_module_new(ctx, &t->lm_head, 0);
    bool ok = head && mtk_module_add(head, "dense", mtk_nn_linear(ctx, s->hidden, s->hidden, true)) &&
              mtk_module_add(head, "layer_norm", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
              mtk_module_add(head, "decoder", mtk_nn_linear(ctx, s->hidden, s->vocab, true)) &&
              mtk_module_new_parameter(head, "bias", &s->vocab, 1);
    mtk_module *base = ok ? models_bert_model(c, s, false) : NULL;
    mtk_module *m = base ? head_over_base(ctx, &t->masked_lm, s, head_first, base, "lm_head", mtk_module_finish(head))
                         : NULL;
    if (m && s->tie) {
        char word[64];
        snprintf(word, sizeof word, "%s.embeddings.word_embeddings.weight", s->base_name);
        if (!mtk_module_tie(m, "lm_head.decoder.weight", word) || !mtk_module_tie(m, "lm_head.decoder.bias", "lm_head.bias"))
            return NULL;
    }
    return m ? mtk_module_finish(m) : NULL;
}

static mtk_module *sequence_classification(const model_config *c, const bert_spec *s, const roberta_types *t,
                                           bool head_first)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *head = mtk_module_new(ctx, &t->classification_head, 0);
    bool ok = head && mtk_module_add(head, "dense", mtk_nn_linear(ctx, s->hidden, s->hidden, true)) &&
              mtk_module_add(head, "dropout", mtk_nn_dropout(ctx, s->classifier_dropout)) &&
              mtk_module_add(head, "out_proj", mtk_nn_linear(ctx, s->hidden, s->labels, true));
    mtk_module *base = ok ? models_bert_model(c, s, false) : NULL;
    mtk_module *m = base ? head_over_base(ctx, &t->sequence_classification, s, head_first, base, "classifier",
                                          mtk_module_finish(head))
                         : NULL;
    return m ? mtk_module_finish(m) : NULL;
}

/* Builds `architecture` ("<prefix>ForMaskedLM", ...) of a RoBERTa-like. */
static mtk_module *build(model_config *c, const char *architecture, const char *prefix, int64_t vocab_default,
                         bool head_first)
{
    bert_spec s;
    roberta_types *t = mtk_ctx_alloc(c->ctx, sizeof *t); /* modules point at their types */
    if (!t) return NULL;
    /* RobertaConfig's vocabulary is 50265; XLMRobertaConfig keeps BERT's */
    if (!models_bert_read_spec(c, &s, prefix, "roberta", vocab_default, 1, true)) return NULL;
    s.heads_first = head_first;
    if (!models_blocks_named_type(c->ctx, &t->lm_head, &lm_head_base, prefix) ||
        !models_blocks_named_type(c->ctx, &t->classification_head, &classification_head_base, prefix) ||
        !models_blocks_named_type(c->ctx, &t->masked_lm, &masked_lm_base, prefix) ||
        !models_blocks_named_type(c->ctx, &t->sequence_classification, &sequence_classification_base, prefix))
        return NULL;
    size_t n = strlen(prefix);
    const char *head = strncmp(architecture, prefix, n) == 0 ? architecture + n : architecture;
    if (strcmp(head, "ForMaskedLM") == 0) return masked_lm(c, &s, t, head_first);
    if (strcmp(head, "ForSequenceClassification") == 0) return sequence_classification(c, &s, t, head_first);
    if (strcmp(head, "ForTokenClassification") == 0) return models_bert_token_classification(c, &s);
    return models_bert_model(c, &s, true);
}

mtk_module *models_family_roberta_build(model_config *c, const char *architecture)
{
    return build(c, architecture, "Roberta", 50265, false);
}

mtk_module *models_family_xlm_roberta_build(model_config *c, const char *architecture)
{
    return build(c, architecture, "XLMRoberta", 30522, true);
}

bool models_roberta_takes_inputs(const mtk_module *m)
{
    const mtk_module_type *t = m ? mtk_module_type_of(m) : NULL;
    return t && t->forward == head_over_base_forward;
}
