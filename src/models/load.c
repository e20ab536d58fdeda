/* mtk_model_load: a MODEL argument built on meta and filled from a
 * checkpoint with its family's key rules, in one call. */
#include "mtk/load.h"
#include "mtk/nn.h"
#include "mtk/stream.h"

mtk_module *mtk_model_load(mtk_ctx *ctx, const char *model, const char *weights,
                           const mtk_model_resolve_options *options, const mtk_load_spec *spec, mtk_model_info *info,
                           mtk_load_result *result)
{
    mtk_model_info local;
    if (!info) info = &local;
    mtk_model_resolve_options ropts = options ? *options : (mtk_model_resolve_options){ .dtype = MTK_DTYPE_UNDEFINED };
    ropts.meta = true;
    mtk_module *m = mtk_model_resolve(ctx, model, &ropts, info);
    if (!m) return NULL;
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, weights);
    if (!ckpt) return NULL;
    mtk_load_spec s = spec ? *spec : (mtk_load_spec){ 0 };
    if (!s.rules) s.rules = mtk_model_key_rules(info->family);
    bool ok = mtk_load_module(ctx, m, ckpt, &s, result);
    mtk_checkpoint_close(ckpt);
    return ok ? m : NULL;
}

mtk_stream *mtk_model_load_streamed(mtk_ctx *ctx, const char *model, const char *weights,
                                    const mtk_model_resolve_options *options, const mtk_load_spec *spec,
                                    uint64_t max_ram, mtk_model_info *info, mtk_load_result *result,
                                    mtk_module **model_out)
{
    mtk_model_info local;
    if (!info) info = &local;
    if (model_out) *model_out = NULL;
    mtk_model_resolve_options ropts = options ? *options : (mtk_model_resolve_options){ .dtype = MTK_DTYPE_UNDEFINED };
    ropts.meta = true;
    mtk_module *m = mtk_model_resolve(ctx, model, &ropts, info);
    if (!m) return NULL;
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, weights);
    if (!ckpt) return NULL;
    mtk_load_spec s = spec ? *spec : (mtk_load_spec){ 0 };
    if (!s.rules) s.rules = mtk_model_key_rules(info->family);
    mtk_stream *stream = mtk_stream_load(ctx, m, ckpt, &s, max_ram, result);
    mtk_checkpoint_close(ckpt);
    if (stream && model_out) *model_out = m;
    return stream;
}
