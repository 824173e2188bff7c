/*
 * osc/nbe: the part of a receiving datatype that a shorter RMA message fills.
 *
 * MPI moves RMA data as if the side it comes from sent it and the other side
 * received it, so the receiving side (the target of a put or accumulate, the
 * origin of a get, the result of a fetching accumulate) may describe more
 * than comes, and what comes may end inside one of its elements, as a
 * receive may. Every path of the component (shared-memory copies, CMA, BTL
 * RDMA, active messages, element-wise accumulate) works on two sides of one
 * size; for such a message the receiving side is replaced by a datatype
 * that covers exactly the bytes that come: an hindexed type of the
 * receiving type's memory pieces, in its order, cut where the data ends.
 */
#include "osc_nbe.h"

#include <limits.h>
#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/class/opal_value_array.h"
#include "opal/datatype/opal_convertor.h"

#define PREFIX_RAW_IOV 64

/* a run of cnt elements, ext bytes apart, from disp */
typedef struct {
    ptrdiff_t disp;
    size_t cnt;
} run_t;

typedef struct {
    opal_value_array_t list;   /* run_t, in data order */
    ptrdiff_t ext;
} runs_t;

static int add_run(runs_t *r, ptrdiff_t disp, size_t cnt)
{
    size_t n = opal_value_array_get_size(&r->list);
    if (n > 0) {
        run_t *last = &OPAL_VALUE_ARRAY_GET_ITEM(&r->list, run_t, n - 1);
        if (last->disp + (ptrdiff_t) last->cnt * r->ext == disp) {
            last->cnt += cnt;
            return OMPI_SUCCESS;
        }
    }
    run_t run = { .disp = disp, .cnt = cnt };
    return opal_value_array_append_item(&r->list, &run);
}

/* the elements (esize bytes of data, ext bytes of memory each) that the
 * first bytes of count elements of dt occupy, as runs of displacements
 * from the buffer's address. The memory pieces of dt come in data order;
 * each element starts inside one. Where ext == esize an element must not
 * straddle two pieces (OMPI_ERR_NOT_SUPPORTED: the caller takes bytes). */
static int collect_runs(ompi_datatype_t *dt, int count, size_t bytes, size_t esize, runs_t *r)
{
    opal_convertor_t conv;
    struct iovec segs[PREFIX_RAW_IOV];
    /* any address serves: only differences from it are kept */
    char *base = (char *) segs;
    size_t pos = 0, next = 0;
    int rc = OMPI_SUCCESS;
    bool done = false;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dt->super, count, base, 0,
                                             &conv);
    while (!done && pos < bytes && OMPI_SUCCESS == rc) {
        uint32_t n = PREFIX_RAW_IOV;
        size_t size;
        done = opal_convertor_raw(&conv, segs, &n, &size);
        for (uint32_t i = 0; i < n && pos < bytes && OMPI_SUCCESS == rc; ++i) {
            size_t end = pos + segs[i].iov_len;
            if (end > bytes) end = bytes;
            ptrdiff_t addr = (char *) segs[i].iov_base - base;
            while (next < end && OMPI_SUCCESS == rc) {
                size_t cnt = 1;
                if ((ptrdiff_t) esize == r->ext) {
                    if (0 != (end - next) % esize) {
                        rc = OMPI_ERR_NOT_SUPPORTED;
                        break;
                    }
                    cnt = (end - next) / esize;
                }
                rc = add_run(r, addr + (ptrdiff_t) (next - pos), cnt);
                next += cnt * esize;
            }
            pos = end;
        }
    }
    OBJ_DESTRUCT(&conv);
    if (OMPI_SUCCESS == rc && (pos != bytes || next != bytes)) rc = OMPI_ERR_BAD_PARAM;
    return rc;
}

/* hindexed of elem over the runs, runs longer than an int can count split */
static int build_hindexed(runs_t *r, ompi_datatype_t *elem, ompi_datatype_t **out)
{
    const size_t max_block = (size_t) INT_MAX;
    const size_t nruns = opal_value_array_get_size(&r->list);
    const run_t *runs = OPAL_VALUE_ARRAY_GET_BASE(&r->list, run_t);
    size_t nblocks = 0;
    for (size_t i = 0; i < nruns; ++i) nblocks += (runs[i].cnt + max_block - 1) / max_block;
    if (nblocks > (size_t) INT_MAX) return OMPI_ERR_NOT_SUPPORTED;
    int *blen = malloc((nblocks ? nblocks : 1) * sizeof(*blen));
    ptrdiff_t *disp = malloc((nblocks ? nblocks : 1) * sizeof(*disp));
    int rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (NULL != blen && NULL != disp) {
        size_t k = 0;
        for (size_t i = 0; i < nruns; ++i) {
            size_t left = runs[i].cnt;
            ptrdiff_t d = runs[i].disp;
            while (left > 0) {
                size_t take = left < max_block ? left : max_block;
                blen[k] = (int) take;
                disp[k] = d;
                d += (ptrdiff_t) take * r->ext;
                left -= take;
                ++k;
            }
        }
        int n = (int) nblocks;
        rc = ompi_datatype_create_hindexed(n, blen, disp, elem, out);
        if (OMPI_SUCCESS == rc) {
            /* the arguments tell an accumulate its element type */
            const int *ints[2] = { &n, blen };
            rc = ompi_datatype_set_args(*out, n + 1, ints, n, disp, 1, &elem,
                                        MPI_COMBINER_HINDEXED);
            if (OMPI_SUCCESS == rc) rc = ompi_datatype_commit(out);
            if (OMPI_SUCCESS != rc) ompi_datatype_destroy(out);
        }
    }
    free(blen);
    free(disp);
    return rc;
}

static int prefix_of(ompi_datatype_t *dt, int count, size_t bytes, ompi_datatype_t *elem,
                     ompi_datatype_t **prefix)
{
    size_t esize;
    ptrdiff_t lb, ext;
    ompi_datatype_type_size(elem, &esize);
    ompi_datatype_get_extent(elem, &lb, &ext);
    if (0 == esize || 0 != bytes % esize) return OMPI_ERR_NOT_SUPPORTED;
    runs_t r = { .ext = ext };
    OBJ_CONSTRUCT(&r.list, opal_value_array_t);
    int rc = opal_value_array_init(&r.list, sizeof(run_t));
    if (OMPI_SUCCESS == rc) rc = collect_runs(dt, count, bytes, esize, &r);
    if (OMPI_SUCCESS == rc) rc = build_hindexed(&r, elem, prefix);
    OBJ_DESTRUCT(&r.list);
    return rc;
}

int ompi_osc_nbe_prefix_type(ompi_datatype_t *dt, size_t bytes, ompi_datatype_t **prefix)
{
    size_t unit;
    ompi_datatype_type_size(dt, &unit);
    if (0 == unit) return OMPI_ERR_BAD_PARAM;
    size_t count = (bytes + unit - 1) / unit;
    if (count > (size_t) INT_MAX) return OMPI_ERR_NOT_SUPPORTED;
    /* keep the basic type dt is made of (an accumulate needs it), bytes
     * where the data does not end on one of its elements */
    ompi_datatype_t *elem = ompi_datatype_get_single_predefined_type_from_args(dt);
    int rc = OMPI_ERR_NOT_SUPPORTED;
    if (NULL != elem) rc = prefix_of(dt, (int) count, bytes, elem, prefix);
    if (OMPI_ERR_NOT_SUPPORTED == rc) {
        rc = prefix_of(dt, (int) count, bytes, &ompi_mpi_byte.dt, prefix);
    }
    return rc;
}
