/* llama4: a Llama 4 multimodal config (Llama4ForConditionalGeneration,
 * text_config + vision_config), of which mtk builds the text part as
 * transformers names it there: language_model, a Llama4ForCausalLM of the
 * text_config (family_llama4.c), under the config's dtype.  The vision
 * tower (vision_model) and multi_modal_projector are not modelled: counts,
 * summaries and memory plans cover the text model, and a note says so. */
#include "models/decoder.h"

#include <stdio.h>
#include <string.h>

/* forward(ids (B, S)) -> the language model's logits (B, S, vocab) */
static bool conditional_forward(mtk_module *m, mtk_module_io *io)
{
    io->out[0] = mtk_module_forward(mtk_module_child_at(m, 0, NULL), io->in[0]);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type conditional_type = { "Llama4ForConditionalGeneration", conditional_forward, NULL, NULL };

static const char vision_note[] =
    "llama4: only the text model (language_model) is built; the vision tower (vision_model) and "
    "multi_modal_projector are not modelled, so counts and memory leave them out";

mtk_module *models_family_llama4_build(model_config *c, const char *architecture)
{
    (void)architecture; /* the family row has one class */
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(c->root, "text_config");
    if (!text || cJSON_IsNull(text))
        return models_cfg_fail(c, NULL, "missing required field 'text_config'"), NULL;
    if (!cJSON_IsObject(text)) return models_cfg_fail(c, "text_config", "expected an object"), NULL;
    /* the text_config read as a config of its own (borrowed: c owns it) */
    size_t n = strlen(c->origin) + 16;
    char *origin = mtk_ctx_alloc(c->ctx, n);
    if (!origin) return NULL;
    snprintf(origin, n, "%s: text_config", c->origin);
    model_config sub = *c;
    sub.root = (cJSON *)text;
    sub.origin = origin;
    sub.nnotes = 0;
    mtk_module *language_model = models_family_llama4_text_build(&sub, "Llama4ForCausalLM");
    for (int32_t i = 0; i < sub.nnotes; i++) models_cfg_note(c, sub.notes[i]);
    models_cfg_note(c, vision_note);
    mtk_module *m = language_model ? mtk_module_new(c->ctx, &conditional_type, 0) : NULL;
    if (!m || !mtk_module_add(m, "language_model", language_model)) return NULL;
    return mtk_module_finish(m);
}
