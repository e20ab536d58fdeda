/* `mtk shard --search` and the step estimate of one plan (--gpu), shared
 * by cli_shard.c and cli_shard_search.c. */
#ifndef MTK_CLI_SHARD_SEARCH_H
#define MTK_CLI_SHARD_SEARCH_H

#include "mtk/plan.h"

#include <cjson/cJSON.h>
#include <stdio.h>

/* Runs the search for MODEL and prints the best plans (text or JSON).
 * Returns the exit status. */
int cli_shard_search(const char *model, const mtk_shard_search_options *options, bool json);

/* One estimate as a JSON object (the search's `plans` entries). */
cJSON *cli_shard_estimate_json(const mtk_shard_estimate *e);

/* One line: step time and its parts, MFU, peak and headroom. */
void cli_shard_estimate_print(const mtk_shard_estimate *e, FILE *out);

#endif
