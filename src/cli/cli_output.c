/* The one error shape of every command (cli_fail). */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char oom_json[] = "{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of memory\"}}";

static int fail_v(bool json, const char *code, cJSON *details, const char *fmt, va_list ap)
{
    char message[2048];
    vsnprintf(message, sizeof message, fmt, ap);
    if (!json) {
        cJSON_Delete(details);
        cli_error("%s", message);
        return CLI_EXIT_ERROR;
    }
    cJSON *root = cJSON_CreateObject(), *error = cJSON_CreateObject();
    bool ok = root && error && cJSON_AddStringToObject(error, "code", code) &&
              cJSON_AddStringToObject(error, "message", message);
    while (ok && details && details->child) {
        cJSON *member = cJSON_DetachItemViaPointer(details, details->child);
        ok = cJSON_AddItemToObject(error, member->string, member);
        if (!ok) cJSON_Delete(member);
    }
    cJSON_Delete(details);
    char *text = NULL;
    if (ok && cJSON_AddItemToObject(root, "error", error)) {
        error = NULL;
        text = cJSON_PrintUnformatted(root);
    }
    cJSON_Delete(error);
    cJSON_Delete(root);
    puts(text ? text : oom_json);
    cJSON_free(text);
    return CLI_EXIT_ERROR;
}

int cli_fail(bool json, const char *code, cJSON *details, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int status = fail_v(json, code, details, fmt, ap);
    va_end(ap);
    return status;
}

int cli_fail_ctx(bool json, mtk_ctx *ctx)
{
    if (!ctx) return cli_fail(json, "out_of_memory", NULL, "out of memory");
    return cli_fail(json, mtk_status_name(mtk_ctx_status(ctx)), NULL, "%s", mtk_ctx_message(ctx));
}
