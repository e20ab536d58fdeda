/* Number formatting shared by the repr and JSON writers. */
#ifndef MTK_EVAL_FORMAT_H
#define MTK_EVAL_FORMAT_H

#include <stddef.h>

/* Python's repr(float) of x into out (cap >= 32): the shortest digits that
 * read back to the same double, "1e-05"/"1e+16" exponent form outside
 * [1e-4, 1e16), "inf", "-inf", "nan", "-0.0". */
void mtk_format_float(double x, char *out, size_t cap);

#endif
