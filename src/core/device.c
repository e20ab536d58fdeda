/* Device names: meta, cpu, and cuda:N (reserved). */
#include "mtk/core.h"

#include <stdio.h>
#include <string.h>

const char *mtk_device_str(mtk_device device, char *buf, size_t cap)
{
    if (device == MTK_DEVICE_META) snprintf(buf, cap, "meta");
    else if (device == MTK_DEVICE_CPU) snprintf(buf, cap, "cpu");
    else if (device >= MTK_DEVICE_CUDA(0)) snprintf(buf, cap, "cuda:%d", (int)(device - MTK_DEVICE_CUDA(0)));
    else snprintf(buf, cap, "unknown");
    return buf;
}

/* A device index as PyTorch's device strings spell it: decimal digits,
 * no sign, no leading zero (but "0"), at most `max`. */
static bool parse_index(const char *text, long max, long *out)
{
    if (!(text[0] >= '0' && text[0] <= '9') || (text[0] == '0' && text[1] != '\0')) return false;
    long n = 0;
    for (const char *p = text; *p; p++) {
        if (!(*p >= '0' && *p <= '9')) return false;
        n = n * 10 + (*p - '0');
        if (n > max) return false;
    }
    *out = n;
    return true;
}

bool mtk_device_parse(const char *text, mtk_device *out)
{
    static const struct { const char *type; mtk_device device; } types[] = {
        { "meta", MTK_DEVICE_META }, { "cpu", MTK_DEVICE_CPU }, { "cuda", MTK_DEVICE_CUDA(0) },
    };
    if (!text) return false;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t n = strlen(types[i].type);
        if (strncmp(text, types[i].type, n) != 0) continue;
        if (text[n] == '\0') { *out = types[i].device; return true; }
        long index;
        if (text[n] != ':') return false;
        /* meta:N and cpu:N mean meta and cpu (PyTorch accepts and drops the index) */
        bool cuda = types[i].device == MTK_DEVICE_CUDA(0);
        if (!parse_index(text + n + 1, cuda ? 1000 : 2147483647L, &index)) return false;
        *out = cuda ? MTK_DEVICE_CUDA((int)index) : types[i].device;
        return true;
    }
    return false;
}
