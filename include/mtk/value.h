/*
 * mtk values: the boxed arguments and results of ops called by name (the
 * op table, `mtk eval`).  A value is a small tagged union; lists point into
 * arena memory of the context that made them.
 */
#ifndef MTK_VALUE_H
#define MTK_VALUE_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mtk_value_kind {
    MTK_VALUE_NONE = 0,
    MTK_VALUE_BOOL,
    MTK_VALUE_INT,
    MTK_VALUE_FLOAT,
    MTK_VALUE_STRING,
    MTK_VALUE_DTYPE,
    MTK_VALUE_DEVICE,
    MTK_VALUE_TENSOR,
    MTK_VALUE_LIST,  /* [a, b]  */
    MTK_VALUE_TUPLE  /* (a, b)  */
} mtk_value_kind;

typedef struct mtk_value {
    mtk_value_kind kind;
    union {
        bool b;
        int64_t i;
        double f;
        const char *s;          /* arena or static string               */
        mtk_dtype dtype;
        mtk_device device;
        mtk_tensor *tensor;     /* NULL only for a failed op's result    */
        struct {
            struct mtk_value *items; /* arena array of `count` values    */
            int32_t count;
            bool is_size;            /* TUPLE of ints that is a torch.Size
                                        (x.shape): Python prints it
                                        torch.Size([3, 4])               */
        } list;
    } as;
} mtk_value;

static inline mtk_value mtk_value_none(void) { mtk_value v; v.kind = MTK_VALUE_NONE; v.as.i = 0; return v; }
static inline mtk_value mtk_value_bool(bool b) { mtk_value v; v.kind = MTK_VALUE_BOOL; v.as.b = b; return v; }
static inline mtk_value mtk_value_int(int64_t i) { mtk_value v; v.kind = MTK_VALUE_INT; v.as.i = i; return v; }
static inline mtk_value mtk_value_float(double f) { mtk_value v; v.kind = MTK_VALUE_FLOAT; v.as.f = f; return v; }
static inline mtk_value mtk_value_string(const char *s) { mtk_value v; v.kind = MTK_VALUE_STRING; v.as.s = s; return v; }
static inline mtk_value mtk_value_dtype(mtk_dtype d) { mtk_value v; v.kind = MTK_VALUE_DTYPE; v.as.dtype = d; return v; }
static inline mtk_value mtk_value_device(mtk_device d) { mtk_value v; v.kind = MTK_VALUE_DEVICE; v.as.device = d; return v; }
static inline mtk_value mtk_value_tensor(mtk_tensor *t) { mtk_value v; v.kind = MTK_VALUE_TENSOR; v.as.tensor = t; return v; }

/* A list (or tuple) value of `count` items in the arena; items start as
 * None.  NULL items and an error on out of memory (the value is None). */
MTK_API mtk_value mtk_value_list(mtk_ctx *ctx, int32_t count, bool is_tuple);

/* A list value of ints (shape-like arguments), copied into the arena. */
MTK_API mtk_value mtk_value_int_list(mtk_ctx *ctx, const int64_t *items, int32_t count);

/* True for BOOL, INT and FLOAT: a Python number. */
MTK_API bool mtk_value_is_number(const mtk_value *v);

/* The number as a double (bool is 0/1).  Call on numbers only. */
MTK_API double mtk_value_as_double(const mtk_value *v);

/* Reads an int-list argument: an INT (one item) or a LIST/TUPLE of INTs
 * (bools are refused; the binder has already made a bool after a list's
 * first item an int, as PyTorch reads it).  At most `cap`
 * items.  On a mismatch sets MTK_ERR_INVALID_ARGUMENT naming op and arg
 * and returns -1; else returns the count. */
MTK_API int32_t mtk_value_to_ints(mtk_ctx *ctx, const mtk_value *v, int64_t *out, int32_t cap,
                                  const char *op, const char *arg);

/* Short description of a value's type for messages: "int", "Tensor",
 * "list", ... */
MTK_API const char *mtk_value_type_name(const mtk_value *v);

#ifdef __cplusplus
}
#endif
#endif /* MTK_VALUE_H */
