/* Inside the elementwise family: the info objects of its op rows, the
 * element-wise loop engine (ew_run) and helpers shared by its meta and
 * cpu functions.  Outside src/ops/elementwise*.c only two parts are
 * used: the layout replay (ew_lay_*), by interp_layout.c for the meta
 * decompositions of interpolate, and ew_can_cast, by conv.c. */
#ifndef MTK_OPS_ELEMENTWISE_KERNEL_H
#define MTK_OPS_ELEMENTWISE_KERNEL_H

#include "ops/elementwise.h"
#include "ops/op_util.h"

/* ------------------------------------------------------------ dtype sets */

#define EW_BIT(d) (1u << (unsigned)(d))
#define EW_INTS (EW_BIT(MTK_UINT8) | EW_BIT(MTK_INT8) | EW_BIT(MTK_INT16) | EW_BIT(MTK_INT32) | EW_BIT(MTK_INT64))
#define EW_BOOL EW_BIT(MTK_BOOL)
#define EW_FLOATS (EW_BIT(MTK_FLOAT16) | EW_BIT(MTK_BFLOAT16) | EW_BIT(MTK_FLOAT32) | EW_BIT(MTK_FLOAT64))
#define EW_F8 (EW_BIT(MTK_FLOAT8_E5M2) | EW_BIT(MTK_FLOAT8_E4M3FN))
#define EW_ALL (EW_INTS | EW_BOOL | EW_FLOATS | EW_F8)
#define EW_NUMERIC (EW_INTS | EW_BOOL | EW_FLOATS) /* what most cpu kernels accept */

static inline bool ew_in(uint32_t set, mtk_dtype d) { return (int)d >= 0 && (set & EW_BIT(d)) != 0; }

/* ---------------------------------------------------------- the engine */

/* Parameters an element function reads (alpha, beta, bounds, ...), as
 * doubles for floating compute and int64 for integral compute. */
typedef struct ew_params {
    double f[4];
    int64_t i[4];
    mtk_dtype dtype;    /* the compute dtype                          */
    uint32_t raw_scalars; /* inputs read at full precision (ew_run)     */
    bool zero_division; /* set by an integer kernel that divided by 0 */
} ew_params;

/* An element function over n elements of contiguous arrays: out[j] =
 * f(in[0][j], in[1][j], ...).  One per compute class: float (float16,
 * bfloat16, float32 and float8 compute in float, as PyTorch's cpu does),
 * double, and int64 (every integral dtype and bool; results wrap when
 * stored).  Comparisons and predicates write 0 or 1. */
typedef void (*ew_f32_fn)(float *out, const float *const *in, int64_t n, ew_params *p);
typedef void (*ew_f64_fn)(double *out, const double *const *in, int64_t n, ew_params *p);
typedef void (*ew_i64_fn)(int64_t *out, const int64_t *const *in, int64_t n, ew_params *p);

typedef struct ew_fns {
    ew_f32_fn f32;
    ew_f64_fn f64;
    ew_i64_fn i64;
} ew_fns;

#define EW_MAX_INPUTS 4

/* Computes out = fns(inputs) element-wise over out's shape.  Each input is
 * broadcast to out's shape, converted to `compute` (PyTorch's common
 * dtype), then widened to its compute class; results are converted to
 * out's dtype.  Inputs in `raw_scalar` (bit k for input k) that hold one
 * element are read at full precision when `compute` is float16/bfloat16
 * (PyTorch's "original scalar value").  Any strides; out must not overlap
 * an input except element-for-element (in-place).  Returns false, without
 * setting an error, when fns has no function for compute's class. */
bool ew_run(mtk_tensor *out, const mtk_tensor *const *inputs, int32_t nin, mtk_dtype compute,
            const ew_fns *fns, ew_params *params, uint32_t raw_scalar);

/* ------------------------------------------------- meta output strides */

/* A layout in the replay of torch's meta decompositions (see
 * elementwise_layout.c): tensor metadata and what kind of operand it is
 * to torch._prims. */
typedef enum ew_lay_kind {
    EW_LAY_TENSOR,     /* takes part in the stride rule             */
    EW_LAY_CPU_SCALAR, /* 0-dim cpu tensor: ignored by the rule     */
    EW_LAY_NUMBER      /* Python number: ignored, and never converted */
} ew_lay_kind;

typedef struct ew_lay {
    mtk_tensor t; /* dtype, ndim, shape, stride (no storage) */
    ew_lay_kind kind;
} ew_lay;

#define EW_MAX_LAY 8

/* How an op's meta decomposition chains primitives (its "recipe"). */
typedef enum ew_recipe {
    EW_R_PRIM = 0,      /* one primitive over the converted inputs   */
    EW_R_EMPTY_LIKE,    /* torch.empty_like(input) (sigmoid, silu, round) */
    EW_R_ISINF,
    EW_R_ISFINITE,
    EW_R_RELU,
    EW_R_GELU,
    EW_R_LEAKY_RELU,
    EW_R_ELU,
    EW_R_SELU,
    EW_R_SOFTPLUS,
    EW_R_MISH,
    EW_R_HARDTANH,      /* also relu6                                 */
    EW_R_HARDSWISH,
    EW_R_HARDSIGMOID,
    EW_R_ADD_ALPHA,     /* add/sub with alpha: b * alpha first        */
    EW_R_TRUNC_DIVIDE,
    EW_R_FLOOR_DIVIDE,
    EW_R_LOGICAL,
    EW_R_POW
} ew_recipe;

typedef struct ew_lay_options {
    bool exponent_is_number; /* pow(tensor, number)  */
    bool base_is_number;     /* pow(number, tensor)  */
    double number;           /* that number          */
} ew_lay_options;

/* The layout of an operand of an op running on `op_device`. */
ew_lay ew_lay_of(const mtk_tensor *t, mtk_device op_device);
ew_lay ew_lay_scalar(void); /* scalar_tensor(x) on the op's device */
ew_lay ew_lay_number(void); /* a Python number */
/* one primitive element-wise op over n operands (broadcasting) */
ew_lay ew_lay_elem(int32_t n, const ew_lay *ops);
ew_lay ew_lay_elem1(ew_lay a);
ew_lay ew_lay_elem2(ew_lay a, ew_lay b);
ew_lay ew_lay_elem3(ew_lay a, ew_lay b, ew_lay c);
/* the broadcast shape of the operands (numbers, and cpu scalars, are
 * 0-dim) */
void ew_lay_common_shape(int32_t n, const ew_lay *ops, int64_t *shape, int32_t *ndim);
/* _maybe_broadcast: expands tensor operands to the common shape */
void ew_lay_broadcast(int32_t n, ew_lay *ops);
/* prims.convert_element_type (dense strides kept) when `changes` */
ew_lay ew_lay_convert(ew_lay a, bool changes);
/* Tensor.to(dtype) (infer_dense_strides) when `changes` */
ew_lay ew_lay_to(ew_lay a, bool changes);
/* float16/bfloat16 compute in float32 (PyTorch's opmath) */
mtk_dtype ew_opmath(mtk_dtype d);

/* The recipes: `compute` is the dtype the reference converts its inputs
 * to before the primitives. */
ew_lay ew_lay_unary(ew_recipe recipe, ew_lay a, mtk_dtype compute);
ew_lay ew_lay_activation(ew_recipe recipe, ew_lay a, bool tanh_approximation);
ew_lay ew_lay_binary(ew_recipe recipe, ew_lay a, ew_lay b, mtk_dtype compute, const ew_lay_options *opt);
ew_lay ew_lay_where(ew_lay cond, ew_lay a, ew_lay b, mtk_dtype result);
/* min/max NULL when absent; number bounds as ew_lay_number() */
ew_lay ew_lay_clamp(ew_lay a, const ew_lay *min, const ew_lay *max, mtk_dtype compute);

/* ------------------------------------------------ cpu output strides */

/* One cpu TensorIterator over ops, already in the common dtype (see
 * elementwise_layout_cpu.c): every operand takes part, numbers as 0-dim
 * tensors (mtk_ti_cpu_output_strides). */
ew_lay ew_lay_iter(int32_t n, const ew_lay *ops);
ew_lay ew_lay_iter1(ew_lay a);
ew_lay ew_lay_iter2(ew_lay a, ew_lay b);
/* The same after converting each operand of another dtype than `common`
 * with Tensor.to, as TensorIterator promotes its inputs on cpu. */
ew_lay ew_lay_iter_to(int32_t n, const ew_lay *ops, mtk_dtype common);
/* torch.empty_like(a) (preserve format: dense strides kept, others made
 * dense in a's order) */
ew_lay ew_lay_empty_like(ew_lay a);
/* The layout of a unary op / activation on cpu: one iterator over `a`
 * converted to `compute`, or the op's own chain (isinf, isfinite,
 * hardtanh). */
ew_lay ew_lay_cpu_unary(ew_recipe recipe, ew_lay a, mtk_dtype compute);
ew_lay ew_lay_cpu_activation(ew_recipe recipe, ew_lay a, mtk_dtype compute);

/* ------------------------------------------------------- meta helpers */

/* Makes the call's single output: a fresh tensor of `dtype` with the
 * shape and strides of `layout` (or given ones).  False on error. */
bool ew_set_output(mtk_op_call *call, mtk_dtype dtype, const ew_lay *layout);
bool ew_set_output_strided(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                           const int64_t *stride);

/* The fast path of a recipe that is one primitive over its (converted)
 * inputs (EW_R_PRIM, EW_R_EMPTY_LIKE): when `ew_plain_contiguous` holds --
 * the inputs are tensors of one shape, all contiguous, not 4-D
 * (mtk_ti_all_contiguous) -- torch's rule gives contiguous strides (a
 * dtype conversion keeps a contiguous layout), which
 * ew_set_contiguous_output makes without replaying the recipe. */
static inline bool ew_plain_contiguous(const mtk_tensor *const *inputs, int32_t n)
{
    return mtk_ti_all_contiguous(inputs, n, inputs[0]->shape, inputs[0]->ndim);
}
bool ew_set_contiguous_output(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim);

/* Makes the output of an in-place call (`inplace=True`): the input tensor
 * in argument `arg` itself, which must be able to hold `result_dtype`
 * (PyTorch: "result type Float can't be cast to the desired output type
 * Long"). */
bool ew_set_inplace_output(mtk_op_call *call, int32_t arg, mtk_dtype result_dtype);

/* torch.can_cast(from, to). */
bool ew_can_cast(mtk_dtype from, mtk_dtype to);

/* PyTorch's cpu dtype error: '"exp_vml_cpu" not implemented for 'Half''
 * unless `dtype` is in `supported`. */
bool ew_check_cpu_dtype(mtk_op_call *call, const char *kernel_name, uint32_t supported,
                        mtk_dtype dtype);

/* PyTorch's checked conversion of a Python number into `dtype`: "value
 * cannot be converted to type uint8_t without overflow" (MTK_ERR_OVERFLOW)
 * unless it fits.  Unsigned types accept negatives down to -max (they
 * wrap); floating types accept inf and nan; int64, float64, bool and
 * float8 are not checked. */
bool ew_number_fits(mtk_op_call *call, const mtk_value *v, mtk_dtype dtype);

/* A Scalar argument as double / int64 (bool is 0/1). */
double ew_arg_double(const mtk_op_call *call, int32_t i);
int64_t ew_arg_int(const mtk_op_call *call, int32_t i);

/* Sets params->f[k] and ->i[k] from a number value. */
void ew_param_set(ew_params *p, int32_t k, const mtk_value *number);

/* ---------------------------------------------------------- info rows */

typedef enum ew_unary_kind {
    EW_UNARY_KEEP,         /* result has the input's dtype                 */
    EW_UNARY_KEEP_INT64,   /* same, but bool becomes int64 (square = x**2) */
    EW_UNARY_FLOAT,        /* integral and bool inputs become default float */
    EW_UNARY_BOOL          /* computes in the input's dtype, result bool    */
} ew_unary_kind;

struct ew_unary_info {
    ew_unary_kind kind;
    uint32_t rejects;           /* input dtypes refused on every device    */
    const char *reject_message; /* ... with PyTorch's words                */
    const char *kernel_name;    /* PyTorch's cpu kernel, for dtype errors  */
    uint32_t cpu_dtypes;        /* compute dtypes the cpu kernel accepts   */
    const char *cpu_reject_message; /* optional message instead of the
                                      kernel-name one (relu of bool)      */
    int32_t inplace_arg;        /* index of `inplace`, or 0 when none      */
    ew_recipe recipe;           /* meta strides (EW_R_PRIM: one primitive) */
    ew_fns fns;
};

typedef enum ew_binary_kind {
    EW_BINARY_COMMON,  /* computes and returns the common dtype            */
    EW_BINARY_FLOAT,   /* integral common dtypes become the default float  */
    EW_BINARY_BOOL,    /* computes in the common dtype, returns bool        */
    EW_BINARY_DIV,     /* div: FLOAT without rounding_mode, else COMMON     */
    EW_BINARY_POW      /* COMMON, but bool ** bool returns int64 on meta    */
} ew_binary_kind;

struct ew_binary_info {
    ew_binary_kind kind;
    bool numbers_only_ok; /* both arguments may be numbers: add(2, 3)      */
    bool swap_operands;   /* PyTorch iterates (other, input): rsub         */
    /* extra validation on every device (sub of bools, alpha), given the
     * operands (already swapped) and the common dtype */
    bool (*check)(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, mtk_dtype common);
    /* cpu: fills params and may pick other element functions */
    bool (*prepare)(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, ew_params *p,
                    const ew_fns **fns);
    const char *kernel_name;
    uint32_t cpu_dtypes;      /* compute dtypes the cpu kernel accepts      */
    uint32_t raw_scalar;      /* see ew_run                                 */
    ew_recipe recipe;         /* meta strides                               */
    const ew_fns *fns;
};

struct ew_activation_info {
    bool rejects_integral;     /* refuses integral and bool inputs on every device */
    const char *kernel_name;
    uint32_t cpu_dtypes;
    int32_t inplace_arg;       /* index of `inplace`, or 0 when none      */
    /* reads and validates parameters (every device); NULL when none */
    bool (*params)(mtk_op_call *call, mtk_dtype dtype, ew_params *p);
    ew_recipe recipe;          /* meta strides                            */
    ew_fns fns;
};

/* ---------------------------------------- element-function generators */

/* Defines name_f32/name_f64 applying EXPR to `x` (one input). */
#define EW_DEFINE_UNARY_FLOAT(name, expr_f32, expr_f64)                                 \
    static void name##_f32(float *o, const float *const *in, int64_t n, ew_params *p)   \
    {                                                                                   \
        const float *a = in[0];                                                         \
        (void)p;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                               \
            float x = a[j];                                                             \
            o[j] = (expr_f32);                                                          \
        }                                                                               \
    }                                                                                   \
    static void name##_f64(double *o, const double *const *in, int64_t n, ew_params *p) \
    {                                                                                   \
        const double *a = in[0];                                                        \
        (void)p;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                               \
            double x = a[j];                                                            \
            o[j] = (expr_f64);                                                          \
        }                                                                               \
    }

/* Defines name_i64 applying EXPR to `x` (one input). */
#define EW_DEFINE_UNARY_INT(name, expr)                                                    \
    static void name##_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p) \
    {                                                                                      \
        const int64_t *a = in[0];                                                          \
        (void)p;                                                                           \
        for (int64_t j = 0; j < n; j++) {                                                  \
            int64_t x = a[j];                                                              \
            (void)x;                                                                       \
            o[j] = (expr);                                                                 \
        }                                                                                  \
    }

/* Binary versions: EXPR of `x` and `y`. */
#define EW_DEFINE_BINARY_FLOAT(name, expr_f32, expr_f64)                                \
    static void name##_f32(float *o, const float *const *in, int64_t n, ew_params *p)   \
    {                                                                                   \
        const float *a = in[0], *b = in[1];                                             \
        (void)p;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                               \
            float x = a[j], y = b[j];                                                   \
            o[j] = (expr_f32);                                                          \
        }                                                                               \
    }                                                                                   \
    static void name##_f64(double *o, const double *const *in, int64_t n, ew_params *p) \
    {                                                                                   \
        const double *a = in[0], *b = in[1];                                            \
        (void)p;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                               \
            double x = a[j], y = b[j];                                                  \
            o[j] = (expr_f64);                                                          \
        }                                                                               \
    }

#define EW_DEFINE_BINARY_INT(name, expr)                                                   \
    static void name##_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p) \
    {                                                                                      \
        const int64_t *a = in[0], *b = in[1];                                              \
        (void)p;                                                                           \
        for (int64_t j = 0; j < n; j++) {                                                  \
            int64_t x = a[j], y = b[j];                                                    \
            o[j] = (expr);                                                                 \
        }                                                                                  \
    }

/* Wrapping int64 arithmetic (C's signed overflow is undefined). */
static inline int64_t ew_wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t ew_wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t ew_wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static inline int64_t ew_wrap_neg(int64_t a) { return (int64_t)(0u - (uint64_t)a); }

#endif
