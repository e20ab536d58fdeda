/* The bert family: BertModel (with its pooler), BertForMaskedLM (no pooler;
 * the MLM head's decoder tied to the word embeddings and its bias to
 * cls.predictions.bias when tie_word_embeddings, the default),
 * BertForSequenceClassification (pooler, dropout, classifier) and
 * BertForTokenClassification, as transformers builds them; the encoder
 * itself (models/bert.h) also serves roberta and xlm-roberta
 * (family_roberta.c), under their class names.  The embeddings hold the
 * non-persistent int64 buffers position_ids (arange) and token_type_ids
 * (zeros), both (1, max_position_embeddings), computed whenever they get
 * memory.
 *
 * Config fields (transformers' defaults): vocab_size 30522, hidden_size 768,
 * num_hidden_layers 12, num_attention_heads 12, intermediate_size 3072,
 * hidden_act "gelu", hidden_dropout_prob and attention_probs_dropout_prob
 * 0.1, max_position_embeddings 512, type_vocab_size 2, layer_norm_eps
 * 1e-12, pad_token_id 0, classifier_dropout (hidden_dropout_prob when
 * null), is_decoder (causal self-attention), add_cross_attention,
 * tie_word_embeddings true, id2label / num_labels (2). */
#include "models/bert.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

static mtk_module *layer_norm(mtk_ctx *ctx, const bert_spec *s)
{
    return mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true);
}

/* ------------------------------------------------------------ embeddings */

/* Child indices: BERT registers word, position, token type, LayerNorm,
 * dropout; RoBERTa word, token type, LayerNorm, dropout, then (after the
 * buffers) position. */
typedef struct embeddings_config {
    int32_t word, position, token_type, norm, dropout;
    bool padded_positions; /* RoBERTa's position ids */
    int64_t padding_idx;
} embeddings_config;

/* position_ids = arange(max_position_embeddings), token_type_ids = zeros. */
static bool embeddings_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    for (int32_t i = 0; i < mtk_module_buffer_count(m); i++) {
        const char *name;
        mtk_tensor *t = mtk_module_buffer_at(m, i, &name, NULL);
        if (!t || mtk_tensor_is_meta(t)) continue;
        if (strcmp(name, "token_type_ids") == 0) {
            if (!mtk_init_zeros_(t)) return false;
        } else if (t->dtype == MTK_INT64 && mtk_tensor_is_contiguous(t)) {
            int64_t *data = mtk_tensor_data(t);
            for (int64_t k = 0; k < mtk_tensor_numel(t); k++) data[k] = k;
        }
    }
    return true;
}

/* RoBERTa's create_position_ids_from_input_ids: the non-pad tokens
 * numbered from padding_idx + 1, pad tokens at padding_idx, with
 * transformers' casts (int32 mask, int64 cumsum back to int32).
 * (B, S) -> (B, S) int64 */
static mtk_tensor *padded_positions(mtk_ctx *ctx, mtk_tensor *ids, int64_t padding_idx)
{
    mtk_tensor *mask = mtk_to_dtype(ctx, mtk_ne_scalar(ctx, ids, mtk_value_int(padding_idx)), MTK_INT32);
    mtk_tensor *count = mtk_to_dtype(ctx, mtk_cumsum(ctx, mask, 1, MTK_DTYPE_UNDEFINED), MTK_INT32);
    mtk_tensor *numbered = mtk_mul(ctx, mtk_add_scalar(ctx, count, mtk_value_int(0)), mask); /* + cache length 0 */
    return mtk_add_scalar(ctx, mtk_to_dtype(ctx, numbered, MTK_INT64), mtk_value_int(padding_idx));
}

/* input_ids (B, S)[, token_type_ids (B, S)] -> word + token type (the
 * buffer's zeros when none) + position embeddings, normalized: (B, S, H) */
static bool embeddings_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const embeddings_config *c = mtk_module_config(m);
    mtk_tensor *ids = io->in[0];
    int64_t seq = ids->shape[1];
    mtk_tensor *position_ids = c->padded_positions
                                   ? padded_positions(ctx, ids, c->padding_idx)                         /* (B, S) */
                                   : mtk_narrow(ctx, mtk_module_find_tensor(m, "position_ids"), 1, 0, seq); /* (1, S) */
    /* transformers 5: the buffer (expanded to the positions' batch)
       gathered at the positions (a new tensor, which the token type
       embedding's backward keeps), expanded to (B, S) */
    int64_t bs[2] = { ids->shape[0], seq };
    mtk_tensor *token_types = mtk_module_find_tensor(m, "token_type_ids");
    if (c->padded_positions && token_types && position_ids) {
        int64_t wide[2] = { position_ids->shape[0], token_types->shape[1] };
        token_types = mtk_expand(ctx, token_types, wide, 2);
    }
    mtk_tensor *token_type_ids = io->nin > 1 && io->in[1]
                                     ? io->in[1]
                                     : mtk_expand(ctx, mtk_gather(ctx, token_types, 1, position_ids), bs, 2); /* (B, S) */
    mtk_tensor *h = mtk_module_forward(child(m, c->word), ids);
    h = mtk_add(ctx, h, mtk_module_forward(child(m, c->token_type), token_type_ids));
    h = mtk_add(ctx, h, mtk_module_forward(child(m, c->position), position_ids));
    h = mtk_module_forward(child(m, c->norm), h);
    io->out[0] = mtk_module_forward(child(m, c->dropout), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type embeddings_base = { "Embeddings", embeddings_forward, embeddings_reset, NULL };

static mtk_module *embeddings(mtk_ctx *ctx, const bert_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &s->types->embeddings, sizeof(embeddings_config));
    if (!m) return NULL;
    embeddings_config *c = mtk_module_config(m);
    *c = s->padded_positions ? (embeddings_config){ 0, 4, 1, 2, 3, true, s->padding_idx }
                             : (embeddings_config){ 0, 1, 2, 3, 4, false, s->padding_idx };
    int64_t shape[2] = { 1, s->positions };
    int64_t position_padding = s->padded_positions ? s->padding_idx : MTK_NN_NO_PADDING_IDX;
    mtk_module *position = mtk_nn_embedding(ctx, s->positions, s->hidden, position_padding);
    bool ok = mtk_module_add(m, "word_embeddings", mtk_nn_embedding(ctx, s->vocab, s->hidden, s->padding_idx)) &&
              (s->padded_positions || mtk_module_add(m, "position_embeddings", position)) &&
              mtk_module_add(m, "token_type_embeddings",
                             mtk_nn_embedding(ctx, s->type_vocab, s->hidden, MTK_NN_NO_PADDING_IDX)) &&
              mtk_module_add(m, "LayerNorm", layer_norm(ctx, s)) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->hidden_dropout)) &&
              mtk_module_new_buffer(m, "position_ids", shape, 2, MTK_INT64, false) &&
              mtk_module_new_buffer(m, "token_type_ids", shape, 2, MTK_INT64, false) &&
              (!s->padded_positions || mtk_module_add(m, "position_embeddings", position));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------- attention */

typedef struct self_attention_config {
    int64_t heads, head_dim;
    bool causal;
    double dropout; /* attention_probs_dropout_prob: sdpa's dropout_p in training */
} self_attention_config;

/* softmax(q k^T / sqrt(d)) v over all positions (causal when is_decoder),
 * under the padding mask in[1] (B, 1, S, S) bool when given:
 * (B, S, H) -> (B, S, H) */
static bool self_attention_forward(mtk_module *m, mtk_module_io *io)
{
    const self_attention_config *c = mtk_module_config(m);
    io->out[0] = models_blocks_qkv_attention(m, io->in[0], c->heads, c->head_dim, c->causal,
                                      mtk_module_is_training(m) ? c->dropout : 0.0, io->nin > 1 ? io->in[1] : NULL);
    io->nout = 1;
    return io->out[0] != NULL;
}

static bool cross_attention_forward(mtk_module *m, mtk_module_io *io)
{
    (void)io;
    return mtk_error(mtk_module_ctx(m), MTK_ERR_NOT_IMPLEMENTED,
                     "%s needs encoder hidden states, which a summary does not take",
                     mtk_module_type_name(m));
}

static const mtk_module_type self_attention_base = { "SelfAttention", self_attention_forward, NULL, NULL };
static const mtk_module_type cross_attention_base = { "CrossAttention", cross_attention_forward, NULL, NULL };

/* BertSelfOutput / BertOutput: LayerNorm(dropout(dense(h)) + input).
 * io: h, input -> (B, S, H).  The local hidden_states holds dropout's
 * output until the LayerNorm returns. */
static bool output_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *h = mtk_module_forward(child(m, 2), mtk_module_forward(child(m, 0), io->in[0]));
    io->out[0] = mtk_module_forward(child(m, 1), mtk_add(ctx, h, io->in[1]));
    io->nout = 1;
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, h);
}

static const mtk_module_type self_output_base = { "SelfOutput", output_forward, NULL, NULL };
static const mtk_module_type output_base = { "Output", output_forward, NULL, NULL };

/* dense, LayerNorm, dropout */
static mtk_module *output(mtk_ctx *ctx, const mtk_module_type *type, const bert_spec *s, int64_t in_features)
{
    mtk_module *m = mtk_module_new(ctx, type, 0);
    bool ok = m && mtk_module_add(m, "dense", mtk_nn_linear(ctx, in_features, s->hidden, true)) &&
              mtk_module_add(m, "LayerNorm", layer_norm(ctx, s)) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->hidden_dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* BertAttention: output(self(x[, mask]), x) */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = io->nin > 1 && io->in[1] ? mtk_module_forward2(child(m, 0), io->in[0], io->in[1])
                                             : mtk_module_forward(child(m, 0), io->in[0]);
    io->out[0] = mtk_module_forward2(child(m, 1), h, io->in[0]);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type attention_base = { "Attention", attention_forward, NULL, NULL };

static mtk_module *attention(mtk_ctx *ctx, const bert_spec *s, bool cross)
{
    mtk_module *self = mtk_module_new(ctx, cross ? &s->types->cross_attention : &s->types->self_attention,
                                      sizeof(self_attention_config));
    if (!self) return NULL;
    *(self_attention_config *)mtk_module_config(self) =
        (self_attention_config){ s->heads, s->head_dim, s->is_decoder && !cross, s->attention_dropout };
    int64_t all_heads = s->heads * s->head_dim;
    bool ok = mtk_module_add(self, "query", mtk_nn_linear(ctx, s->hidden, all_heads, true)) &&
              mtk_module_add(self, "key", mtk_nn_linear(ctx, s->hidden, all_heads, true)) &&
              mtk_module_add(self, "value", mtk_nn_linear(ctx, s->hidden, all_heads, true)) &&
              mtk_module_add(self, "dropout", mtk_nn_dropout(ctx, s->attention_dropout));
    mtk_module *m = ok ? mtk_module_new(ctx, &s->types->attention, 0) : NULL;
    ok = m && mtk_module_add(m, "self", mtk_module_finish(self)) &&
         mtk_module_add(m, "output", output(ctx, &s->types->self_output, s, s->hidden));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ----------------------------------------------------------------- layer */

/* BertIntermediate: act(dense(x)) */
static bool intermediate_forward(mtk_module *m, mtk_module_io *io)
{
    io->out[0] = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), io->in[0]));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type intermediate_base = { "Intermediate", intermediate_forward, NULL, NULL };

/* attention (under the mask in[1] when given), then
 * output(intermediate(a), a); (B, S, H) -> (B, S, H) */
static bool layer_forward(mtk_module *m, mtk_module_io *io)
{
    int32_t n = mtk_module_child_count(m); /* attention, [crossattention], intermediate, output */
    mtk_tensor *a = io->nin > 1 && io->in[1] ? mtk_module_forward2(child(m, 0), io->in[0], io->in[1])
                                             : mtk_module_forward(child(m, 0), io->in[0]);
    mtk_tensor *h = mtk_module_forward(child(m, n - 2), a);
    io->out[0] = mtk_module_forward2(child(m, n - 1), h, a);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type layer_base = { "Layer", layer_forward, NULL, NULL };

static mtk_module *layer(const model_config *c, const bert_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *inter = mtk_module_new(ctx, &s->types->intermediate, 0);
    bool ok = inter && mtk_module_add(inter, "dense", mtk_nn_linear(ctx, s->hidden, s->intermediate, true)) &&
              mtk_module_add(inter, "intermediate_act_fn", models_blocks_activation(c, "hidden_act", s->act));
    mtk_module *m = ok ? mtk_module_new(ctx, &s->types->layer, 0) : NULL;
    ok = m && mtk_module_add(m, "attention", attention(ctx, s, false));
    if (ok && s->cross_attention) ok = mtk_module_add(m, "crossattention", attention(ctx, s, true));
    ok = ok && mtk_module_add(m, "intermediate", mtk_module_finish(inter)) &&
         mtk_module_add(m, "output", output(ctx, &s->types->output, s, s->intermediate));
    return ok ? mtk_module_finish(m) : NULL;
}

/* BertEncoder: the layers in turn, each under the mask in[1] when given */
static bool encoder_forward(mtk_module *m, mtk_module_io *io)
{
    if (io->nin < 2 || !io->in[1]) return models_blocks_encoder_forward(m, io);
    mtk_module *layers = child(m, 0);
    mtk_tensor *h = io->in[0];
    for (int32_t i = 0; h && i < mtk_module_child_count(layers); i++)
        h = mtk_module_forward2(child(layers, i), h, io->in[1]);
    io->out[0] = h;
    io->nout = 1;
    return h != NULL;
}

static const mtk_module_type encoder_base = { "Encoder", encoder_forward, NULL, NULL };

/* ---------------------------------------------------------------- pooler */

/* tanh(dense(h[:, 0])): (B, S, H) -> (B, H) */
static bool pooler_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *first = mtk_select(mtk_module_ctx(m), io->in[0], 1, 0);
    io->out[0] = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), first));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type pooler_base = { "Pooler", pooler_forward, NULL, NULL };

/* ------------------------------------------------------------- BertModel */

typedef struct bert_model_config {
    int64_t positions; /* the longest sequence the position embeddings take */
} bert_model_config;

/* input_ids (B, S)[, attention_mask (B, S), token_type_ids (B, S)] ->
 * last hidden state (B, S, H) [, pooler output (B, H)] */
static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    const bert_model_config *c = mtk_module_config(m);
    if (!models_blocks_check_token_ids(m, io->in[0], c->positions, "max_position_embeddings")) return false;
    bool failed;
    mtk_tensor *mask = models_blocks_bidirectional_mask(mtk_module_ctx(m), io->nin > 1 ? io->in[1] : NULL, &failed);
    if (failed) return false;
    mtk_tensor *types = io->nin > 2 ? io->in[2] : NULL;
    mtk_tensor *e = types ? mtk_module_forward2(child(m, 0), io->in[0], types) : mtk_module_forward(child(m, 0), io->in[0]);
    mtk_tensor *h = mask ? mtk_module_forward2(child(m, 1), e, mask) : mtk_module_forward(child(m, 1), e);
    io->out[0] = h;
    io->nout = 1;
    if (mtk_module_child_count(m) == 3) {
        io->out[1] = mtk_module_forward(child(m, 2), h);
        io->nout = 2;
    }
    return io->out[0] && io->out[io->nout - 1];
}

static const mtk_module_type model_base = { "Model", model_forward, NULL, NULL };

mtk_module *models_bert_model(const model_config *c, const bert_spec *s, bool pooler)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *layers = mtk_nn_module_list(ctx);
    mtk_module *encoder = mtk_module_new(ctx, &s->types->encoder, 0);
    if (!layers || !encoder) return NULL;
    for (int64_t i = 0; i < s->layers; i++)
        if (!mtk_nn_module_list_append(layers, layer(c, s))) return NULL;
    mtk_module *m = mtk_module_new(ctx, &s->types->model, sizeof(bert_model_config));
    if (!m || !mtk_module_add(encoder, "layer", layers)) return NULL;
    /* RoBERTa's positions run from padding_idx + 1 to padding_idx + S */
    ((bert_model_config *)mtk_module_config(m))->positions =
        s->padded_positions ? s->positions - s->padding_idx - 1 : s->positions;
    bool ok = mtk_module_add(m, "embeddings", embeddings(ctx, s)) &&
              mtk_module_add(m, "encoder", mtk_module_finish(encoder));
    if (ok && pooler) {
        mtk_module *p = mtk_module_new(ctx, &s->types->pooler, 0);
        ok = p && mtk_module_add(p, "dense", mtk_nn_linear(ctx, s->hidden, s->hidden, true)) &&
             mtk_module_add(p, "activation", mtk_nn_activation(ctx, "Tanh")) &&
             mtk_module_add(m, "pooler", mtk_module_finish(p));
    }
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------- BertForMaskedLM */

/* BertPredictionHeadTransform: LayerNorm(act(dense(h))) */
static bool transform_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), io->in[0]));
    io->out[0] = mtk_module_forward(child(m, 2), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

/* BertLMPredictionHead: decoder(transform(h)): (B, S, H) -> (B, S, vocab) */
static bool prediction_forward(mtk_module *m, mtk_module_io *io)
{
    io->out[0] = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), io->in[0]));
    io->nout = 1;
    return io->out[0] != NULL;
}

/* The head's own bias: zeros, as transformers initializes it. */
static bool prediction_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    return mtk_init_zeros_(mtk_module_find_tensor(m, "bias"));
}

bool models_bert_first_child_forward(mtk_module *m, mtk_module_io *io)
{
    io->out[0] = mtk_module_forward(child(m, 0), io->in[0]);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type transform_type = { "BertPredictionHeadTransform", transform_forward, NULL, NULL };
static const mtk_module_type prediction_type = { "BertLMPredictionHead", prediction_forward, prediction_reset, NULL };
static const mtk_module_type mlm_head_type = { "BertOnlyMLMHead", models_bert_first_child_forward, NULL, NULL };

/* input_ids (B, S)[, attention_mask, token_type_ids] -> prediction
 * scores (B, S, vocab) */
static bool masked_lm_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module_io bert = *io;
    if (!mtk_module_call(child(m, 0), &bert)) return false;
    io->out[0] = mtk_module_forward(child(m, 1), bert.out[0]);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type masked_lm_type = { "BertForMaskedLM", masked_lm_forward, NULL, NULL };

static mtk_module *masked_lm(const model_config *c, const bert_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *transform = mtk_module_new(ctx, &transform_type, 0);
    bool ok = transform && mtk_module_add(transform, "dense", mtk_nn_linear(ctx, s->hidden, s->hidden, true)) &&
              mtk_module_add(transform, "transform_act_fn", models_blocks_activation(c, "hidden_act", s->act)) &&
              mtk_module_add(transform, "LayerNorm", layer_norm(ctx, s));
    mtk_module *predictions = ok ? mtk_module_new(ctx, &prediction_type, 0) : NULL;
    ok = predictions && mtk_module_add(predictions, "transform", mtk_module_finish(transform)) &&
         mtk_module_add(predictions, "decoder", mtk_nn_linear(ctx, s->hidden, s->vocab, true)) &&
         mtk_module_new_parameter(predictions, "bias", &s->vocab, 1);
    mtk_module *head = ok ? mtk_module_new(ctx, &mlm_head_type, 0) : NULL;
    ok = head && mtk_module_add(head, "predictions", mtk_module_finish(predictions));
    mtk_module *m = ok ? mtk_module_new(ctx, &masked_lm_type, 0) : NULL;
    ok = m && mtk_module_add(m, "bert", models_bert_model(c, s, false)) && mtk_module_add(m, "cls", mtk_module_finish(head));
    if (ok && s->tie)
        ok = mtk_module_tie(m, "cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight") &&
             mtk_module_tie(m, "cls.predictions.decoder.bias", "cls.predictions.bias");
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------ BertForSequenceClassification */

/* input_ids (B, S)[, attention_mask, token_type_ids] -> logits (B,
 * num_labels) from the pooled output */
static bool sequence_classification_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module_io bert = *io; /* input_ids[, attention_mask[, token_type_ids]] */
    if (!mtk_module_call(child(m, 0), &bert)) return false;
    mtk_tensor *pooled = mtk_module_forward(child(m, 1), bert.out[1]);
    io->out[0] = mtk_module_forward(child(m, 2), pooled);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type sequence_classification_type = { "BertForSequenceClassification",
                                                              sequence_classification_forward, NULL, NULL };

static mtk_module *sequence_classification(const model_config *c, const bert_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &sequence_classification_type, 0);
    bool ok = m && mtk_module_add(m, "bert", models_bert_model(c, s, true)) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->classifier_dropout)) &&
              mtk_module_add(m, "classifier", mtk_nn_linear(ctx, s->hidden, s->labels, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* --------------------------------------------- BertForTokenClassification */

/* input_ids (B, S)[, attention_mask, token_type_ids] -> logits (B, S,
 * num_labels) from the last hidden state;
 * config: whether the head (dropout, classifier) precedes the base model */
static bool token_classification_forward(mtk_module *m, mtk_module_io *io)
{
    bool heads_first = *(const bool *)mtk_module_config(m);
    int32_t base_at = heads_first ? 2 : 0, dropout_at = heads_first ? 0 : 1;
    mtk_module_io bert = *io; /* input_ids[, attention_mask[, token_type_ids]] */
    if (!mtk_module_call(child(m, base_at), &bert)) return false;
    io->out[0] = mtk_module_forward(child(m, dropout_at + 1), mtk_module_forward(child(m, dropout_at), bert.out[0]));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type token_classification_base = { "ForTokenClassification", token_classification_forward,
                                                           NULL, NULL };

mtk_module *models_bert_token_classification(const model_config *c, const bert_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &s->types->token_classification, sizeof(bool));
    if (!m) return NULL;
    *(bool *)mtk_module_config(m) = s->heads_first;
    bool ok = (s->heads_first || mtk_module_add(m, s->base_name, models_bert_model(c, s, false))) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->classifier_dropout)) &&
              mtk_module_add(m, "classifier", mtk_nn_linear(ctx, s->hidden, s->labels, true)) &&
              (!s->heads_first || mtk_module_add(m, s->base_name, models_bert_model(c, s, false)));
    return ok ? mtk_module_finish(m) : NULL;
}

/* --------------------------------------------------------------- config */

static bool types_init(mtk_ctx *ctx, bert_types *t, const char *prefix)
{
    return models_blocks_named_type(ctx, &t->embeddings, &embeddings_base, prefix) &&
           models_blocks_named_type(ctx, &t->self_attention, &self_attention_base, prefix) &&
           models_blocks_named_type(ctx, &t->cross_attention, &cross_attention_base, prefix) &&
           models_blocks_named_type(ctx, &t->self_output, &self_output_base, prefix) &&
           models_blocks_named_type(ctx, &t->output, &output_base, prefix) &&
           models_blocks_named_type(ctx, &t->attention, &attention_base, prefix) &&
           models_blocks_named_type(ctx, &t->intermediate, &intermediate_base, prefix) &&
           models_blocks_named_type(ctx, &t->layer, &layer_base, prefix) &&
           models_blocks_named_type(ctx, &t->encoder, &encoder_base, prefix) &&
           models_blocks_named_type(ctx, &t->pooler, &pooler_base, prefix) &&
           models_blocks_named_type(ctx, &t->model, &model_base, prefix) &&
           models_blocks_named_type(ctx, &t->token_classification, &token_classification_base, prefix);
}

/* RoBERTa numbers positions from pad_token_id + 1: it needs a pad token
 * that is a row of the position embeddings too. */
static bool check_padded_positions(model_config *c, bert_spec *s)
{
    s->padded_positions = true;
    if (s->padding_idx == MTK_NN_NO_PADDING_IDX)
        return models_cfg_fail(c, "pad_token_id", "%sModel numbers positions from pad_token_id + 1; it cannot be null",
                               s->prefix);
    /* a negative pad token would count positions from below zero */
    if (models_cfg_int(c, "pad_token_id", 1) < 0)
        return models_cfg_fail(c, "pad_token_id", "must be >= 0 for %sModel's positions (they start at pad_token_id "
                               "+ 1), got %lld", s->prefix, (long long)models_cfg_int(c, "pad_token_id", 1));
    if (s->padding_idx + 1 >= s->positions)
        return models_cfg_fail(c, "pad_token_id",
                               "%lld leaves no position: positions run from pad_token_id + 1 below "
                               "max_position_embeddings=%lld",
                               (long long)s->padding_idx, (long long)s->positions);
    return true;
}

bool models_bert_read_spec(model_config *c, bert_spec *s, const char *prefix, const char *base_name,
                           int64_t vocab_default, int64_t pad_default, bool padded_positions)
{
    memset(s, 0, sizeof *s);
    s->prefix = prefix;
    s->base_name = base_name;
    bert_types *types = mtk_ctx_alloc(c->ctx, sizeof *types);
    if (!types || !types_init(c->ctx, types, prefix)) return false;
    s->types = types;
    s->vocab = models_cfg_positive(c, "vocab_size", vocab_default);
    s->hidden = models_cfg_positive(c, "hidden_size", 768);
    s->heads = models_cfg_positive(c, "num_attention_heads", 12);
    s->layers = models_cfg_int(c, "num_hidden_layers", 12);
    if (!models_cfg_check_layers(c, "num_hidden_layers", s->layers)) return false;
    s->intermediate = models_cfg_positive(c, "intermediate_size", 3072);
    s->positions = models_cfg_positive(c, "max_position_embeddings", 512);
    s->type_vocab = models_cfg_positive(c, "type_vocab_size", 2);
    s->act = models_cfg_string(c, "hidden_act", "gelu");
    s->eps = models_blocks_eps(c, "layer_norm_eps", 1e-12);
    s->hidden_dropout = models_blocks_dropout(c, "hidden_dropout_prob", 0.1);
    s->attention_dropout = models_blocks_dropout(c, "attention_probs_dropout_prob", 0.1);
    s->classifier_dropout = models_blocks_dropout(c, "classifier_dropout", s->hidden_dropout);
    s->is_decoder = models_cfg_bool(c, "is_decoder", false);
    s->cross_attention = models_cfg_bool(c, "add_cross_attention", false);
    s->tie = models_cfg_bool(c, "tie_word_embeddings", true);
    s->labels = models_blocks_num_labels(c);
    /* an explicit null is no padding row; absent is the config class's default */
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(c->root, "pad_token_id");
    s->padding_idx = pad && cJSON_IsNull(pad) ? MTK_NN_NO_PADDING_IDX : models_cfg_int(c, "pad_token_id", pad_default);
    if (!models_cfg_ok(c)) return false;
    if (s->hidden % s->heads != 0)
        return models_cfg_fail(c, "hidden_size", "hidden_size=%lld is not a multiple of num_attention_heads=%lld",
                        (long long)s->hidden, (long long)s->heads);
    s->head_dim = s->hidden / s->heads;
    if (s->padding_idx != MTK_NN_NO_PADDING_IDX && (s->padding_idx >= s->vocab || s->padding_idx < -s->vocab))
        return models_cfg_fail(c, "pad_token_id", "%lld is not a row of the embedding (vocab_size %lld): Padding_idx must be "
                        "within num_embeddings", (long long)s->padding_idx, (long long)s->vocab);
    if (s->padding_idx < 0 && s->padding_idx != MTK_NN_NO_PADDING_IDX) s->padding_idx += s->vocab;
    return !padded_positions || check_padded_positions(c, s);
}

mtk_module *models_family_bert_build(model_config *c, const char *architecture)
{
    bert_spec s;
    if (!models_bert_read_spec(c, &s, "Bert", "bert", 30522, 0, false)) return NULL;
    if (strcmp(architecture, "BertForMaskedLM") == 0) return masked_lm(c, &s);
    if (strcmp(architecture, "BertForSequenceClassification") == 0) return sequence_classification(c, &s);
    if (strcmp(architecture, "BertForTokenClassification") == 0) return models_bert_token_classification(c, &s);
    return models_bert_model(c, &s, true);
}

bool models_bert_takes_inputs(const mtk_module *m)
{
    const mtk_module_type *t = m ? mtk_module_type_of(m) : NULL;
    return t && (t->forward == model_forward || t->forward == masked_lm_forward ||
                 t->forward == sequence_classification_forward || t->forward == token_classification_forward ||
                 models_roberta_takes_inputs(m));
}
