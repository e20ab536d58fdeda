/* Reading a mapping that may shrink under us.
 *
 * A file's pages are mapped; when another process truncates the file, a
 * load from a page past its new end raises SIGBUS, which would kill the
 * host program.  Every copy mtk makes out of a mapping (loads, reads into
 * tensors, conversions, worker threads of mtk_st_read_into_many, the
 * writer reading its sources) runs inside st_guarded: a SIGBUS raised by
 * that thread during the copy jumps back (siglongjmp) and the copy
 * reports failure, which the caller turns into an I/O error naming the
 * file.
 *
 * Why a handler and not pread: pread would cover only reads from a file
 * descriptor, while mtk also copies out of views of the mapping that the
 * caller handed back (mtk_st_view tensors given to the writer or read
 * into other tensors), and it would add a bounce buffer to every
 * conversion.  The handler costs, per guarded copy, one sigsetjmp (no
 * system call: the handler runs with SA_NODEFER and an empty sa_mask, so
 * the signal mask is the same after the jump) and a mutex; plus two
 * sigaction calls when the first copy starts and the last one ends,
 * which batches (read_into_many, a write) pay once by holding the
 * handler (st_guard_hold) around all their copies.
 *
 * What a library owes its host: the handler is installed only while at
 * least one guarded copy runs (a count under a mutex), and the host's
 * handler is restored when the last one ends, unless the host changed it
 * meanwhile.  A SIGBUS that is not ours (another thread, or this thread
 * outside a copy) is passed on to the handler that was there before,
 * or, if that was the default, kills the process as it would have.  The
 * state of the jump is per thread (_Thread_local), so threads copy in
 * parallel, each with its own recovery point.
 *
 * Not covered: a caller's own reads of a view (its loads raise SIGBUS as
 * with any mapping), and ops run on views (their kernels are not
 * guarded).  Copy a view (mtk_st_load) when the file may change. */
#include "io_internal.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static int guard_users;               /* guarded copies running, all threads */
static struct sigaction host_action;  /* what was there before ours         */

/* This thread's recovery point while it copies; NULL outside a copy. */
static _Thread_local sigjmp_buf *volatile guard_jump;

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
    sigjmp_buf *jump = guard_jump;
    if (jump) {
        guard_jump = NULL;
        siglongjmp(*jump, 1);
    }
    /* Not a copy of ours: what the host asked for. */
    if ((host_action.sa_flags & SA_SIGINFO) && host_action.sa_sigaction) {
        host_action.sa_sigaction(sig, info, context);
    } else if (host_action.sa_handler != SIG_DFL && host_action.sa_handler != SIG_IGN) {
        host_action.sa_handler(sig);
    } else {
        /* The default (a fault cannot be ignored): put it back and let the
         * faulting access run again, or resend a signal sent by kill. */
        signal(SIGBUS, SIG_DFL);
        if (info->si_code <= 0) raise(SIGBUS);
    }
}

void st_guard_hold(void)
{
    pthread_mutex_lock(&guard_lock);
    if (guard_users++ == 0) {
        struct sigaction ours;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = on_sigbus;
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER; /* the mask is unchanged: no need to save it */
        sigemptyset(&ours.sa_mask);
        sigaction(SIGBUS, &ours, &host_action);
    }
    pthread_mutex_unlock(&guard_lock);
}

void st_guard_release(void)
{
    pthread_mutex_lock(&guard_lock);
    if (--guard_users == 0) {
        struct sigaction now;
        /* put the host's handler back, unless the host set another since */
        if (sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus)
            sigaction(SIGBUS, &host_action, NULL);
    }
    pthread_mutex_unlock(&guard_lock);
}

bool st_guarded(void (*copy)(void *arg), void *arg)
{
    st_guard_hold();
    sigjmp_buf jump;
    sigjmp_buf *volatile outer = guard_jump; /* a guarded copy inside another */
    bool ok = true;
    if (sigsetjmp(jump, 0) == 0) { /* 0: SA_NODEFER leaves the mask as it was */
        guard_jump = &jump;
        atomic_signal_fence(memory_order_seq_cst);
        copy(arg);
        atomic_signal_fence(memory_order_seq_cst);
    } else {
        ok = false;
    }
    guard_jump = outer;
    st_guard_release();
    return ok;
}
