/* Token ids given on the command line: "1,2,3;4,5,6", one row per
 * sequence (cli_ids_read, cli.h). */
#include "cli/cli.h"
#include "mtk/mtk.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

mtk_tensor *cli_ids_read(mtk_ctx *ctx, const char *spec, const char *what)
{
    if (!spec || !*spec) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: no ids given (expected e.g. 1,2,3;4,5,6)", what);
        return NULL;
    }
    /* first pass: the shape */
    int64_t rows = 1, cols = -1, in_row = 0;
    for (const char *p = spec;; p++) {
        if (*p == ',' || *p == ';' || *p == '\0') in_row++;
        if (*p == ';' || *p == '\0') {
            if (cols >= 0 && in_row != cols) {
                mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: row %lld has %lld ids, row 1 has %lld (every row "
                          "must be as long; pad on the left and pass --attention-mask)", what, (long long)rows,
                          (long long)in_row, (long long)cols);
                return NULL;
            }
            cols = in_row;
            in_row = 0;
            if (*p == '\0') break;
            rows++;
        }
    }
    int64_t shape[2] = { rows, cols };
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_CPU)) return NULL;
    mtk_tensor *t = mtk_empty(ctx, shape, 2, MTK_INT64);
    mtk_ctx_pop_device(ctx);
    if (!t) return NULL;
    int64_t *data = mtk_tensor_data(t);
    const char *p = spec;
    for (int64_t i = 0; i < rows * cols; i++) {
        while (isspace((unsigned char)*p)) p++;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        while (isspace((unsigned char)*end)) end++;
        if (end == p || errno || (*end != ',' && *end != ';' && *end != '\0')) {
            size_t n = strcspn(p, ",;");
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: '%.*s' is not an integer (expected e.g. 1,2,3;4,5,6)", what,
                      (int)(n > 40 ? 40 : n), p);
            return NULL;
        }
        data[i] = v;
        p = *end ? end + 1 : end;
    }
    return t;
}
