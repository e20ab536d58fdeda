/* Tracing a zoo model for the planner: the model built on meta, one
 * forward (with transformers' causal- or masked-LM loss when asked)
 * recorded, and
 * the graph of it. */
#include "plan/graph.h"

#include "mtk/ops.h"

#include <string.h>

/* The repeating units of transformers' _no_split_modules: what
 * gradient_checkpointing_enable() wraps. */
static bool is_checkpoint_unit(const char *type)
{
    static const char *const exact[] = { "GPT2Block",    "GPTNeoXLayer",    "BertLayer",
                                         "ViTLayer",     "RobertaLayer",    "XLMRobertaLayer",
                                         "ModernBertEncoderLayer", "T5Block" };
    size_t n = strlen(type), k = strlen("DecoderLayer");
    if (n >= k && strcmp(type + n - k, "DecoderLayer") == 0) return true;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(type, exact[i]) == 0) return true;
    return false;
}

/* ForCausalLMLoss(logits, labels=ids): logits.float(); labels padded
 * with -100 on the right and shifted by one; cross_entropy over (B*S, V)
 * with ignore_index -100, mean.  Returns the 0-dim loss. */
static mtk_tensor *causal_lm_loss(mtk_ctx *ctx, mtk_tensor *logits, mtk_tensor *ids)
{
    if (!logits || !ids) return NULL;
    int64_t b = ids->shape[0], s = ids->shape[1], vocab = logits->shape[logits->ndim - 1];
    mtk_tensor *upcast = mtk_to_dtype(ctx, logits, MTK_FLOAT32);           /* (B, S, V) f32 */
    int64_t pad[2] = { 0, 1 };
    mtk_tensor *labels = mtk_pad(ctx, ids, pad, 2, "constant", -100);      /* (B, S + 1)    */
    mtk_tensor *shifted = mtk_contiguous(ctx, mtk_narrow(ctx, labels, -1, 1, s)); /* (B, S) */
    int64_t flat[2] = { -1, vocab }, flat_labels[1] = { -1 };
    (void)b;
    return mtk_cross_entropy(ctx, mtk_view(ctx, upcast, flat, 2), mtk_view(ctx, shifted, flat_labels, 1), NULL,
                             -100, "mean", 0.0);
}

/* The masked-LM loss with labels=input_ids (every token a target):
 * cross_entropy over (B*S, V) with ignore_index -100, mean.  BERT and
 * RoBERTa call CrossEntropyLoss on the logits as they are; ModernBERT's
 * ForMaskedLMLoss upcasts them to float32 first.  Returns the 0-dim loss. */
static mtk_tensor *masked_lm_loss(mtk_ctx *ctx, mtk_tensor *logits, mtk_tensor *ids, bool upcast)
{
    if (!logits || !ids) return NULL;
    int64_t vocab = logits->shape[logits->ndim - 1];
    if (upcast) logits = mtk_to_dtype(ctx, logits, MTK_FLOAT32);
    int64_t flat[2] = { -1, vocab }, flat_labels[1] = { -1 };
    return mtk_cross_entropy(ctx, mtk_view(ctx, logits, flat, 2), mtk_view(ctx, ids, flat_labels, 1), NULL, -100,
                             "mean", 0.0);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* An encoder-decoder's loss with labels (T5ForConditionalGeneration):
 * CrossEntropyLoss(ignore_index=-100) over logits (B*T, V) and labels
 * (B*T), in the logits' dtype, mean; the labels are the decoder's ids
 * (transformers shifts them right into decoder_input_ids: small int64
 * ops, not traced).  Returns the 0-dim loss. */
static mtk_tensor *seq2seq_lm_loss(mtk_ctx *ctx, mtk_tensor *logits, mtk_tensor *labels)
{
    if (!logits || !labels) return NULL;
    int64_t flat[2] = { -1, logits->shape[logits->ndim - 1] }, flat_labels[1] = { -1 };
    return mtk_cross_entropy(ctx, mtk_view(ctx, logits, flat, 2), mtk_view(ctx, labels, flat_labels, 1), NULL, -100,
                             "mean", 0.0);
}

static mtk_tensor *make_input(mtk_ctx *ctx, mtk_module *model, const mtk_model_info *info,
                              const mtk_plan_trace_options *o)
{
    if (info->input == MTK_MODEL_INPUT_PIXELS) {
        /* (B, C, H, W) of the config's image size: the patch embedding's
           conv gives C, the position embeddings H*W / patch^2 */
        mtk_tensor *conv = mtk_module_find_tensor(model, "vit.embeddings.patch_embeddings.projection.weight");
        if (!conv) conv = mtk_module_find_tensor(model, "embeddings.patch_embeddings.projection.weight");
        mtk_tensor *pos = mtk_module_find_tensor(model, "vit.embeddings.position_embeddings");
        if (!pos) pos = mtk_module_find_tensor(model, "embeddings.position_embeddings");
        if (!conv || !pos) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "plan: cannot tell the image size of %s", info->architecture);
            return NULL;
        }
        int64_t patch = conv->shape[2], side = 1, patches = pos->shape[1] - 1;
        while (side * side < patches) side++;
        int64_t shape[4] = { o->batch, conv->shape[1], side * patch, side * patch };
        return mtk_tensor_new(ctx, info->dtype, shape, 4, NULL, MTK_DEVICE_META);
    }
    int64_t shape[2] = { o->batch, o->seq };
    return mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META);
}

mtk_plan_model *mtk_plan_trace_model(mtk_ctx *ctx, const char *model, const mtk_plan_trace_options *o)
{
    if (!ctx) return NULL;
    if (!o || o->batch <= 0 || o->seq <= 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "plan: the input needs a positive batch and sequence length");
        return NULL;
    }
    mtk_plan_model *p = mtk_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    if (o->attention && strcmp(o->attention, "eager") == 0) {
        /* the families whose eager attention mtk builds (the others run
           sdpa whatever the config says) */
        static const char *const eager[] = { "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "gemma", "gemma2",
                                             "phi3", "gpt_oss" /* eager only: its sinks */ };
        mtk_model_config *c = NULL;
        const mtk_builtin_model *b = mtk_builtin_model_find(model);
        c = b ? mtk_model_config_parse(ctx, b->config_json, b->name) : mtk_model_config_load(ctx, model);
        const char *family = c ? mtk_model_config_model_type(c) : NULL;
        bool known = false;
        for (size_t i = 0; family && i < sizeof eager / sizeof eager[0]; i++) known = known || strcmp(family, eager[i]) == 0;
        if (family && !known)
            mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
                      "plan: eager attention is not modelled for %s models yet (use sdpa, transformers' default)",
                      family);
        mtk_model_config_free(c);
        if (!known) return NULL;
    }
    mtk_model_resolve_options ropts = { .dtype = o->dtype, .meta = true, .attention = o->attention,
                                        .experts = o->experts };
    p->model = mtk_model_resolve(ctx, model, &ropts, &p->info);
    if (!p->model) return NULL;
    mtk_module_train(p->model, o->training);
    p->input = make_input(ctx, p->model, &p->info, o);
    if (!p->input) return NULL;
    const char *arch = p->info.architecture;
    bool seq2seq = p->info.input == MTK_MODEL_INPUT_SEQ2SEQ_IDS;
    if (seq2seq) {
        if (o->decoder_seq <= 0) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "plan: %s is an encoder-decoder: give the decoder's length too (mtk memory: a second --input "
                      "BxT, e.g. --input 1x512 --input 1x128)",
                      arch);
            return NULL;
        }
        int64_t shape[2] = { o->batch, o->decoder_seq };
        p->decoder_input = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META);
        if (!p->decoder_input) return NULL;
    }
    /* a multimodal ForConditionalGeneration of token ids (gemma3, mistral3,
       llama4) is its text model's causal LM */
    bool causal_lm = ends_with(arch, "ForCausalLM") || strcmp(arch, "GPT2LMHeadModel") == 0 ||
                     (!seq2seq && ends_with(arch, "ForConditionalGeneration"));
    bool masked_lm = ends_with(arch, "ForMaskedLM");
    bool conditional = seq2seq && ends_with(arch, "ForConditionalGeneration");
    if (o->with_loss && !causal_lm && !masked_lm && !conditional) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "plan: a loss is modelled for causal and masked language models (labels=input_ids) and "
                  "encoder-decoders' ForConditionalGeneration (labels=decoder ids), not for %s",
                  arch);
        return NULL;
    }
    p->trace = mtk_trace_begin(p->model);
    if (!p->trace) return NULL;
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META)) {
        mtk_trace_free(p->trace);
        return NULL;
    }
    if (seq2seq) {
        p->output = mtk_module_forward2(p->model, p->input, p->decoder_input);
        if (p->output && o->with_loss) p->loss = seq2seq_lm_loss(ctx, p->output, p->decoder_input);
    } else {
        p->output = mtk_module_forward(p->model, p->input);
        if (p->output && o->with_loss)
            p->loss = masked_lm ? masked_lm_loss(ctx, p->output, p->input, strncmp(arch, "ModernBert", 10) == 0)
                                : causal_lm_loss(ctx, p->output, p->input);
    }
    mtk_ctx_pop_device(ctx);
    mtk_trace_end(p->trace);
    if (!p->output || (o->with_loss && !p->loss)) return NULL;
    p->graph = mtk_graph_from_trace_on(p->trace, o->device_kind);
    if (!p->graph) return NULL;
    int32_t nmod = mtk_trace_module_count(p->trace);
    int32_t *layers = mtk_ctx_alloc(ctx, (size_t)(nmod ? nmod : 1) * sizeof *layers);
    if (!layers) return NULL;
    for (int32_t i = 0; i < nmod; i++) {
        const mtk_trace_module *m = mtk_trace_module_at(p->trace, i);
        if (is_checkpoint_unit(mtk_module_type_name(m->module))) layers[p->nlayers++] = i;
    }
    p->layers = layers;
    return p;
}
