/* Python-style formatting for the layers' extra_repr. */
#ifndef MTK_NN_REPR_H
#define MTK_NN_REPR_H

#include "mtk/core.h"

/* Python's repr of a float: "1e-05", "0.1", "1.0", "0.3333333333333333". */
const char *nn_py_float(double v, char *buf, size_t cap);
/* Python's repr of a tuple of ints: "(3, 3)", "(2,)". */
const char *nn_py_tuple(const int64_t *v, int32_t n, char *buf, size_t cap);

#endif
