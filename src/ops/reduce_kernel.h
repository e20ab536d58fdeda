/* Inside the reduce family: call descriptions, the reduction engine and
 * its accumulators, the scan and sort kernels, and the thread helper.
 * Not used outside src/ops/reduce*.c. */
#ifndef MTK_OPS_REDUCE_KERNEL_H
#define MTK_OPS_REDUCE_KERNEL_H

#include "ops/reduce.h"
#include "ops/op_util.h"

/* ------------------------------------------------------- descriptions */

/* What one call of a reduce op computes, as torch's meta device sees it
 * (reduce_desc.c).  Built by the meta function and again by the cpu
 * kernel, from the same arguments. */
typedef struct red_desc {
    mtk_reduce_kind kind;      /* after overloads: MAX with a dim stays MAX,
                                  max(x) becomes AMAX, norm becomes
                                  VECTOR_NORM (or stays NORM for 'nuc')    */
    const mtk_tensor *input;
    bool reduce[MTK_MAX_DIMS]; /* per input dim: reduced                   */
    bool keepdim;
    mtk_dtype cast;            /* dtype input elements are converted to
                                  before reducing (the dtype= argument)     */
    int32_t nout;              /* 1, or 2 for (values, indices) and
                                  (var, mean) pairs                         */
    mtk_dtype out_dtype[2];
    int32_t out_ndim;
    int64_t out_shape[MTK_MAX_DIMS];
    int64_t out_stride[2][MTK_MAX_DIMS]; /* per output */
    double ord;                /* vector norm order                        */
    double correction;         /* var/std: divisor is max(N - correction, 0) */
    int32_t dim;               /* scans, median/mode with a dim: the dim   */
    bool has_dim;              /* median/max/min: a dim was given          */
    mtk_tensor *binary_other;  /* max(x, other) / min(x, other)            */
    /* torch's meta device accepts the call but its cpu kernel refuses it:
     * the cpu kernel raises this (empty when none) */
    mtk_status cpu_status;
    char cpu_refusal[200];
} red_desc;

/* Describes `call`, validating its arguments as torch does on meta.
 * False with the error set (prefixed by the op name) on a bad call. */
bool red_describe(mtk_op_call *call, red_desc *d);

/* Helpers of the description step (reduce_desc.c), shared with
 * reduce_norm.c.  red_fail sets an error naming the op and returns false;
 * red_refuse_on_cpu notes that torch's cpu kernel refuses what its meta
 * device accepted (the first note wins); red_refuse_dtype_on_cpu notes
 * "\"kernel\" not implemented for 'Float8_e5m2'", which torch only reaches
 * when the input has elements. */
bool red_fail(mtk_op_call *call, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void red_refuse_on_cpu(red_desc *d, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void red_refuse_dtype_on_cpu(red_desc *d, const char *kernel, mtk_dtype dtype);

/* Wraps a dim of an ndim-D tensor (0-dim: -1 and 0), naming the op in the
 * error ("Dimension out of range (expected to be in range of ...)"). */
bool red_wrap_dim(mtk_op_call *call, int64_t dim, int32_t ndim, int32_t *out);

/* What an empty dim list means to an op. */
typedef enum red_empty_dims {
    RED_EMPTY_ALL,          /* sum(x, []): every dim                         */
    RED_EMPTY_NONE,         /* all(x, []): no dim, the result is x's shape   */
    RED_EMPTY_NONE_ON_META  /* nansum(x, []): none on meta, every dim on cpu */
} red_empty_dims;

/* Reads a dim argument (None: every dim; an int; a list/tuple of ints,
 * wrapped, repeats refused with torch's words) into d->reduce; *ndims
 * gets the number of dims given (-1 for None). */
bool red_read_dims(mtk_op_call *call, red_desc *d, const mtk_value *v, red_empty_dims empty, const char *arg,
                   int32_t *ndims);

/* Output shape and strides from d->reduce and d->keepdim (see there). */
void red_shape_outputs(const mtk_op_call *call, red_desc *d);

/* An optional dtype argument: MTK_DTYPE_UNDEFINED when None. */
mtk_dtype red_opt_dtype(const mtk_op_call *call, int i);

/* torch.norm and linalg.vector_norm (reduce_norm.c). */
bool red_describe_norm(mtk_op_call *call, red_desc *d);
bool red_describe_vector_norm(mtk_op_call *call, red_desc *d);

/* --------------------------------------------------------- the engine */

/* Accumulator state of one output element.  Each kind of reduction uses
 * the fields it needs (see reduce_accum.c). */
typedef struct red_acc {
    double a, b, c; /* sum / extreme / mean, M2, ...   */
    int64_t i;      /* integer sum / product / count   */
    int64_t idx;    /* index of the extreme (argmax)   */
    int64_t n;      /* elements seen                   */
} red_acc;

/* Parameters the accumulators read. */
typedef struct red_params {
    double ord;        /* vector norm order          */
    double correction; /* var/std                    */
    mtk_dtype cast;    /* the dtype reduced in (prod rounds each
                          product to it, as torch multiplies in it) */
} red_params;

/* Input elements reach the accumulators as double (floating inputs) or
 * int64 (integral and bool inputs, exact). */
typedef void (*red_row_f64)(red_acc *acc, const double *x, int64_t n, int64_t idx0, int64_t idx_step,
                            const red_params *p);
typedef void (*red_row_i64)(red_acc *acc, const int64_t *x, int64_t n, int64_t idx0, int64_t idx_step,
                            const red_params *p);
/* Lanes: acc[j] takes x[j] (all at logical index idx), j < n. */
typedef void (*red_lanes_f64)(red_acc *acc, const double *x, int64_t n, int64_t idx, const red_params *p);
typedef void (*red_lanes_i64)(red_acc *acc, const int64_t *x, int64_t n, int64_t idx, const red_params *p);

/* One kind of reduction: how an accumulator starts, takes elements,
 * merges with the accumulator of another part of the reduced elements,
 * and writes its output element(s). */
typedef struct red_op {
    void (*init)(red_acc *acc, bool floating);
    red_row_f64 row_f64;
    red_row_i64 row_i64;
    red_lanes_f64 lanes_f64;
    red_lanes_i64 lanes_i64;
    void (*merge)(red_acc *acc, const red_acc *other, bool floating, const red_params *p);
    /* out[k] points at output k's element (dtype dtypes[k]); `count` is
     * the number of elements reduced */
    void (*finish)(const red_acc *acc, bool floating, int64_t count, const red_params *p,
                   char *const *out, const mtk_dtype *dtypes);
    bool needs_index; /* reads logical indices (argmax and friends) */
} red_op;

/* The accumulator of a description's kind (reduce_accum.c). */
const red_op *red_op_for(const red_desc *d, red_params *params);

/* Runs the reduction of `d` into `out` (d->nout cpu tensors of d's
 * shapes).  Indices are positions along the reduced dims taken in
 * row-major order, as torch's argmax/max(dim) report them. */
bool red_engine_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out);

/* Loads n elements of dtype `src` (byte stride `stride`) as doubles or
 * int64 into buf, converting each through `cast` first when it differs
 * from src (the dtype= argument: torch converts, then reduces). */
void red_load_f64(const char *p, int64_t stride, int64_t n, mtk_dtype src, mtk_dtype cast, double *buf);
void red_load_i64(const char *p, int64_t stride, int64_t n, mtk_dtype src, mtk_dtype cast, int64_t *buf);

/* Stores n doubles / int64 into elements of dtype `dst` (byte stride
 * `stride`), converting as mtk_store_f64 / mtk_store_i64 do. */
void red_store_f64(char *p, int64_t stride, int64_t n, mtk_dtype dst, const double *buf);
void red_store_i64(char *p, int64_t stride, int64_t n, mtk_dtype dst, const int64_t *buf);

/* --------------------------------------------------- scans and sorts */

/* cumsum / cumprod / cummax / cummin (reduce_scan.c). */
bool red_scan_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out);

/* median / nanmedian / mode (reduce_sort.c). */
bool red_sort_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out);

/* the nuclear norm, torch.norm(x, 'nuc') (reduce_norm.c) */
bool red_nuclear_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out);

/* ------------------------------------------------------------ threads */

/* Runs fn(begin, end, worker, user) over [0, n) split into at most
 * `nthreads` contiguous parts, one per thread (the caller runs part 0).
 * Falls back to fewer threads when a thread cannot start. */
typedef void (*red_task_fn)(int64_t begin, int64_t end, int32_t worker, void *user);
void red_parallel(int64_t n, int32_t nthreads, red_task_fn fn, void *user);

/* Threads the cpu kernels of this family use: the context's
 * (mtk_ctx_set_num_threads), in scope while a kernel runs. */
int32_t red_num_threads(void);

/* Inputs smaller than this many elements are reduced on one thread. */
#define RED_PARALLEL_MIN_ELEMENTS 32768

#endif
