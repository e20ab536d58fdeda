/* plan_probe: traces zoo models for the planner (mtk_plan_trace_model)
 * and prints what the saved-activations oracle (test_saved_oracle.py)
 * compares.
 *
 * Reads lines "MODEL | BxS | DTYPE | ATTENTION | DEVICE_KIND | LOSS [| nodes]"
 * (MODEL a built-in name or a config.json path; DTYPE a dtype name or
 * "config"; ATTENTION eager, sdpa or default; DEVICE_KIND cpu or cuda;
 * LOSS "loss" for labels=input_ids or "noloss") in training mode, and
 * prints one JSON object per line:
 *   {"saved_bytes": N, "modules": {name: bytes first saved in it, the
 *    loss's in the root ""}, "layers": [module names], "nodes": [[op,
 *    module, [[kind, bytes, storage]...]]...] (with "nodes")}
 * or {"error": message}.  Each line runs in its own context. */
#include "mtk/mtk.h"
#include "mtk/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && strchr(" \t\r\n", s[n - 1])) s[--n] = '\0';
    return s;
}

static void print_string(const char *s)
{
    putchar('"');
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s >= 0x20) putchar(*s);
    }
    putchar('"');
}

static const char *module_name(const mtk_graph *g, int32_t m)
{
    const mtk_trace_module *tm = mtk_trace_module_at(mtk_graph_trace(g), m);
    return tm ? tm->name : "<loss>";
}

static void run(char *line)
{
    char *fields[7] = { 0 };
    int nf = 0;
    for (char *tok = strtok(line, "|"); tok && nf < 7; tok = strtok(NULL, "|")) fields[nf++] = trim(tok);
    if (nf < 6) {
        printf("{\"error\": \"expected MODEL | BxS | DTYPE | ATTENTION | DEVICE_KIND | LOSS\"}\n");
        return;
    }
    mtk_plan_trace_options o = { .with_loss = strcmp(fields[5], "loss") == 0, .training = true };
    if (sscanf(fields[1], "%ldx%ld", (long *)&o.batch, (long *)&o.seq) != 2) o.batch = o.seq = 0;
    o.dtype = strcmp(fields[2], "config") == 0 ? MTK_DTYPE_UNDEFINED : mtk_dtype_from_name(fields[2]);
    o.attention = strcmp(fields[3], "default") == 0 ? NULL : fields[3];
    o.device_kind = strcmp(fields[4], "cuda") == 0 ? MTK_DEVICE_KIND_CUDA : MTK_DEVICE_KIND_CPU;
    bool nodes = nf > 6 && strcmp(fields[6], "nodes") == 0;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_plan_model *p = mtk_plan_trace_model(ctx, fields[0], &o);
    if (!p) {
        printf("{\"error\": ");
        print_string(mtk_ctx_message(ctx));
        printf("}\n");
        mtk_ctx_free(ctx);
        return;
    }
    const mtk_graph *g = p->graph;
    int32_t nmod = mtk_trace_module_count(mtk_graph_trace(g));
    int64_t *per = calloc((size_t)nmod + 1, sizeof *per);
    printf("{\"saved_bytes\": %lld, \"modules\": {", (long long)mtk_graph_saved_bytes(g, per));
    int64_t root = per[0];
    for (int32_t n = 0; n < mtk_graph_node_count(g); n++) { /* the loss, outside the root's call */
        const mtk_graph_node *node = mtk_graph_node_at(g, n);
        if (node->module < 0)
            for (int32_t i = 0; i < node->nsaved; i++) {
                int32_t st = mtk_graph_saved_entry_storage(g, node, &node->saved[i]);
                bool first = st < 0;
                if (st >= 0) { /* counted only if no earlier node saved it */
                    first = mtk_graph_storage_at(g, st)->kind != MTK_STORAGE_PARAMETER;
                    for (int32_t m = 0; first && m < n; m++) {
                        const mtk_graph_node *e = mtk_graph_node_at(g, m);
                        for (int32_t j = 0; j < e->nsaved; j++)
                            if (mtk_graph_saved_entry_storage(g, e, &e->saved[j]) == st) first = false;
                    }
                    for (int32_t j = 0; first && j < i; j++)
                        if (mtk_graph_saved_entry_storage(g, node, &node->saved[j]) == st) first = false;
                }
                if (first) root += mtk_graph_saved_entry_bytes(g, node, &node->saved[i]);
            }
    }
    per[0] = root;
    bool any = false;
    for (int32_t m = 0; m < nmod; m++) {
        if (!per[m]) continue;
        printf("%s", any ? ", " : "");
        print_string(module_name(g, m));
        printf(": %lld", (long long)per[m]);
        any = true;
    }
    free(per);
    printf("}, \"layers\": [");
    for (int32_t i = 0; i < p->nlayers; i++) {
        printf("%s", i ? ", " : "");
        print_string(module_name(g, p->layers[i]));
    }
    printf("]");
    if (nodes) {
        printf(", \"nodes\": [");
        for (int32_t n = 0; n < mtk_graph_node_count(g); n++) {
            const mtk_graph_node *node = mtk_graph_node_at(g, n);
            printf("%s[", n ? ", " : "");
            print_string(node->op ? node->op->name : "?");
            printf(", ");
            print_string(module_name(g, node->module));
            printf(", [");
            for (int32_t i = 0; i < node->nsaved; i++) {
                static const char *const kinds[] = { "input", "output", "new" };
                int32_t st = mtk_graph_saved_entry_storage(g, node, &node->saved[i]);
                bool param = st >= 0 && mtk_graph_storage_at(g, st)->kind == MTK_STORAGE_PARAMETER;
                printf("%s[\"%s\", %lld, %d]", i ? ", " : "", param ? "param" : kinds[node->saved[i].kind],
                       (long long)mtk_graph_saved_entry_bytes(g, node, &node->saved[i]),
                       (int)mtk_graph_saved_entry_storage(g, node, &node->saved[i]));
            }
            printf("]]");
        }
        printf("]");
    }
    printf("}\n");
    fflush(stdout);
    mtk_ctx_free(ctx);
}

int main(void)
{
    char line[8192];
    while (fgets(line, sizeof line, stdin)) {
        if (!*trim(line)) continue;
        run(line);
    }
    return 0;
}
