/* mtk load --plan --verify: rank 0 loads the whole checkpoint as a plain
 * `mtk load` does (renames, merges and dtype included), then receives
 * every slice of every rank in plan order and compares it, row by row,
 * with the same box of the whole tensor, counting in one byte per element
 * how many ranks hold it.  The slices travel in plan order from each rank
 * (MPI's order between one pair of ranks is the order of the sends), so
 * no rank waits on another out of turn. */
#include "cli/mpi/load_plan_verify.h"
#include "core/text.h"
#include "mtk/mtk.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROBLEMS 50
#define SEND_CHUNK ((size_t)1 << 30) /* bytes per message: MPI counts are int */

struct plan_verifier {
    mtk_ctx *ctx;
    int rank;
    const parallel_plan *plan;
    mtk_module *meta, *full; /* full: rank 0 only */
    uint8_t *buffer;         /* rank 0: the biggest slice */
    cJSON *problems;
    int64_t nproblems;
};

static size_t slice_bytes(const plan_slice *s, size_t elem)
{
    return (size_t)mtk_shape_numel(s->shape, s->ndim) * elem;
}

plan_verifier *plan_verify_new(mtk_ctx *ctx, int rank, const parallel_plan *plan, mtk_module *meta_model,
                               const char *model, const char *weights, const mtk_model_resolve_options *resolve,
                               const mtk_load_spec *spec)
{
    plan_verifier *v = calloc(1, sizeof *v);
    if (!v) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "load: --verify: out of memory");
        return NULL;
    }
    *v = (plan_verifier){ .ctx = ctx, .rank = rank, .plan = plan, .meta = meta_model };
    if (rank != 0) return v;
    mtk_load_result r;
    v->full = mtk_model_load(ctx, model, weights, resolve, spec, NULL, &r);
    size_t biggest = 1;
    for (int32_t i = 0; v->full && i < plan->nparams; i++) {
        size_t elem = mtk_dtype_size(mtk_module_find_tensor(meta_model, plan->params[i].name)->dtype);
        for (int32_t j = 0; j < plan->params[i].nslices; j++) {
            size_t n = slice_bytes(&plan->params[i].slices[j], elem);
            if (n > biggest) biggest = n;
        }
    }
    v->buffer = v->full ? malloc(biggest) : NULL;
    v->problems = cJSON_CreateArray();
    if (!v->full || !v->buffer || !v->problems) {
        if (v->full) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "load: --verify: out of memory");
        plan_verify_free(v);
        return NULL;
    }
    return v;
}

void plan_verify_free(plan_verifier *v)
{
    if (!v) return;
    free(v->buffer);
    cJSON_Delete(v->problems);
    free(v);
}

static void problem(plan_verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(plan_verifier *v, const char *fmt, ...)
{
    if (v->nproblems++ >= MAX_PROBLEMS) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cJSON_AddItemToArray(v->problems, cJSON_CreateString(text));
}

static void send_slice(const mtk_load_slice *s)
{
    const uint8_t *p = mtk_tensor_data(s->tensor);
    size_t n = mtk_tensor_nbytes(s->tensor);
    for (size_t done = 0; done < n; done += SEND_CHUNK) {
        size_t part = n - done < SEND_CHUNK ? n - done : SEND_CHUNK;
        MPI_Send(p + done, (int)part, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
}

static void recv_slice(uint8_t *dst, size_t n, int from)
{
    for (size_t done = 0; done < n; done += SEND_CHUNK) {
        size_t part = n - done < SEND_CHUNK ? n - done : SEND_CHUNK;
        MPI_Recv(dst + done, (int)part, MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* Compares slice `s` (its bytes: `data`, contiguous) with the same box of
 * the whole tensor `full`, and counts its elements in `held` (one byte
 * per element of `full`, contiguous order, saturating).  Returns the
 * number of differing rows. */
static int64_t compare_slice(const mtk_tensor *full, const plan_slice *s, const uint8_t *data, uint8_t *held)
{
    int32_t n = full->ndim;
    size_t elem = mtk_dtype_size(full->dtype);
    const uint8_t *base = mtk_tensor_data(full);
    int64_t contiguous[MTK_MAX_DIMS], index[MTK_MAX_DIMS] = { 0 };
    mtk_contiguous_strides(full->shape, n, contiguous);
    int64_t row = n ? s->shape[n - 1] : 1, rows = row ? mtk_shape_numel(s->shape, s->ndim) / row : 0;
    int64_t differing = 0;
    for (int64_t k = 0; k < rows; k++) {
        int64_t at = 0, count_at = 0;
        for (int32_t d = 0; d < n; d++) {
            int64_t i = s->offset[d] + (d < n - 1 ? index[d] : 0);
            at += i * full->stride[d];
            count_at += i * contiguous[d];
        }
        const uint8_t *mine = data + (size_t)(k * row) * elem;
        bool same = true;
        if (n == 0 || full->stride[n - 1] == 1) {
            same = memcmp(mine, base + (size_t)at * elem, (size_t)row * elem) == 0;
        } else {
            for (int64_t j = 0; j < row && same; j++)
                same = memcmp(mine + (size_t)j * elem, base + (size_t)(at + j * full->stride[n - 1]) * elem, elem) == 0;
        }
        differing += !same;
        for (int64_t j = 0; j < row; j++)
            if (held[count_at + j] < UINT8_MAX) held[count_at + j]++;
        for (int32_t d = n - 2; d >= 0 && ++index[d] == s->shape[d]; d--) index[d] = 0;
    }
    return differing;
}

/* After every slice of `p`: each element held, and once unless replicated. */
static void check_coverage(plan_verifier *v, const plan_param *p, const uint8_t *held, int64_t numel)
{
    int64_t none = 0, several = 0;
    for (int64_t i = 0; i < numel; i++) {
        none += held[i] == 0;
        several += held[i] > 1;
    }
    if (none)
        problem(v, "'%s': %lld of its %lld elements are held by no rank", p->name, (long long)none, (long long)numel);
    if (several && !strstr(p->placement, "Replicate"))
        problem(v, "'%s': %lld of its %lld elements are held by more than one rank, but its placement (%s) has no "
                   "Replicate", p->name, (long long)several, (long long)numel, *p->placement ? p->placement : "none");
}

/* Every tensor of the checkpoint (the meta model's state dict: a tied
 * name counts as held when its tensor is) must be in the plan. */
static void check_all_planned(plan_verifier *v)
{
    mtk_state_dict *sd = mtk_module_state_dict(v->meta);
    for (int32_t i = 0; sd && i < mtk_state_dict_count(sd); i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        bool planned = false;
        for (int32_t j = 0; j < v->plan->nparams && !planned; j++)
            planned = mtk_state_dict_get(sd, v->plan->params[j].name) == t;
        if (!planned) problem(v, "'%s' is in the checkpoint but no rank holds it", name);
    }
}

cJSON *plan_verify_run(plan_verifier *v, const mtk_load_slice *slices, int64_t nslices)
{
    const parallel_plan *plan = v->plan;
    int64_t mine = 0, nchecked = 0;
    uint64_t compared = 0;
    for (int32_t i = 0; i < plan->nparams; i++) {
        const plan_param *p = &plan->params[i];
        mtk_tensor *full = v->rank == 0 ? mtk_module_find_tensor(v->full, p->name) : NULL;
        size_t elem = mtk_dtype_size(mtk_module_find_tensor(v->meta, p->name)->dtype); /* plan_check found it */
        int64_t numel = full ? mtk_tensor_numel(full) : 0;
        uint8_t *held = full ? calloc((size_t)(numel ? numel : 1), 1) : NULL;
        if (v->rank == 0 && !full) problem(v, "'%s': the whole load has no such tensor", p->name);
        if (full && !held) problem(v, "'%s': out of memory to count its elements", p->name);
        for (int32_t j = 0; j < p->nslices; j++) {
            const plan_slice *s = &p->slices[j];
            if (v->rank != 0) {
                if (s->rank == v->rank && mine < nslices) send_slice(&slices[mine++]);
                continue;
            }
            size_t n = slice_bytes(s, elem);
            const uint8_t *data = v->buffer;
            if (s->rank == 0) data = mtk_tensor_data(slices[mine++].tensor);
            else recv_slice(v->buffer, n, s->rank);
            if (!held) continue;
            nchecked++;
            compared += n;
            int64_t rows = compare_slice(full, s, data, held);
            if (rows)
                problem(v, "'%s': the slice of rank %d differs from the checkpoint in %lld row%s", p->name, s->rank,
                        (long long)rows, rows == 1 ? "" : "s");
        }
        if (held) check_coverage(v, p, held, numel);
        free(held);
    }
    if (v->rank != 0) return NULL;
    (void)nslices;
    check_all_planned(v);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", v->nproblems == 0);
    cJSON_AddItemToObject(o, "tensors", text_json_int(plan->nparams));
    cJSON_AddItemToObject(o, "slices", text_json_int(nchecked));
    cJSON_AddItemToObject(o, "bytes_compared", text_json_int((int64_t)compared));
    cJSON_AddItemToObject(o, "problem_count", text_json_int(v->nproblems));
    cJSON_AddItemToObject(o, "problems", v->problems);
    v->problems = NULL;
    return o;
}

/* A number of a report, written as a number or raw digits. */
static int64_t member(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    if (cJSON_IsRaw(v)) return strtoll(v->valuestring, NULL, 10);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

void plan_verify_print(const cJSON *report)
{
    char exact[32];
    const cJSON *problems = cJSON_GetObjectItem(report, "problems"), *p;
    if (cJSON_IsTrue(cJSON_GetObjectItem(report, "ok"))) {
        printf("  verify: every slice equals the checkpoint bit for bit; the slices cover every tensor "
               "(%lld tensors, %lld slices, %s bytes compared)\n",
               (long long)member(report, "tensors"), (long long)member(report, "slices"),
               text_grouped(member(report, "bytes_compared"), exact, sizeof exact));
        return;
    }
    int64_t n = member(report, "problem_count");
    printf("  verify: FAILED, %lld problem%s%s:\n", (long long)n, n == 1 ? "" : "s",
           n > MAX_PROBLEMS ? " (the first listed)" : "");
    cJSON_ArrayForEach(p, problems) printf("    %s\n", p->valuestring);
}
