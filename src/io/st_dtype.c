/* The safetensors dtype table: names, sizes and mtk dtypes, in the
 * format's own order. */
#include "mtk/io.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
    mtk_dtype dtype; /* MTK_DTYPE_UNDEFINED: no mtk dtype (unsigned 16/32/64) */
} st_dtypes[MTK_ST_DTYPE_COUNT] = {
    [MTK_ST_BOOL] = { "BOOL", 1, MTK_BOOL },
    [MTK_ST_U8] = { "U8", 1, MTK_UINT8 },
    [MTK_ST_I8] = { "I8", 1, MTK_INT8 },
    [MTK_ST_F8_E5M2] = { "F8_E5M2", 1, MTK_FLOAT8_E5M2 },
    [MTK_ST_F8_E4M3] = { "F8_E4M3", 1, MTK_FLOAT8_E4M3FN },
    [MTK_ST_I16] = { "I16", 2, MTK_INT16 },
    [MTK_ST_U16] = { "U16", 2, MTK_DTYPE_UNDEFINED },
    [MTK_ST_F16] = { "F16", 2, MTK_FLOAT16 },
    [MTK_ST_BF16] = { "BF16", 2, MTK_BFLOAT16 },
    [MTK_ST_I32] = { "I32", 4, MTK_INT32 },
    [MTK_ST_U32] = { "U32", 4, MTK_DTYPE_UNDEFINED },
    [MTK_ST_F32] = { "F32", 4, MTK_FLOAT32 },
    [MTK_ST_F64] = { "F64", 8, MTK_FLOAT64 },
    [MTK_ST_I64] = { "I64", 8, MTK_INT64 },
    [MTK_ST_U64] = { "U64", 8, MTK_DTYPE_UNDEFINED },
};

static bool valid(mtk_st_dtype d) { return (int)d >= 0 && d < MTK_ST_DTYPE_COUNT; }

const char *mtk_st_dtype_name(mtk_st_dtype d) { return valid(d) ? st_dtypes[d].name : "invalid"; }
size_t mtk_st_dtype_size(mtk_st_dtype d) { return valid(d) ? st_dtypes[d].size : 0; }
mtk_dtype mtk_st_dtype_to_mtk(mtk_st_dtype d) { return valid(d) ? st_dtypes[d].dtype : MTK_DTYPE_UNDEFINED; }

mtk_st_dtype mtk_st_dtype_from_name(const char *name)
{
    for (int i = 0; name && i < MTK_ST_DTYPE_COUNT; i++)
        if (strcmp(name, st_dtypes[i].name) == 0) return (mtk_st_dtype)i;
    return MTK_ST_DTYPE_INVALID;
}

mtk_st_dtype mtk_st_dtype_from_mtk(mtk_dtype dtype)
{
    for (int i = 0; dtype != MTK_DTYPE_UNDEFINED && i < MTK_ST_DTYPE_COUNT; i++)
        if (st_dtypes[i].dtype == dtype) return (mtk_st_dtype)i;
    return MTK_ST_DTYPE_INVALID;
}
