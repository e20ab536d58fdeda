/* mtk load --plan under mpirun: each rank builds the model on meta,
 * checks the plan, materializes only its own slices (mtk_load_slices),
 * and the ranks agree on failure before anything is exchanged, so that an
 * error anywhere is reported on every rank and no rank waits forever.
 * Reports are gathered to rank 0, which prints them; --verify has rank 0
 * load the whole checkpoint and compare every slice of every rank with
 * it, counting how often each element is held (load_plan_verify.c). */
#include "cli/cli.h"
#include "cli/load_plan.h"
#include "cli/mpi/load_plan_verify.h"
#include "core/text.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ERROR_TEXT 2048

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One rank's state through the command. */
typedef struct rank_run {
    const plan_load_args *args;
    int rank, world;
    mtk_ctx *ctx;
    parallel_plan plan;
    mtk_model_info info;
    mtk_module *model;
    mtk_load_slice *slices; /* this rank's, in plan order */
    int64_t nslices;
    mtk_load_result result;
    uint64_t checkpoint_bytes;
    double wall_start, wall_seconds;
} rank_run;

/* The ranks agree: true when `ok` on every rank.  Otherwise every rank
 * learns the first failing rank's error (*failed_rank, and the status and
 * message in `status_out` / `message`), its own when it failed too. */
static bool agree(rank_run *r, bool ok, int *failed_rank, char *status_out, char *message)
{
    int mine = ok ? INT_MAX : r->rank, first = INT_MAX;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == INT_MAX) return true;
    char buf[ERROR_TEXT + 64] = "";
    if (r->rank == first)
        snprintf(buf, sizeof buf, "%s%c%s", mtk_status_name(mtk_ctx_status(r->ctx)), '\0', mtk_ctx_message(r->ctx));
    MPI_Bcast(buf, (int)sizeof buf, MPI_CHAR, first, MPI_COMM_WORLD);
    *failed_rank = first;
    if (!ok) {
        snprintf(status_out, 64, "%.63s", mtk_status_name(mtk_ctx_status(r->ctx)));
        snprintf(message, ERROR_TEXT, "%s", mtk_ctx_message(r->ctx));
    } else {
        snprintf(status_out, 64, "%.63s", buf);
        snprintf(message, ERROR_TEXT, "rank %d failed: %s", first, buf + strlen(buf) + 1);
    }
    return false;
}

/* Prints the agreed error: on stderr on every rank, and on stdout as the
 * one JSON document from rank 0 with --json. */
static int fail(const rank_run *r, int failed_rank, const char *status, const char *message)
{
    if (r->args->json && r->rank == 0) {
        cJSON *details = cJSON_CreateObject();
        cJSON_AddItemToObject(details, "rank", text_json_int(failed_rank));
        return cli_fail(true, status, details, "%s", message);
    }
    /* one write per line: the ranks' stderr meet in mpirun's */
    char line[ERROR_TEXT + 16];
    snprintf(line, sizeof line, "mtk: error: %s\n", message);
    fputs(line, stderr);
    (void)status;
    return CLI_EXIT_ERROR;
}

/* Builds the model, reads and checks the plan, loads this rank's slices. */
static bool load_rank(rank_run *r)
{
    const plan_load_args *a = r->args;
    mtk_model_resolve_options ropts = a->resolve;
    ropts.meta = true;
    r->model = mtk_model_resolve(r->ctx, a->model, &ropts, &r->info);
    if (!r->model || !plan_read(r->ctx, a->plan, &r->plan) || !plan_check(r->ctx, &r->plan, r->model, r->world))
        return false;
    for (int32_t i = 0; i < r->plan.nparams; i++)
        for (int32_t j = 0; j < r->plan.params[i].nslices; j++) r->nslices += r->plan.params[i].slices[j].rank == r->rank;
    r->slices = mtk_ctx_alloc(r->ctx, sizeof *r->slices * (size_t)(r->nslices ? r->nslices : 1));
    if (!r->slices) return false;
    int64_t k = 0;
    for (int32_t i = 0; i < r->plan.nparams; i++)
        for (int32_t j = 0; j < r->plan.params[i].nslices; j++) {
            const plan_slice *s = &r->plan.params[i].slices[j];
            if (s->rank != r->rank) continue;
            mtk_load_slice *out = &r->slices[k++];
            out->name = r->plan.params[i].name;
            out->ndim = s->ndim;
            memcpy(out->offset, s->offset, sizeof s->offset);
            memcpy(out->shape, s->shape, sizeof s->shape);
        }
    mtk_checkpoint *ckpt = mtk_checkpoint_open(r->ctx, a->weights);
    if (!ckpt) return false;
    for (int64_t i = 0; i < mtk_checkpoint_tensor_count(ckpt); i++) {
        const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, NULL);
        r->checkpoint_bytes += info->end - info->begin;
    }
    mtk_load_spec spec = a->spec;
    if (!spec.rules) spec.rules = mtk_model_key_rules(r->info.family);
    bool ok = mtk_load_slices(r->ctx, r->model, ckpt, &spec, r->slices, r->nslices, &r->result);
    mtk_checkpoint_close(ckpt);
    return ok;
}

static cJSON *dims_json(const int64_t *dims, int32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t d = 0; a && d < n; d++) cJSON_AddItemToArray(a, text_json_int(dims[d]));
    return a;
}

/* This rank's report: {"rank", "tensors", "elements", "bytes", "seconds",
 * "wall_seconds", "slices": [{"name", "offset", "shape", "bytes"}]}. */
static cJSON *rank_report(const rank_run *r)
{
    cJSON *o = cJSON_CreateObject(), *list = cJSON_CreateArray();
    cJSON_AddItemToObject(o, "rank", text_json_int(r->rank));
    cJSON_AddItemToObject(o, "tensors", text_json_int(r->result.tensors));
    cJSON_AddItemToObject(o, "elements", text_json_int((int64_t)r->result.parameters));
    cJSON_AddItemToObject(o, "bytes", text_json_int((int64_t)r->result.bytes));
    cJSON_AddNumberToObject(o, "seconds", r->result.seconds);
    cJSON_AddNumberToObject(o, "wall_seconds", r->wall_seconds);
    for (int64_t i = 0; i < r->nslices; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "name", r->slices[i].name);
        cJSON_AddItemToObject(s, "offset", dims_json(r->slices[i].offset, r->slices[i].ndim));
        cJSON_AddItemToObject(s, "shape", dims_json(r->slices[i].shape, r->slices[i].ndim));
        cJSON_AddItemToObject(s, "bytes", text_json_int((int64_t)r->slices[i].bytes));
        cJSON_AddItemToArray(list, s);
    }
    cJSON_AddItemToObject(o, "slices", list);
    return o;
}

/* Gathers every rank's report to rank 0: a JSON array there, NULL
 * elsewhere (and on out of memory). */
static cJSON *gather_reports(const rank_run *r)
{
    cJSON *mine = rank_report(r);
    char *text = mine ? cJSON_PrintUnformatted(mine) : NULL;
    cJSON_Delete(mine);
    int len = text ? (int)strlen(text) + 1 : 1;
    int *lens = r->rank == 0 ? calloc((size_t)r->world, sizeof *lens) : NULL;
    int *displs = r->rank == 0 ? calloc((size_t)r->world, sizeof *displs) : NULL;
    MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = NULL;
    if (r->rank == 0 && lens && displs) {
        size_t total = 0;
        for (int i = 0; i < r->world; i++) {
            displs[i] = (int)total;
            total += (size_t)lens[i];
        }
        all = malloc(total);
    }
    MPI_Gatherv(text ? text : "", len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
    cJSON_free(text);
    cJSON *ranks = NULL;
    if (all) {
        ranks = cJSON_CreateArray();
        for (int i = 0; i < r->world; i++) cJSON_AddItemToArray(ranks, cJSON_Parse(all + displs[i]));
    }
    free(all);
    free(lens);
    free(displs);
    return ranks;
}

static void print_json(const rank_run *r, cJSON *ranks, cJSON *verify)
{
    const plan_load_args *a = r->args;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "model", a->model);
    cJSON_AddStringToObject(doc, "architecture", r->info.architecture ? r->info.architecture : "");
    cJSON_AddStringToObject(doc, "weights", a->weights);
    cJSON_AddStringToObject(doc, "plan", a->plan);
    cJSON_AddItemToObject(doc, "world_size", text_json_int(r->world));
    cJSON_AddItemToObject(doc, "checkpoint_bytes", text_json_int((int64_t)r->checkpoint_bytes));
    cJSON_AddItemToObject(doc, "ranks", ranks);
    if (verify) cJSON_AddItemToObject(doc, "verify", verify);
    else cJSON_AddNullToObject(doc, "verify");
    char *text = cJSON_PrintUnformatted(doc);
    if (text) puts(text);
    cJSON_free(text);
    cJSON_Delete(doc);
}

static void print_text(const rank_run *r, const cJSON *ranks, const cJSON *verify)
{
    char size[32], exact[32];
    printf("%s (%s) from %s, plan %s on %d rank%s\n", r->args->model,
           r->info.architecture ? r->info.architecture : "", r->args->weights, r->args->plan, r->world,
           r->world == 1 ? "" : "s");
    printf("  checkpoint: %s (%s bytes)\n", text_bytes(r->checkpoint_bytes, size, sizeof size),
           text_grouped((int64_t)r->checkpoint_bytes, exact, sizeof exact));
    printf("  %4s  %8s  %18s  %6s  %9s\n", "rank", "tensors", "bytes read", "share", "read time");
    const cJSON *o;
    cJSON_ArrayForEach(o, ranks)
    {
        double bytes = cJSON_GetObjectItem(o, "bytes")->valuedouble;
        printf("  %4d  %8d  %18s  %5.1f%%  %7.3f s\n", cJSON_GetObjectItem(o, "rank")->valueint,
               cJSON_GetObjectItem(o, "tensors")->valueint, text_grouped((int64_t)bytes, exact, sizeof exact),
               r->checkpoint_bytes ? 100.0 * bytes / (double)r->checkpoint_bytes : 0.0,
               cJSON_GetObjectItem(o, "seconds")->valuedouble);
    }
    if (verify) plan_verify_print(verify);
}

int plan_load_run(const plan_load_args *args)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return cli_fail(args->json, "io", NULL, "load: MPI_Init failed (is this run under mpirun?)");
    rank_run r = { .args = args, .wall_start = now_seconds() };
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.world);
    r.ctx = mtk_ctx_new();
    if (!r.ctx) {
        cli_fail(args->json, "out_of_memory", NULL, "out of memory");
        MPI_Abort(MPI_COMM_WORLD, CLI_EXIT_ERROR); /* no context to agree with */
    }
    int failed_rank = 0, status = CLI_EXIT_OK;
    char code[64], message[ERROR_TEXT];
    bool ok = load_rank(&r);
    r.wall_seconds = now_seconds() - r.wall_start;
    plan_verifier *verifier = NULL;
    if (ok && args->verify) { /* rank 0 loads the whole checkpoint before the ranks agree */
        verifier = plan_verify_new(r.ctx, r.rank, &r.plan, r.model, args->model, args->weights, &args->resolve,
                                   &args->spec);
        ok = verifier != NULL;
    }
    if (!agree(&r, ok, &failed_rank, code, message)) {
        status = fail(&r, failed_rank, code, message);
    } else {
        cJSON *ranks = gather_reports(&r);
        cJSON *verify = verifier ? plan_verify_run(verifier, r.slices, r.nslices) : NULL;
        int verified = 1;
        if (r.rank == 0 && verify) verified = cJSON_IsTrue(cJSON_GetObjectItem(verify, "ok"));
        MPI_Bcast(&verified, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (r.rank == 0 && args->json) {
            print_json(&r, ranks, verify); /* takes them */
        } else {
            if (r.rank == 0) print_text(&r, ranks, verify);
            cJSON_Delete(ranks);
            cJSON_Delete(verify);
        }
        if (!verified) {
            if (!args->json || r.rank != 0) fprintf(stderr, "mtk: error: load: --verify failed\n");
            status = CLI_EXIT_ERROR;
        }
    }
    plan_verify_free(verifier);
    mtk_ctx_free(r.ctx);
    MPI_Finalize();
    return status;
}
