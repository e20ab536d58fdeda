/* The conv op family: convolutions (conv.c, conv_plan.c, conv_cpu.c,
 * conv_transpose_half.c, conv_direct.c),
 * pooling (pool*.c) and interpolation (interp.c, interp_cpu.c), with the
 * meta/cpu/cost functions named by list_conv.h.
 *
 * Plans take `for_cpu`: the call runs on cpu.  torch's meta kernels check
 * less than its cpu kernels (a convolution's bias size, an empty pooling
 * plane): mtk follows torch on each device, so a meta call accepts what
 * torch's meta device accepts and a cpu call refuses what torch's cpu
 * refuses, the cpu kernels' dtype coverage included.
 *
 * Each op is described by one *plan* that the meta function, the cpu
 * kernel and the cost function all start from (as linalg's): the
 * validated arguments, the batched input geometry and the output shape.
 * Spatial geometry is kept as three dims (depth, height, width); 1-D and
 * 2-D ops have leading size-1 dims with stride 1, kernel 1, padding 0. */
#ifndef MTK_OPS_CONV_H
#define MTK_OPS_CONV_H

#include "mtk/op.h"
#include "ops/op_util.h"

/* ------------------------------------------------------------- conv */

/* Argument positions of the convolution signatures (list_conv.h). */
enum {
    MTK_CONV_ARG_INPUT, MTK_CONV_ARG_WEIGHT, MTK_CONV_ARG_BIAS, MTK_CONV_ARG_STRIDE, MTK_CONV_ARG_PADDING,
    MTK_CONV_ARG_DILATION = 5, MTK_CONV_ARG_GROUPS = 6,                               /* conv{1,2,3}d */
    MTK_CONV_ARG_OUTPUT_PADDING = 5, MTK_CONV_ARG_T_GROUPS = 6, MTK_CONV_ARG_T_DILATION = 7 /* transposed  */
};

/* The info object of each convolution row. */
typedef struct mtk_conv_info {
    int32_t spatial;  /* 1, 2 or 3 */
    bool transposed;
} mtk_conv_info;

extern const mtk_conv_info mtk_conv1d_info, mtk_conv2d_info, mtk_conv3d_info;
extern const mtk_conv_info mtk_conv_transpose1d_info, mtk_conv_transpose2d_info,
    mtk_conv_transpose3d_info;

/* A validated convolution.  Shapes are batched (N, C, D, H, W) with the
 * missing spatial dims as 1; `out_shape` is the op's output (unbatched
 * when the input was). */
typedef struct mtk_conv_plan {
    int32_t spatial;
    bool transposed;
    bool batched;           /* the input had a batch dim            */
    bool empty;             /* zero batch or channels: no compute   */
    int64_t batch, in_channels, out_channels, groups;
    int64_t in_size[3];     /* (D, H, W) of the input                */
    int64_t kernel[3];      /* (kD, kH, kW)                          */
    int64_t out_size[3];    /* (D, H, W) of the output               */
    int64_t stride[3], pad[3], dilation[3]; /* pad: leading side      */
    int64_t out_pad[3];     /* output_padding (transposed), else 0    */
    bool padded_copy;       /* padding='same' padded the input's right
                               side: the kernel reads a padded copy   */
    int64_t out_ndim;
    int64_t out_shape[MTK_MAX_DIMS];
    int64_t flops;          /* as FlopCounterMode's conv_flop_count   */
} mtk_conv_plan;

/* Builds the plan of a convolution call, validating as torch does on the
 * call's device (torch's meta kernel, or its cpu path when `for_cpu`).
 * Errors go to `ctx` (NULL: silent).  A meta plan describes only the
 * output (`empty` is set: it never runs). */
bool mtk_conv_make_plan(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, mtk_conv_plan *plan);

/* The direct float32 kernel (conv_direct.c): true when it runs this plan
 * on this cpu (float32 in and out, not transposed, an AVX-512 or AVX2
 * cpu, and most computed columns real outputs). */
bool mtk_conv_direct_applies(const mtk_conv_plan *p, mtk_dtype in_dtype, mtk_dtype out_dtype);

/* The direct kernel's tile for cpu_isa_active(), as text for reports
 * ("avx2+fma 4x24" = AVX2 and FMA, 4 channels x 24 positions), or "none"
 * when it has none (float32 convolutions run im2col + sgemm then).  A
 * static string. */
const char *mtk_conv_direct_kernel_name(void);

/* Runs a plan mtk_conv_direct_applies accepted: input float32 of any
 * strides (in_stride: its (N, C, D, H, W) element strides, 0 for missing
 * dims), weight contiguous (O, I/groups, kD, kH, kW) float32, bias per
 * output channel (already rounded to float32) or NULL, out contiguous
 * (N, O, D, H, W), on `threads` workers.  False when out of memory (no
 * error set; nothing else changed but out). */
bool mtk_conv_direct_run(mtk_ctx *ctx, const mtk_conv_plan *p, const mtk_tensor *input, const int64_t *in_stride,
                         const float *weight, const double *bias, float *out, int32_t threads);

/* Whether torch's cpu kernel runs this non-empty convolution channels-
 * last, decided from the input's and weight's strides as _convolution,
 * the backend and (with groups, per group) the slow kernels decide
 * (conv.c; the layout of the cpu output follows from it). */
bool mtk_conv_cpu_kernel_channels_last(const mtk_op_call *call, const mtk_conv_plan *p);

/* Float16 / bfloat16 transposed convolutions (conv_transpose_half.c),
 * rounded where torch's slow kernels round.
 *
 * mtk_conv_transposed_half_block: the (og, out_vol) output block of one
 * (batch, group) pair into `out`, before the bias: x (cg, in_vol) and w
 * (cg, og * kvol) hold the half dtype's values as float, `scratch` has
 * mtk_conv_transposed_half_scratch(p) floats.  Every value written is
 * one of `half`'s. */
size_t mtk_conv_transposed_half_scratch(const mtk_conv_plan *p);
void mtk_conv_transposed_half_block(const mtk_conv_plan *p, mtk_dtype half, bool channels_last, const float *x,
                                    const float *w, float *scratch, float *out);

bool mtk_conv_meta(mtk_op_call *call);
bool mtk_conv_cpu(mtk_op_call *call);
mtk_op_cost mtk_conv_cost(const mtk_op_call *call);

/* ----------------------------------------------------------- pooling */

typedef enum mtk_pool_kind {
    MTK_POOL_MAX,
    MTK_POOL_AVG,
    MTK_POOL_ADAPTIVE_MAX,
    MTK_POOL_ADAPTIVE_AVG
} mtk_pool_kind;

typedef struct mtk_pool_info {
    mtk_pool_kind kind;
    int32_t spatial;
} mtk_pool_info;

extern const mtk_pool_info mtk_max_pool1d_info, mtk_max_pool2d_info, mtk_max_pool3d_info;
extern const mtk_pool_info mtk_avg_pool1d_info, mtk_avg_pool2d_info, mtk_avg_pool3d_info;
extern const mtk_pool_info mtk_adaptive_max_pool1d_info, mtk_adaptive_max_pool2d_info,
    mtk_adaptive_max_pool3d_info;
extern const mtk_pool_info mtk_adaptive_avg_pool1d_info, mtk_adaptive_avg_pool2d_info,
    mtk_adaptive_avg_pool3d_info;

typedef struct mtk_pool_plan {
    mtk_pool_kind kind;
    int32_t spatial;
    bool with_indices;      /* return_indices                         */
    int64_t batch, channels; /* batch 1 for an unbatched input         */
    int64_t in_size[3], out_size[3];
    int64_t kernel[3], stride[3], pad[3], dilation[3];
    bool count_include_pad;
    int64_t divisor;        /* avg: divisor_override, 0 for none       */
    int32_t out_ndim;
    int64_t out_shape[MTK_MAX_DIMS];
    int64_t out_stride[MTK_MAX_DIMS];
} mtk_pool_plan;

/* Builds the plan of a pooling call (torch's checks for the call's
 * device, see above).  Errors go to `ctx` (NULL: silent). */
bool mtk_pool_make_plan(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, mtk_pool_plan *plan);

bool mtk_pool_meta(mtk_op_call *call);
bool mtk_pool_cpu(mtk_op_call *call);
mtk_op_cost mtk_pool_cost(const mtk_op_call *call);

/* ----------------------------------------------------- interpolation */

typedef enum mtk_interp_mode {
    MTK_INTERP_NEAREST,
    MTK_INTERP_NEAREST_EXACT,
    MTK_INTERP_LINEAR,   /* linear, bilinear, trilinear */
    MTK_INTERP_BICUBIC,
    MTK_INTERP_AREA      /* adaptive average pooling    */
} mtk_interp_mode;

typedef struct mtk_interp_plan {
    mtk_interp_mode mode;
    int32_t spatial;
    bool align_corners;
    bool antialias;
    int64_t batch, channels;
    int64_t in_size[3], out_size[3];
    double scale[3];        /* user scale factor per dim, 0: none     */
    bool nearest_fast_path; /* torch's channels-last nearest kernel   */
    bool first_row_only;    /* torch's contiguous antialias kernel, for
                               one output column, repeats output row 0 */
    int32_t out_ndim;
    int64_t out_shape[MTK_MAX_DIMS];
    int64_t out_stride[MTK_MAX_DIMS];
} mtk_interp_plan;

/* Builds the plan of an interpolate call (F.interpolate's rules, then the
 * upsample op's checks for the call's device).  Errors go to `ctx`. */
bool mtk_interp_make_plan(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, mtk_interp_plan *plan);

bool mtk_interp_meta(mtk_op_call *call);
bool mtk_interp_cpu(mtk_op_call *call);
mtk_op_cost mtk_interp_cost(const mtk_op_call *call);

/* 'area' interpolation on cpu: the adaptive_avg_pool kernel. */
bool mtk_interp_area_cpu(mtk_op_call *call);

/* ------------------------------------------------------------ shared */

/* Sets "<op>: <message>" on ctx and returns false; with a NULL ctx
 * (cost functions, which run after a successful meta) only returns
 * false. */
bool mtk_conv_error(mtk_ctx *ctx, const mtk_op_call *call, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* An int-list argument as torch's Python binding passes it on: an int
 * becomes `python_len` copies (the schema's int[N]), a list or tuple of
 * ints stays as it is (at most MTK_MAX_DIMS).  Sets *count. */
bool mtk_conv_read_ints(mtk_ctx *ctx, const mtk_op_call *call, int arg, const char *name, int32_t python_len,
                        int64_t *out, int32_t *count);

/* A tensor seen as planes of up to three spatial dims (D, H, W), for
 * the cpu kernels: the leading dims flatten into the plane index, the
 * last `spatial` dims map to the last of (D, H, W).  Byte strides. */
typedef struct mtk_planes {
    char *base;
    mtk_dtype dtype;
    int32_t plane_ndim;
    int64_t plane_shape[MTK_MAX_DIMS];
    int64_t plane_stride[MTK_MAX_DIMS];
    int64_t stride[3];
} mtk_planes;

mtk_planes mtk_planes_of(const mtk_tensor *t, int32_t spatial);
char *mtk_plane_at(const mtk_planes *p, int64_t index);

/* The context's thread count while a kernel runs (mtk_ctx_set_num_threads). */
int32_t conv_num_threads(void);

/* mtk_conv_workers: how many workers a parallel-for of `ntasks` tasks
 * uses (at most conv_num_threads()), so callers can size per-worker
 * scratch first.  mtk_conv_parallel_for runs task(i, worker, user) for
 * every i in [0, ntasks) on that many threads (worker in [0, workers));
 * it returns when all are done. */
typedef void (*mtk_conv_task)(int64_t i, int32_t worker, void *user);
int32_t mtk_conv_workers(int64_t ntasks);
void mtk_conv_parallel_for(int64_t ntasks, int32_t workers, mtk_conv_task task, void *user);

#endif
