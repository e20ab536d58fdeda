/* Python's float repr, for the eval language's printed and JSON output. */
#include "eval/format.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mtk_format_float(double x, char *out, size_t cap)
{
    if (isnan(x)) { snprintf(out, cap, "nan"); return; }
    if (isinf(x)) { snprintf(out, cap, x < 0 ? "-inf" : "inf"); return; }
    if (x == 0) { snprintf(out, cap, signbit(x) ? "-0.0" : "0.0"); return; }
    char sci[40];
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(sci, sizeof sci, "%.*e", precision - 1, x);
        if (strtod(sci, NULL) == x) break;
    }
    /* sci is "-d.ddde+XX": split into sign, digits and exponent */
    const char *p = sci;
    bool negative = *p == '-';
    if (negative) p++;
    char digits[24];
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    int exponent = atoi(p + 1);
    char body[64];
    if (exponent < -4 || exponent >= 16) {
        if (nd == 1) snprintf(body, sizeof body, "%ce%c%02d", digits[0], exponent < 0 ? '-' : '+', abs(exponent));
        else snprintf(body, sizeof body, "%c.%se%c%02d", digits[0], digits + 1, exponent < 0 ? '-' : '+', abs(exponent));
    } else if (exponent < 0) {
        snprintf(body, sizeof body, "0.%.*s%s", -exponent - 1, "0000", digits);
    } else if ((size_t)exponent + 1 >= nd) {
        snprintf(body, sizeof body, "%s%.*s.0", digits, exponent + 1 - (int)nd, "0000000000000000");
    } else {
        snprintf(body, sizeof body, "%.*s.%s", exponent + 1, digits, digits + exponent + 1);
    }
    snprintf(out, cap, "%s%s", negative ? "-" : "", body);
}
