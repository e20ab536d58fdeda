/* The BERT-like encoders (bert, roberta, xlm-roberta): one encoder with
 * switches, built with each family's class names (BertLayer, RobertaLayer,
 * XLMRobertaLayer) and transformers' exact state-dict keys.
 *
 *   family_bert.c     the encoder (embeddings, layers, pooler, base model),
 *                     BERT's heads and the token classification head they
 *                     share
 *   family_roberta.c  RoBERTa's heads (lm_head, classification head) and
 *                     the roberta / xlm-roberta builders */
#ifndef MTK_MODELS_BERT_H
#define MTK_MODELS_BERT_H

#include "models/blocks.h"

/* The encoder's module types, named "<Prefix>Embeddings" etc., made once
 * per build in the arena (models_bert_types_init). */
typedef struct bert_types {
    mtk_module_type embeddings, self_attention, cross_attention, self_output, output, attention, intermediate, layer,
        encoder, pooler, model, token_classification;
} bert_types;

typedef struct bert_spec {
    const char *prefix;          /* "Bert", "Roberta", "XLMRoberta"                 */
    const char *base_name;       /* the base model's attribute: "bert", "roberta"   */
    const bert_types *types;     /* in the arena: modules point at them            */
    /* RoBERTa: positions count from pad_token_id + 1 over the non-pad
     * tokens, position_embeddings has padding_idx and is registered after
     * the buffers */
    bool padded_positions;
    bool heads_first;            /* XLM-RoBERTa: heads registered before the model  */
    int64_t vocab, hidden, layers, heads, head_dim, intermediate, positions, type_vocab, labels;
    int64_t padding_idx;         /* pad_token_id, or MTK_NN_NO_PADDING_IDX          */
    const char *act;
    double eps, hidden_dropout, attention_dropout, classifier_dropout;
    bool is_decoder, cross_attention, tie;
} bert_spec;

/* Reads the fields the BERT-likes share (transformers' BertConfig names;
 * `vocab_default` and `pad_default` are the config class's vocab_size and
 * pad_token_id) into s and names the
 * types after `prefix`; `padded_positions` (RoBERTa) also needs a pad
 * token below max_position_embeddings - 1.  False with the error naming
 * the config and the field. */
bool models_bert_read_spec(model_config *c, bert_spec *s, const char *prefix, const char *base_name,
                           int64_t vocab_default, int64_t pad_default, bool padded_positions);

/* <Prefix>Model: embeddings, encoder [, pooler].  Forward: input_ids (B, S)
 * -> last hidden state (B, S, H) [, pooler output (B, H)]. */
mtk_module *models_bert_model(const model_config *c, const bert_spec *s, bool pooler);

/* <Prefix>ForTokenClassification: <base> (no pooler), dropout, classifier
 * (heads_first: dropout, classifier, <base>).
 * Forward: input_ids (B, S) -> logits (B, S, num_labels). */
mtk_module *models_bert_token_classification(const model_config *c, const bert_spec *s);

/* Whether m is a BERT-like base model or one of BERT's or RoBERTa's heads
 * (masked LM, sequence and token classification), whose forward takes
 * (input_ids[, attention_mask[, token_type_ids]]). */
bool models_bert_takes_inputs(const mtk_module *m);
/* RoBERTa's and XLM-RoBERTa's heads (family_roberta.c). */
bool models_roberta_takes_inputs(const mtk_module *m);

/* Single-child wrapper forward: out = child 0 (in). */
bool models_bert_first_child_forward(mtk_module *m, mtk_module_io *io);

#endif
