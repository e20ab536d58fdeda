/* mtk shard --search: the best parallel plans of a model on N GPUs by the
 * roofline estimate of a step (mtk_shard_search), and why they win. */
#include "cli/cli.h"
#include "cli/cli_shard_search.h"
#include "mtk/mtk.h"

#include <stdio.h>
#include <string.h>

#define GIB (double)(1LL << 30)

static const char *recompute_name(mtk_shard_recompute r)
{
    return r == MTK_RECOMPUTE_FULL ? "full" : r == MTK_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

static const char *sharding_name(const mtk_shard_options *o, char *buf, size_t n)
{
    if (o->fsdp) return "fsdp";
    snprintf(buf, n, "zero-%d", o->zero);
    return buf;
}

cJSON *cli_shard_estimate_json(const mtk_shard_estimate *e)
{
    const mtk_shard_options *o = &e->options;
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "tp", o->tp);
    cJSON_AddNumberToObject(j, "pp", o->pp);
    cJSON_AddNumberToObject(j, "dp", o->dp);
    cJSON_AddNumberToObject(j, "ep", o->ep);
    cJSON_AddNumberToObject(j, "zero", o->zero);
    cJSON_AddBoolToObject(j, "fsdp", o->fsdp);
    cJSON_AddBoolToObject(j, "sp", o->sp);
    cJSON_AddStringToObject(j, "recompute", recompute_name(o->recompute));
    cJSON_AddNumberToObject(j, "micro_batch", (double)o->micro_batch);
    cJSON_AddNumberToObject(j, "micro_batches", (double)e->micro_batches);
    cJSON_AddNumberToObject(j, "step_seconds", e->step_seconds);
    cJSON_AddNumberToObject(j, "compute_seconds", e->compute_seconds);
    cJSON_AddNumberToObject(j, "communication_seconds", e->communication_seconds);
    cJSON_AddNumberToObject(j, "bubble_seconds", e->bubble_seconds);
    cJSON_AddNumberToObject(j, "bubble", e->bubble);
    cJSON_AddNumberToObject(j, "bottleneck_stage", e->bottleneck_stage);
    cJSON_AddNumberToObject(j, "mfu", e->mfu);
    cJSON_AddNumberToObject(j, "recompute_flops", e->recompute_flops);
    cJSON_AddNumberToObject(j, "peak_bytes", (double)e->peak_bytes);
    cJSON_AddNumberToObject(j, "budget_bytes", (double)e->budget_bytes);
    cJSON_AddNumberToObject(j, "headroom_bytes", (double)(e->budget_bytes - e->peak_bytes));
    cJSON_AddBoolToObject(j, "fits", e->fits);
    return j;
}

void cli_shard_estimate_print(const mtk_shard_estimate *e, FILE *out)
{
    fprintf(out,
            "step %.3f s (compute %.3f, communication %.3f, bubble %.3f), MFU %.1f%%, peak %.1f GiB of %.1f GiB "
            "(%s %.1f GiB)\n",
            e->step_seconds, e->compute_seconds, e->communication_seconds, e->bubble_seconds, 100.0 * e->mfu,
            (double)e->peak_bytes / GIB, (double)e->budget_bytes / GIB, e->fits ? "headroom" : "OVER by",
            (double)(e->fits ? e->budget_bytes - e->peak_bytes : e->peak_bytes - e->budget_bytes) / GIB);
    if (e->recompute_flops > 0)
        fprintf(out, "recompute: %.6g FLOPs a step rerun in the backward (in compute, not in MFU)\n",
                e->recompute_flops);
}

static void print_row(int i, const mtk_shard_estimate *e)
{
    const mtk_shard_options *o = &e->options;
    char buf[16];
    printf("%3d %3d %3d %3d %3d  %-7s %-3s %-9s %3lld %9.3f %5.1f%% %8.3f %8.3f %8.3f %8.1f %8.1f\n", i, o->tp, o->pp,
           o->dp, o->ep, sharding_name(o, buf, sizeof buf), o->sp ? "sp" : "-", recompute_name(o->recompute),
           (long long)o->micro_batch, e->step_seconds, 100.0 * e->mfu, e->compute_seconds, e->communication_seconds,
           e->bubble_seconds, (double)e->peak_bytes / GIB, (double)(e->budget_bytes - e->peak_bytes) / GIB);
}

/* Why the best plan wins: where its step goes, and what it saves over
 * the runner-up. */
static void print_why(const mtk_shard_search_result *r)
{
    const mtk_shard_estimate *b = &r->plans[0];
    double s = b->step_seconds;
    printf("\nwhy #1 wins: its step is %.0f%% compute, %.0f%% communication, %.0f%% pipeline bubble, with "
           "%.1f GiB of memory headroom a GPU\n",
           100.0 * b->compute_seconds / s, 100.0 * b->communication_seconds / s, 100.0 * b->bubble_seconds / s,
           (double)(b->budget_bytes - b->peak_bytes) / GIB);
    if (r->nplans >= 2 && r->plans[1].step_seconds == s)
        printf("  ties #2 on time and needs %.1f GiB less a GPU\n",
               (double)(r->plans[1].peak_bytes - b->peak_bytes) / GIB);
    /* against the next plan on another mesh: what the mesh buys */
    for (int32_t i = 1; i < r->nplans; i++) {
        const mtk_shard_estimate *n = &r->plans[i];
        const mtk_shard_options *x = &n->options, *o = &b->options;
        if (x->tp == o->tp && x->pp == o->pp && x->dp == o->dp && x->ep == o->ep) continue;
        printf("  vs #%d (tp %d pp %d dp %d ep %d): %.3f s faster a step (compute %+.3f s, communication %+.3f s, "
               "bubble %+.3f s), %+.1f GiB of peak memory\n",
               i + 1, x->tp, x->pp, x->dp, x->ep, n->step_seconds - s, b->compute_seconds - n->compute_seconds,
               b->communication_seconds - n->communication_seconds, b->bubble_seconds - n->bubble_seconds,
               (double)(b->peak_bytes - n->peak_bytes) / GIB);
        return;
    }
}

static cJSON *gpu_json(const mtk_shard_search_options *so)
{
    cJSON *g = cJSON_CreateObject();
    if (!g) return NULL;
    cJSON_AddStringToObject(g, "name", so->gpu.name ? so->gpu.name : "");
    cJSON_AddNumberToObject(g, "tflops", so->gpu.tflops);
    cJSON_AddNumberToObject(g, "memory_gib", so->gpu.memory_gib);
    cJSON_AddNumberToObject(g, "nvlink_gbps", so->gpu.nvlink_gbps);
    cJSON_AddNumberToObject(g, "ib_gbps", so->gpu.ib_gbps);
    cJSON_AddNumberToObject(g, "gpus_per_node", so->gpu.gpus_per_node);
    cJSON_AddStringToObject(g, "source", so->gpu.source ? so->gpu.source : "");
    return g;
}

static int print_json(const char *model, const mtk_shard_search_options *so, const mtk_shard_search_result *r)
{
    cJSON *root = cJSON_CreateObject(), *plans = cJSON_CreateArray();
    if (!root || !plans) {
        cJSON_Delete(root), cJSON_Delete(plans);
        return cli_fail(true, "out_of_memory", NULL, "shard: out of memory");
    }
    cJSON_AddStringToObject(root, "model", model);
    cJSON_AddNumberToObject(root, "gpus", so->gpus);
    cJSON_AddItemToObject(root, "gpu", gpu_json(so));
    cJSON_AddNumberToObject(root, "efficiency", so->efficiency);
    cJSON_AddNumberToObject(root, "seq", (double)so->seq);
    cJSON_AddNumberToObject(root, "global_batch", (double)so->global_batch);
    cJSON_AddNumberToObject(root, "searched", (double)r->searched);
    cJSON_AddNumberToObject(root, "feasible", (double)r->feasible);
    cJSON_AddNumberToObject(root, "seconds", r->seconds);
    cJSON_AddNumberToObject(root, "cpu_seconds", r->cpu_seconds);
    cJSON_AddNumberToObject(root, "analysis_seconds", r->analysis_seconds);
    cJSON_AddNumberToObject(root, "scaled", r->scaled);
    for (int32_t i = 0; i < r->nplans; i++) cJSON_AddItemToArray(plans, cli_shard_estimate_json(&r->plans[i]));
    cJSON_AddItemToObject(root, "plans", plans);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return cli_fail(true, "out_of_memory", NULL, "shard: out of memory");
    puts(text);
    cJSON_free(text);
    return CLI_EXIT_OK;
}

int cli_shard_search(const char *model, const mtk_shard_search_options *so, bool json)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(json, "out_of_memory", NULL, "shard: out of memory");
    mtk_shard_search_result *r = mtk_shard_search(ctx, model, so);
    if (!r) {
        int rc = cli_fail_ctx(json, ctx);
        mtk_ctx_free(ctx);
        return rc;
    }
    int rc = CLI_EXIT_OK;
    if (json) {
        rc = print_json(model, so, r);
        if (rc == CLI_EXIT_OK && r->nplans == 0) rc = CLI_EXIT_ERROR;
    } else {
        printf("%s on %d x %s (%.0f TFLOP/s bf16 at %.0f%%, %.0f GiB, NVLink %.0f GB/s, IB %.1f GB/s, %d a node), "
               "%lld x %lld tokens a step\n",
               model, so->gpus, so->gpu.name ? so->gpu.name : "gpu", so->gpu.tflops, 100.0 * so->efficiency,
               so->gpu.memory_gib, so->gpu.nvlink_gbps, so->gpu.ib_gbps, so->gpu.gpus_per_node,
               (long long)so->global_batch, (long long)so->seq);
        printf("searched %lld configurations in %.1f ms (%.1f ms of processor time; analyses: %.2f s, %d of them "
               "scaled from two traced ones); %lld fit\n\n",
               (long long)r->searched, 1e3 * r->seconds, 1e3 * r->cpu_seconds, r->analysis_seconds, r->scaled,
               (long long)r->feasible);
        if (r->nplans == 0) {
            printf("no configuration fits in %.1f GiB a GPU\n", so->gpu.memory_gib);
            mtk_ctx_free(ctx);
            return CLI_EXIT_ERROR;
        }
        printf("  #  tp  pp  dp  ep  shard   sp  recompute  mb  step (s)   MFU  compute     comm   bubble peak GiB"
               " headroom\n");
        for (int32_t i = 0; i < r->nplans; i++) print_row(i + 1, &r->plans[i]);
        print_why(r);
    }
    mtk_ctx_free(ctx);
    return rc;
}
