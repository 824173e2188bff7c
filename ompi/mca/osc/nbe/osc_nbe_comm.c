/*
 * osc/nbe RMA operations, origin side: op objects, argument checks,
 * datatype staging, fragment plans and the ways past them (direct loads
 * and stores, RDMA, send-now puts); their application at the target is in
 * osc_nbe_apply.c.
 *
 * Put/Get move byte streams (the packed origin data against the raw
 * segments of the target datatype). Accumulates move whole elements of one
 * predefined type so the target applies every fragment atomically per
 * element with ompi_op_reduce.
 */
#include "osc_nbe.h"
#include "osc_nbe_dt.h"

#include <string.h>

#include "ompi_scale_adapt.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"
#include "opal/sys/atomic.h"
#include "ompi/errhandler/errcode-internal.h"

void ompi_osc_nbe_queue_op(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op);

#define NBE_RAW_IOV 64

/* ---------------------------------------------------------------- */
/* op objects */

/* Operation objects come from a component free list: an RMA call on the
 * message path neither mallocs nor frees its op in the steady state. */
typedef struct {
    opal_free_list_item_t super;
    ompi_osc_nbe_op_t op;
} ompi_osc_nbe_op_slot_t;

int ompi_osc_nbe_ops_init(void)
{
    OBJ_CONSTRUCT(&mca_osc_nbe_component.ops, opal_free_list_t);
    return opal_free_list_init(&mca_osc_nbe_component.ops, sizeof(ompi_osc_nbe_op_slot_t),
                               opal_cache_line_size, OBJ_CLASS(opal_free_list_item_t), 0,
                               opal_cache_line_size, 0, -1, 16, NULL, 0, NULL, NULL, NULL);
}

static ompi_osc_nbe_op_t *op_get(void)
{
    ompi_osc_nbe_op_slot_t *slot =
        (ompi_osc_nbe_op_slot_t *) opal_free_list_get(&mca_osc_nbe_component.ops);
    if (NULL == slot) return NULL;
    /* a struct copy, not memset (rep stos: a large start-up cost per op) */
    static const ompi_osc_nbe_op_t zero_op;
    slot->op = zero_op;
    return &slot->op;
}

/* back to the free list, without releasing what the op references */
static void op_put(ompi_osc_nbe_op_t *op)
{
    opal_free_list_return(&mca_osc_nbe_component.ops,
                          (opal_free_list_item_t *) ((char *) op - offsetof(ompi_osc_nbe_op_slot_t, op)));
}

void ompi_osc_nbe_op_free(ompi_osc_nbe_op_t *op)
{
    if (op->origin_dt) OBJ_RELEASE(op->origin_dt);
    if (op->result_dt) OBJ_RELEASE(op->result_dt);
    if (op->target_dt) OBJ_RELEASE(op->target_dt);
    if (op->op) OBJ_RELEASE(op->op);
    free(op->stream_alloc);
    free(op->result_alloc);
    if (op->plan != &op->plan1) free(op->plan);
    op_put(op);
}

static void request_complete(ompi_osc_nbe_op_t *op)
{
    ompi_osc_nbe_request_t *req = op->req;
    if (NULL == req) return;
    if (op->req_watched) ompi_osc_nbe_req_watch_end(op->module, op);
    bool freed = req->user_freed;
    ompi_request_complete(&req->super, true);
    if (freed) {
        OMPI_REQUEST_FINI(&req->super);
        OBJ_RELEASE(req);
    }
}

/* op cannot be carried out (code: an OMPI or MPI error code): its request
 * completes with the error and the engine stops waiting for it */
void ompi_osc_nbe_await_replies(ompi_osc_nbe_op_t *op)
{
    ompi_osc_nbe_module_t *module = op->module;
    op->awaiting = true;
    op->await_prev = NULL;
    op->await_next = module->awaiting;
    if (module->awaiting) module->awaiting->await_prev = op;
    module->awaiting = op;
}

static void stop_awaiting(ompi_osc_nbe_op_t *op)
{
    if (OPAL_LIKELY(!op->awaiting)) return;
    if (op->await_prev) op->await_prev->await_next = op->await_next;
    else op->module->awaiting = op->await_next;
    if (op->await_next) op->await_next->await_prev = op->await_prev;
    op->awaiting = false;
}

/* an operation a failed engine never issued: its request ends with the
 * error, nothing of it left the process */
static void drop_recorded(void *ctx, nbe_op_t *eop)
{
    (void) ctx;
    ompi_osc_nbe_op_t *op = (ompi_osc_nbe_op_t *) eop;
    if (op->req) op->req->super.req_status.MPI_ERROR = MPI_ERR_OTHER;
    request_complete(op);
    ompi_osc_nbe_op_free(op);
}

void ompi_osc_nbe_abandon_awaiting(ompi_osc_nbe_module_t *module)
{
    nbe_engine_take_recorded(module->engine, drop_recorded, module);
    while (module->awaiting) ompi_osc_nbe_op_abandon(module->awaiting);
}

void ompi_osc_nbe_op_fail(ompi_osc_nbe_op_t *op, int code)
{
    stop_awaiting(op);
    if (op->req) op->req->super.req_status.MPI_ERROR = ompi_errcode_get_mpi_code(code);
    nbe_op_local_done(op->module->engine, op->super.target);
    request_complete(op);
    ompi_osc_nbe_op_free(op);
}

void ompi_osc_nbe_op_abandon(ompi_osc_nbe_op_t *op)
{
    opal_output_verbose(10, mca_osc_nbe_component.output,
                        "osc/nbe %d: op to %d ends with an error after %zu of %zu fragments",
                        op->module->rank, op->super.target, op->next_frag, op->nplan);
    stop_awaiting(op);
    /* no fragment out, or one that is never answered: nothing names op */
    if (0 == op->next_frag || 0 == op->reply_left) {
        ompi_osc_nbe_op_fail(op, MPI_ERR_OTHER);
        return;
    }
    ompi_osc_nbe_module_t *module = op->module;
    if (op->req) op->req->super.req_status.MPI_ERROR = MPI_ERR_OTHER;
    nbe_op_local_done(module->engine, op->super.target);
    request_complete(op);
    op->req = NULL;
    op->abandoned = true;
    op->abandoned_next = module->abandoned;
    module->abandoned = op;
}

void ompi_osc_nbe_free_abandoned(ompi_osc_nbe_module_t *module)
{
    while (module->abandoned) {
        ompi_osc_nbe_op_t *op = module->abandoned;
        module->abandoned = op->abandoned_next;
        ompi_osc_nbe_op_free(op);
    }
}

/* the data of op is out (put/acc) or its result arrived (get/gacc/cas) */
void ompi_osc_nbe_op_local_complete(ompi_osc_nbe_op_t *op)
{
    ompi_osc_nbe_module_t *module = op->module;
    stop_awaiting(op);
    if (op->result_alloc && !op->refused) {
        if (NBE_OP_GET == op->type) {
            opal_convertor_t conv;
            struct iovec iov = { .iov_base = op->result_alloc, .iov_len = op->nbytes };
            uint32_t n = 1;
            size_t max = op->nbytes;
            OBJ_CONSTRUCT(&conv, opal_convertor_t);
            opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &op->origin_dt->super,
                                                     op->origin_count, op->result_addr, 0, &conv);
            opal_convertor_unpack(&conv, &iov, &n, &max);
            OBJ_DESTRUCT(&conv);
        } else {
            ompi_datatype_sndrcv(op->result_alloc, (int32_t) op->elem_n, op->elem_dt,
                                 op->result_addr, op->result_count, op->result_dt);
        }
    }
    if (0 != op->adapt_t0 && !op->refused) {
        ompi_osc_nbe_adapt_record(op, dt_bytes(op->origin_dt, op->origin_count));
    }
    nbe_op_local_done(module->engine, op->super.target);
    request_complete(op);
    ompi_osc_nbe_op_free(op);
}

/* ---------------------------------------------------------------- */
/* origin side: staging and fragment plans */

static int plan_add(ompi_osc_nbe_op_t *op, size_t *cap, uint64_t addr, uint64_t off, size_t len,
                    size_t chunk)
{
    while (len > 0) {
        size_t n = len < chunk ? len : chunk;
        if (0 == *cap) {
            /* most operations are one fragment: no allocation for them */
            op->plan = &op->plan1;
            *cap = 1;
        } else if (op->nplan == *cap) {
            size_t ncap = 1 == *cap ? 8 : 2 * *cap;
            nbe_frag_plan_t *np = malloc(ncap * sizeof(*np));
            if (NULL == np) return OMPI_ERR_OUT_OF_RESOURCE;
            memcpy(np, op->plan, op->nplan * sizeof(*np));
            if (op->plan != &op->plan1) free(op->plan);
            op->plan = np;
            *cap = ncap;
        }
        op->plan[op->nplan].addr = addr;
        op->plan[op->nplan].off = off;
        op->plan[op->nplan].len = (uint32_t) n;
        op->nplan++;
        addr += n;
        off += n;
        len -= n;
    }
    return OMPI_SUCCESS;
}

/* element runs of an accumulate target: the raw segments of the target
 * datatype are cut into whole elements of the element type (pair types such
 * as MPI_LONG_DOUBLE_INT come out of the convertor as two pieces each, and
 * MPI_SHORT_INT's pieces are smaller than one) and consecutive elements
 * merge into runs of the staging layout, which `run` consumes: the run of
 * run_n elements at run_start, at offset off of the staging layout */
typedef struct elem_walk {
    void (*run)(struct elem_walk *w);
    size_t esize, ext, acc;
    uint64_t start, run_start, run_n, off;
    int rc;
    /* plan_run: fragments of op, chunk bytes at most */
    ompi_osc_nbe_op_t *op;
    size_t *cap, chunk;
    /* reduce_run: src (staging layout) reduced into the runs by mop */
    ompi_op_t *mop;
    ompi_datatype_t *elem;
    const char *src;
} elem_walk_t;

static void walk_init(elem_walk_t *w, ompi_datatype_t *elem)
{
    ptrdiff_t lb, ext;
    ompi_datatype_type_size(elem, &w->esize);
    ompi_datatype_get_extent(elem, &lb, &ext);
    w->ext = (size_t) ext;
    w->elem = elem;
    w->rc = OMPI_SUCCESS;
}

static void walk_flush(elem_walk_t *w)
{
    if (0 == w->run_n || OMPI_SUCCESS != w->rc) return;
    w->run(w);
    w->off += w->run_n * w->ext;
    w->run_n = 0;
}

static void plan_run(elem_walk_t *w)
{
    w->rc = plan_add(w->op, w->cap, w->run_start, w->off, elems_span(w->elem, w->run_n), w->chunk);
}

static void reduce_run(elem_walk_t *w)
{
    ompi_op_reduce(w->mop, (void *) (w->src + w->off), (void *) (uintptr_t) w->run_start,
                   (int) w->run_n, w->elem);
}

static void walk_piece(elem_walk_t *w, uint64_t addr, size_t len)
{
    while (len > 0) {
        if (0 == w->acc) w->start = addr;
        size_t take = len < w->esize - w->acc ? len : w->esize - w->acc;
        w->acc += take;
        addr += take;
        len -= take;
        if (w->acc == w->esize) {
            w->acc = 0;
            if (w->run_n && w->start == w->run_start + w->run_n * w->ext) {
                w->run_n++;
            } else {
                walk_flush(w);
                w->run_start = w->start;
                w->run_n = 1;
            }
        }
    }
}

/* calls fn with the raw segments of count x dt at addr (not touched here),
 * NBE_RAW_IOV at a time (size: their bytes), while it returns OMPI_SUCCESS */
typedef int (*target_segs_fn)(void *ctx, const struct iovec *segs, uint32_t n, size_t size);
static int walk_segments(ompi_datatype_t *dt, int count, uint64_t addr, target_segs_fn fn,
                         void *ctx)
{
    opal_convertor_t conv;
    struct iovec segs[NBE_RAW_IOV];
    int rc = OMPI_SUCCESS;
    bool done;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dt->super, count,
                                             (void *) (uintptr_t) addr, 0, &conv);
    do {
        uint32_t n = NBE_RAW_IOV;
        size_t size;
        done = opal_convertor_raw(&conv, segs, &n, &size);
        rc = fn(ctx, segs, n, size);
    } while (!done && OMPI_SUCCESS == rc);
    OBJ_DESTRUCT(&conv);
    return rc;
}

/* ... of op's target datatype at its target address (the target's memory) */
static int walk_target_segments(ompi_osc_nbe_op_t *op, target_segs_fn fn, void *ctx)
{
    return walk_segments(op->target_dt, op->target_count, op->target_addr, fn, ctx);
}

/* segments cut into element runs (ctx: an elem_walk_t) */
static int elem_segs_fn(void *ctx, const struct iovec *segs, uint32_t n, size_t size)
{
    elem_walk_t *w = (elem_walk_t *) ctx;
    (void) size;
    for (uint32_t i = 0; i < n && OMPI_SUCCESS == w->rc; ++i) {
        walk_piece(w, (uint64_t) (uintptr_t) segs[i].iov_base, segs[i].iov_len);
    }
    return w->rc;
}

/* the element runs of count x dt at addr, each to w->run (w: walk_init'ed) */
static int walk_elements(elem_walk_t *w, ompi_datatype_t *dt, int count, uint64_t addr)
{
    int rc = walk_segments(dt, count, addr, elem_segs_fn, w);
    if (OMPI_SUCCESS == rc) {
        walk_flush(w);
        rc = w->rc;
    }
    return rc;
}

struct plan_segs {
    ompi_osc_nbe_op_t *op;
    size_t *cap, chunk;
    uint64_t off;
};

static int plan_segs_fn(void *ctx, const struct iovec *segs, uint32_t n, size_t size)
{
    struct plan_segs *ps = (struct plan_segs *) ctx;
    int rc = OMPI_SUCCESS;
    (void) size;
    for (uint32_t i = 0; i < n && OMPI_SUCCESS == rc; ++i) {
        rc = plan_add(ps->op, ps->cap, (uint64_t) (uintptr_t) segs[i].iov_base, ps->off,
                      segs[i].iov_len, ps->chunk);
        ps->off += segs[i].iov_len;
    }
    return rc;
}

/* fragments covering the target datatype's memory, chunk bytes at most */
static int plan_target(ompi_osc_nbe_op_t *op, bool elementwise, size_t chunk)
{
    size_t cap = 0;
    op->nplan = 0;
    if (elementwise && ompi_datatype_is_predefined(op->target_dt)) {
        /* memory layout of n elements == staging layout (pair types keep
         * padding, but for the last element's) */
        return plan_add(op, &cap, op->target_addr, 0,
                        elems_span(op->target_dt, (size_t) op->target_count), chunk);
    }
    if (!elementwise && dt_contig(op->target_dt, op->target_count)) {
        return plan_add(op, &cap, op->target_addr + (uint64_t) op->target_dt->super.true_lb, 0,
                        dt_bytes(op->target_dt, op->target_count), chunk);
    }
    if (elementwise) {
        elem_walk_t w = { .run = plan_run, .op = op, .cap = &cap, .chunk = chunk };
        walk_init(&w, op->elem_dt);
        return walk_elements(&w, op->target_dt, op->target_count, op->target_addr);
    }
    struct plan_segs ps = { .op = op, .cap = &cap, .chunk = chunk, .off = 0 };
    return walk_target_segments(op, plan_segs_fn, &ps);
}

static int stage_put(ompi_osc_nbe_op_t *op)
{
    op->nbytes = dt_bytes(op->origin_dt, op->origin_count);
    if (dt_contig(op->origin_dt, op->origin_count)) {
        op->stream = (char *) op->origin_addr + op->origin_dt->super.true_lb;
        return OMPI_SUCCESS;
    }
    op->stream = op->stream_alloc = malloc(op->nbytes ? op->nbytes : 1);
    if (NULL == op->stream) return OMPI_ERR_OUT_OF_RESOURCE;
    opal_convertor_t conv;
    struct iovec iov = { .iov_base = op->stream, .iov_len = op->nbytes };
    uint32_t n = 1;
    size_t max = op->nbytes;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &op->origin_dt->super,
                                             op->origin_count, op->origin_addr, 0, &conv);
    opal_convertor_pack(&conv, &iov, &n, &max);
    OBJ_DESTRUCT(&conv);
    return OMPI_SUCCESS;
}

static int stage_get(ompi_osc_nbe_op_t *op)
{
    op->nbytes = dt_bytes(op->origin_dt, op->origin_count);
    op->reply_left = op->nbytes;
    if (dt_contig(op->origin_dt, op->origin_count)) {
        op->result = (char *) op->result_addr + op->origin_dt->super.true_lb;
        return OMPI_SUCCESS;
    }
    op->result = op->result_alloc = malloc(op->nbytes ? op->nbytes : 1);
    return op->result ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
}

/* element type of an accumulate: the predefined target type, or the single
 * predefined type a derived target type is built of */
static int acc_elem(ompi_osc_nbe_op_t *op)
{
    ptrdiff_t lb, ext;
    size_t sz;
    if (ompi_datatype_is_predefined(op->target_dt)) {
        op->elem_dt = op->target_dt;
        op->elem_n = (size_t) op->target_count;
        return OMPI_SUCCESS;
    }
    op->elem_dt = ompi_datatype_get_single_predefined_type_from_args(op->target_dt);
    if (NULL == op->elem_dt) return OMPI_ERR_NOT_SUPPORTED;
    ompi_datatype_get_extent(op->elem_dt, &lb, &ext);
    ompi_datatype_type_size(op->elem_dt, &sz);
    op->elem_n = dt_bytes(op->target_dt, op->target_count) / sz;
    return OMPI_SUCCESS;
}

/* an accumulate's origin in the staging layout of n elements of elem:
 * the origin buffer itself where it has that type, else a converted copy,
 * *alloc (the caller frees it) */
static int origin_as_elems(ompi_osc_nbe_op_t *op, ompi_datatype_t *elem, size_t n, char **stream,
                           char **alloc)
{
    ptrdiff_t lb, ext;
    *alloc = NULL;
    if (op->origin_dt == elem) {
        *stream = (char *) op->origin_addr;
        return OMPI_SUCCESS;
    }
    ompi_datatype_get_extent(elem, &lb, &ext);
    *stream = *alloc = malloc(n ? n * (size_t) ext : 1);
    if (NULL == *alloc) return OMPI_ERR_OUT_OF_RESOURCE;
    ompi_datatype_sndrcv(op->origin_addr, op->origin_count, op->origin_dt, *alloc, (int32_t) n, elem);
    return OMPI_SUCCESS;
}

static int stage_acc(ompi_osc_nbe_op_t *op)
{
    ptrdiff_t lb, ext;
    int rc = acc_elem(op);
    if (OMPI_SUCCESS != rc) return rc;
    ompi_datatype_get_extent(op->elem_dt, &lb, &ext);
    op->nbytes = (size_t) ext * op->elem_n;
    if (&ompi_mpi_op_no_op.op != op->op) {
        rc = origin_as_elems(op, op->elem_dt, op->elem_n, &op->stream, &op->stream_alloc);
        if (OMPI_SUCCESS != rc) return rc;
    }
    if (NBE_OP_GACC == op->type) {
        /* (pair types: the reply carries padding, which stays out of the
         * result buffer; the replies' total is the plan's, issue_cb) */
        if (op->result_dt == op->elem_dt && dt_dense(op->elem_dt)) {
            op->result = op->result_addr;
        } else {
            op->result = op->result_alloc = malloc(op->nbytes ? op->nbytes : 1);
            if (NULL == op->result) return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    return OMPI_SUCCESS;
}

/* contiguous data of the same size on both sides: one copy, as in
 * try_direct (the datatype engine's memcpy would pay rep movsb's
 * short-distance penalty); false: not taken */
static bool copy_contig(void *dst, int dcount, ompi_datatype_t *ddt, const void *src, int scount,
                        ompi_datatype_t *sdt)
{
    if (!dt_contig(sdt, scount) || !dt_contig(ddt, dcount)) return false;
    size_t len = dt_bytes(sdt, scount);
    if (len != dt_bytes(ddt, dcount)) return false;
    ompi_scale_copy((char *) dst + ddt->super.true_lb, (const char *) src + sdt->super.true_lb, len);
    return true;
}

/* op's origin reduced into its target datatype at mem, element by element
 * (ompi_osc_base_sndrcv_op reduces each raw segment as whole elements, and
 * skipped MPI_SHORT_INT, whose pieces are smaller than one) */
static void reduce_into(ompi_osc_nbe_op_t *op, void *mem)
{
    if (ompi_datatype_is_predefined(op->origin_dt) && op->origin_dt == op->target_dt) {
        ompi_op_reduce(op->op, (void *) op->origin_addr, mem, op->origin_count, op->origin_dt);
        return;
    }
    ompi_datatype_t *elem = ompi_datatype_get_single_predefined_type_from_args(op->target_dt);
    if (OPAL_UNLIKELY(NULL == elem)) return;   /* the MPI layer refuses these (MPI_ERR_OP) */
    elem_walk_t w = { .run = reduce_run, .mop = op->op };
    walk_init(&w, elem);
    size_t n = dt_bytes(op->target_dt, op->target_count) / w.esize;
    char *src, *staged;
    if (OMPI_SUCCESS != origin_as_elems(op, elem, n, &src, &staged)) {
        opal_output(0, "osc/nbe: no memory to apply an accumulate; it is dropped");
        ompi_osc_nbe_note_remote_error(op->module, OMPI_ERR_OUT_OF_RESOURCE);
        return;
    }
    w.src = src;
    (void) walk_elements(&w, op->target_dt, op->target_count, (uint64_t) (uintptr_t) mem);
    free(staged);
}

/* an accumulate, fetching accumulate or compare-and-swap applied to mem
 * (the target's memory, or a copy of it read by CMA), the fetched values
 * first; returns whether mem changed */
static bool apply_acc_op(ompi_osc_nbe_op_t *op, void *mem)
{
    if (NBE_OP_CAS == op->type) {
        size_t sz = dt_bytes(op->target_dt, 1);
        memcpy(op->result_addr, mem, sz);
        if (0 != memcmp(mem, op->cas_buf, sz)) return false;
        memcpy(mem, op->cas_buf + sz, sz);
        return true;
    }
    if (NBE_OP_GACC == op->type) {
        ompi_datatype_sndrcv(mem, op->target_count, op->target_dt, op->result_addr,
                             op->result_count, op->result_dt);
    }
    if (&ompi_mpi_op_no_op.op == op->op) return false;
    if (&ompi_mpi_op_replace.op == op->op) {
        ompi_datatype_sndrcv(op->origin_addr, op->origin_count, op->origin_dt, mem,
                             op->target_count, op->target_dt);
    } else {
        reduce_into(op, mem);
    }
    return true;
}

/* operations to self, or to a peer whose memory is mapped here (shared
 * memory windows): applied in place, no messages */
static void apply_local(ompi_osc_nbe_op_t *op, void *target)
{
    volatile int32_t *word = NBE_OP_PUT != op->type && NBE_OP_GET != op->type
                                 ? ompi_osc_nbe_acc_word(op->module, op->super.target) : NULL;
    if (word) ompi_osc_nbe_acc_word_lock(word);
    switch (op->type) {
    case NBE_OP_PUT:
        if (copy_contig(target, op->target_count, op->target_dt, op->origin_addr, op->origin_count,
                        op->origin_dt)) {
            break;
        }
        ompi_datatype_sndrcv(op->origin_addr, op->origin_count, op->origin_dt, target,
                             op->target_count, op->target_dt);
        break;
    case NBE_OP_GET:
        if (copy_contig(op->result_addr, op->origin_count, op->origin_dt, target, op->target_count,
                        op->target_dt)) {
            break;
        }
        ompi_datatype_sndrcv(target, op->target_count, op->target_dt, op->result_addr,
                             op->origin_count, op->origin_dt);
        break;
    case NBE_OP_GACC:
    case NBE_OP_ACC:
    case NBE_OP_CAS:
        (void) apply_acc_op(op, target);
        break;
    }
    if (word) ompi_osc_nbe_acc_word_unlock(word);
}

/* an op moved or applied by CMA to a target away from MPI, complete in
 * the call like an RDMA transfer (not counted); rc other than OMPI_SUCCESS:
 * the window failed meanwhile. Returns 0 for the issue callback (op gone) */
static int away_done(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op, size_t bytes, int rc)
{
    module->bytes += bytes;
    ompi_osc_nbe_target_away_counted();
    if (OMPI_SUCCESS != rc) {
        ompi_osc_nbe_op_fail(op, MPI_ERR_OTHER);
        return 0;
    }
    op->next_frag = op->nplan;
    op->reply_left = 0;
    ompi_osc_nbe_op_local_complete(op);
    return 0;
}

struct scatter_segs {
    ompi_osc_nbe_module_t *module;
    struct mca_bml_base_btl_t *b;
    int target;
    pid_t pid;
    bool is_put;
    char *stream;   /* the staged origin side, consumed in order */
};

static int scatter_segs_fn(void *ctx, const struct iovec *segs, uint32_t n, size_t size)
{
    struct scatter_segs *ss = (struct scatter_segs *) ctx;
    int rc = 0 == n ? OMPI_SUCCESS
                    : ompi_osc_nbe_cma_scatter(ss->module, ss->b, ss->target, ss->pid, ss->is_put,
                                               ss->stream, segs, (int) n);
    ss->stream += size;
    return rc;
}

/* A put or get with a non-contiguous side, of a passive epoch, to a target
 * of this node away from MPI: the origin side staged (packed for a put, a
 * result buffer for a get, unpacked at local completion), then moved to or
 * from the target's raw segments by CMA, NBE_RAW_IOV segments per call, so
 * that it need not wait for the target (an active message would). Complete
 * in the call like an RDMA transfer: not counted. Only while the target is
 * away: with it in MPI, packing into active messages costs less than a CMA
 * call per NBE_RAW_IOV segments. -1: not taken; 0: done (op gone). */
static int try_cma_datatype(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op)
{
    bool is_put = NBE_OP_PUT == op->type;
    int target = op->super.target;
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) return -1;
    const ompi_osc_nbe_peer_t *g = ompi_osc_nbe_peer(module, target);
    if (NULL == g || g->pid <= 0) return -1;
    struct mca_bml_base_btl_t *b = ompi_osc_nbe_away_cma_btl(module, target, is_put);
    if (NULL == b) return -1;
    int rc = is_put ? stage_put(op) : stage_get(op);
    if (OMPI_SUCCESS != rc) return -1;   /* the staging is freed with the op */
    struct scatter_segs ss = { module, b, target, (pid_t) g->pid, is_put,
                               is_put ? op->stream : op->result };
    rc = walk_target_segments(op, scatter_segs_fn, &ss);
    return away_done(module, op, op->nbytes, rc);
}

/* A piece of an accumulate applied by CMA: elements first .. first + n - 1
 * of the target (whole: the op as it is; else the origin, and for a fetch
 * the result, have the target's predefined type, so piece k is at the same
 * offset in each) */
struct acc_piece {
    ompi_osc_nbe_op_t *op;
    size_t first, n, ext;
    bool whole;
};

/* the update of a piece of an accumulate, compare-and-swap or fetching
 * accumulate, applied to the target's current contents cur (its target
 * datatype is predefined): the fetched values first */
static bool acc_update(void *ctx, void *cur)
{
    struct acc_piece *p = (struct acc_piece *) ctx;
    ompi_osc_nbe_op_t *op = p->op;
    if (p->whole) return apply_acc_op(op, cur);   /* compare-and-swaps always are */
    size_t off = p->first * p->ext;
    if (NBE_OP_GACC == op->type) copy_elems(op->target_dt, p->n, (char *) op->result_addr + off, cur);
    if (&ompi_mpi_op_no_op.op == op->op) return false;
    const char *src = (const char *) op->origin_addr + off;
    if (&ompi_mpi_op_replace.op == op->op) {
        copy_elems(op->target_dt, p->n, cur, src);
    } else {
        ompi_op_reduce(op->op, (void *) src, cur, (int) p->n, op->target_dt);
    }
    return true;
}

/* An accumulate, fetching accumulate or compare-and-swap of a passive epoch
 * to a target of this node away from MPI, on a predefined target type:
 * applied by this process under the target's accumulate word (a CMA read,
 * the update, a CMA write), which the target takes too when it applies
 * accumulate frames, so elements stay atomic. At most RMW_MAX bytes at a
 * time, so that the word is never held long: a larger one goes in pieces
 * of whole elements (only if origin and result have the target's type).
 * Only if every earlier operation to the target was acknowledged (applied),
 * so that accumulates stay in order. Complete in the call, not counted.
 * -1: not taken; 0: done (op gone). */
#define RMW_MAX 65536
static int try_cma_accumulate(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op)
{
    int target = op->super.target;
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor || !ompi_datatype_is_predefined(op->target_dt)) {
        return -1;
    }
    ptrdiff_t lb, ext;
    ompi_datatype_get_extent(op->target_dt, &lb, &ext);
    size_t count = (size_t) op->target_count, len = (size_t) ext * count;
    bool whole = len <= RMW_MAX;
    if (0 == len) return -1;
    /* the read-modify-write writes back what it read: not over padding
     * between elements (pair types), which is not the accumulate's and may
     * be written by others meanwhile; the target applies those in place */
    if (elems_span(op->target_dt, count) != dt_bytes(op->target_dt, (int) count)) return -1;
    if (!whole && ((&ompi_mpi_op_no_op.op != op->op &&
                    (op->origin_dt != op->target_dt || (size_t) op->origin_count != count)) ||
                   (NBE_OP_GACC == op->type &&
                    (op->result_dt != op->target_dt || (size_t) op->result_count != count)))) {
        return -1;
    }
    const ompi_osc_nbe_peer_t *g = ompi_osc_nbe_peer(module, target);
    if (NULL == g || g->pid <= 0 || NULL == ompi_osc_nbe_away_cma_btl(module, target, true) ||
        !nbe_issuing_alone(module->engine, target)) {
        return -1;
    }
    size_t per = whole ? count : RMW_MAX / (size_t) ext;
    int rc = OMPI_SUCCESS;
    for (size_t first = 0; first < count && OMPI_SUCCESS == rc; first += per) {
        struct acc_piece p = { op, first, count - first < per ? count - first : per,
                               (size_t) ext, whole };
        rc = ompi_osc_nbe_cma_rmw(module, target, (pid_t) g->pid,
                                  op->target_addr + (uint64_t) lb + first * (uint64_t) ext,
                                  elems_span(op->target_dt, p.n), acc_update, &p);
        if (1 == rc && 0 == first) return -1;   /* nothing applied: send it */
        if (1 == rc) {
            /* pieces are in place, the rest cannot follow another way */
            if (0 == nbe_engine_failed(module->engine)) nbe_engine_fail_comm(module->engine);
            rc = ompi_osc_nbe_failed_rc(module);
        }
    }
    return away_done(module, op, len, rc);
}

/* engine callback: the op may go to the network now */
int ompi_osc_nbe_issue_cb(void *ctx, nbe_op_t *eop)
{
    ompi_osc_nbe_module_t *module = (ompi_osc_nbe_module_t *) ctx;
    ompi_osc_nbe_op_t *op = (ompi_osc_nbe_op_t *) eop;
    int rc = OMPI_SUCCESS;

    if (op->super.target == module->rank || NULL != module->shm_base) {
        /* self, or a shared-memory window: peer bases are addresses in our mapping */
        void *target = (void *) (uintptr_t) op->target_addr;
        module->bytes += dt_bytes(op->target_dt, op->target_count);
        apply_local(op, target);
        /* the data is in place before any later DONE/UNLOCK leaves */
        opal_atomic_wmb();
        ompi_osc_nbe_op_local_complete(op);
        return 0;
    }

    size_t chunk = ompi_osc_nbe_max_payload(module, op->super.target);

    /* large contiguous transfers: BTL RDMA + one counted FIN */
    if ((NBE_OP_PUT == op->type || NBE_OP_GET == op->type) &&
        dt_contig(op->origin_dt, op->origin_count) && dt_contig(op->target_dt, op->target_count)) {
        bool is_put = NBE_OP_PUT == op->type;
        size_t len = dt_bytes(op->origin_dt, op->origin_count);
        char *local = (char *) (is_put ? op->origin_addr : op->result_addr) + op->origin_dt->super.true_lb;
        uint64_t remote = op->target_addr + (uint64_t) op->target_dt->super.true_lb;
        op->nplan = 1;          /* the FIN, if one follows */
        module->bytes += len;
        int n = ompi_osc_nbe_try_rdma(module, op, local, remote, len, is_put);
        if (n >= 0) return n;   /* op is gone when n == 0 */
        op->nplan = 0;
        if (is_put && OMPI_SUCCESS == ompi_osc_nbe_put_now(module, op->super.target, remote,
                                                           op->super.fence_tag, local, len,
                                                           op->super.passive)) {
            /* a recorded small put (e.g. issued when a fence grant arrived):
             * one packed or immediate frame, no staging or plan */
            ompi_osc_nbe_op_local_complete(op);
            return 1;
        }
        module->bytes -= len;
    }
    if ((NBE_OP_PUT == op->type || NBE_OP_GET == op->type) && op->super.passive &&
        0 != dt_bytes(op->target_dt, op->target_count)) {
        int n = try_cma_datatype(module, op);
        if (n >= 0) return n;
    }
    if ((NBE_OP_ACC == op->type || NBE_OP_GACC == op->type || NBE_OP_CAS == op->type) &&
        op->super.passive) {
        int n = try_cma_accumulate(module, op);
        if (n >= 0) return n;
    }

    switch (op->type) {
    case NBE_OP_PUT:
        rc = stage_put(op);
        if (OMPI_SUCCESS == rc) rc = plan_target(op, false, chunk);
        break;
    case NBE_OP_GET:
        rc = stage_get(op);
        if (OMPI_SUCCESS == rc) rc = plan_target(op, false, chunk);
        break;
    case NBE_OP_ACC:
    case NBE_OP_GACC: {
        rc = stage_acc(op);
        if (OMPI_SUCCESS == rc) {
            ptrdiff_t lb, ext;
            ompi_datatype_get_extent(op->elem_dt, &lb, &ext);
            rc = plan_target(op, true, (chunk / (size_t) ext) * (size_t) ext);
        }
        if (OMPI_SUCCESS == rc && NBE_OP_GACC == op->type) {
            /* the target's memory the fragments cover, less than the
             * staging layout where a run ends in a pair type's padding */
            op->reply_left = 0;
            for (size_t i = 0; i < op->nplan; ++i) op->reply_left += op->plan[i].len;
        }
        break;
    }
    case NBE_OP_CAS: {
        size_t cap = 0;
        op->elem_dt = op->target_dt;
        op->nbytes = dt_bytes(op->target_dt, 1);
        op->reply_left = op->nbytes;
        op->result = op->result_addr;
        rc = plan_add(op, &cap, op->target_addr, 0, op->nbytes, op->nbytes);
        break;
    }
    }
    if (OMPI_SUCCESS != rc) {
        opal_output(0, "osc/nbe: cannot issue an RMA operation (%d); it is dropped", rc);
        ompi_osc_nbe_note_remote_error(module, rc);
        ompi_osc_nbe_op_fail(op, rc);
        return 0;
    }
    int nfrags = (int) op->nplan;
    module->bytes += op->nbytes;
    if (0 == nfrags) {
        ompi_osc_nbe_op_local_complete(op);
        return 0;
    }
    /* MPI_Wait on its request is watched while the reply needs the target */
    if (op->req && op->super.passive && (NBE_OP_GET == op->type || NBE_OP_GACC == op->type) &&
        ompi_osc_nbe_presence_on(module)) {
        ompi_osc_nbe_req_watch_start(module, op);
    }
    ompi_osc_nbe_queue_op(module, op);
    return nfrags;
}

/* ---------------------------------------------------------------- */
/* entry points */

/* the bytes [*lo, *hi) that count x dt touch from start (count > 0); with a
 * negative extent the last element lies below the first. False if a bound
 * does not fit in 64 bits (a displacement or extent no memory can have). */
static bool dt_span(int64_t start, int count, ompi_datatype_t *dt, int64_t *lo, int64_t *hi)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dt, &lb, &ext);
    ompi_datatype_get_true_extent(dt, &tlb, &text);
    int64_t first, step, last, top;
    if (__builtin_add_overflow(start, (int64_t) tlb, &first) ||
        __builtin_mul_overflow((int64_t) (count - 1), (int64_t) ext, &step) ||
        __builtin_add_overflow(first, step, &last)) {
        return false;
    }
    *lo = first < last ? first : last;
    if (__builtin_add_overflow(first < last ? last : first, (int64_t) text, &top)) return false;
    *hi = top;
    return true;
}

/* the target address of [disp, count x dt) in a peer's window of geometry p,
 * or MPI_ERR_RMA_RANGE */
static int range_in(const ompi_osc_nbe_peer_t *p, ptrdiff_t disp, int count, ompi_datatype_t *dt,
                    uint64_t *addr)
{
    int64_t start;
    if (disp < 0 || __builtin_mul_overflow((int64_t) disp, p->disp_unit, &start) || start < 0) {
        return OMPI_ERR_RMA_RANGE;
    }
    if (count > 0) {
        int64_t lo, hi;
        if (!dt_span(start, count, dt, &lo, &hi) || lo < 0 || (uint64_t) hi > p->size) {
            return OMPI_ERR_RMA_RANGE;
        }
    }
    *addr = p->base + (uint64_t) start;
    return OMPI_SUCCESS;
}

static int attached_segs_fn(void *ctx, const struct iovec *segs, uint32_t n, size_t size)
{
    ompi_osc_nbe_module_t *module = (ompi_osc_nbe_module_t *) ctx;
    (void) size;
    for (uint32_t i = 0; i < n; ++i) {
        if (0 != segs[i].iov_len &&
            !ompi_osc_nbe_attached(module, (uint64_t) (uintptr_t) segs[i].iov_base, segs[i].iov_len)) {
            return OMPI_ERR_RMA_RANGE;
        }
    }
    return OMPI_SUCCESS;
}

static int check_range(ompi_osc_nbe_module_t *module, int target, ptrdiff_t disp, int count,
                       ompi_datatype_t *dt, uint64_t *addr)
{
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        /* displacements are addresses; our own regions are known here, a
         * peer checks its own when the access arrives */
        *addr = (uint64_t) disp;
        if (target == module->rank && count > 0) {
            int64_t lo, hi;
            if (!dt_span((int64_t) disp, count, dt, &lo, &hi)) return OMPI_ERR_RMA_RANGE;
            if (!ompi_osc_nbe_attached(module, (uint64_t) lo, (uint64_t) (hi - lo))) {
                /* only the bytes the type map touches need be attached, as a
                 * peer checks each fragment of an access from elsewhere */
                return walk_segments(dt, count, (uint64_t) disp, attached_segs_fn, module);
            }
        }
        return OMPI_SUCCESS;
    }
    const ompi_osc_nbe_peer_t *p = ompi_osc_nbe_peer(module, target);
    if (OPAL_UNLIKELY(NULL == p)) {
        int failed = nbe_engine_failed(module->engine);
        return ompi_osc_nbe_err(failed ? failed : NBE_ERR_NOMEM);
    }
    return range_in(p, disp, count, dt, addr);
}

static ompi_osc_nbe_request_t *new_request(ompi_osc_nbe_module_t *module)
{
    ompi_osc_nbe_request_t *req = OBJ_NEW(ompi_osc_nbe_request_t);
    if (NULL == req) return NULL;
    OMPI_REQUEST_INIT(&req->super, false);
    req->super.req_mpi_object.win = module->win;
    req->super.req_state = OMPI_REQUEST_ACTIVE;
    req->super.req_status.MPI_ERROR = MPI_SUCCESS;
    return req;
}

/* bounded buffering: wait for progress while too many ops are in flight
 * (osc_nbe_buffered_ops_limit; 0: no bound) */
static void throttle(ompi_osc_nbe_module_t *module)
{
    unsigned limit = mca_osc_nbe_component.buffered_ops_limit;
    while (0 != limit && nbe_engine_buffered(module->engine) >= limit &&
           !nbe_engine_failed(module->engine)) {
        ompi_osc_nbe_progress();
    }
}

static int start_op(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op,
                    struct ompi_request_t **request)
{
    int rc;
    if (request) {
        op->req = new_request(module);
        if (NULL == op->req) {
            ompi_osc_nbe_op_free(op);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        *request = &op->req->super;
    }
    if (op->origin_dt) OBJ_RETAIN(op->origin_dt);
    if (op->result_dt) OBJ_RETAIN(op->result_dt);
    if (op->target_dt) OBJ_RETAIN(op->target_dt);
    if (op->op) OBJ_RETAIN(op->op);
    throttle(module);
    rc = nbe_rma(module->engine, &op->super);
    if (NBE_OK != rc) {
        if (op->req) {
            ompi_osc_nbe_request_t *req = op->req;
            op->req = NULL;
            OMPI_REQUEST_FINI(&req->super);
            OBJ_RELEASE(req);
            *request = MPI_REQUEST_NULL;
        }
        ompi_osc_nbe_op_free(op);
        return ompi_osc_nbe_err(rc);
    }
    return OMPI_SUCCESS;
}

static ompi_osc_nbe_op_t *new_op(ompi_osc_nbe_module_t *module, int type, int target)
{
    ompi_osc_nbe_op_t *op = op_get();
    if (NULL == op) return NULL;
    op->type = type;
    op->module = module;
    op->super.target = target;
    return op;
}

/* an empty operation still needs an epoch; its request completes at once */
static int empty_op(ompi_osc_nbe_module_t *module, int target, struct ompi_request_t **request)
{
    /* MPI_PROC_NULL targets are no-ops (the MPI layer lets them through) */
    int rc = MPI_PROC_NULL == target ? NBE_OK : nbe_check_access(module->engine, target);
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    if (request) {
        ompi_osc_nbe_request_t *req = new_request(module);
        if (NULL == req) return OMPI_ERR_OUT_OF_RESOURCE;
        *request = &req->super;
        ompi_request_complete(&req->super, true);
    }
    return OMPI_SUCCESS;
}

/*
 * The first steps every RMA call shares. A call to MPI_PROC_NULL, or one
 * that moves no bytes once its epoch and range are checked, is complete at
 * once: *opp is then NULL and the return value the call's result. Otherwise
 * *opp is a new operation with its target side filled in.
 */
static int begin_op(ompi_osc_nbe_module_t *module, int type, int target, ptrdiff_t target_disp,
                    int target_count, ompi_datatype_t *target_dt, size_t bytes,
                    struct ompi_request_t **request, ompi_osc_nbe_op_t **opp)
{
    uint64_t addr;
    int rc;

    *opp = NULL;
    if (MPI_PROC_NULL == target) return empty_op(module, target, request);
    rc = nbe_check_access(module->engine, target);
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    rc = check_range(module, target, target_disp, target_count, target_dt, &addr);
    if (OMPI_SUCCESS != rc) return rc;
    if (0 == bytes) return empty_op(module, target, request);
    ompi_osc_nbe_op_t *op = new_op(module, type, target);
    if (NULL == op) return OMPI_ERR_OUT_OF_RESOURCE;
    op->target_count = target_count;
    op->target_dt = target_dt;
    op->target_addr = addr;
    *opp = op;
    return OMPI_SUCCESS;
}

/*
 * Direct put/get: a target whose memory is mapped here (self, shared-memory
 * windows), contiguous data on both sides and an access epoch that lets the
 * operation go now. Range check, a copy, done: no op object, no datatype
 * engine, nothing counted (the engine treats it as an operation complete at
 * the target when issued, as it does the same copy through issue_cb).
 * An MPI_Rput/MPI_Rget gets a request that is complete already.
 * Returns 1 if the call was not taken (use the general path).
 */
static int try_direct(ompi_osc_nbe_module_t *module, bool is_put, void *origin, int origin_count,
                      ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                      int target_count, ompi_datatype_t *target_dt,
                      struct ompi_request_t **request)
{
    uint64_t addr;
    if (target != module->rank && NULL == module->shm_base) return 1;
    if (MPI_PROC_NULL == target || MPI_WIN_FLAVOR_DYNAMIC == module->flavor) return 1;
    if (!dt_contig(origin_dt, origin_count) || !dt_contig(target_dt, target_count)) return 1;
    size_t len = dt_bytes(origin_dt, origin_count);   /* = the target's (fit_receiver) */
    int rc;
    if (module->direct_target == target &&
        module->direct_gen == nbe_engine_generation(module->engine)) {
        /* the engine said yes for this target and nothing changed since:
         * no epoch lookup, geometry from the same answer */
        rc = range_in(module->direct_peer, target_disp, target_count, target_dt, &addr);
        if (OMPI_SUCCESS != rc) return rc;
        nbe_rma_direct_again(module->engine);
    } else {
        /* the range first: nbe_rma_direct counts the operation as issued */
        rc = check_range(module, target, target_disp, target_count, target_dt, &addr);
        if (OMPI_SUCCESS != rc) return rc;
        rc = nbe_rma_direct(module->engine, target);
        /* a few messages that are not the grant (each watch restarts the
         * 2 us): then the access is recorded */
        for (int watches = 0; NBE_AGAIN == rc && watches < 4 &&
                              ompi_osc_nbe_shm_await_ctrl(module); ++watches) {
            rc = nbe_rma_direct(module->engine, target);
        }
        if (NBE_AGAIN == rc) return 1;
        if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
        module->direct_target = target;
        module->direct_gen = nbe_engine_generation(module->engine);
        module->direct_peer = ompi_osc_nbe_peer(module, target);
    }
    if (request) {
        /* MPI_Rput/MPI_Rget: a request complete at once */
        ompi_osc_nbe_request_t *req = new_request(module);
        if (NULL == req) return OMPI_ERR_OUT_OF_RESOURCE;
        *request = &req->super;
        ompi_request_complete(&req->super, true);
    }
    char *local = (char *) origin + origin_dt->super.true_lb;
    char *remote = (char *) (uintptr_t) addr + target_dt->super.true_lb;
    if (is_put) ompi_scale_copy(remote, local, len);
    else ompi_scale_copy(local, remote, len);
    opal_atomic_wmb();
    module->bytes += len;
    return OMPI_SUCCESS;
}

/*
 * Send-now put: a small contiguous MPI_Put to a peer whose memory is not
 * mapped here (create/allocate windows across processes) whose access epoch
 * lets it go now leaves as one immediate PUT frame, counted by the engine
 * once handed to the BTL (ompi_osc_nbe_put_now says when it cannot).
 * Returns 1 if the call was not taken.
 */
static int try_send_now(ompi_osc_nbe_module_t *module, const void *origin, int origin_count,
                        ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                        int target_count, ompi_datatype_t *target_dt)
{
    uint64_t addr, fence_tag;
    if (NULL != module->shm_base || target == module->rank || MPI_PROC_NULL == target) return 1;
    if (!dt_contig(origin_dt, origin_count) || !dt_contig(target_dt, target_count)) return 1;
    size_t len = dt_bytes(origin_dt, origin_count);
    if (0 == len) return 1;
    int rc = check_range(module, target, target_disp, target_count, target_dt, &addr);
    if (OMPI_SUCCESS != rc) return rc;
    int passive = 0;
    rc = nbe_rma_message(module->engine, target, &fence_tag, &passive);
    if (NBE_AGAIN == rc) return 1;
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    const char *local = (const char *) origin + origin_dt->super.true_lb;
    if (OMPI_SUCCESS != ompi_osc_nbe_put_now(module, target, addr + (uint64_t) target_dt->super.true_lb,
                                             fence_tag, local, len, 0 != passive)) {
        return 1;
    }
    nbe_rma_message_sent(module->engine, target, fence_tag);
    module->bytes += len;
    return OMPI_SUCCESS;
}

/* osc_nbe_adapt.c chose active messages in try_rdma_now: the op the
 * general path then makes takes the choice over */
typedef struct {
    bool     copy;
    uint64_t t0;    /* timed from then (0: not timed) */
} copy_choice_t;

/*
 * RDMA put/get complete inside the BTL call (create and multi-node allocate
 * windows on vader's single copy): the access epoch lets the operation go
 * now, contiguous data on both sides, at least the epoch's RDMA threshold.
 * The data moves before the call returns (or, gathered, at the epoch's next
 * synchronization), so no op object, no issue callback and nothing counted
 * (like try_direct); an MPI_Rput/MPI_Rget gets a request complete already.
 * Over vader's CMA, osc_nbe_adapt.c chooses first (osc_nbe_active_cma,
 * osc_nbe_passive_cma): active messages leave it to the general path with
 * the choice in *choice; a CMA transfer to be timed goes alone, the others
 * are gathered.
 * Returns 1 if the call was not taken.
 */
static int try_rdma_now(ompi_osc_nbe_module_t *module, bool is_put, void *origin,
                        int origin_count, ompi_datatype_t *origin_dt, int target,
                        ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                        struct ompi_request_t **request, copy_choice_t *choice)
{
    uint64_t addr;
    int passive = 0;
    if (NULL != module->shm_base || target == module->rank || MPI_PROC_NULL == target) return 1;
    /* a dynamic window's target checks each access, which needs a message */
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) return 1;
    if (!dt_contig(origin_dt, origin_count) || !dt_contig(target_dt, target_count)) return 1;
    size_t len = dt_bytes(origin_dt, origin_count);
    if (!ompi_osc_nbe_rdma_sized(len, is_put)) return 1;
    /* the epoch, then the range (an error leaves the epoch untouched), then
     * the go-ahead (which marks the epoch as having operations) */
    ompi_osc_nbe_request_t *req = NULL;
    int rc = nbe_check_access(module->engine, target);
    if (NBE_OK != rc) {
        rc = ompi_osc_nbe_err(rc);
        goto fail;
    }
    rc = check_range(module, target, target_disp, target_count, target_dt, &addr);
    if (OMPI_SUCCESS != rc) goto fail;
    rc = nbe_rma_ready(module->engine, target, &passive);
    if (NBE_AGAIN == rc) return 1;
    if (NBE_OK != rc) {
        rc = ompi_osc_nbe_err(rc);
        goto fail;
    }
    struct mca_bml_base_btl_t *b = ompi_osc_nbe_rdma_now_btl(module, target, len, is_put, 0 != passive);
    if (NULL == b) return 1;
    void *local = (char *) origin + origin_dt->super.true_lb;
    uint64_t remote = addr + (uint64_t) target_dt->super.true_lb;
    /* a single copy at a slow distance: active messages in an active-target
     * epoch (the target is in MPI for it anyway), a bounce buffer in a
     * passive one (whose progress must not need the target); never gathered */
    bool slow = ompi_osc_nbe_rdma_copy_slow(b, local, remote, len, is_put);
    if (slow && !passive) return 1;
    uint64_t t0 = 0;
    if (!slow && !module->rdma_now_fixed[0 != passive]) {
        int proto = ompi_osc_nbe_adapt_choose_now(module, target, b, len, is_put, 0 != passive, &t0);
        if (OMPI_SCALE_ADAPT_COPY == proto) {
            *choice = (copy_choice_t) { .copy = true, .t0 = t0 };
            return 1;
        }
    }
    if (NULL == request && 0 == t0) {
        rc = ompi_osc_nbe_cma_take(module, b, target, ompi_osc_nbe_peer(module, target), local,
                                   remote, len, is_put);
        if (0 == rc) {
            /* gathered: moves with the others at the window's next
             * synchronization (each epoch kind's end submits) */
            nbe_rma_direct_again(module->engine);
            module->bytes += len;
            return OMPI_SUCCESS;
        }
        if (1 != rc) goto fail;   /* moving the batch before it failed the window */
    }
    if (request) {
        req = new_request(module);
        if (NULL == req) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
            goto fail;
        }
    }
    rc = slow ? ompi_osc_nbe_rdma_now_bounced(module, b, target, local, remote, len, is_put)
              : ompi_osc_nbe_rdma_now(module, b, target, local, remote, len, is_put);
    if (0 == rc && 0 != t0) {
        ompi_osc_nbe_adapt_record_ns(len, is_put, 0 != passive, OMPI_SCALE_ADAPT_RDMA,
                                     ompi_scale_adapt_now_ns() - t0);
    }
    if (0 != rc) {
        if (req) {
            OMPI_REQUEST_FINI(&req->super);
            OBJ_RELEASE(req);
        }
        if (1 == rc) return 1;
        goto fail;
    }
    nbe_rma_direct_again(module->engine);
    module->bytes += len;
    if (req) {
        *request = &req->super;
        ompi_request_complete(&req->super, true);
    }
    return OMPI_SUCCESS;
fail:
    if (request) *request = MPI_REQUEST_NULL;   /* as the general path leaves it */
    return rc;
}

/* A process that holds a lock of a window with presence stamps (one node,
 * osc_nbe_presence.c) and is in a long run of RMA calls polls the network
 * when nothing progressed for 20 us (every 32nd call looks at the clock):
 * it takes what others sent it meanwhile (their active-message transfers,
 * lock requests, acknowledgements) and stamps its presence, so that the
 * origins on its node keep sending it active messages instead of taking it
 * for away from MPI (its stamp must stay younger than osc_nbe_target_away,
 * 50 us) and moving every small transfer by CMA. Two ranks putting 1024
 * times to each other per lock epoch took 1.8-2.1 us per put without it,
 * 0.16-0.21 with it (rma_exchange, docs/bench-rma.md, session 23). Other
 * epochs end in MPI and nobody judges their presence: no poll there.
 * Calls between the polls of a wait loop do not poll again. */
#define RMA_CALL_LOOK_EVERY 32u
#define RMA_CALL_POLL_AFTER_NS 20000u

static inline void poll_now_and_then(ompi_osc_nbe_module_t *module)
{
    if (OPAL_LIKELY(0 != (++module->rma_calls & (RMA_CALL_LOOK_EVERY - 1)))) return;
    if (!ompi_osc_nbe_presence_on(module) || (0 == module->shm_nheld && !module->shm_lock_all)) {
        return;
    }
    uint64_t now = ompi_scale_adapt_now_ns();
    if (now - __atomic_load_n(&mca_osc_nbe_component.progress_ns, __ATOMIC_RELAXED) <
        RMA_CALL_POLL_AFTER_NS) {
        return;
    }
    ompi_osc_nbe_progress();
    /* the progress function reads the clock every 8th pass: this poll
     * counts as one */
    if (now > __atomic_load_n(&mca_osc_nbe_component.progress_ns, __ATOMIC_RELAXED)) {
        __atomic_store_n(&mca_osc_nbe_component.progress_ns, now, __ATOMIC_RELAXED);
    }
    ompi_osc_nbe_presence_stamp(module, now);
}

/* MPI moves RMA data as if the side it comes from sent it and the other
 * side received it: the receiving side may describe more than comes (the
 * rest of it is left alone), never less (MPI_ERR_TRUNCATE). The receiving
 * side becomes one that takes exactly the bytes that come, so every path
 * below sees two sides of one size: a smaller *into_count, or, for data
 * that ends inside an element of *into_dt, a datatype made for the call
 * (*made: the caller releases it once the operation holds its own
 * reference) covering the part that is filled. */
static int fit_receiver(size_t from_bytes, ompi_datatype_t **into_dt, int *into_count,
                        ompi_datatype_t **made)
{
    size_t into_bytes = dt_bytes(*into_dt, *into_count);
    if (OPAL_LIKELY(from_bytes == into_bytes)) return OMPI_SUCCESS;
    if (from_bytes > into_bytes) return MPI_ERR_TRUNCATE;
    size_t unit = dt_bytes(*into_dt, 1);
    if (0 == from_bytes % unit) {
        *into_count = (int) (from_bytes / unit);
        return OMPI_SUCCESS;
    }
    int rc = ompi_osc_nbe_prefix_type(*into_dt, from_bytes, made);
    if (OMPI_SUCCESS != rc) return rc;
    *into_dt = *made;
    *into_count = 1;
    return OMPI_SUCCESS;
}

/* do_transfer with sides of one size */
static int do_fitted_transfer(int type, const void *origin_addr, void *result_addr,
                              int origin_count, ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                              ompi_win_t *win, struct ompi_request_t **request)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    ompi_osc_nbe_op_t *op;
    int rc = try_direct(module, NBE_OP_PUT == type,
                        NBE_OP_PUT == type ? (void *) origin_addr : result_addr, origin_count,
                        origin_dt, target, target_disp, target_count, target_dt, request);
    if (1 != rc) return rc;
    /* (a load or store of shared memory involves no peer: no poll there) */
    poll_now_and_then(module);
    copy_choice_t choice = { .copy = false };
    rc = try_rdma_now(module, NBE_OP_PUT == type, NBE_OP_PUT == type ? (void *) origin_addr : result_addr,
                      origin_count, origin_dt, target, target_disp, target_count, target_dt, request,
                      &choice);
    if (1 != rc) return rc;
    if (NBE_OP_PUT == type && NULL == request) {
        rc = try_send_now(module, origin_addr, origin_count, origin_dt, target, target_disp,
                          target_count, target_dt);
        if (1 != rc) return rc;
    }
    rc = begin_op(module, type, target, target_disp, target_count, target_dt,
                  dt_bytes(origin_dt, origin_count), request, &op);
    if (NULL == op) return rc;
    op->origin_addr = origin_addr;
    op->result_addr = result_addr;
    op->origin_count = origin_count;
    op->origin_dt = origin_dt;
    if (choice.copy) {
        op->adapt_preset = true;
        op->adapt_proto = OMPI_SCALE_ADAPT_COPY;
        op->adapt_t0 = choice.t0;
    }
    return start_op(module, op, request);
}

/* put and get differ only in the direction of the transfer (a get lands in
 * result_addr, its origin buffer) */
static int do_transfer(int type, const void *origin_addr, void *result_addr, int origin_count,
                       ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                       int target_count, ompi_datatype_t *target_dt, ompi_win_t *win,
                       struct ompi_request_t **request)
{
    ompi_datatype_t *made = NULL;
    int rc = NBE_OP_PUT == type
                 ? fit_receiver(dt_bytes(origin_dt, origin_count), &target_dt, &target_count, &made)
                 : fit_receiver(dt_bytes(target_dt, target_count), &origin_dt, &origin_count, &made);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) return rc;
    rc = do_fitted_transfer(type, origin_addr, result_addr, origin_count, origin_dt, target,
                            target_disp, target_count, target_dt, win, request);
    if (OPAL_UNLIKELY(NULL != made)) ompi_datatype_destroy(&made);
    return rc;
}

static int do_put(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                  int target, ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                  ompi_win_t *win, struct ompi_request_t **request)
{
    return do_transfer(NBE_OP_PUT, origin_addr, NULL, origin_count, origin_dt, target,
                       target_disp, target_count, target_dt, win, request);
}

static int do_get(void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                  ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                  ompi_win_t *win, struct ompi_request_t **request)
{
    return do_transfer(NBE_OP_GET, origin_addr, origin_addr, origin_count, origin_dt, target,
                       target_disp, target_count, target_dt, win, request);
}

/* do_acc with sides of one size */
static int do_fitted_acc(int type, const void *origin_addr, int origin_count,
                         ompi_datatype_t *origin_dt, void *result_addr, int result_count,
                         ompi_datatype_t *result_dt, int target, ptrdiff_t target_disp,
                         int target_count, ompi_datatype_t *target_dt, ompi_op_t *mpi_op,
                         ompi_win_t *win, struct ompi_request_t **request)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    ompi_osc_nbe_op_t *op;
    bool no_op = &ompi_mpi_op_no_op.op == mpi_op;
    int rc = begin_op(module, type, target, target_disp, target_count, target_dt,
                      dt_bytes(target_dt, target_count), request, &op);
    if (NULL == op) return rc;
    op->origin_addr = no_op ? NULL : origin_addr;
    op->origin_count = no_op ? 0 : origin_count;
    op->origin_dt = no_op ? NULL : origin_dt;
    op->result_addr = result_addr;
    op->result_count = result_count;
    op->result_dt = (NBE_OP_GACC == type) ? result_dt : NULL;
    op->op = mpi_op;
    /* reject element types the target cannot reduce before queueing */
    rc = acc_elem(op);
    op->elem_dt = NULL;
    if (OMPI_SUCCESS != rc) {
        op_put(op);
        return rc;
    }
    return start_op(module, op, request);
}

static int do_acc(int type, const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                  void *result_addr, int result_count, ompi_datatype_t *result_dt, int target,
                  ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                  ompi_op_t *mpi_op, ompi_win_t *win, struct ompi_request_t **request)
{
    ompi_datatype_t *made_target = NULL, *made_result = NULL;
    poll_now_and_then(ompi_osc_nbe_module(win));
    /* RMA takes predefined ops only. Open MPI's MPI_Fetch_and_op does not
     * check: a user op's index means another op, or none, at the target. */
    if (OPAL_UNLIKELY(&ompi_mpi_op_null.op == mpi_op || !ompi_op_is_intrinsic(mpi_op))) {
        return MPI_ERR_OP;
    }
    /* the origin's data goes to the target, the target's old data to the
     * result buffer */
    int rc = &ompi_mpi_op_no_op.op == mpi_op
                 ? OMPI_SUCCESS
                 : fit_receiver(dt_bytes(origin_dt, origin_count), &target_dt, &target_count,
                                &made_target);
    if (OMPI_SUCCESS == rc && NBE_OP_GACC == type) {
        rc = fit_receiver(dt_bytes(target_dt, target_count), &result_dt, &result_count,
                          &made_result);
    }
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        rc = do_fitted_acc(type, origin_addr, origin_count, origin_dt, result_addr, result_count,
                           result_dt, target, target_disp, target_count, target_dt, mpi_op, win,
                           request);
    }
    if (OPAL_UNLIKELY(NULL != made_target)) ompi_datatype_destroy(&made_target);
    if (OPAL_UNLIKELY(NULL != made_result)) ompi_datatype_destroy(&made_result);
    return rc;
}

int ompi_osc_nbe_put(const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                     int target, ptrdiff_t target_disp, int target_count,
                     struct ompi_datatype_t *target_dt, struct ompi_win_t *win)
{
    return do_put(origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                  target_dt, win, NULL);
}

int ompi_osc_nbe_rput(const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                      struct ompi_request_t **request)
{
    return do_put(origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                  target_dt, win, request);
}

int ompi_osc_nbe_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                     int target, ptrdiff_t target_disp, int target_count,
                     struct ompi_datatype_t *target_dt, struct ompi_win_t *win)
{
    return do_get(origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                  target_dt, win, NULL);
}

int ompi_osc_nbe_rget(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                      struct ompi_request_t **request)
{
    return do_get(origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                  target_dt, win, request);
}

int ompi_osc_nbe_accumulate(const void *origin_addr, int origin_count,
                            struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                            int target_count, struct ompi_datatype_t *target_dt,
                            struct ompi_op_t *op, struct ompi_win_t *win)
{
    return do_acc(NBE_OP_ACC, origin_addr, origin_count, origin_dt, NULL, 0, NULL, target,
                  target_disp, target_count, target_dt, op, win, NULL);
}

int ompi_osc_nbe_raccumulate(const void *origin_addr, int origin_count,
                             struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                             int target_count, struct ompi_datatype_t *target_dt,
                             struct ompi_op_t *op, struct ompi_win_t *win,
                             struct ompi_request_t **request)
{
    return do_acc(NBE_OP_ACC, origin_addr, origin_count, origin_dt, NULL, 0, NULL, target,
                  target_disp, target_count, target_dt, op, win, request);
}

int ompi_osc_nbe_get_accumulate(const void *origin_addr, int origin_count,
                                struct ompi_datatype_t *origin_dt, void *result_addr,
                                int result_count, struct ompi_datatype_t *result_dt,
                                int target, ptrdiff_t target_disp, int target_count,
                                struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                struct ompi_win_t *win)
{
    return do_acc(NBE_OP_GACC, origin_addr, origin_count, origin_dt, result_addr, result_count,
                  result_dt, target, target_disp, target_count, target_dt, op, win, NULL);
}

int ompi_osc_nbe_rget_accumulate(const void *origin_addr, int origin_count,
                                 struct ompi_datatype_t *origin_dt, void *result_addr,
                                 int result_count, struct ompi_datatype_t *result_dt,
                                 int target, ptrdiff_t target_disp, int target_count,
                                 struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                 struct ompi_win_t *win, struct ompi_request_t **request)
{
    return do_acc(NBE_OP_GACC, origin_addr, origin_count, origin_dt, result_addr, result_count,
                  result_dt, target, target_disp, target_count, target_dt, op, win, request);
}

int ompi_osc_nbe_fetch_and_op(const void *origin_addr, void *result_addr,
                              struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                              struct ompi_op_t *op, struct ompi_win_t *win)
{
    /* predefined types only (MPI-3.1 11.3.4); Open MPI's MPI layer lets
     * derived ones through */
    if (OPAL_UNLIKELY(!ompi_datatype_is_predefined(dt))) return MPI_ERR_TYPE;
    return do_acc(NBE_OP_GACC, origin_addr, 1, dt, result_addr, 1, dt, target, target_disp, 1, dt,
                  op, win, NULL);
}

int ompi_osc_nbe_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                  void *result_addr, struct ompi_datatype_t *dt, int target,
                                  ptrdiff_t target_disp, struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    uint64_t addr;
    size_t sz = dt_bytes(dt, 1);
    poll_now_and_then(module);
    if (OPAL_UNLIKELY(!ompi_datatype_is_predefined(dt))) return MPI_ERR_TYPE; /* as fetch_and_op */
    if (MPI_PROC_NULL == target) return OMPI_SUCCESS;
    int rc = nbe_check_access(module->engine, target);
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    rc = check_range(module, target, target_disp, 1, dt, &addr);
    if (OMPI_SUCCESS != rc) return rc;
    if (2 * sz > sizeof(((ompi_osc_nbe_op_t *) 0)->cas_buf)) return OMPI_ERR_NOT_SUPPORTED;
    ompi_osc_nbe_op_t *op = new_op(module, NBE_OP_CAS, target);
    if (NULL == op) return OMPI_ERR_OUT_OF_RESOURCE;
    memcpy(op->cas_buf, compare_addr, sz);
    memcpy(op->cas_buf + sz, origin_addr, sz);
    op->result_addr = result_addr;
    op->target_count = 1;
    op->target_dt = dt;
    op->target_addr = addr;
    return start_op(module, op, NULL);
}
