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
#include "opal/datatype/opal_convertor.h"

#define PREFIX_RAW_IOV 64

/* runs of elements: run i is cnt[i] elements, ext bytes apart, from disp[i] */
struct runs {
    size_t n, cap;
    ptrdiff_t *disp;
    size_t *cnt;
    ptrdiff_t ext;
};

static int add_run(struct runs *r, ptrdiff_t disp, size_t cnt)
{
    if (r->n > 0 && r->disp[r->n - 1] + (ptrdiff_t) r->cnt[r->n - 1] * r->ext == disp) {
        r->cnt[r->n - 1] += cnt;
        return OMPI_SUCCESS;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        ptrdiff_t *d = realloc(r->disp, cap * sizeof(*d));
        if (NULL == d) return OMPI_ERR_OUT_OF_RESOURCE;
        r->disp = d;
        size_t *c = realloc(r->cnt, cap * sizeof(*c));
        if (NULL == c) return OMPI_ERR_OUT_OF_RESOURCE;
        r->cnt = c;
        r->cap = cap;
    }
    r->disp[r->n] = disp;
    r->cnt[r->n] = cnt;
    r->n++;
    return OMPI_SUCCESS;
}

/* the elements (esize bytes of data, ext bytes of memory each) that the
 * first bytes of count elements of dt occupy, as runs of displacements
 * from the buffer's address. The memory pieces of dt come in data order;
 * each element starts inside one. Where ext == esize an element must not
 * straddle two pieces (OMPI_ERR_NOT_SUPPORTED: the caller takes bytes). */
static int collect_runs(ompi_datatype_t *dt, int count, size_t bytes, size_t esize,
                        struct runs *r)
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
static int build_hindexed(const struct runs *r, ompi_datatype_t *elem, ompi_datatype_t **out)
{
    size_t nblocks = 0;
    const size_t max_block = (size_t) INT_MAX;
    for (size_t i = 0; i < r->n; ++i) nblocks += (r->cnt[i] + max_block - 1) / max_block;
    if (nblocks > (size_t) INT_MAX) return OMPI_ERR_NOT_SUPPORTED;
    int *blen = malloc((nblocks ? nblocks : 1) * sizeof(*blen));
    ptrdiff_t *disp = malloc((nblocks ? nblocks : 1) * sizeof(*disp));
    int rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (NULL != blen && NULL != disp) {
        size_t k = 0;
        for (size_t i = 0; i < r->n; ++i) {
            size_t left = r->cnt[i];
            ptrdiff_t d = r->disp[i];
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
    struct runs r = { .ext = ext };
    int rc = collect_runs(dt, count, bytes, esize, &r);
    if (OMPI_SUCCESS == rc) rc = build_hindexed(&r, elem, prefix);
    free(r.disp);
    free(r.cnt);
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
