/* The report of a streamed run (--max-ram of run and generate): the
 * stream's sizes and what its prefetch did, as text or JSON. */
#include "cli/cli.h"
#include "core/text.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <stdio.h>

cJSON *cli_stream_json(const mtk_stream *stream)
{
    if (!stream) return cJSON_CreateNull();
    mtk_stream_stats st;
    mtk_stream_get_stats(stream, &st);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "budget", text_json_int((int64_t)st.budget));
    cJSON_AddItemToObject(o, "total_bytes", text_json_int((int64_t)st.total_bytes));
    cJSON_AddItemToObject(o, "fixed_bytes", text_json_int((int64_t)st.fixed_bytes));
    cJSON_AddItemToObject(o, "layer_bytes", text_json_int((int64_t)st.layer_bytes));
    cJSON_AddStringToObject(o, "layers", st.layers);
    cJSON_AddItemToObject(o, "layer_count", text_json_int(st.layer_count));
    cJSON_AddBoolToObject(o, "prefetch", st.prefetch);
    cJSON_AddBoolToObject(o, "releases", st.releases);
    cJSON_AddItemToObject(o, "layer_calls", text_json_int(st.layer_calls));
    cJSON_AddItemToObject(o, "prefetched", text_json_int(st.prefetched));
    cJSON_AddNumberToObject(o, "wait_seconds", st.wait_seconds);
    cJSON_AddItemToObject(o, "kept_layers", text_json_int(st.kept_layers));
    cJSON_AddItemToObject(o, "brought_in", text_json_int(st.brought_in));
    cJSON_AddNumberToObject(o, "bring_in_seconds", st.bring_in_seconds);
    cJSON_AddNumberToObject(o, "release_seconds", st.release_seconds);
    cJSON_AddStringToObject(o, "fill", st.fill);
    cJSON_AddNumberToObject(o, "map_probe_seconds", st.map_probe_seconds);
    cJSON_AddNumberToObject(o, "read_probe_seconds", st.read_probe_seconds);
    cJSON_AddItemToObject(o, "prefill_threads", text_json_int(st.prefill_threads));
    cJSON_AddItemToObject(o, "decode_threads", text_json_int(st.decode_threads));
    cJSON_AddItemToObject(o, "decode_calls", text_json_int(st.decode_calls));
    cJSON_AddBoolToObject(o, "decode_inline", st.decode_inline);
    return o;
}

void cli_stream_text(const mtk_stream *stream)
{
    if (!stream) return;
    mtk_stream_stats st;
    mtk_stream_get_stats(stream, &st);
    double mib = 1024.0 * 1024.0;
    printf("  stream:  budget %.1f MiB: %.1f MiB outside %d layers of %s + %.1f MiB per layer (model %.1f MiB);"
           " %s%s, %d kept, %s fill; %lld of %lld layers ready, %lld brought in (%.3f s cpu, %.3f s to drop), %.3f s waited\n",
           (double)st.budget / mib, (double)st.fixed_bytes / mib, (int)st.layer_count, st.layers,
           (double)st.layer_bytes / mib, (double)st.total_bytes / mib, st.prefetch ? "prefetch" : "no prefetch",
           st.releases ? "" : ", all kept (the budget holds the model)", (int)st.kept_layers, st.fill,
           (long long)st.prefetched, (long long)st.layer_calls, (long long)st.brought_in, st.bring_in_seconds,
           st.release_seconds, st.wait_seconds);
    if (st.prefill_threads > 0 || st.decode_threads > 0)
        printf("  threads: %d for the prefill's layers, %d for a decode step's (%lld layer calls%s)\n",
               (int)st.prefill_threads, (int)st.decode_threads, (long long)st.decode_calls,
               st.decode_inline ? ", layers brought in by them: no core for the prefetch" : "");
}
