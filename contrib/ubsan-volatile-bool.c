/*
 * Does a loop that waits for another thread to clear a volatile bool end
 * when compiled with the sanitizer flags of contrib/sanitize-check? GCC 12
 * with -fsanitize=bool -fno-sanitize-recover loads the flag once before the
 * loop and spins for ever; Open MPI's WAIT_SYNC_RELEASE (wait_sync.h),
 * inlined into the components, is such a loop. Exit 0 when the loop ends;
 * sanitize-check runs it under a time limit.
 *
 *   cc -O1 -fsanitize=undefined -fno-sanitize-recover=undefined -pthread \
 *      contrib/ubsan-volatile-bool.c && ./a.out      # hangs with GCC 12
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

typedef struct {
    int count;
    volatile bool signaling;   /* as ompi_wait_sync_t */
} sync_like_t;

static atomic_bool entered;    /* the main thread is about to loop */

static void *clear_later(void *arg)
{
    while (!atomic_load(&entered)) {
        continue;
    }
    usleep(100 * 1000);   /* the main thread has read the flag by now */
    ((sync_like_t *) arg)->signaling = false;
    return NULL;
}

int main(void)
{
    sync_like_t s = { .count = 1, .signaling = true };
    pthread_t t;
    if (0 != pthread_create(&t, NULL, clear_later, &s)) return 2;
    atomic_store(&entered, true);
    while (s.signaling) {
        continue;
    }
    pthread_join(t, NULL);
    return 0;
}
