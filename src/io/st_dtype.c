/* The safetensors dtype table: names, sizes and mtk dtypes, in the
 * format's own order. */
#include "mtk/io.h"

#include <string.h>

/* A row with an mtk dtype takes its name from the dtype table (its
 * st_name column); only the unsigned types mtk lacks name themselves. */
static const struct {
    mtk_dtype dtype; /* MTK_DTYPE_UNDEFINED: no mtk dtype (unsigned 16/32/64) */
    size_t size;
    const char *name; /* only without an mtk dtype */
} st_dtypes[MTK_ST_DTYPE_COUNT] = {
    [MTK_ST_BOOL] = { MTK_BOOL, 1, NULL },
    [MTK_ST_U8] = { MTK_UINT8, 1, NULL },
    [MTK_ST_I8] = { MTK_INT8, 1, NULL },
    [MTK_ST_F8_E5M2] = { MTK_FLOAT8_E5M2, 1, NULL },
    [MTK_ST_F8_E4M3] = { MTK_FLOAT8_E4M3FN, 1, NULL },
    [MTK_ST_I16] = { MTK_INT16, 2, NULL },
    [MTK_ST_U16] = { MTK_DTYPE_UNDEFINED, 2, "U16" },
    [MTK_ST_F16] = { MTK_FLOAT16, 2, NULL },
    [MTK_ST_BF16] = { MTK_BFLOAT16, 2, NULL },
    [MTK_ST_I32] = { MTK_INT32, 4, NULL },
    [MTK_ST_U32] = { MTK_DTYPE_UNDEFINED, 4, "U32" },
    [MTK_ST_F32] = { MTK_FLOAT32, 4, NULL },
    [MTK_ST_F64] = { MTK_FLOAT64, 8, NULL },
    [MTK_ST_I64] = { MTK_INT64, 8, NULL },
    [MTK_ST_U64] = { MTK_DTYPE_UNDEFINED, 8, "U64" },
};

static bool valid(mtk_st_dtype d) { return (int)d >= 0 && d < MTK_ST_DTYPE_COUNT; }

const char *mtk_st_dtype_name(mtk_st_dtype d)
{
    if (!valid(d)) return "invalid";
    const mtk_dtype_info *info = mtk_dtype_get(st_dtypes[d].dtype);
    return info ? info->st_name : st_dtypes[d].name;
}
size_t mtk_st_dtype_size(mtk_st_dtype d) { return valid(d) ? st_dtypes[d].size : 0; }
mtk_dtype mtk_st_dtype_to_mtk(mtk_st_dtype d) { return valid(d) ? st_dtypes[d].dtype : MTK_DTYPE_UNDEFINED; }

mtk_st_dtype mtk_st_dtype_from_name(const char *name)
{
    for (int i = 0; name && i < MTK_ST_DTYPE_COUNT; i++)
        if (strcmp(name, mtk_st_dtype_name((mtk_st_dtype)i)) == 0) return (mtk_st_dtype)i;
    return MTK_ST_DTYPE_INVALID;
}

mtk_st_dtype mtk_st_dtype_from_mtk(mtk_dtype dtype)
{
    for (int i = 0; dtype != MTK_DTYPE_UNDEFINED && i < MTK_ST_DTYPE_COUNT; i++)
        if (st_dtypes[i].dtype == dtype) return (mtk_st_dtype)i;
    return MTK_ST_DTYPE_INVALID;
}
