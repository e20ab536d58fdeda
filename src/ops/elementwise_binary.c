/* Binary element-wise ops: the shared meta function (Python numbers,
 * type promotion, broadcasting, torch's meta strides), the shared cpu
 * function, and each op's checks.  Element functions live in
 * elementwise_arith.c.
 *
 * Validation follows PyTorch device by device: the meta function raises
 * what torch raises on device='meta'; checks that only PyTorch's real
 * kernels make (a bool tensor in sub, alpha types, integers to negative
 * powers) run in the cpu function. */
#include "ops/elementwise_kernel.h"
#include "ops/elementwise_arith.h"
#include "core/scalar.h"

#include <string.h>

static bool both_numbers(const mtk_op_call *call)
{
    return mtk_value_is_number(&call->args[0]) && mtk_value_is_number(&call->args[1]);
}

/* rsub's overloads, rsub(input, Tensor other, *, alpha=1) and
 * rsub(input, Scalar other, Scalar alpha=1): an alpha given by position
 * needs a number `other`, and torch's parser makes a 0-dim tensor one (its
 * item(), which a meta tensor cannot give).  An omitted alpha is 1.  The
 * call's arguments are left in that normal form. */
static bool rsub_arguments(mtk_op_call *call)
{
    mtk_value *other = &call->args[1], *alpha = &call->args[2];
    bool positional_alpha = alpha->kind != MTK_VALUE_NONE && !(call->keyword_args & (1u << 2));
    if (alpha->kind == MTK_VALUE_NONE) { /* omitted: 1, as if given by keyword (the cpu pass sees that) */
        *alpha = mtk_value_int(1);
        call->keyword_args |= 1u << 2;
    }
    if (!positional_alpha || other->kind != MTK_VALUE_TENSOR) return true;
    const mtk_tensor *t = other->as.tensor;
    if (t->ndim != 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "rsub() received an invalid combination of arguments - got (Tensor, Tensor, %s): "
                              "alpha goes by keyword when other is a tensor",
                              mtk_value_type_name(alpha));
    const void *data = mtk_tensor_data(t);
    if (!data)
        return mtk_call_error(call, MTK_ERR_META_NO_DATA, "Tensor.item() cannot be called on meta tensors");
    if (t->dtype == MTK_BOOL) *other = mtk_value_bool(mtk_load_i64(t->dtype, data) != 0);
    else if (mtk_dtype_is_floating(t->dtype)) *other = mtk_value_float(mtk_load_f64(t->dtype, data));
    else *other = mtk_value_int(mtk_load_i64(t->dtype, data));
    return true;
}

/* The operands in PyTorch's iteration order. */
static bool operands(mtk_op_call *call, const ew_binary_info *info, mtk_tensor **a, mtk_tensor **b)
{
    if (info == &mtk_ew_info_RSUB && !rsub_arguments(call)) return false;
    if (both_numbers(call) && !info->numbers_only_ok)
        return mtk_error(call->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "%s() received an invalid combination of arguments - got (%s, %s)",
                         call->op->name, mtk_value_type_name(&call->args[0]),
                         mtk_value_type_name(&call->args[1]));
    *a = mtk_call_operand(call, 0);
    *b = mtk_call_operand(call, 1);
    if (!*a || !*b) return false;
    if (info->swap_operands) {
        mtk_tensor *t = *a;
        *a = *b;
        *b = t;
    }
    return true;
}

static ew_binary_kind resolve_kind(const mtk_op_call *call, const ew_binary_info *info)
{
    if (info->kind != EW_BINARY_DIV) return info->kind;
    return arg_is_none(call, 2) ? EW_BINARY_FLOAT : EW_BINARY_COMMON;
}

/* compute dtype (what the kernel works in) and result dtype */
static void binary_dtypes(mtk_ctx *ctx, ew_binary_kind kind, mtk_dtype common, mtk_dtype *compute,
                          mtk_dtype *result)
{
    *compute = common;
    if (kind == EW_BINARY_FLOAT && mtk_dtype_is_integral(common, true)) *compute = mtk_ctx_dtype(ctx);
    *result = kind == EW_BINARY_BOOL ? MTK_BOOL : *compute;
    if (kind == EW_BINARY_POW && common == MTK_BOOL) *result = MTK_INT64; /* torch's meta; cpu refuses */
}

/* pow(bool tensor, True or False): torch's cpu kernel copies the base or
 * fills ones, in bool (its meta says int64; other bool pows fail on cpu) */
static bool bool_pow_on_cpu(const mtk_op_call *call, const ew_binary_info *info, mtk_dtype common)
{
    return info->kind == EW_BINARY_POW && common == MTK_BOOL && call->device == MTK_DEVICE_CPU &&
           call->args[0].kind == MTK_VALUE_TENSOR && call->args[1].kind == MTK_VALUE_BOOL;
}

/* the common dtype: torch's meta rule (float8 wins) or result_type's */
static mtk_dtype common_dtype(mtk_ctx *ctx, const mtk_tensor *a, const mtk_tensor *b, bool meta)
{
    /* equal dtypes: every promotion rule agrees, unless both are Python
     * numbers (wrapped float64s, which count as the default dtype) */
    bool wrapped = (a->flags & b->flags & MTK_TENSOR_WRAPPED_NUMBER) != 0;
    if (a->dtype == b->dtype && !wrapped) return a->dtype;
    mtk_value v[2] = { mtk_value_tensor((mtk_tensor *)a), mtk_value_tensor((mtk_tensor *)b) };
    return meta ? mtk_meta_result_type(ctx, v, 2) : mtk_result_type(ctx, v, 2);
}

/* The recipe of torch's meta decomposition for this call. */
static ew_recipe call_recipe(const mtk_op_call *call, const ew_binary_info *info)
{
    if (info->recipe == EW_R_ADD_ALPHA) {
        /* add multiplies by any alpha it is given (mtk cannot tell an
         * explicit 1 from the default), sub by an alpha other than 1 */
        const mtk_value *alpha = &call->args[2];
        bool unit = info == &mtk_ew_info_ADD ? alpha->kind == MTK_VALUE_INT && alpha->as.i == 1
                                             : mtk_value_as_double(alpha) == 1.0;
        return unit ? EW_R_PRIM : EW_R_ADD_ALPHA;
    }
    if (info->kind == EW_BINARY_DIV && !arg_is_none(call, 2))
        return strcmp(call->args[2].as.s, "trunc") == 0 ? EW_R_TRUNC_DIVIDE : EW_R_FLOOR_DIVIDE;
    return info->recipe;
}

/* The layout torch's cpu gives: one TensorIterator over both operands
 * (a Python number is a 0-dim one) converted to `compute`; pow with a
 * number exponent iterates over the base alone, pow of a number base is
 * laid out contiguous in the exponent's shape. */
static ew_lay cpu_layout(const mtk_op_call *call, const ew_binary_info *info, const mtk_tensor *a,
                         const mtk_tensor *b, mtk_dtype compute)
{
    ew_lay ops[2] = { ew_lay_of(a, call->device), ew_lay_of(b, call->device) };
    if (info->kind == EW_BINARY_POW && mtk_value_is_number(&call->args[1])) return ew_lay_iter_to(1, ops, compute);
    if (info->kind == EW_BINARY_POW && mtk_value_is_number(&call->args[0])) {
        ew_lay out = ops[1];
        mtk_contiguous_strides(out.t.shape, out.t.ndim, out.t.stride);
        return out;
    }
    return ew_lay_iter_to(2, ops, compute);
}

bool mtk_ew_binary_meta(mtk_op_call *call)
{
    const ew_binary_info *info = call->op->info;
    mtk_tensor *a = NULL, *b = NULL;
    if (!operands(call, info, &a, &b)) return false;
    /* two Python numbers are two wrapped cpu tensors: the op runs on cpu
     * whatever the default device (torch.add(1, 2) is a cpu tensor) */
    if (both_numbers(call)) call->device = MTK_DEVICE_CPU;
    mtk_dtype common = common_dtype(call->ctx, a, b, true);
    if (common == MTK_DTYPE_UNDEFINED) return false;
    if (info->check && !info->check(call, a, b, common)) return false;
    mtk_dtype compute, result;
    binary_dtypes(call->ctx, resolve_kind(call, info), common, &compute, &result);
    if (bool_pow_on_cpu(call, info, common)) { /* the cpu's unary TensorIterator over the base */
        ew_lay out = ew_lay_iter1(ew_lay_of(a, call->device));
        return ew_set_output(call, MTK_BOOL, &out);
    }
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, a->shape, a->ndim, b->shape, b->ndim, shape, &ndim))
        return false;
    ew_recipe recipe = call_recipe(call, info);
    const mtk_tensor *ins[2] = { a, b };
    if (recipe == EW_R_PRIM && ew_plain_contiguous(ins, 2)) return ew_set_contiguous_output(call, result, shape, ndim);
    if (call->device == MTK_DEVICE_CPU) {
        ew_lay out = cpu_layout(call, info, a, b, compute);
        return ew_set_output(call, result, &out);
    }
    /* the reference converts its inputs to opmath of the computation */
    mtk_dtype convert_to = info->kind == EW_BINARY_POW && common == MTK_BOOL ? MTK_INT64 : ew_opmath(compute);
    ew_lay_options opt = { false, false, 0.0 };
    if (info->kind == EW_BINARY_POW) {
        opt.exponent_is_number = mtk_value_is_number(&call->args[1]);
        opt.base_is_number = mtk_value_is_number(&call->args[0]);
        opt.number = mtk_value_as_double(&call->args[opt.exponent_is_number ? 1 : 0]);
    }
    ew_lay out = ew_lay_binary(recipe, ew_lay_of(a, call->device), ew_lay_of(b, call->device), convert_to, &opt);
    return ew_set_output(call, result, &out);
}

bool mtk_ew_binary_cpu(mtk_op_call *call)
{
    const ew_binary_info *info = call->op->info;
    mtk_tensor *a = NULL, *b = NULL;
    if (!operands(call, info, &a, &b)) return false;
    mtk_dtype common = common_dtype(call->ctx, a, b, false);
    if (common == MTK_DTYPE_UNDEFINED) return false;
    mtk_dtype compute, result;
    binary_dtypes(call->ctx, resolve_kind(call, info), common, &compute, &result);
    if (bool_pow_on_cpu(call, info, common)) compute = MTK_BOOL;
    const char *kernel_name = info->kernel_name;
    if (info->kind == EW_BINARY_DIV && !arg_is_none(call, 2))
        kernel_name = strcmp(call->args[2].as.s, "trunc") == 0 ? "div_trunc_cpu" : "div_floor_cpu";
    if (!ew_check_cpu_dtype(call, kernel_name, info->cpu_dtypes, compute)) return false;
    ew_params params;
    memset(&params, 0, sizeof params);
    const ew_fns *fns = info->fns;
    if (info->prepare && !info->prepare(call, a, b, &params, &fns)) return false;
    const mtk_tensor *ins[2] = { a, b };
    if (!ew_run(call->out[0], ins, 2, compute, fns, &params, info->raw_scalar))
        return ew_check_cpu_dtype(call, kernel_name, 0, compute);
    if (params.zero_division) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "ZeroDivisionError");
    return true;
}

/* ------------------------------------------------------------- checks */

static const char two_bools_message[] =
    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
    "`logical_xor()` operator instead.";
static const char one_bool_message[] =
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead.";

/* torch's meta refuses two bool tensors; a Python bool does not count */
static bool sub_check(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, mtk_dtype common)
{
    (void)common;
    uint32_t wrapped = (a->flags | b->flags) & MTK_TENSOR_WRAPPED_NUMBER;
    if (a->dtype == MTK_BOOL && b->dtype == MTK_BOOL && !wrapped)
        return mtk_call_error(call, MTK_ERR_DTYPE, "%s", two_bools_message);
    return true;
}

/* torch's meta (torch._refs.add/sub): alpha must be castable to the
 * result's Python type; add lets anything through for a bool result, sub
 * only an alpha equal to 1 */
static bool alpha_meta_check(mtk_op_call *call, mtk_dtype result, bool is_sub)
{
    const mtk_value *alpha = &call->args[2];
    const char *type = NULL;
    if (alpha->kind == MTK_VALUE_FLOAT && mtk_dtype_is_integral(result, false)) type = "int";
    if (is_sub && result == MTK_BOOL && alpha->kind != MTK_VALUE_BOOL && mtk_value_as_double(alpha) != 1.0)
        type = "bool";
    if (!type) return true;
    return mtk_call_error(call, MTK_ERR_DTYPE,
                          "alpha argument of type <class '%s'> cannot be safely cast to type <class '%s'>!",
                          mtk_value_type_name(alpha), type);
}

static bool add_check(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, mtk_dtype common)
{
    (void)a, (void)b;
    return alpha_meta_check(call, common, false);
}

static bool sub_alpha_check(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, mtk_dtype common)
{
    return sub_check(call, a, b, common) && alpha_meta_check(call, common, true);
}

static bool floor_divide_check(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, mtk_dtype common)
{
    (void)a, (void)b;
    if (common == MTK_BOOL) return mtk_call_error(call, MTK_ERR_DTYPE, "torch.bool not supported for floor_divide");
    return true;
}

static bool div_check(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, mtk_dtype common)
{
    if (arg_is_none(call, 2)) return true;
    const char *mode = call->args[2].as.s;
    if (strcmp(mode, "trunc") == 0) return true;
    if (strcmp(mode, "floor") == 0) return floor_divide_check(call, a, b, common);
    return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                          "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'",
                          mode);
}

/* --------------------------------------------------- cpu preparation */

/* add/sub/rsub: PyTorch's alpha_check, then a + alpha * b */
static bool prepare_alpha(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, ew_params *p,
                          const ew_fns **fns, bool negate)
{
    mtk_dtype common = common_dtype(call->ctx, a, b, false);
    const mtk_value *alpha = &call->args[2];
    if (alpha->kind == MTK_VALUE_BOOL && common != MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE, "Boolean alpha only supported for Boolean results.");
    if (alpha->kind == MTK_VALUE_FLOAT && mtk_dtype_is_integral(common, true))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "For integral input tensors, argument alpha must not be a floating "
                              "point number.");
    ew_param_set(p, 0, alpha);
    if (common == MTK_BOOL) p->i[0] = p->i[0] != 0; /* the kernel's alpha is a bool: a + (alpha != 0) * b */
    if (negate) {
        p->f[0] = -p->f[0];
        p->i[0] = ew_wrap_neg(p->i[0]);
    }
    bool unit = alpha->kind == MTK_VALUE_FLOAT ? alpha->as.f == 1.0 : p->i[0] == (negate ? -1 : 1);
    if (unit) *fns = negate ? &ew_sub_fns : &ew_add_fns;
    else *fns = &ew_add_alpha_fns;
    return true;
}

static bool prepare_add(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, ew_params *p,
                        const ew_fns **fns)
{
    return prepare_alpha(call, a, b, p, fns, false);
}

static bool prepare_sub(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, ew_params *p,
                        const ew_fns **fns)
{
    if (a->dtype == MTK_BOOL || b->dtype == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE, "%s",
                              a->dtype == MTK_BOOL && b->dtype == MTK_BOOL ? two_bools_message : one_bool_message);
    return prepare_alpha(call, a, b, p, fns, true);
}

static bool prepare_div(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, ew_params *p,
                        const ew_fns **fns)
{
    (void)a, (void)b, (void)p;
    if (arg_is_none(call, 2)) *fns = &ew_true_div_fns;
    else if (strcmp(call->args[2].as.s, "trunc") == 0) *fns = &ew_trunc_div_fns;
    else *fns = &ew_floor_div_fns;
    return true;
}

/* mul: PyTorch's cpu multiplies float8 tensors elementwise, but its path
 * for a one-element second operand has no float8 kernel */
static bool prepare_mul(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, ew_params *p,
                        const ew_fns **fns)
{
    (void)p, (void)fns;
    mtk_dtype common = common_dtype(call->ctx, a, b, false);
    if (mtk_dtype_is_float8(common) && mtk_tensor_numel(b) == 1)
        return ew_check_cpu_dtype(call, "mul_cpu_reduced_float", 0, common);
    return true;
}

/* pow: a Python-number exponent takes PyTorch's Tensor_Scalar paths */
static bool prepare_pow(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, ew_params *p,
                        const ew_fns **fns)
{
    mtk_dtype common = common_dtype(call->ctx, a, b, false);
    const mtk_value *exponent = &call->args[1];
    if (bool_pow_on_cpu(call, call->op->info, common)) { /* x ** True: x; x ** False: ones */
        ew_param_set(p, 0, exponent);
        *fns = ew_pow_scalar_fns(p->f[0], false);
        return true;
    }
    if (common == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"pow\" not implemented for 'Bool'");
    if (!mtk_value_is_number(exponent) || call->args[0].kind != MTK_VALUE_TENSOR) return true;
    if (mtk_dtype_is_integral(a->dtype, true) && exponent->kind != MTK_VALUE_FLOAT &&
        exponent->kind == MTK_VALUE_INT && exponent->as.i < 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "Integers to negative integer powers are not allowed.");
    ew_param_set(p, 0, exponent);
    if (p->f[0] != 0.0 && p->f[0] != 1.0 && !ew_number_fits(call, exponent, common)) return false;
    *fns = ew_pow_scalar_fns(p->f[0], mtk_dtype_is_floating(common));
    return true;
}

/* ---------------------------------------------------------- info rows */

#define NUM EW_NUMERIC
#define NO_BOOL (EW_INTS | EW_FLOATS)
#define ARITH(kind, check, prepare, kernel, dtypes, raw, fns) \
    { kind, false, false, check, prepare, kernel, dtypes, raw, EW_R_PRIM, fns }
#define NUMBERS(kind, check, prepare, kernel, dtypes, raw, fns) \
    { kind, true, false, check, prepare, kernel, dtypes, raw, EW_R_PRIM, fns }
#define LOGICAL(kernel, fns) { EW_BINARY_BOOL, false, false, NULL, NULL, kernel, NUM, 0, EW_R_LOGICAL, fns }
#define RAW_OTHER 2u /* input 1 read unrounded when it is a scalar */

const ew_binary_info mtk_ew_info_ADD = { EW_BINARY_COMMON, true, false, add_check, prepare_add, "add_stub", NUM, 0,
                                         EW_R_ADD_ALPHA, &ew_add_fns };
const ew_binary_info mtk_ew_info_SUB = { EW_BINARY_COMMON, true, false, sub_alpha_check, prepare_sub, "add_stub", NUM, 0,
                                         EW_R_ADD_ALPHA, &ew_add_fns };
const ew_binary_info mtk_ew_info_RSUB = { EW_BINARY_COMMON, false, true, sub_alpha_check, prepare_sub, "add_stub", NUM, 0,
                                          EW_R_ADD_ALPHA, &ew_add_fns };
const ew_binary_info mtk_ew_info_MUL = NUMBERS(EW_BINARY_COMMON, NULL, prepare_mul, "mul_cpu", EW_ALL, RAW_OTHER, &ew_mul_fns);
const ew_binary_info mtk_ew_info_DIV = NUMBERS(EW_BINARY_DIV, div_check, prepare_div, "div_cpu", NO_BOOL, RAW_OTHER, &ew_true_div_fns);
const ew_binary_info mtk_ew_info_TRUE_DIVIDE = NUMBERS(EW_BINARY_FLOAT, NULL, NULL, "div_cpu", NO_BOOL, RAW_OTHER, &ew_true_div_fns);
const ew_binary_info mtk_ew_info_FLOOR_DIVIDE = { EW_BINARY_COMMON, true, false, floor_divide_check, NULL, "div_floor_cpu",
                                                  NO_BOOL, RAW_OTHER, EW_R_FLOOR_DIVIDE, &ew_floor_div_fns };
const ew_binary_info mtk_ew_info_REMAINDER = ARITH(EW_BINARY_COMMON, NULL, NULL, "remainder_cpu", NO_BOOL, 0, &ew_remainder_fns);
const ew_binary_info mtk_ew_info_FMOD = ARITH(EW_BINARY_COMMON, NULL, NULL, "fmod_cpu", NO_BOOL, 0, &ew_fmod_fns);
const ew_binary_info mtk_ew_info_POW = { EW_BINARY_POW, false, false, NULL, prepare_pow, "pow", NUM, 0, EW_R_POW, &ew_pow_fns };
const ew_binary_info mtk_ew_info_MAXIMUM = ARITH(EW_BINARY_COMMON, NULL, NULL, "maximum_cpu", NUM, 0, &ew_maximum_fns);
const ew_binary_info mtk_ew_info_MINIMUM = ARITH(EW_BINARY_COMMON, NULL, NULL, "minimum_cpu", NUM, 0, &ew_minimum_fns);
const ew_binary_info mtk_ew_info_ATAN2 = ARITH(EW_BINARY_FLOAT, NULL, NULL, "atan2_cpu", EW_FLOATS, 0, &ew_atan2_fns);

const ew_binary_info mtk_ew_info_EQ = ARITH(EW_BINARY_BOOL, NULL, NULL, "eq_cpu", EW_ALL, 0, &ew_eq_fns);
const ew_binary_info mtk_ew_info_NE = ARITH(EW_BINARY_BOOL, NULL, NULL, "ne_cpu", EW_ALL, 0, &ew_ne_fns);
const ew_binary_info mtk_ew_info_LT = ARITH(EW_BINARY_BOOL, NULL, NULL, "lt_cpu", NUM, 0, &ew_lt_fns);
const ew_binary_info mtk_ew_info_LE = ARITH(EW_BINARY_BOOL, NULL, NULL, "le_cpu", NUM, 0, &ew_le_fns);
const ew_binary_info mtk_ew_info_GT = ARITH(EW_BINARY_BOOL, NULL, NULL, "gt_cpu", NUM, 0, &ew_gt_fns);
const ew_binary_info mtk_ew_info_GE = ARITH(EW_BINARY_BOOL, NULL, NULL, "ge_cpu", NUM, 0, &ew_ge_fns);
const ew_binary_info mtk_ew_info_LOGICAL_AND = LOGICAL("logical_and_cpu", &ew_logical_and_fns);
const ew_binary_info mtk_ew_info_LOGICAL_OR = LOGICAL("logical_or_cpu", &ew_logical_or_fns);
const ew_binary_info mtk_ew_info_LOGICAL_XOR = LOGICAL("logical_xor_cpu", &ew_logical_xor_fns);

const ew_binary_info mtk_ew_info_BITWISE_AND = ARITH(EW_BINARY_COMMON, NULL, NULL, "bitwise_and_cpu", EW_INTS | EW_BOOL, 0, &ew_bitwise_and_fns);
const ew_binary_info mtk_ew_info_BITWISE_OR = ARITH(EW_BINARY_COMMON, NULL, NULL, "bitwise_or_cpu", EW_INTS | EW_BOOL, 0, &ew_bitwise_or_fns);
const ew_binary_info mtk_ew_info_BITWISE_XOR = ARITH(EW_BINARY_COMMON, NULL, NULL, "bitwise_xor_cpu", EW_INTS | EW_BOOL, 0, &ew_bitwise_xor_fns);
