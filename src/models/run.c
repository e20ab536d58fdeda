/* mtk_model_run: one forward of a loaded model with transformers' inputs
 * (input_ids, attention_mask, position_ids, token_type_ids).  Decoders go
 * through the cached forward (decoder_cache.c: masking_utils' masks, one
 * mask builder for both), the BERT-likes through their own mask plumbing
 * (family_bert.c), anything else through its plain forward. */
#include "models/bert.h"
#include "models/decoder.h"
#include "mtk/models.h"
#include "mtk/ops.h"
#include "mtk/run.h"

#include <string.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A (B, S) integer tensor matching input_ids, or NULL. */
static bool check_like_ids(mtk_ctx *ctx, const mtk_tensor *t, const mtk_tensor *ids, const char *what, bool batch_one)
{
    if (!t) return true;
    if (t->device != MTK_DEVICE_CPU)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s must be on the cpu", what);
    if (t->ndim != 2 || !(mtk_dtype_is_integral(t->dtype, true)))
        return mtk_error(ctx, MTK_ERR_SHAPE, "run: %s must be (batch, sequence) integers, got %d dim%s of %s", what,
                         (int)t->ndim, t->ndim == 1 ? "" : "s", mtk_dtype_name(t->dtype));
    bool batch_ok = t->shape[0] == ids->shape[0] || (batch_one && t->shape[0] == 1);
    if (!batch_ok || t->shape[1] != ids->shape[1])
        return mtk_error(ctx, MTK_ERR_SHAPE, "run: %s is (%lld, %lld) but input_ids is (%lld, %lld)", what,
                         (long long)t->shape[0], (long long)t->shape[1], (long long)ids->shape[0],
                         (long long)ids->shape[1]);
    return true;
}

/* Whether the 0 / 1 mask holds a 0 (the mask is checked to be 0 or 1). */
static bool mask_has_padding(mtk_ctx *ctx, mtk_tensor *mask, bool *padded)
{
    *padded = false;
    if (!mask) return true;
    mtk_tensor *m = mtk_contiguous(ctx, mtk_to_dtype(ctx, mask, MTK_INT64));
    const int64_t *v = m ? mtk_tensor_data(m) : NULL;
    if (!v) return false;
    int64_t n = mtk_tensor_numel(m);
    for (int64_t i = 0; i < n; i++) {
        if (v[i] != 0 && v[i] != 1)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "run: attention_mask holds %lld at row %lld, column %lld: expected 0 (padding) or 1",
                             (long long)v[i], (long long)(i / m->shape[1]), (long long)(i % m->shape[1]));
        if (v[i] == 0) *padded = true;
    }
    return true;
}

/* The vocabulary of the token embedding (the first embedding parameter of
 * the state dict), 0 when there is none. */
static int64_t vocab_size(mtk_module *model)
{
    mtk_named_tensor *params = NULL;
    int32_t n = mtk_module_named_parameters(model, &params);
    for (int32_t i = 0; i < n; i++) {
        const char *name = params[i].name;
        const mtk_tensor *t = params[i].tensor;
        if (t->ndim == 2 && (strstr(name, "embed_tokens.") || strstr(name, "word_embeddings.") ||
                             strstr(name, "wte.") || strstr(name, "embed_in.") || strstr(name, "shared.")))
            return t->shape[0];
    }
    return 0;
}

static bool check_ids_in_vocab(mtk_ctx *ctx, mtk_module *model, mtk_tensor *ids)
{
    int64_t vocab = vocab_size(model);
    if (vocab <= 0) return true;
    mtk_tensor *c = mtk_contiguous(ctx, mtk_to_dtype(ctx, ids, MTK_INT64));
    const int64_t *v = c ? mtk_tensor_data(c) : NULL;
    if (!v) return false;
    int64_t n = mtk_tensor_numel(c);
    for (int64_t i = 0; i < n; i++)
        if (v[i] < 0 || v[i] >= vocab)
            return mtk_error(ctx, MTK_ERR_INDEX,
                             "run: input_ids[%lld][%lld] = %lld is not a token of the vocabulary (vocab_size %lld: "
                             "ids are 0..%lld)",
                             (long long)(i / c->shape[1]), (long long)(i % c->shape[1]), (long long)v[i],
                             (long long)vocab, (long long)(vocab - 1));
    return true;
}

/* The classes whose forward takes (input_ids, attention_mask) and builds
 * its mask itself (models_padded_causal_mask, ModernBERT's bidirectional
 * one); `positions`: then position_ids as a third input. */
static const struct {
    const char *name;
    bool positions;
} masked_forward_classes[] = {
    { "GPT2Model", true }, { "GPT2LMHeadModel", true }, { "GPTNeoXModel", true }, { "GPTNeoXForCausalLM", true },
    { "PhiModel", true },  { "PhiForCausalLM", true },  { "ModernBertModel", false }, { "T5EncoderModel", false },
    { "ModernBertForMaskedLM", false }, { "ModernBertForSequenceClassification", false },
    { "ModernBertForTokenClassification", false },
};

/* Whether the model's forward takes the mask (and, in *positions, the
 * position_ids): the classes above and the decoders' classification heads
 * (models_classifier_is), which hand both to their base model. */
static bool takes_mask(const mtk_module *model, bool *positions)
{
    *positions = models_classifier_is(model);
    if (*positions) return true;
    const char *type = mtk_module_type_name(model);
    for (size_t i = 0; i < sizeof masked_forward_classes / sizeof *masked_forward_classes; i++)
        if (strcmp(type, masked_forward_classes[i].name) == 0) {
            *positions = masked_forward_classes[i].positions;
            return true;
        }
    return false;
}

/* The encoder-decoders whose forward takes (input_ids, decoder_input_ids). */
static const char *const seq2seq_classes[] = { "T5Model", "T5ForConditionalGeneration" };

static bool is_seq2seq(const mtk_module *model)
{
    for (size_t i = 0; i < sizeof seq2seq_classes / sizeof *seq2seq_classes; i++)
        if (strcmp(mtk_module_type_name(model), seq2seq_classes[i]) == 0) return true;
    return false;
}

/* model(input_ids, decoder_input_ids[, attention_mask]) of an
 * encoder-decoder: the mask's padding goes to the encoder's self-attention
 * and the decoder's cross-attention; no position ids or token types. */
static bool run_seq2seq(mtk_module *model, const mtk_model_inputs *in, bool padded, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(model);
    const char *type = mtk_module_type_name(model);
    const mtk_tensor *dec = in->decoder_input_ids, *ids = in->input_ids;
    if (!is_seq2seq(model))
        return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "run: %s takes no decoder_input_ids (an encoder-decoder does: "
                         "T5Model, T5ForConditionalGeneration)", type);
    if (!dec)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: %s is an encoder-decoder: give the decoder's ids too "
                         "(decoder_input_ids, --decoder-input-ids)", type);
    if (dec->device != MTK_DEVICE_CPU || dec->ndim != 2 || !mtk_dtype_is_integral(dec->dtype, false) ||
        dec->shape[0] != ids->shape[0] || dec->shape[1] < 1)
        return mtk_error(ctx, MTK_ERR_SHAPE, "run: decoder_input_ids must be (%lld, T >= 1) integers on the cpu, got "
                         "%d dim%s of %s", (long long)ids->shape[0], (int)dec->ndim, dec->ndim == 1 ? "" : "s",
                         mtk_dtype_name(dec->dtype));
    if (in->position_ids || in->token_type_ids)
        return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "run: %s takes no %s", type,
                         in->position_ids ? "position_ids" : "token_type_ids");
    io->in[1] = in->decoder_input_ids;
    io->nin = 2;
    if (padded) io->in[io->nin++] = in->attention_mask;
    return check_ids_in_vocab(ctx, model, in->decoder_input_ids) && mtk_module_call(model, io);
}

/* transformers' output names for a class. */
static void name_outputs(mtk_module *model, mtk_model_outputs *out)
{
    const char *type = mtk_module_type_name(model);
    bool base = ends_with(type, "Model") && !strstr(type, "LMHead");
    for (int32_t i = 0; i < out->count; i++) {
        if (strcmp(type, "CLIPTextModelWithProjection") == 0)
            out->names[i] = i == 0 ? "text_embeds" : "last_hidden_state";
        else if (is_seq2seq(model) && i == 1) out->names[i] = "encoder_last_hidden_state";
        else if (ends_with(type, "ForQuestionAnswering")) out->names[i] = i == 0 ? "start_logits" : "end_logits";
        else if (!base) out->names[i] = i == 0 ? "logits" : "output";
        else out->names[i] = i == 0 ? "last_hidden_state" : i == 1 ? "pooler_output" : "output";
    }
}

bool mtk_model_run(mtk_module *model, const mtk_model_inputs *in, mtk_model_outputs *out)
{
    if (!model || !in || !out) return false;
    mtk_ctx *ctx = mtk_module_ctx(model);
    memset(out, 0, sizeof *out);
    const char *args[MTK_COMPONENT_MAX_INPUTS];
    int32_t nargs = mtk_component_arguments(model, "forward", args, MTK_COMPONENT_MAX_INPUTS, NULL);
    if (nargs > 0)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "run: %s is a diffusers component: it takes %s%s, not token ids (mtk_component_run; "
                         "mtk run --input NAME=VALUE)",
                         mtk_module_type_name(model), args[0], nargs > 1 ? ", ..." : "");
    mtk_tensor *ids = in->input_ids;
    if (!ids) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run: no input_ids");
    if (ids->ndim != 2 || !mtk_dtype_is_integral(ids->dtype, false))
        return mtk_error(ctx, MTK_ERR_SHAPE, "run: input_ids must be (batch, sequence) integers, got %d dim%s of %s",
                         (int)ids->ndim, ids->ndim == 1 ? "" : "s", mtk_dtype_name(ids->dtype));
    if (ids->shape[0] < 1 || ids->shape[1] < 1)
        return mtk_error(ctx, MTK_ERR_SHAPE, "run: input_ids is (%lld, %lld): no tokens", (long long)ids->shape[0],
                         (long long)ids->shape[1]);
    if (!check_like_ids(ctx, in->attention_mask, ids, "attention_mask", false) ||
        !check_like_ids(ctx, in->position_ids, ids, "position_ids", true) ||
        !check_like_ids(ctx, in->token_type_ids, ids, "token_type_ids", false) ||
        !check_ids_in_vocab(ctx, model, ids))
        return false;
    bool padded = false, positions = false;
    if (!mask_has_padding(ctx, in->attention_mask, &padded)) return false;
    bool was_training = mtk_module_is_training(model);
    mtk_module_train(model, false);
    decoder_parts parts;
    mtk_module_io io = { .in = { ids }, .nin = 1 };
    bool ok;
    if (in->decoder_input_ids || is_seq2seq(model)) {
        ok = run_seq2seq(model, in, padded, &io);
    } else if (models_decoder_parts_of(model, &parts)) {
        if (in->token_type_ids) {
            mtk_module_train(model, was_training);
            return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "run: %s takes no token_type_ids",
                             mtk_module_type_name(model));
        }
        /* model(input_ids, attention_mask) with a fresh DynamicCache, as
           transformers 5 runs it (use_cache defaults to true) */
        mtk_kv_cache *cache = mtk_kv_cache_new(model);
        mtk_lm_step step = { .logits_to_keep = 0, .attention_mask = in->attention_mask != NULL,
                             .position_ids = in->position_ids, .padding_mask = in->attention_mask };
        io.out[0] = cache ? mtk_lm_forward_cached(model, ids, cache, &step) : NULL;
        io.nout = 1;
        ok = io.out[0] != NULL;
    } else if (models_bert_takes_inputs(model)) {
        /* (ids[, mask[, token types]]): a module's inputs are never NULL */
        if (in->attention_mask || in->token_type_ids) {
            io.in[io.nin++] = in->attention_mask ? in->attention_mask : mtk_ones(ctx, ids->shape, 2, MTK_INT64);
            if (in->token_type_ids) io.in[io.nin++] = in->token_type_ids;
        }
        ok = !in->position_ids ? mtk_module_call(model, &io)
                               : mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "run: %s takes no position_ids here",
                                           mtk_module_type_name(model));
    } else if (takes_mask(model, &positions) && (positions || !in->position_ids) && !in->token_type_ids) {
        /* (ids[, mask[, positions]]): a module's inputs are never NULL */
        if (in->attention_mask || in->position_ids)
            io.in[io.nin++] = in->attention_mask ? in->attention_mask : mtk_ones(ctx, ids->shape, 2, MTK_INT64);
        if (in->position_ids) io.in[io.nin++] = in->position_ids;
        ok = mtk_module_call(model, &io);
    } else if (padded || in->position_ids || in->token_type_ids) {
        ok = mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
                       "run: %s's forward takes input_ids only in mtk (no %s yet): run it without padding",
                       mtk_module_type_name(model),
                       padded ? "attention_mask with padding" : in->position_ids ? "position_ids" : "token_type_ids");
    } else {
        ok = mtk_module_call(model, &io);
    }
    mtk_module_train(model, was_training);
    if (!ok) return false;
    out->count = io.nout < MTK_MODEL_MAX_OUTPUTS ? io.nout : MTK_MODEL_MAX_OUTPUTS;
    for (int32_t i = 0; i < out->count; i++) out->tensors[i] = io.out[i];
    name_outputs(model, out);
    return true;
}
