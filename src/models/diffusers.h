/* Internal interface of the diffusers components (src/models/diffusers_*.c)
 * and of the pipelines that call them (src/models/pipeline*.c).
 *
 * A diffusers component (UNet2DConditionModel, AutoencoderKL, a DiT) is a
 * row of the one family table (families.c), keyed by its config's
 * _class_name, with its builder in its own file.  What makes it a
 * diffusers component is the third field of its row, a
 * `const diffusers_component *`: how a pipeline calls it.
 *
 * HOW A COMPONENT DECLARES ITS EXAMPLE INPUTS FROM AN IMAGE SIZE
 *
 *   The pipeline (or `mtk summary COMPONENT --image HxW`) fills one
 *   diffusers_image: the image in pixels, the prompts' batch, whether
 *   classifier-free guidance doubles the denoiser's batch, the steps, the
 *   VAE's scale factor and the prompt's token length.  It parses the
 *   component's config, and asks the row's `calls` function for the calls
 *   the pipeline makes at that image: each a method ("forward", or
 *   "encode" / "decode" of a VAE), how many times per image, and its
 *   named inputs (shapes and dtypes, the batch already doubled where CFG
 *   doubles it).  A component writes its `calls` next to its builder:
 *
 *     static int32_t my_calls(model_config *c, const diffusers_image *img,
 *                             diffusers_call *out, int32_t cap)
 *     {
 *         int64_t f = diffusers_scale_factor(img);       // 8 by default
 *         int64_t b = diffusers_denoiser_batch(img);     // 2B with CFG
 *         if (!diffusers_check_image(c, img, f * patch)) return -1;
 *         int32_t n = 0;
 *         diffusers_call *call = diffusers_call_add(c, out, cap, &n, "forward",
 *                                                   img->steps);
 *         diffusers_input_add(c, call, "hidden_states", MTK_DTYPE_UNDEFINED,
 *                             4, (int64_t[]){ b, channels, img->height / f,
 *                                             img->width / f });
 *         ...                                            // timestep, prompt
 *         return models_cfg_ok(c) ? n : -1;
 *     }
 *     const diffusers_component my_component = { DIFFUSERS_DENOISER, my_calls, NULL };
 *
 *   and lists `&my_component` as the third field of its family row:
 *
 *     { { "SD3Transformer2DModel", ARCHS("SD3Transformer2DModel"),
 *         "SD3Transformer2DModel", MTK_MODEL_INPUT_LATENTS },
 *       models_family_sd3_build, &diffusers_sd3_component },
 *
 *   (diffusers_unet.c's unet_calls is a complete example.  A pipeline
 *   class whose encoders use other token lengths, T5's 256 or 512, adds
 *   a row to the kinds in pipelines.c; a built-in pipeline adds a row to
 *   the built-ins there, its configs' text in pipeline_configs_*.c.)
 *
 *   The inputs are given to the component's root module in the order
 *   listed (io->in[0..n-1]); MTK_DTYPE_UNDEFINED means the component's
 *   dtype (latents, embeddings), an integer dtype is kept (token ids).  A
 *   method other than "forward" is selected on the root module with
 *   diffusers_select_method before the call: such a root's module config
 *   starts with a diffusers_root.
 *
 *   Text encoders are transformers models (CLIPTextModel, T5EncoderModel,
 *   Gemma 2) and need no row of their own: a family whose input kind is
 *   token ids is called as diffusers_text_encoder_calls says (input_ids
 *   (B, tokens), once per prompt, twice with CFG for the negative prompt).
 */
#ifndef MTK_MODELS_DIFFUSERS_H
#define MTK_MODELS_DIFFUSERS_H

#include "models/config.h"

#define DIFFUSERS_MAX_INPUTS MTK_MODULE_MAX_IO
#define DIFFUSERS_MAX_CALLS 4

/* What a pipeline call asks for: one image size, and what the pipeline's
 * other components fix for this one. */
typedef struct diffusers_image {
    int64_t height, width;     /* pixels                                       */
    int64_t batch;             /* prompts x images per prompt (>= 1)           */
    int64_t steps;             /* denoising steps (num_inference_steps)        */
    bool guidance;             /* classifier-free guidance: the denoiser sees
                                  2 x batch (negative and positive prompt),
                                  each text encoder runs twice                 */
    int64_t scale_factor;      /* the VAE's spatial factor, 2^(len(vae's
                                  block_out_channels) - 1); 0: 8, diffusers'
                                  default when a pipeline has no VAE           */
    int64_t tokens;            /* the prompt's token length as this component
                                  sees it: a text encoder's input_ids, a
                                  denoiser's encoder_hidden_states dim 1
                                  (SD: 77; SD3: 77 + 256); 0: the component's
                                  default (max_position_embeddings; 77)        */
} diffusers_image;

/* One named input of a call. */
typedef struct diffusers_input {
    const char *name;            /* diffusers' argument: "sample", "timestep" */
    mtk_dtype dtype;             /* MTK_DTYPE_UNDEFINED: the component's dtype */
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
} diffusers_input;

/* One way the pipeline calls a component. */
typedef struct diffusers_call {
    const char *method;          /* "forward", "encode", "decode"            */
    int64_t per_image;           /* calls per image (steps for a denoiser)    */
    diffusers_input in[DIFFUSERS_MAX_INPUTS];
    int32_t nin;
} diffusers_call;

/* What a component is to a pipeline (the order it runs in). */
typedef enum diffusers_role {
    DIFFUSERS_TEXT_ENCODER = 0,
    DIFFUSERS_DENOISER,
    DIFFUSERS_VAE
} diffusers_role;

/* Fills out[0..cap) with the calls a pipeline makes at `image` and returns
 * how many; -1 with the config's error set (a bad field, an image size the
 * component cannot take, naming both). */
typedef int32_t (*diffusers_calls_fn)(model_config *c, const diffusers_image *image, diffusers_call *out,
                                      int32_t cap);

typedef struct diffusers_component {
    diffusers_role role;
    diffusers_calls_fn calls;
    const char *const *methods; /* NULL-terminated methods besides forward
                                   (NULL: none); the root module's config
                                   then starts with a diffusers_root     */
} diffusers_component;

/* The head of a root module's config when the component has methods
 * other than forward (AutoencoderKL: encode, decode): its forward runs
 * `method` (NULL or "forward": diffusers' forward). */
typedef struct diffusers_root {
    const char *method;
} diffusers_root;

/* ------------------------------------------------------------- helpers */

/* The image's VAE factor (8 when unset). */
int64_t diffusers_scale_factor(const diffusers_image *image);
/* The denoiser's batch: 2 x batch with guidance. */
int64_t diffusers_denoiser_batch(const diffusers_image *image);
/* The image's token length, `dflt` when unset. */
int64_t diffusers_tokens(const diffusers_image *image, int64_t dflt);
/* Checks that the image divides into latents: height and width positive
 * multiples of `multiple` pixels (the VAE factor times whatever the
 * component needs on top: the UNet's 2^(blocks - 1) downsamplings, a
 * DiT's patch).  False with the error naming the component, the size and
 * the multiple. */
bool diffusers_check_image(model_config *c, const diffusers_image *image, int64_t multiple);

/* out[*n] = a call of `method`, `per_image` times; NULL with the error set
 * when cap is reached.  `n` is advanced. */
diffusers_call *diffusers_call_add(model_config *c, diffusers_call *out, int32_t cap, int32_t *n, const char *method,
                                   int64_t per_image);
/* Appends an input; false with the error set past DIFFUSERS_MAX_INPUTS.
 * Accepts a NULL call (false). */
bool diffusers_input_add(model_config *c, diffusers_call *call, const char *name, mtk_dtype dtype, int32_t ndim,
                         const int64_t *shape);

/* The calls of a text encoder (a token-ids family: CLIPTextModel, T5,
 * Gemma 2): input_ids (batch, tokens) int64, tokens the image's or the
 * config's max_position_embeddings (`n_positions`), once per image, twice
 * with guidance. */
int32_t diffusers_text_encoder_calls(model_config *c, const diffusers_image *image, diffusers_call *out, int32_t cap);

/* How the pipeline calls a family's class: its row's component, the text
 * encoder's for a token-ids family, NULL for any other. */
const diffusers_component *diffusers_component_of(const model_family *f);

/* Meta tensors for the call's inputs (the component's dtype where the
 * input says UNDEFINED) into in[0..call->nin).  False with the error. */
bool diffusers_call_tensors(mtk_ctx *ctx, const diffusers_call *call, mtk_dtype dtype, mtk_tensor **in);
/* Selects the method the root's forward runs (see diffusers_root): the
 * root's type name is its family's key, whose component lists the
 * methods; "forward" on any root is accepted.  False with
 * MTK_ERR_INVALID_ARGUMENT when the root has no such method. */
bool diffusers_select_method(mtk_module *root, const char *method);

/* ----------------------------------------------------------- components */

extern const diffusers_component diffusers_unet2d_condition_component;
extern const diffusers_component diffusers_autoencoder_kl_component;
extern const diffusers_component diffusers_sd3_component;
extern const diffusers_component diffusers_flux_component;
extern const diffusers_component diffusers_lumina2_component;

/* An AutoencoderKL config's spatial factor, 2^(len(block_out_channels) -
 * 1); 0 with the config's error. */
int64_t diffusers_vae_scale_factor(model_config *c);

#endif
