/* Interrupts during commands that write files.  SIGINT, SIGTERM and
 * SIGHUP (those not ignored when mtk started) get a handler that only
 * writes the signal's number into a pipe (async-signal-safe, in whatever
 * thread the kernel picked: OpenBLAS starts threads before main, so
 * blocking the signals in mtk's threads would not be enough).  A watcher
 * thread reads the pipe, removes the temporaries of the writes in
 * progress (mtk_io_remove_temporaries takes a lock, which a handler must
 * not), and dies of the signal as mtk would have, so that Ctrl-C during
 * `mtk convert` leaves no `.NAME.tmp-PID-N` behind and the shell still
 * sees the signal. */
#include "cli/cli.h"
#include "mtk/io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static int wake[2] = { -1, -1 };

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char byte = (unsigned char)sig;
    (void)!write(wake[1], &byte, 1);
    errno = saved;
}

static void *watch(void *arg)
{
    (void)arg;
    unsigned char byte;
    ssize_t n;
    while ((n = read(wake[0], &byte, 1)) < 0 && errno == EINTR) {}
    if (n != 1) return NULL;
    int sig = byte;
    mtk_io_remove_temporaries();
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);       /* the default action: the process dies of it */
    _exit(128 + sig); /* not reached */
}

bool cli_remove_temporaries_on_interrupt(void)
{
    static const int signals[] = { SIGINT, SIGTERM, SIGHUP };
    if (pipe2(wake, O_CLOEXEC) != 0) return false;
    pthread_t id;
    if (pthread_create(&id, NULL, watch, NULL) != 0) {
        close(wake[0]);
        close(wake[1]);
        return false;
    }
    pthread_detach(id);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction now, ours;
        /* an ignored one (nohup's SIGHUP) stays ignored */
        if (sigaction(signals[i], NULL, &now) != 0 || now.sa_handler == SIG_IGN) continue;
        memset(&ours, 0, sizeof ours);
        ours.sa_handler = on_signal;
        sigemptyset(&ours.sa_mask);
        ours.sa_flags = SA_RESTART;
        sigaction(signals[i], &ours, NULL);
    }
    return true;
}
