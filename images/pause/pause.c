/* The pod sandbox's one process for the sandbox's real node (sandbox/cluster/realnode.py): it holds
 * the pod's namespaces open, reaps the children it inherits and exits on SIGINT or SIGTERM.
 * Built statically on the host (hack/image.sh), so its image needs nothing else. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    signal(SIGCHLD, reap);
    for (;;) {
        pause();
    }
}
