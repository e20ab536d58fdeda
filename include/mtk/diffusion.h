/*
 * mtk diffusion: diffusers pipelines on the meta device.
 *
 * A PIPELINE is a built-in name ("sd-1.5", "sdxl-base":
 * mtk_builtin_pipeline_at lists them, each the published model_index.json
 * and component config.json files), or a directory holding
 * model_index.json and one
 * subfolder per component with its config.json.  Each model component
 * (text encoders, the denoiser, the VAE) is built on meta with its
 * library's exact state-dict names and counts, and is called as the
 * pipeline calls it at one image size: its inputs (latents at the VAE's
 * factor, timestep, prompt embeddings, classifier-free guidance doubling
 * the denoiser's batch) are traced on meta for output shapes and FLOPs.
 *
 * Errors are values: NULL and the context's error (an unknown pipeline,
 * a component folder or config that is missing, naming it; an image size
 * the components cannot take).
 */
#ifndef MTK_DIFFUSION_H
#define MTK_DIFFUSION_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtk_module mtk_module;
typedef struct mtk_memory_plan mtk_memory_plan;

#define MTK_PIPELINE_MAX_COMPONENTS 8
#define MTK_PIPELINE_MAX_CALLS 4
#define MTK_PIPELINE_MAX_IO 8
#define MTK_PIPELINE_MAX_NOTES 8

/* How the pipeline is called. */
typedef struct mtk_pipeline_options {
    int64_t height, width; /* pixels (0: the denoiser's sample_size x the VAE factor) */
    int64_t batch;         /* images per call (0: 1)                  */
    int64_t steps;         /* denoising steps (0: 50)                 */
    bool guidance;         /* classifier-free guidance                */
    mtk_dtype dtype;       /* every component's dtype (UNDEFINED: each
                              config's torch_dtype, float32 when absent) */
} mtk_pipeline_options;

/* One traced call of a component. */
typedef struct mtk_pipeline_call {
    const char *method;                          /* "forward", "decode", ...  */
    int64_t per_image;                           /* calls per image           */
    int32_t nin, nout;
    const char *input_names[MTK_PIPELINE_MAX_IO];
    mtk_tensor *inputs[MTK_PIPELINE_MAX_IO];     /* meta                      */
    mtk_tensor *outputs[MTK_PIPELINE_MAX_IO];    /* meta                      */
    int64_t flops;                               /* one call (FlopCounterMode) */
} mtk_pipeline_call;

/* One model component. */
typedef struct mtk_pipeline_component {
    const char *name;          /* model_index.json's key: "unet"          */
    const char *class_name;    /* "UNet2DConditionModel"                  */
    const char *role;          /* "text_encoder", "denoiser", "vae"       */
    mtk_module *module;        /* built on meta                           */
    mtk_dtype dtype;
    int64_t params;
    int64_t param_bytes;
    mtk_pipeline_call calls[MTK_PIPELINE_MAX_CALLS];
    int32_t ncalls;
    int64_t flops_per_image;   /* sum of calls' flops x per_image         */
    int64_t buffer_bytes;      /* its buffers (weights = params + buffers) */
    int64_t cache_bytes;       /* the KV cache its forward builds as the
                                  pipeline calls it (a decoder text encoder
                                  with use_cache: transformers 5's
                                  DynamicCache from its config, sliding
                                  layers included); 0: none              */
} mtk_pipeline_component;

typedef struct mtk_pipeline {
    const char *name;          /* the argument                            */
    const char *source;        /* "built-in" or "model_index.json"        */
    const char *hf_id;         /* a built-in's Hub id, else NULL          */
    const char *class_name;    /* "StableDiffusionPipeline"               */
    mtk_pipeline_options options; /* as used (defaults filled)            */
    int64_t scale_factor;      /* the VAE's                               */
    mtk_pipeline_component components[MTK_PIPELINE_MAX_COMPONENTS];
    int32_t ncomponents;       /* in the order the pipeline runs them     */
    const char *notes[MTK_PIPELINE_MAX_NOTES]; /* components not modelled */
    int32_t nnotes;
    int64_t params;            /* all components                          */
    int64_t flops_per_image;
} mtk_pipeline;

/* Builds PIPELINE's components on meta and traces their calls at the
 * options' image size.  PIPELINE may also be one component's config.json
 * (or a directory holding one but no model_index.json): a pipeline of
 * that component alone.  Lives in the context's arena.  `options` may be
 * NULL (defaults).  Errors: MTK_ERR_INVALID_ARGUMENT for an unknown name
 * (listing the built-in pipelines), MTK_ERR_IO for a missing
 * model_index.json, component folder or config.json (naming it), then as
 * the component builds and forwards. */
MTK_API mtk_pipeline *mtk_pipeline_resolve(mtk_ctx *ctx, const char *pipeline, const mtk_pipeline_options *options);

/* Whether `name` is a built-in pipeline or a directory holding a
 * model_index.json (no error either way). */
MTK_API bool mtk_pipeline_exists(const char *name);

/* A built-in pipeline: the published model_index.json and, per component,
 * its config.json text. */
typedef struct mtk_builtin_pipeline_component {
    const char *name;          /* "unet"                                  */
    const char *config_json;
} mtk_builtin_pipeline_component;

typedef struct mtk_builtin_pipeline {
    const char *name;          /* "sd-1.5"                                */
    const char *hf_id;         /* "runwayml/stable-diffusion-v1-5"        */
    const char *model_index_json;
    mtk_builtin_pipeline_component components[MTK_PIPELINE_MAX_COMPONENTS];
} mtk_builtin_pipeline;

/* ------------------------------------------------ memory and offload */

typedef enum mtk_offload_mode {
    MTK_OFFLOAD_NONE = 0,       /* pipe.to("cuda"): every component resident */
    MTK_OFFLOAD_MODEL,          /* enable_model_cpu_offload()                */
    MTK_OFFLOAD_SEQUENTIAL,     /* enable_sequential_cpu_offload()           */
} mtk_offload_mode;

#define MTK_OFFLOAD_MODES 3
#define MTK_PIPELINE_MAX_STAGES (MTK_PIPELINE_MAX_COMPONENTS * MTK_PIPELINE_MAX_CALLS)

MTK_API const char *mtk_offload_mode_name(mtk_offload_mode mode);

/* One stage: one call of one component, as the pipeline runs it. */
typedef struct mtk_pipeline_stage {
    const char *stage;          /* "encode_prompt", "denoise_step", "vae_decode" */
    const char *component;      /* model_index.json's key                  */
    const char *method;
    int64_t calls_per_image;
    int64_t activation_peak_bytes; /* the call's inference plan: peak minus
                                   the component's parameters and buffers  */
    int64_t cache_bytes;        /* the component's KV cache (0: none)      */
    const mtk_memory_plan *plan;/* the call's inference plan               */
    int64_t sequential_moved_per_call; /* sequential offload: the own
                                   parameters of every module the call runs,
                                   once per time it runs                   */
    /* under each offload mode: */
    int64_t weights_bytes[MTK_OFFLOAD_MODES];  /* on the GPU at the peak   */
    int64_t peak_bytes[MTK_OFFLOAD_MODES];     /* weights + activations + cache */
    const char *resident[MTK_OFFLOAD_MODES];   /* what is on the GPU       */
} mtk_pipeline_stage;

/* One offload mode over one image. */
typedef struct mtk_pipeline_offload {
    mtk_offload_mode mode;
    int64_t gpu_peak_bytes;     /* the smallest GPU it runs on            */
    const char *peak_stage;     /* the stage of that peak                 */
    int64_t bytes_moved_per_image; /* host -> GPU weight copies           */
    int64_t bytes_to_host_per_image; /* GPU -> host copies (model offload's
                                   module.to("cpu"); sequential drops its
                                   copies without copying back)            */
    int64_t host_bytes;         /* weights kept in host memory            */
    bool fits;                  /* within the budgets (true: none given)  */
} mtk_pipeline_offload;

typedef struct mtk_pipeline_memory {
    const mtk_pipeline *pipeline;
    mtk_offload_mode mode;      /* the mode asked for                     */
    int64_t gpu_budget, cpu_budget; /* bytes, 0: not given                */
    mtk_pipeline_stage stages[MTK_PIPELINE_MAX_STAGES];
    int32_t nstages;            /* in the order the pipeline runs them    */
    int64_t weights_bytes;      /* all components' parameters and buffers */
    mtk_pipeline_offload offload[MTK_OFFLOAD_MODES]; /* by mode           */
    const char *notes[MTK_PIPELINE_MAX_NOTES];
    int32_t nnotes;
} mtk_pipeline_memory;

/* Plans memory for one image of a resolved pipeline: each call with calls
 * per image is replayed as an inference plan (mtk_memory_plan_graph of
 * its trace on `device_kind`, an mtk_device_kind), a stage's peak under
 * each offload mode is the weights that mode keeps on the GPU during it
 * plus the call's activation peak plus the component's cache, and each
 * mode's GPU peak is the largest over the stages.  Budgets of 0 are not
 * checked.  NULL with the context's error (a trace that fails, out of
 * memory).  In the arena. */
MTK_API mtk_pipeline_memory *mtk_pipeline_memory_plan(mtk_ctx *ctx, const mtk_pipeline *p, mtk_offload_mode mode,
                                                      int32_t device_kind, int64_t gpu_budget, int64_t cpu_budget);

MTK_API int32_t mtk_builtin_pipeline_count(void);
MTK_API const mtk_builtin_pipeline *mtk_builtin_pipeline_at(int32_t i);
/* By name; NULL (no error) when there is none. */
MTK_API const mtk_builtin_pipeline *mtk_builtin_pipeline_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* MTK_DIFFUSION_H */
