/* mtk summary for diffusers pipelines (cli_summary_pipeline.c). */
#ifndef MTK_CLI_SUMMARY_PIPELINE_H
#define MTK_CLI_SUMMARY_PIPELINE_H

#include "mtk/diffusion.h"

#include <stdbool.h>

/* "HxW" (positive, at most 2^20 each); false for anything else. */
bool cli_parse_image(const char *text, int64_t *height, int64_t *width);
/* Resolves PIPELINE at the options' image and prints each component's
 * calls (text, or one JSON document).  Returns the exit status. */
int cli_summary_pipeline(const char *name, const mtk_pipeline_options *options, bool json);

#endif
