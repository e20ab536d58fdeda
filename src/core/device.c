/* Device names: meta, cpu, and cuda:N (reserved). */
#include "mtk/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mtk_device_str(mtk_device device, char *buf, size_t cap)
{
    if (device == MTK_DEVICE_META) snprintf(buf, cap, "meta");
    else if (device == MTK_DEVICE_CPU) snprintf(buf, cap, "cpu");
    else if (device >= MTK_DEVICE_CUDA(0)) snprintf(buf, cap, "cuda:%d", (int)(device - MTK_DEVICE_CUDA(0)));
    else snprintf(buf, cap, "unknown");
    return buf;
}

bool mtk_device_parse(const char *text, mtk_device *out)
{
    if (!text) return false;
    if (strcmp(text, "meta") == 0) { *out = MTK_DEVICE_META; return true; }
    if (strcmp(text, "cpu") == 0) { *out = MTK_DEVICE_CPU; return true; }
    if (strcmp(text, "cuda") == 0) { *out = MTK_DEVICE_CUDA(0); return true; }
    if (strncmp(text, "cuda:", 5) == 0 && text[5] >= '0' && text[5] <= '9') {
        char *end;
        long n = strtol(text + 5, &end, 10);
        if (*end || n < 0 || n > 1000) return false;
        *out = MTK_DEVICE_CUDA((int)n);
        return true;
    }
    return false;
}
