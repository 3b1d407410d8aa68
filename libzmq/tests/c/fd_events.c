/* ZMQ_FD and ZMQ_EVENTS as an event loop uses them: wait in poll(2) on the socket's
 * descriptor, then read ZMQ_EVENTS and receive until it says nothing is left; every
 * message sent must arrive that way. Usage: fd_events COUNT */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static int fail (const char *what)
{
    fprintf (stderr, "fd_events: %s: %s\n", what, zmq_strerror (zmq_errno ()));
    return 1;
}

int main (int argc, char **argv)
{
    int count = argc > 1 ? atoi (argv[1]) : 100;
    void *ctx = zmq_ctx_new ();
    void *pull = zmq_socket (ctx, ZMQ_PULL);
    void *push = zmq_socket (ctx, ZMQ_PUSH);
    if (zmq_bind (pull, "tcp://127.0.0.1:*") != 0)
        return fail ("bind");
    char endpoint[256];
    size_t size = sizeof endpoint;
    zmq_getsockopt (pull, ZMQ_LAST_ENDPOINT, endpoint, &size);
    if (zmq_connect (push, endpoint) != 0)
        return fail ("connect");
    zmq_fd_t fd;
    size = sizeof fd;
    if (zmq_getsockopt (pull, ZMQ_FD, &fd, &size) != 0)
        return fail ("ZMQ_FD");
    int received = 0, sent = 0, wakeups = 0;
    while (received < count) {
        /* Send in bursts, between waits, so that messages arrive while we wait. */
        for (int i = 0; i < 7 && sent < count; i++, sent++)
            if (zmq_send (push, "tick", 4, 0) != 4)
                return fail ("send");
        struct pollfd pfd = {fd, POLLIN, 0};
        int rc = poll (&pfd, 1, 5000);
        if (rc == 0) {
            fprintf (stderr, "fd_events: no wake-up after %d of %d\n", received, count);
            return 1;
        }
        wakeups++;
        for (;;) {
            int events = 0;
            size = sizeof events;
            if (zmq_getsockopt (pull, ZMQ_EVENTS, &events, &size) != 0)
                return fail ("ZMQ_EVENTS");
            if (!(events & ZMQ_POLLIN))
                break;
            char buf[8];
            if (zmq_recv (pull, buf, sizeof buf, ZMQ_DONTWAIT) != 4)
                return fail ("recv");
            received++;
        }
    }
    printf ("fd ok %d messages\n", received);
    int linger = 0;
    zmq_setsockopt (push, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close (push);
    zmq_close (pull);
    zmq_ctx_term (ctx);
    return 0;
}
