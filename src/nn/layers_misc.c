/* Embedding, Dropout, Flatten, Unflatten. */
#include "nn/layers.h"
#include "mtk/ops.h"
#include "mtk/ops/view.h"

#include <string.h>

/* ------------------------------------------------------------ Embedding */

typedef struct embedding_config {
    int64_t num_embeddings, embedding_dim;
    int64_t padding_idx; /* normalized to [0, num); MTK_NN_NO_PADDING_IDX: none */
} embedding_config;

static void embedding_repr(const mtk_module *m, char *buf, size_t cap)
{
    const embedding_config *c = mtk_module_config(m);
    int n = snprintf(buf, cap, "%lld, %lld", (long long)c->num_embeddings, (long long)c->embedding_dim);
    if (c->padding_idx != MTK_NN_NO_PADDING_IDX && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ", padding_idx=%lld", (long long)c->padding_idx);
}

/* N(0, 1), the padding row zeroed. */
static bool embedding_reset(mtk_module *m, mtk_rng *rng)
{
    const embedding_config *c = mtk_module_config(m);
    mtk_tensor *weight = mtk_module_find_tensor(m, "weight");
    if (!mtk_init_normal_(weight, 0.0, 1.0, rng)) return false;
    if (c->padding_idx == MTK_NN_NO_PADDING_IDX) return true;
    return mtk_init_zeros_(mtk_select(mtk_module_ctx(m), weight, 0, c->padding_idx));
}

static bool embedding_forward(mtk_module *m, mtk_module_io *io)
{
    const embedding_config *c = mtk_module_config(m);
    bool has_padding_idx = c->padding_idx != MTK_NN_NO_PADDING_IDX;
    return nn_output(io, mtk_embedding(mtk_module_ctx(m), io->in[0], mtk_module_find_tensor(m, "weight"),
                                       has_padding_idx, has_padding_idx ? c->padding_idx : 0));
}

static const mtk_module_type embedding_type = { "Embedding", embedding_forward, embedding_reset, embedding_repr };

mtk_module *mtk_nn_embedding(mtk_ctx *ctx, int64_t num_embeddings, int64_t embedding_dim, int64_t padding_idx)
{
    if (num_embeddings < 0 || embedding_dim < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "Embedding: sizes must be non-negative, got (%lld, %lld)",
                  (long long)num_embeddings, (long long)embedding_dim);
        return NULL;
    }
    if (padding_idx != MTK_NN_NO_PADDING_IDX) {
        if (padding_idx >= num_embeddings || padding_idx < -num_embeddings) {
            mtk_error(ctx, MTK_ERR_INDEX, "Embedding: Padding_idx must be within num_embeddings (got %lld for %lld embeddings)",
                      (long long)padding_idx, (long long)num_embeddings);
            return NULL;
        }
        if (padding_idx < 0) padding_idx += num_embeddings;
    }
    mtk_module *m = mtk_module_new(ctx, &embedding_type, sizeof(embedding_config));
    if (!m) return NULL;
    *(embedding_config *)mtk_module_config(m) = (embedding_config){ num_embeddings, embedding_dim, padding_idx };
    int64_t shape[2] = { num_embeddings, embedding_dim };
    if (!mtk_module_new_parameter(m, "weight", shape, 2)) return NULL;
    return mtk_module_finish(m);
}

/* -------------------------------------------------------------- Dropout */

typedef struct dropout_config {
    double p;
} dropout_config;

static void dropout_repr(const mtk_module *m, char *buf, size_t cap)
{
    char p[40];
    snprintf(buf, cap, "p=%s, inplace=False", nn_py_float(((const dropout_config *)mtk_module_config(m))->p, p, sizeof p));
}

static bool dropout_forward(mtk_module *m, mtk_module_io *io)
{
    const dropout_config *c = mtk_module_config(m);
    if (!mtk_module_is_training(m)) return nn_output(io, io->in[0]); /* eval: the input itself */
    return nn_output(io, mtk_dropout(mtk_module_ctx(m), io->in[0], c->p, true, false));
}

static const mtk_module_type dropout_type = { "Dropout", dropout_forward, NULL, dropout_repr };

mtk_module *mtk_nn_dropout(mtk_ctx *ctx, double p)
{
    if (!(p >= 0.0 && p <= 1.0)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "dropout probability has to be between 0 and 1, but got %g", p);
        return NULL;
    }
    mtk_module *m = mtk_module_new(ctx, &dropout_type, sizeof(dropout_config));
    if (m) ((dropout_config *)mtk_module_config(m))->p = p;
    return m;
}

/* -------------------------------------------------- Flatten, Unflatten */

typedef struct flatten_config {
    int64_t start_dim, end_dim;         /* Flatten   */
    int64_t dim;                        /* Unflatten */
    int64_t sizes[MTK_MAX_DIMS];
    int32_t nsizes;
} flatten_config;

static void flatten_repr(const mtk_module *m, char *buf, size_t cap)
{
    const flatten_config *c = mtk_module_config(m);
    snprintf(buf, cap, "start_dim=%lld, end_dim=%lld", (long long)c->start_dim, (long long)c->end_dim);
}

static bool flatten_forward(mtk_module *m, mtk_module_io *io)
{
    const flatten_config *c = mtk_module_config(m);
    return nn_output(io, mtk_flatten(mtk_module_ctx(m), io->in[0], c->start_dim, c->end_dim));
}

static void unflatten_repr(const mtk_module *m, char *buf, size_t cap)
{
    const flatten_config *c = mtk_module_config(m);
    char sizes[256];
    snprintf(buf, cap, "dim=%lld, unflattened_size=%s", (long long)c->dim,
             nn_py_tuple(c->sizes, c->nsizes, sizes, sizeof sizes));
}

static bool unflatten_forward(mtk_module *m, mtk_module_io *io)
{
    const flatten_config *c = mtk_module_config(m);
    return nn_output(io, mtk_unflatten(mtk_module_ctx(m), io->in[0], c->dim, c->sizes, c->nsizes));
}

static const mtk_module_type flatten_type = { "Flatten", flatten_forward, NULL, flatten_repr };
static const mtk_module_type unflatten_type = { "Unflatten", unflatten_forward, NULL, unflatten_repr };

mtk_module *mtk_nn_flatten(mtk_ctx *ctx, int64_t start_dim, int64_t end_dim)
{
    mtk_module *m = mtk_module_new(ctx, &flatten_type, sizeof(flatten_config));
    if (!m) return NULL;
    flatten_config *c = mtk_module_config(m);
    c->start_dim = start_dim;
    c->end_dim = end_dim;
    return m;
}

mtk_module *mtk_nn_unflatten(mtk_ctx *ctx, int64_t dim, const int64_t *sizes, int32_t n)
{
    if (n < 1 || n > MTK_MAX_DIMS || !sizes) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "Unflatten: unflattened_size must have 1 to %d sizes, got %d",
                  MTK_MAX_DIMS, (int)n);
        return NULL;
    }
    mtk_module *m = mtk_module_new(ctx, &unflatten_type, sizeof(flatten_config));
    if (!m) return NULL;
    flatten_config *c = mtk_module_config(m);
    c->dim = dim;
    memcpy(c->sizes, sizes, (size_t)n * sizeof *sizes);
    c->nsizes = n;
    return m;
}
