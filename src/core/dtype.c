/* The dtype table and PyTorch's type promotion lattice. */
#include "mtk/core.h"

#include <string.h>

/* Every name of a dtype is a column here and nowhere else: PyTorch's,
 * eval's short one, safetensors', and the three spellings of PyTorch's C++
 * messages (ScalarType, typeid, c10 conversion). */
static const mtk_dtype_info dtype_table[MTK_DTYPE_COUNT] = {
    /* dtype, name, short, safetensors, size, kind, storage_only,
     * scalar_type_name, typeid_name, c10_name */
    [MTK_UINT8] = { MTK_UINT8, "uint8", "u8", "U8", 1, MTK_KIND_UINT, false,
                       "Byte", "unsigned char", "uint8_t" },
    [MTK_INT8] = { MTK_INT8, "int8", "i8", "I8", 1, MTK_KIND_INT, false,
                       "Char", "signed char", "int8_t" },
    [MTK_INT16] = { MTK_INT16, "int16", "i16", "I16", 2, MTK_KIND_INT, false,
                       "Short", "short int", "int16_t" },
    [MTK_INT32] = { MTK_INT32, "int32", "i32", "I32", 4, MTK_KIND_INT, false,
                       "Int", "int", "int" },
    [MTK_INT64] = { MTK_INT64, "int64", "i64", "I64", 8, MTK_KIND_INT, false,
                       "Long", "long int", "int64_t" },
    [MTK_FLOAT16] = { MTK_FLOAT16, "float16", "f16", "F16", 2, MTK_KIND_FLOAT, false,
                       "Half", "c10::Half", "c10::Half" },
    [MTK_FLOAT32] = { MTK_FLOAT32, "float32", "f32", "F32", 4, MTK_KIND_FLOAT, false,
                       "Float", "float", "float" },
    [MTK_FLOAT64] = { MTK_FLOAT64, "float64", "f64", "F64", 8, MTK_KIND_FLOAT, false,
                       "Double", "double", "double" },
    [MTK_BOOL] = { MTK_BOOL, "bool", "bool", "BOOL", 1, MTK_KIND_BOOL, false,
                       "Bool", "bool", "bool" },
    [MTK_BFLOAT16] = { MTK_BFLOAT16, "bfloat16", "bf16", "BF16", 2, MTK_KIND_FLOAT, false,
                       "BFloat16", "c10::BFloat16", "c10::BFloat16" },
    [MTK_FLOAT8_E5M2] = { MTK_FLOAT8_E5M2, "float8_e5m2", "f8e5m2", "F8_E5M2", 1, MTK_KIND_FLOAT, true,
                       "Float8_e5m2", "c10::Float8_e5m2", "c10::Float8_e5m2" },
    [MTK_FLOAT8_E4M3FN] = { MTK_FLOAT8_E4M3FN, "float8_e4m3fn", "f8e4m3", "F8_E4M3", 1, MTK_KIND_FLOAT, true,
                       "Float8_e4m3fn", "c10::Float8_e4m3fn", "c10::Float8_e4m3fn" },
};

/* PyTorch's other spellings of the same dtypes (torch.float, torch.half, ...). */
static const struct { const char *name; mtk_dtype dtype; } dtype_aliases[] = {
    { "float", MTK_FLOAT32 }, { "double", MTK_FLOAT64 }, { "half", MTK_FLOAT16 },
    { "long", MTK_INT64 },    { "int", MTK_INT32 },      { "short", MTK_INT16 },
    { "byte", MTK_UINT8 },    { "char", MTK_INT8 },      { "b", MTK_BOOL },
    { "f8e4m3fn", MTK_FLOAT8_E4M3FN },
};

/* torch.promote_types over the table's order; UD where PyTorch raises. */
#define U8 MTK_UINT8
#define I8 MTK_INT8
#define I16 MTK_INT16
#define I32 MTK_INT32
#define I64 MTK_INT64
#define F16 MTK_FLOAT16
#define F32 MTK_FLOAT32
#define F64 MTK_FLOAT64
#define B MTK_BOOL
#define BF MTK_BFLOAT16
#define E5 MTK_FLOAT8_E5M2
#define E4 MTK_FLOAT8_E4M3FN
#define UD MTK_DTYPE_UNDEFINED
static const mtk_dtype promotion[MTK_DTYPE_COUNT][MTK_DTYPE_COUNT] = {
    /*        U8   I8   I16  I32  I64  F16  F32  F64  B    BF   E5  E4 */
    /* U8 */ { U8, I16, I16, I32, I64, F16, F32, F64, U8, BF, UD, UD },
    /* I8 */ { I16, I8, I16, I32, I64, F16, F32, F64, I8, BF, UD, UD },
    /* I16*/ { I16, I16, I16, I32, I64, F16, F32, F64, I16, BF, UD, UD },
    /* I32*/ { I32, I32, I32, I32, I64, F16, F32, F64, I32, BF, UD, UD },
    /* I64*/ { I64, I64, I64, I64, I64, F16, F32, F64, I64, BF, UD, UD },
    /* F16*/ { F16, F16, F16, F16, F16, F16, F32, F64, F16, F32, UD, UD },
    /* F32*/ { F32, F32, F32, F32, F32, F32, F32, F64, F32, F32, UD, UD },
    /* F64*/ { F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, UD, UD },
    /* B  */ { U8, I8, I16, I32, I64, F16, F32, F64, B, BF, UD, UD },
    /* BF */ { BF, BF, BF, BF, BF, F32, F32, F64, BF, BF, UD, UD },
    /* E5 */ { UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, E5, UD },
    /* E4 */ { UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, E4 },
};

static bool valid(mtk_dtype d) { return (int)d >= 0 && d < MTK_DTYPE_COUNT; }

const mtk_dtype_info *mtk_dtype_get(mtk_dtype dtype) { return valid(dtype) ? &dtype_table[dtype] : NULL; }
const char *mtk_dtype_name(mtk_dtype dtype) { return valid(dtype) ? dtype_table[dtype].name : "undefined"; }
size_t mtk_dtype_size(mtk_dtype dtype) { return valid(dtype) ? dtype_table[dtype].size : 0; }

mtk_dtype mtk_dtype_from_name(const char *name)
{
    if (!name) return MTK_DTYPE_UNDEFINED;
    if (strncmp(name, "torch.", 6) == 0) name += 6;
    for (int i = 0; i < MTK_DTYPE_COUNT; i++)
        if (strcmp(name, dtype_table[i].name) == 0 || strcmp(name, dtype_table[i].short_name) == 0)
            return (mtk_dtype)i;
    for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++)
        if (strcmp(name, dtype_aliases[i].name) == 0) return dtype_aliases[i].dtype;
    return MTK_DTYPE_UNDEFINED;
}

bool mtk_dtype_is_floating(mtk_dtype d) { return valid(d) && dtype_table[d].kind == MTK_KIND_FLOAT; }
bool mtk_dtype_is_float8(mtk_dtype d) { return d == MTK_FLOAT8_E5M2 || d == MTK_FLOAT8_E4M3FN; }

bool mtk_dtype_is_integral(mtk_dtype d, bool include_bool)
{
    if (!valid(d)) return false;
    mtk_dtype_kind k = dtype_table[d].kind;
    return k == MTK_KIND_INT || k == MTK_KIND_UINT || (include_bool && k == MTK_KIND_BOOL);
}

mtk_dtype mtk_promote_types(mtk_dtype a, mtk_dtype b)
{
    if (!valid(a)) return b;
    if (!valid(b)) return a;
    return promotion[a][b];
}
