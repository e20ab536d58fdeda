/* Shared pieces of diffusers' transformer denoisers (SD3Transformer2DModel,
 * FluxTransformer2DModel, Lumina2Transformer2DModel: diffusers_sd3.c,
 * diffusers_flux.c, diffusers_lumina2.c), with diffusers' class names and
 * state-dict names: the sinusoidal timestep projection and its MLP, the
 * pooled-text projection, the adaptive layer norms that turn the
 * conditioning vector into shift / scale / gate rows, and the GELU
 * feed-forward.  Each is a module whose forward takes its diffusers
 * arguments in order (io->in) and returns what diffusers returns (io->out). */
#ifndef MTK_MODELS_DIFFUSERS_DIT_H
#define MTK_MODELS_DIFFUSERS_DIT_H

#include "models/blocks.h"
#include "models/diffusers_blocks.h" /* Timesteps: diffusers_timesteps */

/* TimestepEmbedding(in, dim): linear_1 (in -> dim), act SiLU, linear_2
 * (dim -> dim).  (B, in) -> (B, dim). */
mtk_module *dit_timestep_embedding(mtk_ctx *ctx, int64_t in, int64_t dim);

/* CombinedTimestepTextProjEmbeddings(dim, pooled), or with `guidance`
 * CombinedTimestepGuidanceTextProjEmbeddings: time_proj (Timesteps(256,
 * flip, 0)), timestep_embedder, [guidance_embedder,] text_embedder
 * (PixArtAlphaTextProjection: linear_1, act_1 SiLU, linear_2).
 * Forward (timestep (B,), [guidance (B,),] pooled (B, pooled)) ->
 * conditioning (B, dim) in the pooled projection's dtype. */
mtk_module *dit_time_text_embedding(mtk_ctx *ctx, int64_t dim, int64_t pooled, bool guidance);

/* The adaptive norms: silu, linear (dim -> chunks * dim), norm (LayerNorm
 * without affine, eps 1e-6).  Forward (x (B, S, dim), emb (B, dim)):
 *   AdaLayerNormZero (6 chunks): norm(x) * (1 + scale) + shift, then the
 *     gates and MLP rows: x, gate_msa, shift_mlp, scale_mlp, gate_mlp;
 *   SD35AdaLayerNormZeroX (9): the same, plus norm(x) modulated by the
 *     second attention's rows and its gate (7 outputs);
 *   AdaLayerNormZeroSingle (3): x, gate_msa. */
typedef enum dit_ada_kind { DIT_ADA_ZERO, DIT_ADA_ZERO_X, DIT_ADA_ZERO_SINGLE } dit_ada_kind;
mtk_module *dit_ada_norm_zero(mtk_ctx *ctx, int64_t dim, dit_ada_kind kind);

/* AdaLayerNormContinuous(dim, cond, elementwise_affine=False, eps 1e-6):
 * silu, linear (cond -> 2 dim), norm.  (x (B, S, dim), cond (B, cond)) ->
 * norm(x) * (1 + scale) + shift. */
mtk_module *dit_ada_norm_continuous(mtk_ctx *ctx, int64_t dim, int64_t cond);

/* FeedForward(dim, dim_out=dim, activation_fn="gelu-approximate"): net =
 * [GELU(proj: dim -> 4 dim, tanh), Dropout(0), Linear(4 dim -> dim)].
 * (B, S, dim) -> (B, S, dim). */
mtk_module *dit_feed_forward(mtk_ctx *ctx, int64_t dim);

/* `x * (1 + scale[:, None]) + shift[:, None]` on (B, S, dim) with (B, dim)
 * rows; shift may be NULL (no shift). */
mtk_tensor *dit_modulate(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *scale, mtk_tensor *shift);
/* `gate.unsqueeze(1) * x`. */
mtk_tensor *dit_gate(mtk_ctx *ctx, mtk_tensor *gate, mtk_tensor *x);

/* Checks a forward's input count and each input's rank: false with the
 * error naming the class, the inputs diffusers takes (`names`, in order)
 * and what came.  `ranks[i]` 0: any rank. */
bool dit_check_inputs(mtk_module *m, const mtk_module_io *io, int32_t n, const char *const *names,
                      const int32_t *ranks);

/* The config's fields must be arguments of the class (`known`, NULL-
 * terminated) or diffusers' bookkeeping (a name starting with '_'): any
 * other is an error naming it and the class, since mtk would otherwise
 * build a model without an option the config asks for. */
bool dit_check_fields(model_config *c, const char *cls, const char *const *known);

#endif
