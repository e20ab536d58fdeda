/* The state of one memory replay (memory_replay.c walks the graph,
 * memory_sim.c prepares and finishes, memory_optim.c steps). */
#ifndef PLAN_MEMORY_SIM_H
#define PLAN_MEMORY_SIM_H

#include "plan/memory_internal.h"

enum {
    MEM_CAT_PARAM = 0,  /* parameters and buffers           */
    MEM_CAT_GRAD,       /* .grad                            */
    MEM_CAT_STATE,      /* optimizer states                 */
    MEM_CAT_SAVED,      /* an OTHER buffer with saved holds */
    MEM_CAT_KV,
    MEM_CAT_OTHER,
    MEM_CAT_COUNT
};

enum { MEM_SEEN_KEPT = 1, MEM_SEEN_DROPPED = 2 };

typedef struct mem_buf {
    int64_t bytes;      /* as allocated (rounded on CUDA)   */
    int32_t refs;       /* every reference, holds included  */
    int32_t holds;      /* autograd's saved holds, pins     */
    int32_t storage;    /* the graph storage it holds, -1   */
    uint8_t base;       /* category without the holds       */
} mem_buf;

typedef struct mem_sim {
    mtk_ctx *ctx;
    const mem_graph *g;
    const mtk_memory_options *o;
    bool oom;
    /* buffers */
    mem_buf *bufs;
    int32_t nbufs, bufs_cap;
    int32_t *free_ids;  /* ids to reuse                      */
    int32_t nfree;
    int64_t live, cat[MEM_CAT_COUNT];
    /* where the replay is */
    mtk_memory_step *step; /* the step whose peak is tracked */
    mtk_memory_phase phase, prefill_phase;
    int32_t node;       /* -1: outside the graph             */
    const char *op;     /* NULL: the node's op               */
    bool record;        /* timeline and modules: the reported step */
    bool count_saved;   /* attribute saved bytes to modules now    */
    /* per storage */
    int32_t *sbuf;      /* its buffer now, -1: none          */
    int32_t *lastuse;   /* last forward node, INT32_MAX kept */
    int32_t *produced_by; /* node of its base tensor, -1     */
    uint8_t *is_kv;
    int32_t *pgrad;     /* a parameter's .grad buffer        */
    int32_t *pbuf;      /* its AccumulateGrad's InputBuffer, -1 */
    uint8_t *pbuf_view; /* that gradient is a view           */
    int32_t *pedges;    /* backward edges into its AccumulateGrad */
    int32_t *pleft;     /* those yet to report this backward */
    int32_t *wcopy;     /* mixed precision: its 16-bit copy  */
    int32_t *wcopy_node;/* the node whose backward frees it  */
    int32_t *free_start, *free_list; /* storages by last use */
    /* per node */
    bool *need;         /* on the loss's backward path       */
    int32_t *hold_start, *holdbuf; /* per saved entry        */
    int32_t *scratch;
    uint8_t *scratch_view; /* beside scratch: a gradient is a view */
    /* checkpointed layers */
    int32_t nunits;
    int32_t *unit_of;   /* per node, -1; NULL: no units      */
    int32_t *unit_first, *unit_stop;
    int32_t *pin_start, *pins, *pinbuf;
    int32_t *rngbuf;    /* per unit: the cpu rng state it keeps, -1 */
    int32_t rc_first, rc_stop;
    int32_t *rc_stamp;  /* per storage: the recompute that made it */
    int32_t rc_epoch;
    /* per storage, in a training forward: MEM_SEEN_KEPT when a node autograd
       keeps saved it, MEM_SEEN_DROPPED when a node whose outputs the forward
       drops (torch frees it, and what it saved, before the forward ends) */
    uint8_t *saved_seen;
    int64_t dropped_new; /* bytes such nodes saved as new tensors */
    /* per tensor */
    int32_t *gbuf;      /* its gradient in flight            */
    uint8_t *gbuf_view; /* that gradient is a view           */
    /* modules */
    int32_t *parent;
    int64_t *mod_peak, *mod_saved;
    /* optimizer */
    int32_t *trainable; /* trainable parameter storages      */
    int32_t ntrainable;
    int32_t *params;    /* those with a .grad at the step    */
    int32_t nparams;
    /* results */
    mtk_memory_point node_peak; /* the node's peak so far (node_peaks)   */
    mtk_memory_point *tl;
    int32_t ntl, tl_cap;
    int64_t saved_forward;
    /* every heap array, freed at the end */
    void *owned[48];
    int32_t nowned;
} mem_sim;

bool mem_sim_init(mem_sim *s, mtk_ctx *ctx, const mem_graph *g, const mtk_memory_options *o, bool training);
/* Copies the timeline and the module table into plan (the arena). */
bool mem_sim_finish(mem_sim *s, mtk_memory_plan *plan);
void mem_sim_free(mem_sim *s);

int32_t mem_buf_new(mem_sim *s, int64_t nbytes, int base);
/* A buffer for graph storage st, mapped to it until freed. */
int32_t mem_buf_for_storage(mem_sim *s, int32_t st, int base);
void mem_buf_ref(mem_sim *s, int32_t id);
void mem_buf_unref(mem_sim *s, int32_t id);
void mem_buf_set_base(mem_sim *s, int32_t id, int base);
/* Records a peak candidate: live bytes plus `extra` in flight. */
void mem_observe(mem_sim *s, int64_t extra);
mtk_memory_point mem_point(const mem_sim *s, int64_t live);
void mem_timeline(mem_sim *s);
const char *mem_op_name(const mtk_op_def *op);

/* Tensor t is a parameter that requires grad, itself (not a view): its
 * gradients go to its AccumulateGrad. */
bool mem_is_param_tensor(const mem_graph *g, int32_t t);

/* Bytes of parameter storage st as the step sees it (float32 masters
 * under mixed precision). */
int64_t mem_param_bytes(const mem_sim *s, int32_t st);

/* The optimizer's step (torch.optim defaults for the device kind); the
 * first step creates the states. */
void mem_optimizer_step(mem_sim *s, bool first);

#endif
