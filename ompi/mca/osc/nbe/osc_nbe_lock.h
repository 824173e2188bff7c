/*
 * osc/nbe under MPI_THREAD_MULTIPLE: one lock for the whole component.
 *
 * Every way into osc/nbe takes it: the window functions (through the
 * locked function table of osc_nbe_locked.c), the BTL callbacks (frames,
 * send and RDMA completions), the progress function, request free and the
 * pvars. It is re-entrant per thread (a BTL may call back inside a send or
 * put, btl/self delivers inline): the holder counts its depth.
 *
 * It is never held while waiting for other processes: every wait drives
 * Open MPI's progress through ompi_osc_nbe_progress() and every collective
 * runs between ompi_osc_nbe_suspend()/ompi_osc_nbe_resume(), which drop it
 * whole. Otherwise a thread spinning with the lock would wait forever for
 * a frame that another thread took from the BTL and cannot deliver
 * (vader's progress runs in one thread at a time).
 *
 * Without MPI_THREAD_MULTIPLE (opal_using_threads() false) all of this is
 * a branch on a global flag, and windows use the unlocked function table.
 */
#ifndef OMPI_OSC_NBE_LOCK_H
#define OMPI_OSC_NBE_LOCK_H

#include <pthread.h>

#include "opal/threads/mutex.h"
#include "opal/runtime/opal_progress.h"
#include "ompi/mca/osc/osc.h"

/* the holder (pthread_self() as a number, 0: none) and its depth: a thread
 * reads the owner without the lock, but sees its own id there only if it
 * wrote it (a thread-local depth would cost a __tls_get_addr call per use
 * in a dlopen'ed component) */
extern opal_mutex_t ompi_osc_nbe_big_lock;
extern uintptr_t ompi_osc_nbe_big_lock_owner;
extern int ompi_osc_nbe_big_lock_depth;

static inline uintptr_t ompi_osc_nbe_self(void)
{
    return (uintptr_t) pthread_self();
}

static inline bool ompi_osc_nbe_holding(void)
{
    return __atomic_load_n(&ompi_osc_nbe_big_lock_owner, __ATOMIC_RELAXED) == ompi_osc_nbe_self();
}

static inline void ompi_osc_nbe_take(int depth)
{
    opal_mutex_lock(&ompi_osc_nbe_big_lock);
    __atomic_store_n(&ompi_osc_nbe_big_lock_owner, ompi_osc_nbe_self(), __ATOMIC_RELAXED);
    ompi_osc_nbe_big_lock_depth = depth;
}

static inline void ompi_osc_nbe_give(void)
{
    ompi_osc_nbe_big_lock_depth = 0;
    __atomic_store_n(&ompi_osc_nbe_big_lock_owner, (uintptr_t) 0, __ATOMIC_RELAXED);
    opal_mutex_unlock(&ompi_osc_nbe_big_lock);
}

static inline void ompi_osc_nbe_enter(void)
{
    if (!opal_using_threads()) return;
    if (ompi_osc_nbe_holding()) ompi_osc_nbe_big_lock_depth++;
    else ompi_osc_nbe_take(1);
}

/* the progress function's way in: false if another thread holds the lock
 * (every thread's progress would otherwise queue up behind a window call,
 * even threads in MPI_Recv; the next progress call makes up for it) */
static inline bool ompi_osc_nbe_try_enter(void)
{
    if (!opal_using_threads()) return true;
    if (ompi_osc_nbe_holding()) {
        ompi_osc_nbe_big_lock_depth++;
        return true;
    }
    if (0 != opal_mutex_trylock(&ompi_osc_nbe_big_lock)) return false;
    __atomic_store_n(&ompi_osc_nbe_big_lock_owner, ompi_osc_nbe_self(), __ATOMIC_RELAXED);
    ompi_osc_nbe_big_lock_depth = 1;
    return true;
}

static inline void ompi_osc_nbe_leave(void)
{
    if (!opal_using_threads()) return;
    if (1 == ompi_osc_nbe_big_lock_depth) ompi_osc_nbe_give();
    else ompi_osc_nbe_big_lock_depth--;
}

/* drops the lock however deep this thread holds it; returns the depth to
 * hand to ompi_osc_nbe_resume */
static inline int ompi_osc_nbe_suspend(void)
{
    if (!opal_using_threads() || !ompi_osc_nbe_holding()) return 0;
    int depth = ompi_osc_nbe_big_lock_depth;
    ompi_osc_nbe_give();
    return depth;
}

static inline void ompi_osc_nbe_resume(int depth)
{
    if (0 != depth) ompi_osc_nbe_take(depth);
}

/* opal_progress() for a thread that may hold the lock: any state read
 * before it may have changed after it, as with the callbacks it runs */
static inline void ompi_osc_nbe_progress(void)
{
    int depth = ompi_osc_nbe_suspend();
    opal_progress();
    ompi_osc_nbe_resume(depth);
}

/* the window functions of osc_nbe_locked.c, each inside the lock */
extern const ompi_osc_base_module_t ompi_osc_nbe_locked_template;

#endif
